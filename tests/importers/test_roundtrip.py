"""The same synthetic run, written in every text format, reads back to the same canonical frame.

The fixtures come from scripts/make_fixtures_text.py; the wide CSV is the reference.
"""

import pandas as pd
import pytest

from grpo_doctor.importers import detect_format, load_runs
from tests.importers.common import CANONICAL, FIXTURES, assert_synthetic

FORMATS = {
    "trainer_state/synthetic-run": "trainer-state",
    "trainer_state/synthetic-run/checkpoint-12": "trainer-state",
    "trainer_state/synthetic-run/checkpoint-12/trainer_state.json": "trainer-state",
    "console/verl.log": "console",
    "console/trl.log": "console",
    "notebook/grpo.ipynb": "notebook",
    "wandb-csv/export.csv": "wandb-csv",
    "tensorboard-csv/synthetic": "tensorboard-csv",
    "long-csv/long.csv": "long-csv",
    "jsonl/run.jsonl": "jsonl",
    "parquet/run.parquet": "parquet",
}


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    (run,) = load_runs(FIXTURES / "csv" / "wide.csv")
    assert_synthetic(run)
    return run.frame[CANONICAL]


@pytest.mark.parametrize("path,fmt", FORMATS.items())
def test_format_reads_back_to_the_wide_csv_frame(path, fmt, reference):
    source = FIXTURES / path
    assert detect_format(source).name == fmt
    run = load_runs(source)[0]
    assert run.format == fmt
    pd.testing.assert_frame_equal(run.frame[CANONICAL], reference)
    assert_synthetic(run)


def test_every_format_maps_the_same_canonical_metrics():
    for path in FORMATS:
        run = load_runs(FIXTURES / path)[0]
        assert set(CANONICAL) <= set(run.mapping), path
