"""Benchmark ``grpo-doctor audit``: N synthetic runs in one folder, audited in one process and
with the default worker pool.

    python bench/audit_bench.py                      # 1000 runs x 2000 steps
    python bench/audit_bench.py --runs 200           # a quicker check
    python bench/audit_bench.py --runs 100 --profile # where one process spends its time
    python bench/audit_bench.py --scaling 10,100,300,1000 --shards 4
                                  # audit time against the number of runs, then the largest
                                  # audit as 4 shards merged (audit --shard, audit-merge)

Target: 1000 runs x 2000 steps in <= 60 s on 2 cores.

The runs are wide CSVs with TRL's metric names and AR(1) noise (training curves are serially
correlated), half healthy, half with one failure mode built in at a random step: entropy
collapse, KL drift, gradient explosion, advantage collapse.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.signal import lfilter

MODES = ("healthy", "entropy_collapse", "kl_drift", "grad_explosion", "advantage_collapse")


def ar1(rng: np.random.Generator, n: int, sigma: float, rho: float = 0.6) -> np.ndarray:
    return lfilter([1.0], [1.0, -rho], rng.normal(0, sigma, n))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def make_run(seed: int, steps: int, mode: str) -> pd.DataFrame:
    """One GRPO-like run with TRL's names; ``mode`` built in from a random onset."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, steps + 1, dtype=float)
    onset = int(rng.uniform(0.3, 0.6) * steps)
    after = np.clip(t - onset, 0, None)
    reward = 0.2 + 0.5 * sigmoid((t - 0.3 * steps) / (0.1 * steps)) + ar1(rng, steps, 0.02)
    entropy = 0.9 * np.exp(-t / (3 * steps)) + ar1(rng, steps, 0.015)
    kl = 0.05 * t / steps + np.abs(ar1(rng, steps, 0.01))
    grad = 0.35 + 0.05 * np.abs(ar1(rng, steps, 0.5))
    zsf = 0.2 + ar1(rng, steps, 0.04)
    if mode == "entropy_collapse":
        entropy = entropy * np.exp(-after / (0.05 * steps)) + np.abs(ar1(rng, steps, 0.005))
        reward = np.where(t > onset, reward[onset - 1], reward) + ar1(rng, steps, 0.01)
        zsf = zsf + 0.6 * (1 - np.exp(-after / (0.1 * steps)))
    elif mode == "kl_drift":
        kl = kl + 15 * (after / (steps - onset)) ** 1.5 + np.abs(ar1(rng, steps, 0.2))
        reward = np.where(t > onset, reward[onset - 1], reward) + ar1(rng, steps, 0.01)
    elif mode == "grad_explosion":
        spikes = (t > onset) & (rng.random(steps) < 0.03)
        grad = grad * (1 + 2 * after / (steps - onset)) + spikes * rng.uniform(5, 20, steps)
    elif mode == "advantage_collapse":
        zsf = zsf + 0.75 * sigmoid((t - onset) / (0.03 * steps))
    zsf = np.clip(zsf, 0, 1)
    return pd.DataFrame({
        "train/global_step": t.astype(int), "train/reward": reward,
        "train/reward_std": np.clip(0.35 * (1 - zsf), 0, None), "train/entropy": entropy,
        "train/kl": kl, "train/grad_norm": grad, "train/learning_rate": np.full(steps, 1e-6),
        "train/frac_reward_zero_std": zsf,
        "train/completions/mean_length": 320 + 40 * sigmoid((t - 300) / 100)
        + ar1(rng, steps, 6),
    })


def generate(folder: Path, runs: int, steps: int) -> None:
    for i in range(runs):
        mode = "healthy" if i % 2 == 0 else MODES[1 + (i // 2) % (len(MODES) - 1)]
        make_run(i, steps, mode).to_csv(folder / f"run-{i:05d}-{mode}.csv", index=False,
                                        float_format="%.6g")


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the pool's workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(paths: list[str], jobs: int | None) -> tuple[float, float, Any]:
    """Wall time, CPU time (meaningful on a busy machine too), and the result."""
    from grpo_doctor.audit import audit

    start, cpu = time.perf_counter(), cpu_seconds()
    result = audit(paths, jobs=jobs)
    return time.perf_counter() - start, cpu_seconds() - cpu, result


def profile(paths: list[str]) -> str:
    from grpo_doctor.audit import audit

    prof = cProfile.Profile()
    prof.enable()
    audit(paths, jobs=1)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(40)
    return out.getvalue()


def scaling(folder: Path, counts: list[int], shards: int) -> None:
    """Audit the first n runs for each n (default workers), then the largest as ``shards``
    shards one after another, merged, and written as parquet: how the cost grows."""
    import json

    from grpo_doctor import fleet
    from grpo_doctor.audit import audit
    from grpo_doctor.reporters.audit_report import render_audit_json

    files = sorted(folder.glob("run-*.csv"))
    print("\n| runs | wall time | CPU time | CPU ms/run | runs/s (wall) |")
    print("|---|---|---|---|---|")
    for n in counts:
        sub = folder / f"first-{n}"
        sub.mkdir()
        for f in files[:n]:
            os.link(f, sub / f.name)
        wall, cpu, _ = timed([str(sub)], None)
        print(f"| {n} | {wall:.1f} s | {cpu:.1f} s | {1000 * cpu / n:.0f} | {n / wall:.1f} |")
    largest = folder / f"first-{max(counts)}"
    reports, walls = [], []
    for k in range(1, shards + 1):
        start = time.perf_counter()
        result = audit([str(largest)], shard=(k, shards))
        walls.append(time.perf_counter() - start)
        path = folder / f"shard-{k}.json"
        path.write_text(render_audit_json(result))
        reports.append(path)
    start = time.perf_counter()
    merged = fleet.merge(reports)
    merge_s = time.perf_counter() - start
    start = time.perf_counter()
    table = fleet.to_parquet(merged)
    parquet_s = time.perf_counter() - start
    whole = audit([str(largest)])
    same = json.loads(render_audit_json(merged)) == json.loads(render_audit_json(whole))
    runs_per_shard = [len(json.loads(p.read_text())["runs"]) for p in reports]
    print(f"\n{shards} shards of {max(counts)} runs: {runs_per_shard} runs each, "
          f"{min(walls):.1f}-{max(walls):.1f} s each (the slowest shard is a matrix's wall "
          f"time), merge {merge_s:.2f} s, parquet {parquet_s:.2f} s "
          f"({len(table) / 1024:.0f} KiB), merged == whole audit: {same}")


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--profile", action="store_true",
                        help="profile an in-process audit instead of timing")
    parser.add_argument("--scaling", help="comma-separated run counts: audit time against "
                        "the number of runs (generates the largest)")
    parser.add_argument("--shards", type=int, default=4,
                        help="with --scaling: audit the largest count as this many shards")
    args = parser.parse_args(argv)
    if args.scaling:
        counts = sorted(int(x) for x in args.scaling.split(","))
        with tempfile.TemporaryDirectory(prefix="grpo-doctor-bench-") as tmp:
            generate(Path(tmp), max(counts), args.steps)
            print(f"generated {max(counts)} runs x {args.steps} steps ({os.cpu_count()} CPUs)")
            scaling(Path(tmp), counts, args.shards)
        return 0
    with tempfile.TemporaryDirectory(prefix="grpo-doctor-bench-") as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        generate(folder, args.runs, args.steps)
        print(f"generated {args.runs} runs x {args.steps} steps in "
              f"{time.perf_counter() - start:.1f} s ({os.cpu_count()} CPUs)")
        if args.profile:
            print(profile([tmp]))
            return 0
        serial, serial_cpu, one = timed([tmp], 1)
        parallel, parallel_cpu, many = timed([tmp], None)
    if one.to_dict() != many.to_dict():
        print("error: --jobs 1 and the default jobs disagree", file=sys.stderr)
        return 1
    s = one.summary()
    print(f"found {s['runs']} runs: {s['critical']} critical, {s['warning']} warning, "
          f"{s['healthy']} healthy, {s['errors']} errors")
    print("\n| jobs | runs | steps/run | wall time | runs/s | speed-up | CPU time | CPU ms/run |")
    print("|---|---|---|---|---|---|---|---|")
    for label, wall, cpu in (("1", serial, serial_cpu),
                             (f"default ({os.cpu_count()})", parallel, parallel_cpu)):
        print(f"| {label} | {args.runs} | {args.steps} | {wall:.1f} s | "
              f"{args.runs / wall:.1f} | {serial / wall:.2f}x | {cpu:.1f} s | "
              f"{1000 * cpu / args.runs:.0f} |")
    load = os.getloadavg()[0]
    if load > (os.cpu_count() or 1):
        print(f"\nnote: load average {load:.1f} on {os.cpu_count()} CPUs: other work shares "
              f"the machine, so wall times are high; CPU time is not affected")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
