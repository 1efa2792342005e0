"""Write the TensorBoard and W&B offline fixtures with the real writers.

How the fixtures were made: one synthetic GRPO run (200 steps, numpy seed 7, values rounded to
float32 so every encoding stores them exactly) with TRL-style keys (``train/reward``,
``train/entropy`` declining in the second half, ``train/kl``, ``train/grad_norm`` with a
logged NaN at step 150, ``train/frac_reward_zero_std``, ``train/completions/mean_length``,
``train/learning_rate``, and ``eval/reward`` every 25 steps) is written

- ``tests/fixtures/tensorboard/grpo_synthetic.csv``: plain CSV, the expected values
  ("nan" where a NaN was logged, empty where nothing was);
- ``tensorboard/simple_value/``: tensorboardX ``SummaryWriter.add_scalar`` (``simple_value``,
  what torch.utils.tensorboard and Hugging Face write), plus an ``args`` text summary holding
  the config as JSON (as the HF Trainer does) and a few histograms;
- ``tensorboard/tensor_float_val/``: ``tensorboard.plugins.scalar.summary_v2.scalar_pb``
  (tensor ``float_val`` + "scalars" plugin metadata on every event) through tensorboard's own
  ``EventFileWriter``;
- ``tensorboard/tensor_content/``: what TF2 ``tf.summary.scalar`` writes (TensorFlow is not
  needed): a DT_FLOAT tensor with 4 raw ``tensor_content`` bytes, the "scalars" metadata only on
  each tag's first event, through ``EventFileWriter``;
- ``tensorboard/restart/``: a run restarted from a checkpoint with tensorboardX: the first
  file logs steps 1-120 (steps 101-120 with values that the restart re-logs differently), the
  second steps 101-200, so merging with "last file wins" gives the CSV back;
- ``wandb/wandb/offline-run-20250101_000000-grpofix1/run-grpofix1.wandb``: ``wandb.init(
  mode="offline", config=...)`` + ``wandb.log(..., step=step)``, some keys logged as nested
  dicts (``{"train": {"kl": ...}}``), with a histogram and a text value every 50 steps, a
  ``config.update`` after init and an explicit summary value;
- ``wandb/wandb/offline-run-20250101_010000-grpofix2/``: a short Hugging Face-style run (20
  global steps, ``define_metric("*", step_metric="train/global_step")``, eval logged in its own
  call) for the step-metric and several-runs cases;
- ``wandb_resumed/wandb/``: one run in two launches, as a Trainer resumed from a checkpoint
  leaves it: ``offline-run-20250102_000000-grpores1`` logs global steps 1-60 (its steps 51-60
  shifted by +1), then ``offline-run-20250102_001000-grpores2`` steps 51-100 from the step-50
  checkpoint, both with the config's ``output_dir``; beside them the
  ``offline-run-20250102_002000-grpoother`` of another run (steps 1-100, its own output_dir)
  and a ``latest-run`` link to the resumed launch, as wandb leaves one
  (``python scripts/make_fixtures_tb_wandb.py resumed`` writes only these).

File names and wall times are fixed (the writers' own names hold the host and time) and only
the ``.wandb`` log of each W&B run is kept (no debug logs, no host metadata). Regenerate with

    WANDB_SILENT=true WANDB_MODE=offline python scripts/make_fixtures_tb_wandb.py

which needs ``tensorboardX`` and ``wandb`` and no network.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
TB = FIXTURES / "tensorboard"
WB = FIXTURES / "wandb"
STEPS = np.arange(1, 201)
WALL0 = 1_700_000_000.0
NAN_STEP = 150
CONFIG = {
    "learning_rate": 1e-6,
    "beta": 0.04,
    "num_generations": 8,
    "max_completion_length": 512,
    "model": {"name": "Qwen2.5-0.5B-Instruct", "dtype": "bfloat16"},
}


def synthetic_run(seed: int = 7) -> dict[str, np.ndarray]:
    """tag -> values (float32-exact, NaN where a NaN is logged) for STEPS; eval is sparse."""
    rng = np.random.default_rng(seed)
    n = len(STEPS)
    x = np.linspace(0.0, 1.0, n)
    half = x > 0.5
    data = {
        "train/reward": 0.2 + 0.6 * x + rng.normal(0, 0.03, n),
        "train/reward_std": 0.35 - 0.15 * x + rng.normal(0, 0.02, n),
        "train/entropy": np.where(half, 0.9 - 1.1 * (x - 0.5), 0.9) + rng.normal(0, 0.01, n),
        "train/kl": 0.001 + 0.02 * x**2 + np.abs(rng.normal(0, 0.001, n)),
        "train/grad_norm": 0.5 + np.abs(rng.normal(0, 0.1, n)),
        "train/frac_reward_zero_std": np.clip(
            0.1 + np.where(half, 0.8 * (x - 0.5), 0.0) + rng.normal(0, 0.02, n), 0, 1
        ),
        "train/completions/mean_length": 180 + 120 * x + rng.normal(0, 5, n),
        "train/learning_rate": 1e-6 * 0.5 * (1 + np.cos(np.pi * x)),
    }
    data["train/grad_norm"][STEPS == NAN_STEP] = np.nan
    eval_reward = np.full(n, np.nan)
    every = STEPS % 25 == 0
    eval_reward[every] = 0.15 + 0.5 * x[every] + rng.normal(0, 0.01, int(every.sum()))
    data["eval/reward"] = eval_reward
    return {k: v.astype(np.float32).astype(np.float64) for k, v in data.items()}


def logged(data: dict[str, np.ndarray], tag: str, i: int) -> bool:
    """Whether ``tag`` is logged at row ``i`` (eval only every 25 steps; NaN is logged)."""
    return tag != "eval/reward" or not np.isnan(data[tag][i])


def write_csv(data: dict[str, np.ndarray], path: Path) -> None:
    tags = list(data)
    lines = [",".join(["step", *tags])]
    for i, step in enumerate(STEPS):
        cells = [str(int(step))]
        for t in tags:
            v = float(data[t][i])
            cells.append("" if not logged(data, t, i) else ("nan" if np.isnan(v) else repr(v)))
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")


def _only_file(folder: Path) -> Path:
    files = [p for p in folder.iterdir() if "tfevents" in p.name]
    assert len(files) == 1, files
    return files[0]


def write_tensorboardx(data: dict[str, np.ndarray], folder: Path, rows: range,
                       name: str, extras: bool = False) -> None:
    from tensorboardX import SummaryWriter

    with tempfile.TemporaryDirectory() as tmp:
        w = SummaryWriter(tmp, flush_secs=3600, max_queue=100_000)
        if extras:
            w.add_text("args", json.dumps(CONFIG, indent=2), 0, walltime=WALL0)
        for i in rows:
            step = int(STEPS[i])
            wall = WALL0 + 10.0 * step
            for tag, values in data.items():
                if logged(data, tag, i):
                    w.add_scalar(tag, float(values[i]), step, walltime=wall)
            if extras and step % 50 == 0:
                lengths = np.random.default_rng(step).normal(200, 40, 64)
                w.add_histogram("train/completion_lengths", lengths, step, walltime=wall)
        w.close()
        folder.mkdir(parents=True, exist_ok=True)
        shutil.move(str(_only_file(Path(tmp))), folder / name)


def write_tensor_events(data: dict[str, np.ndarray], folder: Path, content: bool) -> None:
    """scalar_pb (float_val) or the TF2 tensor_content form, through EventFileWriter."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.scalar import metadata, summary_v2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    with tempfile.TemporaryDirectory() as tmp:
        w = EventFileWriter(tmp, max_queue_size=100_000, flush_secs=3600)
        seen: set[str] = set()
        for i, step in enumerate(STEPS):
            for tag, values in data.items():
                if not logged(data, tag, i):
                    continue
                x = float(values[i])
                if content:
                    tensor = tensor_pb2.TensorProto(
                        dtype=types_pb2.DT_FLOAT, tensor_shape=TensorShapeProto(),
                        tensor_content=struct.pack("<f", x),
                    )
                    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
                    if tag not in seen:  # TF2 writes the metadata on a tag's first event
                        value.metadata.CopyFrom(metadata.create_summary_metadata(None, None))
                        seen.add(tag)
                    summary = summary_pb2.Summary(value=[value])
                else:
                    summary = summary_v2.scalar_pb(tag, x)
                event = event_pb2.Event(wall_time=WALL0 + 10.0 * int(step), step=int(step),
                                        summary=summary)
                w.add_event(event)
        w.close()
        folder.mkdir(parents=True, exist_ok=True)
        shutil.move(str(_only_file(Path(tmp))), folder / "events.out.tfevents.1700000000.fixture")


def write_wandb(data: dict[str, np.ndarray]) -> None:
    os.environ.setdefault("WANDB_SILENT", "true")
    os.environ["WANDB_MODE"] = "offline"
    import wandb

    settings = wandb.Settings(
        x_disable_stats=True, x_disable_meta=True, x_disable_machine_info=True,
        disable_git=True, disable_code=True, save_code=False,
    )
    target = WB / "wandb"
    with tempfile.TemporaryDirectory() as tmp:
        run = wandb.init(
            mode="offline", dir=tmp, project="grpo-doctor-fixtures", name="grpo-synthetic",
            id="grpofix1", config=CONFIG, settings=settings,
        )
        run.config.update({"max_steps": int(STEPS[-1])})
        nested = {"train/kl", "train/grad_norm"}  # logged as {"train": {...}}
        for i, step in enumerate(STEPS):
            row: dict[str, object] = {}
            inner: dict[str, float] = {}
            for tag, values in data.items():
                if not logged(data, tag, i):
                    continue
                if tag in nested:
                    inner[tag.split("/", 1)[1]] = float(values[i])
                else:
                    row[tag] = float(values[i])
            row["train"] = inner
            if step % 50 == 0:
                lengths = np.random.default_rng(int(step)).normal(200, 40, 64)
                row["train/completion_lengths"] = wandb.Histogram(lengths)
                row["train/sample"] = f"completion at step {step}"
            run.log(row, step=int(step))
        run.summary["best_reward"] = float(np.nanmax(data["train/reward"]))
        run.finish()

        # A Hugging Face-style run: define_metric on train/global_step, eval in its own call.
        rng = np.random.default_rng(11)
        run = wandb.init(
            mode="offline", dir=tmp, project="grpo-doctor-fixtures", name="grpo-hf-style",
            id="grpofix2", config={"learning_rate": 2e-6, "beta": 0.0}, settings=settings,
        )
        run.define_metric("train/global_step")
        run.define_metric("*", step_metric="train/global_step", step_sync=True)
        for gs in range(1, 21):
            run.log({
                "train/reward": float(np.float32(0.3 + 0.02 * gs + rng.normal(0, 0.01))),
                "train/kl": float(np.float32(0.001 * gs)),
                "train/global_step": gs,
            })
            if gs % 10 == 0:
                run.log({"eval/reward": float(np.float32(0.25 + 0.01 * gs)),
                         "train/global_step": gs})
        run.finish()
        wandb.teardown()  # wait until wandb-core has flushed both logs
        _keep_log(Path(tmp) / "wandb", "grpofix1", target / "offline-run-20250101_000000-grpofix1")
        _keep_log(Path(tmp) / "wandb", "grpofix2", target / "offline-run-20250101_010000-grpofix2")


def write_wandb_resumed() -> None:
    os.environ.setdefault("WANDB_SILENT", "true")
    os.environ["WANDB_MODE"] = "offline"
    import wandb

    settings = wandb.Settings(
        x_disable_stats=True, x_disable_meta=True, x_disable_machine_info=True,
        disable_git=True, disable_code=True, save_code=False,
    )
    target = FIXTURES / "wandb_resumed" / "wandb"
    if target.parent.exists():
        shutil.rmtree(target.parent)

    def reward(step: int) -> float:
        return float(np.float32(0.2 + 0.6 * (1 - np.exp(-step / 30))))

    launches = [("grpores1", "grpo-resumed", "out/grpo-resumed", range(1, 61), 50),
                ("grpores2", "grpo-resumed", "out/grpo-resumed", range(51, 101), None),
                ("grpoother", "grpo-other", "out/grpo-other", range(1, 101), None)]
    with tempfile.TemporaryDirectory() as tmp:
        for run_id, name, output_dir, steps, shifted_after in launches:
            run = wandb.init(
                mode="offline", dir=tmp, project="grpo-doctor-fixtures", name=name, id=run_id,
                config={"learning_rate": 1e-6, "beta": 0.0, "output_dir": output_dir,
                        "run_name": name, "max_steps": 100}, settings=settings,
            )
            run.define_metric("train/global_step")
            run.define_metric("*", step_metric="train/global_step", step_sync=True)
            for gs in steps:
                value = reward(gs) + (1.0 if shifted_after and gs > shifted_after else 0.0)
                run.log({"train/reward": value,
                         "train/entropy": float(np.float32(0.9 - 0.002 * gs)),
                         "train/learning_rate": float(np.float32(1e-6 * (1 - gs / 100))),
                         "train/global_step": gs})
            run.finish()
        wandb.teardown()
        stamps = {"grpores1": "20250102_000000", "grpores2": "20250102_001000",
                  "grpoother": "20250102_002000"}
        for run_id, stamp in stamps.items():
            _keep_log(Path(tmp) / "wandb", run_id, target / f"offline-run-{stamp}-{run_id}")
    (target / "latest-run").symlink_to("offline-run-20250102_001000-grpores2")


def _keep_log(wandb_dir: Path, run_id: str, dest: Path) -> None:
    (src,) = [p for p in wandb_dir.glob(f"*-{run_id}") if p.is_dir() and not p.is_symlink()]
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src / f"run-{run_id}.wandb", dest / f"run-{run_id}.wandb")


def main() -> None:
    data = synthetic_run()
    for folder in (TB, WB):
        if folder.exists():
            shutil.rmtree(folder)
    TB.mkdir(parents=True)
    write_csv(data, TB / "grpo_synthetic.csv")
    every = range(len(STEPS))
    write_tensorboardx(data, TB / "simple_value", every,
                       "events.out.tfevents.1700000000.fixture", extras=True)
    write_tensor_events(data, TB / "tensor_float_val", content=False)
    write_tensor_events(data, TB / "tensor_content", content=True)
    # Restart: the first process logged 1-120, then resumed from the step-100 checkpoint; the
    # re-logged steps 101-120 differ (shifted by +1 in the first file).
    first = {t: v.copy() for t, v in data.items()}
    for v in first.values():
        v[STEPS > 100] += 1.0
    write_tensorboardx(first, TB / "restart", range(0, 120),
                       "events.out.tfevents.1700000000.fixture")
    write_tensorboardx(data, TB / "restart", range(100, len(STEPS)),
                       "events.out.tfevents.1700003600.fixture")
    write_wandb(data)
    total = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file()
                and (TB in p.parents or WB in p.parents))
    for p in sorted(list(TB.rglob("*")) + list(WB.rglob("*"))):
        if p.is_file():
            print(f"{p.stat().st_size:>8}  {p.relative_to(ROOT)}")
    print(f"{total:>8}  total")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["resumed"]:
        write_wandb_resumed()
    else:
        main()
        write_wandb_resumed()
