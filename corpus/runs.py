"""The corpus: one RunConfig per run. ``intent`` is what the configuration was meant to induce;
the labels (corpus/label.py) say what the logs show, which may differ."""

from __future__ import annotations

from corpus.grpo import RunConfig

# The base recipe: a briefly pre-trained policy (sampled accuracy ~0.3 on the RL task), RL on
# reverse/copy of 3-4 digits, reward = exact answer + 0.2 x strict format.
BASE = dict(pretrain_steps=120, ops=("rev", "copy"), ks=(3, 4))
HEALTHY = dict(BASE, steps=250, lr=1e-4)


def _r(name: str, framework: str, fmt: str, intent: str, what: str, **kw) -> RunConfig:
    return RunConfig(name=name, framework=framework, fmt=fmt, intent=intent, what=what, **kw)


RUNS: list[RunConfig] = [
    _r("healthy_s1", "trl", "tensorboard", "healthy", "base recipe, lr=1e-4, beta=0.04, seed 1",
       seed=1, **HEALTHY),
    _r("healthy_s2", "verl", "wandb", "healthy", "base recipe, lr=1e-4, beta=0.04, seed 2",
       seed=2, **HEALTHY),
    _r("healthy_s3", "trl", "trainer_state", "healthy",
       "base recipe, lr=1e-4, beta=0.04, seed 3", seed=3, **HEALTHY),
    _r("healthy_s4", "verl", "csv", "healthy", "base recipe, lr=1e-4, beta=0.04, seed 4",
       seed=4, **HEALTHY),
    _r("healthy_s5_g16", "trl", "wandb", "healthy",
       "base recipe, G=16 x 4 prompts, lr=1e-4, seed 5", seed=5,
       **dict(HEALTHY, batch_prompts=4, group=16)),
    _r("healthy_s6_cosine", "verl", "tensorboard", "healthy",
       "base recipe, lr=2e-4 cosine with 10 warm-up steps, seed 6", seed=6,
       **dict(HEALTHY, lr=2e-4, schedule="cosine", warmup=10)),
    _r("healthy_s7_beta002", "trl", "csv", "healthy",
       "base recipe, lr=1e-4, beta=0.02, seed 7", seed=7, **dict(HEALTHY, beta=0.02)),
    _r("lr_too_high", "verl", "tensorboard", "entropy_collapse",
       "lr=3e-3 (30x the healthy lr), grad clip 1.0", seed=1, **dict(BASE, steps=250, lr=3e-3)),
    _r("lr_huge_noclip", "trl", "wandb", "grad_explosion",
       "lr=1e-2 (100x), no gradient clipping", seed=1,
       **dict(BASE, steps=250, lr=1e-2, max_grad_norm=None)),
    _r("low_temperature", "verl", "csv", "entropy_collapse",
       "rollout temperature 0.3, lr=3e-4", seed=1,
       **dict(BASE, steps=250, lr=3e-4, temperature=0.3)),
    _r("too_hard", "trl", "trainer_state", "advantage_collapse",
       "task too hard: reverse/copy 5-6 digits (never pre-trained), exact-match reward only",
       seed=1, **dict(BASE, ks=(5, 6), max_new=10, steps=200, lr=1e-4,
                      weights={"correct": 1.0})),
    _r("too_hard_with_format", "verl", "wandb", "advantage_collapse",
       "task too hard (5-6 digits) with a 0.2 format reward that saturates", seed=2,
       **dict(BASE, ks=(5, 6), max_new=10, steps=200, lr=1e-4)),
    _r("too_easy", "trl", "tensorboard", "advantage_collapse",
       "task too easy: copy 1-2 digits after 300 pre-training steps", seed=1,
       **dict(BASE, pretrain_steps=300, ops=("copy",), ks=(1, 2), steps=200, lr=1e-4)),
    _r("beta0_long", "verl", "csv", "kl_drift",
       "beta=0 (KL loss on, coefficient 0), lr=5e-4, 600 steps", seed=1,
       **dict(BASE, steps=600, lr=5e-4, beta=0.0)),
    _r("length_reward", "verl", "tensorboard", "length_hacking",
       "reward = exact + 3.0 x length/max_len (a length-preferring RM), beta=0, lr=5e-4",
       seed=1, **dict(BASE, steps=250, lr=5e-4, beta=0.0, max_new=10,
                      weights={"correct": 1.0, "length": 3.0})),
    _r("think_tag_reward", "trl", "wandb", "format_gaming",
       "reward = exact + 1.5 x share of <think> tag tokens, lr=3e-4", seed=1,
       **dict(BASE, steps=300, lr=3e-4, weights={"correct": 1.0, "tags": 1.5})),
    _r("lenient_verifier", "verl", "wandb", "reward_hacking",
       "buggy verifier (answer's last digit anywhere after <a>) + 0.2 format, beta=0, lr=1e-3, "
       "tasks rev/copy/sum of 2-3 digits", seed=1,
       pretrain_steps=120, ops=("rev", "copy", "sum"), ks=(2, 3), steps=250, lr=1e-3, beta=0.0,
       max_new=10, weights={"verifier": 1.0, "format": 0.2}),
    _r("lenient_verifier_kl", "trl", "trainer_state", "reward_hacking",
       "same buggy verifier with beta=0.04, lr=1e-3", seed=2,
       pretrain_steps=120, ops=("rev", "copy", "sum"), ks=(2, 3), steps=250, lr=1e-3,
       max_new=10, weights={"verifier": 1.0, "format": 0.2}),
    _r("ppo_epochs_noclip", "verl", "csv", "ratio_instability",
       "4 PPO epochs x 4 minibatches per rollout, lr=3e-3, no gradient clipping", seed=1,
       **dict(BASE, steps=200, lr=3e-3, max_grad_norm=None, inner_epochs=4, minibatches=4)),
    _r("lr_warmup_to_0.3", "trl", "tensorboard", "numerical_failure",
       "linear warm-up to lr=0.3 over 200 steps, grad clip 1.0", seed=1,
       **dict(BASE, steps=200, lr=0.3, schedule="warmup", warmup=200)),
    _r("lr_warmup_to_3e-2_noclip", "verl", "csv", "grad_explosion",
       "linear warm-up to lr=3e-2 over 150 steps, no gradient clipping", seed=1,
       **dict(BASE, steps=200, lr=3e-2, schedule="warmup", warmup=150, max_grad_norm=None)),
    _r("entropy_bonus_0.5", "trl", "trainer_state", "entropy_blowup",
       "entropy bonus coefficient 0.5 (loss -= 0.5 x H)", seed=1,
       **dict(BASE, steps=200, lr=3e-4, entropy_coef=0.5)),
    _r("entropy_bonus_0.25", "verl", "csv", "likelihood_displacement",
       "entropy bonus coefficient 0.25, lr=3e-4, 300 steps", seed=2,
       **dict(BASE, steps=300, lr=3e-4, entropy_coef=0.25)),
    _r("fp16_pure", "trl", "csv", "numerical_failure",
       "pure fp16 weights and Adam states (no master weights, no loss scaling, adam eps 1e-4), "
       "lr=1e-3", seed=1,
       **dict(BASE, steps=100, lr=1e-3, dtype="float16", adam_eps=1e-4)),
    _r("asym_clip_negative_heavy", "verl", "tensorboard", "likelihood_displacement",
       "4 PPO epochs with clip range [0.1, 1.02] (negative-advantage updates barely clipped, "
       "positive ones stopped early), beta=0, lr=3e-4", seed=1,
       **dict(BASE, steps=200, lr=3e-4, beta=0.0, eps_low=0.9, eps_high=0.02,
              inner_epochs=4)),
    _r("too_easy_exact_only", "trl", "trainer_state", "advantage_collapse",
       "task too easy (copy 1-2 digits, 300 pre-training steps), exact-match reward only, "
       "lr=3e-4", seed=1,
       **dict(BASE, pretrain_steps=300, ops=("copy",), ks=(1, 2), steps=200, lr=3e-4,
              weights={"correct": 1.0})),
    _r("think_tag_reward_w3", "trl", "wandb", "format_gaming",
       "reward = exact + 3.0 x share of <think> tag tokens, lr=3e-4", seed=1,
       **dict(BASE, steps=300, lr=3e-4, weights={"correct": 1.0, "tags": 3.0})),
    _r("lr_warmup_to_0.3_s0", "verl", "wandb", "numerical_failure",
       "linear warm-up to lr=0.3 over 200 steps, grad clip 1.0 (run 20's recipe, seed 0)",
       seed=0, **dict(BASE, steps=200, lr=0.3, schedule="warmup", warmup=200)),
    _r("lenient_verifier_slow", "verl", "tensorboard", "likelihood_displacement",
       "buggy verifier + 0.2 format, beta=0, lr=3e-4 (3x lower than run 17), 400 steps",
       seed=3, pretrain_steps=120, ops=("rev", "copy", "sum"), ks=(2, 3), steps=400, lr=3e-4,
       beta=0.0, max_new=10, weights={"verifier": 1.0, "format": 0.2}),
    # Issue 12: an incident the run comes back from, a dead run, a warm-up that overshoots.
    _r("early_burst_recovers", "trl", "csv", "kl_drift",
       "lr=1.5e-2 for the first step (no gradient clipping), then the healthy 1e-4, beta=0.04",
       seed=1, **dict(HEALTHY, steps=250, schedule="burst", warmup=1, burst_lr=1.5e-2,
                      max_grad_norm=None)),
    _r("dead_after_one_update", "trl", "trainer_state", "no_learning_signal",
       "lr=0.1 constant, no gradient clipping, beta=0: one catastrophic first update", seed=1,
       **dict(BASE, steps=150, lr=0.1, beta=0.0, max_grad_norm=None)),
    _r("warmup_overshoot", "verl", "wandb", "reward_overfit",
       "linear warm-up to lr=2e-2 over 300 steps (200x the healthy lr at the end), grad clip 1.0",
       seed=2, **dict(BASE, steps=300, lr=2e-2, schedule="warmup", warmup=300)),
]

# For `grpo-doctor compare` (tests/fixtures/compare, not labeled, not in the accuracy bench):
# the corpus's seeds also change the pre-trained base (each seed pre-trains its own), so here
# two more RL seeds from healthy_s1's base, and lr_too_high's recipe under TRL's names (its
# TensorBoard log carries the config as HF's `args` text; the training is lr_too_high's).
COMPARE_RUNS: list[RunConfig] = [
    _r("healthy_s1_rl2", "trl", "tensorboard", "healthy",
       "base recipe, lr=1e-4, beta=0.04, healthy_s1's pre-trained base, RL seed 2", seed=1,
       rl_seed=2, **HEALTHY),
    _r("healthy_s1_rl3", "trl", "tensorboard", "healthy",
       "base recipe, lr=1e-4, beta=0.04, healthy_s1's pre-trained base, RL seed 3", seed=1,
       rl_seed=3, **HEALTHY),
    _r("lr_too_high_trl", "trl", "tensorboard", "entropy_collapse",
       "lr=3e-3 (30x the healthy lr), grad clip 1.0: lr_too_high under TRL's names", seed=1,
       **dict(BASE, steps=250, lr=3e-3)),
]

# Held out (issue 23's advice work): wrong settings the corpus does not have, on seeds it does
# not use, made to check the first action on runs no rule was tuned on (bench/advice.py
# --holdout; what an expert changes first, HOLDOUT_CAUSES there, was written before the runs
# were made). Not committed as fixtures: regenerate with --set holdout (about 2 minutes).
HOLDOUT_RUNS: list[RunConfig] = [
    _r("h_lr_1e-3", "trl", "csv", "entropy_collapse",
       "lr=1e-3 (10x the healthy lr), grad clip 1.0, seed 11", seed=11,
       **dict(BASE, steps=250, lr=1e-3)),
    _r("h_temperature_0.5", "verl", "tensorboard", "entropy_collapse",
       "rollout temperature 0.5, lr=1e-4, seed 12", seed=12,
       **dict(HEALTHY, temperature=0.5)),
    _r("h_max_new_4", "trl", "wandb", "advantage_collapse",
       "max_completion_length 4: the answer (<a> 3-4 digits </s>) never fits, seed 13",
       seed=13, **dict(HEALTHY, steps=150, max_new=4)),
    _r("h_group_2", "verl", "csv", "advantage_collapse",
       "num_generations 2 (32 prompts x 2), lr=1e-4, seed 14", seed=14,
       **dict(HEALTHY, batch_prompts=32, group=2)),
    _r("h_beta0_lr1e-3", "trl", "tensorboard", "kl_drift",
       "beta=0, lr=1e-3, 400 steps, seed 15", seed=15,
       **dict(BASE, steps=400, lr=1e-3, beta=0.0)),
    _r("h_entropy_bonus_0.1", "trl", "csv", "entropy_blowup",
       "entropy bonus coefficient 0.1, lr=3e-4, seed 16", seed=16,
       **dict(BASE, steps=250, lr=3e-4, entropy_coef=0.1)),
    _r("h_epochs4_noclip", "verl", "wandb", "ratio_instability",
       "4 PPO epochs x 4 minibatches, lr=1e-3, no gradient clipping, seed 17", seed=17,
       **dict(BASE, steps=200, lr=1e-3, max_grad_norm=None, inner_epochs=4, minibatches=4)),
    _r("h_healthy_s18", "verl", "csv", "healthy", "base recipe, lr=1e-4, beta=0.04, seed 18",
       seed=18, **HEALTHY),
    _r("h_healthy_lr5e-5_s19", "trl", "trainer_state", "healthy",
       "base recipe at lr=5e-5, seed 19", seed=19, **dict(HEALTHY, lr=5e-5)),
]

# A second held-out set, made after the first had been used to mend the advice (its group of 2
# and its 4-token budget): scored once, as made, with nothing tuned on it.
HOLDOUT2_RUNS: list[RunConfig] = [
    _r("h2_lr_2e-3", "verl", "wandb", "entropy_collapse",
       "lr=2e-3 (20x the healthy lr), grad clip 1.0, seed 21", seed=21,
       **dict(BASE, steps=250, lr=2e-3)),
    _r("h2_temperature_0.4", "trl", "trainer_state", "entropy_collapse",
       "rollout temperature 0.4, lr=1e-4, seed 22", seed=22, **dict(HEALTHY, temperature=0.4)),
    _r("h2_max_new_5", "verl", "csv", "length_hacking",
       "max_completion_length 5: 3-digit answers fit exactly, 4-digit ones never, seed 23",
       seed=23, **dict(HEALTHY, max_new=5)),
    _r("h2_group_3", "trl", "tensorboard", "advantage_collapse",
       "num_generations 3 (21 prompts x 3), lr=1e-4, seed 24", seed=24,
       **dict(HEALTHY, batch_prompts=21, group=3)),
    _r("h2_entropy_bonus_0.3", "verl", "wandb", "entropy_blowup",
       "entropy bonus coefficient 0.3, lr=3e-4, seed 25", seed=25,
       **dict(BASE, steps=250, lr=3e-4, entropy_coef=0.3)),
    _r("h2_eps_high_0.8", "trl", "csv", "ratio_instability",
       "upper clip 0.8 (ratios up to 1.8), 2 PPO epochs, lr=3e-4, seed 26", seed=26,
       **dict(BASE, steps=250, lr=3e-4, eps_high=0.8, inner_epochs=2)),
    _r("h2_noclip_lr5e-3", "trl", "wandb", "grad_explosion",
       "lr=5e-3, no gradient clipping, seed 27", seed=27,
       **dict(BASE, steps=250, lr=5e-3, max_grad_norm=None)),
    _r("h2_fp16_lr5e-4", "verl", "tensorboard", "numerical_failure",
       "pure fp16 weights and Adam states (adam eps 1e-4), lr=5e-4, seed 28", seed=28,
       **dict(BASE, steps=150, lr=5e-4, dtype="float16", adam_eps=1e-4)),
    _r("h2_too_hard_sum", "verl", "csv", "advantage_collapse",
       "task too hard: sum mod 10 of 5-6 digits, exact-match reward only, seed 29", seed=29,
       **dict(BASE, ops=("sum",), ks=(5, 6), max_new=6, steps=200, lr=1e-4,
              weights={"correct": 1.0})),
    _r("h2_healthy_s30", "trl", "wandb", "healthy", "base recipe, lr=1e-4, seed 30", seed=30,
       **HEALTHY),
    _r("h2_healthy_g16_s31", "verl", "tensorboard", "healthy",
       "base recipe, G=16 x 4 prompts, seed 31", seed=31,
       **dict(HEALTHY, batch_prompts=4, group=16)),
]

# A third held-out set, made after set 2 had been used (its solved task read critical): scored
# once, as made.
HOLDOUT3_RUNS: list[RunConfig] = [
    _r("h3_beta_0.5", "trl", "csv", "no_progress",
       "beta=0.5 (10x the recipe's top), lr=1e-4, seed 41", seed=41, **dict(HEALTHY, beta=0.5)),
    _r("h3_temperature_1.8", "verl", "wandb", "entropy_blowup",
       "rollout temperature 1.8, lr=3e-4, seed 42", seed=42,
       **dict(BASE, steps=250, lr=3e-4, temperature=1.8)),
    _r("h3_length_reward_seq_mean", "trl", "tensorboard", "length_hacking",
       "reward = exact + 2.0 x length/max_len, per-sequence loss mean, lr=3e-4, seed 43",
       seed=43, **dict(BASE, steps=250, lr=3e-4, max_new=10, loss_agg="seq_mean",
                       weights={"correct": 1.0, "length": 2.0})),
    _r("h3_eps_low_0.8_epochs3", "verl", "csv", "ratio_instability",
       "lower clip 0.8 (ratios down to 0.2), 3 PPO epochs, lr=3e-4, seed 44", seed=44,
       **dict(BASE, steps=250, lr=3e-4, eps_low=0.8, inner_epochs=3)),
    _r("h3_warmup_to_1e-2", "trl", "wandb", "reward_overfit",
       "linear warm-up to lr=1e-2 over 250 steps, grad clip 1.0, seed 45", seed=45,
       **dict(BASE, steps=250, lr=1e-2, schedule="warmup", warmup=250)),
    _r("h3_lenient_verifier", "verl", "tensorboard", "reward_hacking",
       "buggy verifier + 0.2 format, beta=0.01, lr=5e-4, seed 46", seed=46,
       pretrain_steps=120, ops=("rev", "copy", "sum"), ks=(2, 3), steps=300, lr=5e-4,
       beta=0.01, max_new=10, weights={"verifier": 1.0, "format": 0.2}),
    _r("h3_think_tag_w2", "trl", "trainer_state", "format_gaming",
       "reward = exact + 2.0 x share of <think> tag tokens, lr=3e-4, seed 47", seed=47,
       **dict(BASE, steps=300, lr=3e-4, weights={"correct": 1.0, "tags": 2.0})),
    _r("h3_too_easy", "verl", "csv", "advantage_collapse",
       "task too easy: copy 1-2 digits after 300 pre-training steps, seed 48", seed=48,
       **dict(BASE, pretrain_steps=300, ops=("copy",), ks=(1, 2), steps=200, lr=1e-4)),
    _r("h3_healthy_s49", "trl", "trainer_state", "healthy", "base recipe, seed 49", seed=49,
       **HEALTHY),
    _r("h3_healthy_cosine_s50", "verl", "csv", "healthy",
       "base recipe, lr=2e-4 cosine with 10 warm-up steps, seed 50", seed=50,
       **dict(HEALTHY, lr=2e-4, schedule="cosine", warmup=10)),
]

# A fourth held-out set, made after set 3's mends: scored once, as made.
HOLDOUT4_RUNS: list[RunConfig] = [
    _r("h4_lr_5e-4_group_4", "trl", "csv", "advantage_collapse",
       "lr=5e-4 (5x the healthy lr), num_generations 4 (16 prompts x 4), seed 51", seed=51,
       **dict(BASE, steps=250, lr=5e-4, batch_prompts=16, group=4)),
    _r("h4_beta0_temperature_0.7", "verl", "tensorboard", "entropy_collapse",
       "beta=0 and rollout temperature 0.7, lr=3e-4, seed 52", seed=52,
       **dict(BASE, steps=250, lr=3e-4, beta=0.0, temperature=0.7)),
    _r("h4_noclip_epochs2_lr2e-3", "verl", "wandb", "grad_explosion",
       "2 PPO epochs, lr=2e-3, no gradient clipping, seed 53", seed=53,
       **dict(BASE, steps=250, lr=2e-3, max_grad_norm=None, inner_epochs=2)),
    _r("h4_entropy_bonus_0.05", "trl", "wandb", "entropy_blowup",
       "entropy bonus coefficient 0.05 (5x the recipe's top), lr=3e-4, seed 54", seed=54,
       **dict(BASE, steps=250, lr=3e-4, entropy_coef=0.05)),
    _r("h4_lenient_verifier_beta0", "trl", "tensorboard", "reward_hacking",
       "buggy verifier + 0.2 format, beta=0, lr=5e-4, seed 55", seed=55,
       pretrain_steps=120, ops=("rev", "copy", "sum"), ks=(2, 3), steps=300, lr=5e-4,
       beta=0.0, max_new=10, weights={"verifier": 1.0, "format": 0.2}),
    _r("h4_cosine_peak_3e-3", "verl", "csv", "entropy_collapse",
       "cosine schedule peaking at lr=3e-3 after 20 warm-up steps, seed 56", seed=56,
       **dict(BASE, steps=250, lr=3e-3, schedule="cosine", warmup=20)),
    _r("h4_too_hard_with_format", "trl", "trainer_state", "advantage_collapse",
       "task too hard (sum mod 10 of 4-5 digits) with a 0.2 format reward, seed 57", seed=57,
       **dict(BASE, ops=("sum",), ks=(4, 5), max_new=6, steps=200, lr=1e-4)),
    _r("h4_healthy_s58", "verl", "tensorboard", "healthy", "base recipe, seed 58", seed=58,
       **HEALTHY),
    _r("h4_healthy_beta002_s59", "trl", "wandb", "healthy",
       "base recipe, beta=0.02, seed 59", seed=59, **dict(HEALTHY, beta=0.02)),
]

#: ``python -m corpus.tiny_grpo --set NAME``: which list of runs to generate.
RUN_SETS: dict[str, list[RunConfig]] = {"corpus": RUNS, "compare": COMPARE_RUNS,
                                        "holdout": HOLDOUT_RUNS, "holdout2": HOLDOUT2_RUNS,
                                        "holdout3": HOLDOUT3_RUNS, "holdout4": HOLDOUT4_RUNS}
