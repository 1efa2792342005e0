"""Parquet history tables (W&B history export layout)."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grpo_doctor.errors import FormatError
from grpo_doctor.importers import LoadOptions, detect_format, load_runs
from grpo_doctor.importers.parquet import IMPORTER
from tests.importers.common import FIXTURES, write


def test_fixture_uses_its_metadata():
    (run,) = load_runs(FIXTURES / "parquet" / "run.parquet")
    assert run.name == "synthetic-grpo"
    assert run.config == {"learning_rate": 1e-6, "beta": 0.04}
    assert run.summary["train/reward"] == 0.65
    assert run.step_source == "_step"


def test_folder_of_parts_structs_and_bad_metadata(tmp_path):
    part = {"_step": [1, 2], "loss": [0.5, None],
            "media": [{"_type": "histogram", "n": 1}, {"_type": "histogram", "n": 2}],
            "tags": [[1], [2]]}
    pq.write_table(pa.table(part), tmp_path / "part-0.parquet")
    pq.write_table(pa.table({"_step": [3], "loss": [float("nan")]}), tmp_path / "part-1.parquet")
    write(tmp_path / "run.json", "{not json")
    assert detect_format(tmp_path).name == "parquet"
    (run,) = load_runs(tmp_path)
    assert run.name == tmp_path.name
    assert list(run.frame.index) == [1, 2, 3]
    assert np.isnan(run.frame.loc[2, "loss"]) and list(run.nan_steps["loss"]) == [3]
    assert "media.n" in run.frame.columns
    assert any("non-scalar" in n for n in run.notes)
    assert any("run.json is not valid JSON" in n for n in run.notes)


def test_broken_parquet(tmp_path):
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 64)
    assert IMPORTER.sniff(path, path.read_bytes()) == 95
    with pytest.raises(FormatError, match=r"bad\.parquet: not a readable parquet file"):
        IMPORTER.load(path, LoadOptions())


def test_sniff(tmp_path):
    assert IMPORTER.sniff(tmp_path, b"") == 0
    meta = write(tmp_path / "x.json", json.dumps({"name": "x"}))
    assert IMPORTER.sniff(meta, meta.read_bytes()) == 0
