"""Tracker-store import speed: grpo-doctor's direct readers vs each tracker's own read path,
side by side on the same stores in the same run.

    python bench/trackers_bench.py                  # 20,000 steps x 20 metrics per store
    python bench/trackers_bench.py --steps 2000     # a quicker check

One run of ``--steps`` steps x ``--metrics`` metrics (a random walk per metric, float64) is
written with each real client, offline, and cached under
``$TMPDIR/grpo-doctor-bench/trackers-<steps>x<metrics>/`` (``--rewrite`` writes it again):

* MLflow SQLite (``sqlite:///mlflow.db``) and file store (``file:./mlruns``,
  ``MLFLOW_ALLOW_FILE_STORE=true``): ``MlflowClient.log_batch`` of 1,000 metrics at a time;
* Trackio: ``trackio.log(..., step=s)`` per step (``TRACKIO_DIR`` the cache folder);
* SwanLab: ``swanlab.log(..., step=s)`` per step, ``mode="offline"``.

Readers, each in a fresh process with its modules imported before the clock starts:

* ``grpo-doctor``: ``grpo_doctor.load_runs(store)``: every run, pivoted into a float64 frame;
* MLflow: ``MlflowClient(uri).get_metric_history(run_id, key)`` for every key of the run
  (``search_runs`` for the run and its keys), then the rows pivoted with pandas, as a user
  would to get a table;
* Trackio: ``SQLiteStorage.get_logs(project, run)`` (what its dashboard and ``trackio.Api``
  read through) into ``pandas.DataFrame.from_records``;
* SwanLab: the SDK's own ``DataStoreReader`` (what ``swanlab sync`` reads a run with) and
  ``Record.ParseFromString`` per record, scalars into a pandas pivot.

"pts ok" counts values read back equal to those logged. Peak memory is the worker's
resident-set high-water mark above its level before the read (``_measure.py``).
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

from _measure import machine, measure
from wandb_bench import expected_values, metric_names  # the same run as the W&B bench

STORES = ("mlflow.db", "mlruns", "trackio", "swanlab")
PROJECT = "bench"
RUN = "bench-run"


# --- writers (each in its own process) ---------------------------------------------------


def write_mlflow(uri: str, n_steps: int, n_metrics: int) -> None:
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.create_experiment(PROJECT)
    run = client.create_run(exp, run_name=RUN)
    names = metric_names(n_metrics)
    vals = expected_values(n_steps, n_metrics)
    batch: list[Metric] = []
    for s in range(n_steps):
        batch += [Metric(k, float(vals[s, j]), 0, s) for j, k in enumerate(names)]
        if len(batch) >= 1000:
            client.log_batch(run.info.run_id, metrics=batch[:1000])
            batch = batch[1000:]
    if batch:
        client.log_batch(run.info.run_id, metrics=batch)
    client.set_terminated(run.info.run_id)


def write_trackio(folder: str, n_steps: int, n_metrics: int) -> None:
    os.environ["TRACKIO_DIR"] = folder
    import trackio

    names = metric_names(n_metrics)
    vals = expected_values(n_steps, n_metrics).tolist()
    trackio.init(project=PROJECT, name=RUN)
    for s, row in enumerate(vals):
        trackio.log(dict(zip(names, row)), step=s)
    trackio.finish()


def write_swanlab(folder: str, n_steps: int, n_metrics: int) -> None:
    import swanlab

    names = metric_names(n_metrics)
    vals = expected_values(n_steps, n_metrics).tolist()
    swanlab.init(project=PROJECT, experiment_name=RUN, mode="offline", logdir=folder)
    for s, row in enumerate(vals):
        swanlab.log(dict(zip(names, row)), step=s)
    swanlab.finish()


def stores(cache: Path, n_steps: int, n_metrics: int, rewrite: bool) -> dict[str, Path]:
    base = cache / f"trackers-{n_steps}x{n_metrics}"
    paths = {"mlflow.db": base / "sql" / "mlflow.db", "mlruns": base / "files" / "mlruns",
             "trackio": base / "trackio" / f"{PROJECT}.db", "swanlab": base / "swanlog"}
    if rewrite or not (base / "DONE").exists():
        shutil.rmtree(base, ignore_errors=True)
        for sub in ("sql", "files", "trackio"):
            (base / sub).mkdir(parents=True)
        env = {**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true", "SWANLAB_SILENT": "true"}
        jobs = [("write_mlflow", "sqlite:///mlflow.db", base / "sql"),
                ("write_mlflow", "file:./mlruns", base / "files"),
                ("write_trackio", str(base / "trackio"), base),
                ("write_swanlab", str(base / "swanlog"), base)]
        for fn, target, cwd in jobs:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--write", fn, target, "--steps",
                            str(n_steps), "--metrics", str(n_metrics)], check=True, env=env,
                           cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print(f"  {fn} {target}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        (base / "DONE").write_text("ok")
    return paths


# --- readers (inside a worker process) ---------------------------------------------------


def _prepare(reader: str) -> None:
    import pandas  # noqa: F401

    if reader == "grpo-doctor":
        import google.protobuf.message  # noqa: F401

        from grpo_doctor.importers import registry

        registry()
    elif reader == "client":
        pass


def _pivot(steps: list[int], keys: list[str], values: list[float]) -> Any:
    import pandas as pd

    long = pd.DataFrame({"step": steps, "key": keys, "value": values})
    return long.pivot_table(index="step", columns="key", values="value", aggfunc="last")


def _mlflow(store: Path) -> Any:
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{store}" if store.suffix == ".db" else f"file:{store}"
    client = MlflowClient(uri)
    exps = client.search_experiments()
    (run,) = client.search_runs([e.experiment_id for e in exps])
    steps: list[int] = []
    keys: list[str] = []
    values: list[float] = []
    for key in run.data.metrics:
        for m in client.get_metric_history(run.info.run_id, key):
            steps.append(m.step)
            keys.append(m.key)
            values.append(m.value)
    return _pivot(steps, keys, values)


def _trackio(store: Path) -> Any:
    os.environ["TRACKIO_DIR"] = str(store.parent)
    import pandas as pd
    from trackio.sqlite_storage import SQLiteStorage

    logs = SQLiteStorage.get_logs(store.stem, RUN)
    return pd.DataFrame.from_records(logs).set_index("step")


def _swanlab(store: Path) -> Any:
    from swanlab.proto.swanlab.record.v1.record_pb2 import Record
    from swanlab.sdk.internal.core_python.store import DataStoreReader

    (log,) = store.glob("run-*/run-*.swanlab")
    reader = DataStoreReader()
    reader.open(log)
    steps: list[int] = []
    keys: list[str] = []
    values: list[float] = []
    for data in reader:
        rec = Record()
        rec.ParseFromString(data)
        if rec.WhichOneof("record_type") == "scalar":
            steps.append(rec.scalar.step)
            keys.append(rec.scalar.key)
            values.append(rec.scalar.value.number)
    reader.close()
    return _pivot(steps, keys, values)


def _read(reader: str, store_kind: str, store: Path) -> Any:
    if reader == "grpo-doctor":
        from grpo_doctor import load_runs

        return load_runs(store)[0].frame
    return {"mlflow.db": _mlflow, "mlruns": _mlflow, "trackio": _trackio,
            "swanlab": _swanlab}[store_kind](store)


def worker(reader: str, store_kind: str, store: Path, n_steps: int, n_metrics: int,
           repeat: int) -> None:
    _prepare(reader)
    out, stats = measure(lambda: _read(reader, store_kind, store), repeat)
    want = expected_values(n_steps, n_metrics)
    names = metric_names(n_metrics)
    points_ok = 0
    steps = out.index.to_numpy(dtype=np.int64)
    for j, name in enumerate(names):
        if name in out.columns:
            got = out[name].to_numpy(dtype=np.float64)
            points_ok += int((got == want[steps, j]).sum())
    print(json.dumps({**stats, "points_ok": points_ok}))


def run_worker(reader: str, kind: str, store: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--worker", reader, kind, str(store), "--steps",
           str(args.steps), "--metrics", str(args.metrics), "--repeat", str(args.repeat)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "MLFLOW_ALLOW_FILE_STORE": "true"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


CLIENT_READERS = {
    "mlflow.db": "MlflowClient.get_metric_history per key",
    "mlruns": "MlflowClient.get_metric_history per key",
    "trackio": "trackio SQLiteStorage.get_logs",
    "swanlab": "swanlab DataStoreReader + Record",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--metrics", type=int, default=20)
    ap.add_argument("--stores", nargs="+", default=list(STORES), choices=STORES)
    ap.add_argument("--repeat", type=int, default=3, help="runs per reader (best kept)")
    ap.add_argument("--cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "grpo-doctor-bench")
    ap.add_argument("--rewrite", action="store_true", help="write the stores again")
    ap.add_argument("--worker", nargs=3, metavar=("READER", "KIND", "PATH"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--write", nargs=2, metavar=("FUNCTION", "TARGET"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write:
        globals()[args.write[0]](args.write[1], args.steps, args.metrics)
        return
    if args.worker:
        reader, kind, path = args.worker
        worker(reader, kind, Path(path), args.steps, args.metrics, args.repeat)
        return

    print(machine())
    paths = stores(args.cache, args.steps, args.metrics, args.rewrite)
    n_points = args.steps * args.metrics
    print(f"one run per store: {args.steps:,d} steps x {args.metrics} metrics = "
          f"{n_points:,d} points")
    head = (f"{'store':<10s} {'reader':<42s} {'pts ok':>9s} {'wall s':>7s} {'cpu s':>7s} "
            f"{'x wall':>7s} {'x cpu':>6s} {'peak MiB':>9s}")
    print(head)
    print("-" * len(head))
    for kind in args.stores:
        ours = run_worker("grpo-doctor", kind, paths[kind], args)
        theirs = run_worker("client", kind, paths[kind], args)
        for name, res in (("grpo-doctor", ours), (CLIENT_READERS[kind], theirs)):
            if "error" in res:
                print(f"{kind:<10s} {name:<42s} error: {res['error']}")
                continue
            ok = "error" not in ours
            xw = f"{res['seconds'] / ours['seconds']:>7.1f}" if ok else f"{'-':>7s}"
            xc = f"{res['cpu'] / ours['cpu']:>6.1f}" if ok else f"{'-':>6s}"
            print(f"{kind:<10s} {name:<42s} {res['points_ok']:>9,d} {res['seconds']:>7.2f} "
                  f"{res['cpu']:>7.2f} {xw} {xc} {res['peak_bytes'] / 2**20:>9.1f}")
    print(f"pts ok: values read back equal to those logged, of {n_points:,d}; x wall / x cpu: "
          "seconds / grpo-doctor's on the same store; peak: worker RSS high-water above its "
          "level before the read (the returned frame included)")


if __name__ == "__main__":
    main()
