"""Label the corpus runs from their logs, by the rules of corpus/LABELING.md.

    python -m corpus.label --out tests/fixtures/corpus

Reads each run back from its written files (TensorBoard events, wandb ``.wandb``,
``trainer_state.json`` or CSV), maps the framework keys back to a few series, applies the
rules and writes ``labels.json``. It knows nothing of the configurations' intent beyond
copying it into the output for reference.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

import numpy as np

# --- reading the logs back ------------------------------------------------------------------


def read_csv(path: Path) -> dict[str, dict[int, float]]:
    series: dict[str, dict[int, float]] = {}
    with path.open() as f:
        for row in csv.DictReader(f):
            step = int(row.pop("step"))
            for k, v in row.items():
                if v != "":
                    series.setdefault(k, {})[step] = float(v)
    return series


def read_trainer_state(path: Path) -> dict[str, dict[int, float]]:
    state = json.loads(path.read_text())
    series: dict[str, dict[int, float]] = {}
    for entry in state["log_history"]:
        step = int(entry["step"])
        for k, v in entry.items():
            if k in ("step", "epoch") or not isinstance(v, (int, float)):
                continue
            series.setdefault(k, {})[step] = float(v)
    return series


def read_tensorboard(path: Path) -> dict[str, dict[int, float]]:
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(path), size_guidance={"scalars": 0})
    acc.Reload()
    series: dict[str, dict[int, float]] = {}
    for tag in acc.Tags()["scalars"]:
        series[tag] = {e.step: float(e.value) for e in acc.Scalars(tag)}
    return series


def _wandb_records(path: Path):
    """Yield the protobuf payloads of a ``.wandb`` file (wandb's LevelDB-log framing: a 7-byte
    file header ``:W&B`` 0xBEE1 v0, then 32 KiB blocks of records ``<crc32 u32><len u16>
    <type u8><data>``; type 1 = full, 2/3/4 = first/middle/last fragment)."""
    import struct

    block, hdr = 32768, 7
    buf = path.read_bytes()
    ident, magic, version = struct.unpack("<4sHB", buf[:hdr])
    if ident != b":W&B" or magic != 0xBEE1 or version != 0:
        raise ValueError(f"{path}: not a wandb datastore file")
    i, parts = hdr, []
    while i + hdr <= len(buf):
        left = block - i % block
        if left < hdr:
            i += left
            continue
        _crc, length, kind = struct.unpack("<IHB", buf[i:i + hdr])
        data = buf[i + hdr:i + hdr + length]
        i += hdr + length
        if kind == 0 and length == 0:
            continue
        if kind == 1:
            yield data
        elif kind == 2:
            parts = [data]
        elif kind == 3:
            parts.append(data)
        elif kind == 4:
            parts.append(data)
            yield b"".join(parts)
            parts = []


def read_wandb(path: Path) -> dict[str, dict[int, float]]:
    from wandb.proto import wandb_internal_pb2

    (log,) = path.glob("run-*.wandb")
    series: dict[str, dict[int, float]] = {}
    for data in _wandb_records(log):
        rec = wandb_internal_pb2.Record()
        rec.ParseFromString(data)
        if rec.WhichOneof("record_type") != "history":
            continue
        items = {}
        for it in rec.history.item:
            key = it.key or "/".join(it.nested_key)
            items[key] = json.loads(it.value_json)
        step = items.get("train/global_step", items.get("_step"))
        if step is None and rec.history.HasField("step"):
            step = rec.history.step.num
        if step is None:
            continue
        for k, v in items.items():
            if k.startswith("_") or k == "train/global_step":
                continue
            if isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                series.setdefault(k, {})[int(step)] = float(v)
            elif isinstance(v, str) and v.lower() in ("nan", "infinity", "-infinity", "inf",
                                                        "-inf"):
                series.setdefault(k, {})[int(step)] = float(v.lower().replace("inity", ""))
    return series


READERS = {"csv": read_csv, "trainer_state": read_trainer_state,
           "tensorboard": read_tensorboard, "wandb": read_wandb}

# framework key (after dropping TRL's ``train/``) -> series name used by the rules
KEYMAP = {
    "reward": "R", "critic/score/mean": "R",
    "entropy": "H", "actor/entropy": "H",
    "kl": "KL", "actor/kl_loss": "KL",
    "log_prob_mean": "LP", "rollout/old_log_prob": "LP",
    "grad_norm": "G", "actor/grad_norm": "G",
    "frac_reward_zero_std": "Z", "zero_std_group_ratio": "Z",
    "completions/mean_length": "L", "response_length/mean": "L",
    "actor/ratio_max": "ratio_max", "actor/ratio_min": "ratio_min",
    "eval/accuracy": "A", "eval_accuracy": "A", "val-core/tiny/acc/mean@1": "A",
}


def canonical(series: dict[str, dict[int, float]]) -> dict:
    out: dict = {"components": {}}
    for key, s in series.items():
        k = key[len("train/"):] if key.startswith("train/") else key
        if k.startswith("rewards/") and k.endswith("/mean"):
            out["components"][k.split("/")[1]] = s
        elif k in KEYMAP:
            out[KEYMAP[k]] = s
    out["train_keys"] = sorted(k for k in series if not k.startswith(("eval", "val-")))
    out["all"] = series
    return out


# --- the rules ---------------------------------------------------------------------------------


def _arr(s: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    steps = np.array(sorted(s), dtype=int)
    return steps, np.array([s[i] for i in steps], dtype=float)


def roll(x: np.ndarray, k: int, fn=np.mean) -> np.ndarray:
    return np.array([fn(x[max(0, i - k + 1): i + 1]) for i in range(len(x))])


def first20(x: np.ndarray) -> float:
    return float(np.mean(x[: max(1, int(round(0.2 * len(x))))]))


def last20(x: np.ndarray) -> float:
    return float(np.mean(x[-max(1, int(round(0.2 * len(x)))):]))


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    n = len(x)
    if n < 3:
        return 0.0
    s = 0.0
    for i in range(n - 1):
        s += float(np.sum(np.sign(x[i + 1:] - x[i]) * np.sign(y[i + 1:] - y[i])))
    return s / (n * (n - 1) / 2)


def consecutive(mask: np.ndarray, n: int) -> int | None:
    run = 0
    for i, m in enumerate(mask):
        run = run + 1 if m else 0
        if run >= n:
            return i - n + 1
    return None


def accuracy(c: dict) -> tuple[np.ndarray, np.ndarray] | None:
    if "A" not in c:
        return None
    steps, a = _arr(c["A"])
    return steps, roll(a, 3)


def accuracy_collapse_step(c: dict) -> int | None:
    acc = accuracy(c)
    if acc is None:
        return None
    steps, a = acc
    peak = int(np.argmax(a))
    half = 0.5 * a[peak]
    below = a < half
    for i in range(peak + 1, len(a)):
        if below[i:].all():
            return int(steps[i])
    return None


def label(c: dict) -> dict:
    modes: dict[str, dict] = {}

    # numerical failure
    first_bad = None
    for key in c["train_keys"]:
        for step, v in c["all"][key].items():
            if not math.isfinite(v) and (first_bad is None or step < first_bad[0]):
                first_bad = (step, key, v)
    if first_bad:
        modes["numerical_failure"] = {"step": first_bad[0],
                                      "evidence": f"{first_bad[1]} = {first_bad[2]}"}

    if "G" in c:
        steps, g = _arr(c["G"])
        g0 = float(np.nanmedian(g[:20]))
        thr = max(10 * g0, 1.0)
        for i in range(20, len(g)):
            if not math.isnan(g[i]) and g[i] >= thr:
                modes["grad_explosion"] = {
                    "step": int(steps[i]),
                    "evidence": f"grad_norm {g[i]:.3g} >= max(10 x median of first 20 "
                                f"= {10 * g0:.3g}, 1.0)"}
                break

    if "H" in c:
        steps, h = _arr(c["H"])
        h0 = float(np.median(h[:5]))
        rh = roll(h, 10)
        idx = np.nonzero(rh < 0.1 * h0)[0]
        if len(idx):
            i = int(idx[0])
            modes["entropy_collapse"] = {
                "step": int(steps[i]),
                "evidence": f"roll10 entropy {rh[i]:.4f} < 0.1 x H0 ({h0:.3f})"}
        up = max(1.5 * h0, h0 + 0.3)
        idx = np.nonzero(rh >= up)[0]
        if len(idx):
            i = int(idx[0])
            modes["entropy_blowup"] = {
                "step": int(steps[i]),
                "evidence": f"roll10 entropy {rh[i]:.3f} >= {up:.3f} (H0 {h0:.3f})"}

    if "Z" in c:
        steps, z = _arr(c["Z"])
        rz = roll(z, 10)
        idx = np.nonzero(rz >= 0.85)[0]
        if len(idx):
            end = int(idx[0])
            i = max(0, end - 9)
            modes["advantage_collapse"] = {
                "step": int(steps[i]),
                "evidence": f"mean zero-std group fraction {rz[end]:.2f} >= 0.85 over steps "
                            f"{int(steps[i])}-{int(steps[end])} (last 20 %: "
                            f"{last20(z):.2f})"}

    if "KL" in c:
        steps, kl = _arr(c["KL"])
        rk = roll(kl, 10, np.median)
        i = consecutive(rk >= 1.0, 20)
        if i is not None:
            top = float(np.nanmax(rk))
            band = "0.5-5" if top < 5 else ("5-20" if top < 20 else ">20")
            modes["kl_drift"] = {
                "step": int(steps[i]), "band": band,
                "evidence": f"rolling-10 median KL >= 1.0 for 20 steps; max {top:.3g}"}

    if "LP" in c:
        steps, lp = _arr(c["LP"])
        lp0 = float(np.mean(lp[:10]))
        bound = lp0 - 0.3 * abs(lp0)
        r20 = roll(lp, 20)
        ok = r20 <= bound
        if ok[-1]:
            i = len(ok) - 1
            while i > 0 and ok[i - 1]:
                i -= 1
            tau = kendall_tau(steps[: i + 1].astype(float), lp[: i + 1])
            if tau <= -0.3:
                modes["likelihood_displacement"] = {
                    "step": int(steps[i]),
                    "evidence": f"roll20 log-prob {r20[i]:.3f} <= {bound:.3f} "
                                f"(LP0 {lp0:.3f}) to the end; Kendall tau {tau:.2f}"}

    if "ratio_max" in c and "ratio_min" in c:
        steps, rmax = _arr(c["ratio_max"])
        _, rmin = _arr(c["ratio_min"])
        bad = (rmax > 3) | (rmin < 0.3)
        for i in range(len(bad)):
            win = bad[i:i + 10]
            if len(win) == 10 and win.sum() >= 5:
                j = i + int(np.argmax(win))
                modes["ratio_instability"] = {
                    "step": int(steps[j]),
                    "evidence": f"{int(win.sum())}/10 steps with ratio_max > 3 or "
                                f"ratio_min < 0.3 (max {np.nanmax(rmax):.3g}, "
                                f"min {np.nanmin(rmin):.3g})"}
                break

    _second_amendment(c, modes)

    acc = accuracy(c)
    collapse = accuracy_collapse_step(c)
    acc_collapsed = acc is not None and last20(acc[1]) < 0.5 * float(np.max(acc[1]))

    if "R" in c and acc is not None:
        steps, r = _arr(c["R"])
        rr = roll(r, 10)
        if acc_collapsed and last20(rr) > first20(rr) + 0.05 and collapse is not None:
            modes["reward_hacking"] = {
                "step": collapse,
                "evidence": f"train reward {first20(rr):.3f} -> {last20(rr):.3f} while "
                            f"held-out accuracy fell from a peak {np.max(acc[1]):.3f} to "
                            f"{last20(acc[1]):.3f}"}
        # reward over-fit: rises then falls
        n = len(rr)
        lo, hi = int(0.1 * n), max(int(0.1 * n) + 1, int(0.9 * n))
        if n >= 20:
            p_i = lo + int(np.argmax(rr[lo:hi]))
            p = float(rr[p_i])
            r0 = float(np.mean(r[:10]))
            rise = p - r0
            if rise >= 0.1 and last20(rr) <= p - 0.5 * rise:
                j = p_i + int(np.argmax(rr[p_i:] <= p - 0.5 * rise))
                modes["reward_overfit"] = {
                    "step": int(steps[j]),
                    "evidence": f"train reward rose {r0:.3f} -> {p:.3f} (step "
                                f"{int(steps[p_i])}) then fell to {last20(rr):.3f}"}

    if "L" in c and acc is not None:
        steps, length = _arr(c["L"])
        l0 = float(np.mean(length[:10]))
        rl = roll(length, 10)
        thr = max(1.5 * l0, l0 + 2)
        idx = np.nonzero(rl >= thr)[0]
        if len(idx) and last20(acc[1]) <= first20(acc[1]):
            i = int(idx[0])
            modes["length_hacking"] = {
                "step": int(steps[i]),
                "evidence": f"roll10 length {rl[i]:.2f} >= {thr:.2f} (L0 {l0:.2f}); accuracy "
                            f"{first20(acc[1]):.3f} -> {last20(acc[1]):.3f}"}

    comps = c["components"]
    if comps and acc_collapsed:
        common = sorted(set.intersection(*(set(s) for s in comps.values())))
        total = np.zeros(len(common))
        rolled = {}
        for name, s in comps.items():
            v = roll(np.array([s[i] for i in common]), 10)
            rolled[name] = v
            total = total + v
        for name, v in rolled.items():
            if "format" not in name:
                continue
            share = np.divide(v, total, out=np.zeros_like(v), where=total > 0)
            if last20(share) - first20(share) >= 0.2:
                i = int(np.argmax(share >= first20(share) + 0.2))
                modes["format_gaming"] = {
                    "step": int(common[i]),
                    "evidence": f"{name} share of reward {first20(share):.2f} -> "
                                f"{last20(share):.2f} while accuracy collapsed"}
                break

    healthy = (not modes and acc is not None and last20(acc[1]) >= first20(acc[1])
               and float(np.max(acc[1])) >= 0.05)
    n_steps = max((len(s) for k, s in c["all"].items() if k in c["train_keys"]), default=0)
    summary = {}
    if acc is not None:
        summary["accuracy_first20"] = round(first20(acc[1]), 3)
        summary["accuracy_last20"] = round(last20(acc[1]), 3)
        summary["accuracy_peak"] = round(float(np.max(acc[1])), 3)
    return {"modes": dict(sorted(modes.items(), key=lambda kv: kv[1]["step"])),
            "healthy": healthy, "accuracy_collapse_step": collapse, "summary": summary,
            "too_short": n_steps < 10}


def _keep_earlier(modes: dict[str, dict], mode: str, entry: dict) -> None:
    if mode not in modes or entry["step"] < modes[mode]["step"]:
        modes[mode] = {**modes.get(mode, {}), **entry}


def rollmed(x: np.ndarray, k: int) -> np.ndarray:
    """Centred rolling median of ``k`` points (shrinking at the ends)."""
    h = k // 2
    return np.array([np.median(x[max(0, i - h): i + h + 1]) for i in range(len(x))])


def _fall(x: np.ndarray, amount: float, within: int = 5, held: int = 5) -> int | None:
    """First index where the 3-point rolling median starts a fall of ``amount`` within
    ``within`` steps from a level held (within half the fall) over the ``held`` before."""
    m = rollmed(x, 3)
    for i in range(len(m) - 1):
        ahead = m[i + 1: i + 1 + within]
        if len(ahead) and m[i] - ahead.min() >= amount and (
                np.ptp(x[max(0, i - held + 1): i + 1]) <= amount / 2):
            return i
    return None


def _second_amendment(c: dict, modes: dict[str, dict]) -> None:
    """The rules of LABELING.md's second amendment (issue 12)."""
    if "KL" in c:
        steps, kl = _arr(c["KL"])
        idx = np.nonzero(kl > 10)[0]
        if len(idx):
            top = float(np.nanmax(kl))
            band = "0.5-5" if top < 5 else ("5-20" if top < 20 else ">20")
            _keep_earlier(modes, "kl_drift", {
                "step": int(steps[idx[0]]), "band": band,
                "evidence": f"KL {kl[idx[0]]:.3g} > 10 at step {int(steps[idx[0]])}; max "
                            f"{top:.3g}"})
    if "G" in c:
        steps, g = _arr(c["G"])
        med = float(np.nanmedian(g))
        i = consecutive((g >= 10 * med) & (g >= 1.0), 3)
        if i is not None:
            _keep_earlier(modes, "grad_explosion", {
                "step": int(steps[i]),
                "evidence": f"grad_norm >= max(10 x the run's median {med:.3g}, 1.0) on 3 "
                            f"consecutive steps from {int(steps[i])}"})
    if "H" in c:
        steps, h = _arr(c["H"])
        idx = np.nonzero(rollmed(h, 5) < 0.02)[0]
        if len(idx):
            _keep_earlier(modes, "entropy_collapse", {
                "step": int(steps[idx[0]]),
                "evidence": f"rolling-5 median entropy below 0.02 nats from step "
                            f"{int(steps[idx[0]])}"})
    if "G" in c and "R" in c:
        g_steps, g = _arr(c["G"])
        r_steps, r = _arr(c["R"])
        band = 0.05 * float(np.ptp(r))
        k = len(r)
        while k > 0 and np.ptp(r[k - 1:]) <= band:
            k -= 1
        start = int(r_steps[k]) if k < len(r) else None
        if start is not None:
            dead_g = g[g_steps >= start]
            zero_from = g_steps[::-1][np.argmax(g[::-1] > 1e-6)] + 1 if np.any(g > 1e-6) else 0
            start = max(start, int(zero_from))
            n = int(np.sum(r_steps >= start))
            if (n >= 10 and n >= 0.2 * len(r) and len(dead_g)
                    and np.all(g[g_steps >= start] <= 1e-6)):
                _keep_earlier(modes, "no_learning_signal", {
                    "step": start,
                    "evidence": f"grad_norm <= 1e-6 and the reward within 5% of its range "
                                f"over the last {n} logged steps"})
    if "R" in c:
        steps, r = _arr(c["R"])
        amount = 0.6 * float(np.ptp(rollmed(r, 3)))
        i = _fall(r, amount) if amount > 0 else None
        if i is not None:
            _keep_earlier(modes, "reward_overfit", {
                "step": int(steps[i + 1]),
                "evidence": f"rolling-3 median reward fell by >= {amount:.3g} within 5 steps "
                            f"from step {int(steps[i])}"})
    if "LP" in c:
        steps, lp = _arr(c["LP"])
        i = _fall(lp, 1.0, held=1)
        if i is not None:
            _keep_earlier(modes, "likelihood_displacement", {
                "step": int(steps[i + 1]),
                "evidence": f"rolling-3 median log-prob fell by >= 1 nat within 5 steps from "
                            f"step {int(steps[i])}"})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/fixtures/corpus")
    ap.add_argument("--table", action="store_true", help="print a markdown table of the runs")
    args = ap.parse_args(argv)
    out = Path(args.out)
    manifest = json.loads((out / "runs.json").read_text())
    labels = []
    for name, rec in manifest.items():
        series = READERS[rec["format"]](out / rec["run"])
        lab = label(canonical(series))
        labels.append({
            "name": name,
            "run": rec["run"],
            "framework_names": rec["framework_names"],
            "format": rec["format"],
            "modes": lab["modes"],
            "healthy": lab["healthy"],
            "too_short": lab["too_short"],
            "accuracy_collapse_step": lab["accuracy_collapse_step"],
            "crashed_at": rec["crashed_at"],
            "steps_logged": rec["steps_logged"],
            "summary": lab["summary"],
            "intent": rec["intent"],
            "what_was_done": rec["what_was_done"],
            "config": rec["config"],
        })
        modes = ", ".join(f"{m}@{v['step']}" for m, v in lab["modes"].items()) or "-"
        print(f"{name:28s} healthy={lab['healthy']!s:5s} {modes}")
    (out / "labels.json").write_text(json.dumps(labels, indent=1) + "\n")
    if args.table:
        print(markdown_table(labels, manifest))
    return 0


def markdown_table(labels: list[dict], manifest: dict) -> str:
    lines = ["| # | run | format | names | what was done | labels (mode@step) | acc first->last "
             "| s |", "|---|---|---|---|---|---|---|---|"]
    for i, lab in enumerate(labels, 1):
        modes = ", ".join(f"{m}@{v['step']}" + (f" ({v['band']})" if "band" in v else "")
                          for m, v in lab["modes"].items())
        if lab["healthy"]:
            modes = "healthy"
        elif not modes:
            modes = "none fired, accuracy fell (not healthy)"
        if lab["crashed_at"]:
            modes += f"; crashed at {lab['crashed_at']}"
        s = lab["summary"]
        acc = f"{s.get('accuracy_first20', float('nan')):.2f}->{s.get('accuracy_last20', 0):.2f}"
        lines.append(f"| {i:02d} | `{lab['name']}` | {lab['format']} | {lab['framework_names']} "
                     f"| {lab['what_was_done']} | {modes} | {acc} "
                     f"| {manifest[lab['name']]['seconds']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
