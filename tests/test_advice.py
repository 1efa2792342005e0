"""The advice under the verdict: the first action answers the root cause, the config is
evidence, a setting outside the recipe with no symptom changes no status, a remedy never sets
a knob to the value it has, and the terminal never hides the roll-back.

The real-run rows are ../shared/real-runs/ADVICE.md (skipped when absent); bench/advice.py
holds the same table and prints the corpus scores."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.advice import ADVICE_ROWS, CORPUS_RECIPE, REAL_HEALTHY, corpus_config
from grpo_doctor import recipe
from grpo_doctor.config import DoctorConfig
from grpo_doctor.engine import diagnose
from grpo_doctor.findings import PlanItem
from grpo_doctor.importers import load_runs
from grpo_doctor.rules import knobs
from grpo_doctor.run_settings import with_given_config
from grpo_doctor.store import Run
from tests.helpers import REAL_RUNS, make_run
from tests.test_real_runs import healthy_status

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
LABELS = json.loads((CORPUS / "labels.json").read_text())


@pytest.mark.parametrize("path,pick,good,wrong", ADVICE_ROWS,
                         ids=[Path(r[0]).name[:40] for r in ADVICE_ROWS])
def test_the_first_action_is_what_an_expert_does_first(path, pick, good, wrong):
    if not (REAL_RUNS / path).exists():
        pytest.skip("shared real runs not present")
    runs = load_runs(REAL_RUNS / path)
    run = next(r for r in runs if r.name == pick) if pick else runs[0]
    d = diagnose(run)
    assert d.root_cause is not None and d.status != "healthy"
    first = d.root_cause.first_action.lower()
    assert any(w.lower() in first for w in good), first
    assert not any(w.lower() in first for w in wrong), first
    assert d.plan[0].action == d.root_cause.first_action and d.plan[0].treats == "root_cause"


@pytest.mark.parametrize("path", REAL_HEALTHY)
def test_healthy_real_runs_stay_healthy_with_the_recipe_read(path):
    if not (REAL_RUNS / path).exists():
        pytest.skip("shared real runs not present")
    for run in load_runs(REAL_RUNS / path):
        assert diagnose(run).status == healthy_status(run.name)


@pytest.mark.parametrize("label", [e for e in LABELS if e["healthy"]], ids=lambda e: e["name"])
def test_healthy_corpus_runs_stay_healthy_with_their_config_given(label):
    run = load_runs(CORPUS / label["run"])[0]
    plain = diagnose(run).status
    given = diagnose(run, DoctorConfig(run_config=corpus_config(label))).status
    assert given == plain


def test_a_setting_far_outside_with_no_symptom_is_a_note_not_a_status():
    import numpy as np

    n = 120
    reward = np.linspace(0.2, 0.8, n) + 0.01 * np.sin(np.arange(n))
    run = make_run(train__reward=reward, train__kl=np.linspace(0.0, 0.05, n))
    plain = diagnose(run)
    run.config = {"learning_rate": 0.05}  # 10,000x the recipe's ceiling
    d = diagnose(run)
    assert d.status == plain.status == "healthy"
    assert any("far outside the recipe" in n and "learning_rate 0.05" in n for n in d.notes)


def test_the_config_names_the_cause_of_an_entropy_blowup():
    label = next(e for e in LABELS if e["name"] == "entropy_bonus_0.5")
    run = load_runs(CORPUS / label["run"])[0]
    d = diagnose(run, DoctorConfig(recipe=CORPUS_RECIPE, run_config=corpus_config(label)))
    assert d.root_cause.knob["name"] == "entropy_coef"
    assert "entropy_coef 0.5 -> 0.005" in d.root_cause.first_action
    assert "50x" in d.root_cause.first_action


def test_fp16_weights_are_named_when_the_run_breaks():
    label = next(e for e in LABELS if e["name"] == "fp16_pure")
    run = load_runs(CORPUS / label["run"])[0]
    d = diagnose(run, DoctorConfig(recipe=CORPUS_RECIPE, run_config=corpus_config(label)))
    assert any("bfloat16" in p.action for p in d.plan[:3])


@given(st.floats(0.001, 0.01))
def test_a_remedy_never_sets_a_knob_to_the_value_it_has(value):
    run = make_run(train__reward=[0.1, 0.2, 0.3])
    run.config = {"entropy_coef": value, "max_grad_norm": min(value * 100, 1.0)}
    assert knobs.set_to(run, knobs.ENTROPY_COEF, "0.001-0.01") is None
    assert knobs.clip_gradients(run) is None


@pytest.mark.parametrize("value,verdict,far", [
    (1e-6, recipe.OK, False), (5e-6, recipe.HIGH, False), (1e-4, recipe.HIGH, False),
    (3e-3, recipe.HIGH, True), (1e-7, recipe.OK, False), (3e-7, recipe.OK, False),
    (5e-8, recipe.LOW, False), (1e-8, recipe.LOW, True), (0, recipe.LOW, True)])
def test_learning_rates_against_the_recipe(value, verdict, far):
    reading = recipe.read_config({"learning_rate": value}).get("learning_rate")
    assert (reading.verdict, reading.far) == (verdict, far)


def test_a_lora_adapter_gets_ten_times_the_learning_rate():
    full = recipe.read_config({"learning_rate": 2e-5}).get("learning_rate")
    lora = recipe.read_config({"learning_rate": 2e-5, "use_peft": True,
                               "lora_r": 16}).get("learning_rate")
    assert full.verdict == recipe.HIGH and lora.verdict == recipe.OK


def test_an_lr_floor_scales_with_lora_and_with_a_ceiling_the_user_moves():
    """The floor is a tenth of the start: x10 for a LoRA adapter; a user's ceiling of 5e-4
    (a tiny model) takes it to 1e-5, unless the user sets it; the fix is the start."""
    lora = recipe.read_config({"learning_rate": 5e-7, "use_peft": True}).get("learning_rate")
    assert lora.verdict == recipe.LOW and not lora.far
    assert lora.fix() == "learning_rate 5e-7 -> 1e-5"
    tiny = recipe.with_overrides({"learning_rate": {"high": 5e-4}})
    low = recipe.read_config({"learning_rate": 1e-7}, tiny).get("learning_rate")
    assert (low.verdict, low.far) == (recipe.LOW, True)
    assert low.sentence() == "learning_rate 1e-7 is 1000x below the recipe's start of 1e-4"
    assert low.fix() == "learning_rate 1e-7 -> 1e-4"
    own = recipe.with_overrides({"learning_rate": {"high": 5e-4, "low": 1e-8}})
    assert recipe.read_config({"learning_rate": 1e-7}, own).get("learning_rate").verdict \
        == recipe.OK
    beta = recipe.with_overrides({"beta": {"high": 0.5}})  # a range that is no scale stays
    assert next(s for s in beta if s.id == "beta").low == 0.01


def test_a_warmup_still_climbing_at_the_logs_end_is_no_lr_too_low():
    """The first 20 steps of a warm-up to 1e-6 logged at 2e-8: its peak is not in the log."""
    steps = np.arange(1, 21)
    climbing = make_run(reward=np.full(20, 0.5), learning_rate=1e-6 * steps / 1000)
    assert recipe.read_run(climbing).get("learning_rate").verdict == recipe.UNKNOWN
    flat = make_run(reward=np.full(20, 0.5), learning_rate=np.full(20, 2e-8))
    assert recipe.read_run(flat).get("learning_rate").verdict == recipe.LOW


def test_recipe_overrides_are_checked():
    assert recipe.with_overrides({"learning_rate": {"high": 1e-4}})[0].high == 1e-4
    for bad in ({"lr": {"high": 1}}, {"learning_rate": {"top": 1}},
                {"learning_rate": {"far": 0.5}}):
        with pytest.raises(ValueError):
            recipe.with_overrides(bad)


def test_an_overridden_range_is_the_only_range_the_advice_names():
    """With the lr ceiling set to 5e-4 (a small model), "4x the recipe's 5e-4 ceiling" stood
    beside "the recipe starts at 1e-6 and stays below 5e-6"."""
    settings = recipe.with_overrides({"learning_rate": {"high": 5e-4}})
    reading = recipe.read_config({"learning_rate": 2e-3}, settings).get("learning_rate")
    said = f"{reading.fix()} ({reading.sentence()}; {reading.why})"
    assert "5e-4" in said and "5e-6" not in said and "1e-6" not in said, said
    assert reading.recipe_text == "1e-5-5e-4 (your recipe)"  # the floor moved with it
    untouched = recipe.read_config({"learning_rate": 2e-5}).get("learning_rate")
    assert untouched.recipe_text == "1e-6 (never start at 5e-6 or more)"


def test_the_terminal_never_hides_the_rollback():
    from grpo_doctor.reporters.terminal import MAX_PLAN, _first_items

    plan = tuple(PlanItem(f"item {k}", ("kl_drift",)) for k in range(8))
    plan = (*plan[:7], PlanItem("roll back to step 10", ("kl_drift",), rollback_step=10))
    shown = _first_items(plan)
    assert len(shown) == MAX_PLAN == 5 and shown[-1].rollback_step == 10
    assert shown[:4] == list(plan[:4])


def test_entropy_below_a_tenth_of_its_start_is_critical_when_its_trend_is_only_p_0_02():
    """The README's table: entropy < 10% of its start is critical. A noisy fall to 9% of
    its start over 49 logs (Mann-Kendall p = 0.019, not under alpha 0.01) read "no collapse"."""
    import numpy as np

    from grpo_doctor.trends import mann_kendall

    n = 49
    t = np.arange(n)
    rng = np.random.default_rng(7)
    ent = np.clip(0.436 * np.exp(-t / 8) + 0.0376 * (1 - np.exp(-t / 8))
                  + rng.normal(0, 0.12, n) * np.exp(-t / 20), 0.03, None)
    ent[-10:] = 0.0376 + rng.normal(0, 0.003, 10)
    steps = np.arange(1, n + 1) * 10
    assert 0.01 < mann_kendall(steps, ent).p < 0.05
    run = make_run(steps=steps, train__entropy=ent,
                   train__reward=0.3 + 0.01 * rng.standard_normal(n))
    assert diagnose(run).check("entropy_collapse").status.value == "critical"


def test_an_absurd_grad_norm_is_critical_on_a_log_too_short_for_a_level():
    """Grad norm 421,404 at the first logged step, 0 on 29 of 35 logs: it was skipped as
    'needs at least 8 logged non-zero grad-norm values'."""
    import numpy as np

    g = np.zeros(35)
    g[0], g[1:6] = 421_404.0, [0.5, 0.4, 0.6, 0.5, 0.45]
    run = make_run(steps=np.arange(1, 36), train__grad_norm=g,
                   train__reward=np.linspace(0.1, 0.2, 35))
    check = diagnose(run).check("grad_explosion")
    assert check.status.value == "critical" and check.onset_step == 1
    assert "421,404" in check.summary


def test_a_stuck_reward_says_which_term_it_is():
    """Qwen3-VL: the reward was exactly 2 on 72% of steps, the format term's maximum with
    correctness 0: the first action says so, not only 'exactly 2'."""
    path = "notebook-tables/Qwen3_VL_(8B)-Vision-GRPO__2025-10-14_4480b9c4_4d11ec.csv"
    if not (REAL_RUNS / path).exists():
        pytest.skip("shared real runs not present")
    first = diagnose(load_runs(REAL_RUNS / path)[0]).root_cause.first_action
    assert "formatting_reward_func 2, correctness_reward_func 0 on those steps" in first
    # and names the task's own term first: it scored on 5 of 60 logged steps
    assert first.startswith("check the task's reward function, correctness_reward_func, on a "
                            "few completions") and "only 5 of 60 logged steps" in first


def test_equal_groups_with_a_held_out_score_of_zero_are_prompts_out_of_reach():
    """A task too hard for the policy with a saturated format term: the reward sits at the
    format's 0.2, the held-out score is 0 on every evaluation, nearly every group is equal
    (all wrong). The prompts are the fix, not dynamic sampling (it would drop the batch)."""
    import numpy as np

    n = 120
    rng = np.random.default_rng(3)
    zero_std = np.clip(0.55 + 0.4 * np.arange(n) / n + rng.normal(0, 0.03, n), 0, 1)
    run = make_run(reward=np.clip(0.2 - rng.exponential(0.01, n), 0, 0.2),
                   frac_reward_zero_std=zero_std, eval_accuracy=np.zeros(n))
    d = diagnose(run)
    assert d.check("advantage_collapse").status.value == "critical"
    first = d.root_cause.first_action
    assert first.startswith("the prompts are out of reach (the held-out score is 0 of 1")
    assert not first.startswith("dynamic sampling")
    # with the held-out score climbing, the same equal groups are not out of reach
    solving = make_run(reward=np.clip(0.2 - rng.exponential(0.01, n), 0, 0.2),
                       frac_reward_zero_std=zero_std, eval_accuracy=np.linspace(0.1, 0.6, n))
    said = diagnose(solving).root_cause
    assert said is None or "out of reach" not in said.first_action


def test_completions_sent_to_the_cap_by_one_update_are_not_a_budget_problem():
    """verl GSM8K: 61 tokens at step 1, every completion at the 512 cap from step 2. Overlong
    shaping or a larger budget first would treat a broken generation as a length preference."""
    run = make_run(response_length_mean=[61.2, 512.0, 508.9, 511.0],
                   response_length_max=[512.0] * 4,
                   response_clip_ratio=[0.017, 1.0, 0.99, 1.0])
    d = diagnose(run)
    first = d.root_cause.first_action
    assert first.startswith("look at the completions of step 2: they went from 61.2 tokens to "
                            "the cap (512) in one logged step")
    assert not first.startswith("overlong shaping")


def test_a_setting_clearly_outside_behind_warnings_it_causes_is_their_cause():
    # lenient_verifier_kl: lr 1e-3, 2x the tiny model's ceiling, with KL drifting and entropy
    # blowing up (both warnings, both linked by the chapter to a large lr): the lr comes first.
    label = next(e for e in LABELS if e["name"] == "lenient_verifier_kl")
    run = load_runs(CORPUS / label["run"])[0]
    d = diagnose(run, DoctorConfig(recipe=CORPUS_RECIPE, run_config=corpus_config(label)))
    assert {"kl_drift", "entropy_blowup"} <= {c.mode for c in d.findings}
    assert d.root_cause.knob["name"] == "learning_rate"
    assert d.root_cause.first_action.startswith("learning_rate 0.001 -> ")
    # With one of the two symptoms it explains, the same setting is still the cause: the
    # chapter links it to that symptom.
    only_kl = DoctorConfig(recipe=CORPUS_RECIPE, run_config=corpus_config(label),
                           select=("kl_drift",))
    one = diagnose(run, only_kl)
    assert one.root_cause.knob["name"] == "learning_rate"
    # With no symptom it links to (only the length check run), it is not in the advice.
    none = diagnose(run, DoctorConfig(recipe=CORPUS_RECIPE, run_config=corpus_config(label),
                                      select=("length_hacking",)))
    assert none.root_cause is None or none.root_cause.knob is None


def _sharpening_with_pairs(n: int = 200, seed: int = 14):
    """A run that learns (reward 0.6 -> 1.1, held-out 0.6 -> 0.9) while its entropy falls
    steadily and most groups score alike, as groups of 2 do at 90% accuracy: P(equal) =
    0.9^2 + 0.1^2 (the holdout run h_group_2, corpus/runs.py, made this shape)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    return make_run(reward=0.6 + 0.5 * (1 - np.exp(-10 * t)) + rng.normal(0, 0.04, n),
                    entropy=0.6 * np.exp(-1.6 * t) + rng.normal(0, 0.01, n),
                    frac_reward_zero_std=np.clip(0.4 + 0.5 * t + rng.normal(0, 0.05, n), 0, 1),
                    eval_accuracy=0.6 + 0.3 * (1 - np.exp(-10 * t)))


def test_a_group_far_below_the_recipe_is_fixed_before_an_entropy_fall():
    """The config is evidence: no setting explains the entropy fall (lr, temperature, beta all
    in the recipe), but a group of 2 is far below the recipe's 8 and the chapter's first cause
    of the equal-reward groups beside it: that is the first action, not 'lr x0.5'."""
    run = _sharpening_with_pairs()
    recipe_run = {"learning_rate": 1e-6, "beta": 0.04, "temperature": 1.0}
    d = diagnose(run, DoctorConfig(run_config={**recipe_run, "num_generations": 2}))
    assert {c.mode for c in d.findings if c.status.value == "critical"} >= {
        "entropy_collapse", "advantage_collapse"}
    assert d.root_cause.mode == "advantage_collapse"
    assert d.root_cause.first_action.startswith("num_generations 2 -> 16")
    assert d.root_cause.knob["name"] == "num_generations"
    # A group in the recipe explains nothing: the entropy fall's own remedy stays first.
    ok = diagnose(run, DoctorConfig(run_config={**recipe_run, "num_generations": 16}))
    assert ok.root_cause.mode == "entropy_collapse"
    assert "num_generations" not in ok.root_cause.first_action
    # Merely outside (6 against 8), not far: not enough to move the root.
    near = diagnose(run, DoctorConfig(run_config={**recipe_run, "num_generations": 6}))
    assert near.root_cause.mode == "entropy_collapse"


def _squeezed_by_the_budget(start_cut: float, n: int = 150, seed: int = 13):
    """Answers that never fit a 4-token budget: most completions cut at the cap at first, the
    policy learns to stop early with a well-formed but short answer, the format term rises and
    the task's term never fires (the holdout run h_max_new_4, corpus/runs.py)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    fmt_term = np.clip(0.06 + 0.92 * (1 - np.exp(-t / 12)) + rng.normal(0, 0.02, n), 0, 1)
    cut = np.clip(start_cut * np.exp(-t / 10) + rng.normal(0, 0.01, n), 0, 1)
    return make_run(reward=0.2 * fmt_term, rewards__accuracy_reward__mean=np.zeros(n),
                    rewards__format_reward__mean=fmt_term,
                    completions__clipped_ratio=cut,
                    completions__mean_length=3.9 - 0.2 * (1 - cut),
                    completions__max_length=np.full(n, 4.0))


def test_answers_cut_at_the_cap_while_the_task_never_scored_is_the_budget_first():
    """93% of completions cut at the cap over the first logs, accuracy_reward 0 on every step:
    the budget is the setup problem (raise it), though the truncation later fell to 2%
    because the policy learned to stop early."""
    cfg = DoctorConfig(run_config={"max_completion_length": 4})
    d = diagnose(_squeezed_by_the_budget(0.95), cfg)
    first = d.root_cause.first_action
    assert first.startswith("max_completion_length 4 -> 8: ")
    assert "accuracy_reward never fired" in first
    assert d.root_cause.setup
    # Without a config the cap comes from the logged maximum length.
    bare = diagnose(_squeezed_by_the_budget(0.95)).root_cause.first_action
    assert bare.startswith("raise max_completion_length (now about 4 tokens) 2x")
    # Few cut at the start: the budget is no suspect, the never-firing term is.
    fine = diagnose(_squeezed_by_the_budget(0.2), cfg).root_cause.first_action
    assert "max_completion_length" not in fine
    assert "accuracy_reward" in fine


def test_answers_cut_at_the_cap_while_the_held_out_score_stays_at_0_is_the_budget_first():
    """No reward terms logged (verl's reward only), a 3-token budget: every completion cut for
    45 steps, then the policy learns a short well-formed wrong answer (the format's 0.2) and
    KL drifts; the held-out score is 0 on every evaluation (the holdout run h5_max_new_3)."""
    n = 150
    rng = np.random.default_rng(64)
    t = np.arange(n)
    cut = np.clip(np.where(t < 45, 1.0, np.exp(-(t - 45) / 8)) + rng.normal(0, 0.01, n), 0, 1)
    reward = np.where(t < 45, 0.0, 0.2 * (1 - cut)) + np.abs(rng.normal(0, 0.002, n))
    held = np.full(n, np.nan)
    held[::5] = 0.0
    run = make_run(reward=reward, response_clip_ratio=cut,
                   response_length_mean=3 - 0.05 * (1 - cut),
                   response_length_max=np.full(n, 3.0), eval_accuracy=held,
                   kl=np.where(t < 45, 0.001, 1.7) + rng.normal(0, 0.01, n),
                   frac_reward_zero_std=np.where(t < 45, 1.0, 0.7))
    d = diagnose(run, DoctorConfig(run_config={"max_completion_length": 3}))
    first = d.root_cause.first_action
    assert first.startswith("max_completion_length 3 -> 12: "), first
    assert "the held-out score stayed at 0" in first
    assert d.root_cause.step == 1


def _blows_up_after(break_at: int, learned: bool, n: int = 200, seed: int = 5):
    """Reward rising 0.2 -> 0.9 until ``break_at`` (flat at 0.2 unless ``learned``), then the
    entropy blowing up x30 and the reward falling to 0."""
    rng = np.random.default_rng(seed)
    s = np.arange(n)
    rise = 0.2 + (0.7 * np.minimum(s / break_at, 1.0) if learned else 0.0)
    broken = s >= break_at
    reward = np.where(broken, 0.02, rise) + rng.normal(0, 0.02, n)
    entropy = np.where(broken, 6.0, 0.2) + rng.normal(0, 0.01, n)
    return make_run(reward=reward, entropy=entropy)


def test_a_run_that_learned_at_its_learning_rate_halves_it_after_the_roll_back():
    """An lr 20x the recipe's ceiling that trained well for 150 steps before an entropy
    blow-up: roll back and halve it (the run's own evidence), with the recipe's value said as
    the next step; the same lr breaking a run that had learned nothing drops to the recipe's."""
    config = DoctorConfig(run_config={"learning_rate": 1e-4})
    late = diagnose(_blows_up_after(150, learned=True), config).root_cause
    assert late.mode == "entropy_blowup" and late.knob["name"] == "learning_rate"
    assert late.first_action.startswith("roll back to ")
    assert "learning_rate 1e-4 -> 5e-5 (the run learned at 1e-4 until step 15" in \
        late.first_action
    assert "if it breaks again, 2.5e-6" in late.first_action
    # A schedule that had decayed by the break: its peak is the knob, said as a peak (it
    # read "learned at 1e-4 until step 150" with 2.7e-5 in force there; helper-42).
    decayed = _blows_up_after(150, learned=True)
    decayed.frame["learning_rate"] = 1e-4 * (0.2 + 0.8 * np.cos(
        np.linspace(0, np.pi / 2, len(decayed.frame))))
    decayed = diagnose(decayed, config).root_cause
    assert "(the run learned at a peak of 1e-4, decayed to " in decayed.first_action, \
        decayed.first_action
    assert "learning_rate 1e-4 -> 5e-5" in decayed.first_action
    flat = diagnose(_blows_up_after(150, learned=False), config).root_cause
    assert flat.mode == "entropy_blowup" and flat.knob["name"] == "learning_rate"
    assert flat.first_action.startswith("roll back to ")
    assert "learning_rate 1e-4 -> 2.5e-6" in flat.first_action
    assert "learned at" not in flat.first_action


def _broken_at_start(lr: np.ndarray, n: int = 200, seed: int = 9):
    """A run whose first update blew up (grad norm 1,200 at step 1, the reward 0.6 -> 0, the
    entropy up x3), logging ``lr``."""
    rng = np.random.default_rng(seed)
    grad = np.abs(rng.normal(0.5, 0.1, n))
    grad[0] = 1200.0
    reward = np.r_[0.6, np.linspace(0.0, 0.15, n - 1)] + rng.normal(0, 0.01, n)
    entropy = np.r_[0.6, np.full(n - 1, 1.9)] + rng.normal(0, 0.01, n)
    return make_run(reward=reward, entropy=entropy, grad_norm=grad, learning_rate=lr)


def test_a_burst_of_learning_rate_at_the_start_is_the_cause_of_the_first_update():
    """lr 3e-2 for 3 steps, then the 1e-4 the config says: the config's lr is not what broke
    the run, the burst is; roll back to before it, with the later lr from the first update."""
    n = 200
    lr = np.r_[np.full(3, 3e-2), np.full(n - 3, 1e-4)]
    d = diagnose(_broken_at_start(lr), DoctorConfig(run_config={"learning_rate": 1e-4}))
    rc = d.root_cause
    assert rc.first_action.startswith("restart from the initial model")
    assert "learning_rate at no more than 1e-4 from the first update (the learning rate " \
        "was 0.03 at steps 1-3, 300x the 1e-4" in rc.first_action
    assert "1e-4 -> 5e-5" not in rc.first_action
    assert rc.summary.startswith("a learning-rate burst")


def test_a_burst_the_run_came_through_to_a_solved_task_asks_for_no_restart():
    """lr 5e-3 for 20 steps, then 1e-4 (helper-36): the held-out score fell 0.52 -> 0.22
    and climbed back to 0.92; "restart from the initial model" gains nothing (its twin without
    the burst ended where it did). The schedule is for the next run."""
    n = 200
    s = np.arange(1, n + 1)
    lr = np.where(s <= 20, 5e-3, 1e-4)
    grad = np.where(s == 1, 1200.0, 0.5 + 0.05 * np.sin(s))
    held = np.where(s <= 20, 0.52 - 0.3 * s / 20, np.minimum(0.22 + 0.7 * (s - 20) / 80, 0.92))
    acc = np.clip(held + 0.05, 0, 1)
    d = diagnose(make_run(reward=acc, rewards__accuracy_reward__mean=acc, grad_norm=grad,
                          learning_rate=lr, entropy=0.02 + 0.41 * np.exp(-s / 40),
                          eval__score=np.where(s % 5 == 0, held, np.nan)),
                 DoctorConfig(run_config={"learning_rate": 1e-4}))
    rc = d.root_cause
    assert rc.summary.startswith("a learning-rate burst"), rc.summary
    # The burst came first: the note does not run time backwards ("held until step 200; it
    # then rose to 0.005", helper-36).
    assert "learning_rate 1e-4 given, as the log's own learning_rate held from step 21; it " \
        "was up to 0.005 before (steps 1-20): the given value is used" in d.notes, d.notes
    assert rc.first_action.startswith("no roll-back: the run came through it and solved its "
                                      "task; for the next run, learning_rate at no more than "
                                      "1e-4 from the first update"), rc.first_action


@pytest.mark.parametrize("shape", ["cosine", "stepped"])
def test_a_schedule_that_decays_is_not_a_burst(shape):
    """A cosine decay from 1e-4 to 0, or a stepped schedule (1e-4 for 100 steps, then 1e-5):
    many times lower by the end, but no short burst ending in one drop."""
    n = 200
    s = np.arange(n)
    lr = (1e-4 * 0.5 * (1 + np.cos(np.pi * s / n)) if shape == "cosine"
          else np.where(s < 100, 1e-4, 1e-5))
    d = diagnose(_broken_at_start(lr), DoctorConfig(run_config={"learning_rate": 1e-4}))
    assert "burst" not in d.root_cause.summary
    assert "from the first update" not in d.root_cause.first_action


def _breaks_after(lr: np.ndarray, at: int, n: int = 500, seed: int = 11):
    """A run that learned (reward 0.2 -> 0.7 by step 150) and held, until at step ``at`` KL
    shot up, the entropy surged and the reward fell, logging ``lr``."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    broke = np.clip((t - at) / 20, 0, 1)
    reward = 0.2 + 0.5 * (1 - np.exp(-t / 50)) - 0.5 * broke + rng.normal(0, 0.02, n)
    entropy = 0.6 + 1.5 * broke + rng.normal(0, 0.01, n)
    kl = 0.05 + 3.0 * broke + np.abs(rng.normal(0, 0.005, n))
    return make_run(reward=reward, entropy=entropy, kl=kl, learning_rate=lr)


def test_a_jump_of_the_logged_learning_rate_is_what_broke_the_run_after_it():
    """The config says 1e-4 and the log held it for 300 steps, then jumped to 3e-3 (a
    scheduler restarted): roll back to before the jump with the lr it held, not "lower the
    lr from 3e-3" (the config never said 3e-3) nor a roll-back to what broke 7 steps later."""
    n, at = 500, 300
    lr = np.where(np.arange(n) < at, 1e-4, 3e-3)
    d = diagnose(_breaks_after(lr, at + 7), DoctorConfig(run_config={"learning_rate": 1e-4}))
    rc = d.root_cause
    assert rc.summary.startswith("a learning-rate jump: the logged learning rate jumped 1e-4 "
                                 "-> 0.003 at step 301, 30x"), rc.summary
    assert "before step 301" in rc.first_action or "step 300 or before" in rc.first_action
    assert "learning_rate back at 1e-4" in rc.first_action
    assert d.plan[0].rollback_step == 301


def test_a_jump_logged_sparsely_rolls_back_to_the_last_step_logged_at_the_old_lr():
    """The lr logged every 10 steps (1e-6 at 290, 1e-5 at 300): the steps between ran at an
    unknown lr, so the roll-back is to step 290, not "before step 300 (the last logged step
    before it is 299)"."""
    n, at = 500, 300
    t = np.arange(1, n + 1)
    lr = np.where(t % 10 == 0, np.where(t < at, 1e-6, 1e-5), np.nan)
    d = diagnose(_breaks_after(lr, at + 5))
    rc = d.root_cause
    assert "between steps 290 and 300" in rc.summary, rc.summary
    assert "before step 291" in rc.first_action or "step 290 or before" in rc.first_action
    assert d.plan[0].rollback_step == 291


def test_warm_restarts_and_a_break_long_after_a_jump_are_not_the_jump():
    """A cosine with warm restarts jumps at each restart by design; a run that broke 250 steps
    after a jump, healthy at the new lr all along, broke for a reason of its own."""
    n = 600
    t = np.arange(n)
    restarts = 1e-6 * (0.5 * (1 + np.cos(np.pi * (t % 100) / 100))) + 1e-7
    late = np.where(t < 100, 1e-6, 1e-5)
    for lr, broke in ((restarts, 307), (late, 400)):
        d = diagnose(_breaks_after(lr, broke, n=n))
        assert "jump" not in d.root_cause.summary, d.root_cause.summary


def test_a_finding_dated_before_the_jump_but_raised_after_it_is_the_jump():
    """Grad-norm spikes before the jump date the finding early, but it was first raised after
    the jump (the run held until then): the jump is still the cause."""
    n, at = 500, 300
    t = np.arange(n)
    rng = np.random.default_rng(12)
    grad = np.abs(rng.normal(0.5, 0.05, n))
    grad[[120, 200]] = 2.6  # two spikes a live monitor lets pass
    grad[at + 5:] *= 40
    run = _breaks_after(np.where(t < at, 1e-4, 3e-3), at + 5, n=n)
    run = make_run(reward=run.frame["reward_mean"].to_numpy(),
                   entropy=run.frame["entropy"].to_numpy(), kl=run.frame["kl"].to_numpy(),
                   grad_norm=grad, learning_rate=np.where(t < at, 1e-4, 3e-3))
    d = diagnose(run)
    assert d.root_cause.summary.startswith("a learning-rate jump"), d.root_cause.summary


def test_what_a_run_at_its_best_raised_before_a_jump_does_not_hide_the_jump():
    """Groups all equal from step 140 (a solved task, its reward at its best) were raised
    before the lr jumped 30x at step 301 and the run broke: the jump is still what broke it
    (a 1,500-step run had read "restarting from the checkpoint nearest step 699")."""
    n, at = 500, 300
    t = np.arange(n)
    lr = np.where(t < at, 1e-4, 3e-3)
    base = _breaks_after(lr, at + 5)
    equal = np.clip(0.2 + 0.75 * np.clip((t - 100) / 50, 0, 1)
                    + np.random.default_rng(3).normal(0, 0.02, n), 0, 1)
    run = make_run(reward=base.frame["reward_mean"].to_numpy(),
                   entropy=base.frame["entropy"].to_numpy(), kl=base.frame["kl"].to_numpy(),
                   learning_rate=lr, frac_reward_zero_std=equal)
    d = diagnose(run)
    assert d.check("advantage_collapse").first_alert_step < at
    assert d.root_cause.summary.startswith("a learning-rate jump"), d.root_cause.summary


def test_a_run_that_broke_before_its_lr_rose_is_no_overshoot():
    """The reward fell at step 200 at 1e-6; the lr rose to 1e-5 at step 300: "fell as the lr
    rose" reverses cause and effect (and would restore the lr the run broke at)."""
    n = 500
    lr = np.where(np.arange(n) < 300, 1e-6, 1e-5)
    d = diagnose(_breaks_after(lr, 200))
    assert "fell as the lr rose" not in d.root_cause.summary, d.root_cause.summary
    assert "its value when the reward peaked" not in d.root_cause.first_action


def test_an_lr_stepped_down_before_the_break_is_not_lowered_to_above_it():
    """1e-5 for 300 steps, then 1e-6, and the run broke at step 305: "learning_rate 1e-5 ->
    2.5e-6" would raise the lr the run broke at."""
    n = 500
    lr = np.where(np.arange(n) < 300, 1e-5, 1e-6)
    d = diagnose(_breaks_after(lr, 305))
    assert "2.5e-6" not in d.root_cause.first_action, d.root_cause.first_action
    assert (d.root_cause.knob or {}).get("name") != "learning_rate"


@pytest.mark.parametrize("lr_before", [2e-6, 1e-5])
def test_a_warning_at_the_head_of_a_break_rolls_back_with_the_lr_in_force_halved(lr_before):
    """KL drifting (a warning) at step 305, the reward crashing and the entropy x5 right
    after (critical): "KL coefficient (beta) x2" first trained on from the broken policy. Go
    back to before the break, with half the lr in force there (1e-6 after a step down from
    1e-5, never "1e-5 -> 5e-6", which would raise it)."""
    n = 500
    now = 1e-6 if lr_before > 2e-6 else lr_before  # 1e-5 steps down to 1e-6 at step 300
    lr = np.where(np.arange(n) < 300, lr_before, now)
    d = diagnose(_breaks_after(lr, 305))
    rc = d.root_cause
    assert rc.mode == "kl_drift" and d.check("kl_drift").status.value == "warning"
    assert rc.first_action.startswith("roll back to a checkpoint from "), rc.first_action
    halved = {2e-6: "2e-6 -> 1e-6", 1e-6: "1e-6 -> 5e-7"}[now]
    assert f"then learning_rate {halved} (smaller updates" in rc.first_action, rc.first_action
    assert d.plan[0].rollback_step == 305


def test_a_setting_behind_a_warning_that_heads_a_break_comes_with_a_roll_back():
    """lr 1e-5 (2x the ceiling), KL drifting at step 305 (a warning) and the run breaking
    right after (the reward crashing, the entropy x5: critical): "learning_rate 1e-5 ->
    2.5e-6" alone trained on from the broken policy. Roll back to before the break, with the
    smaller lr."""
    d = diagnose(_breaks_after(np.full(500, 1e-5), 305))
    rc = d.root_cause
    assert rc.mode == "kl_drift" and d.check("kl_drift").status.value == "warning"
    assert rc.first_action.startswith("roll back to a checkpoint from before step 305"), \
        rc.first_action
    assert "with learning_rate 1e-5 -> " in rc.first_action, rc.first_action


def test_a_jump_nothing_broke_after_is_a_note():
    """The lr jumped 10x at step 300 and the run went on learning: no finding, but a step up
    no config shows is said (helper-30's trial: nothing said it)."""
    n = 500
    t = np.arange(n)
    rng = np.random.default_rng(13)
    run = make_run(reward=0.2 + 0.5 * (1 - np.exp(-t / 50)) + rng.normal(0, 0.02, n),
                   entropy=0.6 + rng.normal(0, 0.01, n),
                   learning_rate=np.where(t < 300, 1e-6, 1e-5))
    d = diagnose(run)
    assert any(note.startswith("the logged learning rate jumped 1e-6 -> 1e-5 at step 301, "
                               "10x") for note in d.notes), d.notes
    said = diagnose(_breaks_after(np.where(t < 300, 1e-6, 1e-5), 305))
    assert not any("was it meant" in note for note in said.notes)  # the advice names it


@pytest.mark.parametrize("shape", ["warmup", "cosine", "steady"])
def test_a_warm_up_or_a_decay_is_no_jump(shape):
    """A linear warm-up to 1e-3 over 100 steps rises 100x from its first step, a cosine falls;
    neither held a level and then stepped up from it."""
    n = 500
    t = np.arange(n)
    lr = {"warmup": 1e-3 * np.minimum(1, (t + 1) / 100),
          "cosine": 1e-4 * 0.5 * (1 + np.cos(np.pi * t / n)),
          "steady": np.full(n, 1e-4)}[shape]
    d = diagnose(_breaks_after(lr, 307), DoctorConfig(run_config={"learning_rate": 1e-4}))
    assert "jump" not in d.root_cause.summary


def test_a_setting_behind_another_critical_finding_comes_right_after_the_first_action():
    """Temperature 0.5 explains the entropy fall (the first action); groups of 4, below the
    recipe's 8, are the chapter's first cause of the equal-reward groups beside it: that fix
    comes next, not after the generic remedies of the entropy fall."""
    run = _sharpening_with_pairs()
    cfg = {"learning_rate": 1e-6, "beta": 0.04, "temperature": 0.5, "num_generations": 4}
    d = diagnose(run, DoctorConfig(run_config=cfg))
    assert d.root_cause.knob["name"] == "temperature"
    second = d.plan[1]
    assert second.action.startswith("also outside the recipe: num_generations 4 -> ")
    assert second.modes == ("advantage_collapse",)
    assert sum("num_generations" in p.action or "group size" in p.action for p in d.plan) == 1
    # In the recipe, nothing is added.
    ok = diagnose(run, DoctorConfig(run_config={**cfg, "num_generations": 16}))
    assert not any("num_generations" in p.action for p in ok.plan)


def _stalled_with_one_kl_spike(n: int = 200, seed: int = 21):
    """A 0-1 reward on 8 samples that rose to ~0.7 over 20 steps and slid back to ~0.45,
    with one KL spike (x200 at step 71, back at 72): the spike explains nothing of the
    stall."""
    rng = np.random.default_rng(seed)
    s = np.arange(n)
    level = np.where(s < 20, 0.3 + 0.02 * s, 0.7 - 0.25 * (s - 20) / (n - 20))
    reward = rng.binomial(8, np.clip(level, 0, 1)) / 8
    kl = np.abs(rng.normal(0.09, 0.02, n))
    kl[70] = 17.8
    return make_run(reward=reward, kl=kl)


def test_a_stall_is_not_blamed_on_a_spike_the_run_came_back_from():
    """The spike is an incident of its own (a warning), but the root cause of the run is the
    stall beside it; with a learning rate above the recipe, the stall's "is the lr too low?"
    is not asked."""
    d = diagnose(_stalled_with_one_kl_spike(),
                 DoctorConfig(run_config={"learning_rate": 1e-4, "use_peft": True}))
    fired = {c.mode: c for c in d.checks if c.fired}
    assert set(fired) == {"kl_drift", "no_progress"}
    assert d.root_cause.mode == "no_progress"
    assert not any("too low" in p.action for p in d.plan)
    assert any("step 71" in p.action for p in d.plan)  # the spike is still looked at
    # With the lr in the recipe, the question stays in the plan.
    ok = diagnose(_stalled_with_one_kl_spike(),
                  DoctorConfig(run_config={"learning_rate": 1e-5, "use_peft": True}))
    assert ok.root_cause.mode == "no_progress"
    assert any("too low" in p.action for p in ok.plan)


def _ratios_out_from_the_start(learns: bool, n: int = 200, seed: int = 3):
    """PPO ratios below 0.3 on ~70% of steps from the first one, the reward rising 0.2 ->
    0.9 (``learns``) or flat at 0.2."""
    rng = np.random.default_rng(seed)
    s = np.arange(n)
    reward = 0.2 + (0.7 * (1 - np.exp(-s / 50)) if learns else 0.0) + rng.normal(0, 0.03, n)
    ratio_min = np.where(rng.random(n) < 0.7, rng.uniform(0.1, 0.28, n),
                         rng.uniform(0.5, 0.8, n))
    return make_run(reward=reward, ratio_min=ratio_min, ratio_max=rng.uniform(1.3, 1.8, n))


def test_a_setting_clearly_outside_behind_a_single_warning_is_the_first_action():
    """The config is evidence: a PPO clip of 0.6 (2x the recipe's top, a primary cause of
    ratio instability) behind a ratio-instability warning is what to change first, not the
    generic "fewer epochs"; on a run that learns all the same, for the next run, without
    a restart its checkpoints do not need."""
    cfg = {"epsilon": 0.6, "learning_rate": 1e-6}
    rc = diagnose(_ratios_out_from_the_start(learns=True), DoctorConfig(run_config=cfg)
                  ).root_cause
    assert rc.mode == "ratio_instability" and rc.knob["name"] == "epsilon"
    assert rc.first_action.startswith("epsilon 0.6 -> 0.2 (")
    assert not rc.setup
    # In the recipe: the rule's own remedy.
    ok = diagnose(_ratios_out_from_the_start(learns=True),
                  DoctorConfig(run_config={**cfg, "epsilon": 0.2})).root_cause
    assert ok.knob is None and "epsilon" not in ok.first_action


def test_a_setting_wrong_from_the_first_step_of_a_run_that_never_learned_restarts_it():
    cfg = {"epsilon": 0.6, "learning_rate": 1e-6}
    rc = diagnose(_ratios_out_from_the_start(learns=False), DoctorConfig(run_config=cfg)
                  ).root_cause
    assert rc.knob is not None and rc.knob["name"] == "epsilon"
    assert rc.first_action.startswith("restart from the initial model")


def _train_prompts_solved(held_end: float, n: int = 300, seed: int = 32):
    """A 0/1 accuracy term 0.6 -> 1.0 within 20 steps (all groups all-correct after), entropy
    0.45 -> 0.02; the held-out score, every 5 steps, 0.6 -> ``held_end``."""
    rng = np.random.default_rng(seed)
    s = np.arange(n)
    acc = np.clip(0.6 + 0.4 * np.minimum(s / 20, 1) + rng.normal(0, 0.01, n), 0, 1)
    held = np.full(n, np.nan)
    held[::5] = np.clip(np.linspace(0.6, held_end, n)[::5] + rng.normal(0, 0.03, n // 5), 0, 1)
    return make_run(reward=acc, rewards__accuracy_reward__mean=acc,
                    entropy=0.02 + 0.43 * np.exp(-s / 15),
                    frac_reward_zero_std=np.minimum(s / 20, 1) * 0.95,
                    eval_accuracy=held)


def test_training_prompts_solved_while_the_held_out_score_never_moved_is_not_solved():
    """Two prompts learned by heart: the training reward at its top, the held-out score flat
    at 0.5: the policy learned its training set. Named first (what follows, the entropy fall
    and the equal groups, comes of it), and never "solved"."""
    d = diagnose(_train_prompts_solved(held_end=0.5))
    assert d.status != "healthy"
    assert d.root_cause.mode == "no_progress"
    assert d.root_cause.first_action.startswith("train on more prompts")
    assert "the policy learned its training set" in d.check("no_progress").summary
    assert all("solved" not in c.summary or "training prompts are solved" in c.summary
               for c in d.checks if c.fired)
    # The held-out score rising with it: the task is learned, nothing to say of the prompts.
    ok = diagnose(_train_prompts_solved(held_end=0.95))
    assert "training set" not in ok.check("no_progress").summary
    assert ok.root_cause is None or ok.root_cause.mode != "no_progress"


def test_a_negative_entropy_coefficient_is_a_penalty_far_outside_the_recipe():
    """entropy_coef -0.05 is not "off": it pays every update to sharpen the policy, the
    chapter's entropy collapse; far outside, so the first action on the entropy fall."""
    reading = recipe.read_config({"entropy_coef": -0.05}).get("entropy_coef")
    assert reading.verdict == recipe.UNSAFE and reading.far
    assert "a penalty on entropy" in reading.sentence()
    assert reading.fix() == "entropy_coef -0.05 -> 0.005"
    assert recipe.read_config({"entropy_coef": 0}).get("entropy_coef").verdict == recipe.OFF
    beta = recipe.read_config({"beta": -0.01}).get("beta")
    assert beta.verdict == recipe.UNSAFE and "kl_drift" in {lk.mode for lk in beta.links}


def test_a_reward_at_its_top_with_no_correctness_term_asks_what_the_reward_pays():
    """The same curves with only a total reward logged: the log cannot tell a reward that
    pays the format alone from prompts learned by heart; the reward is checked first, and
    nothing says the training set was learned as if it were known."""
    run = _train_prompts_solved(held_end=0.5)
    frame = run.frame.drop(columns=[c for c in run.frame.columns
                                    if c.startswith("reward_component/")])
    only_total = make_run(steps=run.steps, reward=frame["reward_mean"].to_numpy(),
                          entropy=frame["entropy"].to_numpy(),
                          frac_reward_zero_std=frame["zero_std_fraction"].to_numpy(),
                          eval_accuracy=frame["heldout_score"].to_numpy())
    d = diagnose(only_total)
    summary = d.check("no_progress").summary
    assert "the reward pays for something the held-out task does not" in summary
    assert d.root_cause.first_action.startswith("check the reward on a few completions")


def _crawling(kl_end: float, n: int = 250, seed: int = 41):
    """A 0-1 held-out score 0.40 -> 0.44 over 250 steps (a significant trend, no learning
    worth the name), the reward flat and noisy, mixed groups, KL ending at ``kl_end``."""
    rng = np.random.default_rng(seed)
    s = np.arange(n)
    held = np.full(n, np.nan)
    held[::5] = 0.40 + 0.04 * s[::5] / n + rng.normal(0, 0.005, n // 5)
    return make_run(reward=0.6 + rng.normal(0, 0.06, n), eval_accuracy=held,
                    kl=kl_end * s / n, frac_reward_zero_std=np.full(n, 0.02))


def test_a_task_score_crawling_up_is_not_progress_and_a_still_policy_asks_for_a_larger_lr():
    """0.40 -> 0.44 in 250 steps is a significant trend, not learning: the run is not called
    healthy. With the KL to the reference still ~0.002 while the groups carried signal, the
    policy barely moved: a larger learning rate first; with a KL that moved, the reward."""
    config = DoctorConfig(run_config={"learning_rate": 1e-6})
    still = diagnose(_crawling(0.002), config)
    assert still.status == "warning" and still.root_cause.mode == "no_progress"
    assert still.root_cause.first_action.startswith("raise the learning rate (now 1e-6), e.g. x3")
    assert "barely moved from the reference (KL 0.0019 at the end)" in \
        still.root_cause.first_action
    assert "(the recipe keeps a full fine-tune below 5e-6" in still.root_cause.first_action
    moved = diagnose(_crawling(0.2), config)
    assert moved.root_cause.mode == "no_progress"
    assert moved.root_cause.first_action.startswith("check the reward")
    # Above the chapter's ceiling (a recipe set for this model), no sentence argues with x3.
    high = diagnose(_crawling(0.002), DoctorConfig(run_config={"learning_rate": 1e-4}))
    said = " ".join(p.action for p in high.plan)
    assert "raise the learning rate (now 1e-4), e.g. x3" in said, said
    assert "keeps a full fine-tune below 5e-6" not in said


def test_a_format_term_that_saturated_in_the_first_fifth_is_still_format_gaming():
    """The tag term learned in ~10 steps (0.03 -> 0.95) while the answers went 0.36 -> 0:
    against the first fifth's median (already saturated) the reward barely gained, and the
    finding was missed; measured from the first points, the tag term carries it all."""
    rng = np.random.default_rng(51)
    n = 250
    s = np.arange(n)
    tags = np.clip(0.95 - 0.92 * np.exp(-s / 4) + rng.normal(0, 0.02, n), 0, 1)
    acc = np.clip(0.36 * np.exp(-s / 8) + rng.normal(0, 0.01, n), 0, 1)
    held = np.full(n, np.nan)
    held[::5] = np.clip(0.4 * np.exp(-s[::5] / 8) + rng.normal(0, 0.005, n // 5), 0, 1)
    run = make_run(reward=0.2 * acc + tags, rewards__accuracy_reward__mean=acc,
                   rewards__think_format_reward__mean=tags, eval_accuracy=held)
    d = diagnose(run)
    assert d.check("format_gaming").fired
    assert "against its first points" in d.check("format_gaming").summary
    assert "think_format_reward" in d.root_cause.first_action


def test_a_task_out_of_reach_is_not_healthy_and_asks_for_easier_prompts():
    """A 0/1 reward at ~8% for 200 steps (a right answer paid now and then), the held-out
    score flat at 0.08, the policy moving (KL 0.18): the reward's range is tiny, so "a quarter
    of it" is noise, not a rise; the prompts are out of reach, or the answers they are checked
    against are wrong: a flat score reads the same either way (trial 64: an answer column
    shuffled against its prompts), and the answers are the cheaper look."""
    rng = np.random.default_rng(53)
    n = 200
    held = np.full(n, np.nan)
    e = rng.normal(0, 0.01, n // 5)
    held[::5] = 0.08 + (e + e[::-1]) / 2  # flat: neither up nor down
    paid = rng.binomial(64, 0.08, n) / 64
    run = make_run(reward=(paid + paid[::-1]) / 2, eval_accuracy=held,
                   kl=np.minimum(np.arange(n) / 20, 1) * 0.18,
                   frac_reward_zero_std=np.full(n, 0.3))
    d = diagnose(run)
    assert d.status == "warning" and d.root_cause.mode == "no_progress"
    action = d.root_cause.first_action
    assert action.startswith("check a few prompts' reference answers first"), action
    assert action.endswith("the task is out of reach: easier prompts (a curriculum, or SFT "
                           "first)"), action


@pytest.mark.parametrize("knob,value,first", [
    ("top_p", 0.5, "top_p 0.5 -> 1.0"), ("top_k", 5, "top_k 5 -> 0 (off)")])
def test_a_sampling_cut_is_named_for_the_entropy_fall_it_causes(knob, value, first):
    """Nucleus or top-k sampling at the rollout sharpens the sampled distribution as a low
    temperature does: at 0.5 (or k=5) it is far outside the recipe and the first action on
    the entropy fall; at the frameworks' defaults (1.0, -1) it is not mentioned."""
    rng = np.random.default_rng(61)
    s = np.arange(250)
    run = make_run(reward=0.6 + 0.6 * (1 - np.exp(-s / 40)) + rng.normal(0, 0.02, 250),
                   entropy=0.04 + 0.61 * np.exp(-s / 30) + rng.normal(0, 0.003, 250))
    cfg = {"learning_rate": 1e-6, "temperature": 1.0, "num_generations": 16}
    rc = diagnose(run, DoctorConfig(run_config={**cfg, knob: value})).root_cause
    assert rc.mode == "entropy_collapse" and rc.knob["name"] == knob
    assert rc.first_action.startswith(first)
    default = {"top_p": 1.0, "top_k": -1}[knob]
    plain = diagnose(run, DoctorConfig(run_config={**cfg, knob: default}))
    assert not any(knob in p.action for p in plain.plan)
    assert recipe.read_config({knob: default}).get(knob).verdict == recipe.OK


def test_a_log_that_starts_mid_run_rolls_back_before_its_first_step_not_to_the_start():
    """A bug report's excerpt, steps 59-64, NaN from its first line: the run's steps 1-58
    ran and may have saved good checkpoints; "restart from the initial model ... no
    checkpoint of this run is good" overstated what the log shows."""
    n = 6
    nan = np.array(["nan"] * n, dtype=object)  # logged as NaN, not a gap
    run = make_run(steps=np.arange(59, 59 + n), loss=nan, grad_norm=nan, kl=nan,
                   reward=np.full(n, 0.2))
    rc = diagnose(run).root_cause
    assert rc.mode == "numerical_failure"
    assert rc.first_action.startswith("roll back to a checkpoint from before step 59 (the log "
                                      "starts there")
    assert "initial model" not in rc.first_action


def test_an_entropy_collapse_never_asks_to_lower_an_entropy_bonus():
    """Set 16: an entropy bonus of 0.03 (above the recipe's 0.001-0.01) did not stop the
    entropy collapsing; "entropy coefficient 0.03 -> 0.001-0.01" would weaken the one term
    pushing it up. With no bonus, adding one stays a remedy."""
    rng = np.random.default_rng(71)
    s = np.arange(250)
    run = make_run(reward=0.6 + 0.6 * (1 - np.exp(-s / 40)) + rng.normal(0, 0.02, 250),
                   entropy=0.04 + 0.61 * np.exp(-s / 30) + rng.normal(0, 0.003, 250))
    cfg = {"learning_rate": 1e-6, "temperature": 1.0, "num_generations": 16}
    on = diagnose(run, DoctorConfig(run_config={**cfg, "entropy_coef": 0.03}))
    assert on.check("entropy_collapse").fired
    assert not any("entropy coefficient" in str(r) or "entropy_coef" in str(r)
                   for r in on.check("entropy_collapse").remedies)
    off = diagnose(run, DoctorConfig(run_config={**cfg, "entropy_coef": 0.0}))
    assert any(str(r).startswith("entropy coefficient 0 -> 0.001-0.01")
               for r in off.check("entropy_collapse").remedies)


def test_a_roll_back_is_never_the_whole_first_action():
    """KL drifting past 10 at beta 0.04 and a learning rate in the recipe: going back alone
    reruns what broke it; the finding's next knob (a tighter leash) comes with it."""
    rng = np.random.default_rng(1)
    n = 300
    s = np.arange(n)
    run = make_run(reward=0.5 + 0.3 * s / n + rng.normal(0, 0.02, n),
                   kl=np.abs(0.01 + 12 * (s / n) ** 2 + rng.normal(0, 0.01, n)),
                   entropy=0.5 + rng.normal(0, 0.01, n))
    rc = diagnose(run, DoctorConfig(run_config={"beta": 0.04, "learning_rate": 1e-6})
                  ).root_cause
    assert rc.mode == "kl_drift" and rc.first_action.startswith("roll back to ")
    assert rc.first_action.endswith(
        ", then KL coefficient (beta) 0.04 -> 0.08 (holds the policy closer to its reference)")


@pytest.mark.parametrize("clip_high,named", [(0.1, False), (0.2, False), (0.28, True)])
def test_an_entropy_blow_up_never_widens_the_upper_clip(clip_high, named):
    """Less room for rare tokens means a lower upper clip: one at 0.1 or 0.2 is not "set to
    0.2-0.24"; one at 0.28 is."""
    rng = np.random.default_rng(81)
    n = 200
    s = np.arange(n)
    run = make_run(reward=np.where(s < 120, 0.7, 0.1) + rng.normal(0, 0.02, n),
                   entropy=np.where(s < 120, 0.3, 3.0) + rng.normal(0, 0.01, n))
    cfg = {"learning_rate": 1e-6, "epsilon_high": clip_high, "entropy_coef": 0.0}
    check = diagnose(run, DoctorConfig(run_config=cfg)).check("entropy_blowup")
    assert check.fired
    texts = [str(r) for r in check.remedies]
    assert any("clip_ratio_high" in t for t in texts) is named, texts
    assert not any("entropy bonus" in t for t in texts)  # none to lower


def test_a_lowered_learning_rate_never_offers_a_larger_one_for_lora():
    """5e-6, at the recipe's limit, halves to 2.5e-6; "or 2.5e-5 for a LoRA adapter" would
    raise it 5x."""
    assert recipe.read_config({"learning_rate": 5e-6}).get("learning_rate").fix() == \
        "learning_rate 5e-6 -> 2.5e-6"
    assert recipe.read_config({"learning_rate": 1e-3}).get("learning_rate").fix().endswith(
        ", or 1e-5 for a LoRA adapter")
    # Nor one that barely lowers it: 3e-3 against a user's ceiling of 5e-4 read "-> 2.5e-4,
    # or 0.0025 for a LoRA adapter" (helper-35); the user's ceiling is this model's own.
    user = recipe.with_overrides({"learning_rate": {"high": 5e-4}})
    fix = recipe.read_config({"learning_rate": 3e-3}, user).get("learning_rate").fix()
    assert fix == "learning_rate 0.003 -> 2.5e-4", fix
    assert "LoRA" not in recipe.read_config({"learning_rate": 3e-5}).get("learning_rate").fix()


@pytest.mark.parametrize(("lr", "said"), [
    (1e-5, "halved it would still be 5e-6, at the recipe's ceiling"),
    (8e-6, "halved it would be 4e-6, just under the 5e-6 ceiling"),
    (5e-6, ""),  # halved: below the ceiling, the chapter's remedy as it stands
])
def test_an_lr_cut_past_the_chapters_half_says_why(lr, said):
    """The chapter halves an lr behind an entropy plunge; 1e-5 halved is 5e-6, the ceiling it
    never starts at, so the target is half the ceiling and the reason says so (the expert's
    "lr x0.5" on the real 181457 run read as a different number without it)."""
    reading = recipe.read_config({"learning_rate": lr}).get("learning_rate")
    assert reading.fix() == f"learning_rate {recipe._num(lr)} -> 2.5e-6"
    assert reading.why.startswith("each update takes too large a step")
    if said:
        assert said in reading.why, reading.why
    else:
        assert "x0.5" not in reading.why, reading.why
    lora = recipe.read_config({"learning_rate": 1e-4, "use_peft": True}).get("learning_rate")
    assert "5e-5" in lora.why and "the ceiling" in lora.why, lora.why  # 10x for an adapter


@pytest.mark.parametrize("lr", [1e-6, 1e-4])
def test_a_kl_drift_with_the_leash_off_turns_the_leash_on_first(lr):
    """beta 0 behind a KL drift is the cause the chapter names (its remedies are all about the
    leash), before an lr 20x the ceiling that only makes the drift faster; the root line
    quotes the drift it caused, not the setting alone."""
    rng = np.random.default_rng(7)
    n = 400
    s = np.arange(n)
    run = make_run(reward=0.5 + 0.01 * rng.normal(0, 1, n),
                   kl=np.abs(0.05 + 9 * np.clip((s - 150) / 250, 0, 1) + rng.normal(0, 0.02, n)),
                   entropy=0.5 + rng.normal(0, 0.01, n))
    rc = diagnose(run, DoctorConfig(run_config={"beta": 0.0, "learning_rate": lr})).root_cause
    assert rc.mode == "kl_drift"
    assert "beta 0 -> 0.01-0.05" in rc.first_action, rc.first_action
    assert "learning_rate" not in rc.first_action.split("beta 0 ->")[0]
    assert rc.summary.startswith("the setting beta 0"), rc.summary
    assert ": KL rose from " in rc.summary, rc.summary


def test_a_headline_ends_at_its_first_semicolon_and_is_cut_at_a_comma_when_long():
    from grpo_doctor.text import headline
    assert headline("entropy x88, from 0.066 to 5.79, from step 150; since down") == \
        "entropy x88, from 0.066 to 5.79, from step 150"
    long = "KL rose (band 5-10, dangerous) from step 3, reward flat (0.5 -> 0.5; noisy)" * 3
    assert headline(long, limit=60) == "KL rose (band 5-10, dangerous) from step 3"
    assert headline("no semicolon (a; b") == "no semicolon (a; b"


def _converging_run():
    """A run that learned (held-out 0.35 -> 0.95) with its entropy spent as it did."""
    rng = np.random.default_rng(5)
    n = 250
    s = np.arange(n)
    rise = 1 - np.exp(-s / 50)
    return make_run(reward=0.4 + 0.7 * rise + rng.normal(0, 0.02, n),
                    eval__score=0.35 + 0.6 * rise + rng.normal(0, 0.01, n),
                    entropy=0.7 * np.exp(-s / 80) + 0.04 + rng.normal(0, 0.002, n))


def test_a_run_converging_with_its_entropy_spent_is_told_nothing_urgent_first():
    """Held-out sets 2, 4, 6, 8, 9, 13, 16 and 17: runs that learned (held-out 0.35 -> 0.94)
    with their entropy spent read "learning_rate 3e-4 -> 1.5e-4" first, as if something broke.
    Their checkpoints are good: the lr is for the next run."""
    d = diagnose(_converging_run(), DoctorConfig(run_config={"learning_rate": 1e-6}))
    assert d.check("entropy_collapse").status.value == "warning", d.check("entropy_collapse")
    first = d.root_cause.first_action
    assert first.startswith("nothing urgent: the run is converging (reward "), first
    assert "; for the next run: learning_rate 1e-6 -> 5e-7" in first, first
    assert sum("learning_rate" in p.action for p in d.plan) == 1  # not again below


def test_a_solved_run_at_an_lr_far_above_the_ceiling_is_still_nothing_urgent_first():
    """A long run that solved its task (held-out 0.35 -> 0.95) at lr 2e-4, 40x the ceiling:
    "learning_rate 2e-4 -> 1e-6" first, where its twin at 20x read "nothing urgent". Its
    checkpoints are good; the lr is for the next run, said right after."""
    d = diagnose(_converging_run(), DoctorConfig(run_config={"learning_rate": 2e-4}))
    first = d.root_cause.first_action
    assert first.startswith("nothing urgent: the run is converging"), first
    assert "; for the next run: learning_rate 2e-4 -> " in first, first


def test_an_absurd_value_says_its_ratio_readably():
    reading = recipe.read_config({"num_generations": 1e35}).get("num_generations")
    assert reading.how_far().startswith("1.6e33x the top of the recipe's"), reading.how_far()
    assert recipe.read_config({"learning_rate": 1e-3}).get("learning_rate").how_far() == \
        "200x the recipe's 5e-6 ceiling"  # (far past a LoRA adapter's too: not said)


def test_a_converged_run_names_a_setting_outside_the_recipe_for_the_next_run():
    """beta 0 beside an entropy spent as the task was solved (held-out 0.35 -> 0.95; the
    grad norm gone with the all-correct groups): "restart from the initial model ... beta 0"
    threw away a run that worked. The setting is for the next run; the finding is a warning."""
    rng = np.random.default_rng(6)
    n = 250
    s = np.arange(n)
    rise = 1 - np.exp(-s / 40)
    run = make_run(reward=0.4 + 0.8 * rise + rng.normal(0, 0.01, n),
                   eval__score=0.35 + 0.6 * rise + rng.normal(0, 0.005, n),
                   grad_norm=0.5 * np.exp(-s / 30) + 1e-6,
                   entropy=0.6 * np.exp(-s / 50) + 0.005 + rng.normal(0, 0.0005, n))
    d = diagnose(run, DoctorConfig(run_config={"beta": 0.0, "learning_rate": 1e-6}))
    check = d.check("entropy_collapse")
    assert check.status.value == "warning", check.summary
    assert check.summary.startswith("entropy spent as the task is solved"), check.summary
    first = d.root_cause.first_action
    assert first.startswith("nothing urgent: the run is converging"), first
    assert "; for the next run: beta 0 -> 0.01-0.05" in first, first
    assert "restart" not in first
    assert d.root_cause.summary.startswith("entropy spent as the task is solved"), \
        d.root_cause.summary


def test_a_run_that_broke_and_then_solved_its_task_is_not_rolled_back():
    """A KL burst past 10 at step 60, back at 64, and a held-out score that goes on to 0.96
    (held-out set 7's warm-up to lr 5e-3): "roll back to before step 60" threw away the run
    that solved the task. The lr is for the next run."""
    rng = np.random.default_rng(8)
    n = 200
    s = np.arange(n)
    kl = 0.05 + 0.02 * rng.random(n)
    kl[60:64] = [12.0, 14.0, 11.0, 10.5]
    rise = 1 - np.exp(-s / 40)
    run = make_run(reward=0.3 + 0.6 * rise + rng.normal(0, 0.02, n), kl=kl,
                   eval__score=0.3 + 0.66 * rise + rng.normal(0, 0.005, n),
                   entropy=0.5 + rng.normal(0, 0.01, n))
    rc = diagnose(run, DoctorConfig(run_config={"learning_rate": 2e-4, "beta": 0.04})
                  ).root_cause
    assert rc.mode == "kl_drift", rc
    assert rc.first_action.startswith("no roll-back: the run came through it and solved its "
                                      "task; for the next run"), rc.first_action
    assert "learning_rate" in rc.first_action


def test_an_lr_far_above_the_recipe_is_named_for_an_entropy_collapse():
    """The chapter's causes of entropy collapse: beta too small, the learning rate too large,
    a sharp reward, a low temperature. At lr 1e-4 (20x the ceiling) the first action read
    "learning_rate 1e-4 -> 5e-5 (slows the sharpening)", still 10x the ceiling."""
    rng = np.random.default_rng(9)
    n = 200
    s = np.arange(n)
    run = make_run(reward=0.5 + rng.normal(0, 0.02, n),
                   entropy=0.8 * np.exp(-s / 30) + 0.01 + rng.normal(0, 0.001, n))
    rc = diagnose(run, DoctorConfig(run_config={"learning_rate": 1e-4, "beta": 0.04})
                  ).root_cause
    assert rc.mode == "entropy_collapse"
    assert "learning_rate 1e-4 -> 2.5e-6" in rc.first_action, rc.first_action
    assert rc.summary.startswith("the setting learning_rate 1e-4"), rc.summary


@pytest.mark.parametrize("peak,named", [(0.3, False), (6.0, True)])
def test_no_clipping_is_a_cause_only_where_a_grad_norm_reached_the_clip(peak, named):
    """max_grad_norm 1e9 beside an entropy collapse whose logged grad norms stayed at 0.3 (a
    console log of 20251022_181457, config beside it): "restart ... max_grad_norm 1e9 -> 1.0"
    named a clip that would have changed no update. It is a note then; with norms of 6 it may
    have let one update too far, and is named."""
    rng = np.random.default_rng(10)
    n = 120
    s = np.arange(n)
    g = 0.2 + 0.05 * rng.random(n)
    g[40] = peak
    run = make_run(reward=0.5 + rng.normal(0, 0.02, n), grad_norm=g,
                   entropy=0.8 * np.exp(-s / 20) + 0.004 + rng.normal(0, 0.0005, n))
    d = diagnose(run, DoctorConfig(run_config={"learning_rate": 1e-6, "max_grad_norm": 1e9}))
    assert d.root_cause.mode == "entropy_collapse"
    assert ("max_grad_norm" in d.root_cause.first_action) is named, d.root_cause.first_action
    noted = any("max_grad_norm 1e9" in n for n in d.notes)
    assert noted is not named, d.notes


def test_a_converging_run_names_the_setting_behind_its_other_finding_for_the_next_run():
    """Held-out set 18: a clip range of 0.6 both sides, ratios below 0.3 on a third of the
    steps, the task learned all the same (held-out 0.35 -> 0.91). The first action said
    "nothing urgent ... for the next run: learning_rate ..." and left the clip unnamed."""
    rng = np.random.default_rng(12)
    n = 250
    s = np.arange(n)
    rise = 1 - np.exp(-s / 50)
    ratio_min = np.where((rng.random(n) < 0.35) & (s > 40), 0.2, 0.7)
    run = make_run(reward=0.6 + 0.5 * rise + rng.normal(0, 0.02, n),
                   eval__score=0.35 + 0.56 * rise + rng.normal(0, 0.005, n),
                   entropy=0.9 * np.exp(-s / 60) + 0.06 + rng.normal(0, 0.002, n),
                   ratio_min=ratio_min)
    d = diagnose(run, DoctorConfig(run_config={"learning_rate": 1e-6, "epsilon": 0.6}))
    assert d.check("ratio_instability").fired, d.check("ratio_instability").summary
    first = d.root_cause.first_action
    assert first.startswith("nothing urgent: the run is converging"), first
    assert "for the next run: epsilon 0.6 -> 0.2" in first, first


def test_a_restart_says_where_the_problem_began_not_that_every_checkpoint_is_bad():
    """A short console log (steps 10-40) whose entropy, 1.03 at its first log, collapses to
    0.01 with temperature 0.5 beside it: the restart is right (no logged step before the
    onset), but "the problem was there from the first logged update" was not (1.03 is a
    normal entropy)."""
    steps = np.array([10, 20, 30, 40])
    run = make_run(steps=steps, entropy=np.array([1.03, 0.4, 0.02, 0.0125]),
                   reward=np.array([0.4, 0.3, 0.2, 0.2]),
                   truncation_ratio=np.array([0.1, 1.0, 1.0, 1.0]))
    rc = diagnose(run, DoctorConfig(run_config={"temperature": 0.5})).root_cause
    assert rc.mode == "entropy_collapse" and rc.knob["name"] == "temperature", rc
    assert rc.first_action.startswith(
        "restart from the initial model (it began at step 10, the first logged step: there is "
        "no earlier checkpoint to go back to), with temperature 0.5 -> 1.0"), rc.first_action
    assert "from the first logged update" not in rc.first_action


def _recurring_kl_spikes(n: int = 220, seed: int = 5):
    """KL around 0.4 with one-log spikes past 10 at six steps, each back at the next log (a
    real trainer state: 12 at step 5, 197 at 130); the reward flat."""
    rng = np.random.default_rng(seed)
    kl = 0.4 + rng.normal(0, 0.03, n)
    for i, peak in zip((0, 3, 23, 26, 41, 205), (12.1, 64.8, 13.9, 197.0, 66.8, 179.0)):
        kl[i] = peak
    return make_run(steps=np.arange(n) * 5 + 5, kl=kl,
                    reward=0.9 + rng.normal(0, 0.1, n))


def test_kl_spikes_the_run_came_back_from_are_not_a_restart_when_beta_is_0():
    """beta 0 is a known cause of KL drift, and the first action; but the run came back from
    every spike, so its checkpoints are good: no restart, and the spikes' own first look
    (those batches) follows the setting, said once."""
    run = _recurring_kl_spikes()
    d = diagnose(run, DoctorConfig(run_config={"beta": 0.0}))
    rc = d.root_cause
    assert rc.mode == "kl_drift" and rc.knob["name"] == "beta", rc
    first = rc.first_action
    assert first.startswith("beta 0 -> 0.01-0.05 ("), first
    assert "restart" not in first and "roll back" not in first, first
    assert "; then KL spikes keep coming back (6 episodes, up to 197 at step" in first, first
    assert sum("KL spikes keep coming back" in p.action for p in d.plan) == 1
    # Without the config the spikes are the first action, as before.
    bare = diagnose(run).root_cause
    assert bare.first_action.startswith("KL spikes keep coming back"), bare.first_action


@given(peak=st.floats(1e-7, 1e-3), total=st.integers(80, 2000), every=st.integers(2, 20))
def test_the_peak_of_a_linear_decay_already_under_way_at_the_first_log(peak, total, every):
    """TRL's default schedule decays linearly from the first update; a log every N steps shows
    peak * (total - N + 1) / total first. The peak is the configured value the advice halves
    (181457: 7.9e-6 logged first, 1e-5 configured)."""
    steps = np.arange(every, total, every, dtype=float)
    lr = peak * (total - steps + 1) / total
    assert knobs.schedule_peak(steps, lr) == pytest.approx(peak, rel=1e-6)


@given(peak=st.floats(1e-7, 1e-3), total=st.integers(60, 2000))
def test_the_peak_of_other_schedules_is_the_largest_logged_value(peak, total):
    steps = np.arange(1, total + 1, dtype=float)
    warm = peak * np.minimum(1.0, steps / 10) * (1 - 0.5 * steps / total)
    assert knobs.schedule_peak(steps, warm) == warm.max()
    resumed = steps[total // 2:]  # a log that starts mid-run: its earlier lr is unknown
    linear = peak * (1 - resumed / total)
    assert knobs.schedule_peak(resumed, linear) == linear.max()
    every = 10  # a cosine logged every 10 steps: taken back one interval, near its peak
    cosine = peak * 0.5 * (1 + np.cos(np.pi * (steps[every - 1::every] - 1) / total))
    found = knobs.schedule_peak(steps[every - 1::every], cosine)
    assert cosine.max() <= found <= peak * 1.05  # one interval of a line, near a cosine


def test_a_log_that_starts_after_its_lr_decayed_is_advised_on_the_configured_lr():
    path = REAL_RUNS / "trl-console" / "20251022_181457_run_terminal.md"
    if not path.exists():
        pytest.skip("shared real runs not present")
    rc = diagnose(load_runs(path)[0]).root_cause
    assert "learning_rate 1e-5 -> " in rc.first_action, rc.first_action
    assert "7.9e-6" not in rc.first_action


def _stalled(n: int = 120, seed: int = 4):
    """A run that learns nothing: the reward noisy about 0.8 and drifting down, a 0/1
    correctness term falling 0.10 -> 0.02 (a real VL notebook run's shape)."""
    rng = np.random.default_rng(seed)
    return make_run(reward=np.linspace(0.9, 0.7, n) + rng.normal(0, 0.05, n),
                    reward_component__correctness_reward_func=np.clip(
                        np.linspace(0.10, 0.02, n) + rng.normal(0, 0.02, n), 0, 1))


def test_a_learning_rate_far_below_the_chapters_start_is_the_first_action_of_a_stall():
    d = diagnose(_stalled(), DoctorConfig(run_config={"learning_rate": 1e-9}))
    assert d.root_cause.mode == "no_progress", d.root_cause
    # Nothing was learned: a restart, at the recipe's start.
    first = d.root_cause.first_action
    assert first.startswith("restart from the initial model"), first
    assert ("learning_rate 1e-9 -> 1e-6 (learning_rate 1e-9 is 1000x below the recipe's "
            "start of 1e-6") in first, first
    ordinary = diagnose(_stalled(), DoctorConfig(run_config={"learning_rate": 1e-6}))
    assert not ordinary.root_cause.first_action.startswith("learning_rate")


def test_a_setting_far_outside_that_the_advice_does_not_act_on_is_still_said():
    """An lr 2000x the ceiling beside a stall the reward check answers first: linked to
    what fired, so not "no finding it causes", and named nowhere in the advice: a note."""
    d = diagnose(_stalled(), DoctorConfig(run_config={"learning_rate": 1e-2}))
    said = " ".join([d.root_cause.first_action, *(p.action for p in d.plan)])
    assert "learning_rate" not in said
    assert any(n.startswith("also far outside the recipe, and not yet acted on above: "
                            "learning_rate 0.01 is 2000x") for n in d.notes), d.notes
    healthy = make_run(reward=np.linspace(0.2, 0.8, 120))
    h = diagnose(healthy, DoctorConfig(run_config={"learning_rate": 1e-2}))
    assert not any(n.startswith("also far outside") for n in h.notes)  # the other note's


def test_a_learning_rate_is_said_by_the_key_the_config_gave_it():
    """verl's key in the config: the advice turns ``actor_rollout_ref.actor.optim.lr``, as
    the user wrote it; a logged rate is still "learning_rate"; a knob labelled in words
    (the KL coefficient) keeps its label."""
    run = make_run(reward=np.linspace(0.2, 0.6, 30))
    run.config.update({"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-4},
                                                       "kl_loss_coef": 0.04}}})
    assert str(knobs.scale(run, knobs.LEARNING_RATE, 0.5)).startswith(
        "actor_rollout_ref.actor.optim.lr 1e-4 -> 5e-5")
    assert str(knobs.scale(run, knobs.KL_COEF, 2.0)).startswith("KL coefficient (beta) 0.04")
    logged = make_run(reward=np.linspace(0.2, 0.6, 30), learning_rate=np.full(30, 2e-6))
    assert str(knobs.scale(logged, knobs.LEARNING_RATE, 0.5)).startswith("learning_rate 2e-6")


def test_kl_of_0_is_no_evidence_the_policy_never_moved_when_beta_is_0(tmp_path):
    """Grad norm NaN on every log and KL exactly 0: "the policy never moved" rests on the KL;
    with beta 0 in the config, a trainer that skips the KL term may log 0 for it anyway."""
    rows = "".join(f"{i},{-3.7 + 0.1 * np.sin(i):.3f},0.0,nan\n" for i in range(1, 21))
    (tmp_path / "run.csv").write_text("step,reward,kl,grad_norm\n" + rows)
    (run,) = load_runs(tmp_path / "run.csv")
    plain = diagnose(run).root_cause
    assert plain.mode == "numerical_failure" and "the policy never moved" in plain.summary
    off = diagnose(run, DoctorConfig(run_config={"beta": 0.0})).root_cause
    assert off.mode == "numerical_failure" and "never moved" not in off.summary, off.summary


def test_a_correctness_term_that_never_moved_comes_before_an_lr_outside_the_recipe():
    """A gain on format alone, check_answer at -2 on all 100 steps, and lr 0.01 given: no
    answer was ever judged right, whatever the step size; the lr is said in a note."""
    path = (REAL_RUNS / "notebook-tables"
            / "DeepSeek_R1_0528_Qwen3_(8B)_GRPO__2025-06-05_fc0ecd2c_839abc.csv")
    if not path.exists():
        pytest.skip("shared real runs not present")
    d = diagnose(load_runs(path)[0], DoctorConfig(run_config={"learning_rate": 1e-2}))
    assert d.root_cause.first_action.startswith("inspect completions against check_answer")
    said = " ".join([d.root_cause.first_action, *(p.action for p in d.plan), *d.notes])
    assert "learning_rate 0.01" in said


def test_a_task_term_that_fell_at_one_step_to_near_0_with_the_completions_unchanged_is_the_key():
    """Trial 56: from step 101 the rows served carry a shifted answer key: correctness 0.78 ->
    0 (1/32 by chance on 17 of the 100 steps after), length and entropy unchanged. The exact
    hold the scorer check asked for never came; it read "restart from the initial model,
    learning_rate -> 2.5e-6" from an entropy fall the control makes too, and the crash, dated
    98, sent the user back past checkpoint-100."""
    d = _trial("trl_key_shift_100")
    assert d.root_cause.mode == "reward_overfit" and d.root_cause.step == 101, d.root_cause
    assert "stayed at 0-0.0312 on all 100 logged steps since" in d.root_cause.summary
    first = d.root_cause.first_action
    assert first.startswith("check correctness_reward on completions from step 101 on: it "
                            "scored about 0 from there, against 0.781 before"), first
    assert "answer key or data column" in first
    assert "roll back to checkpoint-100 (the last one save_steps 50 saved" in first, first
    assert not any("learning_rate" in p.action for p in d.plan), d.plan
    assert not d.check("entropy_collapse").fired
    # Live: named 10 steps after the drop, and held (no entropy collapse at step 150).
    run = load_runs(TRIAL / "trl_key_shift_100.csv")[0]
    for last in (110, 150, 180):
        live = diagnose(run.truncated(last))
        assert "stayed at 0-0.0312" in live.check("reward_overfit").summary, last
        assert not live.check("entropy_collapse").fired, last
    # A policy that broke in one step changes what it writes: no scorer is blamed.
    broken = run.frame.copy()
    broken.loc[broken.index > 100, "response_length_mean"] *= 3
    assert "scorer" not in str(diagnose(replace(run, frame=broken)).check(
        "reward_overfit").evidence)


def test_prompts_served_in_order_a_harder_slice_from_101_is_the_data_not_the_policy():
    """Trial 58: ``shuffle_dataset False`` and a dataset whose rows from step 101 on are a
    harder task: correctness 0.84 -> about 0.22 at step 101, swinging 0-0.69 from step to
    step (four prompts a step), format 0.49, length and entropy unchanged; the policy's own
    skill held (0.858 at checkpoints 100 and 200). It read CRITICAL entropy_collapse from
    step 1, "restart from the initial model, learning_rate 1e-4 -> 2.5e-6"."""
    d = _trial("trl_sorted_data_101")
    assert d.status == "warning", d
    assert d.root_cause.mode == "reward_overfit" and d.root_cause.step == 101, d.root_cause
    first = d.root_cause.first_action
    assert first.startswith("look at the prompts served from step 101 on: correctness_reward "
                            "scored about 0.219 on them, against 0.844 before"), first
    assert "shuffle_dataset False serves the dataset in its own order" in first
    assert "roll back" not in first and "restart" not in first, first
    assert not any("learning_rate" in p.action for p in d.plan), d.plan
    assert [c.mode for c in d.findings] == ["reward_overfit"], d.findings
    # Live: named once three windows of it are logged, never an lr restart before.
    run = load_runs(TRIAL / "trl_sorted_data_101.csv")[0]
    cfg = json.loads((TRIAL / "trl_sorted_data_101.config.json").read_text())
    live = diagnose(run.truncated(131), DoctorConfig(recipe=TINY_RECIPE, run_config=cfg))
    assert live.root_cause is not None and live.root_cause.first_action.startswith(
        "look at the prompts served from step 101 on"), live.root_cause
    # Shuffled, the same fall is the answers it is checked against, or the grader.
    shuffled = diagnose(run, DoctorConfig(recipe=TINY_RECIPE,
                                          run_config={**cfg, "shuffle_dataset": True}))
    first = shuffled.root_cause.first_action
    assert first.startswith("check correctness_reward on completions from step 101 on"), first
    assert "a new slice of the data" in first and shuffled.status == "critical"
    # The format term falling with it: the policy changed what it writes, no prompts blamed.
    flipped = run.frame.copy()
    flipped["reward_component/format_reward"] = np.where(flipped.index > 100, 0.05, 0.49)
    changed = replace(run, frame=flipped, _finite={}, _derived={})  # no cached series
    assert "prompts" not in str(diagnose(changed).check("reward_overfit").summary)


def test_generation_that_stops_at_once_is_the_stop_token_not_the_reward_function():
    """Trial 56: the eos token set to "<", the first character of every right answer: 1.3
    tokens per completion from step 1, nothing cut, the reward 0 on every step. It read
    "check the reward function on a few completions: it returned 0 for every one"."""
    d = _trial("trl_eos_at_once")
    assert d.root_cause.setup and d.root_cause.step == 1, d.root_cause
    first = d.root_cause.first_action
    assert first.startswith("check the stop first: completions 1.3 tokens long on average "
                            "from the first logged step"), first
    assert "eos_token" in first
    # A task answered in one token whose reward varies, and a budget of 2 tokens, are not it.
    rng = np.random.default_rng(2)
    paid = make_run(reward=rng.binomial(32, 0.4, 100) / 32,
                    completion_length=np.full(100, 1.2),
                    frac_reward_zero_std=np.full(100, 0.4))
    assert "stops at once" not in str(diagnose(paid).root_cause)
    for budget, at_once in ((None, True), (2, False)):
        short = make_run(reward=np.zeros(100), completion_length=np.full(100, 1.3),
                         frac_reward_zero_std=np.ones(100), grad_norm=np.zeros(100))
        given = {} if budget is None else {"max_completion_length": budget}
        got = diagnose(short, DoctorConfig(run_config=given)).root_cause
        assert ("stops at once" in str(got)) is at_once, got


def test_a_correctness_term_pinned_above_0_is_a_check_that_pays_everything_not_one_that_never_did():
    """Trial 55: an empty answer key that every completion "contains", correctness_reward 1 on
    all 200 steps while the format was learned. The advice said "it never moved, so no answer
    was ever judged right" of a term that judged every one right. At 0 that stands."""
    n = 200
    rng = np.random.default_rng(5)
    fmt_term = np.clip(0.1 + 0.4 * (1 - np.exp(-np.arange(n) / 30))
                       + 0.01 * rng.standard_normal(n), 0, 0.5)
    for held, words in ((1.0, "it scored every one 1 on every step, so it judges nothing"),
                        (0.0, "it never moved, so no answer was ever judged right")):
        run = make_run(reward=held + fmt_term, rewards__correctness_reward__mean=np.full(n, held),
                       rewards__format_reward__mean=fmt_term)
        check = diagnose(run).check("format_gaming")
        assert check.fired and check.remedies[0].startswith(
            f"inspect completions against correctness_reward: {words}"), check.remedies
        assert ("right or wrong" in check.summary) == (held > 0), check.summary


def test_an_overshoot_names_the_lr_the_reward_fell_at():
    """A stepped schedule, 1e-6 -> 3e-6 at step 200 -> 1e-5 at step 400, broke at step 205:
    it fell at 3e-6, not "as the lr rose to 1e-5" (200 steps after the fall)."""
    n = 500
    t = np.arange(n)
    lr = np.where(t < 200, 1e-6, np.where(t < 400, 3e-6, 1e-5))
    d = diagnose(_breaks_after(lr, 205))
    rc = d.root_cause
    assert "fell as the lr rose to 3e-6 (half its gain gone by step 2" in rc.summary, rc.summary
    assert "the lr reached 1e-5 after" in rc.summary
    assert rc.first_action.startswith(
        "learning_rate 1e-5 -> 1e-6 (its value when the reward peaked at step 194); roll back "
        "to a checkpoint from before step 194"), rc.first_action


def test_a_far_lr_is_lowered_to_the_start_of_an_overridden_recipe():
    """With the ceiling set to 5e-4 for the model, an lr of 0.03 (60x it) goes to the recipe's
    start for that model (a fifth of its ceiling, as the chapter's 1e-6 is of 5e-6): 1e-4, not
    the chapter's 1e-6, which a run of that model showed learns nothing (helper-31)."""
    settings = recipe.with_overrides({"learning_rate": {"high": 5e-4}})
    reading = recipe.read_config({"learning_rate": 3e-2}, settings).get("learning_rate")
    assert reading.far and reading.fix().startswith("learning_rate 0.03 -> 1e-4"), reading.fix()
    default = recipe.read_config({"learning_rate": 3e-3}).get("learning_rate")
    assert default.fix().startswith("learning_rate 0.003 -> 1e-6"), default.fix()


def _held_still(n: int = 200, seed: int = 3, reward=None):
    """A run whose held-out score (every 5 steps) sits at ~0.38 and whose policy barely moves
    (KL ~0.003) while most groups carry mixed rewards."""
    rng = np.random.default_rng(seed)
    held = np.full(n, np.nan)
    held[::5] = 0.38 + 0.03 * rng.standard_normal(len(held[::5]))
    r = 0.52 + 0.05 * rng.standard_normal(n) if reward is None else reward
    return make_run(reward=r, kl=0.003 + 0.0005 * rng.random(n),
                    frac_reward_zero_std=0.05 + 0.03 * rng.random(n), heldout_score=held,
                    entropy=0.7 + 0.01 * rng.standard_normal(n))


def test_a_kl_coefficient_far_above_the_recipe_is_why_the_policy_never_moved():
    """beta 5 (100x the top of the recipe), KL 0.003 at the end, the task never learned: the
    leash is the first action, and no "raise the learning rate" (helper-31's beta 5.0)."""
    d = diagnose(_held_still(), DoctorConfig(run_config={"beta": 5.0, "learning_rate": 1e-6}))
    rc = d.root_cause
    assert rc.mode == "no_progress" and "beta 5 -> 0.01-0.05" in rc.first_action, rc.first_action
    assert not any("raise the learning rate" in p.action for p in d.plan), d.plan


def test_a_reward_that_rose_while_the_held_out_score_stayed_low_is_no_progress():
    """The train reward 0.09 -> 0.19 over 200 steps, the held-out score flat at 0.38, no reward
    components for format_gaming to weigh: HEALTHY had read "converged" (helper-31's
    temperature 2.0). With the run's temperature of 2, that is the first action."""
    t = np.arange(200)
    rising = 0.09 + 0.1 * t / 200 + 0.02 * np.random.default_rng(4).standard_normal(200)
    run = _held_still(reward=rising)
    check = diagnose(run).check("no_progress")
    assert check.status.value == "warning", check.summary
    assert "the gain does not carry to the task" in check.summary
    d = diagnose(run, DoctorConfig(run_config={"temperature": 2.0}))
    assert d.root_cause.first_action.startswith("temperature 2 -> 1.0"), d.root_cause.first_action


def test_a_rollout_temperature_far_above_the_recipe_comes_before_the_format_term_it_games():
    """Temperature 2.5: the held-out score fell while a format term carried the reward. Every
    sample was drawn at 2.5; gating the format term was the first action (helper-31)."""
    n = 200
    rng = np.random.default_rng(8)
    t = np.arange(n)
    fmt_r = np.clip(0.05 + 0.1 * t / n + 0.02 * rng.standard_normal(n), 0, 1)
    acc = (rng.random(n) < 0.05) * 0.125
    held = np.full(n, np.nan)
    held[::5] = np.clip(0.45 * np.exp(-t[::5] / 40) + 0.01 * rng.standard_normal(40), 0, 1)
    run = make_run(**{"rewards/format_reward": fmt_r, "rewards/accuracy_reward": acc,
                      "reward": fmt_r + acc, "heldout_score": held,
                      "kl": 0.01 + 0.2 * t / n})
    d = diagnose(run, DoctorConfig(run_config={"temperature": 2.5}))
    assert "with temperature 2.5 -> 1.0" in d.root_cause.first_action, d.root_cause
    plain = diagnose(run)
    assert "temperature" not in plain.root_cause.first_action


def _length_paid(n: int = 200, seed: int = 9, **extra):
    """A reward that pays length alone: the mean length runs 6 -> 10 tokens (the cap) in a
    dozen steps and stays there, while the held-out score falls to 0."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    length = np.minimum(6 + 3.9 / (1 + np.exp(-(t - 6) / 2)) + 0.05 * rng.standard_normal(n),
                        9.98)
    held = np.full(n, np.nan)
    held[::5] = np.clip(0.06 * np.exp(-t[::5] / 30) + 0.005 * rng.random(40), 0, 1)
    # Completions that end on their own at the cap are not cut: the cut share stays under half.
    cut = np.clip(0.4 * (1 - np.exp(-t / 4)) + 0.05 * rng.standard_normal(n), 0, 1)
    return make_run(reward=length / 10, response_length_mean=length, heldout_score=held,
                    truncation_ratio=cut, response_length_max=np.full(n, 10.0),
                    kl=0.01 + 0.5 * (1 - np.exp(-t / 10)), **extra)


def test_a_length_run_to_the_cap_in_a_dozen_steps_is_the_exploit_named():
    """Length 6 -> 10 by step 12 and held: no trend over the whole log and no rise against
    its first tenth ("length 9.44 -> 9.89"), so the first action was a generic audit."""
    d = diagnose(_length_paid())
    assert "length drifted" in d.check("length_hacking").summary, d.check("length_hacking")
    assert "through completion length (length_hacking)" in d.root_cause.first_action, d.root_cause


def test_a_reward_made_of_a_length_term_alone_asks_for_a_correctness_term():
    """The only logged reward term pays length: "add a reward term that pays correct answers",
    not "audit the highest-reward samples" alone (helper-31's length-only reward, TRL)."""
    run = _length_paid(**{"rewards/length_reward": _length_paid().frame["reward_mean"]
                          .to_numpy()})
    first = diagnose(run).root_cause.first_action
    assert ("add a reward term that pays correct answers" in first
            or "through completion length" in first), first


def test_a_budget_that_cut_every_completion_is_raised_4x_under_the_configs_name():
    """Every completion cut at a 2-token cap: 2 -> 4 still cuts 5-token answers; and a verl
    config names it actor_rollout_ref.rollout.response_length (helper-31)."""
    n = 100
    rng = np.random.default_rng(2)
    held = np.full(n, np.nan)
    held[::5] = 0.0
    run = make_run(reward=0.1 + 0.02 * rng.standard_normal(n), response_length_mean=np.full(n, 2.0),
                   response_length_max=np.full(n, 2.0), truncation_ratio=np.ones(n),
                   heldout_score=held)
    cfg = {"actor_rollout_ref": {"rollout": {"response_length": 2}}}
    first = diagnose(run, DoctorConfig(run_config=cfg)).root_cause.first_action
    assert first.startswith("actor_rollout_ref.rollout.response_length 2 -> 8"), first



TRIAL = Path(__file__).parent / "fixtures" / "trial"
TINY_RECIPE = {"learning_rate": {"high": 5e-4}}


def _trial(name: str):
    """A trial run (tests/fixtures/trial) diagnosed with its own config and the tiny model's
    recipe."""
    from grpo_doctor.recipe import flat_config

    run = load_runs(TRIAL / f"{name}.csv")[0]
    cfg = flat_config(json.loads((TRIAL / f"{name}.config.json").read_text()))
    return diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config=cfg))


def test_what_broke_after_a_jump_is_dated_from_the_jump():
    """The lr jumped 1e-4 -> 5e-3 at step 101 and the entropy, sharpening since step 1,
    collapsed: "a jump at step 101; then entropy_collapse at step 1" (helper-31)."""
    rc = _trial("jump_lr_5e-3_at_100").root_cause
    assert rc.summary.startswith("a learning-rate jump"), rc.summary
    assert rc.step >= 101 and "at step 1 " not in rc.summary, rc


def test_a_warmup_that_broke_below_its_peak_says_the_lr_in_force():
    """A warm-up to 5e-3 over 100 steps broke at step 75, at 3.75e-3: "the run learned at
    0.005 until step 75" said an lr the run had not reached (helper-31)."""
    first = _trial("warmup_to_5e-3_100").root_cause.first_action
    assert "learned at up to 0.00375 until step 75" in first, first
    # The ceiling the user set for the model ([recipe]) is never left above.
    assert "0.005 -> 2.5e-4" in first, first


def test_a_first_update_without_clipping_restarts_and_names_the_clip_once():
    """lr 2e-2 without clipping destroyed the run at its first update, the grad norm back down
    at the next log and the reward never back: no restart, "max_grad_norm 1e9 -> 1.0" twice in
    one sentence, and the 200x lr only second (helper-31, helper-32)."""
    d = _trial("lr_2e-2_noclip")
    first = d.root_cause.first_action
    assert first.startswith("restart from the initial model"), first
    # The lr sets the step, the clip only bounds it: the lr first, the clip named once after.
    assert "learning_rate 0.02 -> 1e-4" in first, first
    said = " ".join(p.action for p in d.plan)
    assert said.count("max_grad_norm 1e9 -> 1.0") == 1, said


def test_a_cause_read_off_the_logged_lr_with_no_config_says_how_to_give_one():
    """No config with the log: the lr named is its logged curve, and nothing else (an entropy
    bonus of 1.0 that caused the blow-up) could be weighed; the report says so, and how to
    give the config (helper-31: three runs blamed the lr the log showed)."""
    run = _breaks_after(np.full(500, 1e-4), 300)
    bare = diagnose(run)
    assert (bare.root_cause.knob or {}).get("name") == "learning_rate", bare.root_cause
    assert any("--train-config FILE" in n for n in bare.notes), bare.notes
    given = diagnose(run, DoctorConfig(run_config={"learning_rate": 1e-4, "beta": 0.04}))
    assert not any("--train-config FILE" in n for n in given.notes), given.notes


def test_groups_of_two_are_equal_by_chance_not_because_they_are_solved():
    """num_generations 2: at least half of all groups are equal whatever the policy learns
    (p^2 + (1-p)^2 >= 1/2), so 66% equal groups while the reward rises is no convergence: the
    group size first, not HEALTHY (helper-32's G=2 run)."""
    n = 200
    rng = np.random.default_rng(21)
    t = np.arange(n)
    reward = 0.3 + 0.35 * (1 - np.exp(-t / 80)) + 0.03 * rng.standard_normal(n)
    equal = np.clip(0.5 + 0.16 * t / n + 0.08 * rng.standard_normal(n), 0, 1)
    run = make_run(reward=reward, frac_reward_zero_std=equal)
    d = diagnose(run, DoctorConfig(run_config={"num_generations": 2}))
    check = d.check("advantage_collapse")
    assert check.status.value == "warning" and "groups of 2 are equal by chance" in check.summary
    assert d.root_cause.first_action.startswith("num_generations 2 -> 16"), d.root_cause


def test_a_kl_spike_after_an_lr_jump_asks_for_the_lr_held_before_it_not_half_the_config():
    """The lr jumped 1e-4 -> 2e-3 at step 61 and KL spiked to 194 at step 112; the run solved
    its task. "For the next run, learning_rate 1e-4 -> 5e-5" lowered the healthy lr, and a
    "roll back before step 112" followed "no roll-back" (helper-32)."""
    d = _trial("jump_lr_2e-3_at_60")
    first = d.root_cause.first_action
    assert first.startswith("no roll-back") and "learning_rate back at 1e-4" in first, first
    assert not any(p.rollback_step is not None or p.action.startswith("roll back")
                   for p in d.plan[1:]), d.plan
    # Read with no config, the lr the advice names is the jump's level: the note says so, not
    # "no finding followed it here".
    bare = diagnose(load_runs(TRIAL / "jump_lr_2e-3_at_60.csv")[0])
    assert "learning_rate 0.002 -> " in bare.root_cause.first_action
    (jumped,) = [n for n in bare.notes if "learning rate jumped" in n]
    assert "the learning_rate 0.002 named above is the level it jumped to" in jumped
    assert "no finding followed" not in jumped


def test_a_restart_at_the_second_logged_step_does_not_deny_the_first():
    """"it began at step 2, logged step 2 of the run: there is no earlier checkpoint" while
    step 1 is logged (helper-32): a step was logged before it, too early to be worth going
    back to."""
    from grpo_doctor.root_cause import _restart

    run = make_run(reward=np.linspace(0.2, 0.1, 10))
    assert "the first logged step: there is no earlier checkpoint" in _restart(run, 1)
    second = _restart(run, 2)
    assert "logged step 2 of the run: too early for a checkpoint worth going back to" in second
    assert "no earlier checkpoint" not in second


def test_an_lr_far_below_the_models_recipe_is_the_first_action_of_a_run_that_never_moved():
    """lr 1e-7 on a model whose recipe starts at 1e-4 (helper-32's N1r, verl/wandb): the
    policy never left its reference (KL 2e-6) while 98% of groups had mixed rewards. It read
    INCONCLUSIVE ("reward up only within its noise"), and on TensorBoard "raise the learning
    rate x3" (3e-7: still 300x too low, against the chapter's 5e-6, not the user's recipe)."""
    d = _trial("lr_1e-7")
    assert d.status == "warning"
    rc = d.root_cause
    assert rc.mode == "no_progress" and "never left its reference" in rc.summary, rc
    assert "actor_rollout_ref.actor.optim.lr 1e-7 -> 1e-4" in rc.first_action, rc.first_action
    assert "1000x below the recipe's start of 1e-4" in rc.first_action
    assert "x3" not in rc.first_action and "5e-6" not in rc.first_action


def test_a_reward_the_config_builds_of_length_alone_gets_its_correctness_term_first():
    """verl on TensorBoard, reward = length only (``reward.weights: {length: 1.0}``), no term
    logged: the held-out score fell while the length drifted, and the first action was the
    length exploit's generic fix (helper-31); its TRL twin, whose terms are logged, got "add a
    reward term that pays correct answers". The config names the terms: the same action."""
    rc = _trial("length_only_reward").root_cause
    assert rc.first_action.startswith("add a reward term that pays correct answers"), rc
    assert "no reward term the config names pays correct answers (length is all the reward)" \
        in rc.summary, rc.summary


def test_a_length_cost_that_shortened_the_answers_is_named_with_its_weight():
    """reward = exact + 0.2 format - 8 x length/max_len: completions fell 4.09 -> 1.02 tokens
    and the held-out score fell. The first action named "a length or cost reward" only in the
    else-branch of a generic look at short completions (helper-31)."""
    first = _trial("cost_hack_len_-8").root_cause.first_action
    assert "cut the length_reward term (weight -8 in the config" in first, first
    assert "gate it on correctness" in first


def test_a_length_term_is_paid_in_the_direction_its_weight_says():
    """TRL logs each reward function's raw output: a length term falling with the length is
    paid to fall only when the config charges it (a negative weight)."""
    from dataclasses import replace as dc_replace

    from grpo_doctor.rules import length_hacking

    n = 60
    length = np.linspace(8, 1.5, n)
    run = make_run(reward=np.linspace(0.2, 0.6, n), completion_length=length,
                   rewards__length_reward__mean=length / 10)
    for weights, named in (([1.0, -8.0], True), ([1.0, 8.0], False), (None, False)):
        config = {"reward_funcs": ["accuracy_reward", "length_reward"]}
        if weights is not None:
            config["reward_weights"] = weights
        said = length_hacking._length_term_paid(dc_replace(run, config=config), shorter=True)
        assert (said is not None) == named, (weights, said)


def test_an_adam_epsilon_that_swamps_the_gradient_is_why_the_policy_never_moved():
    """adam_epsilon 1 (the default is 1e-8): every step lr * g / eps, KL 2e-4 after 200 steps
    with 98% of groups mixed. It read INCONCLUSIVE ("reward not improving: it never left its
    level"); the lr it would have blamed is the model's healthy 1e-4."""
    d = _trial("adam_eps_1")
    assert d.status == "warning"
    rc = d.root_cause
    assert "never left its reference" in rc.summary, rc.summary
    assert "adam_epsilon 1 -> 1e-8" in rc.first_action, rc.first_action
    assert "100000x the recipe's 1e-5 ceiling" in rc.first_action  # not "1e+05x"
    assert "learning_rate" not in rc.first_action


def test_a_given_config_is_said_by_the_settings_the_advice_reads():
    """--train-config of 25 keys beside a CSV: the note named all 25; now the ones the advice
    reads, and how many others came with them."""
    run = make_run(reward=np.linspace(0.1, 0.9, 60))
    given = {"learning_rate": 1e-6, "beta": 0.04, "seed": 1, "run_name": "x", "logging_steps": 1}
    note = with_given_config(run, given).notes[-1]
    assert note.endswith("names none of them): beta, learning_rate and 3 more keys"), note


@given(st.floats(1e-12, 1e12, allow_nan=False))
def test_a_knob_value_reads_as_a_config_writes_it(x):
    """Never "1e+05": a factor of 99999.99 is 100000; small values are 1e-8, not 1e-08."""
    from grpo_doctor.text import knob_value

    said = knob_value(x)
    assert "e+" not in said and "e-0" not in said, said
    assert float(said) == pytest.approx(x, rel=0.06, abs=0.5)


@pytest.mark.parametrize("source,frozen", [("train/kl", True), ("actor/kl_loss", True),
                                           ("actor/reward_kl_penalty", False),
                                           ("ppo/mean_non_score_reward_kl", False)])
def test_a_policy_that_never_moved_is_read_off_a_true_kl_only(source, frozen):
    """A KL of 2e-5 over 150 points with mixed groups and a flat reward: a policy that never
    left its reference, unless the column is beta x KL (a penalty: small by beta's factor)."""
    from dataclasses import replace as dc_replace

    n = 150
    rng = np.random.default_rng(5)
    run = make_run(train__reward=0.5 + 0.02 * np.sin(np.arange(n) * 2.1),  # no trend
                   train__kl=np.abs(2e-5 * (1 + rng.normal(0, 0.1, n))),
                   train__frac_reward_zero_std=np.full(n, 0.1))
    run = dc_replace(run, mapping={**run.mapping, "kl": source}, config={"beta": 0.04})
    said = diagnose(run).check("no_progress").summary
    assert ("never left its reference" in said) == frozen, said


def test_a_jump_the_run_solved_its_task_through_asks_for_no_roll_back():
    """The lr jumped 1e-4 -> 2e-3 at step 61 and the held-out score still ended at 0.93
    (verl/CSV): "roll back to before step 61" would throw away a solved run (helper-32);
    its TensorBoard twin already said "no roll-back"."""
    first = _trial("jump_lr_2e-3_at_60_verl").root_cause.first_action
    assert first.startswith("no roll-back: the run came through it and solved its task; for "
                            "the next run, actor_rollout_ref.actor.optim.lr back at 1e-4"), first


def test_a_reward_that_never_moved_beside_a_setting_far_outside_is_a_finding():
    """lr 1e-7 (1000x below this model's start) on a log with no KL (beta 0): the reward
    stayed within its noise for 150 points, INCONCLUSIVE, and the lr was "setup far outside
    the recipe, no finding here shows its harm yet". The setting is the evidence the curves
    lack; the same curves with the recipe's lr stay inconclusive."""
    from dataclasses import replace as dc_replace

    from grpo_doctor.recipe import flat_config

    run = load_runs(TRIAL / "lr_1e-7.csv")[0]
    run = dc_replace(run, frame=run.frame.drop(columns=["kl", "kl_coef", "learning_rate"]))
    cfg = flat_config(json.loads((TRIAL / "lr_1e-7.config.json").read_text()))
    cfg["actor_rollout_ref.actor.kl_loss_coef"] = 0.0
    d = diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config=cfg))
    assert d.status == "warning"
    check = d.check("no_progress")
    assert check.summary.startswith("not learning: reward up only within its noise"), check
    assert check.first_alert_step == 100
    assert "actor_rollout_ref.actor.optim.lr 1e-7 -> 1e-4" in d.root_cause.first_action
    assert not any("no finding here shows its harm" in n for n in d.notes), d.notes
    cfg["actor_rollout_ref.actor.optim.lr"] = 1e-4
    assert diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config=cfg)).status \
        == "inconclusive"


def test_a_slow_learner_is_no_overfit_and_its_low_lr_is_the_first_thing_to_raise():
    """lr 1e-5 on a model whose start is 1e-4 (helper-33): the held-out score crawled 0.30 ->
    0.39, still rising, while the noisy train reward fell from a peak: "roll back to step
    142" (held-out was higher after it) and "lr 1e-5 -> 5e-6" (below the recipe's floor).
    No over-fitting while the task kept improving; the note says the lr is the step to try."""
    d = _trial("lr_1e-5")
    overfit = d.check("reward_overfit")
    assert not overfit.fired and "held-out score kept rising" in overfit.summary, overfit
    assert not any(p.rollback_step for p in d.plan)
    note = next(n for n in d.notes if "still low" in n)
    assert "1e-5 is 10x below the recipe's start of 1e-4" in note, note
    assert note.endswith("(actor_rollout_ref.actor.optim.lr 1e-5 -> 1e-4)"), note


def test_a_format_term_weighed_below_zero_is_a_sign_to_flip_from_the_initial_model():
    """reward_weights [1.0, -1.0] for accuracy and format (helper-33): the policy dropped the
    format (0.67 -> 0.02) and the held-out score fell from step 5. It read "all of the gain
    comes from format_reward" and "audit ... add a second verifier"."""
    d = _trial("format_weight_neg1")
    first = d.root_cause.first_action
    assert first.startswith("restart from the initial model"), first
    assert "format_reward's weight -1 -> 1 (a negative weight on a format term" in first, first
    gaming = d.check("format_gaming")
    assert "format_reward falling" in gaming.summary and "negative weight (-1)" \
        in gaming.summary, gaming.summary
    assert str(gaming.remedies[0]).startswith("make format_reward's weight positive")


def test_a_length_penalty_weighed_below_zero_is_no_flipped_sign():
    from dataclasses import replace as dc_replace

    from grpo_doctor.rules.signals import flipped_terms

    run = make_run(reward=np.zeros(3))
    run = dc_replace(run, config={"reward_funcs": ["accuracy", "format", "length_penalty",
                                                   "no_cheating"],
                                  "reward_weights": [1.0, -0.5, -2.0, -1.0]})
    assert flipped_terms(run) == [("format", -0.5)]


def test_bare_reward_weights_name_the_logged_terms_their_weighted_sum_fits():
    """TRL's reward_weights is a bare list in the order of the reward functions, which no
    config holds: the logged terms (here in another column order) are matched to the weights
    by the one assignment whose weighted sum is the logged reward."""
    from dataclasses import replace as dc_replace

    from grpo_doctor.rules.signals import configured_terms, configured_weight, flipped_terms

    rng = np.random.default_rng(5)
    accuracy = rng.uniform(0, 1, 40).round(4)
    fmt = rng.uniform(0.5, 1, 40).round(4)
    length = rng.uniform(0, 0.3, 40).round(4)
    run = make_run(**{"rewards/format_reward/mean": fmt, "rewards/length/mean": length,
                      "rewards/accuracy_reward/mean": accuracy,
                      "reward": (accuracy - 1.0 * fmt - 8.0 * length).round(4)})
    run = dc_replace(run, config={"reward_weights": [1.0, -1.0, -8.0]})
    assert configured_terms(run) == ("accuracy_reward", "format_reward", "length")
    assert configured_weight(run, "format_reward") == -1.0
    assert flipped_terms(run) == [("format_reward", -1.0)]
    # No assignment fits (the reward is not their weighted sum), or two fit alike (equal
    # terms): the weights name nothing.
    noisy = dc_replace(run, frame=run.frame.assign(reward_mean=rng.uniform(0, 1, 40)))
    assert configured_terms(noisy) == ()
    same = make_run(**{"rewards/a/mean": fmt, "rewards/b/mean": fmt, "reward": 0.5 * fmt})
    assert configured_terms(dc_replace(same, config={"reward_weights": [1.0, -0.5]})) == ()


def test_a_negative_format_weight_without_term_names_is_the_first_action():
    """The trial run whose format term was weighed -1, given as a TRL config holds it
    (reward_weights alone: the names were the trainer's arguments, not the config's), as a
    checkpoint's training_args.bin or a W&B config would carry it."""
    cfg = json.loads((TRIAL / "format_weight_neg1.config.json").read_text())
    cfg.pop("reward_funcs")
    from grpo_doctor.recipe import flat_config

    run = load_runs(TRIAL / "format_weight_neg1.csv")[0]
    d = diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(cfg)))
    assert "format_reward's weight -1 -> " in d.root_cause.first_action, d.root_cause


def test_a_run_converging_on_its_training_prompts_only_says_the_held_out_score_did_not():
    """One training prompt (helper-33): the training score 0.95, the held-out score stuck at
    0.70. It read "entropy spent as the task is solved (convergence)": nothing said the task
    was not."""
    rc = _trial("prompt_pool_1").root_cause
    assert "the held-out score is not" in rc.summary, rc.summary
    assert "converging on its training prompts (reward 0.919 -> 1.15), not on the task: the " \
        "held-out score holds at 0.698 against 0.953 on them" in rc.first_action, rc.first_action
    # What to change for the next run is what it trains on, not the pace of its sharpening.
    assert rc.first_action.endswith("for the next run: more, and more varied, training "
                                    "prompts, drawn as the evaluation's are"), rc.first_action
    assert "learning_rate" not in rc.first_action, rc.first_action


def test_a_step_above_the_ceiling_comes_with_the_prompts_on_a_run_converging_on_them():
    """The same one-prompt run at 2e-3, 4x the model's ceiling: the prompts first, the
    recipe's lr beside them (neither alone is the whole next run)."""
    from dataclasses import replace as dc_replace

    from grpo_doctor.recipe import flat_config

    run = load_runs(TRIAL / "prompt_pool_1.csv")[0]
    frame = run.frame.copy()
    frame["learning_rate"] = frame["learning_rate"] * 20
    cfg = flat_config(json.loads((TRIAL / "prompt_pool_1.config.json").read_text()))
    cfg["learning_rate"] = 2e-3
    rc = diagnose(dc_replace(run, frame=frame),
                  DoctorConfig(recipe=TINY_RECIPE, run_config=cfg)).root_cause
    action = rc.first_action
    assert "for the next run: more, and more varied, training prompts, drawn as the " \
        "evaluation's are; and learning_rate 0.002 -> 2.5e-4" in action, action


@pytest.mark.parametrize("grad,said", [(5.0, True), (1.5, False), (0.8, False)])
def test_updates_clipped_on_every_step_are_said(grad, said):
    """Rewards x20 with scale_rewards off (helper-33): a pre-clip grad norm of 1.5-10 against
    max_grad_norm 1 on all 200 steps, and the report said nothing."""
    n = 60
    run = make_run(reward=np.linspace(0.1, 0.8, n),
                   grad_norm=grad * (1 + 0.1 * np.sin(np.arange(n))))
    d = diagnose(run, DoctorConfig(run_config={"max_grad_norm": 1.0, "scale_rewards": False}))
    note = next((n for n in d.notes if "every update was clipped" in n), None)
    assert (note is not None) == said, d.notes
    if said:
        # Not "the clip, not the learning rate, set the step": Adam's step follows the lr
        # whatever the gradient's scale (helper-36).
        assert note.endswith("every update was clipped, so the clip bounds every batch, not "
                             "the rare spike it is for (the rewards' scale left in the "
                             "advantages: scale_rewards false)"), note
        # A config that says nothing of the scaling, or a critic's advantage (GAE), gets no
        # reason; it read "(...: None none)" on real verl PPO runs (helper-37).
        for config in ({"max_grad_norm": 1.0},
                       {"max_grad_norm": 1.0, "algorithm": {"adv_estimator": "gae",
                                                           "norm_adv_by_std_in_grpo": False}}):
            again = diagnose(run, DoctorConfig(run_config=config))
            (clipped,) = [n for n in again.notes if "every update was clipped" in n]
            assert clipped.endswith("not the rare spike it is for"), clipped


_CONFIG_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["reward_funcs", "reward_weights", "reward", "weights",
                                       "format", "length_reward", "x"]), inner, max_size=4),
    max_leaves=12)


# No deadline: a nested config is built and read in well under a second, but a loaded CI
# machine once took longer than hypothesis's default 200 ms for one example.
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["reward_funcs", "reward_weights", "reward", "script"]),
                       _CONFIG_VALUES, max_size=4))
def test_reward_terms_are_read_from_any_config_without_failing(config):
    """Whatever shape a config gives its reward's terms and weights (a list of names, a table,
    numbers as text, nesting), reading them never raises, and a weight is a number or None."""
    from dataclasses import replace as dc_replace

    from grpo_doctor.rules.signals import configured_terms, configured_weight, flipped_terms

    run = dc_replace(make_run(reward=np.zeros(3)), config=config)
    for name in configured_terms(run):
        assert isinstance(name, str)
        weight = configured_weight(run, name)
        assert weight is None or isinstance(weight, float)
    assert all(w < 0 for _, w in flipped_terms(run))


def test_a_schedule_that_reached_zero_mid_run_is_why_learning_stopped():
    """A cosine that reached 0 at step 50 of 200 (helper-34): the held-out score froze at
    0.60 for 150 steps and the run read HEALTHY ("the reward improved")."""
    n = 200
    s = np.arange(1, n + 1)
    lr = np.where(s <= 50, 1e-4 * 0.5 * (1 + np.cos(np.pi * s / 50)), 0.0)
    learned = np.minimum(s, 50) / 50
    d = diagnose(make_run(reward=0.5 + 0.3 * learned + 0.03 * np.sin(s * 2.1),
                          eval__score=0.45 + 0.15 * learned, grad_norm=np.full(n, 0.6),
                          learning_rate=lr))
    rc = d.root_cause
    assert d.status == "warning" and rc.mode == "no_learning_signal", d
    # (At step 49 the cosine is at 1e-7, a thousandth of its peak: no step either.)
    assert rc.first_action.startswith("fix the learning-rate schedule: it reached nearly 0 at "
                                      "step 49 of 200"), rc.first_action
    # A schedule that reaches 0 at its last step is no stop.
    ends = np.where(s < n, 1e-4 * 0.5 * (1 + np.cos(np.pi * s / n)), 0.0)
    assert not diagnose(make_run(reward=0.5 + 0.3 * s / n, grad_norm=np.full(n, 0.6),
                                 learning_rate=ends)).check("no_learning_signal").fired


def test_a_converged_run_lowers_an_lr_above_the_ceiling_below_it_for_the_next_run():
    """A warm-up to 1e-3 (2x the model's 5e-4 ceiling) that solved its task: "for the next
    run: learning_rate 0.001 -> 5e-4", the entropy rule's halving, landed on the ceiling
    (helper-34); its 1.5e-3 twin got the recipe's fix."""
    first = _trial("warmup_to_1e-3_20").root_cause.first_action
    assert first.startswith("nothing urgent"), first
    assert "for the next run: learning_rate 0.001 -> 2.5e-4 (learning_rate 0.001 is 2x the " \
        "recipe's 5e-4 ceiling" in first, first


@pytest.mark.parametrize("config,zero_std,first", [
    # fp16 ruled out by the config, equal-reward groups at the NaN step: the division leads
    ({"fp16": False, "scale_rewards": True}, 0.125, "the advantage's division"),
    # no config: the dtype stays the likelier cause (the frameworks' divisions have an epsilon)
    ({}, 0.125, "the model and optimizer dtype"),
    # the std scaling off: no 0/0 there; the dtype cleared, so the rest of the list
    ({"fp16": False, "scale_rewards": False}, 0.125, "a 4-bit adapter's compute dtype"),
    ({"fp16": False}, 0.0, "a 4-bit adapter's compute dtype"),
])
def test_a_nan_from_the_first_update_checks_first_what_the_config_and_log_leave(
        config, zero_std, first):
    """adv_eps 0 with std scaling (helper-35): NaN at step 1 with 12% of groups equal, and the
    config saying fp16 false; the first action led with "fp16 weights ... the loss scaler",
    which the config rules out, and said "divides by zero" last, untied to the advantage."""
    n = 3
    logged_nan = np.array(["nan"] * n, dtype=object)  # a NaN the trainer wrote, not a gap
    run = make_run(reward=np.full(n, 0.36), frac_reward_zero_std=np.full(n, zero_std),
                   loss=logged_nan, grad_norm=logged_nan, kl=logged_nan)
    rc = diagnose(run, DoctorConfig(run_config=config)).root_cause
    action = rc.first_action
    assert action.startswith("a numerical setup problem from the first update"), action
    checked = action.split("check ", 1)[1]
    assert checked.startswith(first), action
    assert ("fp16 weights" in action) is (not config), action
    assert ("the advantage's division" in action) is (
        zero_std > 0 and config.get("scale_rewards", True) is not False), action


@pytest.mark.parametrize("beta,plateau,held", [(1.0, 0.63, True), (1.0, 0.93, False),
                                               (0.04, 0.63, False)])
def test_a_leash_that_stops_the_task_short_of_solved_is_the_first_action(beta, plateau, held):
    """beta 1 (helper-35): the held-out score climbed to 0.6 by step 50 and sat there to step
    200, KL 0.03, where its twins reached 0.9; HEALTHY with the beta in a note ("no finding it
    causes here"). Not at a plateau that is solved, nor at the recipe's beta."""
    n = 200
    s = np.arange(1, n + 1)
    climb = np.minimum(s / 50, 1)
    score = np.where(s % 5 == 0, 0.48 + (plateau - 0.48) * climb + 0.01 * np.sin(s), np.nan)
    run = make_run(reward=0.6 + 0.3 * climb + 0.02 * np.sin(s * 1.3), eval__score=score,
                   kl=0.03 + 0.003 * np.sin(s * 0.7), frac_reward_zero_std=np.full(n, 0.2),
                   grad_norm=np.full(n, 0.6))
    d = diagnose(run, DoctorConfig(run_config={"beta": beta, "learning_rate": 1e-6}))
    check = d.check("no_progress")
    assert check.fired is held, check.summary
    if held:
        assert "stopped short of solved" in check.summary and "no gain since step 105" \
            in check.summary, check.summary
        assert d.root_cause.first_action.startswith("beta 1 -> 0.01-0.05"), \
            d.root_cause.first_action


def test_a_setting_far_outside_with_no_finding_gives_its_fix_in_the_note():
    """temperature 2 (helper-35): "setup far outside the recipe, with no finding it causes
    here" read as reassurance on a run it visibly slowed; the note gives the fix."""
    n = 60
    run = make_run(reward=np.linspace(0.1, 0.8, n), entropy=np.full(n, 1.0))
    d = diagnose(run, DoctorConfig(run_config={"temperature": 2.0}))
    assert "setup far outside the recipe, no finding here shows its harm yet; for the next " \
        "run: temperature 2 -> 1.0 (2 is above the recipe's 1-1.2)" in d.notes, \
        d.notes


@pytest.mark.parametrize("from_start", [True, False])
def test_a_training_side_solved_from_the_first_logs_learned_nothing_by_heart(from_start):
    """temperature 0.3 (helper-35): the correctness term at 1 from step 1, the held-out score
    (sampled at temperature 1) at 0.46 -> 0.54; no_progress said "the policy learned its
    training set" and, with no config, the first action was "train on more prompts". What
    the log shows is rollouts that score what the held-out set does not."""
    n = 200
    s = np.arange(1, n + 1)
    correct = np.ones(n) if from_start else np.minimum(0.4 + s / 60, 1.0)
    held = np.where(s % 5 == 0, 0.46 + 0.08 * s / n + 0.01 * np.sin(s), np.nan)
    run = make_run(reward=correct + 0.2, rewards__accuracy_reward__mean=correct,
                   rewards__format_reward__mean=np.ones(n), eval__score=held)
    d = diagnose(run)
    check = d.check("no_progress")
    assert check.fired, check.summary
    assert ("at its top from the first logs" in check.summary) is from_start, check.summary
    assert ("learned its training set" in check.summary) is not from_start, check.summary
    first = d.root_cause.first_action
    if from_start:
        assert first.startswith("check the rollout temperature against the evaluation's"), first
    else:
        assert first.startswith("train on more prompts"), first


def test_trial_36_runs_read_as_the_expert_reads_them():
    """Trial 36's runs the tool misread (helper-35), each as its first action now reads."""
    nan = _trial("adv_eps_0").root_cause.first_action
    assert "check the advantage's division by its group's reward std" in nan.split("; then")[0]
    assert "fp16 weights" not in nan
    beta = _trial("beta_1")
    assert beta.root_cause.first_action.startswith(
        "actor_rollout_ref.actor.kl_loss_coef 1 -> 0.01-0.05"), beta.root_cause.first_action
    cold = _trial("temperature_0.3").root_cause.first_action
    assert cold.startswith("temperature 0.3 -> 1.0"), cold
    # Without its config, the log alone: samples colder than the evaluation's, not prompts.
    alone = diagnose(load_runs(TRIAL / "temperature_0.3.csv")[0],
                     DoctorConfig(recipe=TINY_RECIPE)).root_cause.first_action
    assert alone.startswith("check the rollout temperature against the evaluation's"), alone
    burst = _trial("lr_3e-3_clip_100")
    assert "LoRA" not in burst.root_cause.first_action
    assert not burst.check("no_progress").fired and not burst.check("reward_hacking").fired


def test_a_correctness_term_weighed_at_zero_is_the_first_action():
    """reward.weights {correct: 0, format: 1} (helper-36): the reward at 0.98 on the format
    alone, the held-out score flat at 0.3; the config made it worse: "correct at 0.984 ...
    the policy learned its training set: train on more prompts". Without the config the log
    asks what the reward pays."""
    n = 200
    s = np.arange(1, n + 1)
    run = make_run(reward=0.9 + 0.08 * np.minimum(s / 50, 1) + 0.005 * np.sin(s),
                   eval__score=np.where(s % 5 == 0, 0.3 + 0.01 * np.sin(s), np.nan))
    weights = {"reward": {"weights": {"correct": 0.0, "format": 1.0}}}
    rc = diagnose(run, DoctorConfig(run_config=weights)).root_cause
    assert rc.first_action.startswith("correct's weight 0 -> 1 in the config's reward weights "
                                      "(a correctness term weighed at 0 pays nothing for a right "
                                      "answer: the reward is format alone)"), rc.first_action
    assert "learned its training set" not in rc.summary, rc.summary
    paid = diagnose(run, DoctorConfig(run_config={"reward": {"weights": {
        "correct": 1.0, "format": 0.2}}})).root_cause
    assert "weight 0" not in paid.first_action, paid.first_action


@pytest.mark.parametrize("held_end,said", [(0.48, True), (0.6, True), (0.8, False)])
def test_a_low_held_out_score_beside_solved_training_prompts_is_said_in_the_note(
        held_end, said):
    """Four training prompts (helper-36): the accuracy term 0.23 -> 0.94, the held-out score
    0.31 -> 0.42; HEALTHY with "the task's own score is still low", nothing on the gap. Not a
    finding (a held-out set harder than the training prompts is common), but the note says
    the training score beside it. Above the low mark too (trial 40's pool of 8 prompts: 0.93
    on them, 0.58 held out, and nothing said)."""
    n = 200
    s = np.arange(1, n + 1)
    acc = np.minimum(0.23 + 0.71 * s / 60, 0.94) + 0.01 * np.sin(s)
    held = np.where(s % 5 == 0, 0.28 + (held_end - 0.28) * s / n + 0.01 * np.sin(s), np.nan)
    d = diagnose(make_run(reward=acc + 0.2, rewards__accuracy_reward__mean=acc,
                          rewards__format_reward__mean=np.full(n, 0.2), eval__score=held))
    note = next((x for x in d.notes if "the training score reached" in x), None)
    assert (note is not None) is said, d.notes
    if said:
        assert d.status == "healthy" and "carries over little" in note, note


def test_trial_37_runs_read_as_the_expert_reads_them():
    """Trial 37's runs the tool misread (helper-36): a burst of lr 5e-3 for 20 steps the run
    came through to a held-out 0.915, told to restart; a correctness term weighed at 0, told
    to train on more prompts."""
    burst = _trial("burst_5e-3_20").root_cause.first_action
    assert burst.startswith("no roll-back: the run came through it and solved its task; for "
                            "the next run, learning_rate at no more than 1e-4 from the first "
                            "update"), burst
    unpaid = _trial("correct_weight_0").root_cause.first_action
    assert unpaid.startswith("correct's weight 0 -> 1 in the config's reward weights"), unpaid


def test_a_budget_that_cut_answers_from_the_first_log_comes_before_a_group_of_2():
    """96% of completions cut at a 128-token cap from the first log, and a group of 2 behind
    equal-reward groups from step 50 (helper-38, a minesweeper run read with a G=2 config):
    "num_generations 2 -> 16" came first. The budget is the setup problem: while answers
    are cut the groups are all-wrong whatever their size; the group is item 2."""
    rng = np.random.default_rng(4)
    n = 50
    s = np.arange(10, 10 * n + 1, 10)
    run = make_run(steps=s, reward=rng.normal(-1.0, 2.0, n),
                   truncation_ratio=np.clip(0.96 - 0.12 * s / s[-1], 0, 1),
                   response_length_max=np.full(n, 128.0),
                   response_length_mean=np.full(n, 125.0),
                   zero_std_fraction=np.where(s >= 50, 0.7, 0.2) + rng.normal(0, 0.02, n))
    d = diagnose(run, DoctorConfig(run_config={"num_generations": 2}))
    assert d.root_cause.mode == "length_hacking", d.root_cause
    assert d.root_cause.first_action.startswith("raise max_completion_length"), d.root_cause
    assert any(p.action.startswith("also outside the recipe: num_generations 2 -> 16")
               for p in d.plan[1:3]), [p.action for p in d.plan]


def test_verls_kl_switches_decide_which_coefficient_counts():
    """verl applies kl_loss_coef only with actor.use_kl_loss, kl_ctrl.* only with
    algorithm.use_kl_in_reward; both off by default, the coefficients left at 0.001 in the
    saved config. Both off is beta 0 (the switch named, not "0.001 below the recipe"); an
    unused kl_ctrl.type is no "adaptive KL off" (trial 39)."""
    def verl(loss: bool, reward: bool, coef: float = 0.001) -> recipe.Setup:
        return recipe.read_config({
            "actor_rollout_ref": {"actor": {"use_kl_loss": loss, "kl_loss_coef": coef}},
            "algorithm": {"use_kl_in_reward": reward,
                          "kl_ctrl": {"type": "fixed", "kl_coef": 0.02}}})

    off = verl(False, False).get("beta")
    assert off.verdict == recipe.OFF and off.value_text == "False"
    assert off.fix() == ("actor_rollout_ref.actor.use_kl_loss False -> True, with "
                         "actor_rollout_ref.actor.kl_loss_coef 0.01-0.05")
    assert verl(False, False).get("adaptive_kl").verdict == recipe.NOT_SET
    on = verl(True, False).get("beta")
    assert on.source == "actor_rollout_ref.actor.kl_loss_coef" and on.verdict == recipe.LOW
    in_reward = verl(False, True)
    assert in_reward.get("beta").source == "algorithm.kl_ctrl.kl_coef"
    assert in_reward.get("beta").verdict == recipe.OK
    assert in_reward.get("adaptive_kl").verdict == recipe.OFF
    # OpenRLHF's --use_kl_loss moves its one coefficient into the loss: no switch here.
    assert recipe.read_config({"use_kl_loss": True, "init_kl_coef": 0.02}).get(
        "beta").verdict == recipe.OK
    assert recipe.read_config({"use_kl_loss": True}).get("beta").value_text != "False"


def test_the_inference_engines_dtype_is_not_the_trained_weights():
    """verl's actor_rollout_ref.rollout.dtype is vLLM's (bf16 or fp16 beside fp32 training):
    it had been shown as the training dtype. The actor's, NeMo-RL's policy.precision, are."""
    verl = {"actor_rollout_ref": {"rollout": {"dtype": "float16"},
                                  "actor": {"fsdp_config": {"param_dtype": "bf16"}}}}
    assert recipe.read_config(verl).get("dtype").source == \
        "actor_rollout_ref.actor.fsdp_config.param_dtype"
    only_rollout = {"actor_rollout_ref": {"rollout": {"dtype": "float16"}}}
    assert recipe.read_config(only_rollout).get("dtype").verdict == recipe.NOT_SET
    nemo = {"policy": {"precision": "float16",
                       "generation": {"vllm_cfg": {"precision": "bfloat16"}}}}
    assert recipe.read_config(nemo).get("dtype").value == "float16"


def test_a_reward_stuck_at_the_logs_highest_says_it_may_be_full_marks():
    """Reward exactly 1.2 (correct + format) on most steps, the groups all equal: with no
    reward term logged to say what 1.2 pays, "make the reward reachable" alone misreads
    prompts the policy solves (trial 39's temperature 0.3); both readings are said. A value
    below the log's highest gets the reward check alone."""
    rng = np.random.default_rng(3)
    n = 120
    top = np.where(rng.random(n) < 0.6, 1.2, 1.2 - rng.uniform(0.05, 0.4, n))
    d = diagnose(make_run(reward=top, frac_reward_zero_std=np.full(n, 0.95)))
    said = " ".join(p.action for p in d.plan)
    assert "it is the log's highest reward: if that is full marks, these prompts are solved" \
        in said, said
    assert "then, if it is not full marks, make the reward reachable" in said
    low = np.where(rng.random(n) < 0.7, 0.0, rng.uniform(0.05, 0.3, n))
    d = diagnose(make_run(reward=low, frac_reward_zero_std=np.full(n, 0.95)))
    said = " ".join(p.action for p in d.plan)
    assert "exactly 0 on" in said and "full marks" not in said, said


def test_a_clip_written_as_null_is_no_clipping():
    """NeMo-RL's ``policy.max_grad_norm: null`` and the Trainer's ``max_grad_norm: None``
    clip nothing (both clip only when it is set); a config without the key says nothing."""
    nemo = recipe.read_config({"policy": {"max_grad_norm": None}}).get("max_grad_norm")
    assert nemo.verdict == recipe.OFF and nemo.source == "policy.max_grad_norm"
    assert nemo.fix() == "policy.max_grad_norm none -> 1.0"
    assert recipe.read_config({"learning_rate": 1e-6}).get("max_grad_norm").verdict == \
        recipe.NOT_SET


def test_a_term_every_sample_meets_is_not_one_that_never_fires():
    """format_reward at 1.0 on every step beside groups nearly all equal: "a task too hard
    for it to ever fire" (trial 40) said the opposite of the numbers; a term at 0 on every
    step still reads as one that never fires."""
    rng = np.random.default_rng(4)
    n = 150
    acc = (rng.random(n) < 0.5).astype(float) * 0.1
    for constant, said in ((1.0, "every sample meets it"), (0.0, "to ever fire")):
        d = diagnose(make_run(reward=acc + constant, rewards__accuracy_reward__mean=acc,
                              rewards__format_reward__mean=np.full(n, constant),
                              frac_reward_zero_std=np.full(n, 0.97)))
        plan = " ".join(p.action for p in d.plan)
        assert f"format_reward always {constant:g}" in plan and said in plan, plan


@pytest.mark.parametrize("weights", [[0.0, 1.0], "[0.0, 1.0]", "(0, 1)"])
def test_reward_weights_kept_as_text_by_a_tracker_are_read(weights):
    """MLflow keeps every param as text: TRL's reward_weights "[0.0, 1.0]" had been passed
    over, and the correctness term weighed at 0 read as format gaming to gate (trial 40)."""
    from grpo_doctor.rules.signals import configured_weight

    run = make_run(reward=np.linspace(0.1, 0.5, 40),
                   rewards__accuracy_reward__mean=np.full(40, 0.3),
                   rewards__format_reward__mean=np.linspace(0.1, 0.5, 40))
    run.config.update({"reward_funcs": "['accuracy_reward', 'format_reward']",
                       "reward_weights": weights})
    assert configured_weight(run, "accuracy_reward") == 0.0
    assert configured_weight(run, "format_reward") == 1.0


def test_a_reference_interval_with_the_sync_off_is_no_interval():
    """TRL's ref_model_sync_steps 512 beside sync_ref_model False: the reference never
    updates; the interval had been listed as a setting within the recipe (trial 40)."""
    off = recipe.read_config({"sync_ref_model": False, "ref_model_sync_steps": 512})
    assert off.get("ref_model_sync_steps").verdict == recipe.NOT_SET
    on = recipe.read_config({"sync_ref_model": True, "ref_model_sync_steps": 512})
    assert on.get("ref_model_sync_steps").value == 512


def test_a_format_term_weighed_above_the_answer_is_said_for_the_next_run():
    """reward_weights [1, 5] (format 5x the answer) on a run that learned all the same: the
    first setting for the next run, the line a healthy report and the audit show (trial 40 had
    it silent; the audit then showed only the recipe's lr: helper-57); equal weights say
    nothing."""
    n = 120
    s = np.arange(n)
    acc = 0.3 + 0.5 * s / n
    fmt_term = np.minimum(1.0, 0.5 + s / 40)
    for weights, said in (([1.0, 5.0], True), ([1.0, 1.0], False)):
        run = make_run(reward=acc * weights[0] + fmt_term * weights[1],
                       rewards__accuracy_reward__mean=acc,
                       rewards__format_reward__mean=fmt_term)
        run.config.update({"reward_funcs": ["accuracy_reward", "format_reward"],
                           "reward_weights": weights})
        notes = diagnose(run).notes
        shown = recipe.next_run_settings(notes)
        assert (shown is not None and shown[1].startswith(
            "accuracy_reward's weight 1 -> 5, or format_reward's 5 -> 1")) is said, notes
        assert ("format gaming grows from" in " ".join(notes)) is said, notes


def test_a_run_that_had_its_sft_is_not_told_to_warm_up_with_sft():
    """SCU's console log prints 40 SFT loss lines before GRPO: "an SFT warm-up on the output
    format" beside it (helper-42) asked for what the run had done."""
    n = 72
    reward = np.zeros(n)
    reward[[5, 17, 30, 41, 55, 63, 66, 70]] = 0.25
    for sft, said in ((False, True), (True, False)):
        run = make_run(reward=reward, reward_std=(reward > 0) * 0.3,
                       frac_reward_zero_std=np.where(reward > 0, 0.5, 1.0))
        if sft:
            run.config["sft_before"] = True
        plan = " ".join(p.action for p in diagnose(run).plan)
        assert ("an SFT warm-up" in plan) is said, plan


def test_a_setting_outside_but_not_a_cause_alone_says_its_fix():
    """epsilon 0.6 beside an unrelated finding: the note said "epsilon 0.6 is 2x the top of
    the recipe's 0.1-0.3" and left the value to guess (helper-43)."""
    rng = np.random.default_rng(8)
    n = 120
    run = make_run(reward=0.5 + rng.normal(0, 0.02, n), frac_reward_zero_std=np.full(n, 0.95))
    d = diagnose(run, DoctorConfig(run_config={"epsilon": 0.6, "learning_rate": 1e-6}))
    # Linked to no finding here (groups all equal): no "contributing risk" (verl's beta 0.001
    # had been one beside a NaN, trial 50), a setting for the next run.
    note = next((x for x in d.notes if x.startswith("also outside the recipe")), None)
    assert note is not None and (
        "epsilon 0.6 -> 0.2 (0.6 is 2x the top of the recipe's 0.1-0.3)" in note), d.notes
    assert "contributing risk" not in note and "linked to no finding here" in note, note


def test_a_setup_problem_is_named_by_the_finding_it_quotes():
    """Trial 40's correctness weight of 0: "advantage_collapse at step 5" (an early episode
    that cleared) headed format gaming's sentence "from step 7", and audit's root was no
    finding it listed (helper-43). The root is the finding quoted, at its own step."""
    d = _trial("correct_weight_0_tb")
    rc = d.root_cause
    assert rc.first_action.startswith("accuracy_reward's weight 0 -> 1"), rc.first_action
    assert rc.mode == "format_gaming" and rc.step == d.check("format_gaming").onset_step


def test_no_roll_back_while_the_held_out_score_kept_rising_through_it():
    """8 PPO epochs, ratios to 77 from step 5, the held-out score 0.26 -> 0.85 all the while:
    "roll back to a checkpoint from before step 5" threw the run away (helper-43). The
    setting is for the run from its last checkpoint."""
    rng = np.random.default_rng(12)
    n = 200
    s = np.arange(1, n + 1)
    held = np.where(s % 5 == 0, 0.26 + 0.6 * s / n + rng.normal(0, 0.01, n), np.nan)
    run = make_run(reward=0.3 + 0.6 * s / n + rng.normal(0, 0.02, n), eval__score=held,
                   ratio_max=np.where(s >= 5, 20 + rng.normal(0, 2, n), 1.2),
                   ratio_min=np.where(s >= 5, 0.05, 0.9))
    rc = diagnose(run, DoctorConfig(run_config={"num_iterations": 8, "learning_rate": 1e-6})
                  ).root_cause
    assert rc is not None and "num_iterations 8 -> 1" in rc.first_action, rc
    assert rc.first_action.startswith("no roll-back: the held-out score kept rising through "
                                      "it"), rc.first_action


def test_a_low_rollout_temperature_is_the_cause_of_the_kl_drift_it_drives():
    """Temperature 0.3 (far below the recipe's 1-1.2), KL 0.05 -> 0.9 while the reward rises:
    the policy pulled to the sharpened distribution it samples from leaves its reference.
    The first action is the temperature, not a tighter leash (beta 0.04 is inside the
    recipe; trial 41, run 09)."""
    from dataclasses import replace

    n = 150
    t = np.arange(n)
    rng = np.random.default_rng(9)
    run = make_run(kl=0.05 + 0.85 / (1 + np.exp(-(t - 30) / 6)) + rng.normal(0, 0.02, n),
                   reward=0.85 + 0.3 * t / n + rng.normal(0, 0.02, n))
    run = replace(run, config={"temperature": 0.3, "beta": 0.04})
    d = diagnose(run)
    assert d.check("kl_drift").fired
    assert d.root_cause.first_action.startswith("temperature 0.3 -> 1.0")


def test_a_budget_that_cut_most_answers_from_the_first_logs_comes_before_the_entropy_fall():
    """56% of completions cut at a 5-token budget from the first logs, then the entropy
    halves with the reward stalled: the budget is the setup every later finding was learned
    under, so it is the root and the first action, not "lr x0.5" (trial 41, run 11)."""
    from dataclasses import replace

    n = 150
    t = np.arange(n)
    rng = np.random.default_rng(11)
    run = make_run(**{"completions/clipped_ratio": 0.55 + rng.normal(0, 0.03, n),
                      "completions/mean_length": 4.6 + rng.normal(0, 0.1, n),
                      "entropy": 0.32 + 0.37 * np.exp(-np.maximum(t - 12, 0) / 25)
                      + rng.normal(0, 0.01, n),
                      "reward": 0.7 + rng.normal(0, 0.05, n)})
    run = replace(run, config={"max_completion_length": 5, "learning_rate": 1e-6})
    d = diagnose(run)
    assert d.check("entropy_collapse").fired and d.check("length_hacking").fired
    assert d.root_cause.mode == "length_hacking" and d.root_cause.setup
    assert d.root_cause.first_action.startswith("max_completion_length 5 -> ")


def test_trial_agentic_runs_name_their_cause():
    """Trial 41's tool-integrated runs (tests/fixtures/trial/agentic_*): a call reward farmed
    is stopped first, not a tighter leash; a tool that never worked is fixed first, not the
    lr or the format term; turns (NeMo-RL) read as calls above their floor."""
    spam = _trial("agentic_tool_spam")
    assert spam.root_cause.mode == "tool_spam"
    assert spam.root_cause.first_action.startswith(
        "stop paying for calls: the tool_call_reward term (weight 0.3")
    fails = _trial("agentic_tool_fails")
    assert fails.root_cause.mode == "tool_failure" and fails.root_cause.step == 1
    assert fails.root_cause.first_action.startswith("fix the tool")
    turns = _trial("agentic_tool_spam_nemo_turns")
    assert turns.check("tool_spam").fired and turns.check("tool_spam").key_metric == "turns"


def test_no_roll_back_to_a_checkpoint_a_run_that_saves_none_never_wrote():
    """The Trainer's save_strategy "no" (a callback's run, trial 42) or verl's save_freq -1:
    the run broke at step 305 and there is no checkpoint from before it; restart, and save
    some next time. With saving on, the roll-back stands."""
    from dataclasses import replace

    run = _breaks_after(np.full(500, 1e-5), 305)
    for config, said in (({"save_strategy": "no"}, "save_strategy no"),
                         ({"trainer": {"save_freq": -1}}, "trainer.save_freq -1")):
        first = diagnose(replace(run, config=config)).root_cause.first_action
        assert first.startswith(f"restart from the initial model ({said}: no checkpoint"), first
    kept = diagnose(replace(run, config={"save_strategy": "steps"})).root_cause.first_action
    assert kept.startswith("roll back to a checkpoint from before step 305"), kept


def test_real_trl_runs_of_trial_43_read_their_setting_not_a_solved_task_or_an_explosion():
    """Trial 43: runs written by the real TRL 1.16 GRPOTrainer (tests/fixtures/trial/trl_*).
    At temperature 0.2 the reward sat at 1.47 of 1.5 from the first step (entropy 0.011, 75%
    of groups equal) on a policy right 30% of the time at temperature 1: it read "stop here,
    the task is solved", the temperature in a note. On a task out of reach, the grad norm's
    two pre-clip spikes six steps apart (1.84, 1.86; level 0.2-0.6 after, 0 on 87 steps) read
    "unrecovered spike", and the lr its cause, before the prompts."""
    cold = _trial("trl_temperature_0.2")
    assert cold.root_cause.first_action.startswith("temperature 0.2 -> 1.0"), cold.root_cause
    assert "near-greedy" in cold.root_cause.first_action
    assert "(the task is solved)" not in cold.root_cause.summary
    # Sampled at the recipe's temperature, a run at its top is solved: no such call.
    warm = json.loads((TRIAL / "trl_temperature_0.2.config.json").read_text())
    from grpo_doctor.recipe import flat_config

    at_one = diagnose(load_runs(TRIAL / "trl_temperature_0.2.csv")[0], DoctorConfig(
        recipe=TINY_RECIPE, run_config=flat_config({**warm, "temperature": 1.0})))
    assert "temperature" not in at_one.root_cause.first_action, at_one.root_cause
    # The same near-greedy sampling by a cut distribution names the cut: top_p, then top_k.
    for cut, fix in (({"top_p": 0.05}, "top_p 0.05 -> 1.0"), ({"top_k": 1}, "top_k 1 -> ")):
        sharp = diagnose(load_runs(TRIAL / "trl_temperature_0.2.csv")[0], DoctorConfig(
            recipe=TINY_RECIPE, run_config=flat_config({**warm, "temperature": 1.0, **cut})))
        assert sharp.root_cause.first_action.startswith(fix), sharp.root_cause
        assert "near-greedy" in sharp.root_cause.first_action
        # Named first, it is no setting "no finding here shows the harm of" (trial 44).
        assert not any("no finding here shows its harm" in n for n in sharp.notes), sharp.notes
    # Trial 44: a bonus per character drove completions to the 12-token cap from step ~115.
    # The first action was "overlong shaping", and the plan raised the budget, which would
    # feed the bonus; the term that pays for length is the fix.
    paid = _trial("trl_length_bonus")
    first = paid.root_cause.first_action
    assert first.startswith("cap or drop the length_bonus_reward term (it went 1.59 -> 2.4)"), \
        first
    assert not any("max_completion_length" in p.action and "->" in p.action
                   for p in paid.plan), [p.action for p in paid.plan]
    # Trial 44: a lenient check (any digit of the answer anywhere) paid, the exact check
    # logged at weight 0. The reward rose 0.70 -> 0.86 on the lenient term while the exact
    # check stayed at 0.01-0.02: it read an entropy warning, "lr 1e-4 -> 2.5e-6" first, and
    # reward_hacking "needs a held-out score". The unpaid check is that score.
    lenient = _trial("trl_lenient_check")
    hacked = lenient.check("reward_hacking")
    assert hacked.fired and "exact_correctness" in hacked.summary, hacked.summary
    assert lenient.root_cause.first_action.startswith(
        "check digit_overlap_reward on a few completions against exact_correctness"), \
        lenient.root_cause.first_action
    # Live at step 80 the reward had gone 0.70 -> 0.75 -> 0.72 on a reward swinging about
    # 0.05 a step: no over-fitting (the callback had warned on it).
    from grpo_doctor.recipe import flat_config as _flat

    at_80 = diagnose(load_runs(TRIAL / "trl_lenient_check.csv")[0].truncated(80), DoctorConfig(
        recipe=TINY_RECIPE, run_config=_flat(json.loads(
            (TRIAL / "trl_lenient_check.config.json").read_text()))))
    assert not at_80.check("reward_overfit").fired, at_80.check("reward_overfit").summary
    # The same curves with every term paid: nothing says which check is the task's.
    from grpo_doctor.recipe import flat_config

    paid_all = json.loads((TRIAL / "trl_lenient_check.config.json").read_text())
    everyone = diagnose(load_runs(TRIAL / "trl_lenient_check.csv")[0], DoctorConfig(
        recipe=TINY_RECIPE, run_config=flat_config({**paid_all, "reward_weights": [1, 1, 1]})))
    assert not everyone.check("reward_hacking").fired, everyone.check("reward_hacking").summary
    hard = _trial("trl_hard_task")
    assert not hard.check("grad_explosion").fired, hard.check("grad_explosion").summary
    assert hard.root_cause.first_action.startswith("the prompts are out of reach"), \
        hard.root_cause.first_action


def test_a_kl_nan_from_the_first_step_with_the_loss_finite_checks_the_kl_estimator_first():
    """open-r1#704 (../shared/real-runs/issue-snippets): kl NaN on every logged step from step
    1, the loss finite and moving. The NaN never reached the weights, yet the first action
    led with "fp16 weights ... the loss scaler", the KL estimator second; the summary said the
    weights "were not touched" of a run whose loss and reward moved."""
    n = 4
    run = make_run(reward=np.array([13.4, 6.9, 6.3, 6.4]), loss=np.array([-0.28, -0.15,
                   -0.11, -0.01]), kl=np.array(["nan"] * n, dtype=object))
    # With no config, no KL computed (TRL's default beta 0: trl#4040's answer to this very
    # thread; trial 69); with beta in force, the estimator is what to check.
    assert diagnose(run).root_cause is None
    # Said where the eye lands, as what the steps show (it had been only under "passed", the
    # answer to the issue's question in -v alone; nu33).
    assert any("no KL computed" in sign for sign in diagnose(run).signs), diagnose(run).signs
    assert not any("no KL computed" in sign for sign in diagnose(
        run, DoctorConfig(run_config={"beta": 0.04})).signs)
    rc = diagnose(run, DoctorConfig(run_config={"beta": 0.04})).root_cause
    assert rc.mode == "numerical_failure"
    assert rc.first_action.startswith("check the KL estimator"), rc.first_action
    assert "not touched" not in rc.summary and "did not reach the weights" in rc.summary
    # The loss NaN too: the update itself broke, the setup leads.
    broken = make_run(reward=np.array([13.4, 6.9, 6.3, 6.4]),
                      loss=np.array(["nan"] * n, dtype=object),
                      kl=np.array(["nan"] * n, dtype=object))
    assert diagnose(broken).root_cause.first_action.startswith("a numerical setup problem")


@given(peak=st.floats(1e-7, 1e-3), warmup=st.integers(3, 30), every=st.integers(2, 10),
       total=st.integers(200, 2000))
def test_the_peak_of_a_warm_up_into_a_linear_decay_is_where_the_two_lines_meet(
        peak, warmup, every, total):
    """transformers' linear schedule with warm-up, logged every few steps: the largest logged
    value is below the configured peak unless a log falls on the warm-up's end (nips rho1.00:
    9.8e-5 logged, 1e-4 configured, warm-up 10, a log every 5)."""
    steps = np.arange(every, total, every, dtype=float)
    lr = np.where(steps < warmup, peak * steps / warmup,
                  peak * (total - steps) / (total - warmup))
    if lr.argmax() < 2:
        return  # a warm-up seen at fewer than two logs: no line to meet
    assert knobs.schedule_peak(steps, lr) == pytest.approx(peak, rel=1e-6)


def test_a_reward_term_that_never_returned_a_value_is_the_first_fix():
    """Trial 44's nan_reward: the correctness function returned None for every completion, the
    reward was the format term alone (saturated at 0.5), groups equal. The first action read
    "check the reward function ... exactly 0.5 (format_reward 0.5 on those steps)", the term
    that never scored unnamed."""
    n = 60
    rng = np.random.default_rng(3)
    fmt_term = np.clip(0.47 + 0.02 * rng.standard_normal(n), 0, 0.5)
    run = make_run(reward=fmt_term, frac_reward_zero_std=np.full(n, 0.88),
                   rewards__correctness_reward__mean=np.array(["nan"] * n, dtype=object),
                   rewards__format_reward__mean=fmt_term, grad_norm=np.full(n, 0.05))
    d = diagnose(run)
    first = d.root_cause.first_action
    assert first.startswith("fix the reward function correctness_reward: it returned no "
                            "value"), first
    assert "the reward is format_reward alone" in first
    assert d.root_cause.setup and d.root_cause.summary.startswith(
        "a setup problem, a reward function that never returned a value"), d.root_cause


@pytest.mark.parametrize("config,first", [
    # Trial 44: an MLflow store read alone, its params saying save_steps 50: the break at
    # step 12 had read "roll back to a checkpoint from before step 12" (none exists).
    ({"save_strategy": "steps", "save_steps": 50},
     "restart from the initial model (save_steps 50 saved no checkpoint before step"),
    ({"save_strategy": "steps", "save_steps": 5},
     "roll back to checkpoint-10 (the last one save_steps 5 saved at or before step"),
    # verl: trainer.save_freq
    ({"trainer": {"save_freq": 4}}, "roll back to checkpoint-8 (the last one "
                                    "trainer.save_freq 4 saved at or before step"),
    # Saved by epoch, or not said: the logged step before it, as before.
    ({"save_strategy": "epoch", "save_steps": 5}, "roll back to a checkpoint from"),
    ({}, "roll back to a checkpoint from"),
])
def test_a_roll_back_names_a_checkpoint_the_config_saved(config, first):
    n = 40
    reward = np.concatenate([np.linspace(0.2, 0.6, 12), np.zeros(n - 12)])
    grad = np.concatenate([np.full(11, 0.5), [40.0], np.zeros(n - 12)])
    run = make_run(reward=reward, grad_norm=grad, loss=np.full(n, 0.1))
    d = diagnose(run, DoctorConfig(run_config=config))
    assert d.root_cause is not None and d.root_cause.first_action.startswith(first), \
        d.root_cause


def test_a_flag_outside_the_recipe_reads_as_one():
    """Trial 44's plan read "mask_truncated_completions false is outside the recipe's on (DAPO
    overlong reward shaping)"."""
    from grpo_doctor import recipe

    setup = recipe.read_config({"mask_truncated_completions": False})
    flag = setup.get("overlong_shaping")
    assert flag is not None and flag.sentence() == (
        "mask_truncated_completions false is not the recipe's on (DAPO overlong reward "
        "shaping)")


def test_trial_45_a_task_term_that_never_moved_and_a_charged_format_term_are_the_cause():
    """Trial 45 (real TRL runs). A correctness reward that paid 1.0 to every completion on all
    200 steps read HEALTHY, "the task is (nearly) solved": a term that never moved proves no
    group solved. A format term weighed -0.5 fell 0.45 -> 0 as completions ran on to the cap:
    only length_hacking fired, and its first action was overlong shaping."""
    always = _trial("trl_const_reward")
    assert always.status == "critical", always.status
    equal = always.check("advantage_collapse")
    assert "solved" not in equal.summary and "paid every completion the same" in equal.summary
    first = always.root_cause.first_action
    assert first.startswith("check the reward function that never changed "
                            "(correctness_reward always 1)"), first
    assert "a check that always passes" in first
    charged = _trial("trl_negative_format_weight")
    first = charged.root_cause.first_action
    assert "format_reward's weight -0.5 -> 0.5" in first and charged.root_cause.setup, first
    assert charged.check("length_hacking").fired
    assert not charged.check("format_gaming").fired
    # A larger budget would give the escape more room.
    assert not any("length" in p.action and "->" in p.action for p in charged.plan), \
        [p.action for p in charged.plan]
    # Completions cut from the first step by a budget one token short: the entropy fell as
    # the controls' did, and the cut (there before the fall) is no sign of a collapse cascade.
    # A correctness function that returned -1 for a right answer: the term went -0.25 ->
    # -0.03 as the policy unlearned the task. It read "look at a few equal-reward groups",
    # beside "many may be solved ones".
    flipped = _trial("trl_sign_flip")
    first = flipped.root_cause.first_action
    assert first.startswith("check correctness_reward on a few completions: it paid nothing "
                            "above 0 on any logged step"), first
    assert "flipped sign" in first
    assert "solved ones" not in flipped.check("advantage_collapse").summary
    short = _trial("trl_budget_8")
    assert [c.mode for c in short.findings] == ["length_hacking"], short.findings
    assert short.root_cause.first_action.startswith("max_completion_length 8 -> 32")


def test_trial_48_a_warm_up_from_0_and_a_repetition_penalty_are_the_cause():
    """Trial 48 (real TRL runs). A cosine schedule to 2e-3 after a 20-step warm-up logged lr
    0 at step 1, where the entropy began to fall: "already lower" than the recipe's lr, and
    beta 0 (TRL's default, the control's too) took the blame. A repetition_penalty of 2.0
    brought gradient spikes and a lower plateau; the tool never read it, and cut the
    control's own lr 40x."""
    hot = _trial("trl_cosine_2e-3")
    first = hot.root_cause.first_action
    assert "learning_rate 0.002 -> " in first and "beta" not in first, first
    penalised = _trial("trl_repetition_penalty_2")
    first = penalised.root_cause.first_action
    assert first.startswith("repetition_penalty 2 -> 1.0"), first
    # The prompt lost its second number: the answer check sat at chance (0.094) for 200
    # steps while the format was learned. It read an entropy warning, "lr 1e-4 -> 2.5e-6";
    # and its words had said "0.0938 on all but 164 of 200 logged steps" of 36.
    blind = _trial("trl_prompt_missing_b")
    gamed = blind.check("format_gaming")
    assert gamed.status == "critical" and "never left its level" in gamed.summary
    assert "exactly that on 36 of 200 logged steps" in gamed.summary, gamed.summary
    first = blind.root_cause.first_action
    assert blind.root_cause.mode == "format_gaming", blind.root_cause
    assert first.startswith("inspect a few prompts and completions against correctness_reward")


def test_a_setup_root_dated_by_an_earlier_episode_says_both_steps():
    """"no_learning_signal at step 41: ... nothing left to learn since step 180" (helper-57):
    a setup problem is dated by the finding's first episode, and its sentence by the last.
    (The equal groups, read from step 3 since session 29, are left out to reach it.)"""
    from grpo_doctor.recipe import flat_config

    run = load_runs(TRIAL / "trl_temperature_0.2.csv")[0]
    cfg = flat_config(json.loads((TRIAL / "trl_temperature_0.2.config.json").read_text()))
    cause = diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config=cfg,
                                       ignore=("advantage_collapse",))).root_cause
    assert cause.setup and cause.step == 41
    assert "since step 180" in cause.summary
    assert cause.summary.endswith("(first seen at step 41, in an earlier episode)"), cause.summary


def test_trial_49_runs_a_task_out_of_reach_a_length_bonus_and_a_warm_up_that_never_ended():
    """Trial 49 (real TRL runs). The answer (a*b*7+3)%97: correctness ~0.1 all run, 72% of
    groups equal, the format term saturating: "the reward is still rising: groups are being
    solved", HEALTHY. A "thoroughness" bonus at weight 20 (its name says nothing of length):
    completions 9 -> 48 tokens, and the root was a gradient spike three steps before the hack,
    "learning_rate first". warmup_steps 10000 in a 200-step run: the lr never passed 2e-6,
    and the only advice was to lower it."""
    far = _trial("trl_mod97")
    assert far.status == "warning" and far.root_cause.mode == "advantage_collapse"
    assert "allows at most 12% of groups all-correct" in far.check("advantage_collapse").summary
    assert far.root_cause.first_action.startswith("most prompts are out of reach"), far.root_cause
    paid = _trial("trl_thoroughness_w20")
    assert paid.root_cause.mode == "length_hacking", paid.root_cause
    assert paid.root_cause.first_action.startswith(
        "cap or drop the thoroughness_reward term (weight 20 in the config"), paid.root_cause
    slow = _trial("trl_warmup_10000")
    shown = recipe.next_run_settings(slow.notes)
    assert slow.status != "healthy" and shown is not None, slow.notes
    assert shown[1].startswith("warmup_steps 10,000 -> 20: the warm-up never ended in a run "
                               "of 200 steps: the logged lr climbed 1e-8 -> 2e-6"), shown


def test_a_warm_up_that_reached_its_peak_or_a_schedule_that_decays_is_no_unfinished_one():
    from grpo_doctor.rules.signals import unfinished_warmup

    n = 100
    s = np.arange(1, n + 1)
    for lr, finished in ((1e-4 * s / 1e4, False), (1e-4 * np.minimum(1, s / 10), True),
                         (1e-4 * (1 - s / n), True), (np.full(n, 1e-4), True)):
        run = make_run(reward=np.linspace(0.2, 0.6, n), learning_rate=lr)
        run.config.update({"learning_rate": 1e-4, "max_steps": n,
                           "warmup_steps": 10_000 if not finished else 10})
        assert (unfinished_warmup(run) is None) is finished, lr[-3:]
    run = make_run(reward=np.linspace(0.2, 0.6, n), learning_rate=1e-4 * s / 1e4)
    assert unfinished_warmup(run) is None  # no configured lr: nothing to fall short of
    # A run stopped (or watched) in a warm-up shorter than it: normal there.
    run.config.update({"learning_rate": 1e-4, "warmup_steps": 500, "max_steps": 5_000})
    assert unfinished_warmup(run) is None
    run.config.update({"warmup_steps": 10_000})
    assert unfinished_warmup(run) is not None
    run.config.pop("warmup_steps")
    assert unfinished_warmup(run) is None  # 100 of 5,000 steps logged: not the whole run
    run.config.update({"max_steps": 100})
    assert unfinished_warmup(run) is not None  # the whole run logged, the lr never got there


def test_a_correctness_term_low_caps_the_groups_it_can_call_solved():
    """72% of groups equal while the reward rises on its format term and correctness creeps
    0.05 -> 0.12: at most 12% can be all-correct groups, so the equal ones are not solved
    ones (trial 49); the same share beside correctness at 0.9 is convergence."""
    rng = np.random.default_rng(4)
    n = 200
    s = np.arange(n)
    for correct, solved in ((0.05 + 0.07 * s / n, False), (0.3 + 0.6 * s / n, True)):
        fmt_term = np.minimum(0.5, 0.3 + s / 200)
        run = make_run(reward=correct + fmt_term + rng.normal(0, 0.01, n),
                       rewards__correctness_reward__mean=np.clip(
                           correct + rng.normal(0, 0.02, n), 0, 1),
                       rewards__format_reward__mean=fmt_term,
                       frac_reward_zero_std=np.clip(0.4 + 0.35 * s / n + rng.normal(0, 0.03, n),
                                                    0, 1))
        check = diagnose(run).check("advantage_collapse")
        assert check.fired is not solved, check.summary
        assert ("allows at most 1" in check.summary) is not solved, check.summary


def test_a_near_greedy_sampler_from_step_1_is_planned_as_a_sampler():
    """temperature 0.05 (trial 49): the reward 1.5 from step 1, a gradient of 0 on 196 of 200
    steps. It read "the run came through it and solved its task", planned lr, entropy bonus,
    Clip-Higher and adaptive KL after the temperature, passed no_learning_signal with "the
    reward still moves", and (live) called 3e-6 -> 0 nats "a catastrophic update"."""
    n = 200
    rng = np.random.default_rng(3)
    reward = np.full(n, 1.5)
    reward[[2, 27, 50, 95, 133, 179, 194]] = [1.47, 1.31, 1.44, 1.0, 1.25, 1.25, 1.25]
    grad = np.zeros(n)
    grad[[2, 27, 95, 133]] = [0.8, 17.9, 2.0, 1.1]
    run = make_run(reward=reward, grad_norm=grad, entropy=np.abs(rng.normal(0, 3e-6, n)),
                   frac_reward_zero_std=np.where(grad > 0, 0.75, 1.0),
                   rewards__correctness_reward__mean=reward - 0.5,
                   rewards__format_reward__mean=np.full(n, 0.5))
    run.config.update({"temperature": 0.05, "reward_funcs": ["correctness_reward",
                                                             "format_reward"]})
    d = diagnose(run)
    first = d.root_cause.first_action
    assert first.startswith("temperature 0.05 -> 1.0"), first
    assert "sampling is near-greedy from the first step" in first, first
    assert first.endswith("no roll-back: no checkpoint learned from the policy's own samples"), (
        first)
    assert not any("entropy coefficient" in p.action or "epsilon_high" in p.action
                   for p in d.plan), [p.action for p in d.plan]
    # Dead all run but for a lucky group now and then: not "the reward still moves" (a live
    # alert had cleared on it at step 190, helper-60).
    dead = d.check("no_learning_signal")
    assert dead.status == "warning" and dead.onset_step == 1, dead.summary
    assert "grad norm 0 on 196 of them (it moved on 7 of 200 logged points)" in dead.summary
    assert dead.summary.endswith("solved before training began"), dead.summary
    # Live on a fifth of its steps: no dead stretch, said as the log shows it.
    often = grad.copy()
    often[::5] = 0.5
    quiet = diagnose(make_run(reward=np.where(often > 0, 1.25, 1.5), grad_norm=often)
                     ).check("no_learning_signal")
    assert quiet.status == "ok" and "the grad norm was 0 on 157 of 200 logged steps" in (
        quiet.summary) and "the reward still moves now and then" in quiet.summary, quiet.summary
    early = diagnose(run.truncated(10)).check("no_learning_signal")
    assert "catastrophic update" not in early.summary, early.summary


def test_trial_51_runs_a_farmed_term_a_cut_sampler_and_updates_too_small_to_move():
    """Trial 51 (real TRL runs, blind). A repetition bonus at weight 20 farmed from step 116
    while correctness fell 0.8 -> 0: the root was a gradient level (lr, roll back to
    checkpoint-50), the term third. top_p 0.5: 99% of groups equal and all-correct, "the task
    is solved" (0.53 right sampled at top_p 1). lr 1e-6 and SGD at 1e-4 on a tiny model: the
    entropy flat for 200 steps, "check the reward" first, and optim unread."""
    farmed = _trial("trl_structure_w20")
    assert farmed.root_cause.mode == "format_gaming", farmed.root_cause
    assert farmed.root_cause.first_action.startswith("structure_reward's weight 20 -> 0")
    cut = _trial("trl_top_p_05")
    assert cut.status == "warning", cut.status
    assert cut.root_cause.first_action.startswith("top_p 0.5 -> 1.0"), cut.root_cause
    assert "solved for the cut sampler" in cut.root_cause.summary, cut.root_cause
    # With the model's own recipe (1e-5 to 5e-4) the setting says it; with the chapter's
    # (1e-6 its start) the log does: an entropy that never moved.
    slow = _trial("trl_lr_1e-6")
    assert "learning_rate 1e-6 -> 1e-4" in slow.root_cause.first_action, slow.root_cause
    from grpo_doctor.recipe import flat_config

    chapter = diagnose(load_runs(TRIAL / "trl_lr_1e-6.csv")[0], DoctorConfig(
        run_config=flat_config(json.loads((TRIAL / "trl_lr_1e-6.config.json").read_text()))))
    assert chapter.root_cause.first_action.startswith(
        "raise the learning rate (now 1e-6), e.g. x10: the policy barely moved (entropy"), (
        chapter.root_cause)
    plain = _trial("trl_optim_sgd")
    assert "optim sgd -> adamw_torch (AdamW)" in plain.root_cause.first_action, plain.root_cause
    assert not plain.root_cause.first_action.startswith("check the reward")


def test_a_reward_function_returning_none_on_some_completions_is_said_from_the_shortfall():
    """TRL sums the weighted terms per completion ignoring a function's None and logs each
    term's mean over what it scored: the reward is the sum of the terms' means on every step
    unless a function returned None (trial 52: correctness_reward None on a third of
    completions, the reward 0.3 below its parts on all 200 steps, read as nothing)."""
    d = _trial("trl_reward_none_third")
    said = [n for n in d.notes if "below the sum of its terms' means" in n]
    assert said and "correctness_reward returns None (or NaN) on some completions" in said[0], (
        d.notes)
    share = int(said[0].split("(about ")[1].split("%")[0])
    assert 25 <= share <= 45, said  # a third, as the harness drew it
    assert d.status == "healthy"  # the run learned: a bug to fix, not a failure mode
    never = _trial("trl_format_never_matches")
    assert never.status == "healthy"
    assert any(n.startswith("format_reward: 0 on all 200 logged steps, never paying a "
                            "completion") for n in never.notes), never.notes
    assert not any("below the sum" in n for n in never.notes)
    # The same sums with every completion scored; and a config that is not TRL's.
    n = 100
    rng = np.random.default_rng(4)
    c = np.clip(np.linspace(0.3, 0.9, n) + rng.normal(0, 0.05, n), 0, 1)
    f = np.clip(0.45 + rng.normal(0, 0.02, n), 0, 0.5)
    for reward, config, noted in ((c + f, {"reward_weights": None}, False),
                                  (0.67 * c + f, {"reward_weights": None}, True),
                                  (0.67 * c + f, {"reward_weights": "None"}, True),
                                  (2 * (0.67 * c + f), {"reward_weights": [2.0, 2.0]}, True),
                                  (c + 2 * f, {"reward_weights": [1.0, 2.0]}, False),
                                  (0.67 * c + f, {}, False)):
        run = make_run(reward=reward, rewards__correctness_reward__mean=c,
                       rewards__format_reward__mean=f)
        run.config.update(config)
        notes = diagnose(run).notes
        assert any("below the sum" in x for x in notes) == noted, (config, notes)


def _scored_until(stop: int, length_after: float = 9.0, n: int = 200, seed: int = 8):
    rng = np.random.default_rng(seed)
    s = np.arange(1, n + 1)
    c = np.clip(0.35 + 0.5 * s / n + rng.normal(0, 0.05, n), 0, 1)
    c[s >= stop] = 0.0
    f = np.clip(0.47 + rng.normal(0, 0.01, n), 0, 0.5)
    length = np.where(s >= stop, length_after, 9.0) + rng.normal(0, 0.05, n)
    run = make_run(reward=c + f, rewards__correctness_reward__mean=c,
                   rewards__format_reward__mean=f, entropy=0.3 - 0.2 * s / n,
                   response_length_mean=length, learning_rate=np.full(n, 1e-4))
    run.config.update({"save_steps": 50, "max_steps": n})
    return run


def test_a_reward_term_whose_scorer_stopped_names_the_scorer_and_the_last_good_checkpoint():
    """A grader that went down at step 101 (correctness exactly 0 from there to the end) while
    the completions held their length and entropy: the policy was fine, the scorer is what to
    fix, and checkpoint-100 is good (trial 53 had read "restart from the initial model, with
    learning_rate 1e-4 -> 2.5e-6" from an entropy collapse at step 1 the crash made
    critical)."""
    d = diagnose(_scored_until(101))
    assert d.root_cause.first_action.startswith(
        "check correctness_reward on completions from step 101 on: it scored every one 0"), (
        d.root_cause)
    assert "roll back to checkpoint-100" in d.root_cause.first_action, d.root_cause
    assert d.root_cause.summary.startswith("correctness_reward fell from"), d.root_cause
    assert "exactly 0 on all 100 logged steps since" in d.root_cause.summary
    # What followed the scorer (equal groups, a vanished gradient, the reward's fall) is its
    # echo: no entropy collapse made critical by it, no lr or group-size item in the plan.
    assert d.check("entropy_collapse").status.value != "critical", d.check("entropy_collapse")
    assert not any("learning_rate" in p.action or "group size" in p.action for p in d.plan), (
        d.plan)
    # A policy that broke changes what it writes: the completions 3x longer from the drop.
    broke = diagnose(_scored_until(101, length_after=27.0))
    assert "scorer_stopped" not in broke.check("reward_overfit").evidence
    assert not broke.root_cause.first_action.startswith("check correctness_reward on")
    # A drop held for only a few steps at the end is a bad stretch, not a scorer gone.
    late = diagnose(_scored_until(195))
    assert "scorer_stopped" not in late.check("reward_overfit").evidence


def _all_cut(share_steps: float, rising: bool, masked: bool = False, n: int = 200):
    rng = np.random.default_rng(11)
    s = np.arange(1, n + 1)
    c = np.clip((0.35 + 0.5 * s / n if rising else np.full(n, 0.3)) + rng.normal(0, 0.04, n),
                0, 1)
    cut = np.where(rng.random(n) < share_steps, 1.0, 0.9)
    run = make_run(reward=c + 0.45, rewards__correctness_reward__mean=c,
                   rewards__format_reward__mean=np.full(n, 0.45) + rng.normal(0, 0.01, n),
                   truncation_ratio=cut, response_length_mean=np.full(n, 24.0),
                   entropy=0.35 - 0.1 * s / n,
                   grad_norm=np.where(rng.random(n) < 0.97, 0.0, 1.0) if masked
                   else 0.6 + rng.normal(0, 0.05, n))
    run.config.update({"max_completion_length": 24, "mask_truncated_completions": masked})
    return diagnose(run)


def test_answers_judged_right_inside_completions_that_never_end_put_the_stop_token_first():
    """Every completion at the 24-token cap on 199 of 200 steps while the task's own term
    rose 0.35 -> 0.80 inside them: the answers fit, the stop never comes (trial 53: an eos the
    model never writes read "max_completion_length 24 -> 96", 4x the text after the answer).
    A budget one token short lets a short answer end on a quarter of the steps (trial 45):
    the budget stays first there. Masked truncated completions with every one cut trained
    nothing, and the advice says so."""
    never = _all_cut(1.0, rising=True)
    assert never.root_cause.first_action.startswith("check the stop first: "), never.root_cause
    assert "generation_config.eos_token_id" in never.root_cause.first_action
    assert never.root_cause.first_action.endswith("max_completion_length 24 -> 96")
    assert "generation never stops" in never.root_cause.summary
    short = _all_cut(0.75, rising=True)
    assert short.root_cause.first_action.startswith("max_completion_length 24 -> "), (
        short.root_cause)
    assert "eos_token" not in short.root_cause.first_action
    flat = _all_cut(1.0, rising=False, masked=True)
    action = flat.root_cause.first_action
    assert action.startswith("max_completion_length 24 -> "), flat.root_cause
    assert "the budget is too small for the task's answers, or generation never stops (with " \
        "short answers, check the stop token: " in action, action
    assert "with truncated completions masked out (mask_truncated_completions), none was " \
        "trained on: grad norm 0 on" in action, action


def _coin(n: int = 200, entropy_end: float = 0.236, equal: float = 0.0):
    rng = np.random.default_rng(6)
    s = np.arange(1, n + 1)
    c = rng.binomial(32, 0.5, n) / 32
    entropy = entropy_end + (0.29 - entropy_end) * np.exp(-s / 10) + rng.normal(0, 0.005, n)
    f = np.clip(0.49 + rng.normal(0, 0.01, n), 0, 0.5)
    return make_run(reward=c + f, rewards__correctness_reward__mean=c,
                    rewards__format_reward__mean=f, entropy=entropy,
                    zero_std_fraction=np.full(n, equal))


def test_a_reward_that_never_moved_while_groups_differed_and_the_policy_moved_is_checked_first():
    """A correctness check that pays at random: 0.5 on every block of 50 steps, groups mixed
    on every step, the entropy 0.29 -> 0.24 (trial 53: INCONCLUSIVE with only "for the next
    run: learning_rate 1e-4 -> 2.5e-6"). Something to learn from on every step and a policy
    that moved, yet no change in what the reward pays: the reward is what to check."""
    d = diagnose(_coin())
    assert d.status == "warning", d.status
    check = d.check("no_progress")
    assert "never left its level" in check.summary and "the policy moved (entropy" in (
        check.summary), check.summary
    assert d.root_cause.first_action.startswith(
        "check the reward on a few completions against the task: does its score depend on the "
        "completion at all?"), d.root_cause
    # A policy that barely moved is the step size's (the entropy within 5%), and groups that
    # mostly scored alike had nothing to teach: neither is this finding.
    assert "does its score depend" not in str(diagnose(_coin(entropy_end=0.288)).root_cause)
    assert diagnose(_coin(equal=0.8)).check("no_progress").status.value != "warning"
    assert diagnose(_coin(n=60)).check("no_progress").status.value != "warning"  # too short


def _flaky(level_start: float, level_end: float, per_step: int = 32, down: float = 0.3,
           n: int = 200, seed: int = 12):
    rng = np.random.default_rng(seed)
    s = np.arange(1, n + 1)
    c = rng.binomial(per_step, level_start + (level_end - level_start) * s / n) / per_step
    c[rng.random(n) < down] = 0.0
    f = np.clip(0.47 + rng.normal(0, 0.01, n), 0, 0.5)
    return make_run(reward=c + f, rewards__correctness_reward__mean=c,
                    rewards__format_reward__mean=f, entropy=0.3 - 0.2 * s / n,
                    response_length_mean=9 + rng.normal(0, 0.05, n))


def test_a_grader_down_on_some_calls_is_named_and_its_zeros_are_not_the_policys():
    """A grader down on 30% of its calls: correctness exactly 0 on 62 of 200 steps between
    steps at 0.3-0.9 (trial 54 read "roll back to the checkpoint from before the crash (step
    119)", a step no checkpoint was saved at, and live "entropy collapsing ... restart, lr").
    With 32 completions a step at 0.6, a step of all-failing groups is a 1-in-100 event."""
    d = diagnose(_flaky(0.4, 0.9))
    assert d.check("entropy_collapse").status.value != "critical"
    said = [n for n in d.notes if "its scorer failed on those calls" in n]
    assert said and said[0].startswith("correctness_reward was exactly 0 on 57 of 200 logged "
                                       "steps (steps 2, 3, 10, 18, 20, ...)"), d.notes
    # Where a crash of the reward came of it (the real run), the crash's advice is the
    # scorer's, with no lr and no roll-back to a step no checkpoint was saved at.
    real = _trial("trl_grader_flaky_30")
    assert real.root_cause.first_action.startswith(
        "check correctness_reward's scorer: it scored every completion 0 on 62 of 200 logged "
        "steps"), real.root_cause
    assert not any("learning_rate" in p.action or "roll back" in p.action for p in real.plan)
    # A hard task's all-wrong steps, and a step of 8 completions (one prompt), are chance.
    for run in (_flaky(0.1, 0.15, down=0.0), _flaky(0.4, 0.9, per_step=8, down=0.0)):
        assert "scorer_gaps" not in str(diagnose(run).check("reward_overfit").evidence)
        assert not diagnose(run).root_cause or "scorer" not in (
            diagnose(run).root_cause.first_action)


def test_trial_53s_real_runs_put_the_scorer_the_reward_and_the_stop_token_first():
    """The real TRL runs the scorer, coin and stop-token mechanisms were built from (trial
    53), each diagnosed with its own config."""
    down = _trial("trl_grader_down_101")
    assert down.root_cause.first_action.startswith("check correctness_reward on completions "
                                                   "from step 101 on"), down.root_cause
    assert "roll back to checkpoint-100 (the last one save_steps 50 saved" in (
        down.root_cause.first_action)
    coin = _trial("trl_coin_reward")
    assert coin.status == "warning" and coin.root_cause.first_action.startswith(
        "check the reward on a few completions against the task: does its score depend"), (
        coin.root_cause)
    eos = _trial("trl_eos_never")
    assert eos.root_cause.first_action.startswith("check the stop first: "), eos.root_cause
    sparse = _trial("trl_logging_25")
    assert sparse.status == "inconclusive" and not sparse.findings, sparse.findings
    assert "logged once every 25 steps" in sparse.status_reason


def test_a_scorer_that_began_passing_everything_is_the_root_not_a_solved_task():
    """Trial 55: from step 121 the grader raised and its except-branch returned 1.0: the
    correctness term 0.81 -> exactly 1 on 256 of 256 completions on all 80 steps, length and
    entropy unchanged. It read HEALTHY ("at least 100% of them all-correct: the task is
    (nearly) solved"), live and after. A policy at 0.81 cannot hold 256/256 by chance."""
    d = _trial("trl_pass_on_error")
    assert d.status == "critical", d.status
    check = d.check("advantage_collapse")
    assert check.onset_step == 121 and "jumped from 0.812 to 1 at step 121" in check.summary
    first = d.root_cause.first_action
    assert first.startswith("check correctness_reward on completions from step 121 on: it "
                            "scored every one 1 from there (a check that passes everything"), first
    assert "roll back to checkpoint-100 (the last one save_steps 50 saved" in first, first
    assert not any("learning_rate" in p.action for p in d.plan), d.plan
    # Live, it is called 10 logged steps after the jump, and not before.
    run = load_runs(TRIAL / "trl_pass_on_error.csv")[0]
    assert diagnose(run.truncated(129)).status == "healthy"
    assert "jumped" in diagnose(run.truncated(130)).check("advantage_collapse").summary
    # A policy that converged to 256 of 256 right, its rate creeping up to 1 (exact 1s come
    # ever more often, then on every step), is a solved task, not a scorer.
    n = 160
    for seed in range(5):
        rate = 1 - 0.6 * np.exp(-np.arange(n) / (12 + 2 * seed))
        c = np.random.default_rng(seed).binomial(256, rate) / 256
        solved = make_run(reward=c + 0.5, rewards__correctness_reward__mean=c,
                          rewards__format_reward__mean=np.full(n, 0.5),
                          completion_length=np.full(n, 9.0), entropy=np.full(n, 0.08),
                          frac_reward_zero_std=np.where(c == 1.0, 1.0, 0.3))
        assert (c[-10:] == 1.0).all()
        assert "scorer_stopped" not in diagnose(solved).check("advantage_collapse").evidence


def test_a_weight_0_on_one_of_two_terms_that_always_agreed_is_a_pass_not_a_skip():
    """reward_weights [1, 1, 0] over a lenient check, the format and the exact check, the two
    checks equal on every step (trial 52: never hacked): which one is unpaid is unknown, and
    either way the unpaid check agrees with the paid one. reward_hacking had skipped with
    "needs ... a correctness term logged at weight 0" beside a config that has one."""
    rng = np.random.default_rng(9)
    n = 120
    c = rng.binomial(32, np.linspace(0.35, 0.9, n)) / 32
    f = np.clip(0.47 + rng.normal(0, 0.01, n), 0, 0.5)
    for reward, passes in ((c + f, True), (2 * c, False)):
        run = make_run(reward=reward, rewards__correctness_reward__mean=c,
                       rewards__format_reward__mean=f, rewards__exact_correctness__mean=c)
        run.config.update({"reward_weights": [1.0, 1.0, 0.0]})
        check = diagnose(run).check("reward_hacking")
        assert (check.status.value == "ok" and check.evidence.get("identical_terms") == [
            "correctness_reward", "exact_correctness"]) == passes, check


def test_a_setting_the_run_learned_at_is_kept_for_this_model_not_cut_for_the_next():
    """Every healthy trial control on a tiny model had read "for the next run: learning_rate
    1e-4 -> 2.5e-6", a 40x cut to a rate that learns nothing there (trial 51's lr 1e-6). A run
    that learned at its rate says so; one that did not keep the recipe's line."""
    n = 150
    rng = np.random.default_rng(2)
    s = np.arange(n)
    for correct, learned in ((0.3 + 0.6 * s / n, True), (np.full(n, 0.3), False)):
        c = np.clip(correct + rng.normal(0, 0.02, n), 0, 1)
        run = make_run(reward=c + 0.5, rewards__correctness_reward__mean=c,
                       rewards__format_reward__mean=np.full(n, 0.5),
                       entropy=0.3 - 0.1 * s / n)
        run.config.update({"learning_rate": 1e-4, "reward_funcs": ["correctness_reward",
                                                                   "format_reward"]})
        d = diagnose(run)
        kept = next((x for x in d.notes if "yet this run learned at it" in x), None)
        assert (kept is not None) is learned, d.notes
        # The recipe's value as a fallback, not as where it breaks (trial 55).
        assert kept is None or kept.endswith("keep it (should a run at it break: 2.5e-6)"), kept
        cut = any("learning_rate 1e-4 -> 2.5e-6" in x for x in d.notes if x != kept)
        assert cut is not learned, d.notes


def test_adam_beta2_far_below_its_default_is_read():
    """adam_beta2 0.5 (trial 52): a spike of 13 read as "the lr", the setting unread."""
    reading = recipe.read_config({"adam_beta2": 0.5}).get("adam_beta2")
    assert reading.verdict == recipe.LOW and reading.far and reading.fix() == (
        "adam_beta2 0.5 -> 0.999")
    assert recipe.read_config({"adam_beta2": 0.999}).get("adam_beta2").verdict == recipe.OK


def test_a_run_that_solved_its_task_at_a_high_rate_halves_it_for_the_next_run():
    """A constant 3e-4 on a tiny model (trial 52): the entropy spent as the task was solved,
    "for the next run: learning_rate 3e-4 -> 1e-6", the chapter's start, a rate that learns
    nothing there. Solved at its rate, the next run halves it (the chapter's own remedy for a
    sharpening); a ceiling the user set for the model keeps its own target (helper-34)."""
    n = 200
    s = np.arange(n)
    rng = np.random.default_rng(6)
    c = np.clip(0.4 + 0.58 * (1 - np.exp(-s / 40)) + rng.normal(0, 0.01, n), 0, 1)
    run = make_run(reward=c + 0.5, rewards__correctness_reward__mean=c,
                   rewards__format_reward__mean=np.full(n, 0.5),
                   entropy=0.27 * np.exp(-s / 40) + 0.01, frac_reward_zero_std=0.2 + 0.7 * c)
    run.config.update({"learning_rate": 3e-4, "reward_funcs": ["correctness_reward",
                                                               "format_reward"]})
    d = diagnose(run)
    assert d.root_cause is not None and d.root_cause.first_action.startswith("nothing urgent")
    assert "for the next run: learning_rate 3e-4 -> 1.5e-4 (slows the sharpening; the run " \
        "solved its task at 3e-4" in d.root_cause.first_action, d.root_cause.first_action


def test_completions_that_grew_into_the_cap_just_before_their_pile_up_are_not_called_unfit():
    """rho1.00: 267 tokens at step 130, the 512 cap at 160, in the entropy blow-up; the plan
    read "max response length x2 (completions reach the cap without having grown there: the
    answers may not fit)", ADVICE.md's wrong first step for that run. Near the cap all along,
    cut more and more, that reading stands."""
    n = 100
    rng = np.random.default_rng(6)
    # As rho1.00: an early excursion to the cap, steady at 270, then grown into the cap.
    steady = np.concatenate([np.full(10, 280.0), np.full(10, 512.0), np.full(50, 270.0),
                             np.linspace(300, 512, 10), np.full(20, 512.0)])
    cut = np.concatenate([np.zeros(10), np.full(10, 0.97), np.zeros(55),
                          np.linspace(0.3, 1, 5), np.full(20, 0.98)])
    near_cap = np.full(n, 480.0) + rng.normal(0, 5, n)
    piles = np.concatenate([np.full(50, 0.3), np.full(50, 0.7)])
    for length, trunc, unfit in ((steady, cut, False), (near_cap, piles, True)):
        run = make_run(completion_length=length, truncation_ratio=trunc,
                       response_length_max=np.full(n, 512.0),
                       reward=0.5 + 0.02 * rng.standard_normal(n))
        check = diagnose(run).check("length_hacking")
        assert check.fired
        said = " ".join(check.remedies)
        assert ("without having grown there" in said) is unfit, (unfit, check.remedies)


@pytest.mark.parametrize("name", sorted(p.stem for p in TRIAL.glob("*.csv")))
def test_no_plan_names_the_same_change_twice(name):
    """Trial 56 (top_p 0.8): "1. top_p 0.8 -> 1.0 (sample from the whole distribution ...)"
    and "3. also outside the recipe: top_p 0.8 -> 1.0": a change said twice reads as two."""
    import re

    d = _trial(name)
    changes = [m.group(0) for item in d.plan
               for m in re.finditer(r"\b[a-z_.]+ [-\d.e]+ -> [-\d.e]+", item.action)]
    assert len(changes) == len(set(changes)), [p.action for p in d.plan]


def test_cispo_with_its_cap_below_1_clips_by_construction_a_note_not_an_lr_cut():
    """Trial 56: loss_type cispo with epsilon_high unset (TRL: epsilon's 0.2). CISPO clamps
    each importance weight at epsilon_high itself, so every on-policy weight (1.0) is capped
    and cispo_clip_ratio reads ~0.5 on every step. It read "ratio_instability warning ...
    learning_rate 1e-4 -> 2.5e-6" on a run that learned as the control did."""
    d = _trial("trl_cispo_eps_high_default")
    assert d.status == "healthy" and not d.check("ratio_instability").fired
    note = next((n for n in d.notes if n.startswith("loss_type cispo caps")), None)
    assert note is not None and "epsilon_high 5.0" in note and "0.2" in note, d.notes
    # The same clip ratio under a loss that clips at 1 + epsilon is still read.
    run = load_runs(TRIAL / "trl_cispo_eps_high_default.csv")[0]
    cfg = json.loads((TRIAL / "trl_cispo_eps_high_default.config.json").read_text())
    for loss, cap, fires in (("dapo", None, True), ("cispo", 5.0, True), ("cispo", None, False)):
        given = {**cfg, "loss_type": loss, "epsilon_high": cap}
        got = diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config=given))
        assert got.check("ratio_instability").fired is fires, (loss, cap)


def test_a_warm_up_from_0_that_overshot_names_the_lr_at_the_peak_and_a_checkpoint_before_it():
    """Trial 56: 0 -> 5e-3 over 100 steps; the reward peaked at step 25 (lr 1.25e-3) and fell
    as the lr rose. A warm-up logged from 0 read no overshoot at all: "roll back to
    checkpoint-50 ... learning_rate 0.005 -> 1e-6", checkpoint-50 already below the initial
    model."""
    d = _trial("trl_warmup_from_0_to_5e-3")
    first = d.root_cause.first_action
    assert first.startswith("learning_rate 0.005 -> 0.0012 (its value when the reward peaked "
                            "at step 25); restart from the initial model"), first
    assert "checkpoint-50 (" not in first


def test_an_lr_of_0_is_set_without_a_restart_the_weights_never_moved():
    """Trial 56: learning_rate 0. It read "restart from the initial model (it began at step
    1 ...), with learning_rate 0 -> 1e-6 (... no step at all (the recipe's start is 1e-6);
    each update takes too small a step ...)": every checkpoint is the initial model (the tiny
    model's recipe starts at 1e-4)."""
    first = _trial("trl_lr_0").root_cause.first_action
    assert first.startswith("learning_rate 0 -> 1e-4 (learning_rate 0 is no step at all"), first
    assert "restart" not in first and "the weights never moved" in first


def test_an_lr_schedule_with_restarts_is_named_a_warm_up_is_not():
    """Trial 55: cosine with restarts at 1e-3, back at its peak at steps 51, 101, 151; the
    advice named the lr and never the restarts. A warm-up to its peak, a decay, and a
    warm-up then decay are no restart."""
    n = 200
    t = np.arange(1, n + 1)
    restarts = 1e-3 * 0.5 * (1 + np.cos(np.pi * ((t - 1) % 50) / 50))
    warm = np.minimum(1.0, t / 100) * 5e-3
    decay = 1e-4 * (1 - t / n)
    warm_decay = np.where(t <= 20, t / 20, 1 - (t - 20) / (n - 20)) * 1e-4
    rng = np.random.default_rng(1)
    for lr, named in ((restarts, True), (warm, False), (decay, False), (warm_decay, False)):
        run = make_run(reward=0.5 + 0.02 * rng.standard_normal(n), learning_rate=lr)
        note = next((x for x in diagnose(run).notes if "came back to its peak" in x), None)
        assert (note is not None) is named, (named, note)
        if named:
            assert "at steps 51, 101, 151" in note, note


def test_a_reward_term_nan_on_one_step_is_named_in_a_note():
    """Trial 57: correctness_reward returned NaN for a whole batch at step 78, the reward
    0.48 there (format only); the run healthy otherwise. Nothing said it, live or after."""
    d = _trial("trl_correctness_nan_at_78")
    assert d.status == "healthy", d.status
    note = next((n for n in d.notes if "was NaN on" in n), None)
    assert note is not None and note.startswith(
        "correctness_reward was NaN on 1 of 200 logged steps (step 78)"), d.notes


def test_every_term_silent_the_format_checks_too_is_the_form_the_rewards_parse():
    """Trial 57: both rewards read a tag the model never writes: every term 0 on every step.
    It read "check the reward function ... it returned 0 for (nearly) every one"; the format
    term's silence says what to look at: the completions' form against what the rewards
    parse."""
    first = _trial("trl_tag_never_written").root_cause.first_action
    assert first.startswith("check a few completions against the format the rewards parse: "
                            "every reward term was 0 on every logged step, the format term "
                            "(format_reward) included"), first


def test_a_learning_rate_edited_for_a_resume_never_applied():
    """Trial 58: resumed from checkpoint-100 with learning_rate edited to 3e-3; the Trainer
    restored the checkpoint's optimizer and scheduler, and the log shows 1e-4 decaying to
    5e-7. It read "learning_rate 0.003 is 600x the recipe's ceiling, yet this run learned at
    it: keep it". What it trained at is the logged rate, and the edit is said to have done
    nothing."""
    loaded = load_runs(TRIAL / "trl_top_p_08_temp_07.csv")[0]
    cfg = json.loads((TRIAL / "trl_top_p_08_temp_07.config.json").read_text())
    # The run's own config (a checkpoint's training_args.bin read with its trainer state),
    # not one given for it (which the log's curve overrules before the recipe reads it).
    run = replace(loaded, config={**cfg, "learning_rate": 3e-3})
    d = diagnose(run, DoctorConfig(recipe=TINY_RECIPE))
    lr = next(s for s in d.setup if s["name"] == "learning_rate")
    assert lr["value"] == pytest.approx(1e-4) and "not the config's" in lr["source"], lr
    assert any(n.startswith("learning_rate 0.003 in the config never applied: the logged "
                            "learning rate peaked at 0.0001") for n in d.notes), d.notes
    assert not any("0.003" in n and "keep it" in n for n in d.notes), d.notes
    # A warm-up that has not reached the configured rate is not that: the config stands.
    warm = run.frame.copy()
    warm["learning_rate"] = np.linspace(1e-6, 2e-5, len(warm))
    warming = diagnose(replace(run, frame=warm, _finite={}, _derived={}),
                       DoctorConfig(recipe=TINY_RECIPE))
    lr = next(s for s in warming.setup if s["name"] == "learning_rate")
    assert lr["value"] == 3e-3 and not any("never applied" in n for n in warming.notes)


def test_a_sequence_level_ratio_judges_its_clip_against_gspos_range():
    """Trial 58: importance_sampling_level "sequence" (GSPO) with the token-level epsilon 0.2
    kept, num_iterations 4: the run learned, worse than the control (0.77 against 0.90 held
    out). Nothing read the GSPO switch: the next-run line said only num_iterations. A
    sequence's ratio moves by parts in 10,000: the clip to name is GSPO's 3e-4."""
    run = load_runs(TRIAL / "trl_top_p_08_temp_07.csv")[0]
    cfg = json.loads((TRIAL / "trl_top_p_08_temp_07.config.json").read_text())
    gspo = {**cfg, "importance_sampling_level": "sequence", "epsilon": 0.2,
            "num_iterations": 4}
    d = diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config=gspo))
    eps = next(s for s in d.setup if s["name"] == "epsilon")
    assert eps["verdict"] == "high" and eps["far"] and "GSPO" in eps["recipe"], eps
    said = " ".join(d.notes)
    assert "epsilon 0.2 -> 3e-4 (0.2 is 200x the top of GSPO's" in said, d.notes
    assert said.index("epsilon 0.2 -> 3e-4") < said.index("num_iterations 4 -> 1")
    # Token-level ratios keep the chapter's 0.2; verl names GSPO by its loss mode.
    token = diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config={**gspo,
                                       "importance_sampling_level": "token"}))
    assert next(s for s in token.setup if s["name"] == "epsilon")["verdict"] == "ok"
    from grpo_doctor.recipe import read_config

    verl = read_config({"actor_rollout_ref": {"actor": {"clip_ratio_low": 0.2,
                                                        "policy_loss": {"loss_mode": "gspo"}}}})
    assert verl.get("epsilon").verdict == "high"


def test_gspos_own_clip_clips_many_tokens_and_that_is_no_instability():
    """Trial 59: GSPO at its own clip (epsilon 3e-4, epsilon_high 4e-4) clipped a large share
    of tokens by design; ratio_instability read it as bursts from step 2, "learning_rate 1e-4 ->
    2.5e-6", and the plan told the GSPO run to switch to GSPO."""
    run = load_runs(TRIAL / "trl_top_p_08_temp_07.csv")[0]
    cfg = json.loads((TRIAL / "trl_top_p_08_temp_07.config.json").read_text())
    clipped = run.frame.copy()
    clipped["clip_fraction"] = 0.35 + 0.05 * np.sin(np.arange(len(clipped)))
    gspo = {**cfg, "importance_sampling_level": "sequence", "epsilon": 3e-4,
            "epsilon_high": 4e-4, "num_iterations": 2}
    changed = replace(run, frame=clipped, _finite={}, _derived={})
    d = diagnose(changed, DoctorConfig(recipe=TINY_RECIPE, run_config=gspo))
    check = d.check("ratio_instability")
    assert check.status.value == "skipped" and "large by construction" in check.summary
    assert not any("GSPO" in p.action for p in d.plan), d.plan
    token = diagnose(changed, DoctorConfig(recipe=TINY_RECIPE, run_config=cfg))
    assert token.check("ratio_instability").fired  # the same clipping, token-level: read


def test_a_held_out_score_that_stalled_while_training_went_on_is_the_prompt_pool():
    """Trial 58: 8 training prompts, the 92 others held out: training correctness 0.41 ->
    0.94, held-out correctness 0.50 -> 0.72 by step 100, then flat. It read HEALTHY: the
    held-out score it read was eval_reward (the terms' sum, 0-1.5), never compared with the
    training side. The evaluation's own correctness term is the held-out task score."""
    d = _trial("trl_pool8_heldout")
    assert d.status == "warning" and d.root_cause.mode == "no_progress", d
    assert d.root_cause.step == 120, d.root_cause
    assert "gained nothing from step 120 on while training went on" in d.root_cause.summary
    assert d.root_cause.first_action.startswith("train on more prompts, and more varied ones")
    # A harder held-out set that plateaued with the training side: no finding.
    run = load_runs(TRIAL / "trl_pool8_heldout.csv")[0]
    flat = run.frame.copy()
    column = "reward_component/correctness_reward"
    flat.loc[flat.index > 100, column] = float(flat.loc[90:100, column].mean())
    cfg = json.loads((TRIAL / "trl_pool8_heldout.config.json").read_text())
    together = diagnose(replace(run, frame=flat, _finite={}, _derived={}),
                        DoctorConfig(recipe=TINY_RECIPE, run_config=cfg))
    assert not together.check("no_progress").fired, together.check("no_progress").summary


@pytest.mark.parametrize("recipe_of", ["tiny model", "chapter"])
def test_an_entropy_bonus_a_controller_raised_is_what_to_change_first(recipe_of):
    """Trial 60: use_adaptive_entropy with entropy_target 0.32, above the entropy this policy
    held: the controller raised entropy_coef 0.015 -> 0.54 over the run, gradients spiked at
    step 45, the entropy was held up and the held-out score fell back. It read "learning_rate
    1e-4 -> 2.5e-6", the lr its twin learned cleanly at; the controller went unnamed."""
    run = load_runs(TRIAL / "trl_adaptive_entropy.csv")[0]
    cfg = json.loads((TRIAL / "trl_adaptive_entropy.config.json").read_text())
    tiny = {"recipe": TINY_RECIPE} if recipe_of == "tiny model" else {}
    rc = diagnose(run, DoctorConfig(run_config=cfg, **tiny)).root_cause
    assert rc.first_action.startswith(
        "use_adaptive_entropy True -> False, or entropy_target 0.32 -> 0.1 (under 0.16, the "
        "lowest entropy the run held): the controller raised entropy_coef from 0.01 to 0.555"), rc
    assert "learning_rate" not in rc.first_action
    assert rc.knob["name"] == "entropy_coef" and rc.knob["value"] == pytest.approx(0.555)
    assert "raised step by step by use_adaptive_entropy" in rc.summary
    # With no word of the controller in the config (a console capture alone, a tracker's
    # export: helper-79), the log's coefficient moving by one fixed step, up more than down,
    # says it; a config that turns it off says otherwise.
    unsaid = {k: v for k, v in cfg.items() if k != "use_adaptive_entropy"}
    rc = diagnose(run, DoctorConfig(run_config=unsaid, **tiny)).root_cause
    assert rc.first_action.startswith("use_adaptive_entropy True -> False"), rc
    off = {**cfg, "use_adaptive_entropy": False}
    rc = diagnose(run, DoctorConfig(run_config=off, **tiny)).root_cause
    assert "use_adaptive_entropy" not in rc.first_action


@pytest.mark.parametrize("with_config", [True, False])
def test_a_large_entropy_bonus_behind_the_crash_it_brought_is_the_root_cause(with_config):
    """Trial 60: entropy_coef 0.5. Entropy 0.31 -> 3 nats, the reward 0.78 -> 0 from step 14,
    every group equal after it. It read CRITICAL advantage_collapse, "check the task's reward
    function" (the reward had paid 0.78 at step 1), the blow-up a warning: from the start of
    the log the reward's fall was lost in medians of 0. A console capture with no config
    beside it logs the coefficient on every row: that is the setting too."""
    run = load_runs(TRIAL / "trl_entropy_coef_05.csv")[0]
    cfg = json.loads((TRIAL / "trl_entropy_coef_05.config.json").read_text())
    d = diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config=cfg if with_config else {}))
    blowup = d.check("entropy_blowup")
    assert blowup.status.value == "critical"
    assert blowup.evidence["corroboration"] == ["reward falling 0.547 -> 0 as it began"]
    assert d.root_cause.mode == "entropy_blowup", d.root_cause
    assert "entropy_coef 0.5 -> 0.005 (or remove it)" in d.root_cause.first_action
    assert "reward function" not in d.root_cause.first_action


@pytest.mark.parametrize("column", ["entropy_coef", "train/entropy_coef"])
def test_a_controllers_coefficient_is_read_from_any_log_and_its_config_beside(tmp_path, column):
    """Trial 61: the same run read through its TensorBoard events (``train/entropy_coef``,
    left unread) or its console with training_args beside it (the logged coefficient, moving
    away from the configured 0.01, "contradicted" the file, and every setting in it was
    dropped) had "learning_rate first"; read from the trainer state, the controller."""
    from grpo_doctor import recipe as recipe_module
    from grpo_doctor.run_settings import with_run_settings
    from grpo_doctor.sources import load_runs as load_with_sidecar

    frame = load_runs(TRIAL / "trl_adaptive_entropy.csv")[0].frame
    keep = {"reward_mean": "reward", "entropy": "entropy", "grad_norm": "grad_norm",
            "learning_rate": "learning_rate", "entropy_coef": column}
    rows = frame[list(keep)].rename(columns=keep)
    log = tmp_path / "console.log"
    log.write_text("".join(repr({k: f"{v:.4g}" for k, v in row.items()}) + "\n"
                           for _, row in rows.iterrows()), encoding="utf-8")
    cfg = json.loads((TRIAL / "trl_adaptive_entropy.config.json").read_text())
    (tmp_path / "training_args.json").write_text(json.dumps(cfg), encoding="utf-8")
    run = with_run_settings(load_with_sidecar(log)[0], {})
    coef = recipe_module.read_run(run).get("entropy_coef")
    assert str(coef.source).startswith(recipe_module.ADAPTIVE_ENTROPY), coef
    assert not any("contradicted by the log" in n for n in run.notes)
    rc = diagnose(run).root_cause
    assert rc.first_action.startswith("use_adaptive_entropy True -> False"), rc


def test_trial_63_a_cause_beside_a_bystander_is_named_first():
    """Trial 63 (real TRL runs, one harmful setting beside a harmless one). min_p 0.8 was
    never read, and the run, at 1.49 of 1.5 from step 1, read "the task is solved, stop
    here"; epsilon 0.002 with 6 iterations read "learning_rate 1e-4 -> 2.5e-6", the lr both
    controls learned at, and "tighter clipping (clip_ratio 0.2)"; a warm-up of 2,000 steps in
    a 200-step run carried "learned at 1e-4: keep it" under a logged peak of 1e-5."""
    cut = _trial("trl_min_p_08")
    action = cut.root_cause.first_action
    assert action.startswith("min_p 0.8 -> 0 (off)"), action
    assert "solved" not in cut.root_cause.summary.replace("solved for the cut sampler", "").replace(
        "looks solved to the cut sampler only", "")
    assert "loss_type" not in action
    tight = _trial("trl_epsilon_0.002_iter6")
    assert tight.root_cause.first_action.startswith("epsilon 0.002 -> 0.2"), tight.root_cause
    assert not any("tighter clipping" in p.action for p in tight.plan)
    assert "warmup_steps 10" not in " ".join(p.action for p in tight.plan)
    warm = _trial("trl_warmup_2000_log5")
    said = " ".join(warm.notes)
    assert "warmup_steps 2,000 -> 20" in said
    assert "learned at it" not in said


def test_a_reward_at_its_top_from_the_first_logged_steps_is_never_solved():
    """The same min_p run read without its config: nothing in the log names the sampler, but
    a reward at its top from the start learned nothing, and is not "the task is solved"."""
    run = load_runs(TRIAL / "trl_min_p_08.csv")[0]
    check = diagnose(run, DoctorConfig(recipe=TINY_RECIPE)).check("no_learning_signal")
    assert check.status == "warning"
    assert "(the task is solved)" not in check.summary
    assert "where it already was at the start" in check.summary
    assert check.remedies[0].startswith("check the rollout sampling")


def test_a_default_switched_off_is_no_second_action_for_a_reward_that_never_paid():
    """Trial 63's int-vs-str correctness check had "beta 0 -> 0.01-0.05" (TRL's default) as
    the second thing to do; beta 0 can only have contributed to format gaming."""
    d = _trial("trl_correctness_int_vs_str")
    assert d.root_cause.first_action.startswith("inspect completions against "
                                                "correctness_reward"), d.root_cause
    assert not any("beta 0" in p.action for p in d.plan), d.plan


def test_trial_64_sampling_near_random_from_the_first_step_is_the_setup_not_the_reward():
    """temperature 3.0: entropy 3.07 nats from step 1 and every reward 0 read "check the
    reward function", the temperature a note; read without its config, the same."""
    hot = _trial("trl_temperature_3")
    assert hot.root_cause.setup
    assert hot.root_cause.first_action.startswith("temperature 3 -> 1.0"), hot.root_cause
    assert "the reward function is not at fault" in hot.root_cause.first_action
    alone = diagnose(load_runs(TRIAL / "trl_temperature_3.csv")[0],
                     DoctorConfig(recipe=TINY_RECIPE))
    assert alone.root_cause.first_action.startswith("check the sampling first"), alone.root_cause


def test_trial_64_pre_clip_norms_under_a_clip_with_nothing_after_are_no_explosion():
    """16 iterations per batch log a low early norm (0.3) and an ordinary later 1-5, under
    max_grad_norm 1.0; the run learned. It had read "unrecovered spike", lr 1e-4 -> 2.5e-6.
    Without the config (the clip unknown) the spike is still said."""
    many = _trial("trl_iter16_eps_high_3")
    check = many.check("grad_explosion")
    assert check.status == "ok" and "under max_grad_norm 1" in check.summary, check
    assert many.status == "healthy"
    unknown = diagnose(load_runs(TRIAL / "trl_iter16_eps_high_3.csv")[0],
                       DoctorConfig(recipe=TINY_RECIPE))
    assert unknown.check("grad_explosion").status != "ok"


def test_trial_64_a_key_at_chance_from_the_first_step_asks_for_the_answers_first():
    """An answer column shuffled against its prompts: correctness 0.10 -> 0.106 over 200
    steps while the format was learned had read "easier prompts: out of its reach"."""
    d = _trial("trl_answers_shuffled")
    action = d.root_cause.first_action
    assert action.startswith("check a few prompts' reference answers first"), d.root_cause
    assert "easier prompts" in action  # the other reading, after


def test_trial_64_a_term_at_its_maximum_because_length_hit_the_cap_pays_length():
    """effort_reward, 1.0 per character: it saturated at the 32-token cap, and had read as a
    format term met (format_gaming first, a budget raise in the plan)."""
    d = _trial("trl_effort_reward_per_char")
    from grpo_doctor.rules.signals import role_and_reason

    run = load_runs(TRIAL / "trl_effort_reward_per_char.csv")[0]
    role, why = role_and_reason(run, "effort_reward")
    assert role == "other" and "tracks the completion length" in why
    assert d.root_cause.first_action.startswith("cap or drop the effort_reward term")
    assert not any("max_completion_length" in p.action or "max response length" in p.action
                   for p in d.plan), d.plan


def test_a_roll_back_with_no_saving_schedule_known_says_how_to_go_on_without_one():
    """Trial 64's console read alone named "a checkpoint from step 35 or before" of a run
    that saved from step 50 on, with no way on said."""
    run = load_runs(TRIAL / "trl_entropy_coef_05.csv")[0]
    rc = diagnose(run, DoctorConfig(recipe=TINY_RECIPE)).root_cause
    assert rc.first_action.startswith("roll back to a checkpoint from step 9 or before")
    assert "or restart from the initial model if none was saved by then" in rc.first_action
    # the schedule known (save_steps 50), the checkpoint is named or the restart said
    assert "if none was saved" not in _trial("trl_entropy_coef_05").root_cause.first_action


def test_trial_67_generation_kwargs_override_and_a_tiny_top_entropy_quantile_are_read():
    """generation_kwargs' max_new_tokens 6 under max_completion_length 12 read
    "max_completion_length 12 -> 48", a setting raising which changes nothing (TRL passes
    generation_kwargs last); top_entropy_quantile 0.01 (1% of tokens in the loss) was never
    read, and the run, correctness 0.37 -> 0.68 where its controls reached 0.87, read
    healthy with nothing said."""
    cut = _trial("trl_generation_kwargs_max_new_tokens_6")
    assert cut.root_cause.first_action.startswith("generation_kwargs.max_new_tokens 6 -> "), (
        cut.root_cause)
    assert "max_completion_length" not in cut.root_cause.first_action
    few = _trial("trl_top_entropy_quantile_001")
    assert few.status == "healthy"
    assert any("top_entropy_quantile 0.01 -> 0.2" in n for n in few.notes), few.notes
    assert "save_steps" not in " ".join(few.notes)  # the bystander
    banned = _trial("trl_no_repeat_ngram_size_2")
    # Session 29: at 0.23 of 1 where its controls reached 0.87, a warning (trial 67's key),
    # the setting first.
    assert banned.status == "warning" and banned.check("no_progress").fired
    said = banned.root_cause.first_action
    assert said.startswith("generation_kwargs.no_repeat_ngram_size 2 -> 0 (off)"), said
    assert "top_k" not in said  # the bystander (50)


def test_a_break_where_a_resumed_launch_begins_is_what_changed_at_the_resume(tmp_path):
    """Trial 67: temperature 1.0 -> 2.5 at a resume from checkpoint-100, entropy x25 in one
    step at 101, the console read alone (no config): it read "learning_rate 1e-4 -> 5e-5",
    the lr it was already at, and the blow-up was dated 100, the last step before the jump."""
    (run,) = load_runs(_resumed_console(tmp_path / "console.log", broke_at=101))
    assert run.resumed_at == (101,), run.notes
    d = diagnose(run)
    check = d.check("entropy_blowup")
    assert check.status == "critical" and check.onset_step == 101
    action = d.root_cause.first_action
    assert action.startswith("check what changed when the run was resumed at step 101"), action
    assert "checkpoint-100" in action and "learning_rate" not in action
    # A break before the resume was the first launch's: its checkpoint holds it (helper-88).
    (before,) = load_runs(_resumed_console(tmp_path / "early.log", broke_at=49, resumed=51))
    assert before.resumed_at == (51,)
    assert "resumed" not in diagnose(before).root_cause.first_action
    # The same break with no resume in the log is no resume's.
    (whole,) = load_runs(_resumed_console(tmp_path / "whole.log", broke_at=101, resumed=None))
    assert not whole.resumed_at
    assert "resumed" not in diagnose(whole).root_cause.first_action


def _resumed_console(path: Path, broke_at: int, resumed: int | None = 101) -> Path:
    """A TRL console of 200 steps whose entropy jumps x25 at ``broke_at`` (the reward falling
    with it), the first launch stopped at ``resumed`` + 14 and resumed from the checkpoint
    before ``resumed`` (None: one launch)."""
    rng = np.random.default_rng(67)
    steps = np.arange(1, 201)
    lr = 1e-4 * (1 - steps / 200) + 1e-7
    entropy = np.where(steps < broke_at, 0.09, 2.2) + rng.normal(0, 0.005, 200)
    reward = np.where(steps < broke_at, 0.6 + 0.7 * (1 - np.exp(-steps / 30)), 0.04)
    lines = ["{" + f"'loss': 0.01, 'grad_norm': 0.4, 'learning_rate': {lr[i]:.4g}, "
             f"'reward': {reward[i]:.4f}, 'reward_std': 0.3, 'entropy': {entropy[i]:.4f}, "
             f"'epoch': {steps[i] / 200:.3f}" + "}" for i in range(200)]
    text = "\n".join(lines) if resumed is None else (
        "\n".join(lines[:resumed + 14]) + "\nKeyboardInterrupt\n"
        + "\n".join(lines[resumed - 1:]))
    path.write_text(text + "\n")
    return path


def test_trial_68_a_sampler_in_generation_kwargs_comes_first_and_a_trackers_text_is_read():
    """repetition_penalty 5 in generation_kwargs: correctness 0.01 -> 0.09, nothing fired, and
    the note read "learning, slowly: check a few prompts' reference answers first". MLflow
    keeps generation_kwargs as text ("{'top_p': 0.1}"), which had hidden top_p 0.1."""
    from grpo_doctor.recipe import flat_config, read_config

    slow = _trial("trl_generation_kwargs_repetition_penalty_5")
    # Session 29: never "healthy" at 9% correct with every sample drawn that way: the
    # setting is the evidence the curves lacked, and leads.
    assert slow.status == "warning", slow.status
    held = slow.check("no_progress")
    assert held.fired and "every sample drawn with generation_kwargs.repetition_penalty 5" \
        in held.summary, held.summary
    action = slow.root_cause.first_action
    assert action.startswith("generation_kwargs.repetition_penalty 5 -> 1.0"), action
    assert "reference answers first" not in action
    assert "epsilon_high" not in action  # the bystander
    flat = flat_config({"generation_kwargs": "{'top_p': 0.1, 'no_repeat_ngram_size': 3}",
                        "top_p": "1.0", "note": "{not a dict"})
    assert flat["generation_kwargs.top_p"] == 0.1 and flat["note"] == "{not a dict"
    assert read_config(flat).get("top_p").value == 0.1
    banned = _trial("trl_generation_kwargs_suppress_tokens")
    action = banned.root_cause.first_action
    assert action.startswith("generation_kwargs.suppress_tokens [44] -> none (remove it)"), (
        action)
    assert "dr_grpo" not in action and "loss_type" not in action  # the bystander


def test_settings_a_resume_changed_are_read_from_the_checkpoints_and_put_back(tmp_path):
    """Trial 68: beta 0 -> 2.0 set at a resume from checkpoint-100, read from the newest
    checkpoint only and never tied to the resume; the real checkpoints' training_args.bin
    before and after it say so, and a break at the resume is answered by putting it back."""
    import shutil

    from grpo_doctor.importers.sidecar import with_sidecar_config

    shutil.copytree(TRIAL.parent / "training_args" / "resumed", tmp_path, dirs_exist_ok=True)
    (run,) = load_runs(_resumed_console(tmp_path / "console.log", broke_at=101))
    run = with_sidecar_config(run)
    assert run.changed_at_resume == {"beta": (0.0, 2.0, 150)}
    assert any(n.startswith("settings changed when the run was resumed") and
               "beta 0.0 -> 2.0 (from checkpoint-150)" in n for n in run.notes), run.notes
    action = diagnose(run).root_cause.first_action
    assert action.startswith("resume from checkpoint-100 (the one it resumed from) with "
                             "beta 2.0 -> 0.0"), action


def test_a_reward_at_its_top_from_the_step_a_resume_began_is_no_task_solved(tmp_path):
    """Trial 68: top_p 1.0 -> 0.05 at a resume from checkpoint-100, the console read alone:
    the reward at its top from step 101 on, grad norm 0, read "the task is solved: stop
    here"."""
    rng = np.random.default_rng(68)
    steps = np.arange(1, 201)
    early = np.minimum(1.45, 1.1 + 0.002 * steps + rng.normal(0, 0.05, 200))
    reward = np.where(steps < 101, early, 1.5)
    grad = np.where(steps < 101, 1.0 + rng.normal(0, 0.2, 200), 0.0)
    lines = ["{" + f"'loss': 0.0, 'grad_norm': {grad[s - 1]:.4f}, "
             f"'learning_rate': {1e-4 * (1 - s / 200):.4g}, 'reward': {reward[s - 1]:.4f}, "
             f"'reward_std': {0.3 if s < 101 else 0.0}, 'entropy': 0.1, "
             f"'epoch': {s / 200:.3f}" + "}" for s in steps]
    log = tmp_path / "console.log"
    log.write_text("\n".join(lines[:115]) + "\nKeyboardInterrupt\n"
                   + "\n".join(lines[100:]) + "\n")
    (run,) = load_runs(log)
    assert run.resumed_at == (101,)
    rc = diagnose(run).root_cause
    assert rc.first_action.startswith("check what changed when the run was resumed at "
                                      "step 101"), rc
    assert "(the task is solved)" not in rc.summary and "stop here" not in rc.first_action


def test_trial_67_groups_of_2_lead_with_the_group_size_and_the_batch_trl_needs():
    """num_generations 2 with a batch of 4: half the groups equal, the run learning slowly at
    the lr its controls learned at, read "learning_rate 1e-4 -> 2.5e-6" with the group size in
    a note (and "the task is (nearly) solved" at a score of 0.56). "num_generations 2 -> 16"
    alone would not start: TRL needs the generation batch divisible by it."""
    d = _trial("trl_num_generations_2_batch_4")
    first = d.root_cause.first_action
    assert "num_generations 2 -> 16, with per_device_train_batch_size 4 -> 32" in first, first
    assert not first.startswith("learning_rate") and "learning_rate" not in first.split(
        "num_generations")[0]
    assert d.root_cause.summary.startswith("entropy_collapse at step 1: the group size") or \
        "the group size: num_generations 2" in d.root_cause.summary, d.root_cause.summary
    assert "warmup" not in first  # the bystander
    assert "(nearly) solved" not in d.check("advantage_collapse").summary


def test_the_group_sizes_fix_holds_the_batch_trl_needs():
    from grpo_doctor.recipe import read_config

    def fix(**cfg):
        return read_config(cfg).get("num_generations").fix()

    assert fix(num_generations=2, per_device_train_batch_size=4).startswith(
        "num_generations 2 -> 16, with per_device_train_batch_size 4 -> 32")
    # Already divisible: the group alone.
    assert fix(num_generations=2, per_device_train_batch_size=32) == "num_generations 2 -> 16"
    # Steps per generation share the generation batch: 8 x 2 holds 16.
    assert fix(num_generations=2, per_device_train_batch_size=8, steps_per_generation=2) == (
        "num_generations 2 -> 16")
    four = fix(num_generations=4, per_device_train_batch_size=12, gradient_accumulation_steps=1)
    assert "per_device_train_batch_size 12 -> 48" in four, four
    # verl's group size has no such batch: the group alone.
    assert fix(**{"actor_rollout_ref.rollout.n": 2}) == "actor_rollout_ref.rollout.n 2 -> 16"


def test_trial_68_a_low_temperature_in_generation_kwargs_from_the_first_step_is_the_cause():
    """generation_kwargs temperature 0.3: 61-91% of groups equal and all-correct from the
    first steps (the policy at 1.0 was right 0.30 -> 0.50), read HEALTHY: a cut sampler's
    all-correct groups were judged only when they were not alike from the start."""
    d = _trial("trl_generation_kwargs_temperature_0.3")
    assert d.status == "warning"
    assert d.check("advantage_collapse").fired
    first = d.root_cause.first_action
    assert first.startswith("generation_kwargs.temperature 0.3 -> 1.0"), first
    assert "weight_decay" not in first  # the bystander


def test_trial_70_settings_trl_applies_quietly_are_the_cause_not_the_lr():
    """Trial 70 (real TRL runs, one harmful setting beside a bystander). delta 0.5 capped the
    on-policy ratio (a clip fraction of 0.6 from step 1) and read CRITICAL "learning_rate 1e-4
    -> 2.5e-6" on a run that learned; temperature 2.5 in generation_kwargs read "entropy
    collapse: learning_rate first"; groups of 2 read HEALTHY ("solved groups" at 0.68); a
    polynomial power of 10 (its floor 1.0000001e-07 logged a hair above the line) read
    HEALTHY; beta 8 with the reference synced every step (KL 0) read "the KL term holds it"."""
    capped = _trial("trl_delta_0.5")
    assert capped.status == "healthy", capped.status
    assert "by construction" in (capped.check("ratio_instability").reason or ""), (
        capped.check("ratio_instability"))
    assert any("delta 0.5 -> None (off), or 1.5-2" in n for n in capped.notes), capped.notes
    assert "adam_beta1 0.85 ->" not in " ".join(capped.notes)  # the bystander
    hot = _trial("trl_generation_kwargs_temperature_2.5")
    first = hot.root_cause.first_action
    assert "generation_kwargs.temperature 2.5 -> 1.0" in first, first
    assert "learning_rate" not in first and "max_grad_norm" not in first, first
    pairs = _trial("trl_num_generations_2_cosine")
    assert pairs.status == "warning" and pairs.check("advantage_collapse").fired
    first = pairs.root_cause.first_action
    assert first.startswith("num_generations 2 -> 16, with per_device_train_batch_size 4 -> 32"), (
        first)
    assert "cosine" not in first
    steep = _trial("trl_polynomial_power_10")
    assert steep.status == "warning" and steep.check("no_learning_signal").fired
    first = steep.root_cause.first_action
    assert first.startswith("fix the learning-rate schedule") and "power 10" in first, first
    assert "weight_decay" not in first
    synced = _trial("trl_beta_8_ref_synced_every_step")
    assert synced.status == "healthy", [c for c in synced.checks if c.fired]
    # A sequence-level clip 30x tighter than GSPO's: its clip fraction is the setting's harm,
    # not GSPO's design (it had been skipped as "large by construction").
    tight = _trial("trl_sequence_epsilon_1e-5_iter4")
    assert tight.check("ratio_instability").fired
    first = tight.root_cause.first_action
    assert first.startswith("epsilon 1e-5 -> 3e-4"), first
    assert "save_steps" not in first and "learning_rate" not in first


def test_a_delta_below_one_plus_epsilon_is_read_and_a_fine_one_is_not():
    from grpo_doctor.recipe import read_config

    low = read_config({"delta": 0.5}).get("delta")
    assert low.verdict == "low" and low.far and low.fix() == "delta 0.5 -> None (off), or 1.5-2"
    assert read_config({"delta": 1.5}).get("delta").verdict == "ok"
    assert read_config({}).get("delta").verdict == "not set"


def test_odd_batch_values_a_nested_delta_and_another_schedules_power_are_left_alone():
    """helper-93: an infinite batch crashed preflight; a Huber loss's or a reward model's
    "delta" was read as TRL's; a delta of 1.25 (TRL's own, above 1) turned the ratio check off;
    a cosine's lr_scheduler_kwargs power was named."""
    from grpo_doctor.recipe import read_config
    from grpo_doctor.rules.no_learning_signal import _steep_power
    from grpo_doctor.rules.signals import two_sided_cap

    for batch in (float("inf"), 0, -4, 4.7, "four", None, True):
        fix = read_config({"num_generations": 2, "per_device_train_batch_size": batch}).get(
            "num_generations").fix()
        assert fix.startswith("num_generations 2 -> 16"), (batch, fix)
    assert read_config({"loss": {"huber": {"delta": 0.5}}}).get("delta").verdict == "not set"
    assert read_config({"delta": 1.25}).get("delta").verdict == "ok"
    run = make_run(reward=np.linspace(0.1, 0.5, 30))
    run.config.update({"delta": 1.25, "epsilon_high": 0.28})
    assert two_sided_cap(run) is None
    run.config.update({"delta": 0.5})
    assert two_sided_cap(run) == 0.5
    run.config.clear()
    run.config.update({"reward_model": {"delta": 0.5}})
    assert two_sided_cap(run) is None
    run.config.clear()
    run.config.update({"lr_scheduler_type": "cosine", "lr_scheduler_kwargs": {"power": 10}})
    assert _steep_power(run) is None
    run.config.update({"lr_scheduler_type": "polynomial"})
    assert _steep_power(run) == 10


def test_trial_71_greedy_decoding_a_minimum_length_and_a_penalty_below_1_are_read():
    """Trial 71: do_sample False in generation_kwargs read "check the reward function: it
    returned 1.5 for every one"; min_new_tokens 12 at a budget of 12 read "check the stop";
    repetition_penalty 0.5 was "within the recipe". Validation's own greedy decoding (verl's
    val_kwargs.do_sample False, its default) is no rollout setting."""
    from grpo_doctor.recipe import read_config

    greedy = _trial("trl_generation_kwargs_do_sample_false")
    first = greedy.root_cause.first_action
    assert first.startswith("generation_kwargs.do_sample false -> True"), first
    assert greedy.root_cause.setup and "save_steps" not in first
    floor = _trial("trl_generation_kwargs_min_new_tokens_12")
    first = floor.root_cause.first_action
    assert first.startswith("generation_kwargs.min_new_tokens 12 -> 0 (off)"), first
    assert "beta" not in first
    assert read_config({"actor_rollout_ref": {"rollout": {"val_kwargs": {"do_sample": False}}}}
                       ).get("do_sample").verdict == "not set"
    # VESPO's power at 50: gradient norms to 7.5e7, read "learning_rate 1e-4 -> 2.5e-6".
    vespo = _trial("trl_vespo_k_pos_50")
    first = vespo.root_cause.first_action
    assert first.startswith("vespo_k_pos 50 -> 2"), first
    assert "warmup" not in first and "learning_rate" not in first
    assert read_config({"vespo_k_pos": 50, "loss_type": "dapo"}).get("vespo_k_pos").verdict == (
        "not applicable")
    low = read_config({"repetition_penalty": 0.5}).get("repetition_penalty")
    assert low.verdict == "low" and low.far and low.sentence() == (
        "repetition_penalty 0.5 is below the recipe's 1")


def test_the_new_sampler_settings_are_read_only_as_the_rollout_applies_them():
    """helper-97: min_new_tokens 1 beside a budget of 2,048 led a run; an evaluation's
    generation_kwargs.do_sample False, and an unset "None" or NaN, read as greedy decoding;
    a nested delta hid TRL's own top-level one."""
    from grpo_doctor.recipe import read_config

    def verdict(cfg, name):
        return read_config(cfg).get(name).verdict

    assert verdict({"min_new_tokens": 1, "max_completion_length": 2048}, "min_new_tokens") == "ok"
    assert verdict({"generation_kwargs": {"min_new_tokens": 12}, "max_completion_length": 12},
                   "min_new_tokens") == "high"
    assert verdict({"min_new_tokens": -5}, "min_new_tokens") == "ok"
    assert not read_config({"min_new_tokens": 8}).get("min_new_tokens").outside  # no budget
    assert verdict({"eval": {"generation_kwargs": {"do_sample": False}}}, "do_sample") == (
        "not set")
    for unset in ("None", float("nan"), ""):  # (unset as a tracker keeps it: never greedy)
        assert verdict({"generation_kwargs": {"do_sample": unset}}, "do_sample") in (
            "unknown", "not set")
    assert verdict({"generation_kwargs": {"do_sample": False}}, "do_sample") == "off"
    assert verdict({"a": {"delta": 2.0}, "delta": 0.5}, "delta") == "low"
    healthy = _trial("trl_budget_8")
    assert "min_new_tokens" not in healthy.root_cause.first_action


def test_rewards_weighted_to_nothing_are_said_and_no_lr_is_blamed_for_no_update(tmp_path):
    """Trial 72, live: reward_weights [0, 0] (the reward 0 while correctness and format paid,
    a gradient of 0 from step 1) read "restart ... learning_rate 2e-4 -> 1e-6" for 59 steps:
    no update moved the weights, so no lr moved them too far."""
    rng = np.random.default_rng(72)
    rows = ["{" + f"'loss': '0', 'grad_norm': '0', 'learning_rate': '0.0002', "
            f"'rewards/correctness_reward/mean': '{0.3 + 0.05 * rng.random():.4f}', "
            f"'rewards/format_reward/mean': '{0.4 + 0.05 * rng.random():.4f}', 'reward': '0', "
            f"'reward_std': '0', 'frac_reward_zero_std': '1', 'entropy': '0.33', "
            f"'epoch': '{s / 100:.3f}'" + "}" for s in range(1, 13)]
    log = tmp_path / "console.log"
    log.write_text("\n".join(rows) + "\n")
    first = diagnose(load_runs(log)[0]).root_cause.first_action
    assert first.startswith("check the reward's weights: the reward was 0 on every logged step"), (
        first)
    assert "learning_rate" not in first


def test_many_passes_over_a_batch_come_before_an_lr_the_run_learned_at_behind_a_sharpening():
    """Trial 72: num_iterations 12 with the clip opened wide; its entropy fell as its
    controls' did, and the lr they learned at was named. Passes far above the recipe are a
    known cause of the sharpening too, and far outside they come first."""
    from grpo_doctor.recipe import read_config

    setup = read_config({"num_iterations": 12, "learning_rate": 1e-4})
    assert [r.id for r in setup.causes({"entropy_collapse"}, critical=False)] == [
        "num_iterations"]
    assert not read_config({"num_iterations": 2}).get("num_iterations").outside


def test_trial_72_a_warm_up_past_where_the_reward_peaked_goes_back_to_that_lr():
    """A warm-up-stable-decay schedule to 3e-3: the reward rose 0.78 -> 1.2 by step ~20 (3x its
    step noise), then fell to 0 as the lr kept rising. It read "learning_rate 0.003 -> 1e-6",
    500x below the lr it learned at: the overshoot needed a gain 6x its noise."""
    d = _trial("trl_warmup_stable_decay_3e-3")
    first = d.root_cause.first_action
    assert first.startswith("learning_rate 0.003 -> 9e-4 (its value when the reward peaked"), (
        first)
    assert "adam_beta2" not in first


def test_an_lr_read_off_the_log_alone_within_a_lora_range_is_no_next_run_note(tmp_path):
    """Trial 74: an mlx-lm LoRA run (its log says nothing of LoRA, no config beside it) at
    1e-5 had read "for the next run: learning_rate 1e-5 -> 2.5e-6 (2x the recipe's
    ceiling)", a full fine-tune's ceiling said as fact. Past the LoRA range it is said."""
    def mlx(lr: float) -> str:
        return "".join(f"Iter {i}: Train loss 0.0{i % 7}, Total rewards mean 0.{i % 5 + 2}, "
                       f"Total rewards std 0.3, KL 0.00{i % 3}, Learning Rate {lr:.3e}, "
                       f"It/sec 0.1\n" for i in range(1, 31))
    for lr, noted in ((1e-5, False), (2e-4, True)):
        log = tmp_path / f"mlx_{lr}.log"
        log.write_text(mlx(lr))
        d = diagnose(load_runs(log)[0])
        said = any("for the next run: learning_rate" in n for n in d.notes)
        assert said is noted, (lr, d.notes)


def _stalled_trl_run(reward: np.ndarray, alike: np.ndarray, lr: float) -> Run:
    n = len(reward)
    rng = np.random.default_rng(7)
    return make_run(reward=reward, reward_std=np.where(alike >= 1, 0.0, 0.34),
                    entropy=0.6 + rng.normal(0, 0.004, n), kl=np.full(n, 0.001),
                    grad_norm=np.where(reward == 0, 0.0, 0.4 + rng.normal(0, 0.02, n)),
                    learning_rate=np.full(n, lr), frac_reward_zero_std=alike,
                    **{"completions/mean_length": 200 + rng.normal(0, 3, n)})


def test_an_lr_of_0_set_and_logged_comes_before_what_the_initial_model_does():
    """h99: learning_rate 0 in the config and 0 at every logged step, 60% of groups alike:
    "look at a few equal-reward groups ... harder prompts", or with groups of 2
    "num_generations 2 -> 16"; the lr was never named, and nothing else can change while no
    update moves the weights."""
    n = 200
    rng = np.random.default_rng(3)
    run = _stalled_trl_run(0.3 + rng.normal(0, 0.03, n), 0.6 + rng.normal(0, 0.03, n), 0.0)
    for cfg in ({"learning_rate": 0.0, "num_generations": 8},
                {"learning_rate": 0.0, "num_generations": 2,
                 "per_device_train_batch_size": 4}):
        first = diagnose(replace(run, config=cfg)).root_cause.first_action
        assert first.startswith("learning_rate 0 -> "), (cfg, first)
        assert "restart" not in first


def test_a_reward_that_never_left_0_is_not_blamed_on_the_group_size():
    """h99: a reward of exactly 0 on every step (groups of 2, every group alike) read "the
    group size: num_generations 2 -> 16"; a reward that never paid has nothing to agree on.
    The reward and its format are what to check, as without the config."""
    n = 200
    run = replace(_stalled_trl_run(np.zeros(n), np.ones(n), 1e-6),
                  config={"learning_rate": 1e-6, "num_generations": 2,
                          "per_device_train_batch_size": 4})
    cause = diagnose(run).root_cause
    assert "num_generations" not in cause.first_action, cause.first_action
    assert "num_generations" not in cause.summary, cause.summary


def test_a_reward_models_or_evaluations_sampler_is_not_the_rollouts():
    """h99: a reward model's generation.repetition_penalty 2 made preflight critical, as if
    the rollout sampled with it. The rollout's own keys are still read."""
    other = recipe.read_config({"reward_model": {"generation": {"repetition_penalty": 2.0,
                                                                "temperature": 0.1}},
                                "evaluation": {"top_p": 0.1}})
    assert all(not r.outside for r in other.readings
               if r.id in ("repetition_penalty", "temperature", "top_p")), other.outside
    own = recipe.read_config({"generation_kwargs": {"repetition_penalty": 2.0},
                              "temperature": 0.1})
    assert {r.id for r in own.outside} >= {"repetition_penalty", "temperature"}


def test_a_schedule_floor_above_the_peak_lr_is_named_not_the_lr():
    """Trial 73: cosine_with_min_lr with min_lr 3e-3 above learning_rate 1e-4 (MLflow's params,
    text): the lr climbed to 3e-3 and the reward fell as it rose. It read "learning_rate 0.003
    -> 3.4e-4", a value the config never set, which would leave the climb in place."""
    d = _trial("trl_cosine_min_lr_above_peak")
    first = d.root_cause.first_action
    assert first.startswith("lr_scheduler_kwargs.min_lr 0.003 -> 1e-5 (below learning_rate "
                            "1e-4"), first
    assert "keep learning_rate 1e-4" in first and "checkpoint-40" in first


def test_a_reward_term_that_scores_each_prompt_not_each_completion_is_fixed_first():
    """Trial 73: correctness copied from each group's first completion to all 8: its step
    means only ever 0, 1/4, 2/4, 3/4 (4 groups a step) while the format term told the
    completions apart. It read "look at a few equal-reward groups: if all right, harder
    prompts ...", the reward bug a third branch."""
    d = _trial("trl_reward_scored_per_prompt")
    first = d.root_cause.first_action
    assert first.startswith("check the reward function correctness_reward on a few groups: "
                            "it never split one"), first
    assert "it scores each prompt, not each completion" in first
    # A score per completion (its means finer than the groups' grid) is no such thing.
    assert not any(_trial(name).check("advantage_collapse").evidence.get("scored_per_prompt")
                   for name in ("trl_generation_kwargs_temperature_0.3",
                                "trl_num_generations_2_batch_4", "trl_num_generations_2_cosine"))


def test_mlflow_params_none_as_text_is_not_set():
    """Trial 73: an MLflow run's params (min_p "None", epsilon_high "None") given with
    --train-config were refused as "not a number": Python's None kept as text is not set."""
    cfg = recipe.flat_config({"min_p": "None", "epsilon_high": "None", "learning_rate": 1e-4})
    setup = recipe.read_config(cfg)
    assert setup.get("min_p").verdict == "not set" and recipe.bad_value(setup.get("min_p")) is None


def test_a_reward_that_first_paid_is_no_gradient_explosion_and_its_return_to_0_no_crash():
    """Trial 73: a template that prefilled the answer tag, so the reward was 0 on 96% of
    steps. Where a few completions first scored (steps 33-40) the grad norm rose from the KL
    term's 0.004 to 1-7, read "gradient norm exploding ... against a baseline of 0.00438",
    and the reward's return to 0 "reward crash 0.0625 -> 0", a roll-back to before step 41
    (no checkpoint was saved by then)."""
    d = _trial("trl_prompt_prefills_answer_tag")
    assert not d.check("grad_explosion").fired, d.check("grad_explosion").summary
    assert not d.check("reward_overfit").fired, d.check("reward_overfit").summary
    assert d.root_cause.first_action.startswith("check the reward function"), \
        d.root_cause.first_action
    assert not any("roll back" in p.action for p in d.plan), [p.action for p in d.plan]


def test_cispos_cap_is_not_judged_as_a_clip_range():
    """Trial 73: under loss_type cispo, epsilon_high 0.01 read "for the next run:
    epsilon_high 0.01 -> 0.28 (below the recipe's 0.2-0.35)" beside the CISPO note's "5.0":
    CISPO's epsilon_high is the weight's cap itself, read by that note alone."""
    assert recipe.read_config({"loss_type": "cispo", "epsilon_high": 0.01}).get(
        "epsilon_high").verdict == "not applicable"
    assert recipe.read_config({"epsilon_high": 0.01}).get("epsilon_high").verdict == "low"


def test_a_roll_back_past_checkpoints_save_total_limit_deleted_says_so():
    """Trial 75: save_steps 50 with save_total_limit 2 over 320 steps, broken at step 82:
    "restart from the initial model (save_steps 50 saved no checkpoint before step 82: the
    first is checkpoint-50)" read against itself; the limit had deleted it."""
    from grpo_doctor.root_cause import _rollback_words

    n = 320
    run = replace(make_run(reward=np.linspace(0.2, 0.8, n)),
                  config={"save_steps": 50, "save_total_limit": 2})
    words = _rollback_words(run, 82, best=False)
    assert words == ("restart from the initial model (save_total_limit 2 kept only "
                     "checkpoint-250, checkpoint-300: none from before step 82 is left)"), words
    kept_all = replace(run, config={"save_steps": 50})
    assert _rollback_words(kept_all, 82, best=False).startswith("roll back to checkpoint-50")


def test_transformers_truncation_samplers_far_outside_are_a_near_greedy_setup():
    """Trial 75: generation_kwargs epsilon_cutoff 0.3 sampled only tokens likelier than 0.3:
    every group alike from step 1, the entropy at 0.31. It read "check the reward function
    ... it returned 1.5"; epsilon_cutoff, eta_cutoff and typical_p were read by no setting."""
    first = _trial("trl_generation_kwargs_epsilon_cutoff_0.3").root_cause.first_action
    assert first.startswith("generation_kwargs.epsilon_cutoff 0.3 -> 0 (off)"), first
    assert "no roll-back" in first
    read = recipe.read_config({"generation_kwargs": {"eta_cutoff": 0.05, "typical_p": 0.2}})
    assert {r.id for r in read.outside if r.far} == {"eta_cutoff", "typical_p"}
    within = recipe.read_config({"generation_kwargs": {"epsilon_cutoff": 6e-4,
                                                       "typical_p": 1.0}})
    assert not within.outside


def test_an_absurd_grad_norm_is_a_finding_even_where_every_group_was_alike():
    """h103: with every group alike on every step, a norm climbing from 0.004 to 13,838 had
    been skipped as "0 on 120 of 120"."""
    n = 120
    g = np.full(n, 0.004)
    g[-2:] = [12000.0, 13838.0]
    run = make_run(reward=np.zeros(n), reward_std=np.zeros(n), grad_norm=g,
                   frac_reward_zero_std=np.ones(n))
    check = diagnose(run).check("grad_explosion")
    assert check.status == "critical" and "13,838" in check.summary, check.summary


def test_a_reward_that_held_a_level_then_crashed_to_its_old_floor_is_a_crash():
    """h103: 0 for 70 steps, 0.8 for 40, then 0 for good: a real crash (only a brief blip
    back to the floor is none)."""
    rng = np.random.default_rng(2)
    r = np.r_[np.zeros(70), 0.8 + rng.normal(0, 0.02, 40), np.zeros(40)]
    check = diagnose(make_run(reward=r)).check("reward_overfit")
    assert check.status == "critical" and "crash" in check.summary, check.summary


def test_an_lr_of_0_in_a_config_the_log_contradicts_is_not_the_cause():
    """h103: lr 0 in the config while the reward rose 0.1 -> 0.9 and the entropy collapsed:
    "the weights never moved" said of a run that learned."""
    n = 200
    t = np.arange(n)
    run = replace(make_run(reward=0.1 + 0.8 * t / n, entropy=0.75 * np.exp(-t / 40),
                           frac_reward_zero_std=np.full(n, 0.6)),
                  config={"learning_rate": 0.0})
    cause = diagnose(run).root_cause
    assert cause is None or "never moved" not in cause.summary, cause


def test_a_negative_min_new_tokens_and_a_text_cispo_cap_are_refused():
    """h103: min_new_tokens -5 read "ok", and epsilon_high 'abc' under CISPO "not judged",
    where their neighbours' bad values are refused."""
    for cfg in ({"generation_kwargs": {"min_new_tokens": -5}},
                {"loss_type": "cispo", "epsilon_high": "abc"}):
        setup = recipe.read_config(cfg)
        assert any(recipe.bad_value(r) for r in setup.readings), cfg
    assert recipe.as_flag(float("nan")) is None


def test_completions_far_short_of_the_budget_are_not_truncated_at_it():
    """Trial 75: generation_kwargs eos_token_id 43 ('>') ended every completion at '<a>', 3-6
    tokens under a 12-token budget; TRL counts a completion without the tokenizer's end token
    as clipped, and the live watch raised "length hacking: 95% truncated at the cap ... raise
    the cap" at several polls. Short completions were cut by no cap."""
    from grpo_doctor.recipe import flat_config

    run = load_runs(TRIAL / "trl_generation_kwargs_eos_token_id_43.csv")[0]
    cfg = flat_config(json.loads(
        (TRIAL / "trl_generation_kwargs_eos_token_id_43.config.json").read_text()))
    for step in (26, 51, 61, 136, 200):
        d = diagnose(run.truncated(step), DoctorConfig(recipe=TINY_RECIPE, run_config=cfg))
        assert not d.check("length_hacking").fired, (step, d.check("length_hacking").summary)
    # Nor is an entropy that moved with what it sampled a blow-up, with the gradient 0 and
    # every group alike on all 200 steps (it had read "entropy x8.1", an lr cut in the plan).
    assert d.check("entropy_blowup").status.value == "skipped", d.check("entropy_blowup")
    assert not any("learning_rate" in p.action for p in d.plan), [p.action for p in d.plan]


def test_a_term_that_began_paying_for_length_late_is_named():
    """Trial 75: a neutral-named completeness bonus (1.0 for any completion over 12
    characters) at 0 for 250 steps, then rising with the length: the length drift read
    "length-normalise the reward" without the term, its rank correlation with the length 0.80
    over the log (0.99 over its last quarter)."""
    first = _trial("trl_completeness_bonus_late").root_cause.first_action
    assert first.startswith("cap or drop the completeness_reward term"), first


def test_periodic_reward_drops_on_prompts_served_in_order_are_the_datas_slices():
    """Trial 75: a dataset sorted by answer, shuffle_dataset False: the reward fell at steps
    51, 101 and 151, each a new answer digit. It read "roll back to checkpoint-50, then
    learning_rate 1e-4 -> 5e-5". Shuffled, the same drops would be the policy's own."""
    d = _trial("trl_dataset_sorted_unshuffled")
    first = d.root_cause.first_action
    assert first.startswith("shuffle the training prompts (shuffle_dataset False -> True): "
                            "the reward fell at steps 51, 101, 151, every 50 steps"), first
    assert "roll back to" not in first
    from grpo_doctor.recipe import flat_config

    run = load_runs(TRIAL / "trl_dataset_sorted_unshuffled.csv")[0]
    cfg = {k: v for k, v in flat_config(json.loads(
        (TRIAL / "trl_dataset_sorted_unshuffled.config.json").read_text())).items()
        if k != "shuffle_dataset"}
    shuffled = diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config=cfg))
    assert not shuffled.root_cause.first_action.startswith("shuffle")


def test_h105_a_critics_floor_a_hair_above_or_a_bad_floor_is_no_contradiction():
    """h105: a critic's min_lr compared with the actor's lr made preflight critical and was
    named as the actor's overshoot; a floor 5% above the lr, or a NaN, negative or infinite
    one, read "the lr will climb". Only the policy's own floor half again above its lr."""
    floor = recipe.schedule_floor_above
    assert floor(recipe.flat_config({"actor_rollout_ref": {"actor": {"optim": {
        "lr": 1e-6, "min_lr_ratio": 0.1}}}, "critic": {"optim": {"lr": 1e-5,
                                                                  "min_lr": 2e-6}}})) is None
    for bad in (1.05e-5, float("nan"), -1e-3, float("inf"), "nan"):
        assert floor({"learning_rate": 1e-5, "lr_scheduler_kwargs.min_lr": bad}) is None, bad
    assert floor({"learning_rate": 1e-5, "lr_scheduler_type": "constant_with_warmup",
                  "lr_scheduler_kwargs.min_lr": 1e-3}) is None
    assert floor({"learning_rate": 1e-5, "lr_scheduler_kwargs.min_lr": 1e-3})[0] == (
        "lr_scheduler_kwargs.min_lr")
    for bad in ({"epsilon_cutoff": 1}, {"eta_cutoff": 2.0}):
        reading = recipe.read_config({"generation_kwargs": bad}).get(next(iter(bad)))
        assert recipe.bad_value(reading), bad
    assert not recipe.read_config({"eval_generation_kwargs": {"epsilon_cutoff": 0.3}}).outside


def test_h105_a_hard_cap_the_config_does_not_name_is_truncation_still():
    """h105: vLLM's max_tokens 256 under a configured 1024 cut every completion at 256 late in
    the run: the 'far short of the budget' exemption (for completions that end without the
    end token, at lengths that vary) had hidden the pile-up."""
    n = 200
    late = np.arange(n) >= 150
    run = replace(make_run(reward=np.full(n, 0.5), truncation_ratio=np.where(late, 0.92, 0.0),
                           response_length_mean=np.where(late, 255.0, 120.0),
                           response_length_max=np.where(late, 256.0, 200.0)),
                  config={"max_completion_length": 1024})
    assert diagnose(run).check("length_hacking").fired


def test_trial_76_a_sampler_and_a_slow_lr_on_runs_that_stayed_low():
    """Trial 76 (real TRL runs). temperature 1.6 (outside the recipe's 1-1.2, not far):
    correctness 0.17 -> 0.49 read healthy with "check the reference answers first", the
    temperature unsaid. lr 1e-5 (0.35 -> 0.42) read "learned at it: keep it" beside "the task's
    own score is still low". typical_p 0.05, off the policy's mode from step 1 (entropy up,
    correctness 0.01), read "learning_rate 1e-4 -> 2.5e-6", and the inert prompt-length term
    (0.4 for every completion) raised a warning of its own."""
    hot = _trial("trl_temperature_1.6_cosine")
    low = next(n for n in hot.notes if n.startswith("no failure mode fired, but the task"))
    # (Its score flat over the second half, the policy sharpened: stalled, not slow.)
    assert "since step 101: temperature 1.6 -> 1.0" in low and "first, then check" in low, low
    slow = _trial("trl_lr_1e-5_max_grad_norm_0.01")
    assert slow.status == "healthy"
    assert not any("keep it" in n for n in slow.notes), slow.notes
    # With the model's own recipe (the tiny one's start, 1e-4) the step is what to raise.
    low = next(n for n in slow.notes if n.startswith("no failure mode fired, but the task"))
    assert low.endswith("(learning_rate 1e-5 -> 1e-4)"), low
    typical = _trial("trl_generation_kwargs_typical_p_0.05")
    first = typical.root_cause.first_action
    assert first.startswith("generation_kwargs.typical_p 0.05 -> 1.0"), first
    assert typical.check("advantage_collapse").status == "ok", typical.check(
        "advantage_collapse").summary
    assert "prompt_len_reward" in typical.check("advantage_collapse").summary


def test_trial_77_a_data_slice_and_two_samplers_read_as_the_cause():
    """Trial 77 (real TRL runs). Harder prompts from step 121 of a dataset served in order
    (correctness 0.83 -> 0.11 at once, the completions unchanged, an entropy near its floor
    0.071 -> 0.084) read "entropy collapse at step 1: restart, lr 1e-4 -> 2.5e-6": a 15%
    move of an entropy of 0.07 counted as the policy changing. begin_suppress_tokens (no
    answer tag could open a completion) was not read: healthy. exponential_decay_length_penalty
    ended every completion before its answer from step 1: "check a few completions"."""
    sliced = _trial("trl_harder_prompts_from_121_unshuffled")
    assert sliced.root_cause.step == 121, sliced.root_cause
    first = sliced.root_cause.first_action
    assert first.startswith("look at the prompts served from step 121 on"), first
    assert "learning_rate" not in first and "restart" not in first, first
    suppressed = _trial("trl_generation_kwargs_begin_suppress_tokens")
    assert suppressed.status == "warning"
    assert suppressed.root_cause.first_action.startswith(
        "generation_kwargs.begin_suppress_tokens [42] -> none"), suppressed.root_cause
    decayed = _trial("trl_generation_kwargs_exponential_decay_length_penalty")
    first = decayed.root_cause.first_action
    assert first.startswith("generation_kwargs.exponential_decay_length_penalty"), first
    assert "-> none (remove it)" in first and "restart" not in first, first


def test_an_entropy_that_fell_at_the_drop_is_the_policys_not_new_prompts(tmp_path):
    """h111: trial 77's harder slice from step 121 with its entropy made to fall 58% there
    (0.071 -> 0.030, 0.04 nats) read "the completions did not change: the prompts changed":
    the allowance for an entropy near its floor is for a rise (new prompts), not a fall."""
    import pandas as pd

    from grpo_doctor.recipe import flat_config

    frame = pd.read_csv(TRIAL / "trl_harder_prompts_from_121_unshuffled.csv")
    frame.loc[frame["step"] >= 121, "entropy"] *= 0.42
    path = tmp_path / "fell.csv"
    frame.to_csv(path, index=False)
    cfg = flat_config(json.loads(
        (TRIAL / "trl_harder_prompts_from_121_unshuffled.config.json").read_text()))
    cause = diagnose(load_runs(path)[0], DoctorConfig(recipe=TINY_RECIPE,
                                                      run_config=cfg)).root_cause
    assert "the prompts changed, not the policy" not in cause.summary, cause.summary


def test_trial_78_a_lenient_check_and_a_budget_cut_mid_run():
    """Trial 78 (real TRL runs). A paid check at 1.0 from step 2 beside the exact check at
    0.33 (weighed 0) read healthy: the reward, at its top early, never "rose". A budget cut to
    7 tokens at step 201 (every completion cut there, under a configured 12) read "entropy
    collapse at step 1: restart, lr": the signs after the cut were counted as the
    sharpening's, which its control made too."""
    lenient = _trial("trl_lenient_check_exact_at_weight_0")
    assert lenient.status == "warning" and lenient.root_cause.mode == "reward_hacking"
    assert lenient.root_cause.first_action.startswith(
        "check correctness_reward on a few completions against exact_correctness")
    cut = _trial("trl_budget_cut_to_7_at_201")
    assert cut.root_cause.step == 201, cut.root_cause
    first = cut.root_cause.first_action
    assert first.startswith("restore the completion budget: from step 201 every completion "
                            "was cut at 7 tokens"), first
    assert "roll back to checkpoint-200" in first and "learning_rate" not in first, first
    assert cut.check("entropy_collapse").status != "critical"


def test_a_run_that_learned_until_something_else_broke_it_keeps_its_lr():
    """Trial 78: a run that learned at lr 1e-4 until its answer key shifted at step 180 read
    "for the next run: learning_rate 1e-4 -> 2.5e-6" (20x the chapter's ceiling, a larger
    model's), a value this model learns nothing at. Its own run is the evidence, as a healthy
    run's is: the harder slice from step 121 broke it, not the step size."""
    from grpo_doctor.recipe import flat_config

    name = "trl_harder_prompts_from_121_unshuffled"
    run = load_runs(TRIAL / f"{name}.csv")[0]
    cfg = flat_config(json.loads((TRIAL / f"{name}.config.json").read_text()))
    d = diagnose(run, DoctorConfig(run_config=cfg))  # the chapter's own recipe
    assert "learning_rate" not in d.root_cause.first_action
    assert not any("learning_rate 1e-4 -> " in n for n in d.notes), d.notes
    assert any("yet this run learned at it: keep it" in n for n in d.notes), d.notes


def test_a_reward_that_gives_every_completion_of_a_step_one_score_is_named():
    """Trial 78: a correctness term returning the batch's total to each completion (its own
    logged std 0 on all 200 steps, its mean moving 5-18) read "look at a few equal-reward
    groups: if all right, harder prompts ..."."""
    d = _trial("trl_reward_batch_total_to_each")
    first = d.root_cause.first_action
    assert first.startswith("fix the reward function correctness_reward: its spread over the "
                            "step's completions was 0 on all 200 logged steps"), first


def _trial_edited(tmp_path, name: str, edit):
    """A trial run with its CSV edited by ``edit(frame)``, diagnosed as ``_trial`` does."""
    import pandas as pd

    from grpo_doctor.recipe import flat_config

    frame = pd.read_csv(TRIAL / f"{name}.csv")
    edit(frame)
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    cfg = flat_config(json.loads((TRIAL / f"{name}.config.json").read_text()))
    return diagnose(load_runs(path)[0], DoctorConfig(recipe=TINY_RECIPE, run_config=cfg))


def test_hostile_h114_reads_of_the_day_s_last_changes(tmp_path):
    """h114: a paid term infinite on every step crashed (then, half mended, hung in LAPACK's
    least squares); an unpaid check logged at -0.33 read as a 0-1 score far below the paid
    one; a term's std logged on 20 of 200 steps read "0 on all 200 logged steps"."""
    import numpy as np

    def paid_inf(f):
        f["rewards/correctness_reward/mean"] = np.inf

    assert _trial_edited(tmp_path, "trl_lenient_check_exact_at_weight_0", paid_inf).status

    def negative(f):
        f["rewards/exact_correctness/mean"] = -f["rewards/exact_correctness/mean"]

    flipped = _trial_edited(tmp_path, "trl_lenient_check_exact_at_weight_0", negative)
    assert flipped.check("reward_hacking").status != "warning", flipped.check(
        "reward_hacking").summary

    def sparse_std(f):
        f.loc[f.index[20:], "rewards/correctness_reward/std"] = np.nan

    sparse = _trial_edited(tmp_path, "trl_reward_batch_total_to_each", sparse_std)
    assert "was 0 on all 20 logged steps" in sparse.root_cause.first_action


def test_beam_search_and_a_truncation_sampler_are_no_solved_task():
    """Trial 79: num_beams 4 (every group equal and all-correct from step 1, grad norm 0) and
    eta_cutoff 0.3 (groups all-correct from step 121) read healthy, "the task is (nearly)
    solved"; sampled plainly the policies were right 31% and 57% of the time."""
    beams = _trial("trl_generation_kwargs_num_beams_4")
    assert beams.status == "warning"
    assert beams.root_cause.first_action.startswith("generation_kwargs.num_beams 4 -> 1")
    eta = _trial("trl_generation_kwargs_eta_cutoff_0.3")
    assert eta.status == "warning"
    assert eta.root_cause.first_action.startswith("generation_kwargs.eta_cutoff 0.3 -> 0 (off)")
    assert "solved to the cut sampler only" in eta.check("advantage_collapse").summary


def test_a_stop_token_changed_mid_run_is_restored_and_rolled_back_before():
    """Trial 79: from step 181 generation stopped at ">" (eos_token_id): every completion 3
    tokens under a budget of 12, counted as cut. It read "entropy collapse at step 1: restart,
    beta", then "roll back, learning_rate 1e-4 -> 5e-5"; the sharpening before it was the
    control's own."""
    d = _trial("trl_eos_token_gt_from_181")
    first = d.root_cause.first_action
    assert first.startswith("restore how completions stop: from step 181")
    assert "checkpoint-150" in first and "learning_rate" not in first
    assert d.check("entropy_collapse").status.value == "ok"
    # The plan's first item is the first action: a finding's own earlier roll-back ("from
    # step 177 or before") had replaced it whole, "restore ..." lost from the list.
    for name in ("trl_eos_token_gt_from_181", "trl_budget_cut_to_7_at_201"):
        d = _trial(name)
        assert d.plan[0].action == d.root_cause.first_action
        assert not any("learning_rate" in p.action for p in d.plan)


def test_a_reward_scale_jump_under_an_active_clip_is_no_explosion():
    """Trial 79: the reward x100 from step 151 under scale_rewards none, pre-clip grad norm
    0.38 -> 110 clipped at 1, the run learning on (0.94 sampled at the end): it read critical,
    "roll back to checkpoint-50, then learning_rate 1e-4 -> 5e-5"."""
    d = _trial("trl_reward_x100_from_151_scale_none")
    assert d.status == "healthy"
    check = d.check("grad_explosion")
    assert check.status.value == "ok" and "reward's scale rose" in check.summary
    assert check.evidence["reward_scale_step"] in range(148, 156)


def test_dropout_left_on_in_the_policy_is_switched_off_first(tmp_path):
    """Trial 79: the model's attention_dropout 0.3 with TRL's disable_dropout off and 4
    iterations per batch (pre-clip grad norms 190-2400, correctness never above 0.28) read
    "learning_rate 1e-4 -> 2.5e-6". The model's own config.json beside the log says it."""
    d = _trial("trl_attention_dropout_0.3_iter4")
    assert d.root_cause.first_action.startswith("disable_dropout False -> True")
    # Pre-clip norms ~330x the clip from step 1: the finding began there, not at the spikes of
    # step 123 its sentence counts.
    grad = d.check("grad_explosion")
    assert grad.onset_step == 1 and "clipped hard from the start" in grad.summary, grad.summary
    from grpo_doctor.importers.sidecar import with_sidecar_config

    folder = tmp_path / "run"
    (folder / "checkpoint-50").mkdir(parents=True)
    (folder / "checkpoint-50" / "config.json").write_text(json.dumps(
        {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
         "attention_dropout": 0.3, "hidden_dropout": 0.0}))
    log = folder / "log.csv"
    log.write_text("step,reward\n1,0.1\n2,0.2\n")
    run = with_sidecar_config(load_runs(log)[0])
    assert run.config["attention_dropout"] == 0.3
    from grpo_doctor.recipe import read_config

    assert read_config({"attention_dropout": 0.3}).get("dropout").far
    assert not read_config({"attention_dropout": 0.3, "disable_dropout": True}).get(
        "dropout").outside  # switched off by the trainer: none in force


def test_hostile_h117_diagnosis_reads(tmp_path):
    """h117: an eval's or a judge's num_beams made a solved run "solved to the cut sampler
    only"; a 0/1 reward rising from near 0 under group scaling excused a real grad-norm
    explosion as "the reward's scale rose 37x"."""
    cfg_path = TRIAL / "trl_generation_kwargs_num_beams_4.config.json"
    cfg = json.loads(cfg_path.read_text())
    from grpo_doctor.recipe import flat_config

    run = load_runs(TRIAL / "trl_generation_kwargs_num_beams_4.csv")[0]
    moved = {**{k: v for k, v in cfg.items() if k != "generation_kwargs"},
             "judge": {"num_beams": 4}}
    d = diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(moved)))
    assert "num_beams" not in (d.root_cause.first_action if d.root_cause else "")

    kept = _trial_edited(tmp_path, "trl_reward_x100_from_151_scale_none", lambda f: None)
    assert kept.check("grad_explosion").status.value == "ok"  # scale_rewards none: excused
    cfg = json.loads((TRIAL / "trl_reward_x100_from_151_scale_none.config.json").read_text())
    cfg["scale_rewards"] = "group"
    d = diagnose(load_runs(TRIAL / "trl_reward_x100_from_151_scale_none.csv")[0],
                 DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(cfg)))
    assert d.check("grad_explosion").status.value != "ok"  # the premise: no scale reaches it


def test_a_changed_stop_is_found_with_a_few_nan_lengths_and_without_a_budget(tmp_path):
    """h117: three NaN mean lengths long before the change, or a config naming no budget,
    had dropped the changed-stop reading and brought the lr advice back."""
    import numpy as np

    from grpo_doctor.recipe import flat_config

    def holes(f):
        f.loc[f.step.isin([40, 41, 90]), "completions/mean_length"] = np.nan
    d = _trial_edited(tmp_path, "trl_eos_token_gt_from_181", holes)
    assert d.root_cause.first_action.startswith("restore how completions stop: from step 181")
    cfg = json.loads((TRIAL / "trl_eos_token_gt_from_181.config.json").read_text())
    cfg.pop("max_completion_length")
    d = diagnose(load_runs(TRIAL / "trl_eos_token_gt_from_181.csv")[0],
                 DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(cfg)))
    first = d.root_cause.first_action
    assert first.startswith("restore how completions stop") and "they had reached" in first


def test_an_lr_of_a_run_that_does_not_say_if_it_trains_an_adapter_is_said_against_both():
    """Sibling LoRA runs at lr 1e-4: the one whose log said its trainable parameters read "2x
    the 5e-5 ceiling for a LoRA adapter", the one whose log did not "20x the 5e-6 ceiling", 10x
    harsher for the same setting (nu33). Where the run does not say, both ceilings are said."""
    from grpo_doctor.recipe import read_config

    def lr(config):
        return next(r for r in read_config(config).readings if r.id == "learning_rate")

    unknown = lr({"learning_rate": 1e-4}).how_far()
    assert unknown == ("20x the recipe's 5e-6 ceiling for a full fine-tune, 2x a LoRA "
                       "adapter's 5e-5"), unknown
    assert lr({"learning_rate": 2e-5}).how_far().endswith("within a LoRA adapter's 5e-5")
    full = lr({"learning_rate": 1e-4, "use_peft": False}).how_far()
    assert full == "20x the recipe's 5e-6 ceiling", full
    adapter = lr({"learning_rate": 1e-4, "use_peft": True}).how_far()
    assert adapter == "2x the recipe's 5e-5 ceiling for a LoRA adapter", adapter


def test_hostile_h118_diagnosis_reads():
    """h118: a config naming no scale_rewards (TRL's default is "group"; verl and OpenRLHF
    have no such key) excused a real grad-norm rise as "the reward's scale rose" and read
    HEALTHY; a critic's dropout became a verl run's first action."""
    from grpo_doctor.recipe import flat_config

    name = "trl_reward_x100_from_151_scale_none"
    cfg = json.loads((TRIAL / f"{name}.config.json").read_text())
    cfg.pop("scale_rewards")
    d = diagnose(load_runs(TRIAL / f"{name}.csv")[0],
                 DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(cfg)))
    assert d.check("grad_explosion").status.value != "ok"
    assert "reward's scale rose" not in d.check("grad_explosion").summary

    name = "lr_3e-3_clip_100"
    cfg = json.loads((TRIAL / f"{name}.config.json").read_text())
    cfg["critic"] = {"model": {"override_config": {"hidden_dropout": 0.1}}}
    d = diagnose(load_runs(TRIAL / f"{name}.csv")[0],
                 DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(cfg)))
    assert "dropout" not in d.root_cause.first_action, d.root_cause.first_action
    assert "lr 0.003 -> " in d.root_cause.first_action, d.root_cause.first_action


def test_trial_80_a_reward_redefined_mid_run_is_no_crash_of_the_policy():
    """Trial 80: from step 161 correctness weighted 0 (reward_weights [0, 1]), and a length
    penalty paying -2.4 on every completion: each read as a reward crash, "no roll-back: the
    run came through it and solved its task; learning_rate 1e-4 -> 5e-5". The reward's
    make-up changed there while every term held its level."""
    d = _trial("trl_reward_weights_0_1_from_161")
    first = d.root_cause.first_action
    assert first.startswith("restore the reward's weights: from step 161 the reward is 0 x "
                            "correctness_reward + 1 x format_reward"), first
    assert "correctness_reward weighted 0 no longer trains the policy" in first
    assert "the policy did not change there" in first
    assert not any("learning_rate" in p.action or p.action.startswith("roll back")
                   for p in d.plan), [p.action for p in d.plan]
    d = _trial("trl_length_penalty_on_from_161")
    first = d.root_cause.first_action
    assert first.startswith("check the concise_reward term, which began paying at step 161 "
                            "(0 before, -2.4 since)"), first
    assert "solved its task" not in first
    assert not any("learning_rate" in p.action for p in d.plan), [p.action for p in d.plan]


def test_trial_80_weights_reset_mid_run_is_said_as_one():
    """Trial 80: at step 161 the base weights were reloaded (a resume that loaded the base,
    not checkpoint-160): entropy and correctness back to their step-1 levels in one step,
    read as an entropy blow-up, "roll back, then learning_rate 1e-4 -> 5e-5", with a plan
    item saying "no roll-back needed" below it."""
    d = _trial("trl_weights_reset_at_161")
    first = d.root_cause.first_action
    assert first.startswith("check which weights the run trained from step 161: its signals "
                            "went back to their starting levels in one step (entropy"), first
    assert "roll back to checkpoint-150" in first
    actions = [p.action for p in d.plan]
    assert not any("learning_rate" in a or "no roll-back" in a for a in actions), actions


def test_trial_80_groups_alike_at_once_name_the_sampler_beside_the_scorer():
    """Trial 80: the sampling temperature 0.25 from step 161: every group alike, correctness
    exactly 1, grad norm 0, the logged entropy (the policy's at T=1) unchanged. The scalars
    cannot tell a scorer passing everything from a near-greedy sampler: both are said."""
    d = _trial("trl_temperature_0.25_from_161")
    first = d.root_cause.first_action
    assert first.startswith("check correctness_reward on completions from step 161 on"), first
    assert "the sampler changed at step 161 instead (a temperature or generation setting)" \
        in first, first
    # ... and no finding below it calls the task solved (nu34: "the policy did not improve"
    # above "the task is solved", which invites stopping the run)
    dead = d.check("no_learning_signal").summary
    assert "task is solved" not in dead and "not a solved task" in dead, dead


def test_a_change_of_the_reward_or_a_reset_is_not_read_into_healthy_runs():
    """Neither a reward redefined nor a weights reset is found on any real run or trial
    fixture but the ones made so."""
    from grpo_doctor.rules.signals import back_to_start, reweighting, term_switched_on

    made = {"trl_reward_weights_0_1_from_161", "trl_length_penalty_on_from_161",
            "trl_weights_reset_at_161"}
    for csv in sorted(TRIAL.glob("*.csv")):
        run = load_runs(csv)[0]
        found = (reweighting(run) is not None or term_switched_on(run) is not None
                 or back_to_start(run, 161) is not None)
        assert found == (csv.stem in made), csv.stem


def test_hostile_h119_diagnosis_reads(tmp_path):
    """h119: "every update clipped hard from the start" fired on a healthy norm of 0.74
    under max_grad_norm 0.01 (the clip's choice, not a norm out of scale), dating the finding
    from step 1; an eval's rollouts_per_example = 1 before the orchestrator's 16 read
    "groups of 1"; the shown first alert before its onset read backwards."""
    import numpy as np

    def spikes(frame):
        at = frame["step"].isin([150, 155, 160, 165, 170])
        frame.loc[at, "grad_norm"] = 12.0

    d = _trial_edited(tmp_path, "trl_lr_1e-5_max_grad_norm_0.01", spikes)
    grad = d.check("grad_explosion")
    assert grad.fired and grad.onset_step >= 150, (grad.onset_step, grad.summary)
    assert "clipped hard from the start" not in grad.summary

    from grpo_doctor.rules import knobs

    run = replace(make_run(reward=np.linspace(0.1, 0.5, 30)), config={
        "eval": {"rollouts_per_example": 1}, "orchestrator": {"rollouts_per_example": 16}})
    assert knobs.current(run, knobs.GROUP_SIZE)[0] == 16

    from grpo_doctor.findings import Check, Status

    check = Check("advantage_collapse", Status.CRITICAL, "x", onset_step=121,
                  first_alert_step=7, episode_alert_step=27)
    assert check.first_alert_words == "first alert 27 (raised as it built up)"


def test_a_ceiling_the_user_set_is_not_scaled_again_for_an_adapter():
    """nu34: a [recipe.learning_rate] high of 5e-4 became 5e-3 on a LoRA run (x10 on top),
    and its lr of 5e-6 read "200x below the recipe's start of 0.001". A ceiling set for the
    model is the model's own; the chapter's is still scaled for an adapter."""
    settings = recipe.with_overrides({"learning_rate": {"high": 5e-4}})
    over = recipe.read_config({"learning_rate": 1e-3, "use_peft": True}, settings)
    assert over.get("learning_rate").how_far() == "2x the recipe's 5e-4 ceiling"
    slow = recipe.read_config({"learning_rate": 5e-6, "use_peft": True}, settings)
    assert "start of 1e-4" in slow.get("learning_rate").how_far()
    chapter = recipe.read_config({"learning_rate": 1e-4, "use_peft": True})
    assert chapter.get("learning_rate").how_far() == ("2x the recipe's 5e-5 ceiling for a "
                                                       "LoRA adapter")
    # A floor set alone leaves the chapter's ceiling, and its x10 for an adapter, in force
    # (h120: low = 1e-7 alone had read a LoRA run's 2e-5 "4x the 5e-6 ceiling").
    floor = recipe.with_overrides({"learning_rate": {"low": 1e-7}})
    lora = recipe.read_config({"learning_rate": 2e-5, "use_peft": True}, floor)
    assert lora.get("learning_rate").verdict == recipe.OK, lora.get("learning_rate")
    assert recipe.read_config({"learning_rate": 2e-5, "use_peft": False}, floor).get(
        "learning_rate").verdict == recipe.HIGH


def test_a_root_cause_that_is_an_event_is_named_as_one_beside_the_finding_that_saw_it(
        tmp_path):
    """The root cause's name was its finding's: a weights reset read "entropy_blowup@161" in
    an audit's table, a reward reweighted "reward_overfit@161" (a policy overfitting), where the
    first action said otherwise (nu34). An event that is no failure mode is named as the event,
    the finding beside it; a finding that is its own cause keeps its name alone."""
    from grpo_doctor import glossary
    from grpo_doctor.findings import CAUSES
    from grpo_doctor.reporters.audit_report import _cause
    from grpo_doctor.reporters.outline import cause_name

    named = {"trl_weights_reset_at_161": ("weights_reset", "entropy_blowup"),
             "trl_reward_weights_0_1_from_161": ("reward_reweighted", "reward_overfit"),
             "trl_length_penalty_on_from_161": ("reward_term_added", "reward_overfit"),
             "trl_budget_cut_to_7_at_201": ("completion_budget_cut", None),
             "trl_eos_token_gt_from_181": ("completion_stop_changed", None)}
    for name, (event, seen) in named.items():
        rc = _trial(name).root_cause
        assert rc.cause == event, (name, rc.cause, rc.mode)
        if seen is not None:
            assert rc.mode == seen, (name, rc.mode)
        assert cause_name(rc) == (event, f" (seen as {rc.mode})")
        assert _cause(rc.to_dict()) == f"{event}@{rc.step} (seen as {rc.mode})"
    stopped = diagnose(_scored_until(101)).root_cause
    assert stopped.cause == "scorer_stopped", stopped
    jumped = diagnose(_breaks_after(np.where(np.arange(500) < 300, 1e-4, 3e-3), 307),
                      DoctorConfig(run_config={"learning_rate": 1e-4})).root_cause
    assert jumped.cause == "lr_jump", jumped
    # A finding that is its own cause: its name alone, in every report.
    own = diagnose(_breaks_after(np.full(500, 1e-4), 307)).root_cause
    assert own is not None and own.cause is None, own
    assert cause_name(own) == (own.mode, "") and _cause(own.to_dict()) == f"{own.mode}@{own.step}"
    # Every such name is explained, and a shard's cause of another type is not printed.
    for event in CAUSES:
        assert glossary.lookup(event) is not None, event
    assert _cause({"mode": "entropy_blowup", "step": 5, "cause": 7}) == "entropy_blowup@5"


def test_trial_81_a_reference_that_differs_from_step_1_is_checked_before_any_leash():
    """Trial 81: the reference built from the untrained init, KL 2.59 at step 1 (where the
    policy is the reference, ~0) and 2.5-4 after: read "rose from 2.71 to 2.79 from step 8",
    "beta 0.04 -> 0.08", a tighter leash to the wrong model. A KL high from the first step is
    an offset even when it rises after it: dated there, the reference checked first, once."""
    d = _trial("trl_reference_untrained_init")
    rc = d.root_cause
    assert rc.mode == "kl_drift" and rc.step == 1 and rc.setup, rc
    assert rc.first_action.startswith("check the reference model against the policy at step 0")
    assert "it was already 2.59 at the first logged step" in rc.first_action
    actions = [p.action for p in d.plan]
    assert not any("beta" in a or "KL coefficient" in a for a in actions), actions
    assert sum(a.startswith("check the reference model") for a in actions) == 1, actions


def test_trial_81_scores_missing_from_a_term_name_the_scorer_not_the_policy():
    """Trial 81: from step 201 correctness_reward returned None on 70% of completions (a
    checker timing out). TRL sums the terms a completion was scored on and logs each term's
    mean over those it scored: the reward fell 1.47 -> 0.6 below its terms' weighted sum, the
    terms held. Read "reward crash: roll back, then learning_rate 1e-4 -> 5e-5"."""
    d = _trial("trl_correctness_none_70pct_from_201")
    rc = d.root_cause
    assert rc.cause == "scores_missing" and rc.step == 201, rc
    assert rc.first_action.startswith("check correctness_reward on completions from step 201 "
                                      "on: from step 201 the reward"), rc.first_action
    assert "of correctness_reward's scores are missing" in rc.first_action
    assert "format_reward" not in rc.first_action  # its mean could not hold the shortfall
    assert "roll back to checkpoint-200" in rc.first_action
    assert not any("learning_rate" in p.action for p in d.plan), [p.action for p in d.plan]


def test_scores_missing_is_read_into_no_other_run():
    """The shortfall below the terms' sum is found on the run made so, on no other trial
    fixture or real run; a clean reweighting is said as one, not as missing scores."""
    from grpo_doctor.rules.signals import scores_missing

    for csv in sorted(TRIAL.glob("*.csv")):
        found = scores_missing(load_runs(csv)[0])
        assert (found is not None) == (csv.stem == "trl_correctness_none_70pct_from_201"), (
            csv.stem, found)
    for path in REAL_RUNS.glob("*/*"):
        if path.suffix != ".md":
            assert all(scores_missing(run) is None for run in load_runs(path)), path


def test_hostile_h120_a_curriculum_is_neither_a_reweighting_nor_a_reset():
    """h120: a multi-task run whose terms score only their own prompts, the mix moved 80/20 ->
    20/80 at step 161, read "restore the reward's weights (a resume with other
    reward_weights?)" where the config sets none and neither sum is its weights. Harder prompts
    from step 161 (correctness and entropy back near their start, the format learned and the
    length kept) read "as if the weights were reset": a reset undoes all of it."""
    import pandas as pd

    frame = pd.read_csv(TRIAL / "trl_reward_weights_0_1_from_161.csv")
    config = json.loads((TRIAL / "trl_reward_weights_0_1_from_161.config.json").read_text())
    math = frame["rewards/correctness_reward/mean"].to_numpy()
    code = np.clip(np.roll(math, 7) * 0.45, 0, 1)
    code[:7] = math[:7] * 0.45
    share = np.where(frame["step"] <= 160, 0.8, 0.2)
    mixed = frame.drop(columns=["rewards/correctness_reward/mean",
                                "rewards/correctness_reward/std"])
    mixed["rewards/math_reward/mean"], mixed["rewards/code_reward/mean"] = math, code
    mixed["reward"] = share * math + (1 - share) * code + frame["rewards/format_reward/mean"]
    config["reward_funcs"] = ["math_reward", "code_reward", "format_reward"]
    config.pop("reward_weights", None)
    from grpo_doctor.recipe import flat_config

    d = diagnose(make_run_from(mixed),
                 DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(config)))
    first = d.root_cause.first_action
    assert not first.startswith("restore the reward's weights"), first
    assert first.startswith("read the terms, not the reward, across step 161"), first
    assert not any("learning_rate" in p.action for p in d.plan), [p.action for p in d.plan]

    reset = pd.read_csv(TRIAL / "trl_weights_reset_at_161.csv")
    kept = pd.read_csv(TRIAL / "trl_reward_weights_0_1_from_161.csv")
    for column in ("rewards/format_reward/mean", "completions/mean_length"):
        reset.loc[160:, column] = kept.loc[160:, column].to_numpy()
    reset["reward"] = reset["rewards/correctness_reward/mean"] + reset[
        "rewards/format_reward/mean"]
    d = diagnose(make_run_from(reset))
    assert d.root_cause.cause != "weights_reset", d.root_cause
    assert "as if the weights were reset" not in d.root_cause.first_action


def make_run_from(frame):
    """A run of a trial CSV's frame, read as the CSV importer reads one (its names mapped)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.csv"
        frame.to_csv(path, index=False)
        return load_runs(path)[0]


def test_trial_81_a_cause_set_at_a_resume_is_dated_from_the_resume():
    """Trial 81: beta 0 -> 1 at a resume at step 161 (the checkpoints' training_args.bin say
    so) read "no_progress at step 1", beside a note saying the resume changed it."""
    from grpo_doctor.recipe import flat_config

    name = "trl_beta_0_to_1_from_161"
    run = replace(load_runs(TRIAL / f"{name}.csv")[0], changed_at_resume={
        "beta": (0.0, 1.0, 200)}, resumed_at=(161,))
    d = diagnose(run, DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(
        json.loads((TRIAL / f"{name}.config.json").read_text()))))
    rc = d.root_cause
    assert rc.step == 161 and rc.first_action.startswith("beta 1 -> 0.01-0.05"), rc
    assert rc.summary.endswith("(in force from the resume at step 161: beta 0.0 -> 1.0)"), rc
    assert "; then roll back to checkpoint-160" in rc.first_action, rc.first_action
    assert d.plan[0].rollback_step == 161
    # Without the resume's record, the setting is the run's from its start.
    assert _trial(name).root_cause.step == 1


def test_hostile_h120_a_penalty_ramped_in_is_named_as_one_switched_on():
    """h120: trial 80's length penalty ramped in over 40 steps (0 -> -2.4 from step 161), the
    other terms holding, read "beta 0 -> 0.01-0.05; no roll-back: the task is solved": the
    entropy "collapse" made critical by the reward's fall was taken for the root. A penalty
    ramped in is said as the at-once one is; a term that rose slowly is one the policy
    learned to earn, no switch."""
    import pandas as pd

    from grpo_doctor.rules.signals import term_switched_on

    frame = pd.read_csv(TRIAL / "trl_length_penalty_on_from_161.csv")
    steps = frame["step"].to_numpy()
    ramp = np.clip((steps - 160) / 40, 0, 1)
    frame["rewards/concise_reward/mean"] = np.where(steps > 160, -2.4 * ramp, 0.0)
    terms = [c for c in frame.columns if c.startswith("rewards/") and c.endswith("/mean")]
    frame["reward"] = frame[terms].sum(axis=1)
    from grpo_doctor.recipe import flat_config

    config = json.loads((TRIAL / "trl_length_penalty_on_from_161.config.json").read_text())
    d = diagnose(make_run_from(frame),
                 DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(config)))
    rc = d.root_cause
    assert rc.cause == "reward_term_added" and rc.step in (160, 161), rc
    assert rc.first_action.startswith("check the concise_reward term, which began paying at "
                                      "step 161 (0 before, ramped to -2.4 by step 19"), rc
    assert not any("learning_rate" in p.action for p in d.plan), [p.action for p in d.plan]
    frame["rewards/concise_reward/mean"] = np.where(steps > 160, 2.4 * ramp, 0.0)
    frame["reward"] = frame[terms].sum(axis=1)
    assert term_switched_on(make_run_from(frame)) is None  # earned, not switched on


def test_hostile_h120_weights_annealed_over_a_stretch_are_a_reweighting():
    """h120: reward_weights moved 1 -> 0 for correctness over steps 161-200 (every term
    holding) read "beta 0 -> 0.01-0.05; no roll-back: the task is solved", and with the
    shortfall test, "scores missing": two exact sums either side of a stretch are a
    reweighting, said with the stretch."""
    import pandas as pd

    from grpo_doctor.recipe import flat_config

    frame = pd.read_csv(TRIAL / "trl_reward_weights_0_1_from_161.csv")
    steps = frame["step"].to_numpy()
    weight = 1 - np.clip((steps - 160) / 40, 0, 1)
    frame["reward"] = (weight * frame["rewards/correctness_reward/mean"]
                       + frame["rewards/format_reward/mean"])
    config = json.loads((TRIAL / "trl_reward_weights_0_1_from_161.config.json").read_text())
    d = diagnose(make_run_from(frame),
                 DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(config)))
    rc = d.root_cause
    assert rc.cause == "reward_reweighted", rc
    assert rc.first_action.startswith("restore the reward's weights: from step 200 (changing "
                                      "over steps 160-200) the reward is 0 x correctness_reward"
                                      ), rc.first_action
    assert not any("learning_rate" in p.action for p in d.plan), [p.action for p in d.plan]


@pytest.mark.parametrize("lag", [1, 2])
def test_hostile_h120_a_reset_whose_rewards_lag_the_entropy_is_still_one(lag):
    """h120: the reward terms logged two steps behind the entropy (rollouts scored after the
    step that made them) lost the reset lead: "roll back, then lr 1e-4 -> 5e-5", beside a plan
    item saying "no roll-back needed"."""
    import pandas as pd

    frame = pd.read_csv(TRIAL / "trl_weights_reset_at_161.csv")
    lagged = [c for c in frame.columns if c.startswith("rewards/")] + [
        "reward", "reward_std", "frac_reward_zero_std"]
    for column in lagged:
        values = frame[column].to_numpy().copy()
        values[160:160 + lag] = values[160 - lag:160]
        frame[column] = values
    from grpo_doctor.recipe import flat_config

    config = json.loads((TRIAL / "trl_weights_reset_at_161.config.json").read_text())
    d = diagnose(make_run_from(frame),
                 DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(config)))
    assert d.root_cause.cause == "weights_reset", d.root_cause
    assert not any("learning_rate" in p.action for p in d.plan), [p.action for p in d.plan]


def test_trial_82_completions_changed_at_once_after_an_ordinary_update_name_the_sampler():
    """Trial 82: sampling temperature 2.0 from step 181 (a resume with another generation
    config): 0% -> 50% of completions at the cap and the reward 1.33 -> 0.22 in one step,
    after an update like every other (grad norm 1.56, the lr unchanged), read "reward crash:
    roll back, then learning_rate 1e-4 -> 5e-5"."""
    d = _trial("trl_temperature_2_from_181")
    rc = d.root_cause
    assert rc.cause == "sampler_changed" and rc.step == 181, rc
    assert rc.first_action.startswith("check what generated or posed the completions from "
                                      "step 181: in one logged step 47% of completions cut at "
                                      "the length cap, 0% before"), rc.first_action
    assert "temperature" in rc.first_action and "roll back to checkpoint-150" in rc.first_action
    assert not any("learning_rate" in p.action for p in d.plan), [p.action for p in d.plan]
    # A crash the policy made itself (an update out of scale first) is not the sampler's.
    assert _trial("burst_5e-3_20").root_cause.cause != "sampler_changed"


def test_trial_82_a_low_score_under_an_optimizer_without_adam_is_no_healthy_run():
    """Trial 82: optim adagrad at lr 1e-4, correctness 0.38 -> 0.50 where its controls reached
    0.87, read HEALTHY with "for the next run: optim adagrad -> adamw_torch": the setting the
    recipe links to a run not learning is the evidence the curves lacked, and the first
    action."""
    d = _trial("trl_optim_adagrad")
    assert d.status == "warning" and d.root_cause.mode == "no_progress", d.status
    assert d.root_cause.first_action.startswith("optim adagrad -> adamw_torch"), d.root_cause
    assert "every update made with optim adagrad" in d.check("no_progress").summary


def test_trial_82_a_low_score_that_stopped_gaining_under_a_sharpened_policy_is_a_ceiling():
    """Trial 82: every other row of the answer key off by one: correctness flat at 0.35 from
    step 100 (its controls reached 0.86), the entropy down 57%, read "it is learning, slowly".
    A policy that sharpened and stopped gaining at a low score sits at a ceiling: the answer
    key first. A run barely moving (an lr 10x below the recipe's start) is still slow."""
    note = next(n for n in _trial("trl_half_answers_off_by_one").notes if "still low" in n)
    assert "it gained nothing since step 101: check a few prompts' reference answers first" \
        in note, note
    assert "learning, slowly" not in note
    slow = next(n for n in _trial("trl_warmup_10000").notes if "still low" in n)
    assert "gained nothing" not in slow, slow


def test_trial_82_a_correctness_term_that_scored_nothing_on_most_steps_is_said_so():
    """Trial 82: correctness returned None for every completion longer than 7 characters (a
    grader timing out): no score on 149 of 200 logged steps, 0 on the rest, read "it never
    moved, so no answer was ever judged right (a parser that never matches)", the missing
    scores only in a last note. A term logged at a cadence of its own is not unscored."""
    d = _trial("trl_correctness_none_past_7_chars")
    first = d.root_cause.first_action
    assert first.startswith("check correctness_reward on a few completions: it returned no "
                            "score (None, logged NaN) on 149 of 200 logged steps"), first
    steps = np.arange(1, 201)
    cadence = make_run(reward=np.linspace(0.4, 0.9, 200),
                       rewards__format_reward__mean=np.linspace(0.4, 0.9, 200),
                       rewards__correctness_reward__mean=np.where(steps % 5 == 0, 0.0, np.nan))
    summary = diagnose(cadence).check("format_gaming").summary
    assert "scored nothing" not in summary, summary


def test_trial_82_groups_alike_at_once_from_a_resume_under_a_cut_sampler_name_it():
    """Trial 82 (helper-125): min_p 0.5 set at a resume from step 41: the groups alike 25% ->
    100% and the reward at its top in one step, grad norm 0 from there, read "the task is
    solved: stop here", dated at 138, min_p unsaid. A sampler in force from step 1 whose
    groups go alike as the policy sharpens (top_p 0.5, alike from step 12) keeps its own
    reading."""
    d = _trial("trl_min_p_0.5_from_41_resumed")
    rc = d.root_cause
    assert rc.cause == "sampler_changed" and rc.step == 41, rc
    assert rc.first_action.startswith("min_p 0.5 -> 0 (off)"), rc.first_action
    assert "sampling near-greedy from step 41" in rc.first_action
    assert "stop here" not in rc.first_action
    early = _trial("trl_top_p_05").root_cause
    assert early.cause != "sampler_changed" and early.first_action.startswith(
        "top_p 0.5 -> 1.0"), early


def test_trial_82b_a_stop_before_the_budget_is_not_a_budget_too_small():
    """Trial 82b: generation_kwargs max_time 0.015 stopped every completion at 3-8 tokens of a
    budget of 12 (counted as cut): read "raise max_completion_length 4x", the trap, the
    config's budget dropped as "contradicted by the log"."""
    d = _trial("trl_generation_kwargs_max_time_0.015")
    rc = d.root_cause
    assert rc.cause == "generation_stops_early" and rc.setup, rc
    assert rc.first_action.startswith("remove generation_kwargs.max_time 0.015"), rc
    assert "under the budget of 12" in rc.first_action
    assert not any("max_completion_length" in p.action and "->" in p.action
                   for p in d.plan[:1]), [p.action for p in d.plan]


@pytest.mark.parametrize("every", [5, 10])
def test_hostile_h121_the_reward_redefinitions_are_named_at_trls_logging_intervals(every):
    """h121: at TRL's default logging_steps 10 (32 rows of 320 steps) the fits needed 20 rows a
    side, and with the terms logged every 5th or 10th step beside a reward logged at every one
    the change was 'not near' the crash: the old first actions came back ("roll back, lr";
    "solved its task")."""
    import pandas as pd

    from grpo_doctor.recipe import flat_config

    for name, cause in (("trl_correctness_none_70pct_from_201", "scores_missing"),
                        ("trl_reward_weights_0_1_from_161", "reward_reweighted")):
        frame = pd.read_csv(TRIAL / f"{name}.csv")
        rows = frame[frame["step"] % every == 0]
        terms = frame.copy()
        for column in [c for c in frame.columns if c.startswith("rewards/")]:
            terms.loc[terms["step"] % every != 0, column] = np.nan
        config = json.loads((TRIAL / f"{name}.config.json").read_text())
        for logged in (rows, terms):
            d = diagnose(make_run_from(logged),
                         DoctorConfig(recipe=TINY_RECIPE, run_config=flat_config(config)))
            assert d.root_cause.cause == cause, (name, every, d.root_cause)
