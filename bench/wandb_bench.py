"""W&B offline-run import speed: grpo-doctor's reader vs wandb's own offline inspection route,
side by side on the same run folder in the same run.

    python bench/wandb_bench.py                    # 100k steps x 20 metrics
    python bench/wandb_bench.py --steps 10000      # a quicker check

Target: grpo-doctor >= 10x faster than wandb's own route.

The run is written with the real SDK: ``wandb.init(mode="offline")`` (``WANDB_SILENT=true``,
``WANDB_DIR`` a cache folder) and ``run.log({...20 metrics...}, step=s)``. Writing 100k steps
takes a minute or more, so the run is cached under
``$TMPDIR/grpo-doctor-bench/wandb-<steps>x<metrics>/`` (``--rewrite`` writes it again).

wandb 0.31 ships no Python reader for an offline run (``wandb.sdk.internal.datastore`` is gone,
``wandb.Api()`` cannot open offline runs; research note ``importers-research.md`` §3.5). Its own
route is the Go CLI ``wandb leet inspect --json RUN_DIR``, one JSON object per record, so the
comparison is:

* ``grpo-doctor``: ``grpo_doctor.load_runs(run_dir)`` (LevelDB-log framing with CRC-32 checks,
  protobuf records, history, summary and config, ``build_run``): a wide float64 frame;
* ``wandb leet inspect --json`` + ``json.loads`` of its history lines into
  ``pandas.DataFrame.from_records`` (what a user must do to get a table);
* ``wandb leet inspect --json`` alone (the Go process writing its JSON to a pipe that is
  drained and dropped): a lower bound of wandb's route.

Each reader runs in a fresh subprocess with its modules imported before the clock starts. CPU
seconds are the worker's own plus its children's (the Go process), which the other jobs on a
shared machine disturb less than wall seconds. Peak memory is the worker's resident-set
high-water mark above its level before the read (the returned frame included), plus the
child's maximum resident set where there is one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _measure import measure

READERS = ("grpo-doctor", "wandb leet inspect --json + json.loads", "wandb leet inspect --json")


def metric_names(n: int) -> list[str]:
    return [f"train/metric_{j:02d}" for j in range(n)]


def expected_values(n_steps: int, n_metrics: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.cumsum(rng.normal(0, 0.01, (n_steps, n_metrics)), axis=0) + rng.uniform(
        -1, 1, n_metrics)


def write_run(wandb_dir: Path, n_steps: int, n_metrics: int) -> None:
    """Runs in its own process (``--write``): the offline run, logged step by step."""
    import wandb

    names = metric_names(n_metrics)
    vals = expected_values(n_steps, n_metrics).tolist()
    run = wandb.init(mode="offline", project="grpo-doctor-bench", dir=str(wandb_dir),
                     config={"learning_rate": 1e-6, "beta": 0.04})
    for s, row in enumerate(vals):
        run.log(dict(zip(names, row)), step=s)
    run.finish()


def run_folder(cache: Path, n_steps: int, n_metrics: int, rewrite: bool) -> Path:
    base = cache / f"wandb-{n_steps}x{n_metrics}"
    done = base / "DONE"
    if rewrite or not done.exists():
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        env = {**os.environ, "WANDB_SILENT": "true", "WANDB_MODE": "offline",
               "WANDB_DIR": str(base)}
        t0 = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--write", str(base), "--steps", str(n_steps),
                        "--metrics", str(n_metrics)], check=True, env=env, cwd=ROOT)
        print(f"  wrote the offline run: {n_steps:,d} steps x {n_metrics} metrics in "
              f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
        done.write_text("ok")
    (folder,) = sorted((base / "wandb").glob("offline-run-*"))
    return folder


# --- readers (inside a worker process) --------------------------------------------------------


def _prepare(reader: str) -> None:
    import pandas  # noqa: F401

    if reader == "grpo-doctor":
        from wandb.proto import wandb_internal_pb2  # noqa: F401

        import grpo_doctor.importers.wandb_offline  # noqa: F401
        from grpo_doctor.importers import registry

        registry()


def _leet(folder: Path) -> subprocess.Popen:
    return subprocess.Popen(["wandb", "leet", "inspect", "--json", str(folder)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def _read(reader: str, folder: Path) -> Any:
    if reader == "grpo-doctor":
        from grpo_doctor import load_runs

        return load_runs(folder)[0].frame
    proc = _leet(folder)
    assert proc.stdout is not None
    if reader == "wandb leet inspect --json":
        while proc.stdout.read(1 << 20):
            pass
        proc.wait()
        return None
    import pandas as pd

    loads = json.loads
    rows = [loads(line)["history"]["item"] for line in proc.stdout
            if b'"type":"history"' in line]
    proc.wait()
    return pd.DataFrame.from_records(rows)


def worker(reader: str, folder: Path, n_steps: int, n_metrics: int, repeat: int) -> None:
    _prepare(reader)
    out, stats = measure(lambda: _read(reader, folder), repeat)
    points_ok = points = 0
    if out is not None:
        want = expected_values(n_steps, n_metrics)
        cols = [c for c in metric_names(n_metrics) if c in out.columns]
        points = int(out[cols].notna().to_numpy().sum()) if cols else 0
        if "_step" in out.columns:  # wandb's rows carry _step; grpo-doctor's index is the step
            out = out.set_index("_step")
        steps = out.index.to_numpy(dtype=np.int64)
        inside = (steps >= 0) & (steps < n_steps)
        for c in cols:
            j = metric_names(n_metrics).index(c)
            got = out[c].to_numpy(dtype=np.float64)[inside]
            points_ok += int((got == want[steps[inside], j]).sum())
    print(json.dumps({**stats, "points": points, "points_ok": points_ok}))


# --- driver -----------------------------------------------------------------------------------


def run_worker(reader: str, folder: Path, n_steps: int, n_metrics: int, repeat: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", reader, str(folder), "--steps", str(n_steps),
           "--metrics", str(n_metrics), "--repeat", str(repeat)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "WANDB_SILENT": "true"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--metrics", type=int, default=20)
    ap.add_argument("--readers", nargs="+", default=list(READERS), choices=READERS)
    ap.add_argument("--repeat", type=int, default=3, help="runs per reader (best kept)")
    ap.add_argument("--cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "grpo-doctor-bench")
    ap.add_argument("--rewrite", action="store_true", help="write the offline run again")
    ap.add_argument("--worker", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--write", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write:
        write_run(Path(args.write), args.steps, args.metrics)
        return
    if args.worker:
        worker(args.worker[0], Path(args.worker[1]), args.steps, args.metrics, args.repeat)
        return
    if shutil.which("wandb") is None:
        raise SystemExit("the wandb CLI is not on PATH (pip install wandb)")

    folder = run_folder(args.cache, args.steps, args.metrics, args.rewrite)
    (log,) = folder.glob("run-*.wandb")
    n_points = args.steps * args.metrics
    frame_bytes = n_points * 8 + args.steps * 8
    print(f"W&B offline run: {args.steps:,d} steps x {args.metrics} metrics = {n_points:,d} "
          f"points; {log.name} {log.stat().st_size / 1e6:.0f} MB; float64 frame "
          f"{frame_bytes / 2**20:.1f} MiB")
    results = [(r, run_worker(r, folder, args.steps, args.metrics, args.repeat))
               for r in args.readers]
    base = next((res for r, res in results if r == "grpo-doctor" and "error" not in res), None)
    head = (f"{'reader':<40s} {'pts ok':>10s} {'wall s':>7s} {'cpu s':>7s} {'k pts/s':>8s} "
            f"{'x wall':>7s} {'x cpu':>6s} {'peak MiB':>9s} {'child MiB':>9s}")
    print(head)
    print("-" * len(head))
    for reader, res in results:
        if "error" in res:
            print(f"{reader:<40s} error: {res['error']}")
            continue
        ok = f"{res['points_ok']:>10,d}" if res["points"] or res["points_ok"] else f"{'-':>10s}"
        rate = n_points / res["seconds"] / 1e3
        xw = f"{res['seconds'] / base['seconds']:>7.1f}" if base else f"{'-':>7s}"
        xc = f"{res['cpu'] / base['cpu']:>6.1f}" if base else f"{'-':>6s}"
        child = res["child_bytes"] / 2**20 if reader != "grpo-doctor" else 0.0
        print(f"{reader:<40s} {ok} {res['seconds']:>7.2f} {res['cpu']:>7.2f} {rate:>8.0f} "
              f"{xw} {xc} {res['peak_bytes'] / 2**20:>9.1f} {child:>9.1f}")
    print(f"pts ok: values read back equal to those logged, of {n_points:,d} (the bare "
          "leet route returns no table); x wall / x cpu: seconds / grpo-doctor's; peak: worker "
          "RSS high-water above its level before the read; child: the Go process's max RSS")
    print("target: grpo-doctor >= 10x faster than wandb's own route")


if __name__ == "__main__":
    main()
