"""What a rule declares is what the engine and the reporters do: its minimum of logged points,
its short-log reader, the onset slot of its summary."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_doctor.config import DoctorConfig
from grpo_doctor.engine import check_rule, diagnose
from grpo_doctor.findings import Status
from grpo_doctor.rules import RULES, rule_named
from grpo_doctor.rules.base import ONSET
from tests.helpers import make_run
from tests.rules.cases import CASES, diagnosed


def test_every_rule_declares_a_detect_and_its_minimum_counts_a_metric():
    for rule in RULES:
        assert rule.detect.__module__ == f"grpo_doctor.rules.{rule.id}"
        if rule.min_points:
            assert rule.points, rule.id
            assert isinstance(rule.min_points, int) or rule.min_points in rule.defaults()


@pytest.mark.parametrize("rule", [r for r in RULES if isinstance(r.min_points, int)
                                  and r.min_points], ids=lambda r: r.id)
def test_a_flat_log_one_point_short_is_skipped_with_the_declared_count(rule):
    """One point fewer than the rule declares, of a flat metric (no incident, no fall for a
    short-log reader to see): skipped, saying how many points of what it needs."""
    n = rule.min_points - 1
    # what rules that read short logs check first (a signal or component they need) is there
    logged = {*(rule.counted_metrics or ("reward",)), "kl", "rewards/format_reward",
              "rewards/accuracy_reward"}
    run = make_run(**{m: np.full(n, 0.5) for m in logged})
    check = check_rule(rule, run, rule.defaults())
    assert check.status is Status.SKIPPED
    assert check.reason.startswith(f"needs at least {rule.min_points} logged {rule.points}")


@pytest.mark.parametrize("n", [1, 2])
def test_no_check_passes_on_one_or_two_logged_steps(n):
    """The user's report: one logged step (every metric finite, nothing out of range) listed
    ratio_instability, reward_hacking and length_hacking as passed, two steps
    numerical_failure, reward_hacking and format_gaming. A check judges a log long enough to
    tell, or reads a short one for something decisive (an incident); else it is skipped."""
    columns = {"loss": 0.1, "grad_norm": 0.5, "kl": 0.01, "reward": 0.8, "reward_std": 0.3,
               "clip_fraction": 0.05, "response_length_mean": 300.0, "truncation_ratio": 0.1,
               "rewards/format_reward": 0.5, "rewards/accuracy_reward": 0.3, "entropy": 0.6}
    run = make_run(**{k: np.full(n, v) for k, v in columns.items()})
    checks = diagnose(run, DoctorConfig()).checks
    assert [c.mode for c in checks if c.status is Status.OK] == []
    # one NaN is decisive on one step
    nan = make_run(**{**{k: np.full(1, v) for k, v in columns.items()},
                      "loss": np.array(["nan"], dtype=object)})  # a logged NaN, not a gap
    check = next(c for c in diagnose(nan, DoctorConfig()).checks
                 if c.mode == "numerical_failure")
    assert check.status is Status.CRITICAL


def test_a_minimum_set_by_a_parameter_follows_the_users_value():
    rule = rule_named("no_learning_signal")
    run = make_run(reward=np.zeros(10), grad_norm=np.zeros(10))
    assert check_rule(rule, run, rule.defaults()).status is not Status.SKIPPED
    check = check_rule(rule, run, {**rule.defaults(), "min_points": 12})
    assert check.status is Status.SKIPPED and check.reason == "needs at least 12 logged rewards"


def test_a_short_log_is_read_by_the_rules_short_log_reader():
    """Five KL points, one far above the stop line: too few for a trend, not for an incident."""
    rule = rule_named("kl_drift")
    run = make_run(kl=np.array([0.01, 0.02, 150.0, 0.03, 0.02]))
    check = check_rule(rule, run, rule.defaults())
    assert check.status is Status.CRITICAL and check.summary.startswith("KL incident")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_engine_fills_every_onset_slot(case):
    diagnosis = diagnosed(case)  # diagnose(case.build(), DoctorConfig()), made once
    for check in diagnosis.checks:
        assert ONSET not in check.summary, check
