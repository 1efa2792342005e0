"""Write a run's per-step rows under TRL or verl metric names, through the real writers.

Formats: TensorBoard event files (``torch.utils.tensorboard.SummaryWriter``), wandb offline
runs (``wandb.init(mode="offline")``), HF ``trainer_state.json`` (TRL only: it is the HF
Trainer's file) and plain CSV. The key layouts follow what each framework really logs:

* TRL via the HF Trainer: wandb/TensorBoard keys carry ``train/`` (``eval/`` for evaluation),
  ``trainer_state.json`` holds the raw keys (``reward``, ``kl``...) and ``eval_accuracy`` in
  separate evaluation entries; ``kl`` is logged only when beta != 0; no PPO-ratio stats.
* verl: raw namespaces (``actor/``, ``critic/``, ``response_length/``, ``val-core/``) with an
  explicit ``step=``; ``actor/kl_loss`` whenever the KL loss is on (also at coefficient 0).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

#: TRL reward-function names (as ``reward_func.__name__`` would give) per internal component.
FUNC_NAMES = {
    "correct": "accuracy_reward",
    "format": "format_reward",
    "tags": "think_format_reward",
    "verifier": "answer_match_reward",
    "length": "length_reward",
}


def trl_keys(row: dict, cfg) -> dict:
    """Internal row -> TRL keys without the ``train/`` prefix (trainer_state's own form)."""
    out = {
        "loss": row["loss"],
        "grad_norm": row["grad_norm"],
        "learning_rate": row["lr"],
        "num_tokens": row["num_tokens_cum"],
        "completions/mean_length": row["len_mean"],
        "completions/min_length": row["len_min"],
        "completions/max_length": row["len_max"],
        "completions/clipped_ratio": row["trunc"],
    }
    for c in cfg.weights:
        out[f"rewards/{FUNC_NAMES[c]}/mean"] = row[f"rewards/{c}"]
        out[f"rewards/{FUNC_NAMES[c]}/std"] = row[f"rewards_std/{c}"]
    out.update({
        "reward": row["reward"],
        "reward_std": row["reward_std"],
        "frac_reward_zero_std": row["frac_zero_std"],
        "entropy": row["entropy"],
        "log_prob_mean": row["log_prob"],
        "clip_ratio/low_mean": row["clip_frac_low"],
        "clip_ratio/high_mean": row["clip_frac_high"],
        "clip_ratio/region_mean": row["clip_frac"],
    })
    if "log_prob_pos" in row:
        out["log_prob_pos_adv_mean"] = row["log_prob_pos"]
    if cfg.beta != 0.0:
        out["kl"] = row["kl"]
    return out


def verl_keys(row: dict, cfg) -> dict:
    out = {
        "actor/pg_loss": row["pg_loss"],
        "actor/pg_clipfrac": row["clip_frac"],
        "actor/ppo_kl": -math.log(row["ratio_mean"]) if row["ratio_mean"] > 0 else math.nan,
        "actor/entropy": row["entropy"],
        "actor/kl_loss": row["kl"],
        "actor/kl_coef": cfg.beta,
        "actor/grad_norm": row["grad_norm"],
        "actor/lr": row["lr"],
        "actor/ratio_max": row["ratio_max"],
        "actor/ratio_min": row["ratio_min"],
        "actor/ratio_mean": row["ratio_mean"],
        "rollout/old_log_prob": row["log_prob"],
        "critic/score/mean": row["reward"],
        "critic/score/max": row["reward_max"],
        "critic/score/min": row["reward_min"],
        "critic/rewards/mean": row["reward"],
        "critic/advantages/mean": row["adv_mean"],
        "critic/advantages/max": row["adv_max"],
        "critic/advantages/min": row["adv_min"],
        "response_length/mean": row["len_mean"],
        "response_length/max": row["len_max"],
        "response_length/min": row["len_min"],
        "response_length/clip_ratio": row["trunc"],
        "zero_std_group_ratio": row["frac_zero_std"],
        "training/global_step": row["step"],
        "training/epoch": 0,
    }
    if "log_prob_pos" in row:
        out["actor/pos_avg_old_log_prob"] = row["log_prob_pos"]
    return out


VERL_EVAL_KEY = "val-core/tiny/acc/mean@1"


def _prepare(rows: list[dict]) -> list[dict]:
    tot = 0.0
    out = []
    for r in rows:
        tot += r["num_tokens"]
        out.append({**r, "num_tokens_cum": tot})
    return out


def _named(rows: list[dict], cfg) -> list[tuple[int, dict, float | None]]:
    """(step, train metrics under the framework's wandb/TB names, eval accuracy or None)."""
    out = []
    for r in _prepare(rows):
        if cfg.framework == "trl":
            m = {f"train/{k}": v for k, v in trl_keys(r, cfg).items()}
        else:
            m = verl_keys(r, cfg)
        out.append((r["step"], m, r.get("acc")))
    return out


def _eval_key(cfg) -> str:
    return "eval/accuracy" if cfg.framework == "trl" else VERL_EVAL_KEY


def train_seed(cfg) -> int:
    """The seed a trainer's config names: the RL run's (the base model is a checkpoint)."""
    return cfg.rl_seed if cfg.rl_seed is not None else cfg.seed


def _trainer_args(cfg) -> dict:
    """The run's hyper-parameters in TRL's GRPOConfig vocabulary (plus the toy task's knobs)."""
    return {
        "learning_rate": cfg.lr,
        "lr_scheduler_type": {"constant": "constant", "cosine": "cosine",
                              "warmup": "constant_with_warmup", "burst": "constant",
                              "jump": "constant"}[cfg.schedule],
        # a jump is a scheduler gone wrong, not a setting: the config says constant, no warm-up
        "warmup_steps": 0 if cfg.schedule == "jump" else cfg.warmup,
        "max_steps": cfg.steps,
        "per_device_train_batch_size": cfg.batch_prompts * cfg.group,
        "num_generations": cfg.group,
        "temperature": cfg.temperature,
        "max_completion_length": cfg.max_new,
        "beta": cfg.beta,
        "epsilon": cfg.eps_low,
        "epsilon_high": cfg.eps_high,
        "num_iterations": cfg.inner_epochs,
        "steps_per_generation": cfg.minibatches,
        "max_grad_norm": cfg.max_grad_norm if cfg.max_grad_norm is not None else 1e9,
        "loss_type": "dapo" if cfg.loss_agg == "token_mean" else "grpo",
        "scale_rewards": cfg.scale_rewards,
        "reward_weights": [cfg.weights[c] for c in cfg.weights],
        "reward_funcs": [FUNC_NAMES[c] for c in cfg.weights],
        "fp16": cfg.dtype == "float16",
        "adam_epsilon": cfg.adam_eps,
        "entropy_coef": cfg.entropy_coef,
        "logging_steps": 1,
        "eval_steps": cfg.eval_every,
        "seed": train_seed(cfg),
        "run_name": cfg.name,
    }


def _verl_config(cfg) -> dict:
    """The run's hyper-parameters in verl's config tree (the parts that mean something here)."""
    return {
        "algorithm": {"adv_estimator": "grpo", "norm_adv_by_std_in_grpo": cfg.scale_rewards,
                      "use_kl_in_reward": False},
        "actor_rollout_ref": {
            "actor": {
                "optim": {"lr": cfg.lr,
                          "lr_warmup_steps": 0 if cfg.schedule == "jump" else cfg.warmup,
                          "warmup_style": "constant" if cfg.schedule == "jump" else cfg.schedule,
                          "eps": cfg.adam_eps},
                "ppo_epochs": cfg.inner_epochs,
                "ppo_mini_batch_size": cfg.batch_prompts // cfg.minibatches,
                "clip_ratio_low": cfg.eps_low,
                "clip_ratio_high": cfg.eps_high,
                "grad_clip": cfg.max_grad_norm,
                "use_kl_loss": True,
                "kl_loss_coef": cfg.beta,
                "kl_loss_type": "low_var_kl",
                "entropy_coeff": cfg.entropy_coef,
                "loss_agg_mode": "token-mean" if cfg.loss_agg == "token_mean"
                else "seq-mean-token-mean",
            },
            "rollout": {"n": cfg.group, "temperature": cfg.temperature,
                        "response_length": cfg.max_new},
            "model": {"dtype": cfg.dtype},
        },
        "data": {"train_batch_size": cfg.batch_prompts},
        "trainer": {"total_training_steps": cfg.steps, "test_freq": cfg.eval_every,
                    "experiment_name": cfg.name, "seed": train_seed(cfg)},
        "reward": {"weights": dict(cfg.weights)},
    }


def framework_config(cfg) -> dict:
    return _trainer_args(cfg) if cfg.framework == "trl" else _verl_config(cfg)


# --- the formats -------------------------------------------------------------------------------


def write_tensorboard(run_dir: Path, rows: list[dict], cfg) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    run_dir.mkdir(parents=True, exist_ok=True)
    w = SummaryWriter(log_dir=str(run_dir))
    if cfg.framework == "trl":  # HF TensorBoardCallback.on_train_begin
        w.add_text("args", json.dumps(framework_config(cfg), indent=2))
    for step, m, acc in _named(rows, cfg):
        for k, v in m.items():
            w.add_scalar(k, v, step)
        if acc is not None:
            w.add_scalar(_eval_key(cfg), acc, step)
    w.flush()
    w.close()
    return run_dir


def write_wandb(run_dir: Path, rows: list[dict], cfg, run_id: str) -> Path:
    os.environ["WANDB_SILENT"] = "true"
    os.environ["WANDB_MODE"] = "offline"
    os.environ.setdefault("WANDB_CONSOLE", "off")
    import wandb

    run_dir.mkdir(parents=True, exist_ok=True)
    project = "huggingface" if cfg.framework == "trl" else "tiny_grpo"
    run = wandb.init(mode="offline", dir=str(run_dir), project=project, name=cfg.name,
                     id=run_id, config=framework_config(cfg),
                     settings=wandb.Settings(console="off", x_disable_stats=True,
                                             x_disable_meta=True))
    if cfg.framework == "trl":  # HF WandbCallback
        run.define_metric("train/global_step")
        run.define_metric("*", step_metric="train/global_step", step_sync=True)
        for step, m, acc in _named(rows, cfg):
            run.log({**m, "train/global_step": step})
            if acc is not None:
                run.log({"eval/accuracy": acc, "train/global_step": step})
    else:  # verl Tracking: wandb.log(data=data, step=step)
        for step, m, acc in _named(rows, cfg):
            if acc is not None:
                m = {**m, VERL_EVAL_KEY: acc}
            run.log(m, step=step)
    run.finish()
    # Keep only the run's binary log and its config/summary (no debug logs, no metadata).
    offline = next((run_dir / "wandb").glob(f"offline-run-*-{run_id}"))
    for p in (run_dir / "wandb").iterdir():
        if p != offline:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
    keep = {f"run-{run_id}.wandb", "files"}
    for p in offline.iterdir():
        if p.name not in keep:
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    files = offline / "files"
    if files.exists():
        for p in files.iterdir():
            if p.name not in {"config.yaml", "wandb-summary.json"}:
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    return offline


def write_trainer_state(run_dir: Path, rows: list[dict], cfg) -> Path:
    """HF ``trainer_state.json`` as ``Trainer._save_checkpoint`` writes it (indent 2, sorted)."""
    prepared = _prepare(rows)
    last = prepared[-1]["step"] if prepared else 0
    n = cfg.steps
    history = []
    for r in prepared:
        epoch = round(r["step"] / n, 4)
        entry = {**trl_keys(r, cfg), "epoch": epoch, "step": r["step"]}
        history.append(entry)
        if "acc" in r:
            history.append({"epoch": epoch, "eval_accuracy": r["acc"], "step": r["step"]})
    state = {
        "best_global_step": None,
        "best_metric": None,
        "best_model_checkpoint": None,
        "epoch": round(last / n, 4),
        "eval_steps": cfg.eval_every,
        "global_step": last,
        "is_hyper_param_search": False,
        "is_local_process_zero": True,
        "is_world_process_zero": True,
        "log_history": history,
        "logging_steps": 1,
        "max_steps": n,
        "num_input_tokens_seen": 0,
        "num_train_epochs": 1,
        "save_steps": n,
        "stateful_callbacks": {
            "TrainerControl": {
                "args": {"should_epoch_stop": False, "should_evaluate": False,
                         "should_log": False, "should_save": True,
                         "should_training_stop": last == n},
                "attributes": {},
            }
        },
        "total_flos": 0.0,
        "train_batch_size": cfg.batch_prompts * cfg.group,
        "trial_name": None,
        "trial_params": None,
    }
    ckpt = run_dir / f"checkpoint-{last}"
    ckpt.mkdir(parents=True, exist_ok=True)
    path = ckpt / "trainer_state.json"
    path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    return path


def write_csv(run_dir: Path, rows: list[dict], cfg) -> Path:
    named = _named(rows, cfg)
    cols: list[str] = []
    for _, m, _ in named:
        for k in m:
            if k not in cols:
                cols.append(k)
    ek = _eval_key(cfg)
    cols.append(ek)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "metrics.csv"
    with path.open("w") as f:
        f.write(",".join(["step", *cols]) + "\n")
        for step, m, acc in named:
            vals = {**m, ek: acc}
            f.write(",".join([str(step), *(_fmt(vals.get(c)) for c in cols)]) + "\n")
    return path


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, int):
        return str(v)
    return repr(float(v)) if math.isfinite(v) else ("nan" if math.isnan(v) else
                                                    ("inf" if v > 0 else "-inf"))


def write(run_dir: Path, rows: list[dict], cfg, run_id: str) -> Path:
    if cfg.fmt == "tensorboard":
        return write_tensorboard(run_dir, rows, cfg)
    if cfg.fmt == "wandb":
        return write_wandb(run_dir, rows, cfg, run_id)
    if cfg.fmt == "trainer_state":
        if cfg.framework != "trl":
            raise ValueError("trainer_state.json is the HF Trainer's file: TRL names only")
        return write_trainer_state(run_dir, rows, cfg)
    if cfg.fmt == "csv":
        return write_csv(run_dir, rows, cfg)
    raise ValueError(cfg.fmt)
