"""Agentic runs (trial 41): tool calls read from turn counts, a call reward farmed as the
cause of what it drives, and a tool that never worked as the setup problem it is."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from grpo_doctor.engine import diagnose
from tests.helpers import ar1, make_run

N = 150
T = np.arange(N)


def _sig(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _spam_columns(calls_key: str, offset: float = 0.0) -> dict[str, np.ndarray]:
    """Calls per sample 0.4 -> 2.3 from step ~30 on a reward term paying 0.3 per call; KL
    drifting 0.1 -> 0.9 from step ~18 as the policy moves to farm it."""
    calls = 0.4 + 1.9 * _sig((T - 35) / 6) + np.abs(ar1(1, N, 0.03))
    tool_term = 0.3 * calls
    accuracy = 0.8 + ar1(2, N, 0.02)
    return {calls_key: calls + offset, "rewards/tool_call_reward/mean": tool_term,
            "rewards/accuracy_reward/mean": accuracy, "reward": accuracy + tool_term,
            "kl": 0.1 + 0.8 * _sig((T - 25) / 8) + np.abs(ar1(3, N, 0.01)),
            "frac_reward_zero_std": np.full(N, 0.2)}


def test_turns_less_their_floor_are_the_calls_a_surge_is_read_on():
    """NeMo-RL's avg_turns_per_sample 1.4 -> 3.3 is 0.4 -> 2.3 calls (one answer turn each),
    a 6x surge: read as turns it was 2.4x and tool_spam passed."""
    d = diagnose(make_run(**_spam_columns("avg_turns_per_sample", offset=1.0)))
    spam = d.check("tool_spam")
    assert spam.fired and "turns less the 1 every episode has" in spam.summary
    assert spam.key_metric == "turns"


def test_a_farmed_call_reward_is_the_cause_and_its_weight_the_first_action():
    """KL drift dated a few steps before the surge's level shift is what farming the calls
    did: the root is tool_spam, and the first action stops paying for calls (the config's
    weight named), not a tighter KL leash."""
    run = make_run(**_spam_columns("tools/call_frequency"))
    run = replace(run, config={"reward_funcs": ["accuracy_reward", "tool_call_reward"],
                               "reward_weights": [1.0, 0.3]})
    d = diagnose(run)
    assert d.check("kl_drift").fired
    assert d.root_cause.mode == "tool_spam"
    first = d.root_cause.first_action
    assert first.startswith("stop paying for calls: the tool_call_reward term (weight 0.3")
    assert "beta" not in first


def test_a_tool_that_never_worked_is_the_setup_problem_first():
    """Every call failing from the first logs (TRL's tools/failure_frequency at 1.0) while
    a term paying well-formed calls carries the gain: fix the tool first."""
    failures = np.ones(N)
    d = diagnose(make_run(**{**_spam_columns("tools/call_frequency"),
                             "tools/failure_frequency": failures}))
    check = d.check("tool_failure")
    assert check.status.value == "critical" and check.onset_step == 1
    assert d.root_cause.mode == "tool_failure"
    assert d.root_cause.first_action.startswith("fix the tool before training on")


def test_verltool_success_is_read_as_its_complement():
    """VerlTool logs the share of calls that succeeded: 0.9 success is 10% failing, no
    finding; 0.0 is every call failing."""
    fine = diagnose(make_run(**{"verl_tool/tool_call_success/mean": np.full(N, 0.9),
                                "reward": 0.5 + ar1(4, N, 0.02)}))
    assert fine.check("tool_failure").status.value == "ok"
    assert "10%" in fine.check("tool_failure").summary
    broken = diagnose(make_run(**{"verl_tool/tool_call_success/mean": np.zeros(N),
                                  "reward": 0.5 + ar1(4, N, 0.02)}))
    assert broken.check("tool_failure").status.value == "critical"


def test_tool_output_trained_on_is_the_first_action_behind_the_kl_drift_it_drives():
    """VerlTool's mask_observations false: the policy trained on the tool's tokens drifts
    from its reference (KL 0.4 -> 2.0, a warning). The setting is the cause to fix, not a
    tighter leash (beta 0.04 is inside the recipe); Search-R1's state_masking reads alike."""
    from grpo_doctor import recipe

    run = make_run(kl=0.3 + 1.7 * _sig((T - 40) / 10) + np.abs(ar1(5, N, 0.02)),
                   reward=0.5 + 0.3 * T / N + ar1(6, N, 0.02))
    run = replace(run, config={"actor_rollout_ref": {"agent": {"mask_observations": False},
                                                     "actor": {"kl_loss_coef": 0.04,
                                                               "use_kl_loss": True}}})
    d = diagnose(run)
    assert d.check("kl_drift").status.value == "warning"
    assert d.root_cause.first_action.startswith(
        "actor_rollout_ref.agent.mask_observations false -> true")
    off = recipe.read_config({"actor_rollout_ref": {"actor": {"state_masking": False}}})
    assert off.get("mask_tool_output").verdict == recipe.OFF and off.get("mask_tool_output").far
    on = recipe.read_config({"state_masking": True})
    assert on.get("mask_tool_output").verdict == recipe.OK


def test_a_call_reward_the_config_weighs_is_named_where_no_term_is_logged():
    """verl logs no reward term per step: a custom reward function's weights in the config
    (reward_model.reward_kwargs.weights.tool_call 0.3) name what the calls farm (helper-46:
    the verl restack of the tool-spam run read "cap tool calls" first)."""
    columns = _spam_columns("tool_call_counts/mean")
    del columns["rewards/tool_call_reward/mean"], columns["rewards/accuracy_reward/mean"]
    run = replace(make_run(**columns), config={"reward_model": {"reward_kwargs": {"weights": {
        "correct": 1.0, "format": 0.2, "tool_call": 0.3}}}})
    d = diagnose(run)
    assert d.root_cause.mode == "tool_spam"
    assert d.root_cause.first_action.startswith(
        "stop paying for calls: the tool_call term (weight 0.3 in the config)")


def test_a_failure_share_logged_as_a_percent_is_skipped_with_why():
    """45 for 45%: no "4500% of calls failed"; the check says what it needs."""
    d = diagnose(make_run(**{"tools/failure_frequency": np.full(N, 45.0),
                             "reward": 0.5 + ar1(4, N, 0.02)}))
    check = d.check("tool_failure")
    assert check.status.value == "skipped" and "must be 0-1" in check.summary
