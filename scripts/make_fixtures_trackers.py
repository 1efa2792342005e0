"""Write the MLflow, Trackio and SwanLab fixtures with the trackers' real clients, offline.

How the fixtures were made: the synthetic GRPO run of ``tests/fixtures/tensorboard/
grpo_synthetic.csv`` (written by ``make_fixtures_tb_wandb.py``: 200 steps, a NaN grad norm at
step 150, ``eval/reward`` every 25 steps, the same config) is logged step by step, each step's
logged values in one call, through

- ``tests/fixtures/mlflow/mlflow.db.gz``: ``mlflow.log_metrics(..., step=)`` into a SQLite
  store (``sqlite:///mlflow.db``, MLflow's default since 3.7), gzipped as written (the file is
  ~1 MB of mostly empty pages; tests unpack it);
- ``tests/fixtures/mlflow/mlruns/``: the same into the file store (``file:./mlruns``, which
  MLflow 3 writes only with ``MLFLOW_ALLOW_FILE_STORE=true``);
- ``tests/fixtures/trackio/grpo.db.gz``: ``trackio.log(..., step=)`` into the project
  ``grpo`` (``TRACKIO_DIR`` set to a temporary folder), gzipped;
- ``tests/fixtures/swanlab/swanlog/``: ``swanlab.log(..., step=)`` with ``mode="offline"``;
  only each run's ``run-<id>.swanlab`` log and ``files/config.yaml`` are kept (no host
  metadata, requirements or debug log).

Each store also holds a second, short run ``short`` (3 steps; MLflow and Trackio re-log
``train/reward`` at step 2, whose last value is 0.9), and the MLflow stores a run
``discarded`` that is then deleted. Params are the config flattened with "." (MLflow stores
them as text). Regenerate with

    python scripts/make_fixtures_trackers.py

which needs ``mlflow``, ``trackio`` and ``swanlab`` (the test extra) and no network.
"""

from __future__ import annotations

import csv
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SOURCE = FIXTURES / "tensorboard" / "grpo_synthetic.csv"
RUN_NAME = "grpo-synthetic"
SHORT = [(1, {"train/reward": 0.1}), (2, {"train/reward": 0.5}), (2, {"train/reward": 0.9}),
         (3, {"train/reward": 0.7})]


def rows() -> list[tuple[int, dict[str, float]]]:
    """(step, {tag: value}) of the reference CSV; an empty cell is not logged."""
    with SOURCE.open() as fh:
        reader = csv.DictReader(fh)
        return [(int(r.pop("step")), {k: float(v) for k, v in r.items() if v != ""})
                for r in reader]


def config() -> dict[str, object]:
    sys.path.insert(0, str(ROOT / "scripts"))
    from make_fixtures_tb_wandb import CONFIG

    return dict(CONFIG)


def flat(config: dict[str, object], prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def write_mlflow(uri: str) -> None:
    import mlflow

    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("grpo")
    with mlflow.start_run(run_name=RUN_NAME):
        mlflow.log_params(flat(config()))
        for step, values in rows():
            mlflow.log_metrics(values, step=step)
    with mlflow.start_run(run_name="short"):
        for step, values in SHORT:
            mlflow.log_metrics(values, step=step)
    with mlflow.start_run(run_name="discarded") as run:
        mlflow.log_metric("train/reward", 1.0, step=1)
    mlflow.delete_run(run.info.run_id)


def write_trackio(folder: Path) -> None:
    os.environ["TRACKIO_DIR"] = str(folder)
    import trackio

    trackio.init(project="grpo", name=RUN_NAME, config=config())
    for step, values in rows():
        trackio.log(values, step=step)
    trackio.finish()
    trackio.init(project="grpo", name="short")
    for step, values in SHORT:
        trackio.log(values, step=step)
    trackio.finish()


def write_swanlab(folder: Path) -> None:
    import swanlab

    for name, cfg, logged in ((RUN_NAME, config(), rows()), ("short", {}, SHORT)):
        swanlab.init(project="grpo", experiment_name=name, config=cfg, mode="offline",
                     logdir=str(folder))
        for step, values in logged:
            swanlab.log(values, step=step)
        swanlab.finish()


def gzip_to(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with src.open("rb") as fh, gzip.GzipFile(dest, "wb", mtime=0) as out:
        shutil.copyfileobj(fh, out)


def _in_child(function: str, *args: str) -> None:
    """Each client in its own process: they keep global state (tracking URI, active run)."""
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'scripts')!r}); " \
           f"import make_fixtures_trackers as m; m.{function}(*sys.argv[1:])"
    subprocess.run([sys.executable, "-c", code, *args], check=True)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "sql").mkdir()
        (work / "files").mkdir()
        os.chdir(work / "sql")
        _in_child("write_mlflow", "sqlite:///mlflow.db")
        os.chdir(work / "files")
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
        _in_child("write_mlflow", "file:./mlruns")
        os.chdir(ROOT)
        gzip_to(work / "sql" / "mlflow.db", FIXTURES / "mlflow" / "mlflow.db.gz")
        shutil.rmtree(FIXTURES / "mlflow" / "mlruns", ignore_errors=True)
        shutil.copytree(work / "files" / "mlruns", FIXTURES / "mlflow" / "mlruns")

        _in_child("write_trackio", str(work / "trackio"))
        gzip_to(work / "trackio" / "grpo.db", FIXTURES / "trackio" / "grpo.db.gz")

        _in_child("write_swanlab", str(work / "swanlog"))
        out = FIXTURES / "swanlab" / "swanlog"
        shutil.rmtree(out, ignore_errors=True)
        for run in sorted((work / "swanlog").glob("run-*")):
            (out / run.name / "files").mkdir(parents=True)
            for log in run.glob("run-*.swanlab"):
                shutil.copy2(log, out / run.name / log.name)
            if (run / "files" / "config.yaml").is_file():
                shutil.copy2(run / "files" / "config.yaml", out / run.name / "files")


if __name__ == "__main__":
    main()
