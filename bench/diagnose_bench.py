"""Diagnose speed at 10k / 100k / 1M logged steps x 40 metrics, every rule, first alerts
included: near-linear growth and the targets (100k <= 1 s, 1M <= 10 s).

    python bench/diagnose_bench.py [--sizes 10000 100000 1000000]

The runs are synthetic GRPO-like curves with TRL names (an entropy collapse and a KL drift,
so first-alert replay runs too) plus 32 extra metrics; the store is built in memory so the
figure is the diagnosis alone (importer speed has its own benches).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grpo_doctor.engine import diagnose
from grpo_doctor.store import build_run


def synthetic(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    cols = {
        "train/reward": 0.2 + 0.5 / (1 + np.exp(-(t - n / 4) / (n / 10))) + rng.normal(0, .02, n),
        "train/entropy": np.exp(-3 * np.clip((t - n / 2) / (n / 4), 0, None))
        + np.abs(rng.normal(0, .01, n)),
        "train/kl": 0.01 + 8 * np.clip((t - n / 2) / (n / 2), 0, None)
        + np.abs(rng.normal(0, .01, n)),
        "train/grad_norm": 0.4 + np.abs(rng.normal(0, .05, n)),
        "train/frac_reward_zero_std": np.clip(0.2 + rng.normal(0, .05, n), 0, 1),
        "train/completions/mean_length": 300 + rng.normal(0, 5, n),
        "train/log_prob_mean": -0.5 + rng.normal(0, .01, n),
        "train/clip_ratio/region_mean": np.abs(rng.normal(0.01, 0.002, n)),
    }
    for i in range(32):
        cols[f"extra/m{i}"] = rng.normal(0, 1, n)
    return pd.DataFrame(cols)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'steps':>10s} {'metrics':>8s} {'diagnose s':>11s} {'us/step':>8s} {'findings':>9s}")
    base = None
    for n in args.sizes:
        frame = synthetic(n)
        run = build_run(frame, name="bench", source="bench", format="synthetic",
                        steps=np.arange(1, n + 1))
        best = float("inf")
        for _ in range(args.repeat):
            fresh = run.truncated(n)  # a new Run: no cached series from the previous repeat
            t0 = time.perf_counter()
            d = diagnose(fresh)
            best = min(best, time.perf_counter() - t0)
        per = best / n * 1e6
        base = base or per
        print(f"{n:>10,d} {frame.shape[1]:>8d} {best:>11.3f} {per:>8.2f} "
              f"{len(d.findings):>9d}")
    print("targets: 100k <= 1 s, 1M <= 10 s; us/step falling or flat = (sub)linear growth")


if __name__ == "__main__":
    main()
