"""Write the corpus of bad inputs under tests/fixtures/bad/ (read by tests/test_bad_input.py).

Run from the repository root:

    python scripts/make_bad_inputs.py

How the corpus is made: one small healthy synthetic run (60 steps, numpy seed 11, values
rounded to 4 decimals: reward rising, entropy easing down, kl, grad_norm, loss) is the base, and
each file damages it in one way. Everything is deterministic: running the script again writes
the same bytes. The event files are framed by tensorboard's own ``RecordWriter`` around
tensorboard's ``Event`` protos; the W&B log holds wandb's ``Record`` protos in the LevelDB-log
blocks of a ``.wandb`` file, framed by the importer tests' ``write_log``. Files, and what is wrong
with each:

  empty.csv                     0 bytes
  garbage.bin                   4 KiB of random bytes
  events.out.tfevents.1700000000.csv-inside
                                a CSV named like a TensorBoard event file
  tensorboard-named.csv         a TensorBoard event file named .csv
  no-step.csv                   no step column
  non-numeric.csv               text cells ("abc", "#DIV/0!") in a metric column
  all-nan.csv                   kl logged as nan at every step
  inf.csv                       grad_norm logged as inf at step 30
  duplicate-steps.csv           steps 1-40, then 31-60 again (a resumed run)
  one-row.csv                   a header and one row
  header-only.csv               a header and no rows
  short-rows.csv                every third row shorter than the header
  long-rows.csv                 two rows longer than the header
  latin1.csv                    cp1252 bytes (not UTF-8) in the header and in a text column
  bom.csv                       a UTF-8 byte-order mark before the header
  tb-truncated/events.out.tfevents.1700000000.bad
                                cut in the middle of a record (as a live run's file is)
  tb-crc/events.out.tfevents.1700000000.bad
                                one flipped byte in a record's payload in the middle
  wandb-corrupt/run-badblock.wandb
                                a flipped byte in the first 32 KiB block
  no-table.ipynb                a notebook whose outputs hold no progress table
  no-log-history/trainer_state.json
                                a trainer state without log_history

Steps and columns, over a second base run (200 steps, numpy seed 12: entropy falling 98% in
its first 120 steps with the reward flat, an entropy collapse):

  steps-beyond-int64.csv        steps 10^19 + i: beyond what int64 holds
  steps-1e30.csv                steps 10^30 + i
  steps-2p62.csv                steps 2^62 + i: int64, but a float64 cannot tell them apart
  steps-some-beyond.csv         steps 1..150, then 50 rows at 10^19 + i
  steps-half.csv                steps 0, 0.5, 1, 1.5, ...: half are not whole numbers
  duplicate-entropy.csv         two 'entropy' columns: the first collapses, the second is 1.0
  duplicate-entropy-last.csv    the same with the collapsing copy second

Made at test time instead (too big, or not storable in git): a folder with a symlink loop, an
unreadable file, a single 50 MB line, devices, FIFOs and sockets, file names holding control
characters, a 100M-row parquet file, a 5 GiB sparse file, a baseline nested 100,000 deep and a
folder tree 1,000 levels deep.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.importers.test_wandb_offline.write_log
BAD = ROOT / "tests" / "fixtures" / "bad"
N_STEPS = 60
WALL0 = 1_700_000_000.0
KEYS = ["reward", "entropy", "kl", "grad_norm", "loss"]


def base_run() -> dict[str, np.ndarray]:
    """The healthy run every bad input damages."""
    rng = np.random.default_rng(11)
    i = np.arange(N_STEPS, dtype=np.float64)
    data = {
        "step": i + 1,
        "reward": 0.2 + 0.5 * (1 - np.exp(-i / 30)) + rng.normal(0, 0.02, N_STEPS),
        "entropy": 1.2 - 0.003 * i + rng.normal(0, 0.01, N_STEPS),
        "kl": 0.02 + 0.001 * i + np.abs(rng.normal(0, 0.002, N_STEPS)),
        "grad_norm": 0.5 + np.abs(rng.normal(0, 0.05, N_STEPS)),
        "loss": rng.normal(0, 0.01, N_STEPS),
    }
    return {k: np.round(v, 4) for k, v in data.items()}


def cell(value: float) -> str:
    return f"{int(value)}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:.4f}"


def csv_text(data: dict[str, np.ndarray], columns: list[str], rows: range | list[int]) -> str:
    lines = [",".join(columns)]
    lines += [",".join(cell(data[c][r]) for c in columns) for r in rows]
    return "\n".join(lines) + "\n"


def write(name: str, content: str | bytes) -> Path:
    path = BAD / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


# --- CSV ----------------------------------------------------------------------------------------


def csv_files(data: dict[str, np.ndarray]) -> None:
    cols = ["step", *KEYS]
    rows = range(N_STEPS)
    good = csv_text(data, cols, rows)
    write("empty.csv", b"")
    write("events.out.tfevents.1700000000.csv-inside", good)
    write("no-step.csv", csv_text(data, KEYS, rows))

    text = good.splitlines()
    for r in (5, 17, 33):  # rows 5, 17, 33 of the body: reward replaced by text
        parts = text[r].split(",")
        parts[1] = "abc" if r != 17 else "#DIV/0!"
        text[r] = ",".join(parts)
    write("non-numeric.csv", "\n".join(text) + "\n")

    nan = dict(data, kl=np.full(N_STEPS, np.nan))
    write("all-nan.csv", csv_text(nan, cols, rows))
    inf = dict(data, grad_norm=data["grad_norm"].copy())
    inf["grad_norm"][29] = np.inf  # step 30
    write("inf.csv", csv_text(inf, cols, rows))

    resumed = list(range(40)) + list(range(30, N_STEPS))  # steps 31-40 logged twice
    write("duplicate-steps.csv", csv_text(data, cols, resumed))
    write("one-row.csv", csv_text(data, cols, [0]))
    write("header-only.csv", ",".join(cols) + "\n")

    text = good.splitlines()
    for r in range(3, len(text), 3):
        text[r] = ",".join(text[r].split(",")[:3])  # step, reward, entropy only
    write("short-rows.csv", "\n".join(text) + "\n")
    text = good.splitlines()
    for r in (10, 20):
        text[r] += ",9.9,8.8"
    write("long-rows.csv", "\n".join(text) + "\n")

    latin = csv_text(dict(data, **{"entropie_é": data["entropy"]}),
                     ["step", "reward", "entropie_é", "kl"], rows)
    lines = latin.splitlines()
    lines[0] += ",commentaire"
    lines[1:] = [f"{line},café crème" for line in lines[1:]]
    write("latin1.csv", ("\n".join(lines) + "\n").encode("cp1252"))
    write("bom.csv", b"\xef\xbb\xbf" + good.encode("utf-8"))


# --- steps and columns ------------------------------------------------------------------------


def collapse_run(n: int = 200) -> dict[str, np.ndarray]:
    """An entropy collapse: entropy falls 98% over the first 120 steps, the reward stays flat."""
    rng = np.random.default_rng(12)
    i = np.arange(n, dtype=np.float64)
    entropy = 1.0 - 0.98 * np.minimum(i, 120) / 120 + rng.normal(0, 0.004, n)
    return {"entropy": np.round(np.maximum(entropy, 0.005), 4),
            "reward": np.round(0.5 + rng.normal(0, 0.01, n), 4)}


def step_files() -> None:
    data = collapse_run()
    n = len(data["entropy"])

    def table(steps: list[str], columns: dict[str, np.ndarray]) -> str:
        lines = ["step," + ",".join(columns)]
        lines += [",".join([s, *(f"{v:.4f}" for v in (c[r] for c in columns.values()))])
                  for r, s in enumerate(steps)]
        return "\n".join(lines) + "\n"

    write("steps-beyond-int64.csv", table([str(10**19 + i) for i in range(n)], data))
    write("steps-1e30.csv", table([str(10**30 + i) for i in range(n)], data))
    write("steps-2p62.csv", table([str(2**62 + i) for i in range(n)], data))
    write("steps-some-beyond.csv", table([str(i + 1) for i in range(150)]
                                         + [str(10**19 + i) for i in range(n - 150)], data))
    write("steps-half.csv", table([f"{i / 2:g}" for i in range(n)], data))
    flat = np.ones(n)
    lines = table([str(i + 1) for i in range(n)], {"entropy": data["entropy"],
                                                    "reward": data["reward"], "entropy2": flat})
    write("duplicate-entropy.csv", lines.replace("entropy2", "entropy", 1))
    lines = table([str(i + 1) for i in range(n)], {"entropy2": flat, "reward": data["reward"],
                                                    "entropy": data["entropy"]})
    write("duplicate-entropy-last.csv", lines.replace("entropy2", "entropy", 1))


# --- TensorBoard ---------------------------------------------------------------------------------


def event_file(data: dict[str, np.ndarray]) -> tuple[bytes, list[int]]:
    """An event file (file_version event, then one scalar event per tag and step) and the
    byte offset of each record."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    buf = io.BytesIO()
    writer = RecordWriter(buf)
    offsets = []

    def put(event: event_pb2.Event) -> None:
        offsets.append(buf.tell())
        writer.write(event.SerializeToString())

    put(event_pb2.Event(wall_time=WALL0, file_version="brain.Event:2"))
    for r in range(N_STEPS):
        step = int(data["step"][r])
        for key in KEYS:
            value = summary_pb2.Summary.Value(tag=f"train/{key}",
                                              simple_value=float(data[key][r]))
            put(event_pb2.Event(wall_time=WALL0 + step, step=step,
                                summary=summary_pb2.Summary(value=[value])))
    return buf.getvalue(), offsets


def tensorboard_files(data: dict[str, np.ndarray]) -> None:
    events, offsets = event_file(data)
    write("tensorboard-named.csv", events)
    # Cut 7 bytes into a record two thirds of the way through.
    cut = offsets[2 * len(offsets) // 3] + 7
    write("tb-truncated/events.out.tfevents.1700000000.bad", events[:cut])
    # Flip a payload byte of a record in the middle (its data CRC no longer matches).
    damaged = bytearray(events)
    damaged[offsets[len(offsets) // 2] + 12 + 3] ^= 0xFF
    write("tb-crc/events.out.tfevents.1700000000.bad", bytes(damaged))


# --- W&B ----------------------------------------------------------------------------------------


def wandb_files(data: dict[str, np.ndarray]) -> None:
    from wandb.proto import wandb_internal_pb2 as pb

    from tests.importers.test_wandb_offline import BLOCK, write_log

    records = []
    run = pb.Record()
    run.run.run_id = "badblock"
    run.run.display_name = "corrupt-block"
    records.append(run.SerializeToString())
    steps = 4 * N_STEPS  # enough records for two blocks
    for s in range(steps):
        rec = pb.Record()
        r = s % N_STEPS
        values = {"_step": s + 1, "_runtime": float(s), **{f"train/{k}": float(data[k][r])
                                                          for k in KEYS}}
        for key, value in values.items():
            item = rec.history.item.add()
            item.nested_key.extend(key.split("/"))
            item.value_json = json.dumps(value)
        rec.history.step.num = s + 1
        records.append(rec.SerializeToString())
    log = bytearray(write_log(records))
    assert len(log) > BLOCK, "the log must span two blocks"
    log[BLOCK - 3000] ^= 0xFF  # a chunk near the end of the first block
    write("wandb-corrupt/run-badblock.wandb", bytes(log))


# --- notebook, trainer state ---------------------------------------------------------------------


def json_files() -> None:
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# GRPO run"]},
            {"cell_type": "code", "execution_count": 1, "metadata": {},
             "source": ["print(\"training started\")\n", "print(\"done\")"],
             "outputs": [{"output_type": "stream", "name": "stdout",
                          "text": ["training started\n", "done\n"]}]},
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    write("no-table.ipynb", json.dumps(notebook, indent=1) + "\n")
    state = {"best_metric": None, "epoch": 1.0, "global_step": 60, "max_steps": 60,
             "logging_steps": 1, "train_batch_size": 8}
    write("no-log-history/trainer_state.json", json.dumps(state, indent=2) + "\n")


def main() -> None:
    if BAD.exists():
        shutil.rmtree(BAD)
    BAD.mkdir(parents=True)
    data = base_run()
    csv_files(data)
    step_files()
    tensorboard_files(data)
    wandb_files(data)
    json_files()
    write("garbage.bin", np.random.default_rng(0).bytes(4096))
    for path in sorted(BAD.rglob("*")):
        if path.is_file():
            print(f"{path.relative_to(ROOT)}  ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
