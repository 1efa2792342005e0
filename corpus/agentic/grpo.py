"""Tool-integrated GRPO on the tiny task (real gradients, real sampled multi-turn rollouts).

The policy may emit CALL (a "lookup" tool). The environment then appends tool-output tokens
``OBS y1..ym`` (the answer digits; ``OBS ERR`` when the tool fails) and the policy continues in
a new assistant turn. An episode ends at EOS, when the context budget ``max_total`` is used up,
or when a CALL would open assistant turn ``max_turns + 1`` (max_turns_reached, no answer).
Tool-output tokens are masked out of the loss unless ``mask_obs`` is False.
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

CALL, OBS, ERR = 20, 21, 22
VOCAB = 23
KMAX = 6
PROMPT_LEN = KMAX + 3
MAXPOS = 40


@dataclass
class ACfg:
    name: str
    seed: int = 0
    stack: str = "verl"  # verl | trl | nemo | searchr1 | verltool
    fmt: str = "tensorboard"
    pretrain_steps: int = 300
    p_tool_demo: float = 0.2
    ops: tuple = ("sum", "rev")
    ks: tuple = (3,)
    weights: dict = field(default_factory=lambda: {"correct": 1.0, "format": 0.2})
    steps: int = 150
    batch_prompts: int = 8
    group: int = 8
    temperature: float = 1.0
    max_total: int = 16  # multi-turn context budget (response tokens incl. tool output)
    max_turns: int = 4  # assistant turns; 0 = no cap
    tool_fail_rate: float = 0.1
    mask_obs: bool = True
    lr: float = 3e-4
    beta: float = 0.04
    eps_low: float = 0.2
    eps_high: float = 0.2
    inner_epochs: int = 1
    minibatches: int = 2
    max_grad_norm: float | None = 1.0
    eval_every: int = 5
    n_eval: int = 200


def left_pad(ps):
    return torch.tensor([[task.PAD] * (PROMPT_LEN - len(p.tokens)) + p.tokens for p in ps])


def pretrain(cfg, model, rng):
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    habits = {"fill": 0.08, "think": 0.06, "bare": 0.04, "wrong": 0.06}
    for _ in range(cfg.pretrain_steps):
        ps = task.sample_prompts(rng, 64, ["copy", "rev", "sum"], [1, 2, 3, 4])
        comps, lmask = [], []
        for p in ps:
            u = rng.random()
            if u < cfg.p_tool_demo:  # tool demo: CALL OBS y.. ANS y.. EOS (OBS y.. not trained)
                ncall = 2 if rng.random() < 0.15 else 1
                c, lm = [], []
                for _ in range(ncall):
                    obs = [OBS, *p.answer]
                    c += [CALL, *obs]
                    lm += [1] + [0] * len(obs)
                c += [task.ANS, *p.answer, task.EOS]
                lm += [1] * (len(p.answer) + 2)
            else:
                c = task.pretrain_completion(rng, p, habits)
                lm = [1] * len(c)
            comps.append(c)
            lmask.append(lm)
        w = max(len(c) for c in comps)
        ids = torch.full((64, PROMPT_LEN + w), task.PAD, dtype=torch.long)
        ids[:, :PROMPT_LEN] = left_pad(ps)
        mask = torch.zeros(64, w, dtype=torch.bool)
        for i, (c, lm) in enumerate(zip(comps, lmask)):
            ids[i, PROMPT_LEN : PROMPT_LEN + len(c)] = torch.tensor(c)
            mask[i, : len(c)] = torch.tensor(lm, dtype=torch.bool)
        logits = model(ids[:, :-1])[:, PROMPT_LEN - 1 :]
        loss = F.cross_entropy(logits[mask], ids[:, PROMPT_LEN:][mask])
        opt.zero_grad()
        loss.backward()
        opt.step()


@torch.no_grad()
def rollout(cfg, model, prompts, rng, temperature):
    """Multi-turn episodes. Returns comp (N,T), gen mask, obs mask, per-episode stats."""
    n = len(prompts)
    T = cfg.max_total
    ids = left_pad(prompts)
    comp = torch.full((n, T), task.PAD, dtype=torch.long)
    gen = torch.zeros(n, T, dtype=torch.bool)
    obs = torch.zeros(n, T, dtype=torch.bool)
    queue = [[] for _ in range(n)]
    done = [False] * n
    calls = np.zeros(n)
    fails = np.zeros(n)
    ended_eos = np.zeros(n)
    mtr = np.zeros(n)
    tool_sec = np.zeros(n)
    for t in range(T):
        logits = model(ids)[:, -1].float()
        probs = torch.softmax(logits / temperature, dim=-1)
        samp = torch.multinomial(probs, 1).squeeze(-1)
        nxt = torch.full((n,), task.PAD, dtype=torch.long)
        for i in range(n):
            if done[i]:
                continue
            if queue[i]:
                nxt[i] = queue[i].pop(0)
                obs[i, t] = True
                continue
            tok = int(samp[i])
            nxt[i] = tok
            gen[i, t] = True
            if tok == task.EOS:
                done[i] = True
                ended_eos[i] = 1
            elif tok == CALL:
                if cfg.max_turns and calls[i] + 1 >= cfg.max_turns:  # would open turn max+1
                    done[i] = True
                    mtr[i] = 1
                else:
                    calls[i] += 1
                    t0 = time.perf_counter()
                    if rng.random() < cfg.tool_fail_rate:
                        fails[i] += 1
                        queue[i] = [OBS, ERR]
                    else:
                        queue[i] = [OBS, *prompts[i].answer]
                    tool_sec[i] += time.perf_counter() - t0
        comp[:, t] = nxt
        ids = torch.cat([ids, nxt[:, None]], dim=1)
        if all(done):
            break
    seqs = []
    for i in range(n):
        seqs.append([int(x) for x, g, o in zip(comp[i], gen[i], obs[i]) if g or o])
    st = dict(
        calls=calls,
        fails=fails,
        eos=ended_eos,
        mtr=mtr,
        tool_sec=tool_sec,
        gen_len=gen.sum(1).numpy().astype(float),
        obs_len=obs.sum(1).numpy().astype(float),
    )
    return comp, gen, obs, seqs, st


def final_segment(seq):
    """Tokens after the last tool output (the final assistant turn)."""
    last = -1
    for j, t in enumerate(seq):
        if t == OBS:
            last = j
    if last < 0:
        return seq
    j = last + 1
    while j < len(seq) and (seq[j] <= 9 or seq[j] == ERR):
        j += 1
    return seq[j:]


def rewards(seq, p, st_i, cfg):
    seg = final_segment(seq)
    out = {}
    for c in cfg.weights:
        if c == "correct":
            out[c] = task.strict_correct(seg, p.answer)
        elif c == "format":
            out[c] = task.strict_format(seg)
        elif c == "tool_call":  # pays per call
            out[c] = float(st_i["calls"])
        elif c == "call_format":  # pays a well-formed call (CALL then a new turn)
            out[c] = float(st_i["calls"] > 0)
        else:
            raise ValueError(c)
    return out


def token_logprobs(model, pids, comp, temperature):
    ids = torch.cat([pids, comp], dim=1)
    logits = model(ids[:, :-1])[:, PROMPT_LEN - 1 :].float() / temperature
    lp = torch.log_softmax(logits, -1)
    return lp.gather(-1, comp[..., None]).squeeze(-1), -(lp.exp() * lp).sum(-1)


def mmean(x, m):
    return (x * m).sum() / m.sum().clamp(min=1)


def run(cfg: ACfg, log=print):
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    trng = np.random.default_rng(cfg.seed + 77)
    t00 = time.time()
    mc = ModelConfig(vocab=VOCAB, max_len=MAXPOS)
    policy = TinyPolicy(mc)
    pretrain(cfg, policy, rng)
    ref = TinyPolicy(mc)
    ref.load_state_dict(policy.state_dict())
    ref.requires_grad_(False)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    erng = np.random.default_rng(10_000 + cfg.seed)
    eval_ps = task.sample_prompts(erng, cfg.n_eval, list(cfg.ops), list(cfg.ks))

    def evaluate():
        try:
            _, _, _, seqs, st = rollout(cfg, policy, eval_ps, np.random.default_rng(5), 1.0)
        except RuntimeError:
            return 0.0, 0.0
        acc = np.mean(
            [task.strict_correct(final_segment(s), p.answer) for s, p in zip(seqs, eval_ps)]
        )
        return float(acc), float(st["calls"].mean())

    rows = []
    info = {"crashed_at": None, "pre_acc": evaluate()}
    N = cfg.batch_prompts * cfg.group
    names = list(cfg.weights)
    for step in range(1, cfg.steps + 1):
        ps = task.sample_prompts(rng, cfg.batch_prompts, list(cfg.ops), list(cfg.ks))
        ps = [p for p in ps for _ in range(cfg.group)]
        pids = left_pad(ps)
        try:
            comp, gen, obs, seqs, st = rollout(cfg, policy, ps, trng, cfg.temperature)
        except RuntimeError as e:
            info["crashed_at"] = step
            info["error"] = str(e)
            break
        cr = {c: np.zeros(N) for c in names}
        for i in range(N):
            for c, v in rewards(seqs[i], ps[i], {k: st[k][i] for k in st}, cfg).items():
                cr[c][i] = v
        total = sum(cfg.weights[c] * cr[c] for c in names)
        r = torch.tensor(total, dtype=torch.float32).view(cfg.batch_prompts, cfg.group)
        std_g = r.std(1, keepdim=True)
        adv = ((r - r.mean(1, keepdim=True)) / (std_g + 1e-4)).view(-1)
        zero_std = float((std_g.squeeze(1) < 1e-6).float().mean())
        lm = (gen | obs) if not cfg.mask_obs else gen
        m = lm.float()
        with torch.no_grad():
            old_lp, ent = token_logprobs(policy, pids, comp, cfg.temperature)
            ref_lp, _ = token_logprobs(ref, pids, comp, cfg.temperature)
        rmin, rmax, rsum, rn, clip_n = math.inf, -math.inf, 0.0, 0.0, 0.0
        losses, pgl, gns, kls = [], [], [], []
        for _ in range(cfg.inner_epochs):
            for mb in torch.randperm(N).chunk(cfg.minibatches):
                lp, _ = token_logprobs(policy, pids[mb], comp[mb], cfg.temperature)
                mm = m[mb]
                a = adv[mb][:, None]
                ratio = torch.exp(lp - old_lp[mb])
                pg = -torch.min(
                    ratio * a, torch.clamp(ratio, 1 - cfg.eps_low, 1 + cfg.eps_high) * a
                )
                d = ref_lp[mb] - lp
                k3 = torch.exp(d) - d - 1
                loss = mmean(pg + cfg.beta * k3, mm)
                opt.zero_grad()
                loss.backward()
                gn = torch.nn.utils.clip_grad_norm_(
                    policy.parameters(), cfg.max_grad_norm or math.inf
                )
                opt.step()
                with torch.no_grad():
                    sel = mm.bool()
                    rv = ratio.detach()[sel]
                    if rv.numel():
                        rmin, rmax = min(rmin, float(rv.min())), max(rmax, float(rv.max()))
                        rsum += float(rv.sum())
                        rn += rv.numel()
                    lo = (ratio < 1 - cfg.eps_low) & (a < 0)
                    hi = (ratio > 1 + cfg.eps_high) & (a > 0)
                    clip_n += float(((lo | hi) & sel).sum())
                    pgl.append(float(mmean(pg.detach(), mm)))
                    kls.append(float(mmean(k3.detach(), mm)))
                losses.append(float(loss.detach()))
                gns.append(float(gn))
        gm = gen.float()
        resp_len = (gen | obs).sum(1).float()
        valid_call = st["calls"] - st["fails"]
        row = dict(
            step=step,
            reward=float(total.mean()),
            reward_std=float(total.std(ddof=1)),
            reward_max=float(total.max()),
            reward_min=float(total.min()),
            **{f"rewards/{c}": float(cr[c].mean()) for c in names},
            **{f"rewards_std/{c}": float(cr[c].std(ddof=1)) for c in names},
            adv_mean=float(adv.mean()),
            adv_max=float(adv.max()),
            adv_min=float(adv.min()),
            frac_zero_std=zero_std,
            entropy=float(mmean(ent, m)),
            kl=float(np.mean(kls)),
            log_prob=float(mmean(old_lp, m)),
            log_prob_gen=float(mmean(old_lp, gm)),
            ratio_min=rmin,
            ratio_max=rmax,
            ratio_mean=rsum / max(rn, 1),
            clip_frac=clip_n / max(rn, 1),
            grad_norm=float(np.mean(gns)),
            lr=cfg.lr,
            loss=float(np.mean(losses)),
            pg_loss=float(np.mean(pgl)),
            len_mean=float(resp_len.mean()),
            len_max=float(resp_len.max()),
            len_min=float(resp_len.min()),
            gen_len=float(st["gen_len"].mean()),
            gen_len_max=float(st["gen_len"].max()),
            gen_len_min=float(st["gen_len"].min()),
            obs_len=float(st["obs_len"].mean()),
            trunc=float(np.mean((st["eos"] == 0) & (st["mtr"] == 0))),
            clip_len=float(np.mean(resp_len.numpy() >= cfg.max_total)),
            calls=float(st["calls"].mean()),
            calls_max=float(st["calls"].max()),
            calls_min=float(st["calls"].min()),
            calls_total=float(st["calls"].sum()),
            fail_rate=float(st["fails"].sum() / max(st["calls"].sum(), 1)),
            valid_calls=float(valid_call.mean()),
            # assistant turns = calls executed + 1 (the final one, or the one cut by the cap)
            turns=float((st["calls"] + 1).mean()),
            turns_max=float((st["calls"] + 1).max()),
            turns_min=float((st["calls"] + 1).min()),
            mtr=float(st["mtr"].mean()),
            eos_rate=float(st["eos"].mean()),
            finished=float(st["eos"].mean()),
            tool_sec=float(st["tool_sec"].mean()),
            tool_sec_max=float(st["tool_sec"].max()),
            tool_sec_min=float(st["tool_sec"].min()),
            num_tokens=float(resp_len.sum()) + N * PROMPT_LEN,
        )
        if step % cfg.eval_every == 0 or step == 1:
            row["acc"], row["eval_calls"] = evaluate()
        rows.append(row)
        if step % 25 == 0 or step == 1:
            log(
                f"[{cfg.name}] {step} r={row['reward']:.3f} H={row['entropy']:.3f} "
                f"kl={row['kl']:.4f} lp={row['log_prob']:.3f} gn={row['grad_norm']:.2f} "
                f"calls={row['calls']:.2f} fail={row['fail_rate']:.2f} mtr={row['mtr']:.2f} "
                f"tr={row['trunc']:.2f} zs={zero_std:.2f} acc={row.get('acc', float('nan')):.3f}"
            )
    info["seconds"] = round(time.time() - t00, 1)
    info["steps"] = len(rows)
    return rows, info


def to_dict(cfg):
    d = asdict(cfg)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}
