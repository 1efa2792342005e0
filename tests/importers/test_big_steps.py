"""Steps near the top of the 64-bit range (9e18 + k, 2^62 + k) in every importer that reads
long rows or its own step column: read exactly, never merged by a float64 round trip (which
collapses 300 distinct steps into a few, with a false "repeated rows" note); steps past
int64 are dropped and said."""

from __future__ import annotations

import json
import sqlite3
import struct
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor.importers import load_run
from grpo_doctor.store import integer_steps

N = 300
BASES = st.sampled_from([9 * 10**18, 1 << 62, (1 << 63) - N - 1, (1 << 53) + 1])
SLOW = settings(max_examples=4, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def reward(k: int) -> float:
    return 0.5 + 0.001 * k


def assert_exact(run, base: int) -> None:
    assert run.n_steps == N, run.notes
    assert run.first_step == base and run.last_step == base + N - 1
    assert not any("repeat" in n for n in run.notes), run.notes
    assert run.frame["reward_mean"].iloc[-1] == pytest.approx(reward(N - 1))


@SLOW
@given(base=BASES)
def test_long_csv(tmp_path_factory, base):
    path = tmp_path_factory.mktemp("long") / "long.csv"
    rows = ["step,metric,value"] + [f"{base + k},reward_mean,{reward(k)}" for k in range(N)]
    path.write_text("\n".join(rows) + "\n")
    assert_exact(load_run(path), base)


@SLOW
@given(base=BASES, with_gap=st.booleans())
def test_parquet_step_and_fetched_wandb_history(tmp_path_factory, base, with_gap):
    from grpo_doctor.remote.wandb_history import history_table

    folder = tmp_path_factory.mktemp("parquet")
    steps = [base + k for k in range(N)]
    columns = {"_step": pa.array(steps + ([None] if with_gap else []), pa.int64()),
               "reward_mean": pa.array([reward(k) for k in range(N)]
                                       + ([0.1] if with_gap else []))}
    pq.write_table(pa.table(columns), folder / "run.parquet")
    run = load_run(folder / "run.parquet")
    assert_exact(run, base)
    # A W&B history fetched into the cache, then read back by the parquet importer.
    rows = [{"_step": base + k, "reward_mean": reward(k)} for k in range(N)]
    if with_gap:
        rows.append({"reward_mean": 0.1})
    data, _, _ = history_table(rows)
    (folder / "fetched.parquet").write_bytes(data)
    assert_exact(load_run(folder / "fetched.parquet"), base)


def test_fetched_steps_past_int64_are_said_not_merged(tmp_path):
    from grpo_doctor.remote.wandb_history import history_table

    rows = [{"_step": k, "reward_mean": reward(k)} for k in range(N)]
    rows += [{"_step": (1 << 64) + k, "reward_mean": 0.0} for k in range(3)]
    data, _, _ = history_table(rows)
    (tmp_path / "fetched.parquet").write_bytes(data)
    run = load_run(tmp_path / "fetched.parquet")
    assert run.n_steps == N
    assert any("3 rows with a step beyond the 64-bit integer range" in n for n in run.notes)


def _mlflow_db(path: Path, base: int) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE experiments (experiment_id INTEGER, name TEXT, lifecycle_stage TEXT);"
        "CREATE TABLE runs (run_uuid TEXT, name TEXT, experiment_id INTEGER,"
        " lifecycle_stage TEXT);"
        "CREATE TABLE metrics (key TEXT, value REAL, timestamp INTEGER, run_uuid TEXT,"
        " step INTEGER, is_nan BOOLEAN);"
        "CREATE TABLE params (key TEXT, value TEXT, run_uuid TEXT);"
        "CREATE TABLE tags (key TEXT, value TEXT, run_uuid TEXT);"
        "INSERT INTO experiments VALUES (0, 'Default', 'active');"
        "INSERT INTO runs VALUES ('abc123', 'big', 0, 'active');")
    conn.executemany("INSERT INTO metrics VALUES ('reward_mean', ?, 0, 'abc123', ?, 0)",
                     [(reward(k), base + k) for k in range(N)])
    conn.commit()
    conn.close()
    return path


@SLOW
@given(base=BASES)
def test_mlflow_database_and_file_store(tmp_path_factory, base):
    folder = tmp_path_factory.mktemp("mlflow")
    assert_exact(load_run(_mlflow_db(folder / "mlflow.db", base)), base)
    run_dir = folder / "mlruns" / "1" / "abc123"
    (run_dir / "metrics").mkdir(parents=True)
    (folder / "mlruns" / "1" / "meta.yaml").write_text(
        "experiment_id: '1'\nname: exp\nlifecycle_stage: active\n")
    (run_dir / "meta.yaml").write_text(
        "run_id: abc123\nrun_name: big\nlifecycle_stage: active\nexperiment_id: '1'\n")
    (run_dir / "metrics" / "reward_mean").write_text(
        "".join(f"0 {reward(k)} {base + k}\n" for k in range(N)))
    assert_exact(load_run(folder / "mlruns"), base)


@SLOW
@given(base=BASES)
def test_trackio_database(tmp_path_factory, base):
    path = tmp_path_factory.mktemp("trackio") / "project.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE metrics (id INTEGER PRIMARY KEY, timestamp TEXT, run_name TEXT,"
                 " step INTEGER, metrics TEXT)")
    conn.executemany("INSERT INTO metrics (timestamp, run_name, step, metrics) "
                     "VALUES ('', 'big', ?, ?)",
                     [(base + k, json.dumps({"reward_mean": reward(k)})) for k in range(N)])
    conn.commit()
    conn.close()
    assert_exact(load_run(path), base)


def _framed(records: list[bytes]) -> bytes:
    """Records in LevelDB-log chunks of 32 KiB blocks after a 7-byte SwanLab header."""
    block = 32768
    out = bytearray(b":SWL" + struct.pack("<HB", 0xE1D6, 2))
    for data in records:
        first = True
        while True:
            left = block - len(out) % block
            if left < 7:
                out += bytes(left)
                continue
            frag, data = data[: left - 7], data[left - 7:]
            last = not data
            kind = (1 if last else 2) if first else (4 if last else 3)
            crc = zlib.crc32(frag, zlib.crc32(bytes([kind])))
            out += struct.pack("<IHB", crc, len(frag), kind) + frag
            first = False
            if last:
                break
    return bytes(out)


def _swanlab_log(base: int) -> bytes:
    from grpo_doctor.importers.swanlab_log import _record_class

    record = _record_class()
    records = []
    start = record()
    start.start.name, start.start.project, start.start.id = "big", "p", "abc123"
    records.append(start.SerializeToString())
    for k in range(N):
        point = record()
        point.scalar.key, point.scalar.step = "reward_mean", base + k
        point.scalar.value.number = reward(k)
        records.append(point.SerializeToString())
    return _framed(records)


@SLOW
@given(base=BASES)
def test_swanlab_log(tmp_path_factory, base):
    path = tmp_path_factory.mktemp("swanlab") / "run-abc123.swanlab"
    path.write_bytes(_swanlab_log(base))
    assert_exact(load_run(path), base)


@given(st.lists(st.one_of(st.integers(-(1 << 70), 1 << 70), st.none(), st.text(max_size=4),
                          st.floats(allow_nan=True)), max_size=30))
def test_integer_steps_is_exact_for_any_mix(values):
    steps, masks = integer_steps(pd.Series(values, dtype=object))
    for value, step, missing, frac, out in zip(values, steps, masks["missing"],
                                               masks["fractional"], masks["out_of_range"]):
        if type(value) is int:
            in_range = -(1 << 63) <= value < (1 << 63)
            assert (step == value) if in_range else out
        if not (missing or frac or out):
            assert isinstance(step, np.integer)
