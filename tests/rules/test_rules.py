"""One harness runs every rule case (cases.py); meta-tests check each rule is complete."""

import numpy as np
import pytest

from grpo_doctor.engine import diagnose
from grpo_doctor.rules import RULES
from tests.helpers import make_run
from tests.rules.cases import CASES, Case, diagnosed


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case):
    check = diagnosed(case).check(case.mode)
    assert check.status.value in case.statuses, check.summary
    if case.onset is not None:
        assert check.onset_step is not None
        assert abs(check.onset_step - case.onset) <= case.tolerance, (check.onset_step,
                                                                      check.summary)
        assert check.first_alert_step is not None
        assert check.first_alert_step >= check.onset_step
        assert check.remedies, "a finding must say what to change"


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rule_is_documented_and_has_firing_and_quiet_cases(rule):
    for section in ("What it detects", "Why it matters", "How it is detected",
                    "False positives", "Remedies"):
        assert section in rule.doc, f"{rule.id} doc lacks {section!r}"
    assert rule.params, f"{rule.id} has no parameters"
    modes = [c for c in CASES if c.mode == rule.id]
    assert any(c.onset is not None for c in modes), f"{rule.id} has no firing case"
    assert any(c.statuses == ("ok",) for c in modes), f"{rule.id} has no quiet case"


def test_a_nan_only_in_the_kl_asks_about_its_computation_not_a_rollback():
    """The loss and the grad norm stayed finite while the KL went NaN at step 300: the plan
    said "resume from the last checkpoint" and "learning_rate -> half", remedies for poisoned
    weights; it asks about the KL's computation instead."""
    import numpy as np

    from tests.helpers import ar1

    n = 400
    kl = (0.05 + 0.01 * np.abs(ar1(5, n, 1.0))).astype(object)
    kl[299] = "nan"
    run = make_run(train__loss=0.01 * ar1(6, n, 1.0), train__grad_norm=0.4 + 0.01 * ar1(7, n, 1.0),
                   train__kl=kl, train__learning_rate=np.full(n, 4.6e-7))
    d = diagnose(run)
    check = d.check("numerical_failure")
    assert check.status.value == "warning" and check.onset_step == 300
    assert check.summary == ("non-finite values first at step 300: kl (1 value from step 300); "
                             "loss and grad_norm stayed finite: the NaN did not reach the weights")
    assert check.remedies[0].startswith("check the KL estimator for log(0)")
    assert any("mask padded tokens out of the kl average" in r for r in check.remedies)
    said = " ".join(check.remedies + tuple(step.action for step in d.plan))
    assert "resume" not in said and "learning_rate" not in said and "checkpoint" not in said


@pytest.mark.parametrize("held_end,fires", [(0.6, False), (0.25, True)])
def test_a_reward_fall_is_over_fitting_only_when_the_task_did_not_keep_improving(held_end, fires):
    """The train reward rose 0.2 -> 0.7 and fell back to 0.4; the held-out score went on to
    0.6 (still learning: a harder stretch of prompts, not over-fitting) or fell to 0.25."""
    from tests.helpers import make_run

    n = 200
    steps = np.arange(n)
    reward = np.where(steps < 120, 0.2 + 0.5 * steps / 120, 0.7 - 0.3 * (steps - 120) / 80)
    reward = reward + 0.01 * np.sin(steps * 2.1)
    held = np.full(n, np.nan)
    held[::5] = np.where(steps[::5] < 120, 0.2 + 0.2 * steps[::5] / 120,
                         0.4 + (held_end - 0.4) * (steps[::5] - 120) / 80)
    check = diagnose(make_run(train__reward=reward, eval_accuracy=held)).check("reward_overfit")
    assert check.fired == fires, check.summary


def test_a_task_score_that_climbed_and_fell_back_is_no_stall():
    """lr 3e-3 (helper-35): the held-out score 0.49 -> 0.955 at step 85, crashed with the reward
    at step 121 and ended at 0.48; no_progress said "the held-out score stayed low (0.487 ->
    0.48) ... the run is not learning its task" beside reward_overfit's "rose, then fell"."""
    from tests.helpers import make_run

    n = 200
    s = np.arange(1, n + 1)
    rise = np.clip(s / 85, 0, 1)
    fell = s > 120
    reward = np.where(fell, 0.7, 0.7 + 0.45 * rise) + 0.03 * np.sin(s * 1.7)
    held = np.where(fell, 0.48, 0.48 + 0.47 * rise)
    held = np.where(s % 5 == 0, held, np.nan)
    check = diagnose(make_run(reward=reward, eval__score=held)).check("no_progress")
    assert not check.fired, check.summary
    assert "it learned, then lost it" in check.summary, check.summary
    # The same run whose held-out score never left 0.48 has not learned its task.
    flat = np.where(s % 5 == 0, 0.48 + 0.01 * np.sin(s), np.nan)
    still = diagnose(make_run(reward=reward, eval__score=flat)).check("no_progress")
    assert "learned, then lost" not in still.summary, still.summary


def test_a_crash_that_took_the_reward_with_the_held_out_score_is_not_hacking():
    """lr 3e-3 (helper-35): the held-out score and the reward crashed together at step 121,
    the reward climbing back later; reward_hacking read "held-out score turned over while
    train reward held or rose" (critical). The same held-out fall under a reward that held
    is hacking."""
    from tests.helpers import make_run

    n = 200
    s = np.arange(1, n + 1)
    rise = np.clip(s / 85, 0, 1)
    held = np.where(s > 120, 0.1, 0.48 + 0.47 * rise)
    held = np.where(s % 5 == 0, held, np.nan)
    recovering = np.clip((s - 133) / 40, 0, 1)
    crashed = np.where(s > 120, 0.2 + 0.8 * recovering, 0.7 + 0.45 * rise)
    reward = crashed + 0.03 * np.sin(s * 1.7)
    check = diagnose(make_run(reward=reward, eval__score=held)).check("reward_hacking")
    assert not check.fired, check.summary
    held_up = 0.7 + 0.45 * rise + 0.03 * np.sin(s * 1.7)
    hacked = diagnose(make_run(reward=held_up, eval__score=held)).check("reward_hacking")
    assert hacked.fired and "held-out score turned over" in hacked.summary, hacked.summary


def test_equal_groups_beside_a_held_out_score_of_zero_are_never_called_solved_ones():
    """Six-digit sums the base never saw (helper-35): the format term climbed to its plateau
    and the equal groups were read "the reward climbed to its best level and holds there:
    many may be solved ones" beside a held-out score of 0."""
    from tests.helpers import make_run

    n = 60
    s = np.arange(1, n + 1)
    reward = 0.1 + 0.1 * np.minimum(s / 20, 1) + 0.005 * np.sin(s * 1.3)
    zero_std = np.where(s > 25, 0.6, 0.2)
    for held, solved_words in ((0.0, False), (0.8, True)):
        score = np.where(s % 5 == 0, held, np.nan)
        check = diagnose(make_run(reward=reward, frac_reward_zero_std=zero_std,
                                  eval__score=score)).check("advantage_collapse")
        assert check.fired, check.summary
        assert ("solved ones" in check.summary) is solved_words, check.summary


def test_a_first_update_at_a_learning_rate_burst_is_no_reference_mismatch():
    """lr 2e-2 for 20 steps, then 1e-4 (helper-36): KL 469 at step 1 was read "policy and
    reference differed from the start (a reference of other weights or precision)", with
    "stop, update the reference to the last good checkpoint" in the plan; likelihood
    displacement said "up 216%" beside "-1.14 to -1.38" and "reward still rising" after a
    crash to 0.05."""
    from tests.helpers import make_run

    n = 200
    s = np.arange(1, n + 1)
    lr = np.where(s <= 20, 2e-2, 1e-4)
    kl = np.where(s == 1, 469.0, 1.9 + 0.1 * np.sin(s))
    reward = np.where(s == 1, 0.76, 0.05 + 0.15 * s / n) + 0.003 * np.sin(s * 1.3)
    lp = np.r_[-0.44, -0.82, -1.4, np.full(n - 3, -1.2) - 0.2 * s[3:] / n] \
        + 0.05 * np.sin(s * 0.7)
    d = diagnose(make_run(reward=reward, kl=kl, learning_rate=lr, log_prob_mean=lp))
    kl_check = d.check("kl_drift")
    assert kl_check.fired and "reference" not in kl_check.summary, kl_check.summary
    assert "the first updates, at a learning rate of 0.02 (200x the 1e-4 after)" \
        in kl_check.summary, kl_check.summary
    assert not any("update the reference" in str(r) for r in kl_check.remedies)
    lld = d.check("likelihood_displacement")
    assert lld.fired and "still rising" not in lld.summary, lld.summary
    # The share quoted is the largest fall's, between the levels it is measured on.
    assert "to -1.38 (-0.408 -> -1.43, |log pi| up 250%" in lld.summary, lld.summary


def test_a_plateau_within_its_noise_of_its_best_is_at_its_best():
    """A cosine run at 2x the ceiling (helper-36): the reward climbed 0.33 -> 0.96 and sat
    at 0.89-0.96, batches swinging +-0.05, the held-out score at its best; its last points a
    tenth of the range below the luckiest 5-point median, so not "at its best", and its
    groups turning equal (all-correct) went critical."""
    from grpo_doctor.rules.signals import reward_at_best
    from tests.helpers import make_run

    n = 200
    s = np.arange(1, n + 1)
    swing = 0.05 * np.sin(s * 2.3)
    plateau = make_run(reward=np.minimum(0.33 + 0.6 * s / 90, 0.92) + swing)
    assert reward_at_best(plateau)
    fell = make_run(reward=np.where(s < 150, np.minimum(0.33 + 0.6 * s / 90, 0.92),
                                    0.6) + swing)
    assert not reward_at_best(fell)


def test_a_noisy_reward_climb_the_held_out_score_followed_is_a_real_rise():
    """No clipping at lr 5e-3 (held-out set 2): the reward climbed 0.64 -> 0.96 with its
    batches swinging +-0.15, the held-out score 0.40 -> 0.78, then both crashed (the held-out
    to 0). The climb was read "no real gain" and the fall went unsaid; a held-out score that
    rose with it says the climb was learning."""
    from tests.helpers import make_run

    n = 250
    s = np.arange(1, n + 1)
    swing = 0.15 * np.sin(s * 2.7)
    reward = np.where(s <= 25, 0.62 + 0.2 * s / 25, np.where(s <= 60, 0.3, 0.45)) + swing
    held = np.where(s <= 30, 0.36 + 0.42 * s / 30, np.where(s <= 60, 0.02, 0.22))
    score = np.where(s % 5 == 0, held, np.nan)
    with_held = diagnose(make_run(reward=reward, eval__score=score)).check("reward_overfit")
    assert with_held.fired, with_held.summary
    alone = diagnose(make_run(reward=reward)).check("reward_overfit")
    assert not alone.fired, alone.summary  # the noisy reward alone proves no climb


def test_a_sparse_term_improved_only_when_it_pays_on_more_late_steps_than_chance():
    """A correctness term that paid on 5 of 60 steps (2 of the last 12, none of the first 12:
    one prompt of 2 rollouts a step) read "the task improved" beside a report saying almost no
    answer is judged right (helper-39). A sparse term must leave its floor on 3 more of its
    last points than of its first; a dense one is judged by its mean alone."""
    import numpy as np

    from grpo_doctor.rules.signals import sparse_improving
    from tests.helpers import make_run

    chance = np.zeros(60)
    chance[[35, 36, 44, 52, 57]] = 2.0
    late = np.zeros(60)
    late[[2, 40, 44, 48, 50, 52, 55, 57, 59]] = 1.0
    dense = np.linspace(0.2, 0.6, 60)
    for values, improved in ((chance, False), (late, True), (dense, True)):
        run = make_run(**{"rewards/correctness/mean": values})
        assert sparse_improving(run, "reward_component/correctness") is improved, values


def test_verl_batches_that_all_scored_the_same_are_equal_groups():
    """verl logs no reward std, only the score's mean, max and min: rllm#54's three steps had
    max = min = 0 (every sample scored 0: an empty data_source matched no reward function)
    and read INCONCLUSIVE, advantage_collapse "needs zero_std_fraction or reward_std"."""
    zero = np.zeros(3)
    run = make_run(critic__score__mean=zero, critic__score__max=zero, critic__score__min=zero,
                   actor__grad_norm=np.array([0.004, 0.005, 0.004]),
                   steps=np.array([1, 4, 7]))
    d = diagnose(run)
    equal = d.check("advantage_collapse")
    assert equal.status == "critical" and "every sample scored the same" in equal.summary
    assert d.root_cause.first_action.startswith(
        "check the reward function on a few completions"), d.root_cause.first_action
    assert "exactly 0" in d.root_cause.first_action
    # A batch whose max and min are apart says nothing of its groups: skipped, not passed.
    n = 40
    rng = np.random.default_rng(0)
    mean = 0.3 + 0.005 * np.arange(n) + rng.normal(0, 0.02, n)
    apart = diagnose(make_run(critic__score__mean=mean, critic__score__max=np.ones(n),
                              critic__score__min=np.zeros(n)))
    assert apart.check("advantage_collapse").status == "skipped", \
        apart.check("advantage_collapse").summary
