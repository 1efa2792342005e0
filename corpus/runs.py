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

# A fifth held-out set, made after set 4's mends: scored once, as made.
HOLDOUT5_RUNS: list[RunConfig] = [
    _r("h5_lr_1e-2_clip", "trl", "tensorboard", "entropy_collapse",
       "lr=1e-2 constant (100x), grad clip 1.0, seed 61", seed=61,
       **dict(BASE, steps=200, lr=1e-2)),
    _r("h5_group_2_lr3e-4", "verl", "wandb", "advantage_collapse",
       "num_generations 2 (32 prompts x 2), lr=3e-4, seed 62", seed=62,
       **dict(BASE, steps=250, lr=3e-4, batch_prompts=32, group=2)),
    _r("h5_temperature_0.6", "trl", "csv", "entropy_collapse",
       "rollout temperature 0.6, beta=0.01, lr=2e-4, seed 63", seed=63,
       **dict(BASE, steps=250, lr=2e-4, beta=0.01, temperature=0.6)),
    _r("h5_max_new_3", "verl", "csv", "length_hacking",
       "max_completion_length 3: no answer of 3-4 digits fits, seed 64", seed=64,
       **dict(HEALTHY, steps=150, max_new=3)),
    _r("h5_entropy_bonus_0.2", "trl", "wandb", "entropy_blowup",
       "entropy bonus coefficient 0.2, lr=3e-4, seed 65", seed=65,
       **dict(BASE, steps=250, lr=3e-4, entropy_coef=0.2)),
    _r("h5_fp16_lr1e-3", "trl", "csv", "numerical_failure",
       "pure fp16 weights and Adam states (adam eps 1e-4), lr=1e-3, seed 66", seed=66,
       **dict(BASE, steps=120, lr=1e-3, dtype="float16", adam_eps=1e-4)),
    _r("h5_length_reward", "verl", "tensorboard", "length_hacking",
       "reward = exact + 1.5 x length/max_len, beta=0, lr=3e-4, seed 67", seed=67,
       **dict(BASE, steps=250, lr=3e-4, beta=0.0, max_new=10,
              weights={"correct": 1.0, "length": 1.5})),
    _r("h5_healthy_s68", "trl", "csv", "healthy", "base recipe, seed 68", seed=68, **HEALTHY),
    _r("h5_healthy_g16_s69", "verl", "wandb", "healthy",
       "base recipe, G=16 x 4 prompts, seed 69", seed=69,
       **dict(HEALTHY, batch_prompts=4, group=16)),
]

# A sixth held-out set, made after set 5's mends: scored once, as made.
HOLDOUT6_RUNS: list[RunConfig] = [
    _r("h6_cosine_2e-3_noclip", "verl", "tensorboard", "grad_explosion",
       "cosine schedule peaking at lr=2e-3 after 10 warm-up steps, no gradient clipping, "
       "seed 71", seed=71,
       **dict(BASE, steps=250, lr=2e-3, schedule="cosine", warmup=10, max_grad_norm=None)),
    _r("h6_group_3_too_hard", "trl", "wandb", "advantage_collapse",
       "task too hard (reverse/copy 5-6 digits) with a 0.2 format term, groups of 3, seed 72",
       seed=72, **dict(BASE, ks=(5, 6), max_new=10, steps=200, lr=1e-4, batch_prompts=21,
                       group=3)),
    _r("h6_temperature_0.3", "trl", "wandb", "entropy_collapse",
       "rollout temperature 0.3, lr=1e-4, seed 73", seed=73, **dict(HEALTHY, temperature=0.3)),
    _r("h6_epochs4_clipped", "verl", "csv", "ratio_instability",
       "4 PPO epochs x 4 minibatches, lr=3e-4, grad clip 1.0, seed 74", seed=74,
       **dict(BASE, steps=250, lr=3e-4, inner_epochs=4, minibatches=4)),
    _r("h6_beta0_lr2e-3", "trl", "csv", "kl_drift",
       "beta=0, lr=2e-3, seed 75", seed=75, **dict(BASE, steps=300, lr=2e-3, beta=0.0)),
    _r("h6_lenient_verifier_lr3e-4", "trl", "tensorboard", "reward_hacking",
       "buggy verifier + 0.2 format, beta=0.04, lr=3e-4, 400 steps, seed 76", seed=76,
       pretrain_steps=120, ops=("rev", "copy", "sum"), ks=(2, 3), steps=400, lr=3e-4,
       max_new=10, weights={"verifier": 1.0, "format": 0.2}),
    _r("h6_healthy_lr7e-5_s77", "trl", "tensorboard", "healthy",
       "base recipe at lr=7e-5, seed 77", seed=77, **dict(HEALTHY, lr=7e-5)),
    _r("h6_healthy_clip_higher_s78", "verl", "csv", "healthy",
       "base recipe with Clip-Higher (upper clip 0.28), seed 78", seed=78,
       **dict(HEALTHY, eps_high=0.28)),
]

# A seventh held-out set, made after set 6: scored once, as made.
HOLDOUT7_RUNS: list[RunConfig] = [
    _r("h7_lr_5e-3_warmup_50", "verl", "csv", "grad_explosion",
       "linear warm-up to lr=5e-3 over 50 steps then constant, grad clip 1.0, seed 81", seed=81,
       **dict(BASE, steps=250, lr=5e-3, schedule="cosine", warmup=50)),
    _r("h7_group_4_temperature_0.7", "trl", "tensorboard", "advantage_collapse",
       "num_generations 4 (16 prompts x 4) and temperature 0.7, lr=1e-4, seed 82", seed=82,
       **dict(HEALTHY, batch_prompts=16, group=4, temperature=0.7)),
    _r("h7_entropy_bonus_0.4_beta0", "verl", "wandb", "entropy_blowup",
       "entropy bonus 0.4, beta=0, lr=3e-4, seed 83", seed=83,
       **dict(BASE, steps=250, lr=3e-4, beta=0.0, entropy_coef=0.4)),
    _r("h7_max_new_4_think", "trl", "csv", "format_gaming",
       "a think-tag reward (1.0) with a 4-token budget, seed 84", seed=84,
       **dict(BASE, steps=200, lr=3e-4, max_new=4, weights={"correct": 1.0, "tags": 1.0})),
    _r("h7_fp16_lr2e-4", "verl", "csv", "numerical_failure",
       "pure fp16 weights and Adam states (adam eps 1e-4), lr=2e-4, seed 85", seed=85,
       **dict(BASE, steps=150, lr=2e-4, dtype="float16", adam_eps=1e-4)),
    _r("h7_too_easy_exact", "trl", "wandb", "advantage_collapse",
       "task too easy (copy 1-2 digits, 300 pre-training steps), exact reward only, seed 86",
       seed=86, **dict(BASE, pretrain_steps=300, ops=("copy",), ks=(1, 2), steps=200,
                       lr=1e-4, weights={"correct": 1.0})),
    _r("h7_healthy_s87", "verl", "wandb", "healthy", "base recipe, seed 87", seed=87,
       **HEALTHY),
    _r("h7_healthy_s88", "trl", "csv", "healthy", "base recipe, seed 88", seed=88, **HEALTHY),
]

# An eighth held-out set, made at the end of session 7: scored once, as made.
HOLDOUT8_RUNS: list[RunConfig] = [
    _r("h8_lr_3e-3_beta_0.1", "trl", "wandb", "entropy_collapse",
       "lr=3e-3 with beta=0.1, grad clip 1.0, seed 91", seed=91,
       **dict(BASE, steps=250, lr=3e-3, beta=0.1)),
    _r("h8_temperature_1.5", "verl", "csv", "entropy_blowup",
       "rollout temperature 1.5, lr=3e-4, seed 92", seed=92,
       **dict(BASE, steps=250, lr=3e-4, temperature=1.5)),
    _r("h8_group_16_too_hard", "trl", "trainer_state", "advantage_collapse",
       "task too hard (reverse/copy 5-6 digits), exact reward only, G=16 x 4, seed 93",
       seed=93, **dict(BASE, ks=(5, 6), max_new=10, steps=200, lr=1e-4, batch_prompts=4,
                       group=16, weights={"correct": 1.0})),
    _r("h8_epochs_3_eps_0.4", "verl", "wandb", "ratio_instability",
       "3 PPO epochs with clip range 0.4, lr=5e-4, seed 94", seed=94,
       **dict(BASE, steps=250, lr=5e-4, inner_epochs=3, eps_low=0.4, eps_high=0.4)),
    _r("h8_max_new_6_long_answers", "trl", "tensorboard", "length_hacking",
       "reverse/copy 5-6 digits (7-8 answer tokens) with a 6-token budget, after 300 "
       "pre-training steps on 1-6 digits, seed 95", seed=95,
       **dict(BASE, pretrain_steps=300, pretrain_ks=(1, 2, 3, 4, 5, 6), ks=(5, 6), max_new=6,
              steps=150, lr=1e-4)),
    _r("h8_healthy_s96", "trl", "trainer_state", "healthy", "base recipe, seed 96", seed=96,
       **HEALTHY),
    _r("h8_healthy_cosine_s97", "verl", "wandb", "healthy",
       "base recipe, lr=2e-4 cosine with 10 warm-up steps, seed 97", seed=97,
       **dict(HEALTHY, lr=2e-4, schedule="cosine", warmup=10)),
]

# A ninth held-out set, made at the start of session 8: scored once, as made.
HOLDOUT9_RUNS: list[RunConfig] = [
    _r("h9_eps_high_0.05", "verl", "tensorboard", "entropy_collapse",
       "upper clip range 0.05 (eps_high), lower 0.2, lr=3e-4, seed 101", seed=101,
       **dict(BASE, steps=250, lr=3e-4, eps_high=0.05)),
    _r("h9_prompt_pool_8", "trl", "csv", "reward_overfit",
       "a fixed pool of 8 training prompts, lr=3e-4, 300 steps, seed 102", seed=102,
       **dict(BASE, steps=300, lr=3e-4, prompt_pool=8)),
    _r("h9_beta_1.0", "trl", "wandb", "no_progress",
       "beta=1.0 (20x the recipe's top), lr=1e-4, seed 103", seed=103,
       **dict(HEALTHY, beta=1.0)),
    _r("h9_noclip_healthy_lr", "verl", "csv", "healthy",
       "no gradient clipping at the healthy lr=1e-4, seed 104", seed=104,
       **dict(HEALTHY, max_grad_norm=None)),
    _r("h9_burst_3e-2", "trl", "trainer_state", "grad_explosion",
       "lr=3e-2 for the first 3 steps, then 1e-4, grad clip 1.0, seed 105", seed=105,
       **dict(BASE, steps=200, lr=1e-4, schedule="burst", warmup=3, burst_lr=3e-2)),
    _r("h9_temperature_0.6_group_4", "verl", "wandb", "entropy_collapse",
       "rollout temperature 0.6 with groups of 4 (16 prompts x 4), lr=2e-4, seed 106",
       seed=106, **dict(BASE, steps=250, lr=2e-4, temperature=0.6, batch_prompts=16, group=4)),
    _r("h9_healthy_s107", "trl", "tensorboard", "healthy", "base recipe, seed 107", seed=107,
       **HEALTHY),
]

# A tenth held-out set, made in session 8 after set 9's mends: scored once, as made.
HOLDOUT10_RUNS: list[RunConfig] = [
    _r("h10_minibatches_16_epochs_2", "verl", "wandb", "ratio_instability",
       "2 PPO epochs x 16 mini-batches per rollout batch, lr=5e-4, seed 111", seed=111,
       **dict(BASE, steps=250, lr=5e-4, inner_epochs=2, minibatches=16)),
    _r("h10_weak_base_pretrain_20", "trl", "tensorboard", "advantage_collapse",
       "a base barely pre-trained (20 steps): the task out of reach, lr=1e-4, seed 112",
       seed=112, **dict(HEALTHY, pretrain_steps=20)),
    _r("h10_lr_1e-3_beta0", "trl", "csv", "kl_drift",
       "lr=1e-3 (10x the healthy lr) with beta=0, grad clip 1.0, seed 113", seed=113,
       **dict(BASE, steps=250, lr=1e-3, beta=0.0)),
    _r("h10_entropy_bonus_0.1_temperature_1.3", "verl", "csv", "entropy_blowup",
       "entropy bonus 0.1 at rollout temperature 1.3, lr=3e-4, seed 114", seed=114,
       **dict(BASE, steps=250, lr=3e-4, entropy_coef=0.1, temperature=1.3)),
    _r("h10_fp16_lr1e-4", "trl", "wandb", "numerical_failure",
       "pure fp16 weights and Adam states (adam eps 1e-8), lr=1e-4, seed 115", seed=115,
       **dict(HEALTHY, dtype="float16")),
    _r("h10_burst_1e-2_noclip_2_steps", "verl", "tensorboard", "grad_explosion",
       "lr=1e-2 for the first 2 steps with no clipping, then 1e-4, seed 116", seed=116,
       **dict(BASE, steps=200, lr=1e-4, schedule="burst", warmup=2, burst_lr=1e-2,
              max_grad_norm=None)),
    _r("h10_healthy_s117", "verl", "csv", "healthy", "base recipe, seed 117", seed=117,
       **HEALTHY),
]

# An eleventh held-out set, made at the start of session 9: clipping set wrong both ways (the
# gradient clipped to almost nothing, the PPO ratio clip far too tight or too loose) and a
# large group on two prompts: scored once, as made.
HOLDOUT11_RUNS: list[RunConfig] = [
    _r("h11_grad_clip_0.01", "trl", "csv", "no_progress",
       "max_grad_norm 0.01 (every update clipped to a hundredth), lr=1e-4, seed 121",
       seed=121, **dict(HEALTHY, max_grad_norm=0.01)),
    _r("h11_eps_0.6_epochs_2", "verl", "wandb", "ratio_instability",
       "PPO clip range 0.6 both sides, 2 PPO epochs, lr=5e-4, seed 122", seed=122,
       **dict(BASE, steps=250, lr=5e-4, eps_low=0.6, eps_high=0.6, inner_epochs=2)),
    _r("h11_eps_0.02", "trl", "tensorboard", "no_progress",
       "PPO clip range 0.02 both sides, 2 PPO epochs, lr=1e-4, seed 123", seed=123,
       **dict(HEALTHY, eps_low=0.02, eps_high=0.02, inner_epochs=2)),
    _r("h11_noclip_epochs_2_lr1e-3", "verl", "csv", "grad_explosion",
       "no gradient clipping, 2 PPO epochs, lr=1e-3, seed 124", seed=124,
       **dict(BASE, steps=250, lr=1e-3, max_grad_norm=None, inner_epochs=2)),
    _r("h11_temperature_0.25", "trl", "wandb", "entropy_collapse",
       "rollout temperature 0.25, lr=1e-4, seed 125", seed=125,
       **dict(HEALTHY, temperature=0.25)),
    _r("h11_healthy_g32_x2_s126", "verl", "tensorboard", "healthy",
       "base recipe with G=32 on 2 prompts a step, seed 126", seed=126,
       **dict(HEALTHY, batch_prompts=2, group=32)),
    _r("h11_healthy_s127", "trl", "csv", "healthy", "base recipe, seed 127", seed=127,
       **HEALTHY),
]

# A twelfth held-out set, made in session 9 after set 11's mend: an entropy penalty (a bonus
# of the wrong sign), two prompts, a KL leash too weak, eight PPO epochs: scored once, as made.
HOLDOUT12_RUNS: list[RunConfig] = [
    _r("h12_entropy_penalty", "verl", "csv", "entropy_collapse",
       "entropy coefficient -0.05 (a penalty on entropy, the bonus's sign flipped), lr=2e-4, "
       "seed 131", seed=131, **dict(BASE, steps=250, lr=2e-4, entropy_coef=-0.05)),
    _r("h12_prompt_pool_2", "trl", "wandb", "reward_overfit",
       "a fixed pool of 2 training prompts, lr=3e-4, 300 steps, seed 132", seed=132,
       **dict(BASE, steps=300, lr=3e-4, prompt_pool=2)),
    _r("h12_beta_0.001_lr5e-4", "trl", "csv", "kl_drift",
       "beta=0.001 (a tenth of the recipe's floor), lr=5e-4, 400 steps, seed 133", seed=133,
       **dict(BASE, steps=400, lr=5e-4, beta=0.001)),
    _r("h12_epochs_8", "verl", "tensorboard", "ratio_instability",
       "8 PPO epochs per rollout batch, lr=2e-4, seed 134", seed=134,
       **dict(BASE, steps=200, lr=2e-4, inner_epochs=8)),
    _r("h12_healthy_beta_0.01_s135", "trl", "tensorboard", "healthy",
       "base recipe at the recipe's lowest beta, 0.01, seed 135", seed=135,
       **dict(HEALTHY, beta=0.01)),
    _r("h12_healthy_s136", "verl", "wandb", "healthy", "base recipe, seed 136", seed=136,
       **HEALTHY),
]

# A thirteenth held-out set, made in session 9 after set 12's mends: a learning rate too low, a
# reward that pays the format only, a wide upper clip, a hot rollout with a large lr: scored
# once, as made.
HOLDOUT13_RUNS: list[RunConfig] = [
    _r("h13_lr_1e-6", "trl", "tensorboard", "no_progress",
       "lr=1e-6 (100x below what this model learns at), seed 141", seed=141,
       **dict(HEALTHY, lr=1e-6)),
    _r("h13_format_only_reward", "verl", "csv", "format_gaming",
       "reward = the format term only (no correctness term), lr=3e-4, seed 142", seed=142,
       **dict(BASE, steps=250, lr=3e-4, weights={"format": 1.0})),
    _r("h13_eps_high_0.6", "trl", "wandb", "entropy_blowup",
       "upper clip 0.6 (ratios up to 1.6), lower 0.2, lr=3e-4, seed 143", seed=143,
       **dict(BASE, steps=250, lr=3e-4, eps_high=0.6)),
    _r("h13_temperature_1.4_lr5e-4", "verl", "tensorboard", "entropy_blowup",
       "rollout temperature 1.4, lr=5e-4, seed 144", seed=144,
       **dict(BASE, steps=250, lr=5e-4, temperature=1.4)),
    _r("h13_healthy_s145", "trl", "csv", "healthy", "base recipe, seed 145", seed=145,
       **HEALTHY),
]

# A fourteenth held-out set, made in session 9 after set 13's mends: reward weights upside
# down, a verifier that pays wrong answers, a task out of reach with large groups, a pool of 16
# prompts at a high lr: scored once, as made.
HOLDOUT14_RUNS: list[RunConfig] = [
    _r("h14_tags_1.0_correct_0.2", "trl", "csv", "format_gaming",
       "reward = 0.2 x exact + 1.0 x share of <think> tag tokens, lr=3e-4, seed 151", seed=151,
       **dict(BASE, steps=250, lr=3e-4, weights={"correct": 0.2, "tags": 1.0})),
    _r("h14_lenient_verifier_beta_0.1", "verl", "wandb", "reward_hacking",
       "buggy verifier + 0.2 format, beta=0.1, lr=5e-4, 300 steps, seed 152", seed=152,
       pretrain_steps=120, ops=("rev", "copy", "sum"), ks=(2, 3), steps=300, lr=5e-4,
       beta=0.1, max_new=10, weights={"verifier": 1.0, "format": 0.2}),
    _r("h14_too_hard_g16", "trl", "tensorboard", "advantage_collapse",
       "task too hard (sum mod 10 of 5-6 digits), exact reward only, G=16 x 4, seed 153 (made "
       "first with 7-8 digit reversals, which the tiny model's context cannot hold)", seed=153,
       **dict(BASE, ops=("sum",), ks=(5, 6), max_new=6, steps=200, lr=1e-4, batch_prompts=4,
              group=16, weights={"correct": 1.0})),
    _r("h14_prompt_pool_16_lr1e-3", "verl", "csv", "reward_overfit",
       "a fixed pool of 16 training prompts, lr=1e-3, 300 steps, seed 154", seed=154,
       **dict(BASE, steps=300, lr=1e-3, prompt_pool=16)),
    _r("h14_healthy_s155", "verl", "tensorboard", "healthy", "base recipe, seed 155",
       seed=155, **HEALTHY),
]

# A fifteenth held-out set, made in session 9 after set 14's mends, with two slow but healthy
# learners to hold the new no-progress gates to precision: scored once, as made.
HOLDOUT15_RUNS: list[RunConfig] = [
    _r("h15_beta_0.3_lr3e-4", "verl", "csv", "no_progress",
       "beta=0.3 (6x the recipe's top), lr=3e-4, seed 161", seed=161,
       **dict(BASE, steps=250, lr=3e-4, beta=0.3)),
    _r("h15_max_new_6_ks_4_5", "trl", "wandb", "length_hacking",
       "reverse/copy 4-5 digits (6-7 answer tokens) with a 6-token budget, seed 162", seed=162,
       **dict(HEALTHY, ks=(4, 5), max_new=6)),
    _r("h15_temperature_0.4_g16", "verl", "tensorboard", "entropy_collapse",
       "rollout temperature 0.4 with G=16 x 4 prompts, lr=1e-4, seed 163", seed=163,
       **dict(HEALTHY, temperature=0.4, batch_prompts=4, group=16)),
    _r("h15_prompt_pool_4_lr1e-4", "trl", "csv", "reward_overfit",
       "a fixed pool of 4 training prompts at the healthy lr=1e-4, 300 steps, seed 164",
       seed=164, **dict(HEALTHY, steps=300, prompt_pool=4)),
    _r("h15_healthy_lr3e-5_s165", "verl", "wandb", "healthy",
       "base recipe at lr=3e-5 (a slow learner), seed 165", seed=165,
       **dict(HEALTHY, lr=3e-5)),
    _r("h15_healthy_lr5e-5_s166", "trl", "tensorboard", "healthy",
       "base recipe at lr=5e-5, seed 166", seed=166, **dict(HEALTHY, lr=5e-5)),
]

# A sixteenth held-out set, made in session 9 (three healthy runs with a setting at or just
# outside the recipe, to hold the advice to "a knob outside with no symptom is at most a
# note"): scored once, as made.
HOLDOUT16_RUNS: list[RunConfig] = [
    _r("h16_eps_low_0.5_epochs_3", "verl", "csv", "ratio_instability",
       "lower clip 0.5 (ratios down to 0.5), 3 PPO epochs, lr=3e-4, seed 171", seed=171,
       **dict(BASE, steps=250, lr=3e-4, eps_low=0.5, inner_epochs=3)),
    _r("h16_fp16_lr3e-4", "trl", "tensorboard", "numerical_failure",
       "pure fp16 weights and Adam states (adam eps 1e-4), lr=3e-4, seed 172", seed=172,
       **dict(BASE, steps=150, lr=3e-4, dtype="float16", adam_eps=1e-4)),
    _r("h16_entropy_bonus_0.03_lr3e-4", "trl", "wandb", "entropy_blowup",
       "entropy bonus 0.03 (3x the recipe's top), lr=3e-4, seed 173", seed=173,
       **dict(BASE, steps=250, lr=3e-4, entropy_coef=0.03)),
    _r("h16_healthy_g4_s174", "verl", "wandb", "healthy",
       "base recipe with groups of 4 (16 prompts x 4), seed 174", seed=174,
       **dict(HEALTHY, batch_prompts=16, group=4)),
    _r("h16_healthy_temperature_1.1_s175", "trl", "csv", "healthy",
       "base recipe at rollout temperature 1.1, seed 175", seed=175,
       **dict(HEALTHY, temperature=1.1)),
    _r("h16_healthy_cosine_s176", "verl", "tensorboard", "healthy",
       "base recipe, lr=2e-4 cosine with 10 warm-up steps, seed 176", seed=176,
       **dict(HEALTHY, lr=2e-4, schedule="cosine", warmup=10)),
]

HOLDOUT17_RUNS: list[RunConfig] = [
    _r("h17_lr_2e-3_group_16", "verl", "tensorboard", "kl_drift",
       "lr=2e-3 (20x the base recipe) with groups of 16, seed 181", seed=181,
       **dict(BASE, steps=200, lr=2e-3, group=16)),
    _r("h17_temperature_0.5_beta_0.1", "trl", "csv", "entropy_collapse",
       "rollout temperature 0.5 under a strong KL leash (beta 0.1), seed 182", seed=182,
       **dict(HEALTHY, temperature=0.5, beta=0.1)),
    _r("h17_eps_high_0.5_entropy_bonus_0.02", "trl", "tensorboard", "entropy_blowup",
       "upper clip 0.5 and an entropy bonus of 0.02, lr=3e-4, seed 183", seed=183,
       **dict(BASE, steps=250, lr=3e-4, eps_high=0.5, entropy_coef=0.02)),
    _r("h17_epochs_6_minibatches_4", "verl", "csv", "ratio_instability",
       "6 PPO epochs over 4 minibatches a step, lr=3e-4, seed 184", seed=184,
       **dict(BASE, steps=200, lr=3e-4, inner_epochs=6, minibatches=4)),
    _r("h17_healthy_beta_0.02_g12_s185", "trl", "wandb", "healthy",
       "base recipe with beta 0.02 and groups of 12, seed 185", seed=185,
       **dict(HEALTHY, beta=0.02, group=12)),
    _r("h17_healthy_seq_mean_s186", "verl", "tensorboard", "healthy",
       "base recipe with a per-sequence loss mean, seed 186", seed=186,
       **dict(HEALTHY, loss_agg="seq_mean")),
]

HOLDOUT18_RUNS: list[RunConfig] = [
    _r("h18_lr_3e-3_noclip", "verl", "csv", "grad_explosion",
       "lr=3e-3 (30x the base recipe) with no gradient clipping, seed 191", seed=191,
       **dict(BASE, steps=200, lr=3e-3, max_grad_norm=None)),
    _r("h18_beta0_temperature_0.6", "trl", "tensorboard", "entropy_collapse",
       "no KL leash (beta 0) and rollout temperature 0.6, seed 192", seed=192,
       **dict(HEALTHY, beta=0.0, temperature=0.6)),
    _r("h18_eps_0.6_both_sides", "verl", "wandb", "ratio_instability",
       "clip range 0.6 both sides (ratios 0.4-1.6), 2 PPO epochs, lr=3e-4, seed 193",
       seed=193, **dict(BASE, steps=200, lr=3e-4, eps_low=0.6, eps_high=0.6, inner_epochs=2)),
    _r("h18_max_new_4_ks_4", "trl", "wandb", "length_hacking",
       "reverse/copy 4 digits with a 4-token budget (the answer and its end need 5), seed 194",
       seed=194, **dict(HEALTHY, ks=(4,), max_new=4)),
    _r("h18_entropy_bonus_0.2_beta0", "verl", "tensorboard", "entropy_blowup",
       "entropy bonus 0.2 (20x the recipe's top) with beta 0, seed 195", seed=195,
       **dict(HEALTHY, entropy_coef=0.2, beta=0.0)),
    _r("h18_healthy_lr2e-4_s196", "trl", "csv", "healthy",
       "base recipe at lr=2e-4, seed 196", seed=196, **dict(HEALTHY, lr=2e-4)),
    _r("h18_healthy_clip_higher_s197", "verl", "wandb", "healthy",
       "base recipe with Clip-Higher (upper clip 0.28), seed 197", seed=197,
       **dict(HEALTHY, eps_high=0.28)),
]

# Long logs (bench/long_runs.py): what a live monitor sees on a run 6x the corpus's length.
# Healthy ones, to show no level read over a long log's current window cries wolf; and ones
# whose lr jumps late (a scheduler restarted wrongly), to measure how long after the jump
# the first alert comes. Not committed as fixtures: about 10 minutes a run, two at a time.
LONG_RUNS: list[RunConfig] = [
    _r("long_healthy_s201", "trl", "csv", "healthy", "base recipe for 1500 steps, seed 201",
       seed=201, **dict(HEALTHY, steps=1500)),
    _r("long_healthy_cosine_s202", "verl", "csv", "healthy",
       "base recipe for 1500 steps, lr=2e-4 cosine with 50 warm-up steps, seed 202", seed=202,
       **dict(HEALTHY, steps=1500, lr=2e-4, schedule="cosine", warmup=50)),
    _r("long_jump_lr_3e-3_s203", "trl", "csv", "entropy_collapse",
       "base recipe; from step 1000 lr=3e-3 (30x), grad clip 1.0, seed 203", seed=203,
       **dict(HEALTHY, steps=1500, schedule="jump", warmup=1000, burst_lr=3e-3)),
    _r("long_jump_lr_1e-2_noclip_s204", "verl", "csv", "grad_explosion",
       "base recipe; from step 1000 lr=1e-2 (100x) with no gradient clipping, seed 204",
       seed=204, **dict(HEALTHY, steps=1500, schedule="jump", warmup=1000, burst_lr=1e-2,
                        max_grad_norm=None)),
]

#: ``python -m corpus.tiny_grpo --set NAME``: which list of runs to generate.
RUN_SETS: dict[str, list[RunConfig]] = {"corpus": RUNS, "compare": COMPARE_RUNS,
                                        "holdout": HOLDOUT_RUNS, "holdout2": HOLDOUT2_RUNS,
                                        "holdout3": HOLDOUT3_RUNS, "holdout4": HOLDOUT4_RUNS,
                                        "holdout5": HOLDOUT5_RUNS, "holdout6": HOLDOUT6_RUNS,
                                        "holdout7": HOLDOUT7_RUNS, "holdout8": HOLDOUT8_RUNS,
                                        "holdout9": HOLDOUT9_RUNS,
                                        "holdout10": HOLDOUT10_RUNS,
                                        "holdout11": HOLDOUT11_RUNS,
                                        "holdout12": HOLDOUT12_RUNS,
                                        "holdout13": HOLDOUT13_RUNS,
                                        "holdout14": HOLDOUT14_RUNS,
                                        "holdout15": HOLDOUT15_RUNS,
                                        "holdout16": HOLDOUT16_RUNS,
                                        "holdout17": HOLDOUT17_RUNS,
                                        "holdout18": HOLDOUT18_RUNS,
                                        "long": LONG_RUNS}
