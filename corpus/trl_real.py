"""Real TRL GRPOTrainer runs on CPU, each with one setting deliberately wrong (trials 43-82).

A tiny Qwen2 (2 layers, hidden 128, a character tokenizer) is SFT-ed to a base policy right
about 30% of the time on "a+b=" -> "<a>(a+b)%10</a>", then trained with the real
``trl.GRPOTrainer`` (TRL 1.16, transformers 5) as a user would leave it, one setting changed
per run. Each run's folder is what TRL writes: TensorBoard events under ``runs/``,
``checkpoint-N/`` with ``trainer_state.json`` and ``training_args.bin``, and ``console.log``
(stdout, with ``disable_tqdm``). ``tests/fixtures/trial/trl_*`` are exported from some of
them (their README says which).

Needs torch (CPU), transformers and trl==1.16.0 in a venv of their own::

    python -m corpus.trl_real base [ROOT]    # the tokenizer, the tiny model, its SFT -> ROOT/base
    python -m corpus.trl_real base_solved [ROOT]   # a longer SFT, right nearly always (trial 49)
    python -m corpus.trl_real base_init [ROOT]     # the un-SFT-ed init (trial 81's reference)
    mkdir -p ROOT/runs/NAME
    python -m corpus.trl_real NAME ROOT > ROOT/runs/NAME/console.log 2>&1   # about 20 s
    python -m corpus.trl_real NAME ROOT resume >> ROOT/runs/NAME/console.log 2>&1  # (a resume)
    python -m corpus.trl_real list

ROOT defaults to ``trl-runs``. Trial 44's runs (a name's ``_logger``) write to wandb offline,
MLflow (sqlite, or a ``file:`` store), Trackio or SwanLab (local) instead of TensorBoard, into
the run's folder; their settings are set from the environment before TRL is imported.
"""
import os
import random
import re
import sys
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def logger_env(name, out):
    """Point each logger at the run folder. Must run before torch, transformers and trl are
    imported: trackio reads TRACKIO_DIR at import time, and trl imports trackio."""
    spec = RUNS.get(name, {})
    logger_name = spec.get("_logger", "tensorboard")
    if logger_name == "wandb":
        os.environ["WANDB_MODE"] = "offline"
        os.environ["WANDB_DIR"] = out
        os.environ.setdefault("WANDB_PROJECT", "t44")
    elif logger_name == "mlflow":
        if spec.get("_mlflow_store") == "file":
            # the legacy ./mlruns folder (mlflow 3.17 refuses it without this)
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
            os.environ["MLFLOW_TRACKING_URI"] = f"file:{out}/mlruns"
        else:  # mlflow 3.x's recommended backend
            os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{out}/mlflow.db"
        os.environ.setdefault("MLFLOW_EXPERIMENT_NAME", "t44")
    elif logger_name == "trackio":
        os.environ["TRACKIO_DIR"] = f"{out}/trackio"
    elif logger_name == "swanlab":
        os.environ["SWANLAB_MODE"] = "local"
        os.environ["SWANLAB_LOG_DIR"] = f"{out}/swanlog"


ROOT = sys.argv[2] if len(sys.argv) > 2 else "trl-runs"
BASE = f"{ROOT}/base"
CHARS = list("0123456789abcdefghijklmnopqrstuvwxyz+=<>/ ")
SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]

# ---------------------------------------------------------------- runs
CTRL = dict(learning_rate=1e-4, seed=1)
CTRL48 = dict(learning_rate=1e-4, seed=5)
CTRL49 = dict(learning_rate=1e-4, seed=9)
CTRL51 = dict(learning_rate=1e-4, seed=13)
CTRL52 = dict(learning_rate=1e-4, seed=17)
CTRL53 = dict(learning_rate=1e-4, seed=29)
CTRL54 = dict(learning_rate=1e-4, seed=31)
CTRL63 = dict(learning_rate=1e-4, seed=37)
CTRL64 = dict(learning_rate=1e-4, seed=43)
CTRL67 = dict(learning_rate=1e-4, seed=47)
CTRL68 = dict(learning_rate=1e-4, seed=79)
CTRL70 = dict(learning_rate=1e-4, seed=83)
CTRL71 = dict(learning_rate=1e-4, seed=167)
CTRL72 = dict(learning_rate=1e-4, seed=251)
RUNS = {
    # healthy controls: TRL defaults except a learning rate that learns on a tiny model
    "ctrl_s1": dict(learning_rate=1e-4, seed=1),
    "ctrl_s2": dict(learning_rate=2e-4, seed=2),
    "ctrl_s3": dict(learning_rate=5e-5, seed=3),
    # TRL's own default lr: too low for a tiny model in 200 steps
    "trl_default_lr": dict(learning_rate=1e-6, seed=1),
    # exactly one wrong setting each (relative to ctrl_s1)
    "lr_high": dict(CTRL, learning_rate=4e-3),
    "temp_low": dict(CTRL, temperature=0.2),
    "gen2": dict(CTRL, num_generations=2),
    "trunc": dict(CTRL, max_completion_length=5),
    "fmt_only": dict(CTRL, reward_weights=[0.0, 1.0]),
    "beta_high": dict(CTRL, beta=0.5),
    "eps_wide": dict(CTRL, epsilon=0.8, epsilon_high=0.8),
    "iters8": dict(CTRL, num_iterations=8),
    # two knobs: no clipping to speak of, and the lr of lr_high
    "gradnorm_huge": dict(CTRL, max_grad_norm=1e9, learning_rate=4e-3),
    "hard_task": dict(CTRL, _task="hard"),
    # live callback on a failing setting
    "cb_lr_high": dict(CTRL, learning_rate=4e-3, _callback=True),
    # callback that only reports (stop_on=None), to see whether its advice flaps over a whole run
    "cb_hard_task": dict(CTRL, _task="hard", _callback="report"),
    "cb_fmt_only": dict(CTRL, reward_weights=[0.0, 1.0], _callback="report"),
    "cb_temp_low": dict(CTRL, temperature=0.2, _callback="report"),
    # trial 44
    # healthy controls written by other loggers
    "ctrl_wandb": dict(CTRL, _logger="wandb"),
    "ctrl_mlflow": dict(CTRL, seed=2, _logger="mlflow"),
    "ctrl_trackio": dict(CTRL, seed=3, _logger="trackio"),
    "ctrl_swanlab": dict(CTRL, seed=4, _logger="swanlab"),
    "ctrl_tb": dict(CTRL),  # the trial-43 control again, TensorBoard, for comparison
    # exactly one wrong setting each (relative to CTRL)
    "top_p_low": dict(CTRL, top_p=0.05),
    "top_k_1": dict(CTRL, top_k=1, _logger="wandb"),
    "eps_tiny": dict(CTRL, epsilon=0.01, epsilon_high=0.01, num_iterations=4),
    "iters_lr": dict(CTRL, num_iterations=4, learning_rate=1e-3, _logger="mlflow"),
    "lr_mid_const": dict(CTRL, learning_rate=1e-3, lr_scheduler_type="constant"),
    "hack_reward": dict(CTRL, max_completion_length=24, _rewards="hack",
                        reward_weights=[1.0, 1.0, 0.0],
                        _logger="wandb"),
    "hack_count": dict(CTRL, max_completion_length=24, _rewards="hack_count",
                       reward_weights=[1.0, 1.0, 0.0],
                       _logger="wandb"),
    # the same lenient-check bug on the hard task (answers of 2-3 digits), where the exact
    # answer is out of reach
    "hack_hard": dict(CTRL, _task="hard", max_completion_length=24, _rewards="hack_digits",
                      reward_weights=[1.0, 1.0, 0.0], _logger="wandb"),
    "nan_reward": dict(CTRL, _rewards="nan"),
    "length_reward": dict(CTRL, _rewards="length", _logger="mlflow", _mlflow_store="file"),
    "steps_per_gen": dict(CTRL, steps_per_generation=4),
    "sync_ref": dict(CTRL, beta=0.04, sync_ref_model=True, ref_model_sync_steps=10,
                     learning_rate=5e-4),
    "temp_high": dict(CTRL, temperature=2.0, _logger="trackio"),
    # not scored: does the advice "top_k 1 -> -1 (off)" run in TRL 1.16? (No: transformers
    # rejects it; the advice is now 0.)
    "check_top_k_neg1": dict(CTRL, top_k=-1),
    # report-only live callback on the reward-hacking setting
    "cb_hack_hard": dict(CTRL, _task="hard", max_completion_length=24, _rewards="hack_digits",
                         reward_weights=[1.0, 1.0, 0.0], _callback="report"),
    "cb_hack_count": dict(CTRL, max_completion_length=24, _rewards="hack_count",
                          reward_weights=[1.0, 1.0, 0.0],
                          _callback="report"),
    # trial 45: exactly one wrong setting each (relative to CTRL), loggers mixed
    "ctrl_state": dict(CTRL, _logger="none"),  # only the checkpoints and console.log
    "sign_flip": dict(CTRL, _rewards="sign_flip"),
    "const_reward": dict(CTRL, _rewards="const", _logger="wandb"),
    # transformers 5 has no warmup_ratio
    "warmup_long": dict(CTRL, warmup_steps=180, _logger="mlflow"),
    "clip_tiny": dict(CTRL, max_grad_norm=0.001, _logger="trackio"),
    "eps_gspo_token": dict(CTRL, epsilon=3e-4, epsilon_high=4e-4, num_iterations=2,
                           _logger="swanlab"),
    # 86% of the base's completions are 9 tokens: 9 cuts ~1%, 8 nearly all
    "trunc_edge": dict(CTRL, max_completion_length=8),
    "trunc_9": dict(CTRL, max_completion_length=9, _logger="wandb"),
    "neg_format": dict(CTRL, reward_weights=[1.0, -0.5], _logger="mlflow"),
    "scale_none": dict(CTRL, scale_rewards="none", _logger="trackio"),
    "gen16_b16": dict(CTRL, num_generations=16, per_device_train_batch_size=16,
                      _logger="swanlab"),
    "cb_clip_tiny": dict(CTRL, max_grad_norm=0.001, _callback="report"),
    # trial 48: exactly one wrong setting each (relative to CTRL48), loggers mixed
    "ctrl48": dict(CTRL48),
    "fmt_heavy": dict(CTRL48, reward_weights=[1.0, 5.0], _logger="wandb"),
    "clip_high_huge": dict(CTRL48, epsilon_high=5.0, num_iterations=4, _logger="mlflow"),
    # max_grad_norm 0 -> transformers skips clipping (still logs the norm)
    "noclip_lr": dict(CTRL48, learning_rate=3e-4, max_grad_norm=0.0, _logger="trackio"),
    # TRL 1.16 has no max_prompt_length: a dataset bug instead, the prompt is only "a+"
    "prompt_cut": dict(CTRL48, _prompt="a_plus", _logger="swanlab"),
    "rep_penalty": dict(CTRL48, repetition_penalty=2.0),
    "beta_big_lr": dict(CTRL48, beta=1.0, learning_rate=5e-4, _logger="wandb"),
    "iters_mid": dict(CTRL48, num_iterations=4, learning_rate=5e-4, _logger="mlflow"),
    "grad_accum": dict(CTRL48, gradient_accumulation_steps=8, _logger="trackio"),
    "cosine_hot": dict(CTRL48, learning_rate=2e-3, lr_scheduler_type="cosine", warmup_steps=20,
                       _logger="swanlab"),
    "cb_fmt_heavy": dict(CTRL48, reward_weights=[1.0, 5.0], _callback="report"),
    # trial 49: exactly one wrong setting each (relative to CTRL49 = CTRL48 with seed 9)
    "ctrl49": dict(CTRL49),
    "gen2_49": dict(CTRL49, num_generations=2, _logger="wandb"),
    "temp_greedy": dict(CTRL49, temperature=0.05, _logger="mlflow"),
    # a "thoroughness" bonus of 0.05 per completion character, room to grow to 48 tokens
    "thorough": dict(CTRL49, _rewards="thorough", max_completion_length=48, _logger="trackio"),
    # correctness paid 0/100 instead of 0/1, and no std scaling so the scale reaches the loss
    "corr_x100": dict(CTRL49, _rewards="x100", scale_rewards="none", _logger="swanlab"),
    # the same bonus weighted 20x (1.0 per character): does it length-hack?
    "thorough_w20": dict(CTRL49, _rewards="thorough", max_completion_length=48,
                         reward_weights=[1.0, 1.0, 20.0], _logger="wandb"),
    # out of reach: answer (a*b*7+3)%97 (1-2 digits)
    "mod97": dict(CTRL49, _task="mod97"),
    # already solved: GRPO starts from a base SFT-ed to answer correctly (no blur phase)
    "solved_base": dict(CTRL49, _base="solved", _logger="wandb"),
    "wd10": dict(CTRL49, weight_decay=10.0, _logger="mlflow"),
    "warmup_forever": dict(CTRL49, warmup_steps=10000, _logger="trackio"),
    # expected harmless: the length-normalised original GRPO loss (completions are ~9 tokens)
    "loss_grpo": dict(CTRL49, loss_type="grpo", _logger="swanlab"),
    "cb_temp_greedy": dict(CTRL49, temperature=0.05, _callback="report"),
    # trial 51: exactly one wrong setting each (relative to CTRL51 = CTRL49 with seed 13)
    "ctrl51": dict(CTRL51),
    # partly reachable task: answer (a*b)%10 (one digit, format unchanged)
    "mul10": dict(CTRL51, _task="mul10", _logger="wandb"),
    # a neutral-named term paying 0.1 per adjacent repeated character, weighted 5
    "structure_w5": dict(CTRL51, _rewards="structure", reward_weights=[1.0, 1.0, 5.0],
                         _logger="mlflow"),
    # lenient correctness: 1.0 exact, 0.9 for any digit (logged as correctness_reward);
    # the exact check logged with weight 0
    "lenient09": dict(CTRL51, _rewards="lenient", reward_weights=[1.0, 1.0, 0.0],
                      _logger="trackio"),
    "warmup150": dict(CTRL51, warmup_steps=150, _logger="swanlab"),
    # DAPO's overlong masking with a tight length (base completions are ~9 tokens incl. EOS)
    "mask_trunc10": dict(CTRL51, mask_truncated_completions=True, max_completion_length=10),
    # a dataset of 4 distinct prompts repeated 500x
    "pool4": dict(CTRL51, _pool=4, _logger="wandb"),
    "top_p05": dict(CTRL51, top_p=0.5, _logger="mlflow"),
    "temp07": dict(CTRL51, temperature=0.7, _logger="trackio"),
    "gen16_b32": dict(CTRL51, num_generations=16, _logger="swanlab"),
    # tight clip; with num_iterations 1 the ratio is 1 on every step (on-policy)
    "eps002": dict(CTRL51, epsilon=0.02),
    "lr1e6": dict(CTRL51, learning_rate=1e-6, _logger="wandb"),
    # the structure term weighted 20 (2.0 per repeated character)
    "structure_w20": dict(CTRL51, _rewards="structure", reward_weights=[1.0, 1.0, 20.0],
                          _logger="trackio"),
    # overlong masking with a limit below the usual 9-token completion
    "mask_trunc8": dict(CTRL51, mask_truncated_completions=True, max_completion_length=8,
                        _logger="swanlab"),
    # plain SGD at an Adam learning rate
    "optim_sgd": dict(CTRL51, optim="sgd", _logger="mlflow"),
    "cb_structure_w20": dict(CTRL51, _rewards="structure", reward_weights=[1.0, 1.0, 20.0],
                             _callback="report"),
    # trial 52: exactly one wrong setting each (relative to CTRL52 = CTRL51 with seed 17)
    "ctrl52": dict(CTRL52),
    # 30% of the dataset rows carry a wrong answer (a random other digit)
    "label_noise30": dict(CTRL52, _noise=0.3, _logger="wandb"),
    # (first attempt of label_noise30: the noise hit dicts shared by the 20 copies of each
    # prompt, so nearly every prompt ended with one random wrong digit as its answer, ~1/9
    # back to right: a scrambled answer key)
    "labels_scrambled": dict(CTRL52, _noise=0.3, _noise_shared=True, _logger="wandb"),
    # format_reward's regex looks for <answer>..</answer>: never matches, always 0
    "fmt_never": dict(CTRL52, _rewards="fmt_never", _logger="mlflow"),
    # correctness pays if the right digit is any of a list "<a>1</a><a>2</a>..." (same name),
    # room for 48 tokens; the exact check logged at weight 0
    "list_hack": dict(CTRL52, _rewards="list", max_completion_length=48,
                      reward_weights=[1.0, 1.0, 0.0], _logger="trackio"),
    "beta01_lr5e4": dict(CTRL52, beta=0.1, learning_rate=5e-4, _logger="swanlab"),
    "gn100_lr1e3": dict(CTRL52, max_grad_norm=100.0, learning_rate=1e-3),
    "scale_batch": dict(CTRL52, scale_rewards="batch", _logger="wandb"),
    "it2_eps05": dict(CTRL52, num_iterations=2, epsilon=0.5, _logger="mlflow"),
    "temp13": dict(CTRL52, temperature=1.3, _logger="trackio"),
    "adam_b2_05": dict(CTRL52, adam_beta2=0.5, _logger="swanlab"),
    "adam_eps1e3": dict(CTRL52, adam_epsilon=1e-3),
    # correctness_reward returns None on a random third of completions
    "none_third": dict(CTRL52, _rewards="none_third", _logger="wandb"),
    # the prompt is a+b= but the answer key is (a+b+1)%10
    "shifted_key": dict(CTRL52, _task="shift1", _logger="mlflow"),
    "const3e4": dict(CTRL52, learning_rate=3e-4, lr_scheduler_type="constant", _logger="trackio"),
    # one prompt per step
    "b8g8": dict(CTRL52, per_device_train_batch_size=8, num_generations=8, _logger="swanlab"),
    # report-only live callback on the scrambled answer key
    "cb_labels_scrambled": dict(CTRL52, _noise=0.3, _noise_shared=True, _callback="report"),
    # trial 53: exactly one wrong setting each (relative to CTRL53 = CTRL52 with seed 29)
    "ctrl53": dict(CTRL53),
    # an extra concise_reward = -0.05 per completion character (weight 1), room for 24 tokens
    "brevity": dict(CTRL53, _rewards="brevity", max_completion_length=24, _logger="wandb"),
    # correctness_reward is a fair coin per completion (same name)
    "coin_reward": dict(CTRL53, _rewards="coin", _logger="mlflow"),
    # correctness_reward returns 0.0 for everything from global step 100 (grader outage)
    "reward_dies": dict(CTRL53, _rewards="dies", _logger="trackio"),
    # the tokenizer / generation eos is <unk> (never emitted): every completion runs to 24;
    # rewards parse the answer at the start of the completion (re.match)
    "eos_never": dict(CTRL53, _eos="never", _rewards="start", max_completion_length=24,
                      _logger="swanlab"),
    "top_entropy": dict(CTRL53, top_entropy_quantile=0.2),
    "dr_grpo": dict(CTRL53, loss_type="dr_grpo", _logger="wandb"),
    "beta_lr": dict(CTRL53, beta=0.04, learning_rate=1e-3, _logger="mlflow"),
    # correctness_reward + N(0, 0.5) per completion (same name)
    "noisy_judge": dict(CTRL53, _rewards="noisy", _logger="trackio"),
    "lr_const_5e3": dict(CTRL53, learning_rate=5e-3, lr_scheduler_type="constant",
                         _logger="swanlab"),
    "topk3": dict(CTRL53, top_k=3),
    "mask_eos_never": dict(CTRL53, _eos="never", _rewards="start", max_completion_length=24,
                           mask_truncated_completions=True, _logger="wandb"),
    "cb_coin_reward": dict(CTRL53, _rewards="coin", _callback="report"),
    # trial 54: exactly one wrong setting each (relative to CTRL54 = CTRL53 with seed 31)
    "ctrl54": dict(CTRL54),
    # the dataset's answer strings carry a trailing newline ("7\n"): exact compare never matches
    "key_whitespace": dict(CTRL54, _answer_suffix="\n", _logger="wandb"),
    # on a random 30% of calls (steps) correctness_reward returns 0.0 for every completion
    "flaky_grader": dict(CTRL54, _rewards="flaky", _logger="mlflow"),
    # from global step 150 on correctness_reward returns -1.0 for every completion
    "grader_error_150": dict(CTRL54, _rewards="err150", _logger="trackio"),
    # the prompt shows the answer: "a+b=(X)" ('(' and ')' are <unk> in the char vocab)
    "answer_in_prompt": dict(CTRL54, _prompt="leak", _logger="swanlab"),
    "logging25": dict(CTRL54, logging_steps=25),
    "clip01": dict(CTRL54, max_grad_norm=0.1, _logger="wandb"),
    "eps005": dict(CTRL54, epsilon=0.05, _logger="mlflow"),
    "g4": dict(CTRL54, num_generations=4, _logger="trackio"),
    # transformers 5 / TRL 1.16 has no warmup_ratio: warmup_steps 0.5 is its documented ratio form
    "lr3e4_warm50": dict(CTRL54, learning_rate=3e-4, warmup_steps=0.5, _logger="swanlab"),
    # only 2 distinct prompts, repeated 1000x each
    "prompts2": dict(CTRL54, _pool=2),
    "beta_neg": dict(CTRL54, beta=-0.04, _logger="wandb"),
    "cb_flaky_grader": dict(CTRL54, _rewards="flaky", _callback="report"),
    # trial 63: one harmful setting beside a bystander that cannot cause what the curves show
    "minp08_grpo": dict(CTRL63, min_p=0.8, loss_type="grpo", _logger="swanlab"),
    "eps002_it6_wu10": dict(CTRL63, epsilon=0.002, epsilon_high=0.002, num_iterations=6,
                            warmup_steps=10, _logger="wandb"),
    "warm2000_log5": dict(CTRL63, warmup_steps=2000, logging_steps=5),
    # correctness compares the parsed int to the str answer: never equal, never pays
    "intcmp_cosine": dict(CTRL63, _rewards="intcmp", lr_scheduler_type="cosine"),
    # trial 64: one cause that sets off several findings, beside a harmless bystander
    "temp3": dict(CTRL64, temperature=3.0, save_steps=40, _logger="swanlab"),
    # 16 passes per generation batch with the upper clip opened to 3.0: it learned
    "it16_eh3": dict(CTRL64, num_iterations=16, epsilon_high=3.0, lr_scheduler_type="cosine"),
    # the answer column shuffled against the prompts row by row (bystander adam_beta1 0.8)
    "shuffled_key": dict(CTRL64, _shuffle_answers=True, adam_beta1=0.8, _logger="trackio"),
    # a neutral-named term paying 1.0 per character past the 8th (bystander temperature 0.9)
    "effort_len2": dict(CTRL64, _rewards="effort_strong", max_completion_length=32,
                        temperature=0.9, _logger="wandb"),
    # trial 67: settings no earlier trial tried (bystanders save_steps 30, loss_type grpo)
    "topent001_save30": dict(CTRL67, top_entropy_quantile=0.01, save_steps=30),
    # generation_kwargs override TRL's own max_new_tokens (max_completion_length stays 12)
    "maxnew6_grpo": dict(CTRL67, generation_kwargs={"max_new_tokens": 6}, loss_type="grpo",
                         _logger="wandb"),
    # no pair of tokens may repeat: the answer format cannot be written (bystander top_k 50)
    "norep2_topk50": dict(CTRL67, generation_kwargs={"no_repeat_ngram_size": 2}, top_k=50,
                          _logger="swanlab"),
    # trial 68: a repetition penalty of 5 inside generation_kwargs (bystander epsilon_high)
    "gk_reppen5_eh": dict(CTRL68, seed=103, generation_kwargs={"repetition_penalty": 5.0},
                          epsilon_high=0.28, _logger="swanlab"),
    # '/' (id 44) suppressed: "</a>" cannot be written (bystander loss_type dr_grpo)
    "gk_noslash_drgrpo": dict(CTRL68, seed=107, generation_kwargs={"suppress_tokens": [44]},
                              loss_type="dr_grpo", _logger="trackio"),
    # trial 67: groups of 2 in a batch of 4 (bystander warmup_steps 5); TensorBoard
    "g2_b4_wu5": dict(CTRL67, num_generations=2, per_device_train_batch_size=4, warmup_steps=5),
    # trial 68: temperature 0.3 inside generation_kwargs (bystander weight_decay 0.05)
    "gk_temp03_wd": dict(CTRL68, seed=89, generation_kwargs={"temperature": 0.3},
                         weight_decay=0.05, _logger="wandb"),
    # trial 70: one harmful setting beside a bystander (settings no earlier trial tried)
    # delta below 1 + epsilon caps the on-policy ratio (bystander adam_beta1 0.85)
    "delta05_b1": dict(CTRL70, seed=97, delta=0.5, adam_beta1=0.85, _logger="wandb"),
    # a polynomial decay of power 10 spends the lr by step ~50 (bystander weight_decay 0.05)
    "poly_p10_wd": dict(CTRL70, seed=101, lr_scheduler_type="polynomial",
                        lr_scheduler_kwargs={"power": 10.0}, weight_decay=0.05,
                        _logger="trackio"),
    # temperature 2.5 inside generation_kwargs (bystander max_grad_norm 0.5)
    "gk_temp25_gn05": dict(CTRL70, seed=113, generation_kwargs={"temperature": 2.5},
                           max_grad_norm=0.5),
    # groups of 2 in a batch of 4 (bystander a cosine schedule)
    "g2_b4_cos": dict(CTRL70, seed=137, num_generations=2, per_device_train_batch_size=4,
                      lr_scheduler_type="cosine", _logger="trackio"),
    # a sequence-level ratio clipped 30x tighter than GSPO's 3e-4, 4 passes (bystander
    # save_steps 25)
    "seqtiny_it4": dict(CTRL70, seed=139, importance_sampling_level="sequence", loss_type="grpo",
                        epsilon=1e-5, epsilon_high=1e-5, num_iterations=4, save_steps=25,
                        _logger="swanlab"),
    # precision: beta 8 with the reference synced to the policy every step (the KL term inert)
    "beta8_sync1": dict(CTRL70, seed=151, beta=8.0, sync_ref_model=True, ref_model_sync_steps=1,
                        ref_model_mixup_alpha=1.0, _logger="wandb"),
    # trial 72: a warm-up-stable-decay schedule to lr 3e-3 over 60 steps: it learned to about
    # step 20, then fell as the lr kept rising (bystander adam_beta2 0.99)
    "wsd3e3_b2": dict(CTRL72, seed=263, learning_rate=3e-3, lr_scheduler_type="warmup_stable_decay",
                      warmup_steps=60, lr_scheduler_kwargs={"num_decay_steps": 40},
                      adam_beta2=0.99, _logger="trackio"),
    # trial 71: VESPO's power at 50 over 4 passes (bystander warmup_steps 10)
    "vespo_k50_wu10": dict(CTRL71, seed=193, loss_type="vespo", vespo_k_pos=50.0,
                           num_iterations=4, warmup_steps=10),
    # trial 71: greedy decoding in generation_kwargs (bystander save_steps 25)
    "gk_greedy_save25": dict(CTRL71, seed=223, generation_kwargs={"do_sample": False},
                             save_steps=25),
    # a minimum length equal to the budget: no completion can end (bystander beta 0.001)
    "gk_minnew12_beta001": dict(CTRL71, seed=239, generation_kwargs={"min_new_tokens": 12},
                                beta=0.001, _logger="wandb"),
}


# ---------------------------------------------------------------- tokenizer / model
def make_tokenizer():
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIALS + CHARS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
        unk_token="<unk>",
    )
    return fast


def make_prompts():
    return [(a, b) for a in range(10) for b in range(10)]


def answer(a, b, task="sum"):
    if task == "shift1":
        return str((a + b + 1) % 10)
    if task == "mul10":
        return str((a * b) % 10)
    if task == "mod97":
        return str((a * b * 7 + 3) % 97)
    return str((a + b) % 10) if task == "sum" else str(a * b + 13 * a + 7)  # hard: 2-3 digits


def build_base(solved=False):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    random.seed(0)
    tok = make_tokenizer()
    cfg = Qwen2Config(
        vocab_size=len(tok), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
        tie_word_embeddings=False, rope_theta=10000.0, bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = Qwen2ForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    prompts = make_prompts()

    def noisy_target(a, b, pc):
        d = answer(a, b) if random.random() < pc else str(random.randint(0, 9))
        r = random.random()
        if pc == 1.0 or r < 0.85:
            return f"<a>{d}</a>"
        return random.choice([d, f"<a>{d}", f"a>{d}</a>", f"<a>{d}/a>", f"<a>{d}{d}</a>"])

    t0 = time.time()
    for step in range(700 if solved else 850):
        pc = 1.0 if step < 700 else 0.35  # learn the mapping, then blur it to mixed success
        if step == 700:
            for group in opt.param_groups:
                group["lr"] = 2e-4
        batch = [random.choice(prompts) for _ in range(64)]
        ids, labels = [], []
        for a, b in batch:
            p = tok(f"{a}+{b}=", add_special_tokens=False)["input_ids"]
            c = tok(noisy_target(a, b, pc), add_special_tokens=False)["input_ids"]
            c = [*c, tok.eos_token_id]
            ids.append(p + c)
            labels.append([-100] * len(p) + c)
        L = max(map(len, ids))
        inp = torch.tensor([x + [tok.pad_token_id] * (L - len(x)) for x in ids])
        lab = torch.tensor([x + [-100] * (L - len(x)) for x in labels])
        att = (torch.arange(L)[None, :] < torch.tensor([len(x) for x in ids])[:, None]).long()
        loss = model(input_ids=inp, attention_mask=att, labels=lab).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 200 == 0 or step == 699:
            print(step, round(loss.item(), 4), f"{time.time()-t0:.0f}s", flush=True)
        if step in (699, 774):
            evaluate(model, tok, n=200)
            model.train()
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    dest = BASE + "_solved" if solved else BASE
    model.save_pretrained(dest)
    tok.save_pretrained(dest)
    evaluate(model, tok)


def evaluate(model, tok, n=400, temperature=1.0):
    model.eval()
    prompts = make_prompts()
    enc = tok([f"{a}+{b}=" for a, b in prompts], return_tensors="pt", add_special_tokens=False)
    corr = fmt = 0
    tot = 0
    with torch.no_grad():
        for _ in range(n // 100):
            out = model.generate(**enc, do_sample=True, temperature=temperature, max_new_tokens=12,
                                 pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
            texts = tok.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
            for (a, b), t in zip(prompts, texts):
                corr += correctness_reward([t], answer=[answer(a, b)])[0]
                fmt += format_reward([t])[0]
                tot += 1
    print(f"eval: correctness {corr/tot:.3f} format {fmt/tot:.3f} sample {texts[:5]}")


# ---------------------------------------------------------------- rewards (TRL signature)
ANS = re.compile(r"<a>(\d+)</a>")


def correctness_reward(completions, answer=None, **kwargs):
    out = []
    for c, ans in zip(completions, answer):
        m = ANS.search(c)
        out.append(1.0 if m and m.group(1) == ans else 0.0)
    return out


def format_reward(completions, **kwargs):
    return [0.5 if re.fullmatch(r"\s*<a>\d</a>\s*", c) else 0.0 for c in completions]


def correctness_anywhere_reward(completions, answer=None, **kwargs):
    """BUGGY: pays 1.0 when the answer digit appears anywhere in the completion (spamming
    digits pays)."""
    return [1.0 if ans in c else 0.0 for c, ans in zip(completions, answer)]


def correctness_count_reward(completions, answer=None, **kwargs):
    """BUGGY partial credit: 1.0 per occurrence of the answer digit in the completion
    (repeating it pays more)."""
    return [float(c.count(ans)) for c, ans in zip(completions, answer)]


def digit_overlap_reward(completions, answer=None, **kwargs):
    """BUGGY lenient check: 1.0 if ANY digit of the answer appears anywhere in the completion."""
    return [1.0 if any(ch in c for ch in ans) else 0.0 for c, ans in zip(completions, answer)]


def exact_correctness(completions, answer=None, **kwargs):
    """The true exact check, logged with weight 0."""
    return correctness_reward(completions, answer=answer)


def correctness_solution_reward(completions, solution=None, **kwargs):
    """BUGGY setup: reads a dataset column 'solution' that does not exist -> None for every
    completion."""
    if solution is None:
        return [None] * len(completions)
    return correctness_reward(completions, answer=solution)


def length_bonus_reward(completions, **kwargs):
    """A length bonus: 0.2 per character of the completion."""
    return [0.2 * len(c) for c in completions]


def correctness_reward_signbug(completions, answer=None, **kwargs):
    """BUGGY: the sign flipped, -1.0 for a correct answer and 0 otherwise (logged under the
    usual name)."""
    return [-r for r in correctness_reward(completions, answer=answer)]


correctness_reward_signbug.__name__ = "correctness_reward"


def correctness_reward_always(completions, answer=None, **kwargs):
    """BUGGY: a parse that always matches, 1.0 for every completion (logged under the usual
    name)."""
    return [1.0 for _ in completions]


correctness_reward_always.__name__ = "correctness_reward"


def thoroughness_reward(completions, **kwargs):
    """A "thoroughness" bonus: 0.05 per character of the completion (longer = more thorough)."""
    return [0.05 * len(c) for c in completions]


def correctness_reward_x100(completions, answer=None, **kwargs):
    """Correctness paid 100 instead of 1 (logged under the usual name)."""
    return [100.0 * r for r in correctness_reward(completions, answer=answer)]


correctness_reward_x100.__name__ = "correctness_reward"


def structure_reward(completions, **kwargs):
    """A "structure" bonus: 0.1 per character equal to the one before it."""
    return [0.1 * sum(1 for x, y in zip(c, c[1:]) if x == y) for c in completions]


def correctness_reward_lenient(completions, answer=None, **kwargs):
    """BUGGY partial credit: 1.0 for the exact answer, 0.9 if the completion holds any digit
    (logged under the usual name)."""
    out = []
    for c, r in zip(completions, correctness_reward(completions, answer=answer)):
        out.append(r if r == 1.0 else (0.9 if any(ch.isdigit() for ch in c) else 0.0))
    return out


correctness_reward_lenient.__name__ = "correctness_reward"


def format_reward_never(completions, **kwargs):
    """BUGGY: looks for <answer>..</answer>, which the task never uses (always 0)."""
    return [0.5 if re.fullmatch(r"\s*<answer>\d</answer>\s*", c) else 0.0 for c in completions]


format_reward_never.__name__ = "format_reward"


def correctness_reward_list(completions, answer=None, **kwargs):
    """BUGGY: 1.0 if the answer is any of the <a>..</a> tags (a list of guesses pays)."""
    return [1.0 if ans in ANS.findall(c) else 0.0 for c, ans in zip(completions, answer)]


correctness_reward_list.__name__ = "correctness_reward"
_NONE_RNG = random.Random(1234)


def correctness_reward_none_third(completions, answer=None, **kwargs):
    """BUGGY: None (e.g. a checker time-out) on a random third of completions."""
    return [None if _NONE_RNG.random() < 1 / 3 else r
            for r in correctness_reward(completions, answer=answer)]


correctness_reward_none_third.__name__ = "correctness_reward"


REWARD_SETS = {
    "fmt_never": [correctness_reward, format_reward_never],
    "list": [correctness_reward_list, format_reward, exact_correctness],
    "none_third": [correctness_reward_none_third, format_reward],
    "structure": [correctness_reward, format_reward, structure_reward],
    "lenient": [correctness_reward_lenient, format_reward, exact_correctness],
    "thorough": [correctness_reward, format_reward, thoroughness_reward],
    "x100": [correctness_reward_x100, format_reward],
    "default": [correctness_reward, format_reward],
    "hack": [correctness_anywhere_reward, format_reward, exact_correctness],
    "hack_count": [correctness_count_reward, format_reward, exact_correctness],
    "hack_digits": [digit_overlap_reward, format_reward, exact_correctness],
    "nan": [correctness_solution_reward, format_reward],
    "length": [correctness_reward, format_reward, length_bonus_reward],
    "sign_flip": [correctness_reward_signbug, format_reward],
    "const": [correctness_reward_always, format_reward],
}


# ---------------------------------------------------------------- trial 53 rewards
def concise_reward(completions, **kwargs):
    """A brevity term: -0.05 per character of the completion."""
    return [-0.05 * len(c) for c in completions]


_COIN_RNG = random.Random(2953)


def correctness_reward_coin(completions, answer=None, **kwargs):
    """BUGGY: a fair coin per completion, independent of the output (the usual name)."""
    return [float(_COIN_RNG.random() < 0.5) for _ in completions]


correctness_reward_coin.__name__ = "correctness_reward"


def correctness_reward_dies(completions, answer=None, trainer_state=None, **kwargs):
    """BUGGY: the grader goes down at global step 100: 0.0 for everything from then on."""
    if trainer_state is not None and trainer_state.global_step >= 100:
        return [0.0 for _ in completions]
    return correctness_reward(completions, answer=answer)


correctness_reward_dies.__name__ = "correctness_reward"
_NOISE_RNG = random.Random(5353)


def correctness_reward_noisy(completions, answer=None, **kwargs):
    """A noisy judge: correctness + N(0, 0.5) per completion (logged under the usual name)."""
    return [r + _NOISE_RNG.gauss(0.0, 0.5) for r in correctness_reward(completions, answer=answer)]


correctness_reward_noisy.__name__ = "correctness_reward"
ANS_START = re.compile(r"\s*<a>(\d+)</a>")


def correctness_reward_start(completions, answer=None, **kwargs):
    """Correctness on the answer at the START of the completion (text after it ignored)."""
    out = []
    for c, ans in zip(completions, answer):
        m = ANS_START.match(c)
        out.append(1.0 if m and m.group(1) == ans else 0.0)
    return out


correctness_reward_start.__name__ = "correctness_reward"


def format_reward_start(completions, **kwargs):
    """Format on the start of the completion (text after the first tag ignored)."""
    return [0.5 if re.match(r"\s*<a>\d</a>", c) else 0.0 for c in completions]


format_reward_start.__name__ = "format_reward"
REWARD_SETS.update({
    "brevity": [correctness_reward, format_reward, concise_reward],
    "coin": [correctness_reward_coin, format_reward],
    "dies": [correctness_reward_dies, format_reward],
    "noisy": [correctness_reward_noisy, format_reward],
    "start": [correctness_reward_start, format_reward_start],
})


# ---------------------------------------------------------------- trial 54 rewards
_FLAKY_RNG = random.Random(5454)


def correctness_reward_flaky(completions, answer=None, **kwargs):
    """BUGGY: on a random 30% of calls the grader is "down": 0.0 for every completion."""
    if _FLAKY_RNG.random() < 0.3:
        return [0.0 for _ in completions]
    return correctness_reward(completions, answer=answer)


correctness_reward_flaky.__name__ = "correctness_reward"


def correctness_reward_err150(completions, answer=None, trainer_state=None, **kwargs):
    """BUGGY: from global step 150 the grader returns its error code -1.0 for everything."""
    if trainer_state is not None and trainer_state.global_step >= 150:
        return [-1.0 for _ in completions]
    return correctness_reward(completions, answer=answer)


correctness_reward_err150.__name__ = "correctness_reward"
REWARD_SETS.update({
    "flaky": [correctness_reward_flaky, format_reward],
    "err150": [correctness_reward_err150, format_reward],
})


def correctness_reward_intcmp(completions, answer=None, **kwargs):
    """BUGGY (trial 63): compares the parsed int to the str answer: never equal, always 0."""
    out = []
    for c, ans in zip(completions, answer):
        m = ANS.search(c)
        out.append(1.0 if m and int(m.group(1)) == ans else 0.0)
    return out


correctness_reward_intcmp.__name__ = "correctness_reward"  # as the user named it
REWARD_SETS["intcmp"] = [correctness_reward_intcmp, format_reward]


def effort_reward(completions, **kwargs):
    """A neutral-named "effort" term (trial 64): 1.0 per character past the 8th."""
    return [1.0 * max(0, len(c) - 8) for c in completions]


REWARD_SETS["effort_strong"] = [correctness_reward, format_reward, effort_reward]


# ---------------------------------------------------------------- trial 73
CTRL73 = dict(learning_rate=1e-4, seed=271)
RUNS.update({
    # healthy controls
    "ctrl73": dict(CTRL73, seed=271),
    "ctrl73_bnpo_topp": dict(CTRL73, seed=277, loss_type="bnpo", top_p=0.98, _logger="wandb"),
    # control with two scary but inert settings: CISPO with its cap 0.01 (on-policy every ratio
    # is 1, so every token is capped alike: a uniform scale Adam removes)
    "ctrl73_cispo001": dict(CTRL73, seed=353, loss_type="cispo", epsilon_high=0.01,
                            _logger="trackio"),
    # lr 2e-3 re-heated by cosine restarts every 20 steps (bystander logging_steps 2)
    "restarts10_2e3_log2": dict(CTRL73, seed=359, learning_rate=2e-3,
                                lr_scheduler_type="cosine_with_restarts",
                                lr_scheduler_kwargs={"num_cycles": 10}, logging_steps=2),
    # an entropy bonus of 0.5 (bystander disable_dropout, inert: the model has no dropout)
    "entcoef05_nodrop": dict(CTRL73, seed=281, entropy_coef=0.5, disable_dropout=True),
    # correctness scores the previous completion of the batch (off by one); bystander SAPO with
    # temperatures 50 (inert on-policy: the soft gate's slope at ratio 1 is 1 for any temperature)
    "offby1_sapo50": dict(CTRL73, seed=293, _rewards="offby1", loss_type="sapo",
                          sapo_temperature_pos=50.0, sapo_temperature_neg=50.0, _logger="mlflow"),
    # the template puts "<a>" in the prompt; the rewards parse the completion alone (never pays);
    # bystander beta 0.01
    "prefill_tag_beta001": dict(CTRL73, seed=307, _prompt="prefill", beta=0.01, _logger="trackio"),
    # an entropy penalty (entropy_coef -0.5, a sign slip); bystander adam_epsilon 1e-6
    "entneg05_adameps": dict(CTRL73, seed=311, entropy_coef=-0.5, adam_epsilon=1e-6,
                             _logger="wandb"),
    # correctness computed once per group (its first completion) and copied to all 8;
    # bystander max_completion_length 16
    "groupfirst_len16": dict(CTRL73, seed=313, _rewards="groupfirst", max_completion_length=16,
                             _logger="swanlab"),
    # late (320 steps): adaptive entropy with a target of 2.5 nats, the coefficient rising 0.001
    # a step while entropy is below it; bystander adam_beta2 0.995
    "entadapt25_late": dict(CTRL73, seed=317, max_steps=320, use_adaptive_entropy=True,
                            entropy_target=2.5, entropy_coef_delta=0.001, adam_beta2=0.995,
                            _logger="swanlab"),
    # late (320 steps): the dataset in order (shuffle_dataset False), rows 800+ (step 200+) keyed
    # (a+b+1)%10 (a second source appended with a bad key); bystander weight_decay 0.01
    "latekey200_wd": dict(CTRL73, seed=331, max_steps=320, shuffle_dataset=False, _late_shift=800,
                          weight_decay=0.01),
    # late (320 steps): cosine_with_min_lr with min_lr 3e-3 above the 1e-4 peak: the lr RISES
    # from 1e-4 to 3e-3; bystander save_steps 40
    "minlr3e3_rise": dict(CTRL73, seed=337, max_steps=320, lr_scheduler_type="cosine_with_min_lr",
                          lr_scheduler_kwargs={"min_lr": 3e-3}, save_steps=40, _logger="mlflow"),
})


def correctness_reward_offby1(completions, answer=None, **kwargs):
    """BUGGY (trial 73): completion i scored with completion i-1's text (off by one)."""
    shifted = [completions[i - 1] for i in range(len(completions))]
    return correctness_reward(shifted, answer=answer)


correctness_reward_offby1.__name__ = "correctness_reward"


def correctness_reward_groupfirst(completions, answer=None, **kwargs):
    """BUGGY (trial 73): the group's first completion scored, copied to the whole group of 8."""
    firsts = [completions[i - i % 8] for i in range(len(completions))]
    return correctness_reward(firsts, answer=answer)


correctness_reward_groupfirst.__name__ = "correctness_reward"
REWARD_SETS["offby1"] = [correctness_reward_offby1, format_reward]
REWARD_SETS["groupfirst"] = [correctness_reward_groupfirst, format_reward]


# ---------------------------------------------------------------- trial 75
CTRL75 = dict(learning_rate=1e-4, seed=401)
RUNS.update({
    # healthy controls
    "ctrl75": dict(CTRL75, seed=401),
    # two harmless non-defaults: GDPO's per-reward normalisation, DAPO's overlong masking at a
    # budget the base rarely reaches (12 tokens; completions are ~9)
    "ctrl75_gdpo_mask": dict(CTRL75, seed=409, multi_objective_aggregation="normalize_then_sum",
                             mask_truncated_completions=True, _logger="wandb"),
    # a broken sampler from step 1: generation_kwargs makes '>' (id 43) the stop token, so every
    # completion ends at "<a>" (TRL masks on the tokenizer's eos, which never comes);
    # bystander warmup_steps 5
    "eosgt_wu5": dict(CTRL75, seed=419, generation_kwargs={"eos_token_id": 43}, warmup_steps=5),
    # a field bug from step 1: the dataset's answer column is named "target"; the reward reads
    # kwargs.get("answer") -> None -> 0.0 for every completion; bystander top_p 0.95
    "renamed_topp95": dict(CTRL75, seed=421, _answer_col="target", _rewards="kwanswer",
                           top_p=0.95, _logger="trackio"),
    # correctness weighted 0.01 beside format 1.0; bystander scale_rewards "batch" (with the
    # batch std the 0.01 really is 1% of the advantage)
    "rw001_batch": dict(CTRL75, seed=431, reward_weights=[0.01, 1.0], scale_rewards="batch",
                        _logger="mlflow"),
    # a truncation sampler from step 1: epsilon_cutoff 0.3 drops every token under p=0.3 (near
    # greedy); bystander beta 0.02
    "epscut03_beta002": dict(CTRL75, seed=433, generation_kwargs={"epsilon_cutoff": 0.3},
                             beta=0.02, _logger="swanlab"),
    # repetition_penalty 0.5 (below 1: repeats are favoured, the prompt's digits too);
    # bystander adam_beta2 0.98
    "reppen05_b2": dict(CTRL75, seed=439, repetition_penalty=0.5, adam_beta2=0.98,
                        _logger="wandb"),
    # the dataset sorted by answer and not shuffled: each 50-step block asks one answer digit
    # (0, then 1, ...); bystander gradient_checkpointing
    "sorted_gc": dict(CTRL75, seed=443, shuffle_dataset=False, _sort_answers=True,
                      gradient_checkpointing=True, _logger="mlflow"),
    # the prompt template ends in the eos token ("a+b=<eos>"); bystander warmup_steps 10
    "eosprompt_wu10": dict(CTRL75, seed=449, _prompt="eos", warmup_steps=10, _logger="trackio"),
    # late (320 steps): a neutral-named "completeness" term paying 1.0 for any completion over
    # 12 characters, room for 24 tokens; bystander epsilon_high 0.28
    "longbonus_late": dict(CTRL75, seed=457, max_steps=320, _rewards="longbonus",
                           max_completion_length=24, epsilon_high=0.28, _logger="swanlab"),
    # late (320 steps): constant_with_warmup to lr 1e-3 over 250 steps (the lr climbs past what
    # this model learns at around step ~100); bystander save_total_limit 2 (only the last two
    # checkpoints are kept)
    "cwarm1e3_late": dict(CTRL75, seed=461, max_steps=320, learning_rate=1e-3,
                          lr_scheduler_type="constant_with_warmup", warmup_steps=250,
                          save_total_limit=2),
})


def correctness_reward_kwanswer(completions, **kwargs):
    """BUGGY (trial 75): reads the answer from kwargs["answer"]; the dataset calls it "target",
    so every answer is None and every completion scores 0."""
    answers = kwargs.get("answer") or [None] * len(completions)
    out = []
    for c, ans in zip(completions, answers):
        m = ANS.search(c)
        out.append(1.0 if ans is not None and m and m.group(1) == ans else 0.0)
    return out


correctness_reward_kwanswer.__name__ = "correctness_reward"


def completeness_reward(completions, **kwargs):
    """A neutral-named term (trial 75): 1.0 for any completion over 12 characters."""
    return [1.0 if len(c) > 12 else 0.0 for c in completions]


REWARD_SETS["kwanswer"] = [correctness_reward_kwanswer, format_reward]
REWARD_SETS["longbonus"] = [correctness_reward, format_reward, completeness_reward]


# ---------------------------------------------------------------- trial 76
CTRL76 = dict(learning_rate=1e-4, seed=503)
RUNS.update({
    # healthy controls
    "ctrl76": dict(CTRL76, seed=503),
    # two harmless non-defaults: weight_decay 0.01, scale_rewards "batch"
    "ctrl76_wd_sb": dict(CTRL76, seed=509, weight_decay=0.01, scale_rewards="batch",
                         _logger="wandb"),
    # precision: correctness paid 1000/1001 (a constant +1000 offset) under scale_rewards
    # "none": the group mean removes the offset, harmless
    "offset1000_none": dict(CTRL76, seed=521, _rewards="offset1000", scale_rewards="none",
                            _logger="mlflow"),
    # correctness + N(0, 1e-4) per completion under the default per-group std scaling: groups
    # whose rewards are all equal get full-size advantages from the noise; bystander
    # logging_steps 2
    "noise1e4_log2": dict(CTRL76, seed=523, _rewards="noise1e4", logging_steps=2),
    # polynomial decay of power 0.1 at lr 2e-3: the lr stays near 2e-3 nearly to the end;
    # bystander save_steps 20
    "poly01_2e3_save20": dict(CTRL76, seed=541, learning_rate=2e-3,
                              lr_scheduler_type="polynomial", lr_scheduler_kwargs={"power": 0.1},
                              save_steps=20, _logger="wandb"),
    # the checker compares "7 " (a trailing space on the parsed side) with "7": never pays from
    # step 1; bystander warmup_steps 0.05 (the ratio form)
    "trailws_wu005": dict(CTRL76, seed=547, _rewards="trailws", warmup_steps=0.05,
                          _logger="mlflow"),
    # 6 passes per generation batch with epsilon 0.4; bystander weight_decay 0.01
    "it6_eps04_wd": dict(CTRL76, seed=557, num_iterations=6, epsilon=0.4, weight_decay=0.01,
                         _logger="trackio"),
    # temperature 1.6 (top_p 1.0); bystander a cosine schedule
    "temp16_cos": dict(CTRL76, seed=563, temperature=1.6, top_p=1.0, lr_scheduler_type="cosine",
                       _logger="swanlab"),
    # lr 1e-5 (hardly moves in 200 steps); bystander max_grad_norm 0.01 (Adam is invariant to a
    # uniform gradient scale)
    "lr1e5_gn001": dict(CTRL76, seed=569, learning_rate=1e-5, max_grad_norm=0.01),
    # a near-greedy sampler from step 1: typical_p 0.05 in generation_kwargs; bystander a
    # "prompt_len" reward term (the prompt's length: the same for every completion of a group,
    # removed by the group mean)
    "typical005_plen": dict(CTRL76, seed=571, generation_kwargs={"typical_p": 0.05},
                            _rewards="promptlen", _logger="wandb"),
    # 90% of the dataset rows are one prompt ("3+4="); bystander save_steps 20
    "dup90_save20": dict(CTRL76, seed=577, _dup90=True, save_steps=20, _logger="trackio"),
    # late (320 steps): from global step 200 correctness_reward pays 1.0 for every completion
    # (a grader that stopped checking); bystander weight_decay 0.01
    "all1_200_wd": dict(CTRL76, seed=587, max_steps=320, _rewards="all1_200", weight_decay=0.01,
                        _logger="swanlab"),
    # late (320 steps): dataset in order; rows 800+ (step 200+) use another template
    # "a + b =" (a second source appended); bystander save_steps 40
    "latetmpl200_save40": dict(CTRL76, seed=593, max_steps=320, shuffle_dataset=False,
                               _late_template=800, save_steps=40),
    # a re-run of all1_200_wd under a second name, to watch it live again (swanlab)
    "all1_200_rewatch": dict(CTRL76, seed=587, max_steps=320, _rewards="all1_200",
                             weight_decay=0.01, _logger="swanlab"),
    # template bug from step 1: the prompt is "a+b" (no "="); bystander logging_steps 2
    "noeq_log2": dict(CTRL76, seed=599, _prompt="noeq", logging_steps=2),
    # precision: beta 0.1 with the reference synced to the policy every step (mixup 1.0)
    "sync1_mix1_beta01": dict(CTRL76, seed=601, beta=0.1, sync_ref_model=True,
                              ref_model_sync_steps=1, ref_model_mixup_alpha=1.0,
                              _logger="trackio"),
})

_NOISE76 = random.Random(7676)


def correctness_reward_noise1e4(completions, answer=None, **kwargs):
    """Correctness plus N(0, 1e-4) per completion (same name)."""
    return [r + _NOISE76.gauss(0.0, 1e-4) for r in correctness_reward(completions, answer=answer)]


correctness_reward_noise1e4.__name__ = "correctness_reward"


def correctness_reward_offset1000(completions, answer=None, **kwargs):
    """Correctness paid 1000 / 1001 (a constant offset; same name)."""
    return [1000.0 + r for r in correctness_reward(completions, answer=answer)]


correctness_reward_offset1000.__name__ = "correctness_reward"


def correctness_reward_trailws(completions, answer=None, **kwargs):
    """BUGGY: the parsed answer is formatted with a trailing space ("7 ") and compared with the
    key ("7"): never equal, always 0."""
    out = []
    for c, ans in zip(completions, answer):
        m = ANS.search(c)
        pred = f"{m.group(1)} " if m else None
        out.append(1.0 if pred is not None and pred == ans else 0.0)
    return out


correctness_reward_trailws.__name__ = "correctness_reward"


def prompt_len_reward(completions, prompts=None, **kwargs):
    """Pays 0.1 per prompt character: the same for every completion of a group."""
    return [0.1 * len(p) for p in prompts]


def correctness_reward_all1_200(completions, answer=None, trainer_state=None, **kwargs):
    """BUGGY: from global step 200 the grader pays 1.0 for every completion."""
    if trainer_state is not None and trainer_state.global_step >= 200:
        return [1.0 for _ in completions]
    return correctness_reward(completions, answer=answer)


correctness_reward_all1_200.__name__ = "correctness_reward"
REWARD_SETS.update({
    "noise1e4": [correctness_reward_noise1e4, format_reward],
    "offset1000": [correctness_reward_offset1000, format_reward],
    "trailws": [correctness_reward_trailws, format_reward],
    "promptlen": [correctness_reward, format_reward, prompt_len_reward],
    "all1_200": [correctness_reward_all1_200, format_reward],
})


# ---------------------------------------------------------------- trial 77
CTRL77 = dict(learning_rate=1e-4, seed=701)
RUNS.update({
    # healthy controls
    "ctrl77": dict(CTRL77, seed=701),
    # two harmless non-defaults: weight_decay 0.01 and a cosine schedule
    "ctrl77_wd_cos": dict(CTRL77, seed=709, weight_decay=0.01, lr_scheduler_type="cosine",
                          _logger="mlflow"),
    # precision: the upper clip almost closed (epsilon_high 0.01) but on-policy (num_iterations 1)
    # every ratio is exactly 1, so the clip never binds; second non-default logging_steps 2
    "ctrl77_ehi001_log2": dict(CTRL77, seed=719, epsilon_high=0.01, logging_steps=2,
                               _logger="wandb"),
    # a bad budget from step 1: max_completion_length 7 ("<a>d</a>" needs 8 + EOS: the closing
    # tag is never written, every reward 0); bystander loss_type dr_grpo
    "len7_drgrpo": dict(CTRL77, seed=727, max_completion_length=7, loss_type="dr_grpo"),
    # a reward bug from step 1: correctness reads the FIRST number of prompt+completion (the
    # operand a) instead of the answer in the completion: pays iff b == 0, alike for the whole
    # group; bystander logging_steps 2
    "firstnum_log2": dict(CTRL77, seed=733, _rewards="firstnum", logging_steps=2,
                          _logger="wandb"),
    # a broken sampler from step 1: generation_kwargs begin_suppress_tokens ['<'] (id 42): the
    # first token can never open the answer tag; bystander save_steps 20
    "bsuplt_save20": dict(CTRL77, seed=739, generation_kwargs={"begin_suppress_tokens": [42]},
                          save_steps=20, _logger="swanlab"),
    # a broken sampler from step 1: exponential_decay_length_penalty (2, 3.0) boosts EOS
    # from the 3rd generated token on: completions end before "</a>"; bystander warmup_steps
    # 0.05 (the ratio form)
    "expdecay_wu005": dict(CTRL77, seed=743,
                           generation_kwargs={"exponential_decay_length_penalty": (2, 3.0)},
                           warmup_steps=0.05, _logger="mlflow"),
    # groups of 3 in a batch of 6 (2 prompts per step); bystander weight_decay 0.01
    "g3b6_wd": dict(CTRL77, seed=751, num_generations=3, per_device_train_batch_size=6,
                    weight_decay=0.01, _logger="mlflow"),
    # lr 5e-6 (hardly moves in 150 steps); bystander gradient_accumulation_steps 4
    "lr5e6_ga4": dict(CTRL77, seed=757, learning_rate=5e-6, gradient_accumulation_steps=4,
                      max_steps=150, _logger="wandb"),
    # late (320 steps): from global step 150 correctness_reward returns -r (a sign flip
    # introduced by a grader "fix"); bystander scale_rewards "batch"
    "signflip150_sb_late": dict(CTRL77, seed=761, max_steps=320, _rewards="signflip150",
                                scale_rewards="batch", _logger="trackio"),
    # late (320 steps): dataset in order; rows 480+ (step 120+) are a harder task "a+b+c="
    # (answer (a+b+c)%10) the base never saw (a curriculum switch); bystander
    # mask_truncated_completions with a generous budget 24
    "curric3_120_mask24_late": dict(CTRL77, seed=769, max_steps=320, shuffle_dataset=False,
                                    _late_three=480, mask_truncated_completions=True,
                                    max_completion_length=24),
})


def correctness_reward_firstnum(completions, answer=None, prompts=None, **kwargs):
    """BUGGY (trial 77): parses the FIRST number of prompt + completion (meant the last)."""
    out = []
    for p, c, ans in zip(prompts, completions, answer):
        m = re.search(r"\d+", p + c)
        out.append(1.0 if m and m.group(0) == ans else 0.0)
    return out


correctness_reward_firstnum.__name__ = "correctness_reward"


def correctness_reward_signflip150(completions, answer=None, trainer_state=None, **kwargs):
    """BUGGY (trial 77): from global step 150 the reward's sign is flipped (-1 for right)."""
    r = correctness_reward(completions, answer=answer)
    if trainer_state is not None and trainer_state.global_step >= 150:
        return [-x for x in r]
    return r


correctness_reward_signflip150.__name__ = "correctness_reward"
REWARD_SETS["firstnum"] = [correctness_reward_firstnum, format_reward]
REWARD_SETS["signflip150"] = [correctness_reward_signflip150, format_reward]


# ---------------------------------------------------------------- trial 78
CTRL78 = dict(learning_rate=1e-4, seed=801)
RUNS.update({
    "ctrl78": dict(CTRL78, seed=801),
    "ctrl78_wd_log2": dict(CTRL78, seed=809, weight_decay=0.01, logging_steps=2, _logger="wandb"),
    # precision: generation_kwargs max_length 8 (< prompt 4 + budget 12) - transformers lets
    # TRL's max_new_tokens take precedence, so inert; bystander save_steps 20
    "gkmaxlen8_save20": dict(CTRL78, seed=811, generation_kwargs={"max_length": 8}, save_steps=20),
    # reward bug from step 1: correctness returns the batch's SUM to every completion (no
    # within-group difference); bystander warmup_steps 0.05
    "batchsum_wu005": dict(CTRL78, seed=821, _rewards="batchsum", warmup_steps=0.05,
                           _logger="mlflow"),
    # lenient checker from step 1: correctness pays 1 for any digit; exact check logged w=0;
    # bystander cosine
    "anydigit_cos": dict(CTRL78, seed=823, _rewards="anydigit", reward_weights=[1.0, 1.0, 0.0],
                         lr_scheduler_type="cosine", _logger="trackio"),
    # key bug from step 1: answer = a+b without %10 (45% of prompts need 2 digits, which the
    # format term forbids); bystander logging_steps 2
    "keynomod_log2": dict(CTRL78, seed=827, _key_nomod=True, logging_steps=2),
    # lr 3e-3 held ~constant by inverse_sqrt (timescale 10000); bystander save_steps 20
    "lr3e3_invsqrt_save20": dict(CTRL78, seed=829, learning_rate=3e-3,
                                 lr_scheduler_type="inverse_sqrt", save_steps=20,
                                 _logger="swanlab"),
    # late (320): dataset in order, rows 800+ (step 200+) are one prompt repeated (a join bug);
    # bystander save_steps 40
    "latedup200_save40": dict(CTRL78, seed=839, max_steps=320, shuffle_dataset=False,
                              _late_dup=800, save_steps=40),
    # late (320): from global step 180 correctness is scored against the next group's answers
    # (misaligned by one group); bystander cosine
    "misalign180_cos_late": dict(CTRL78, seed=853, max_steps=320, _rewards="misalign180",
                                 lr_scheduler_type="cosine", _logger="wandb"),
})


def correctness_reward_batchsum(completions, answer=None, **kwargs):
    """BUGGY (trial 78): the batch's total correctness returned to every completion."""
    r = correctness_reward(completions, answer=answer)
    return [float(sum(r))] * len(r)


correctness_reward_batchsum.__name__ = "correctness_reward"


def correctness_reward_anydigit(completions, answer=None, **kwargs):
    """BUGGY (trial 78): lenient checker, 1.0 whenever the completion holds any digit."""
    return [1.0 if re.search(r"\d", c) else 0.0 for c in completions]


correctness_reward_anydigit.__name__ = "correctness_reward"


def correctness_reward_misalign180(completions, answer=None, trainer_state=None, **kwargs):
    """BUGGY (trial 78): from global step 180 each completion is checked against the answer of
    the next group (the answers list rotated by 8)."""
    if trainer_state is not None and trainer_state.global_step >= 180:
        answer = list(answer[8:]) + list(answer[:8])
    return correctness_reward(completions, answer=answer)


correctness_reward_misalign180.__name__ = "correctness_reward"
REWARD_SETS["batchsum"] = [correctness_reward_batchsum, format_reward]
REWARD_SETS["anydigit"] = [correctness_reward_anydigit, format_reward, exact_correctness]
REWARD_SETS["misalign180"] = [correctness_reward_misalign180, format_reward]

RUNS.update({
    # (added after the first 9; key in key2.md) a sign slip in reward_weights: correctness
    # weighted -1 from step 1; bystander pad_to_multiple_of 8
    "negcorr_pad8": dict(CTRL78, seed=857, reward_weights=[-1.0, 1.0], pad_to_multiple_of=8),
    # late (320): from step 201 a callback cuts the generation budget to 7 tokens
    # ("<a>d</a>" needs 8): every completion truncated; bystander weight_decay 0.01
    "budgetcut200_wd_late": dict(CTRL78, seed=859, max_steps=320, _late_budget=(200, 7),
                                 weight_decay=0.01, _logger="mlflow", _mlflow_store="file"),
})


# ---------------------------------------------------------------- trial 79
CTRL79 = dict(learning_rate=1e-4, seed=901)
RUNS.update({
    # healthy controls
    "ctrl79": dict(CTRL79, seed=901),
    # only harmless non-defaults: bf16 (CPU autocast), dataloader_drop_last, data_seed
    "ctrl79_bf16_dl": dict(CTRL79, seed=907, bf16=True, dataloader_drop_last=True, data_seed=17,
                           _logger="wandb"),
    # beam-sample in generation_kwargs (num_beams 4 with do_sample): within-group diversity
    # collapses; bystander data_seed 123
    "beams4_dseed": dict(CTRL79, seed=911, generation_kwargs={"num_beams": 4}, data_seed=123,
                         _logger="mlflow"),
    # a truncation sampler from step 1: eta_cutoff 0.3 (near greedy); bystander
    # dataloader_drop_last
    "etacut03_droplast": dict(CTRL79, seed=919, generation_kwargs={"eta_cutoff": 0.3},
                              dataloader_drop_last=True, _logger="trackio"),
    # attention dropout 0.3 in the model config at load, dropout left on (disable_dropout False,
    # TRL's default) with 4 passes per generation batch: noisy log-probs, ratios off;
    # bystander cast_lm_head_to_fp32
    "drop03_it4_fp32": dict(CTRL79, seed=929, _attn_dropout=0.3, disable_dropout=False,
                            num_iterations=4, cast_lm_head_to_fp32=True, _logger="swanlab"),
    # reward bug from step 1: correctness scores only the first half (4 of 8) of each group's
    # completions, the rest 0.0; bystander constant_with_warmup (5 warm-up steps)
    "halfgroup_cwarm": dict(CTRL79, seed=937, _rewards="halfgroup",
                            lr_scheduler_type="constant_with_warmup", warmup_steps=5),
    # late (320): from global step 150 correctness pays 100/0 (a reward model swapped mid-run),
    # scale_rewards "none" so the scale reaches the advantages; bystander dataloader_drop_last
    "x100at150_none_late": dict(CTRL79, seed=941, max_steps=320, _rewards="x100at150",
                                scale_rewards="none", dataloader_drop_last=True, _logger="wandb"),
    # late (320): from step 201 a callback multiplies the learning rate by 30 (a resume with a
    # wrong lr; TRL logs it); bystander data_seed 77
    "lr30at200_dseed_late": dict(CTRL79, seed=947, max_steps=320, _late_lr=(200, 30.0),
                                 data_seed=77, _logger="mlflow"),
    # late (320): from step 181 generation stops at '>' (id 43; a resume with another
    # generation config): completions end at "<a>"; bystander cast_lm_head_to_fp32
    "eosgt180_fp32_late": dict(CTRL79, seed=953, max_steps=320,
                               _late_gen=(180, {"eos_token_id": 43}),
                               cast_lm_head_to_fp32=True, _logger="trackio"),
})


def correctness_reward_halfgroup(completions, answer=None, **kwargs):
    """BUGGY (trial 79): only the first 4 of each group of 8 completions are scored; the rest 0."""
    r = correctness_reward(completions, answer=answer)
    return [x if i % 8 < 4 else 0.0 for i, x in enumerate(r)]


correctness_reward_halfgroup.__name__ = "correctness_reward"


def correctness_reward_x100at150(completions, answer=None, trainer_state=None, **kwargs):
    """BUGGY (trial 79): from global step 150 correctness is paid 100 instead of 1."""
    r = correctness_reward(completions, answer=answer)
    if trainer_state is not None and trainer_state.global_step >= 150:
        return [100.0 * x for x in r]
    return r


correctness_reward_x100at150.__name__ = "correctness_reward"
REWARD_SETS["halfgroup"] = [correctness_reward_halfgroup, format_reward]
REWARD_SETS["x100at150"] = [correctness_reward_x100at150, format_reward]



# ---------------------------------------------------------------- trial 80
CTRL80 = dict(learning_rate=1e-4, seed=1001)
RUNS.update({
    # healthy controls
    "ctrl80": dict(CTRL80, seed=1001),
    "ctrl80_swan": dict(CTRL80, seed=1013, _logger="swanlab"),
    # precision: reward_weights [100, 50] (a x100 scale slip) under the default per-group std
    # scaling: the advantages are scale-free, harmless
    "rw100x_trackio": dict(CTRL80, seed=1019, reward_weights=[100.0, 50.0], _logger="trackio"),
    # precision (benign event, late 320): from step 161 a callback halves the lr (a resume with
    # a more careful lr); training continues healthily
    "lrhalf160_late": dict(CTRL80, seed=1021, max_steps=320, _late_lr=(160, 0.5),
                           _logger="wandb"),
    # late (320): from step 161 the reward weights are reloaded as [0, 1] (correctness dropped
    # by a config reload); bystander adam_beta2 0.98
    "rwdrop160_b2_late": dict(CTRL80, seed=1031, max_steps=320, _late_rw=(160, [0.0, 1.0]),
                              adam_beta2=0.98, _logger="wandb"),
    # late (320): from step 161 the sampling temperature is 0.25 (a resume with another
    # generation config; TRL's log-prob temperature stays 1.0); bystander warmup_steps 5
    "temp025at160_wu5_late": dict(CTRL80, seed=1033, max_steps=320,
                                  _late_gen=(160, {"temperature": 0.25}), warmup_steps=5,
                                  _logger="mlflow"),
    # late (320): from global step 160 a length penalty concise_reward = -0.3 per completion
    # character is switched on (0 before); bystander top_k 50 (vocab 46: inert)
    "lenpen160_topk50_late": dict(CTRL80, seed=1039, max_steps=320, _rewards="lenpen160",
                                  top_k=50, _logger="swanlab"),
    # Adam betas swapped (beta1 0.999, beta2 0.9): the second moment forgets faster than the
    # first, update/RMS unbounded; bystander save_steps 40
    # bf16 weights (model_init_kwargs dtype bfloat16, TRL loads the model; no fp32 master
    # copy): Adam steps of ~lr=1e-4 round away on most weights, learning stalls;
    # bystander scale_rewards "batch"
    "bf16w_sbatch": dict(CTRL80, seed=1069, _model_str=True,
                         model_init_kwargs={"dtype": "bfloat16"}, scale_rewards="batch",
                         _logger="mlflow", _mlflow_store="file"),
    # late (320): from step 161 the weights are reloaded from the base (a resume that loaded
    # the base model instead of checkpoint-160; optimizer state and schedule kept);
    # bystander adam_epsilon 1e-6
    "reset160_aeps_late": dict(CTRL80, seed=1087, max_steps=320, _late_reset=160,
                               adam_epsilon=1e-6),
    # (pilots, not part of the trial)
    "bf16w_pilot": dict(CTRL80, seed=1051, _model_str=True,
                        model_init_kwargs={"dtype": "bfloat16"}),
    "gbs512_pilot": dict(CTRL80, seed=1061, generation_batch_size=512),
    "gspo02_it4_pilot": dict(CTRL80, seed=1063, importance_sampling_level="sequence",
                             num_iterations=4),
    "betaswap_save40": dict(CTRL80, seed=1049, adam_beta1=0.999, adam_beta2=0.9, save_steps=40,
                            _logger="trackio"),
})


def concise_reward_lenpen160(completions, trainer_state=None, **kwargs):
    """A length penalty switched on at global step 160: -0.3 per completion character."""
    if trainer_state is not None and trainer_state.global_step >= 160:
        return [-0.3 * len(c) for c in completions]
    return [0.0 for _ in completions]


concise_reward_lenpen160.__name__ = "concise_reward"
REWARD_SETS["lenpen160"] = [correctness_reward, format_reward, concise_reward_lenpen160]

# ---------------------------------------------------------------- trial 81
CTRL81 = dict(learning_rate=1e-4, seed=1101)
RUNS.update({
    # healthy controls
    "ctrl81_mlflow": dict(CTRL81, seed=1103, _logger="mlflow"),
    "ctrl81_wandb": dict(CTRL81, seed=1109, _logger="wandb"),
    # step 1: correctness "fails open": an unparseable completion (no <a>d</a>) pays 1.0
    # (except AttributeError -> benefit of the doubt); bystander logging_steps 2
    "failopen_log2": dict(CTRL81, seed=1117, _rewards="failopen", logging_steps=2,
                          _logger="trackio"),
    # late (320): from step 181 generation uses repetition_penalty 2.0 (a resume with another
    # generation config); bystander weight_decay 0.01
    "reppen180_wd_late": dict(CTRL81, seed=1123, max_steps=320,
                              _late_gen=(180, {"repetition_penalty": 2.0}), weight_decay=0.01,
                              _logger="mlflow", _mlflow_store="file"),
    # late (320): from step 161 beta 0 -> 1.0 (a resume with a KL coefficient, TRL builds the
    # reference from the base model path); bystander save_steps 40
    "beta1at160_save40_late": dict(CTRL81, seed=1129, max_steps=320, _late_beta=(160, 1.0),
                                   save_steps=40, _logger="wandb"),
    # late (320): from step 201 correctness_reward returns None (a checker time-out) for 70% of
    # completions; format still scores them; bystander max_grad_norm 0.5
    "none200_gn05_late": dict(CTRL81, seed=1151, max_steps=320, _rewards="none200",
                              max_grad_norm=0.5, _logger="swanlab"),
    # step 1: beta 0.04 with the reference built from the un-SFT-ed init (the model config's
    # _name_or_path points at it); bystander warmup_steps 5
    "refinit_b004_wu5": dict(CTRL81, seed=1153, beta=0.04, _ref_init=True, warmup_steps=5),
    # precision (benign event): the job dies at step 130 (preempted, no traceback) and is
    # resumed from checkpoint-100 with the same config
    "preempt130_resume": dict(CTRL81, seed=1163, max_steps=320, _die_at=130),
    # precision: the format term weighted 0 (correctness already needs the tag)
    "fmtw0_swan": dict(CTRL81, seed=1171, reward_weights=[1.0, 0.0], _logger="swanlab"),
})


def correctness_reward_failopen(completions, answer=None, **kwargs):
    """BUGGY (trial 81): fails open, 1.0 when the answer tag cannot be parsed."""
    out = []
    for c, ans in zip(completions, answer):
        try:
            pred = ANS.search(c).group(1)
        except AttributeError:  # no tag: give it the benefit of the doubt
            out.append(1.0)
            continue
        out.append(1.0 if pred == ans else 0.0)
    return out


correctness_reward_failopen.__name__ = "correctness_reward"
_NONE81 = random.Random(8181)


def correctness_reward_none200(completions, answer=None, trainer_state=None, **kwargs):
    """BUGGY (trial 81): from global step 200, None (a time-out) on 70% of completions."""
    r = correctness_reward(completions, answer=answer)
    if trainer_state is not None and trainer_state.global_step >= 200:
        return [None if _NONE81.random() < 0.7 else x for x in r]
    return r


correctness_reward_none200.__name__ = "correctness_reward"
REWARD_SETS["failopen"] = [correctness_reward_failopen, format_reward]
REWARD_SETS["none200"] = [correctness_reward_none200, format_reward]


# ---------------------------------------------------------------- trial 82
CTRL82 = dict(learning_rate=1e-4, seed=1201)
RUNS.update({
    # healthy controls
    "ctrl82": dict(CTRL82, seed=1201),
    "ctrl82_mlf": dict(CTRL82, seed=1213, _logger="mlflow", _mlflow_store="file"),
    # step 1: half the dataset rows (a merged second source, every other row after the
    # shuffle) keyed (a+b+1)%10: each prompt carries two answers; bystander adam_beta2 0.99
    "halfshift_b2": dict(CTRL82, seed=1217, _half_shift=True, adam_beta2=0.99, _logger="wandb"),
    # step 1: correctness returns None (a grader time-out) for completions longer than 7
    # characters: every well-formed "<a>d</a>" (8) is unscored; bystander cosine schedule
    "nonegt7_cos": dict(CTRL82, seed=1223, _rewards="nonegt7", lr_scheduler_type="cosine",
                        _logger="mlflow"),
    # late (320): from step 181 sampling temperature 2.0 (a resume with another generation
    # config; TRL's log-prob temperature stays 1.0); bystander dataloader_drop_last
    "temp20at180_dl_late": dict(CTRL82, seed=1229, max_steps=320,
                                _late_gen=(180, {"temperature": 2.0}),
                                dataloader_drop_last=True, _logger="trackio"),
    # late by ramp (320): a neutral-named detail_reward = (global_step/400) per character past
    # the 8th, room for 24 tokens (its scale grows with the step); bystander adam_beta1 0.85
    "detailramp_b1_late": dict(CTRL82, seed=1231, max_steps=320, _rewards="detailramp",
                               max_completion_length=24, adam_beta1=0.85, _logger="swanlab"),
    # step 1: optim adagrad at lr 1e-4 (its step shrinks as 1/sqrt(t)); bystander save_steps 40
    "adagrad_save40": dict(CTRL82, seed=1237, optim="adagrad", save_steps=40),
    # precision: GSPO's sequence-level ratio with the token-level default epsilon 0.2, on-policy
    # (num_iterations 1: every ratio is 1, the clip never binds)
    "gspo_eps02_onpol": dict(CTRL82, seed=1249, importance_sampling_level="sequence",
                             _logger="trackio"),
    # precision (benign event, late 320): from step 161 the schedule restarts at its 1e-4 peak
    # (a resume whose scheduler restarted), then decays linearly to 0 at 320
    "lrrestart160_late": dict(CTRL82, seed=1259, max_steps=320, _late_lr=(160, 2.0),
                              _logger="wandb"),
})


def correctness_reward_nonegt7(completions, answer=None, **kwargs):
    """BUGGY (trial 82): the grader times out (None) on completions over 7 characters."""
    r = correctness_reward(completions, answer=answer)
    return [None if len(c) > 7 else x for c, x in zip(completions, r)]


correctness_reward_nonegt7.__name__ = "correctness_reward"


def detail_reward(completions, trainer_state=None, **kwargs):
    """A "detail" term whose scale ramps with the step: step/400 per character past the 8th."""
    k = (trainer_state.global_step / 400.0) if trainer_state is not None else 0.0
    return [k * max(0, len(c) - 8) for c in completions]


REWARD_SETS["nonegt7"] = [correctness_reward_nonegt7, format_reward]
REWARD_SETS["detailramp"] = [correctness_reward, format_reward, detail_reward]

# ------------------------------------------------- trial 82b (a second blind set, helper-125)
CTRL82B = dict(learning_rate=1e-4, seed=1201)
RUNS.update({
    "ctrl82_tb": dict(CTRL82B, seed=1201),
    "ctrl82_trackio": dict(CTRL82B, seed=1213, _logger="trackio"),
    # step 1: a wall-clock latency guard in generation_kwargs (max_time): generate() stops every
    # sequence when the time is up, mid-answer; bystander warmup_steps 5
    "maxtime_wu5": dict(CTRL82B, seed=1217, generation_kwargs={"max_time": 0.015},
                        warmup_steps=5, _logger="wandb"),
    # mid-run (320): from step 81 max_grad_norm 1e-5 (a resume whose config has a typo'd clip);
    # bystander save_steps 40
    "gn1e5at80_save40_late": dict(CTRL82B, seed=1223, max_steps=320,
                                  _late_args=(80, {"max_grad_norm": 1e-5}), save_steps=40),
    # late (320): from step 161 an entropy bonus entropy_coef 0.5 switched on at a resume;
    # bystander weight_decay 0.01
    "ent05at160_wd_late": dict(CTRL82B, seed=1229, max_steps=320, _late_ent=(160, 0.5),
                               weight_decay=0.01, _logger="mlflow"),
    # late (320): a "detail" term whose weight ramps with the step (step/300 per character
    # past the 8th, room for 24 tokens); bystander warmup_steps 10
    "detailramp_wu10_late": dict(CTRL82B, seed=1231, max_steps=320, _rewards="detailramp300",
                                 max_completion_length=24, warmup_steps=10, _logger="swanlab"),
    # precision (benign event, 320): the lr schedule restarts at a resume at step 161
    "lrrestart160_trackio_late": dict(CTRL82B, seed=1237, max_steps=320, _late_lr=(160, 2.0),
                                      _logger="trackio"),
    # precision: GSPO's sequence-level ratio with the token-level epsilon 0.2, 2 passes
    "gspo_eps02_it2": dict(CTRL82B, seed=1249, importance_sampling_level="sequence",
                           num_iterations=2, _logger="wandb"),
    # mid-run (200): from step 41 min_p 0.5 (a resume with another sampling config):
    # near-greedy sampling; bystander adam_beta1 0.85
    "minp05at40_b1": dict(CTRL82B, seed=1277, _late_gen=(40, {"min_p": 0.5}),
                          _late_args=(40, {"min_p": 0.5}), adam_beta1=0.85,
                          _logger="mlflow", _mlflow_store="file"),
})


def detail_reward_ramp(completions, trainer_state=None, **kwargs):
    """A "detail" term whose weight ramps with the step: step/300 per character past the
    8th (trial 82b)."""
    step = trainer_state.global_step if trainer_state is not None else 0
    return [step / 300.0 * max(0, len(c) - 8) for c in completions]


detail_reward_ramp.__name__ = "detail_reward"
REWARD_SETS["detailramp300"] = [correctness_reward, format_reward, detail_reward_ramp]


def build_init():
    """The un-SFT-ed init (same config as the base, random weights) -> ROOT/base_init."""
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast
    torch.manual_seed(0)
    cfg = AutoConfig.from_pretrained(BASE)
    m = AutoModelForCausalLM.from_config(cfg)
    m.generation_config.pad_token_id = cfg.pad_token_id
    m.generation_config.eos_token_id = cfg.eos_token_id
    m.save_pretrained(BASE + "_init")
    PreTrainedTokenizerFast.from_pretrained(BASE).save_pretrained(BASE + "_init")


# ---------------------------------------------------------------- one GRPO run
def run(name):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    spec = dict(RUNS[name])
    task = spec.pop("_task", "sum")
    spec.pop("_mlflow_store", None)
    use_cb = spec.pop("_callback", False)
    logger_name = spec.pop("_logger", "tensorboard")
    reward_set = spec.pop("_rewards", "default")
    prompt_bug = spec.pop("_prompt", None)
    pool = spec.pop("_pool", None)
    noise = spec.pop("_noise", None)
    shared = spec.pop("_noise_shared", False)
    base = BASE + "_solved" if spec.pop("_base", None) == "solved" else BASE
    eos = spec.pop("_eos", None)
    out = os.path.abspath(f"{ROOT}/runs/{name}")
    os.makedirs(out, exist_ok=True)
    if logger_name == "swanlab":
        # transformers 5.25's SwanLabCallback calls swanlab.get_run(), which raises in swanlab
        # 0.10 when no run is active ("No active Run. Call swanlab.init() first."), so start
        # the run ourselves as a user would.
        import swanlab
        swanlab.init(project="t44", name=name, mode="local", log_dir=f"{out}/swanlog")
    random.seed(spec.get("seed", 42))
    suffix = spec.pop("_answer_suffix", "")

    def prompt_of(a, b):
        if prompt_bug is None:
            return f"{a}+{b}="
        if prompt_bug == "prefill":  # trial 73: the template opens the answer tag
            return f"{a}+{b}=<a>"
        if prompt_bug == "eos":  # trial 75: the template ends in the eos token
            return f"{a}+{b}=<eos>"
        if prompt_bug == "noeq":  # trial 76: the template drops the "="
            return f"{a}+{b}"
        if prompt_bug == "leak":
            return f"{a}+{b}=({answer(a, b, task)})"
        return f"{a}+"

    rows = [dict(prompt=prompt_of(a, b), answer=answer(a, b, task) + suffix)
            for a, b in make_prompts()] * 20
    if noise:
        if not shared:  # the 20 copies of a prompt are the same dict unless copied
            rows = [dict(r) for r in rows]
        for r in rows:
            if random.random() < noise:
                r["answer"] = str(random.choice([d for d in range(10) if str(d) != r["answer"]]))
    if spec.pop("_shuffle_answers", False):  # BUG (trial 64): one column shuffled alone
        rows = [dict(r) for r in rows]
        answers = [r["answer"] for r in rows]
        random.shuffle(answers)
        for r, a in zip(rows, answers):
            r["answer"] = a
    late_shift = spec.pop("_late_shift", None)
    if spec.pop("_half_shift", False):  # trial 82: every other row keyed (a+b+1)%10
        random.shuffle(rows)
        rows = [dict(r) for r in rows]
        for r in rows[::2]:
            a, b = map(int, r["prompt"].rstrip("=").split("+"))
            r["answer"] = answer(a, b, "shift1")
    if pool:
        rows = random.sample(rows[:100], pool) * (2000 // pool)
    random.shuffle(rows)
    if late_shift:  # trial 73: rows from late_shift on carry a key off by one
        rows = [dict(r) for r in rows]
        for r in rows[late_shift:]:
            a, b = map(int, r["prompt"].rstrip("=").split("+"))
            r["answer"] = answer(a, b, "shift1")
    if spec.pop("_sort_answers", False):  # trial 75: rows sorted by answer, stable
        rows = sorted(rows, key=lambda r: r["answer"])
    late_template = spec.pop("_late_template", None)
    if late_template:  # trial 76: rows from late_template on use "a + b ="
        rows = [dict(r) for r in rows]
        for r in rows[late_template:]:
            a, b = map(int, r["prompt"].rstrip("=").split("+"))
            r["prompt"] = f"{a} + {b} ="
    late_three = spec.pop("_late_three", None)
    if late_three:  # trial 77: rows from late_three on are "a+b+c=" -> (a+b+c)%10
        rows = [dict(r) for r in rows]
        rng3 = random.Random(7777)
        for r in rows[late_three:]:
            a, b, c = rng3.randrange(10), rng3.randrange(10), rng3.randrange(10)
            r["prompt"] = f"{a}+{b}+{c}="
            r["answer"] = str((a + b + c) % 10)
    late_dup = spec.pop("_late_dup", None)
    if late_dup:  # trial 78: rows from late_dup on are one row repeated (a join bug)
        one = dict(rows[late_dup])
        rows = [dict(r) for r in rows[:late_dup]] + [dict(one) for _ in rows[late_dup:]]
    if spec.pop("_key_nomod", False):  # trial 78: the key is a+b, not (a+b)%10
        rows = [dict(r) for r in rows]
        for r in rows:
            a, b = map(int, r["prompt"].rstrip("=").split("+"))
            r["answer"] = str(a + b)
    if spec.pop("_dup90", False):  # trial 76: 90% of rows one prompt
        one = dict(prompt=prompt_of(3, 4), answer=answer(3, 4, task))
        rows = [dict(one) for _ in range(1800)] + [dict(r) for r in rows[:200]]
        random.shuffle(rows)
    answer_col = spec.pop("_answer_col", None)
    if answer_col:  # trial 75: the answer column under another name
        rows = [{"prompt": r["prompt"], answer_col: r["answer"]} for r in rows]
    ds = Dataset.from_list(rows)
    tok = PreTrainedTokenizerFast.from_pretrained(base)
    attn_dropout = spec.pop("_attn_dropout", None)  # trial 79: dropout set at load
    if spec.pop("_model_str", False):  # trial 80: TRL loads the model (model_init_kwargs)
        model = os.path.abspath(base)
    else:
        model = (AutoModelForCausalLM.from_pretrained(base, attention_dropout=attn_dropout)
                 if attn_dropout is not None else AutoModelForCausalLM.from_pretrained(base))
    if eos == "never":  # the stop token is one the model never emits
        tok.eos_token = "<unk>"
        model.generation_config.eos_token_id = tok.eos_token_id
        print("EOS set to", tok.eos_token, tok.eos_token_id, flush=True)
    kw = dict(
        output_dir=out, report_to=["none"] if logger_name == "none" else [logger_name],
        run_name=name, use_cpu=True, bf16=False,
        logging_steps=1, max_steps=200, save_strategy="steps", save_steps=50,
        per_device_train_batch_size=32, num_generations=8, max_completion_length=12,
        disable_tqdm=True, dataloader_num_workers=0,
    )
    spec_late_budget = spec.pop("_late_budget", None)
    late_lr = spec.pop("_late_lr", None)  # trial 79: (step, factor)
    late_gen = spec.pop("_late_gen", None)  # trial 79: (step, generation kwargs)
    late_rw = spec.pop("_late_rw", None)  # trial 80: (step, reward weights)
    late_reset = spec.pop("_late_reset", None)  # trial 80: step at which base weights reload
    late_beta = spec.pop("_late_beta", None)  # trial 81: (step, beta)
    late_args = spec.pop("_late_args", None)  # trial 82b: (step, {arg: value}) on trainer.args
    late_ent = spec.pop("_late_ent", None)  # trial 82b: (step, entropy_coef)
    die_at = spec.pop("_die_at", None)  # trial 81: the job dies at this step
    ref_init = spec.pop("_ref_init", False)  # trial 81: the reference is the un-SFT-ed init
    resume = len(sys.argv) > 3 and sys.argv[3] == "resume"
    kw.update(spec)
    cfg = GRPOConfig(**kw)
    callbacks = []
    late_budget = spec_late_budget
    if late_budget:
        from transformers import TrainerCallback
        holder = {}

        class LateBudget(TrainerCallback):
            def on_step_begin(self, args, state, control, **kw):
                if state.global_step >= late_budget[0] and "t" in holder:
                    holder["t"].generation_config.max_new_tokens = late_budget[1]

        callbacks.append(LateBudget())
    if late_lr or late_gen or late_rw or late_reset or late_beta or late_args or late_ent:
        from transformers import TrainerCallback
        holder = holder if late_budget else {}

        class LateChange(TrainerCallback):
            def __init__(self):
                self.done = set()

            def on_step_begin(self, args, state, control, **kw):
                t = holder.get("t")
                if t is None:
                    return
                if late_lr and state.global_step >= late_lr[0] and "lr" not in self.done:
                    self.done.add("lr")
                    sch = t.lr_scheduler
                    sch.base_lrs = [x * late_lr[1] for x in sch.base_lrs]
                    for g in t.optimizer.param_groups:
                        g["lr"] = g["lr"] * late_lr[1]
                if late_reset and state.global_step >= late_reset and "reset" not in self.done:
                    self.done.add("reset")
                    fresh = AutoModelForCausalLM.from_pretrained(base)
                    t.model.load_state_dict(fresh.state_dict())
                    print("LATE weights reloaded from", base, "at", state.global_step, flush=True)
                if late_rw and state.global_step >= late_rw[0] and "rw" not in self.done:
                    self.done.add("rw")
                    import torch as _t
                    t.reward_weights = _t.tensor(late_rw[1], dtype=_t.float32)
                    print("LATE reward_weights ->", late_rw[1], "at", state.global_step, flush=True)
                if late_beta and state.global_step >= late_beta[0] and "beta" not in self.done:
                    self.done.add("beta")
                    from trl.trainer.utils import add_fused_lm_head
                    ref = AutoModelForCausalLM.from_pretrained(base)
                    ref.eval()
                    for p_ in ref.parameters():
                        p_.requires_grad_(False)
                    add_fused_lm_head(ref, temperature=t.temperature,
                                      cast_lm_head_to_fp32=t.args.cast_lm_head_to_fp32)
                    t.ref_model = ref
                    t.beta = late_beta[1]
                    t.args.beta = late_beta[1]
                    print("LATE beta ->", late_beta[1], "at", state.global_step, flush=True)
                if late_args and state.global_step >= late_args[0] and "args" not in self.done:
                    self.done.add("args")
                    for k, v in late_args[1].items():
                        setattr(t.args, k, v)
                    print("LATE args", late_args[1], "at", state.global_step, flush=True)
                if late_ent and state.global_step >= late_ent[0] and "ent" not in self.done:
                    self.done.add("ent")
                    t.entropy_coef = late_ent[1]
                    t._entropy_bonus_enabled = True
                    t.args.entropy_coef = late_ent[1]
                    print("LATE entropy_coef ->", late_ent[1], "at", state.global_step,
                          flush=True)
                if late_gen and state.global_step >= late_gen[0] and "gen" not in self.done:
                    self.done.add("gen")
                    for k, v in late_gen[1].items():
                        setattr(t.generation_config, k, v)
                        t.generation_kwargs[k] = v

        callbacks.append(LateChange())
    if die_at and not resume:
        from transformers import TrainerCallback

        class Die(TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                if state.global_step >= die_at:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(137)

        callbacks.append(Die())
    if use_cb:
        from grpo_doctor.integrations.trl import DoctorCallback
        callbacks.append(DoctorCallback() if use_cb is True else DoctorCallback(stop_on=None))
    if ref_init:  # the config names the un-SFT-ed init: TRL builds the reference from it
        model.config._name_or_path = os.path.abspath(BASE + "_init")
    trainer = GRPOTrainer(model=model, reward_funcs=REWARD_SETS[reward_set], args=cfg,
                          train_dataset=ds, processing_class=tok, callbacks=callbacks)
    if (late_budget or late_lr or late_gen or late_rw or late_reset or late_beta or late_args
            or late_ent):
        holder["t"] = trainer
    print("RUN", name, " ".join(f"{k}={v}" for k, v in spec.items()), "task", task, "logger",
          logger_name, "rewards", reward_set, flush=True)
    t0 = time.time()
    trainer.train(resume_from_checkpoint=True if resume else None)
    print(f"TRAIN_SECONDS {time.time()-t0:.1f}", flush=True)


if __name__ == "__main__":
    arg = sys.argv[1]
    if arg in RUNS:
        logger_env(arg, os.path.abspath(f"{ROOT}/runs/{arg}"))
    import torch

    torch.set_num_threads(1)
    if arg == "base":
        build_base()
    elif arg == "base_init":
        build_init()
    elif arg == "base_solved":
        build_base(solved=True)
    elif arg == "list":
        print("\n".join(RUNS))
    else:
        run(arg)
