"""Pre-training of the tiny base policy and a real GRPO loop with per-step metrics.

GRPO here is the textbook one: G samples per prompt, group-normalised advantages
``(r - mean) / (std + eps)``, a PPO clipped-ratio objective against the rollout-time
log-probs (``inner_epochs`` x ``minibatches`` optimizer steps per rollout, so ratios move),
a k3 KL penalty to a frozen reference with coefficient ``beta``, optional gradient clipping,
Adam. Nothing is guarded: a run configured to blow up writes its NaN/inf to the log and, like
a real trainer, dies when it can no longer sample.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from corpus import task
from corpus.model import ModelConfig, TinyPolicy

KMAX = 6
PROMPT_LEN = KMAX + 3  # BOS OP x1..xk SEP, left-padded with PAD


@dataclass
class RunConfig:
    name: str
    seed: int = 0
    # The RL phase's seed (sampled prompts and completions) when it differs from ``seed``, which
    # then makes only the pre-trained base: two RL seeds of one recipe from one checkpoint.
    rl_seed: int | None = None
    framework: str = "trl"  # metric names: "trl" | "verl"
    fmt: str = "csv"  # "tensorboard" | "wandb" | "trainer_state" | "csv"
    intent: str = "healthy"  # what the configuration was meant to induce (not a label)
    what: str = ""  # one line: what was done
    # base model
    d_model: int = 64
    n_layers: int = 2
    pretrain_steps: int = 300
    pretrain_lr: float = 3e-3
    pretrain_ops: tuple[str, ...] = ("copy", "rev", "sum")
    pretrain_ks: tuple[int, ...] = (1, 2, 3, 4)
    habits: dict[str, float] = field(
        default_factory=lambda: {"fill": 0.08, "think": 0.06, "bare": 0.04, "wrong": 0.06}
    )
    # RL task
    ops: tuple[str, ...] = ("sum",)
    ks: tuple[int, ...] = (2,)
    prompt_pool: int = 0  # >0: train on a fixed pool of this many prompts
    weights: dict[str, float] = field(default_factory=lambda: {"correct": 1.0, "format": 0.2})
    # GRPO
    steps: int = 200
    batch_prompts: int = 8
    group: int = 8
    temperature: float = 1.0
    max_new: int = 8
    lr: float = 3e-4
    schedule: str = "constant"  # "constant" | "cosine" | "warmup" | "burst" | "jump"
    warmup: int = 0
    burst_lr: float = 0.0  # "burst": this lr for the first ``warmup`` steps, then ``lr``;
    #                        "jump": ``lr`` for the first ``warmup`` steps, then this one
    beta: float = 0.04
    eps_low: float = 0.2
    eps_high: float = 0.2
    inner_epochs: int = 1
    minibatches: int = 2
    max_grad_norm: float | None = 1.0
    loss_agg: str = "token_mean"  # "token_mean" (DAPO/TRL default) | "seq_mean"
    entropy_coef: float = 0.0
    adv_eps: float = 1e-4
    scale_rewards: bool = True
    dtype: str = "float32"  # "float16": pure fp16 weights + Adam states, no loss scaling
    adam_eps: float = 1e-8
    # eval
    eval_every: int = 5
    n_eval: int = 200
    eval_greedy: bool = False  # False: one sample per prompt at temperature 1 (mean@1)

    def to_dict(self) -> dict:
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, tuple):
                d[k] = list(v)
        if d["rl_seed"] is None:  # the runs made before rl_seed existed keep their manifest
            del d["rl_seed"]
        return d


# --- helpers ---------------------------------------------------------------------------------


def _left_pad(prompts: list[task.Prompt]) -> torch.Tensor:
    rows = [[task.PAD] * (PROMPT_LEN - len(p.tokens)) + p.tokens for p in prompts]
    return torch.tensor(rows, dtype=torch.long)


def pretrain(cfg: RunConfig, model: TinyPolicy, rng: np.random.Generator) -> None:
    opt = torch.optim.Adam(model.parameters(), lr=cfg.pretrain_lr)
    bs = 64
    for _ in range(cfg.pretrain_steps):
        ps = task.sample_prompts(rng, bs, list(cfg.pretrain_ops), list(cfg.pretrain_ks))
        comps = [task.pretrain_completion(rng, p, cfg.habits) for p in ps]
        width = max(len(c) for c in comps)
        ids = torch.full((bs, PROMPT_LEN + width), task.PAD, dtype=torch.long)
        ids[:, :PROMPT_LEN] = _left_pad(ps)
        mask = torch.zeros(bs, width, dtype=torch.bool)
        for i, c in enumerate(comps):
            ids[i, PROMPT_LEN:PROMPT_LEN + len(c)] = torch.tensor(c)
            mask[i, : len(c)] = True
        logits = model(ids[:, :-1])[:, PROMPT_LEN - 1:]
        loss = F.cross_entropy(logits[mask], ids[:, PROMPT_LEN:][mask])
        opt.zero_grad()
        loss.backward()
        opt.step()


@torch.no_grad()
def generate(model: TinyPolicy, prompts: torch.Tensor, max_new: int, temperature: float,
             greedy: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Completions (N, max_new) and their mask (tokens up to and including EOS)."""
    ids = prompts
    n = ids.shape[0]
    done = torch.zeros(n, dtype=torch.bool)
    out = []
    mask = []
    for _ in range(max_new):
        logits = model(ids)[:, -1].float()
        if greedy:
            nxt = logits.argmax(-1)
        else:
            probs = torch.softmax(logits / temperature, dim=-1)
            nxt = torch.multinomial(probs, 1).squeeze(-1)  # raises on NaN/inf, like a trainer
        nxt = torch.where(done, torch.full_like(nxt, task.PAD), nxt)
        mask.append(~done)
        out.append(nxt)
        done = done | (nxt == task.EOS)
        ids = torch.cat([ids, nxt[:, None]], dim=1)
        if bool(done.all()):
            break
    comp = torch.stack(out, dim=1)
    m = torch.stack(mask, dim=1)
    if comp.shape[1] < max_new:
        pad = max_new - comp.shape[1]
        comp = torch.cat([comp, torch.full((n, pad), task.PAD)], dim=1)
        m = torch.cat([m, torch.zeros(n, pad, dtype=torch.bool)], dim=1)
    return comp, m


def token_logprobs(model: TinyPolicy, prompts: torch.Tensor, comp: torch.Tensor,
                   temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log-prob of the completion tokens and per-token entropy (both (N, T))."""
    ids = torch.cat([prompts, comp], dim=1)
    logits = model(ids[:, :-1])[:, PROMPT_LEN - 1:].float() / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, comp[..., None]).squeeze(-1)
    ent = -(logp_all.exp() * logp_all).sum(-1)
    return logp, ent


def _masked_mean(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    return (x * m).sum() / m.sum().clamp(min=1)


def _agg(x: torch.Tensor, m: torch.Tensor, how: str) -> torch.Tensor:
    if how == "token_mean":
        return _masked_mean(x, m)
    if how == "seq_mean":
        return ((x * m).sum(1) / m.sum(1).clamp(min=1)).mean()
    raise ValueError(how)


def _lr_at(cfg: RunConfig, step: int) -> float:
    if cfg.schedule == "constant":
        return cfg.lr
    if cfg.schedule == "warmup":
        return cfg.lr * min(1.0, (step + 1) / max(1, cfg.warmup))
    if cfg.schedule == "burst":
        return cfg.burst_lr if step < cfg.warmup else cfg.lr
    if cfg.schedule == "jump":  # a late change of lr (a scheduler restarted wrongly)
        return cfg.lr if step < cfg.warmup else cfg.burst_lr
    if cfg.schedule == "cosine":
        w = min(1.0, (step + 1) / max(1, cfg.warmup)) if cfg.warmup else 1.0
        return cfg.lr * w * 0.5 * (1 + math.cos(math.pi * step / cfg.steps))
    raise ValueError(cfg.schedule)


def _f(x) -> float:
    return float(x)


# --- the run ---------------------------------------------------------------------------------


def run(cfg: RunConfig, log=None) -> tuple[list[dict], dict]:
    """Train; return per-step metric rows (internal names) and run info."""
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    t0 = time.time()
    mcfg = ModelConfig(vocab=task.VOCAB, d_model=cfg.d_model, n_layers=cfg.n_layers)
    policy = TinyPolicy(mcfg)
    pretrain(cfg, policy, rng)
    if cfg.rl_seed is not None:
        torch.manual_seed(cfg.rl_seed)
        rng = np.random.default_rng(cfg.rl_seed)
    ref = TinyPolicy(mcfg)
    ref.load_state_dict(policy.state_dict())
    ref.requires_grad_(False)
    if cfg.dtype == "float16":
        policy.half()
        ref.half()
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr, eps=cfg.adam_eps)

    eval_rng = np.random.default_rng(10_000 + cfg.seed)
    eval_prompts = task.sample_prompts(eval_rng, cfg.n_eval, list(cfg.ops), list(cfg.ks))
    eval_ids = _left_pad(eval_prompts)
    pool = None
    if cfg.prompt_pool:
        pool = task.sample_prompts(rng, cfg.prompt_pool, list(cfg.ops), list(cfg.ks))

    def evaluate() -> float:
        try:
            comp, m = generate(policy, eval_ids, cfg.max_new, 1.0, greedy=cfg.eval_greedy)
        except RuntimeError:  # NaN weights: nothing can be sampled, so nothing is correct
            return 0.0
        rows = [c[mm].tolist() for c, mm in zip(comp, m)]
        return float(np.mean([task.strict_correct(r, p.answer)
                              for r, p in zip(rows, eval_prompts)]))

    rows: list[dict] = []
    info = {"crashed_at": None, "error": None, "pretrain_eval_acc": evaluate()}
    comps_names = list(cfg.weights)
    n_seq = cfg.batch_prompts * cfg.group
    for step in range(1, cfg.steps + 1):
        lr = _lr_at(cfg, step - 1)
        for g in opt.param_groups:
            g["lr"] = lr
        if pool is not None:
            prompts = [pool[i] for i in rng.integers(len(pool), size=cfg.batch_prompts)]
        else:
            prompts = task.sample_prompts(rng, cfg.batch_prompts, list(cfg.ops), list(cfg.ks))
        prompts = [p for p in prompts for _ in range(cfg.group)]
        pids = _left_pad(prompts)
        try:
            comp, cmask = generate(policy, pids, cfg.max_new, cfg.temperature)
        except RuntimeError as exc:  # NaN/inf probabilities: the trainer dies here
            info["crashed_at"] = step
            info["error"] = f"{type(exc).__name__}: {exc}"
            break
        seqs = [c[mm].tolist() for c, mm in zip(comp, cmask)]
        comp_r = {c: np.zeros(n_seq) for c in comps_names}
        for i, (s, p) in enumerate(zip(seqs, prompts)):
            for c, v in task.reward_components(s, p.answer, cfg.max_new, cfg.weights).items():
                comp_r[c][i] = v
        total = sum(cfg.weights[c] * comp_r[c] for c in comps_names)
        r = torch.tensor(total, dtype=torch.float32).view(cfg.batch_prompts, cfg.group)
        mean_g = r.mean(1, keepdim=True)
        std_g = r.std(1, keepdim=True)
        adv = r - mean_g
        if cfg.scale_rewards:
            adv = adv / (std_g + cfg.adv_eps)
        adv = adv.view(-1)
        zero_std = float((std_g.squeeze(1) < 1e-6).float().mean())

        m = cmask.float()
        with torch.no_grad():
            old_logp, ent = token_logprobs(policy, pids, comp, cfg.temperature)
            ref_logp, _ = token_logprobs(ref, pids, comp, cfg.temperature)
        pos = (adv > 0).float()[:, None] * m
        lengths = cmask.sum(1).float()
        truncated = np.array([task.EOS not in s for s in seqs], dtype=float)

        ratios_min, ratios_max, ratio_sum, ratio_n = math.inf, -math.inf, 0.0, 0.0
        clip_n, clip_lo, clip_hi, losses, pg_losses, gnorms, kls = 0.0, 0.0, 0.0, [], [], [], []
        for _ in range(cfg.inner_epochs):
            perm = torch.randperm(n_seq)
            for mb in perm.chunk(cfg.minibatches):
                logp, ent_mb = token_logprobs(policy, pids[mb], comp[mb], cfg.temperature)
                mm = m[mb]
                a = adv[mb][:, None]
                ratio = torch.exp(logp - old_logp[mb])
                clipped = torch.clamp(ratio, 1 - cfg.eps_low, 1 + cfg.eps_high)
                pg = -torch.min(ratio * a, clipped * a)
                d = ref_logp[mb] - logp
                k3 = torch.exp(d) - d - 1
                per_tok = pg + cfg.beta * k3 - cfg.entropy_coef * ent_mb
                loss = _agg(per_tok, mm, cfg.loss_agg)
                opt.zero_grad()
                loss.backward()
                gn = torch.nn.utils.clip_grad_norm_(
                    policy.parameters(),
                    cfg.max_grad_norm if cfg.max_grad_norm is not None else math.inf,
                )
                opt.step()
                with torch.no_grad():
                    sel = mm.bool()
                    rv = ratio.detach()[sel]
                    if rv.numel():
                        ratios_min = min(ratios_min, _f(rv.min()))
                        ratios_max = max(ratios_max, _f(rv.max()))
                        ratio_sum += _f(rv.sum())
                        ratio_n += rv.numel()
                    lo = (ratio < 1 - cfg.eps_low) & (a < 0)
                    hi = (ratio > 1 + cfg.eps_high) & (a > 0)
                    clip_n += _f(((lo | hi) & sel).sum())
                    clip_lo += _f((lo & sel).sum())
                    clip_hi += _f((hi & sel).sum())
                    pg_losses.append(_f(_agg(pg.detach(), mm, cfg.loss_agg)))
                    kls.append(_f(_masked_mean(k3.detach(), mm)))
                losses.append(_f(loss.detach()))
                gnorms.append(_f(gn))

        row = {
            "step": step,
            "reward": float(total.mean()),
            "reward_std": float(total.std(ddof=1)),
            **{f"rewards/{c}": float(comp_r[c].mean()) for c in comps_names},
            **{f"rewards_std/{c}": float(comp_r[c].std(ddof=1)) for c in comps_names},
            "reward_max": float(total.max()),
            "reward_min": float(total.min()),
            "adv_mean": _f(adv.mean()),
            "adv_max": _f(adv.max()),
            "adv_min": _f(adv.min()),
            "frac_zero_std": zero_std,
            "entropy": _f(_masked_mean(ent, m)),
            "kl": float(np.mean(kls)),
            "log_prob": _f(_masked_mean(old_logp, m)),
            "ratio_min": ratios_min if ratio_n else math.nan,
            "ratio_max": ratios_max if ratio_n else math.nan,
            "ratio_mean": ratio_sum / ratio_n if ratio_n else math.nan,
            "clip_frac": clip_n / ratio_n if ratio_n else math.nan,
            "clip_frac_low": clip_lo / ratio_n if ratio_n else math.nan,
            "clip_frac_high": clip_hi / ratio_n if ratio_n else math.nan,
            "grad_norm": float(np.mean(gnorms)),
            "lr": lr,
            "loss": float(np.mean(losses)),
            "pg_loss": float(np.mean(pg_losses)),
            "len_mean": _f(lengths.mean()),
            "len_max": _f(lengths.max()),
            "len_min": _f(lengths.min()),
            "num_tokens": _f(lengths.sum()) + n_seq * PROMPT_LEN,
            "trunc": float(truncated.mean()),
        }
        if pos.sum() > 0:  # no positive-advantage token when every group has zero std
            row["log_prob_pos"] = _f(_masked_mean(old_logp, pos))
        if step % cfg.eval_every == 0 or step == 1:
            row["acc"] = evaluate()
        rows.append(row)
        if log is not None and (step % 25 == 0 or step == 1):
            log(f"[{cfg.name}] step {step} r={row['reward']:.3f} "
                f"H={row['entropy']:.3f} kl={row['kl']:.3f} lp={row['log_prob']:.3f} "
                f"gn={row['grad_norm']:.2f} len={row['len_mean']:.1f} "
                f"acc={row.get('acc', float('nan')):.3f}")
    info["seconds"] = round(time.time() - t0, 1)
    info["steps_logged"] = len(rows)
    return rows, info
