"""Is the advice right? Runs whose cause is known, scored on the first action and the plan.

    python bench/advice.py [--real ../shared/real-runs] [--holdout DIR]

Two tables:

1. The corpus (tests/fixtures/corpus): tiny GRPO runs trained with one deliberately wrong
   setting (labels.json says which). Each run's own settings are given as a ``[config]``
   would give them (the knobs of labels.json's config under TRL's names), and the recipe's
   learning-rate ceiling is set for this tiny model (its healthy lr is 1e-4, so the ceiling
   is 5e-4, as the chapter's is 5x its 1e-6 start). A first action "names the cause" when it
   holds one of the cause's words (the knob, or the remedy an expert gives for it); a run
   nothing fired on (a solved task is healthy by design) when a check's sentence does.
2. The failing real runs of ../shared/real-runs/ADVICE.md (when present): the first action
   must hold one of the "do first" words and none of the "wrong first" ones.

3. With ``--holdout DIR``: the held-out runs (``python -m corpus.tiny_grpo --set holdout --out
   DIR`` then ``python -m corpus.label --out DIR``): wrong settings the corpus lacks, on seeds it
   does not use, that no rule was tuned on, scored as the corpus is against HOLDOUT_CAUSES.

Also checks that no healthy run (corpus or real) is anything but healthy. Prints the tables
and the scores; exit 0 always (a benchmark, not a test: tests/test_advice.py holds the floor).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grpo_doctor.config import DoctorConfig
from grpo_doctor.engine import diagnose
from grpo_doctor.importers import load_runs
from tests.test_real_runs import HEALTHY, healthy_status

CORPUS = ROOT / "tests" / "fixtures" / "corpus"

#: Corpus run -> the words a first action naming its cause holds (any one).
CORPUS_CAUSES: dict[str, tuple[str, ...]] = {
    "lr_too_high": ("learning_rate",),
    "lr_huge_noclip": ("learning_rate", "max_grad_norm"),
    "low_temperature": ("temperature",),
    "too_hard": ("easier prompts", "reward function", "curriculum"),
    "too_hard_with_format": ("easier prompts", "reward function", "curriculum",
                             "never moved", "correctness"),
    "too_easy": ("harder prompts",),
    "too_easy_exact_only": ("harder prompts",),
    "beta0_long": ("beta", "KL coefficient"),
    "length_reward": ("length", "held-out"),
    # Meant to game a <think>-tag term, but the term fell to 0 by step 70 while correctness
    # and the held-out score rose 0.39 -> 0.97 (labels.json: entropy collapse at a learned
    # task, no format gaming): the cause to name is what sharpened the policy.
    "think_tag_reward": ("learning_rate", "temperature", "entropy"),
    "think_tag_reward_w3": ("format", "think", "held-out"),
    "lenient_verifier": ("verifier", "held-out", "highest-reward samples"),
    # Meant to hack a lenient verifier, but with beta 0.04 the held-out score ends where it
    # started (labels.json: entropy blow-up only, accuracy 0.41 -> 0.44): the cause to name is
    # the lr 10x the healthy one behind the blow-up and the KL drift, or the verifier.
    "lenient_verifier_kl": ("learning_rate", "verifier", "held-out",
                            "highest-reward samples", "entropy"),
    "lenient_verifier_slow": ("verifier", "held-out", "highest-reward samples"),
    "ppo_epochs_noclip": ("num_iterations", "max_grad_norm", "learning_rate", "clip"),
    "lr_warmup_to_0.3": ("learning_rate",),
    "lr_warmup_to_3e-2_noclip": ("learning_rate", "max_grad_norm"),
    "lr_warmup_to_0.3_s0": ("learning_rate",),
    "warmup_overshoot": ("learning_rate",),
    "entropy_bonus_0.5": ("entropy_coef", "entropy bonus"),
    "entropy_bonus_0.25": ("entropy_coef", "entropy bonus"),
    "fp16_pure": ("dtype", "bf16", "bfloat16"),
    "asym_clip_negative_heavy": ("epsilon", "clip", "num_iterations"),
    "dead_after_one_update": ("learning_rate",),
    "early_burst_recovers": ("learning_rate", "max_grad_norm", "batch of step"),
}

#: Held-out run -> the words of what an expert changes first, written before the runs were made
#: (corpus/runs.py HOLDOUT_RUNS).
HOLDOUT_CAUSES: dict[str, tuple[str, ...]] = {
    "h_lr_1e-3": ("learning_rate",),
    "h_temperature_0.5": ("temperature",),
    # The answer (<a> 3-4 digits </s>) never fits 4 tokens: the budget, a setup problem.
    "h_max_new_4": ("max_completion_length",),
    "h_group_2": ("num_generations",),
    "h_beta0_lr1e-3": ("beta", "KL coefficient", "learning_rate"),
    "h_entropy_bonus_0.1": ("entropy_coef", "entropy bonus"),
    "h_epochs4_noclip": ("num_iterations", "ppo_epochs", "max_grad_norm", "learning_rate",
                         "optim.lr"),
    # The second set (--set holdout2), scored once as made.
    "h2_lr_2e-3": ("learning_rate", "optim.lr"),
    "h2_temperature_0.4": ("temperature",),
    "h2_max_new_5": ("max_completion_length", "response_length"),
    "h2_group_3": ("num_generations", "rollout.n"),
    "h2_entropy_bonus_0.3": ("entropy_coef", "entropy_coeff", "entropy bonus"),
    "h2_eps_high_0.8": ("epsilon_high", "clip_ratio_high", "num_iterations"),
    "h2_noclip_lr5e-3": ("learning_rate", "max_grad_norm"),
    "h2_fp16_lr5e-4": ("dtype", "bf16", "bfloat16"),
    "h2_too_hard_sum": ("easier prompts", "curriculum", "reward function", "out of reach"),
    # The third set (--set holdout3), scored once as made.
    "h3_beta_0.5": ("beta", "kl_coef", "KL coefficient"),
    "h3_temperature_1.8": ("temperature",),
    "h3_length_reward_seq_mean": ("length", "held-out"),
    "h3_eps_low_0.8_epochs3": ("epsilon", "clip_ratio", "num_iterations", "ppo_epochs"),
    "h3_warmup_to_1e-2": ("learning_rate", "its value when the reward peaked"),
    "h3_lenient_verifier": ("verifier", "held-out", "highest-reward samples"),
    "h3_think_tag_w2": ("format", "think", "held-out"),
    "h3_too_easy": ("harder prompts",),
    # The fourth set (--set holdout4), scored once as made.
    "h4_lr_5e-4_group_4": ("num_generations", "learning_rate"),
    "h4_beta0_temperature_0.7": ("temperature", "beta", "KL coefficient"),
    "h4_noclip_epochs2_lr2e-3": ("max_grad_norm", "optim.lr", "learning_rate", "ppo_epochs",
                                 "num_iterations"),
    "h4_entropy_bonus_0.05": ("entropy_coef", "entropy_coeff", "entropy bonus"),
    "h4_lenient_verifier_beta0": ("verifier", "held-out", "highest-reward samples"),
    "h4_cosine_peak_3e-3": ("learning_rate", "optim.lr"),
    "h4_too_hard_with_format": ("easier prompts", "curriculum", "reward function",
                                "out of reach", "never moved", "correctness"),
    # The fifth set (--set holdout5), scored once as made.
    "h5_lr_1e-2_clip": ("learning_rate",),
    "h5_group_2_lr3e-4": ("num_generations", "rollout.n", "learning_rate", "optim.lr"),
    "h5_temperature_0.6": ("temperature",),
    "h5_max_new_3": ("max_completion_length", "response_length"),
    "h5_entropy_bonus_0.2": ("entropy_coef", "entropy_coeff", "entropy bonus"),
    "h5_fp16_lr1e-3": ("dtype", "bf16", "bfloat16"),
    "h5_length_reward": ("length", "held-out"),
    # The sixth set (--set holdout6), scored once as made.
    "h6_cosine_2e-3_noclip": ("max_grad_norm", "learning_rate", "optim.lr", "grad_clip"),
    "h6_group_3_too_hard": ("easier prompts", "curriculum", "out of reach", "never moved",
                            "reward function", "correctness"),
    "h6_temperature_0.3": ("temperature",),
    "h6_epochs4_clipped": ("ppo_epochs", "num_iterations", "epochs", "learning_rate",
                           "optim.lr"),
    "h6_beta0_lr2e-3": ("beta", "KL coefficient", "learning_rate"),
    "h6_lenient_verifier_lr3e-4": ("verifier", "held-out", "highest-reward samples"),
    # The seventh set (--set holdout7), scored once as made.
    "h7_lr_5e-3_warmup_50": ("learning_rate", "optim.lr"),
    "h7_group_4_temperature_0.7": ("num_generations", "temperature"),
    "h7_entropy_bonus_0.4_beta0": ("entropy_coef", "entropy_coeff", "entropy bonus"),
    "h7_max_new_4_think": ("max_completion_length", "think", "format"),
    "h7_fp16_lr2e-4": ("dtype", "bf16", "bfloat16"),
    "h7_too_easy_exact": ("harder prompts",),
    # The eighth set (--set holdout8), scored once as made.
    "h8_lr_3e-3_beta_0.1": ("learning_rate",),
    "h8_temperature_1.5": ("temperature",),
    "h8_group_16_too_hard": ("easier prompts", "curriculum", "out of reach", "reward function",
                             "never moved"),
    "h8_epochs_3_eps_0.4": ("ppo_epochs", "num_iterations", "clip_ratio", "epsilon",
                            "learning_rate", "optim.lr"),
    "h8_max_new_6_long_answers": ("max_completion_length",),
    # Set 9, written before it was made.
    "h9_eps_high_0.05": ("epsilon_high", "clip_ratio_high", "eps_high", "clip-higher"),
    "h9_prompt_pool_8": ("prompts", "dataset", "held-out", "memoris", "memoriz"),
    "h9_beta_1.0": ("beta", "KL coefficient"),
    "h9_burst_3e-2": ("learning_rate", "restart", "roll back"),
    "h9_temperature_0.6_group_4": ("temperature", "num_generations"),
    # Set 10, written before it was made.
    "h10_minibatches_16_epochs_2": ("ppo_mini_batch", "mini-batch", "num_iterations",
                                    "ppo_epochs", "epochs", "learning_rate", "optim.lr"),
    "h10_weak_base_pretrain_20": ("easier prompts", "curriculum", "out of reach", "SFT",
                                  "stronger", "base model"),
    "h10_lr_1e-3_beta0": ("learning_rate", "beta", "kl_coef", "KL coefficient"),
    "h10_entropy_bonus_0.1_temperature_1.3": ("entropy_coef", "entropy_coeff",
                                              "entropy bonus"),
    "h10_fp16_lr1e-4": ("dtype", "bf16", "bfloat16"),
    "h10_burst_1e-2_noclip_2_steps": ("learning_rate", "optim.lr"),
    # Set 11, written before it was made.
    "h11_grad_clip_0.01": ("max_grad_norm", "grad_clip", "clip_grad"),
    "h11_eps_0.6_epochs_2": ("epsilon", "clip_ratio", "cliprange", "clip range"),
    "h11_eps_0.02": ("epsilon", "clip_ratio", "cliprange", "clip range"),
    "h11_noclip_epochs_2_lr1e-3": ("max_grad_norm", "grad_clip", "clipping", "learning_rate",
                                   "optim.lr"),
    "h11_temperature_0.25": ("temperature",),
    # Set 12, written before it was made.
    "h12_entropy_penalty": ("entropy_coef", "entropy_coeff", "entropy bonus"),
    "h12_prompt_pool_2": ("prompts", "dataset", "held-out", "memoris", "memoriz"),
    "h12_beta_0.001_lr5e-4": ("beta", "kl_coef", "KL coefficient"),
    "h12_epochs_8": ("ppo_epochs", "num_iterations", "epochs"),
    # Set 13, written before it was made.
    "h13_lr_1e-6": ("learning_rate", "optim.lr"),
    "h13_format_only_reward": ("correctness", "right answers", "reward on a few completions",
                               "pays"),
    "h13_eps_high_0.6": ("epsilon_high", "clip_ratio_high", "eps_high", "clip-higher"),
    "h13_temperature_1.4_lr5e-4": ("temperature",),
    # Set 14, written before it was made.
    "h14_tags_1.0_correct_0.2": ("tags", "think", "format", "reward weights", "weight"),
    "h14_lenient_verifier_beta_0.1": ("verifier", "inspect", "completions", "held-out"),
    "h14_too_hard_g16": ("easier prompts", "curriculum", "out of reach", "SFT"),
    "h14_prompt_pool_16_lr1e-3": ("prompts", "dataset", "held-out", "memoris", "memoriz",
                                  "learning_rate"),
    # Set 15, written before it was made.
    "h15_beta_0.3_lr3e-4": ("beta", "KL coefficient", "kl_coef"),
    "h15_max_new_6_ks_4_5": ("max_completion_length", "completion budget"),
    "h15_temperature_0.4_g16": ("temperature",),
    "h15_prompt_pool_4_lr1e-4": ("prompts", "dataset", "held-out", "memoris", "memoriz"),
    # Set 16, written before it was made.
    "h16_eps_low_0.5_epochs_3": ("epsilon", "clip_ratio", "cliprange", "clip range",
                                 "num_iterations", "ppo_epochs", "epochs"),
    "h16_fp16_lr3e-4": ("dtype", "bf16", "bfloat16"),
    "h16_entropy_bonus_0.03_lr3e-4": ("entropy_coef", "entropy_coeff", "entropy bonus"),
    # Set 17, written before it was made.
    "h17_lr_2e-3_group_16": ("learning_rate", "lr"),
    "h17_temperature_0.5_beta_0.1": ("temperature",),
    "h17_eps_high_0.5_entropy_bonus_0.02": ("entropy_coef", "entropy_coeff", "entropy bonus",
                                            "epsilon_high", "clip_ratio_high"),
    "h17_epochs_6_minibatches_4": ("num_iterations", "ppo_epochs", "epochs", "minibatch"),
    # Set 18, written before it was made.
    "h18_lr_3e-3_noclip": ("learning_rate", "max_grad_norm", "clip gradients"),
    "h18_beta0_temperature_0.6": ("temperature", "beta"),
    "h18_eps_0.6_both_sides": ("epsilon", "clip_ratio", "cliprange", "clip range"),
    "h18_max_new_4_ks_4": ("max_completion_length", "completion budget"),
    "h18_entropy_bonus_0.2_beta0": ("entropy_coef", "entropy_coeff", "entropy bonus"),
}

#: ADVICE.md rows: (path, --run pick, do-first words (any), wrong-first words (none)).
ADVICE_ROWS: list[tuple[str, str | None, tuple[str, ...], tuple[str, ...]]] = [
    ("trl-console/nips-grpo-dynamics_exp1a_rho0.50_seed43.log", None,
     ("before step 35",), ("length or cost reward", "length reward")),
    ("trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log", None,
     ("roll back",), ("max response length", "dynamic sampling")),
    ("trl-console/20251022_181457_run_terminal.md", None,
     ("learning_rate", "entropy"), ("overlong",)),
    ("trl-console/20251022_120223_run_terminal.md", None,
     ("bare answer", "format"), ("raise max", "length x2")),
    ("trl-console/SCU_TSC_docker_run.log", None, ("reward function",), ("dynamic sampling:",)),
    ("trl-console/round2_sclr_first_l3.txt", None, ("reward",), ("learning_rate",)),
    ("trl-console/RLDecisionAgent_train_grpo.log", "RLDecisionAgent_train_grpo#1",
     ("dtype", "numerical setup"), ("max_grad_norm", "clip gradients")),
    ("tensorboard/events.out.tfevents.1740427850.declare-a100-0.3275755.0", None,
     ("equation_reward_func",), ("learning_rate",)),
    ("trainer-state/IITD_AAIPL_minesweeper_checkpoint-500_trainer_state.json", None,
     ("max_completion_length",), ("overlong shaping:", "drop truncated")),
    ("notebook-tables/Llama_FP8_GRPO__2025-11-25_b35307e0_c9fea5.csv", None,
     ("max_completion_length", "budget"), ("overlong shaping:",)),
    ("notebook-tables/DeepSeek_R1_0528_Qwen3_(8B)_GRPO__2025-06-05_fc0ecd2c_839abc.csv", None,
     ("check_answer",), ()),
    ("notebook-tables/Qwen3_VL_(8B)-Vision-GRPO__2025-10-14_4480b9c4_4d11ec.csv", None,
     ("reward function", "correctness"), ("solved", "stop here")),
    ("notebook-tables/OpenEnv_gpt_oss_(20B)_Reinforcement_Learning_2048_Game__2025-11-25_"
     "8a1c943e_2b8cd9.csv", None, ("KL", "beta"), ("highest-reward samples",)),
    ("notebook-tables/gpt-oss-(20B)-GRPO__2025-11-22_b9599a9e_0a2d5f.csv", None,
     ("no_cheating",), ("overlong", "length shaping")),
    ("log-history/nips-grpo-dynamics_qwen35_rho0.70_seed44_step_logs.json", None,
     ("roll back",), ("before step 85",)),
    ("notebook-tables/Qwen2_5_7B_VL_GRPO__2025-09-17_0a49f524_938224.csv", None,
     ("reward", "learning rate"), ()),
]

#: Real runs the real-runs README calls healthy (the list the real-run tests hold).
REAL_HEALTHY = HEALTHY

#: The tiny corpus model's recipe: healthy lr 1e-4, so the ceiling is 5e-4.
CORPUS_RECIPE = {"learning_rate": {"high": 5e-4}}


def corpus_config(label: dict) -> dict:
    """A corpus run's settings under TRL's names (what a ``[config]`` table would give)."""
    c = label["config"]
    out = {"learning_rate": c.get("lr"), "beta": c.get("beta"),
           "temperature": c.get("temperature"), "num_generations": c.get("group"),
           "epsilon": c.get("eps_low"), "epsilon_high": c.get("eps_high"),
           "num_iterations": c.get("inner_epochs"),
           "max_grad_norm": c.get("max_grad_norm") if c.get("max_grad_norm") else 0,
           "entropy_coef": c.get("entropy_coef"), "max_completion_length": c.get("max_new"),
           "model_config": {"dtype": c.get("dtype", "float32")}}
    return {k: v for k, v in out.items() if v is not None}


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _has(text: str, words: tuple[str, ...]) -> bool:
    return any(w.lower() in text.lower() for w in words)


def score_corpus(folder: Path = CORPUS, causes: dict[str, tuple[str, ...]] = CORPUS_CAUSES
                 ) -> tuple[list[tuple], list[str]]:
    labels = json.loads((folder / "labels.json").read_text())
    rows, healthy_bad = [], []
    for e in labels:
        run = load_runs(folder / e["run"])[0]
        cfg = DoctorConfig(recipe=CORPUS_RECIPE, run_config=corpus_config(e))
        d = diagnose(run, cfg)
        if e["healthy"]:
            if d.status not in ("healthy", "inconclusive"):
                healthy_bad.append(f"{e['name']}: {d.status}")
            continue
        words = causes.get(e["name"])
        if words is None:
            continue
        if d.root_cause is None:
            # Nothing fired (a solved task is healthy by design): the report still names the
            # cause if a check's sentence or a note does ("harder prompts would teach more").
            said = " | ".join([c.summary for c in d.checks] + list(d.notes))
            hit = _has(said, words)
            rows.append((e["name"], hit, hit, f"({d.status}) " + next(
                (c.summary for c in d.checks if _has(c.summary, words)), "no root cause")))
            continue
        first = d.root_cause.first_action
        top3 = " | ".join(p.action for p in d.plan[:3])
        rows.append((e["name"], _has(first, words), _has(top3, words), first))
    return rows, healthy_bad


def score_real(real: Path) -> tuple[list[tuple], list[str]]:
    rows, healthy_bad = [], []
    for path, pick, good, wrong in ADVICE_ROWS:
        if not (real / path).exists():
            continue
        runs = load_runs(real / path)
        run = next(r for r in runs if r.name == pick) if pick else runs[0]
        d = diagnose(run)
        first = d.root_cause.first_action if d.root_cause else "(healthy)"
        ok = _has(first, good) and not _has(first, wrong)
        rows.append((Path(path).name[:48], ok, first))
    for path in REAL_HEALTHY:
        if (real / path).exists():
            for run in load_runs(real / path):
                status = diagnose(run).status
                if status != healthy_status(run.name):
                    healthy_bad.append(f"{run.name}: {status}")
    return rows, healthy_bad


def _print_runs(kind: str, rows: list[tuple]) -> None:
    print(f"{kind + ' run':<27} first  top-3  first action")
    for name, first, top3, text in rows:
        print(f"{name:<27} {'yes' if first else 'NO':<6} {'yes' if top3 else 'NO':<6} "
              f"{_one_line(text)[:90]}")
    n = len(rows)
    print(f"\n{kind}: first action names the cause on {sum(r[1] for r in rows)}/{n} "
          f"({sum(r[1] for r in rows) / n:.0%}); within the first three on "
          f"{sum(r[2] for r in rows)}/{n} ({sum(r[2] for r in rows) / n:.0%})\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", default=str(ROOT.parent / "shared" / "real-runs"))
    parser.add_argument("--holdout", type=Path, help="a generated holdout folder to score")
    args = parser.parse_args()
    rows, healthy_bad = score_corpus()
    _print_runs("corpus", rows)
    if args.holdout is not None:
        held, held_bad = score_corpus(args.holdout, HOLDOUT_CAUSES)
        healthy_bad += held_bad
        _print_runs("holdout", held)
    real = Path(args.real)
    if real.is_dir():
        real_rows, real_bad = score_real(real)
        healthy_bad += real_bad
        print("\nADVICE.md row                                     right  first action")
        for name, ok, text in real_rows:
            print(f"{name:<49} {'yes' if ok else 'NO':<6} {_one_line(text)[:80]}")
        m = len(real_rows)
        print(f"\nADVICE.md: first action right on {sum(r[1] for r in real_rows)}/{m}")
    print(f"\nhealthy runs not healthy: {len(healthy_bad)}"
          + "".join(f"\n  {h}" for h in healthy_bad))


if __name__ == "__main__":
    main()
