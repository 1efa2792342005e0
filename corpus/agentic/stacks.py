"""Write an agentic run's rows under the names of verl multi-turn, TRL (tools), NeMo-RL,
Search-R1 and VerlTool, through the real writers (TensorBoard SummaryWriter, wandb offline),
and save the config the way each stack does."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import yaml

FN = {
    "correct": "accuracy_reward",
    "format": "format_reward",
    "tool_call": "tool_call_reward",
    "call_format": "tool_format_reward",
}


def _verl_core(r, cfg):
    out = {
        "actor/pg_loss": r["pg_loss"],
        "actor/pg_clipfrac": r["clip_frac"],
        "actor/ppo_kl": -math.log(r["ratio_mean"]) if r["ratio_mean"] > 0 else math.nan,
        "actor/entropy": r["entropy"],
        "actor/kl_loss": r["kl"],
        "actor/kl_coef": cfg.beta,
        "actor/grad_norm": r["grad_norm"],
        "actor/lr": r["lr"],
        "critic/score/mean": r["reward"],
        "critic/score/max": r["reward_max"],
        "critic/score/min": r["reward_min"],
        "critic/rewards/mean": r["reward"],
        "critic/rewards/max": r["reward_max"],
        "critic/rewards/min": r["reward_min"],
        "critic/advantages/mean": r["adv_mean"],
        "critic/advantages/max": r["adv_max"],
        "critic/advantages/min": r["adv_min"],
        "response_length/mean": r["len_mean"],
        "response_length/max": r["len_max"],
        "response_length/min": r["len_min"],
        "response_length/clip_ratio": r["clip_len"],
        "training/global_step": r["step"],
        "training/epoch": 0,
    }
    return out


def keys(r, cfg):
    s = cfg.stack
    if s == "verl":  # verl multi-turn (sglang/agent loop)
        out = _verl_core(r, cfg)
        out.update(
            {
                "num_turns/mean": 2 * r["calls"] + 2,
                "num_turns/max": 2 * r["calls_max"] + 2,
                "num_turns/min": 2 * r["calls_min"] + 2,
                "tool_call_counts/mean": r["calls"],
                "tool_call_counts/max": r["calls_max"],
                "tool_call_counts/min": r["calls_min"],
                "agent_loop/tool_calls/mean": r["tool_sec"],
                "agent_loop/tool_calls/max": r["tool_sec_max"],
                "agent_loop/tool_calls/min": r["tool_sec_min"],
            }
        )
        ev = {"val-core/tiny/acc/mean@1": "acc", "val-aux/num_turns/mean": "eval_turns"}
    elif s == "verltool":
        out = _verl_core(r, cfg)
        out.update(
            {
                "verl_tool/num_turns/mean": r["turns"],
                "verl_tool/num_turns/max": r["turns_max"],
                "verl_tool/num_turns/min": r["turns_min"],
                "verl_tool/valid_action/mean": r["valid_calls"],
                "verl_tool/tool_call_success/mean": 1 - r["fail_rate"],
                "verl_tool/is_traj_finished/mean": r["finished"],
                "verl_tool/per_action_logp/mean": r["log_prob_gen"],
                "verl_tool/traj_obs_length/mean": r["obs_len"],
                "verl_tool/traj_actions_length/mean": r["gen_len"],
            }
        )
        ev = {"val-core/tiny/acc/mean@1": "acc"}
    elif s == "searchr1":
        out = {k: v for k, v in _verl_core(r, cfg).items() if k != "actor/entropy"}
        out["actor/entropy_loss"] = r["entropy"]
        out.update(
            {
                "env/number_of_actions/mean": r["turns"],
                "env/number_of_actions/max": r["turns_max"],
                "env/number_of_actions/min": r["turns_min"],
                "env/finish_ratio": r["finished"],
                "env/number_of_valid_action": r["turns"] - r["mtr"] - r["calls"] + r["valid_calls"],
                "env/ratio_of_valid_action": (r["turns"] - r["mtr"] - r["calls"] + r["valid_calls"])
                / r["turns"],
                "env/number_of_valid_search": r["valid_calls"],
            }
        )
        ev = {"val/test_score/tiny": "acc"}
    elif s == "trl":
        out = {
            "loss": r["loss"],
            "grad_norm": r["grad_norm"],
            "learning_rate": r["lr"],
            "num_tokens": r["num_tokens_cum"],
            "completions/mean_length": r["gen_len"],
            "completions/min_length": r["gen_len_min"],
            "completions/max_length": r["gen_len_max"],
            "completions/clipped_ratio": r["trunc"],
        }
        for c in cfg.weights:
            out[f"rewards/{FN[c]}/mean"] = r[f"rewards/{c}"]
            out[f"rewards/{FN[c]}/std"] = r[f"rewards_std/{c}"]
        out.update(
            {
                "reward": r["reward"],
                "reward_std": r["reward_std"],
                "frac_reward_zero_std": r["frac_zero_std"],
                "entropy": r["entropy"],
                "clip_ratio/region_mean": r["clip_frac"],
                "tools/call_frequency": r["calls"],
                "tools/failure_frequency": r["fail_rate"],
            }
        )
        if cfg.beta != 0:
            out["kl"] = r["kl"]
        out = {f"train/{k}": v for k, v in out.items()}
        ev = {"eval/accuracy": "acc"}
    elif s == "nemo":
        out = {
            "loss": r["loss"],
            "grad_norm": r["grad_norm"],
            "lr": r["lr"],
            "reward": r["reward"],
            "advantages/mean": r["adv_mean"],
            "advantages/max": r["adv_max"],
            "advantages/min": r["adv_min"],
            "baseline_reward/pct_mixed": 100 * (1 - r["frac_zero_std"]),
            "kl_penalty": r["kl"] if cfg.beta else 0.0,
            "probs_ratio": r["ratio_mean"],
            "probs_ratio_min": r["ratio_min"],
            "probs_ratio_max": r["ratio_max"],
            "approx_entropy": -r["log_prob"],
            "total_turns": r["turns"] * cfg.batch_prompts * cfg.group,
            "avg_turns_per_sample": r["turns"],
            "max_turns_per_sample": r["turns_max"],
            "max_turns_reached_rate": r["mtr"],
            "natural_termination_rate": r["eos_rate"],
            "truncation_rate": r["trunc"],
            "mean_gen_tokens_per_sample": r["gen_len"],
            "max_gen_tokens_per_sample": r["gen_len_max"],
            "mean_env_tokens_per_sample": r["obs_len"],
            "mean_total_tokens_per_sample": r["len_mean"],
        }
        out = {f"train/{k}": v for k, v in out.items()}
        ev = {"validation/accuracy": "acc"}
    else:
        raise ValueError(s)
    return out, ev


def config_tree(cfg):
    s = cfg.stack
    mt = cfg.max_turns or None
    if s in ("verl", "verltool", "searchr1"):
        c = {
            "algorithm": {
                "adv_estimator": "grpo",
                "norm_adv_by_std_in_grpo": True,
                "use_kl_in_reward": False,
            },
            "actor_rollout_ref": {
                "actor": {
                    "optim": {"lr": cfg.lr},
                    "ppo_epochs": cfg.inner_epochs,
                    "ppo_mini_batch_size": cfg.batch_prompts // cfg.minibatches,
                    "clip_ratio_low": cfg.eps_low,
                    "clip_ratio_high": cfg.eps_high,
                    "grad_clip": cfg.max_grad_norm,
                    "use_kl_loss": True,
                    "kl_loss_coef": cfg.beta,
                    "kl_loss_type": "low_var_kl",
                    "entropy_coeff": 0.0,
                    "loss_agg_mode": "token-mean",
                },
                "rollout": {
                    "n": cfg.group,
                    "temperature": cfg.temperature,
                    "response_length": cfg.max_total,
                    "prompt_length": 9,
                },
            },
            "data": {"train_batch_size": cfg.batch_prompts, "max_response_length": cfg.max_total},
            "trainer": {
                "total_training_steps": cfg.steps,
                "test_freq": cfg.eval_every,
                "experiment_name": cfg.name,
                "seed": cfg.seed,
            },
            "reward_model": {"reward_kwargs": {"weights": dict(cfg.weights)}},
        }
        if s == "verl":
            c["actor_rollout_ref"]["rollout"]["multi_turn"] = {
                "enable": True,
                "max_assistant_turns": mt,
                "max_user_turns": mt,
                "tool_config_path": "lookup_tool_config.yaml",
            }
        elif s == "verltool":
            c["actor_rollout_ref"]["agent"] = {
                "max_turns": mt,
                "mask_observations": cfg.mask_obs,
                "tool_server_url": "http://localhost:5500/get_observation",
                "max_action_length": cfg.max_total,
            }
        else:
            c.update(
                {
                    "max_turns": mt,
                    "do_search": True,
                    "retriever": {"url": "http://127.0.0.1:8000/retrieve", "topk": 1},
                }
            )
        return c
    if s == "trl":
        return {
            "learning_rate": cfg.lr,
            "lr_scheduler_type": "constant",
            "max_steps": cfg.steps,
            "per_device_train_batch_size": cfg.batch_prompts * cfg.group,
            "num_generations": cfg.group,
            "temperature": cfg.temperature,
            "max_completion_length": cfg.max_total,
            "max_tool_calling_iterations": mt,
            "beta": cfg.beta,
            "epsilon": cfg.eps_low,
            "epsilon_high": cfg.eps_high,
            "num_iterations": cfg.inner_epochs,
            "steps_per_generation": cfg.minibatches,
            "max_grad_norm": cfg.max_grad_norm,
            "loss_type": "dapo",
            "scale_rewards": "group",
            "reward_weights": [cfg.weights[c] for c in cfg.weights],
            "reward_funcs": [FN[c] for c in cfg.weights],
            "tools": ["lookup"],
            "logging_steps": 1,
            "eval_steps": cfg.eval_every,
            "seed": cfg.seed,
            "run_name": cfg.name,
        }
    if s == "nemo":
        return {
            "grpo": {
                "num_prompts_per_step": cfg.batch_prompts,
                "num_generations_per_prompt": cfg.group,
                "max_num_steps": cfg.steps,
                "max_rollout_turns": mt if mt else 999999,
                "normalize_rewards": True,
                "val_period": cfg.eval_every,
                "seed": cfg.seed,
            },
            "loss_fn": {
                "reference_policy_kl_penalty": cfg.beta,
                "ratio_clip_min": cfg.eps_low,
                "ratio_clip_max": cfg.eps_high,
                "token_level_loss": True,
            },
            "policy": {
                "optimizer": {"name": "torch.optim.AdamW", "kwargs": {"lr": cfg.lr}},
                "max_grad_norm": cfg.max_grad_norm,
                "max_total_sequence_length": 9 + cfg.max_total,
                "generation": {"temperature": cfg.temperature, "max_new_tokens": cfg.max_total},
            },
            "logger": {
                "wandb_enabled": cfg.fmt == "wandb",
                "tensorboard_enabled": cfg.fmt == "tensorboard",
            },
        }
    raise ValueError(s)


def _cum(rows):
    t, out = 0.0, []
    for r in rows:
        t += r["num_tokens"]
        out.append({**r, "num_tokens_cum": t})
    return out


def write(run_dir: Path, rows, cfg, run_id):
    run_dir = Path(run_dir)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    conf = config_tree(cfg)
    rows = _cum(rows)
    if cfg.fmt == "tensorboard":
        from torch.utils.tensorboard import SummaryWriter

        w = SummaryWriter(log_dir=str(run_dir))
        if cfg.stack == "trl":
            w.add_text("args", json.dumps(conf, indent=2))
        for r in rows:
            m, ev = keys(r, cfg)
            for k, v in m.items():
                w.add_scalar(k, v, r["step"])
            for k, src in ev.items():
                if src in r:
                    w.add_scalar(k, r[src], r["step"])
        w.close()
        path = run_dir
    else:
        os.environ["WANDB_SILENT"] = "true"
        os.environ["WANDB_MODE"] = "offline"
        import wandb

        run = wandb.init(
            mode="offline",
            dir=str(run_dir),
            project=cfg.stack,
            name=cfg.name,
            id=run_id,
            config=conf,
            settings=wandb.Settings(console="off", x_disable_stats=True, x_disable_meta=True),
        )
        if cfg.stack == "trl":
            run.define_metric("train/global_step")
            run.define_metric("*", step_metric="train/global_step", step_sync=True)
        for r in rows:
            m, ev = keys(r, cfg)
            e = {k: r[src] for k, src in ev.items() if src in r}
            if cfg.stack == "trl":
                run.log({**m, "train/global_step": r["step"]})
                if e:
                    run.log({**e, "train/global_step": r["step"]})
            else:
                run.log({**m, **e}, step=r["step"])
        run.finish()
        path = next((run_dir / "wandb").glob(f"offline-run-*-{run_id}"))
    # config the way the stack saves it
    if cfg.stack in ("verl", "verltool", "searchr1") and cfg.fmt == "tensorboard":
        (run_dir / ".hydra").mkdir()
        (run_dir / ".hydra" / "config.yaml").write_text(yaml.safe_dump(conf, sort_keys=False))
    elif cfg.stack == "nemo" and cfg.fmt == "tensorboard":
        (run_dir / "config.yaml").write_text(yaml.safe_dump(conf, sort_keys=False))
    return path
