"""The verdict on the patterns end-of-log trends misread (tests/rules/history.py): incidents
the run came back from, collapses older than the log, convergence the evidence contradicts,
dead runs, logs too short to judge, signals under unmapped names, a warm-up that overshoots.
"""

import json

import numpy as np
import pandas as pd
import pytest

from grpo_doctor.engine import diagnose
from grpo_doctor.importers import load_runs
from grpo_doctor.reporters.terminal import render_to_text
from grpo_doctor.store import Run
from tests.helpers import REPO, make_run, run_cli
from tests.rules import history

CORPUS = REPO / "tests" / "fixtures" / "corpus"


def _csv(run: Run, path) -> str:
    """The run's raw columns as a CSV a user would have."""
    frame = run.frame.rename(columns=lambda c: run.mapping.get(c, c))
    frame.to_csv(path, index_label="step")
    return str(path)


# 1. An incident the run came back from -------------------------------------------------------

def test_a_kl_blowup_the_run_recovered_from_is_critical_with_its_episode():
    d = diagnose(history.kl_blowup_recovers())
    kl = d.check("kl_drift")
    assert kl.status.value == "critical" and kl.onset_step == 10
    (incident,) = kl.incidents
    assert (incident.step, incident.peak_step, incident.threshold) == (10, 10, 10.0)
    assert incident.peak == pytest.approx(10_833, rel=1e-3)
    assert incident.recovered_step == 70
    assert "back below 10 at step 70" in kl.summary and "10,833" in kl.summary
    grad = d.check("grad_explosion")
    assert grad.status.value == "critical" and grad.incidents[0].peak == 421_000
    assert d.root_cause.step == 10 and d.root_cause.mode in ("grad_explosion", "kl_drift")
    # The blow-up came with the first logged steps: there is nothing to roll back to.
    assert d.root_cause.first_action.startswith("restart from the initial model")


def test_one_kl_spike_above_stop_that_nothing_followed_is_a_warning():
    d = diagnose(history.kl_one_spike_above_stop())
    kl = d.check("kl_drift")
    assert kl.status.value == "warning" and kl.first_alert_step == 71
    assert kl.incidents[0].recovered_step == 72 and kl.incidents[0].peak == 17.8
    assert d.status == "warning"


def test_one_kl_spike_that_froze_the_reward_is_critical():
    kl = diagnose(history.kl_spike_then_reward_froze()).check("kl_drift")
    assert kl.status.value == "critical" and kl.onset_step == 34
    assert "the reward froze" in kl.summary and "had equal rewards" in kl.summary


def test_a_quiet_log_with_spikes_below_stop_has_no_incident():
    kl = diagnose(history.kl_spikes_below_stop()).check("kl_drift")
    assert kl.status.value == "ok" and not kl.incidents


# 2. A collapse older than the log -------------------------------------------------------------

def test_entropy_below_the_floor_on_every_step_is_a_collapse():
    check = diagnose(history.entropy_below_floor_excerpt()).check("entropy_collapse")
    assert check.status.value == "critical"
    assert "0.02-nat floor" in check.summary and "on every logged step" in check.summary


# 3. Convergence is shown, not assumed ---------------------------------------------------------

def test_a_two_token_policy_is_not_healthy_sharpening():
    check = diagnose(history.entropy_collapse_to_two_tokens()).check("entropy_collapse")
    assert check.status.value == "critical"
    said = " ".join(check.evidence["corroboration"])
    assert "tokens" in said and "zero-std" in said


def test_equal_groups_proven_solved_are_not_a_collapse():
    d = diagnose(history.zero_std_high_but_solved())
    assert d.check("advantage_collapse").status.value == "ok"
    assert "all-correct" in d.check("advantage_collapse").summary
    assert d.check("entropy_collapse").status.value == "ok"


# 4. A dead run --------------------------------------------------------------------------------

def test_a_dead_run_is_named_with_its_catastrophic_update():
    d = diagnose(history.dead_after_one_update())
    dead = d.check("no_learning_signal")
    assert dead.status.value == "critical"
    assert dead.summary.startswith("no learning signal since step 2: reward constant at 0")
    assert "catastrophic update at step 1" in dead.summary and "log-prob" in dead.summary
    assert d.root_cause.mode == "no_learning_signal" and d.root_cause.step == 1
    # Dead from its first update: no checkpoint to go back to, and an lr 600x the recipe's
    # ceiling is the cause (halving it would still be 300x).
    first = d.root_cause.first_action
    assert first.startswith("restart from the initial model")
    assert "learning_rate 0.003 -> 1e-6" in first and "600x" in first
    assert d.root_cause.knob["name"] == "learning_rate" and d.root_cause.setup
    actions = " | ".join(p.action for p in d.plan)
    assert "dynamic sampling" not in actions and "group size" not in actions
    # Not "steady around 0", not "reward 0 -> 0 (peak 0.375)".
    grad = d.check("grad_explosion")
    assert grad.status.value == "skipped" and "non-zero" in grad.reason
    assert "crashed from 0.375 to 0" in d.check("reward_overfit").summary


# 5. Never healthy without evidence ------------------------------------------------------------

def test_a_one_step_snippet_is_inconclusive_not_healthy():
    d = diagnose(history.one_step_snippet())
    assert d.status == "inconclusive" and not d.findings
    assert "could judge it" in d.status_reason
    assert d.to_dict()["status_reason"] == d.status_reason


def test_inconclusive_exits_0_unless_strict_or_fail_on_inconclusive(capsys, tmp_path):
    path = _csv(history.one_step_snippet(), tmp_path / "snippet.csv")
    code, out, _ = run_cli(capsys, "diagnose", path, "-f", "json")
    assert code == 0 and json.loads(out)["status"] == "inconclusive"
    assert run_cli(capsys, "diagnose", path, "--strict")[0] == 1
    assert run_cli(capsys, "diagnose", path, "--fail-on", "inconclusive")[0] == 1
    code, out, _ = run_cli(capsys, "audit", str(tmp_path), "-f", "json")
    assert code == 0 and json.loads(out)["summary"]["inconclusive"] == 1
    assert run_cli(capsys, "audit", str(tmp_path), "--strict")[0] == 1


def test_a_log_with_no_known_metric_is_an_input_error(capsys, tmp_path):
    path = tmp_path / "odd.csv"
    pd.DataFrame({"step": np.arange(20), "foo": np.ones(20), "bar": np.arange(20)}).to_csv(
        path, index=False)
    code, out, err = run_cli(capsys, "diagnose", str(path))
    assert code == 2 and out == ""
    assert err.strip() == (f"grpo-doctor: error: {path}: no metric grpo-doctor knows (columns: "
                           "foo, bar); map yours with --map CANONICAL=COLUMN, e.g. --map "
                           "reward_mean=foo (the metrics each check needs: grpo-doctor rules)")


def test_every_check_ignored_is_not_healthy():
    from grpo_doctor.engine import DoctorConfig
    from grpo_doctor.rules import RULES

    d = diagnose(history.kl_spikes_below_stop(), DoctorConfig(ignore=tuple(r.id for r in RULES)))
    assert d.status == "inconclusive" and "every check was ignored" in d.status_reason


def test_select_of_checks_that_all_judged_and_passed_is_healthy_for_those_and_says_so(capsys):
    healthy = str(REPO / "grpo_doctor" / "examples" / "healthy.csv")
    code, out, _ = run_cli(capsys, "diagnose", healthy, "--select", "kl_drift", "-f", "json")
    doc = json.loads(out)
    assert code == 0 and doc["status"] == "healthy" and doc["config"]["selected"] == ["kl_drift"]
    from grpo_doctor.rules import RULES

    assert doc["notes"][0] == ("healthy for the selected checks only (kl_drift): the other "
                               f"{len(RULES) - 1} checks did not run")
    # ... and the headline says so, where a CI log's grep for HEALTHY looks (nu33)
    _, out, _ = run_cli(capsys, "diagnose", healthy, "--select", "kl_drift")
    assert out.startswith("HEALTHY (selected checks only) · "), out
    _, out, _ = run_cli(capsys, "diagnose", healthy, "--select", "kl_drift", "-f", "markdown")
    assert "— healthy (selected checks only)" in out.splitlines()[0]
    _, out, _ = run_cli(capsys, "diagnose", healthy)
    assert out.startswith("HEALTHY · ")
    # a selected check that could not judge (no ratio logged) leaves it inconclusive
    code, out, _ = run_cli(capsys, "diagnose", healthy, "--select", "kl_drift", "--select",
                           "ratio_instability", "-f", "json")
    assert json.loads(out)["status"] == "inconclusive"
    # a selection that finds something says so; the whole set still needs two judges
    drift = str(REPO / "grpo_doctor" / "examples" / "kl-drift.csv")
    code, out, _ = run_cli(capsys, "diagnose", drift, "--select", "kl_drift", "-f", "json")
    assert code == 1 and json.loads(out)["status"] == "critical"
    from grpo_doctor.engine import DoctorConfig

    short = diagnose(history.one_step_snippet(), DoctorConfig(select=("kl_drift",)))
    assert short.status == "inconclusive"  # too few steps, whatever was selected
    assert diagnose(history.kl_spikes_below_stop()).config is not None
    assert "selected" not in diagnose(history.kl_spikes_below_stop()).config


# 6. A signal present but unmapped -------------------------------------------------------------

@pytest.mark.parametrize(("column", "offered"), [
    ("probe/kl_to_ref", True), ("actor/ppo_kl", False), ("approx_kl", False),
    ("rollout/mismatch_kl", False), ("actor/kl_coef_used", False),
])
def test_only_a_kl_to_the_reference_is_offered_for_the_kl(column, offered):
    """verl's actor/ppo_kl is the KL between the policy and the one that sampled, not the
    drift from the reference: offering it for kl_drift would judge the wrong thing."""
    from grpo_doctor.hints import unmapped_hints
    from grpo_doctor.store import build_run

    s = np.arange(1, 31)
    run = build_run(pd.DataFrame({"step": s, "reward": 0.5 + 0.01 * s, column: 0.01 * s}),
                    source="run.csv", name="run", format="csv")
    assert any(h.metric == "kl" for h in unmapped_hints(run)) is offered



def test_an_unmapped_logprob_is_suggested(capsys, tmp_path):
    run = history.unmapped_logprob()
    d = diagnose(run)
    hint = "--map log_prob_mean=probe/answer_logprob"
    assert any(hint in h for h in d.hints) and hint in d.check("likelihood_displacement").reason
    path = _csv(run, tmp_path / "run.csv")
    _, out, _ = run_cli(capsys, "metrics", path)
    assert f"hint: probe/answer_logprob looks like a mean log-prob: {hint}" in out
    # Taking the hint runs the check.
    code, out, _ = run_cli(capsys, "diagnose", path, "-f", "json", "--map",
                           "log_prob_mean=probe/answer_logprob")
    check = next(c for c in json.loads(out)["checks"] if c["mode"] == "likelihood_displacement")
    assert check["status"] != "skipped"


# 7. Root cause and one plan -------------------------------------------------------------------

def test_a_warmup_that_overshoots_names_the_lr_at_the_reward_peak():
    d = diagnose(history.warmup_overshoot())
    cause = d.root_cause
    assert "the reward peaked at step 3" in cause.summary and "3.8e-4" in cause.summary
    assert cause.first_action.startswith("learning_rate 0.0012 -> 3.8e-4")
    lr_items = [p for p in d.plan if "learning_rate" in p.action]
    assert len(lr_items) == 1 and len(lr_items[0].modes) >= 2


def test_findings_and_incidents_are_on_a_timeline():
    from grpo_doctor.root_cause import timeline

    d = diagnose(history.dead_after_one_update())
    steps = [e.step for e in timeline(d.checks)]
    assert steps == sorted(steps) and steps[0] == 1


def test_json_incidents_and_root_cause(capsys, tmp_path):
    path = _csv(history.kl_blowup_recovers(), tmp_path / "run.csv")
    code, out, _ = run_cli(capsys, "diagnose", path, "-f", "json")
    doc = json.loads(out)
    assert code == 1 and doc["root_cause"]["step"] == 10
    kl = next(c for c in doc["checks"] if c["mode"] == "kl_drift")
    assert set(kl["incidents"][0]) == {"step", "peak_step", "peak", "threshold",
                                       "recovered_step", "metric", "severity", "summary"}
    healthy = json.loads(run_cli(capsys, "diagnose", "--example", "healthy", "-f", "json")[1])
    assert healthy["root_cause"] is None and healthy["plan"] == []


def test_a_warning_is_not_named_root_cause_over_a_critical_it_cannot_explain():
    """A critical reward_hacking at step 10 that entropy blow-up cannot bring about: the
    warning at step 20 is not the root cause, though it could explain what comes after it."""
    from grpo_doctor.findings import Check, Status
    from grpo_doctor.root_cause import root_cause_and_plan
    from tests.helpers import make_run

    run = make_run(np.arange(1, 41), reward=np.linspace(0, 1, 40))
    checks = [Check("reward_hacking", Status.CRITICAL, "hacked", onset_step=10),
              Check("entropy_blowup", Status.WARNING, "blow-up", onset_step=20),
              Check("no_learning_signal", Status.CRITICAL, "dead", onset_step=30)]
    cause, _ = root_cause_and_plan(run, checks)
    assert cause is not None and cause.mode != "entropy_blowup"
    # a warning that can explain every critical finding, earlier ones included, is named
    checks[0] = Check("grad_explosion", Status.CRITICAL, "spike", onset_step=20)
    checks[1] = Check("kl_drift", Status.WARNING, "drift", onset_step=10)
    cause, _ = root_cause_and_plan(run, checks)
    assert cause is not None and (cause.mode, cause.step) == ("kl_drift", 10)
    # ... but not one that began after a critical finding: nothing explains what began before
    # it (a KL drift at 30 is no cause of equal-reward groups from step 1)
    checks = [Check("advantage_collapse", Status.CRITICAL, "equal", onset_step=1),
              Check("kl_drift", Status.WARNING, "drift", onset_step=30),
              Check("entropy_collapse", Status.CRITICAL, "collapse", onset_step=35)]
    cause, _ = root_cause_and_plan(run, checks)
    assert cause is not None and cause.mode != "kl_drift"


# A KL offset from the first step, incidents still going on, rewards stuck at one value --------

def _kl_offset_run(first_step: int):
    from tests.helpers import ar1, make_run

    n = 100
    rng = np.random.default_rng(3)
    steps = np.arange(first_step, first_step + n)
    return make_run(steps=steps, kl=0.6 + 0.1 * ar1(1, n, 0.5),
                    reward=-5.5 + rng.normal(0, 1.5, n),
                    **{"completions/clipped_ratio": np.full(n, 0.95)})


def test_kl_high_from_the_first_step_is_an_offset_not_a_drift_and_causes_nothing():
    d = diagnose(_kl_offset_run(1))
    kl = d.check("kl_drift")
    assert kl.status.value == "warning" and kl.onset_step == 1
    assert "differed from the start" in kl.summary and "drift" not in kl.evidence["threshold"]
    assert kl.remedies[0].startswith("check the reference model")
    # The offset explains nothing: the truncation that began with it is the root cause.
    assert d.root_cause.mode == "length_hacking"


def test_kl_high_at_the_start_of_a_log_that_begins_mid_run_is_still_drift():
    kl = diagnose(_kl_offset_run(500)).check("kl_drift")
    assert kl.status.value == "warning" and "differed from the start" not in kl.summary
    assert "drifting" in kl.summary


def test_an_incident_still_going_on_says_still_above_and_a_later_one_is_not_earlier():
    from tests.helpers import make_run

    n = 800
    kl = np.linspace(0.1, 9.3, n)
    kl[737] = 10.02
    kl[739:] = np.linspace(10.5, 12.1, n - 739)
    d = diagnose(make_run(kl=kl, reward=np.full(n, 0.3) + 0.01 * np.sin(np.arange(n))))
    check = d.check("kl_drift")
    assert check.status.value == "critical"
    ongoing = [i for i in check.incidents if i.recovered_step is None]
    assert ongoing and "still above 10 at the last logged step" in ongoing[0].summary
    assert "earlier KL incident" not in check.summary  # both began after the drift did
    assert "; then KL above 10 from step 740" in check.summary
    assert "peak 10.02 at step 738" in " ".join(i.summary for i in check.incidents)


def test_an_earlier_episode_does_not_say_it_never_came_back():
    from grpo_doctor.rules.incidents import without_ongoing

    crash = "reward crashed from 0.9 to 0.075 between steps 25 and 40"
    assert without_ongoing(f"{crash}; it never came back") == crash
    assert without_ongoing("KL above 10 at step 5, peak 12 at step 5; still above 10 at the "
                           "last logged step; then the reward froze at 0") == (
        "KL above 10 at step 5, peak 12 at step 5; then the reward froze at 0")


def test_groups_all_scoring_one_value_put_the_reward_before_dynamic_sampling():
    from tests.helpers import make_run

    n = 72
    reward = np.zeros(n)
    reward[[5, 17, 30, 41, 55, 63, 66, 70]] = [0.25, 0.5, 0.25, 0.75, 0.25, 0.5, 0.25, 0.5]
    d = diagnose(make_run(reward=reward, reward_std=(reward > 0) * 0.3,
                          frac_reward_zero_std=np.where(reward > 0, 0.5, 1.0)))
    adv = d.check("advantage_collapse")
    assert adv.status.value == "critical"
    assert "the reward was exactly 0 on 89% of logged steps" in adv.summary
    assert str(adv.remedies[0]).startswith("check the reward function")
    dynamic = next(str(r) for r in adv.remedies if str(r).startswith("dynamic sampling"))
    assert "it would drop most of the batch" in dynamic


def test_a_short_log_whose_reward_dipped_and_came_back_does_not_say_no_crash():
    from tests.helpers import make_run

    reward = np.array([0.9, 0.75, 0.875, 0.975, 0.775, 0.9, 0.725, 0.075, 0.025, 0.5, 0.825,
                       0.9, 0.875, 0.95])
    check = diagnose(make_run(reward=reward)).check("reward_overfit")
    assert check.status.value == "ok"
    assert check.summary.startswith("no lasting reward crash; reward dipped to 0.025 at step 9")


def test_a_reward_crash_from_a_level_with_one_odd_batch_before_it_is_a_crash():
    # The corpus's ppo_epochs_noclip: the reward held ~0.63 (one batch at 0.89 among the five
    # before), fell to 0.19 in one update and stayed down 35 points before it climbed back.
    (run,) = load_runs(CORPUS / "19_ppo_epochs_noclip" / "metrics.csv")
    check = diagnose(run).check("reward_overfit")
    assert check.status.value == "warning" and check.onset_step == 82
    assert "crashed from 0.644 to 0.191" in check.summary


def test_a_pre_clip_grad_spike_after_which_kl_left_the_normal_band_is_an_incident():
    # The corpus's warmup_overshoot (grad_clip 1.0): one norm of 15.2 at step 97, after which
    # KL went from ~0.4 to ~0.9 (the chapter's normal band ends at 0.5): something followed.
    (run,) = load_runs(CORPUS / "32_warmup_overshoot")
    check = diagnose(run).check("grad_explosion")
    assert check.fired and check.onset_step == 97
    assert "then KL rose from 0.434 to 0.925" in check.summary


def test_a_series_flipping_between_two_levels_has_no_crash_from_its_high_batches():
    # A length alternating 190/570 (two odd batches make the 3-point median 570 for a point)
    # is no level the run fell from: the healthy Qwen2.5-VL notebook run.
    from tests.helpers import make_run

    rng = np.random.default_rng(6)
    length = 250 + rng.normal(0, 40, 120)
    length[40:44] = [567, 189, 572, 187]
    check = diagnose(make_run(response_length=length)).check("length_hacking")
    assert check.status.value == "ok", check.summary


def test_equal_groups_with_the_task_reward_never_firing_are_critical_on_a_short_log():
    """39 logs (too few for corroboration alone), the correctness reward 0 on every one."""
    from tests.helpers import make_run

    n = 39
    rng = np.random.default_rng(5)
    fmt_reward = np.clip(0.4 + 0.02 * np.arange(n) + rng.normal(0, 0.05, n), 0, 1)
    std = np.resize([0, 0, 0.2, 0, 0, 0, 0.2, 0, 0, 0.2], n)  # 0 on 70% of steps
    d = diagnose(make_run(reward=fmt_reward, reward_std=std,
                          rewards__format_reward_func=fmt_reward,
                          rewards__equation_reward_func=np.zeros(n)))
    adv = d.check("advantage_collapse")
    assert adv.status.value == "critical"
    assert "the task's own reward never fired: equation_reward_func always 0" in adv.summary
    assert "task's reward never moving" in adv.evidence["threshold"]
    assert "too hard for it to ever fire" in str(adv.remedies[0])


def test_a_reward_rising_on_format_alone_is_said_as_correctness_not_improving():
    from grpo_doctor.rules.signals import learning
    from tests.helpers import make_run

    n = 60
    rng = np.random.default_rng(8)
    fmt_term = np.linspace(0.1, 1.0, n)
    correct = 0.2 + rng.normal(0, 0.03, n)
    run = make_run(reward=fmt_term + correct, frac_reward_zero_std=np.full(n, 0.7),
                   rewards__format_reward_func=fmt_term, rewards__correct_answer=correct)
    progress = learning(run, 1)
    assert not progress.improving
    assert progress.stalled_words() == "correctness not improving (the reward rose on other terms)"
    adv = diagnose(run).check("advantage_collapse")
    assert adv.fired and "with correctness not improving (the reward rose" in adv.summary


def test_a_truncation_pile_up_on_a_short_log_begins_where_it_crossed_the_line():
    """A 3-step debug run: 1.7% truncated at step 1, then 100% and 99%."""
    from tests.helpers import make_run

    run = make_run(steps=np.array([1, 2, 3]), reward=np.zeros(3),
                   **{"response_length/clip_ratio": np.array([0.0166, 1.0, 0.99]),
                      "response_length/mean": np.array([61.0, 512.0, 509.0])})
    check = diagnose(run).check("length_hacking")
    assert check.status.value == "critical" and check.onset_step == 2


def test_an_eleven_step_excerpt_of_a_healthy_run_is_inconclusive_and_twenty_are_enough():
    from grpo_doctor import load_run

    run = load_run(CORPUS / "01_healthy_s1")
    assert diagnose(run).status == "healthy"
    steps = run.frame.index
    short = diagnose(run.truncated(int(steps[10])))
    assert short.status == "inconclusive" and "11 logged steps are too few" in short.status_reason
    assert diagnose(run.truncated(int(steps[19]))).status == "healthy"


def test_the_weight_of_a_reward_term_that_never_varies_is_unknown_not_0():
    from tests.helpers import make_run

    n = 30
    fmt_term = np.linspace(0, 1, n)
    check = diagnose(make_run(reward=fmt_term, rewards__format_reward_func=fmt_term,
                              rewards__equation_reward_func=np.zeros(n))).check("format_gaming")
    weights = check.evidence["component_weights"]
    assert weights["equation_reward_func"] == "unknown (it never varies)"
    assert weights["format_reward_func"] == pytest.approx(1.0)


def test_a_blowup_begins_where_the_climb_to_its_peak_left_the_line_not_at_an_earlier_bump(
        real_runs):
    """Entropy 0.066, a bump to 0.5 at steps 85-100 back to 0.17 by 140, then 0.17 -> 6.36
    from 145 (nips-grpo-dynamics seed44): the blow-up's own climb begins at 150, not 85 (a
    monitor still raised the finding at 85, which stays its first alert). Entropy grows by
    factors (0.17, 0.32, 0.51, 0.9, 1.7): fitted in nats it was dated 155, where the curve
    turned visibly steep."""
    from grpo_doctor import load_run

    run = load_run(real_runs / "log-history" /
                   "nips-grpo-dynamics_qwen35_rho0.70_seed44_step_logs.json")
    assert diagnose(run, with_first_alert=False).check("entropy_blowup").onset_step == 150
    assert diagnose(run).check("entropy_blowup").first_alert_step == 85


def test_a_reward_that_turns_nan_while_the_loss_and_kl_stay_finite_is_the_reward_function(
        tmp_path):
    """Only the reward is NaN (from step 2): the model is fine; the dtype checklist was the
    first action."""
    rows = ["step,reward,kl,loss", "1,0.5,0.001,0.1"]
    rows += [f"{s},nan,{0.001 * s},0.1" for s in range(2, 21)]
    (tmp_path / "run.csv").write_text("\n".join(rows) + "\n")
    d = diagnose(load_runs(tmp_path / "run.csv")[0])
    assert d.root_cause.mode == "numerical_failure"
    assert d.root_cause.first_action.startswith("check the reward function on a few "
                                                "completions: it returns NaN")


def _task_stuck_at(level: float, n: int = 160, seed: int = 29) -> Run:
    """A sparse 0/1 correctness term right on ``level`` of a few samples a step, from the first
    step to the last, and the reward it makes (the holdout run h2_too_hard_sum: sum mod 10 of
    5-6 digits, 8% right throughout)."""
    from tests.helpers import make_run

    rng = np.random.default_rng(seed)
    right = rng.binomial(16, level, n) / 16
    return make_run(reward=right, rewards__accuracy_reward__mean=right,
                    rewards__format_reward__mean=np.clip(0.9 + rng.normal(0, 0.02, n), 0, 1))


def test_a_task_right_8_percent_of_the_time_from_start_to_end_is_not_healthy():
    """Never healthy when the task's own reward never moved: flat at 8% is not learning."""
    d = diagnose(_task_stuck_at(0.08))
    assert d.status != "healthy"
    check = d.check("no_progress")
    assert check.status.value == "warning"
    assert "accuracy_reward stayed low" in check.summary and "of 1" in check.summary
    # A task right 70% of the time and holding there has nothing to say against it here.
    assert diagnose(_task_stuck_at(0.7)).check("no_progress").status.value == "ok"
    # Nor has one too short to have learned anything yet (sparse rewards fire late).
    assert diagnose(_task_stuck_at(0.08, n=80)).check("no_progress").status.value == "ok"


def _warmup_then_chaos(n: int = 250, seed: int = 45):
    """An lr warmed up linearly to 1e-2 over the whole run: the reward climbs calmly (noise
    0.05) to 1.15 by step 50, holds, and from step 110 breaks down with swings three times
    larger; the log-prob first rises as the policy sharpens, then falls (the holdout run
    h3_warmup_to_1e-2, corpus/runs.py)."""
    from tests.helpers import make_run

    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1)
    reward = np.where(t < 50, 0.7 + 0.45 * t / 50, 1.15)
    reward = np.where(t > 110, 1.15 - 0.9 * (t - 110) / (n - 110), reward)
    reward = reward + rng.normal(0, 0.05, n) * np.where(t > 110, 3.0, 1.0)
    logp = np.where(t < 100, -0.55 + 0.51 * t / 100, -0.04 - 0.76 * (t - 100) / (n - 100))
    return make_run(reward=reward, learning_rate=1e-2 * t / n,
                    log_prob_mean=logp + rng.normal(0, 0.01, n))


def test_an_overshoot_whose_broken_stretch_is_noisy_still_names_the_lr_at_the_peak():
    """The reward's gain (0.45) is under 6x the whole log's step noise, inflated by the broken
    stretch; the climb's own noise is what tells a peak from a bump."""
    first = diagnose(_warmup_then_chaos()).root_cause.first_action
    assert first.startswith("learning_rate 0.01 -> ") and (
        "(its value when the reward peaked at step") in first


def test_a_log_prob_that_rose_then_fell_is_dated_from_its_top():
    """Not 'fell from -0.37 to -0.47 from step 3': the log-prob rose to its top by step ~100
    and fell from there."""
    check = diagnose(_warmup_then_chaos()).check("likelihood_displacement")
    assert check.fired
    assert 90 <= check.onset_step <= 130, check.onset_step
    assert "(its top, at step" in check.summary


def _learning_from(start: float, end: float, n: int = 160, seed: int = 57) -> Run:
    from tests.helpers import make_run

    rng = np.random.default_rng(seed)
    right = rng.binomial(16, np.linspace(start, end, n)) / 16
    return make_run(reward=right + 0.9, rewards__accuracy_reward__mean=right,
                    rewards__format_reward__mean=np.full(n, 0.9))


def test_a_run_learning_at_a_low_level_is_healthy_with_a_note_that_says_how_low():
    """Healthy means no failure mode fired; a reader takes it for 'good' unless told the
    task's own score is still low (the real Qwen2.5-VL run: correctness 0.07 -> 0.19)."""
    d = diagnose(_learning_from(0.05, 0.2))
    assert d.status == "healthy"
    assert any(n.startswith("no failure mode fired, but the task's own score is still low: "
                            "accuracy_reward") for n in d.notes), d.notes
    assert not any("still low" in n for n in diagnose(_learning_from(0.6, 0.8)).notes)


def test_a_reward_term_that_never_paid_is_named_in_a_note_and_one_met_by_every_sample_is_not():
    """A format check whose pattern never matched (0 on all 200 steps beside a correctness
    term that learned; trial 52, Unsloth's soft and strict format checks) is a bug the user
    can fix: said, even on a healthy run. A term at a fixed positive value (a format every
    sample keeps) and an anti-cheat term that never caught anything are not."""
    from tests.helpers import make_run

    rng = np.random.default_rng(5)
    n = 200
    right = rng.binomial(16, np.linspace(0.35, 0.9, n)) / 16
    dead = make_run(reward=right, rewards__correctness_reward__mean=right,
                    rewards__format_reward__mean=np.zeros(n))
    d = diagnose(dead)
    assert d.status == "healthy"
    said = [x for x in d.notes if "never paying a completion" in x]
    assert said and said[0].startswith("format_reward: 0 on all 200 logged steps"), d.notes
    for kept in ({"rewards__format_reward__mean": np.full(n, 0.5)},
                 {"rewards__no_cheating__mean": np.zeros(n)},
                 {"rewards__format_reward__mean": np.r_[np.zeros(n - 1), 0.5]}):
        run = make_run(reward=right + 0.5, rewards__correctness_reward__mean=right, **kept)
        assert not any("never paying" in x for x in diagnose(run).notes), kept
    # Too few steps to be more than chance.
    short = make_run(reward=right[:15], rewards__correctness_reward__mean=right[:15],
                     rewards__format_reward__mean=np.zeros(15))
    assert not any("never paying" in x for x in diagnose(short).notes)


def test_a_run_logged_every_25_steps_whose_reward_climbed_on_each_is_no_collapse():
    """logging_steps 25: the control's own run in 8 points, the reward 0.90 -> 1.37 on every
    one, the entropy 0.167 -> 0.069, the zero-std share 3% -> 40% (trial 54 read it critical
    "entropy collapsing", lr 1e-4 -> 2.5e-6: the exemption of a learning run needs 10 rewards).
    Too few points to call it healthy, and the reason says how to log."""
    from tests.helpers import make_run

    steps = np.arange(25, 201, 25)
    run = make_run(steps=steps, reward=[0.899, 1.133, 1.24, 1.298, 1.321, 1.341, 1.374, 1.368],
                   rewards__correctness_reward__mean=[0.42, 0.65, 0.75, 0.8, 0.83, 0.85, 0.88,
                                                      0.88],
                   entropy=[0.167, 0.12, 0.1, 0.09, 0.08, 0.075, 0.07, 0.069],
                   zero_std_fraction=[0.03, 0.03, 0.11, 0.28, 0.25, 0.32, 0.42, 0.40])
    d = diagnose(run)
    assert d.check("entropy_collapse").status.value == "ok", d.check("entropy_collapse")
    assert d.status == "inconclusive"
    assert d.status_reason.endswith("it logged once every 25 steps over steps 25-200: log every "
                                    "step or few (TRL's logging_steps 1-5) to judge a run this "
                                    "long"), d.status_reason
    # The same entropy with the reward falling on each point is no learning run.
    falling = make_run(steps=steps, reward=[1.37, 1.3, 1.2, 1.1, 1.0, 0.95, 0.9, 0.85],
                       entropy=[0.167, 0.12, 0.1, 0.09, 0.08, 0.075, 0.07, 0.069],
                       zero_std_fraction=[0.03, 0.03, 0.11, 0.28, 0.25, 0.32, 0.42, 0.40])
    assert diagnose(falling).check("entropy_collapse").status.value == "critical"


def test_a_cluster_of_lucky_batches_in_a_sparse_reward_is_not_a_peak_to_over_fit_from():
    """A sparse reward (0.12 on most steps, 1-2.3 when a sample is right) whose spikes cluster
    for a few steps: a 5-point rolling median reads a peak of ~0.5 and a 'fall' back to 0.12.
    The real Qwen2.5 (3B) notebook, polled live at steps 75-123, read critical over-fitting."""
    from tests.helpers import make_run

    rng = np.random.default_rng(3)
    n = 117
    reward = np.where(rng.random(n) < 0.12, rng.uniform(1.0, 2.3, n), 0.12)
    reward[:40] = np.where(rng.random(40) < 0.3, rng.uniform(-0.25, 0.0, 40), 0.12)
    reward[76:92:2] = [1.15, 1.9, 2.31, 0.48, 1.74, 1.35, 0.9, 1.2]  # a lucky stretch
    check = diagnose(make_run(reward=reward)).check("reward_overfit")
    assert check.status.value != "critical", check.summary
    # A reward that held a level for 30 steps and then fell back over-fitted.
    held = np.full(n, 0.12) + rng.normal(0, 0.01, n)
    held[40:70] = 0.8 + rng.normal(0, 0.01, 30)
    held[70:] = 0.12 + rng.normal(0, 0.01, n - 70)
    assert diagnose(make_run(reward=held)).check("reward_overfit").status.value == "critical"


def _short_run(reward: np.ndarray, seed: int = 3) -> Run:
    """A short run (fewer rewards than no_progress needs) with every other check content:
    entropy, KL, grad norm, zero-std share, length all ordinary."""
    from tests.helpers import make_run

    rng = np.random.default_rng(seed)
    n = len(reward)
    return make_run(reward=reward, entropy=0.6 + rng.normal(0, 0.01, n),
                    kl=0.02 + rng.normal(0, 0.002, n), grad_norm=0.4 + rng.normal(0, 0.03, n),
                    zero_std_fraction=0.2 + rng.normal(0, 0.02, n),
                    response_length_mean=200 + rng.normal(0, 5, n))


def test_a_short_run_whose_reward_never_improved_is_inconclusive_not_healthy():
    """"Healthy" reads as "learning": 27 logs of a noisy reward with no trend (a real TRL
    console run: -2.25 -> -2.5) are too few for no_progress, and show no learning either."""
    rng = np.random.default_rng(11)
    flat = _short_run(-2.3 + rng.normal(0, 1.5, 27))
    d = diagnose(flat)
    assert not d.findings and d.status == "inconclusive", d.status
    assert d.status_reason.startswith("no failure mode fired, but nothing shows it learns: "
                                      "over 27 logged rewards, reward "), d.status_reason
    rising = _short_run(np.linspace(0.2, 0.8, 27) + rng.normal(0, 0.05, 27))
    assert diagnose(rising).status == "healthy"
    tiny = _short_run(-2.3 + rng.normal(0, 1.5, 8))  # a bug report's lines: not judged
    assert diagnose(tiny).status_reason is None or "learns" not in diagnose(tiny).status_reason


def test_a_long_run_whose_reward_is_below_its_best_and_not_improving_is_not_healthy():
    """No failure mode fired and the reward neither rose nor fell significantly, well below
    its best: the progress check makes no call, and the report lists it apart from the checks
    that passed; the run is inconclusive ("healthy" reads as learning)."""
    from grpo_doctor.reporters.outline import passed, unsettled

    rng = np.random.default_rng(21)
    n = 120
    reward = 0.5 + 0.05 * np.sin(np.pi * np.arange(n) / n) + rng.normal(0, 0.05, n)
    d = diagnose(_short_run(reward))
    check = d.check("no_progress")
    assert check.evidence.get("unsettled"), check.summary  # rose, and fell back to its start
    assert d.status == "inconclusive" and "nothing shows it learns" in d.status_reason
    assert "no_progress" not in passed(d) and unsettled(d) == [check]


def test_a_reward_that_never_left_its_level_has_not_converged():
    """A reward exactly 0.5 on most steps (the task reward never fires, a format term pays
    0.5): "at its best level (0.5): converged" read as learning done; it is a no-call."""
    rng = np.random.default_rng(5)
    n = 70
    reward = np.where(rng.random(n) < 0.8, 0.5, rng.choice([0.0, 1.0], n))
    d = diagnose(_short_run(reward))
    check = d.check("no_progress")
    assert "converged" not in check.summary and check.evidence.get("unsettled"), check.summary
    assert check.summary.startswith("reward not improving (0.5 -> 0.5)"), check.summary


def _never_solved(n: int = 200) -> dict[str, np.ndarray]:
    """A task the policy never solves: the reward 0 but for a lucky batch now and then
    (1 in 25), most groups all-0, a KL term still moving the weights, a held-out score that
    touched 0.005 once."""
    rng = np.random.default_rng(3)
    reward = np.where(np.arange(n) % 25 == 12, 0.0156, 0.0)
    held = np.zeros(n)
    held[40:45] = 0.005
    return {"reward": reward, "frac_reward_zero_std": np.where(reward > 0, 0.97, 1.0),
            "grad_norm": 0.01 + 0.002 * rng.random(n), "kl": np.linspace(0, 0.002, n),
            "eval_accuracy": held}


def test_a_reward_stuck_at_zero_with_a_gradient_is_not_a_pass_of_no_learning_signal():
    """Reward 0 on 96% of steps to the end, while a KL term keeps the grad norm above 0:
    not dead by its gradient, but no pass either ("passed: no_learning_signal" beside 99% of
    groups equal); a held-out score that touched 0.005 did not "learn, then lose it"."""
    from grpo_doctor.reporters.outline import passed, unsettled
    from tests.helpers import make_run

    d = diagnose(make_run(**_never_solved()))
    assert "no_learning_signal" not in passed(d)
    assert "no_learning_signal" in [c.mode for c in unsettled(d)]
    text = d.check("no_learning_signal").summary
    assert text.startswith("the reward sat at 0 on ") and "not dead by its gradient" in text
    progress = d.check("no_progress")
    assert progress.status.value == "warning" and "learned, then lost" not in progress.summary


def test_a_converged_run_flat_at_its_best_still_passes_no_learning_signal():
    from grpo_doctor.reporters.outline import passed
    from tests.helpers import make_run

    n = 200
    reward = np.minimum(np.linspace(0.1, 1.4, n), 1.0)
    d = diagnose(make_run(reward=reward, grad_norm=np.full(n, 0.05), kl=np.linspace(0, .02, n)))
    assert "no_learning_signal" in passed(d)


def test_a_burst_on_a_reward_that_was_always_zero_did_not_freeze_it():
    """The aftermath of an incident: a reward at 0 on nearly every step before it did not
    "freeze at 0" after it (a task never solved; said as harm it made a burst of 0.19 on
    norms of 0.01 critical)."""
    from grpo_doctor.rules import incidents
    from tests.helpers import make_run

    run = make_run(**_never_solved())
    assert not any("froze" in a for a in incidents.aftermath(run, 190))
    moving = _never_solved()
    moving["reward"] = np.r_[np.linspace(0.1, 0.6, 183), np.zeros(17)]
    assert "the reward froze at 0" in incidents.aftermath(make_run(**moving), 190)


def test_a_held_out_score_that_touched_a_few_thousandths_did_not_learn_then_lose_it():
    """The corpus's too-hard run (reward 0 on 96% of steps): its held-out score at 0.0006 that
    touched 0.005 is no "it learned, then lost it (a fall, not a stall)": it stayed low."""
    from tests.helpers import corpus_diagnosis

    progress = corpus_diagnosis("11_too_hard").check("no_progress")
    assert progress.status.value == "warning" and "stayed low" in progress.summary
    assert "learned, then lost" not in progress.summary


def test_an_entropy_dip_that_came_back_is_no_collapse():
    """Entropy sliding 0.70 -> 0.62 with a dip to 0.3 half-way: the window's fall past 50% came
    back, 11% is lost at the end. "entropy fell 10% ... threshold: drop > 50%" had read a
    critical collapse (trial 41, run 12); a fall that holds still fires."""
    from tests.helpers import make_run

    n = 150
    rng = np.random.default_rng(5)
    h = np.linspace(0.70, 0.62, n) + rng.normal(0, 0.02, n)
    h[85:100] = 0.3
    reward = np.full(n, 0.2) + rng.normal(0, 0.005, n)
    check = diagnose(make_run(entropy=h, reward=reward)).check("entropy_collapse")
    assert not check.fired, check.summary
    assert check.evidence["largest_drop_in_window"] >= 0.5
    held = h.copy()
    held[85:] = 0.3 + rng.normal(0, 0.01, n - 85)
    assert diagnose(make_run(entropy=held, reward=reward)).check("entropy_collapse").fired


def test_equal_groups_the_log_cannot_explain_are_looked_at_before_they_are_dropped():
    """90% of groups equal, the reward noisy and flat, no term or score to say why: the first
    remedy is to look at a few groups (all right, or all wrong and the reward never pays),
    with dynamic sampling after it (ADVICE.md: dynamic sampling first is the wrong step where
    the reward never fires)."""
    from tests.helpers import make_run

    n = 120
    rng = np.random.default_rng(4)
    d = diagnose(make_run(frac_reward_zero_std=np.clip(0.9 + rng.normal(0, 0.03, n), 0, 1),
                          reward=0.3 + rng.normal(0, 0.05, n)))
    check = d.check("advantage_collapse")
    assert check.fired
    assert check.remedies[0].startswith("look at a few equal-reward groups")
    assert check.remedies[1].startswith("dynamic sampling")


def test_a_log_too_short_to_judge_says_what_every_step_shows_at_an_extreme(tmp_path):
    """Two pasted lines of ms-swift's logging.jsonl (ms-swift#9261): every completion cut at
    4,096 tokens, every group equal, a gradient of 0. Too few steps for any check, it read
    INCONCLUSIVE with nothing more; the steps already show a setup problem. The verdict stays
    inconclusive."""
    line = ('{{"loss": 0.0, "grad_norm": 0.0, "learning_rate": 1e-08, '
            '"completions/mean_length": 4096.0, '
            '"completions/clipped_ratio": 1.0, "reward": 0.0, "reward_std": 0.0, '
            '"frac_reward_zero_std": {z}, "global_step/max_steps": "{k}/10000"}}\n')
    path = tmp_path / "logging.jsonl"
    path.write_text(line.format(z=1.0, k=1) + line.format(z=1.0, k=2)
                    + '{"loss": 0.0, "grad_norm": 0.0, "completions/mean_')
    d = diagnose(load_runs(path)[0])
    assert d.status == "inconclusive" and d.run.first_step == 1 and d.run.n_steps == 2
    assert d.signs[0].startswith("every completion cut at the length cap (4,096 tokens)")
    assert any("every group with equal rewards" in s for s in d.signs), d.signs
    assert json.loads(json.dumps(d.to_dict()))["signs"] == list(d.signs)
    assert any("cut off before its step" in n for n in d.notes), d.notes
    # The first steps of a run may sit in its warm-up: 1e-8 there is no rate too low.
    assert not any("learning_rate" in n for n in d.notes), d.notes
    # Groups that differ with a gradient of 0: the update is lost, not the reward (#5890).
    path.write_text(line.format(z=0.5, k=1))
    lost = diagnose(load_runs(path)[0]).signs[-1]
    assert lost.startswith("a gradient norm of exactly 0 while rewards within groups differ")
    # But a policy whose completions changed was updated: the logged norm is what is wrong
    # (a 4-log run whose completions fell 15 -> 2 tokens had read "the update is lost").
    path.write_text(line.format(z=0.5, k=1) + line.format(z=0.5, k=2).replace(
        '"completions/mean_length": 4096.0', '"completions/mean_length": 1000.0'))
    moved = diagnose(load_runs(path)[0]).signs[-1]
    assert moved.startswith("a gradient norm logged as exactly 0, yet the policy changed "
                            "(length 4,096 -> 1,000 tokens)"), moved
    # A run of 20 steps or more is judged by the checks, with no signs beside them.
    path.write_text("".join(line.format(z=1.0, k=k) for k in range(1, 41)))
    assert diagnose(load_runs(path)[0]).signs == ()


def test_a_short_log_says_what_its_steps_show_beside_a_finding_too(tmp_path):
    """A pasted verl step (Agent-R1#30): NaN losses, every completion at the 257-token cap,
    every sample scored -1. The NaN's critical hid the rest (it was said only when nothing
    fired). And a verl step whose advantages are all 0 while its scores span 0 to 1
    (Awesome-ML-SYS-Tutorial#106): no gradient at all, said as what the step shows."""
    nan = ("step:83 - actor/pg_loss:nan - actor/kl_loss:nan - actor/grad_norm:nan - "
           "actor/entropy_loss:nan - critic/score/mean:-1.000 - critic/score/max:-1.000 - "
           "critic/score/min:-1.000 - response_length/mean:257.000 - "
           "response_length/clip_ratio:1.000\n")
    d = diagnose(load_runs(_text(tmp_path / "nan.log", nan))[0])
    assert d.status == "critical" and d.root_cause.mode == "numerical_failure"
    assert d.signs[0].startswith("every completion cut at the length cap (257 tokens)"), d.signs
    assert any(s.startswith("every sample of every step scored the same (-1)") for s in d.signs)
    shown = render_to_text(d, width=100)
    assert "its step shows: every completion cut at the length cap" in shown, shown
    flat = ("step:83 - actor/pg_loss:0.000 - critic/score/mean:0.500 - critic/score/max:1.000 - "
            "critic/score/min:0.000 - critic/advantages/max:0.000 - "
            "critic/advantages/min:0.000\n")
    d = diagnose(load_runs(_text(tmp_path / "flat.log", flat))[0])
    assert d.signs == ("every advantage was exactly 0 while the rewards differed (from 0 to 1):"
                       " no policy gradient; check the group size (rollout.n / num_generations:"
                       " a group of 1 sample has no baseline to beat) and the advantage "
                       "estimator",), d.signs


def _text(path, text: str):
    path.write_text(text)
    return path


def test_an_equal_groups_episode_that_held_from_the_start_is_dated_there_not_at_its_window():
    """Trial 55 (a grader cache keyed on the prompt): equal groups at 60-70% from step 3, under
    the line on single steps now and then, the last of them inside the late window. It read
    "from step 161" beside "87% over the run": the late window's first step."""
    n = 200
    rng = np.random.default_rng(4)
    z = np.clip(0.68 + 0.05 * rng.standard_normal(n), 0, 1)
    z[:2] = 0.2
    z[[40, 95, 170]] = 0.4  # single-step dips, the last inside the last 40 points
    run = make_run(frac_reward_zero_std=z, reward=0.3 + 0.05 * rng.standard_normal(n))
    check = diagnose(run).check("advantage_collapse")
    assert check.fired and check.onset_step == 3, (check.onset_step, check.summary)
    assert "from step 3" in check.summary
    # Its rolling median under the line until step 150: the episode is from there.
    z2 = z.copy()
    z2[:150] = np.clip(0.3 + 0.05 * rng.standard_normal(150), 0, 1)
    z2[[20, 60]] = 0.6
    late = diagnose(make_run(frac_reward_zero_std=z2, reward=0.3 + 0.05 * rng.standard_normal(n)))
    assert 145 <= late.check("advantage_collapse").onset_step <= 160
