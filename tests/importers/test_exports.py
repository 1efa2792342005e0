"""W&B chart CSV exports."""

import numpy as np
import pytest

from grpo_doctor.errors import FormatError
from grpo_doctor.importers import LoadOptions, detect_format, load_runs
from grpo_doctor.importers.exports import IMPORTER, split_run_metric
from tests.importers.common import CANONICAL, FIXTURES, write


def test_split_on_the_last_separator():
    assert split_run_metric("grpo - lr 1e-6 - train/reward") == ("grpo - lr 1e-6", "train/reward")
    assert split_run_metric("grpo - train/reward__MIN") is None
    assert split_run_metric("Step") is None


def test_one_run_per_display_name():
    runs = load_runs(FIXTURES / "wandb-csv" / "export.csv")
    assert [r.name for r in runs] == ["grpo - lr 1e-6", "baseline"]
    grpo, base = runs
    assert not [c for c in grpo.frame.columns if c.endswith(("__MIN", "__MAX"))]
    diff = base.frame[CANONICAL].to_numpy() - grpo.frame[CANONICAL].to_numpy()
    np.testing.assert_allclose(diff[~np.isnan(diff)], 1.0)
    assert any("sampled" in n for n in base.notes)


def test_rows_of_other_runs_are_not_gaps(tmp_path):
    path = write(tmp_path / "wandb_export.csv",
                 "Step,a - reward,a - reward__MIN,b - reward\n1,0.5,0.4,\n2,,,0.7\n3,0.6,0.5,0.8\n")
    a, b = load_runs(path)
    assert list(a.frame.index) == [1, 3] and list(b.frame.index) == [2, 3]


def test_custom_x_axis_and_unnamed_columns(tmp_path):
    path = write(tmp_path / "export.csv", "epoch,note,run - kl\n0.5,x,0.1\n1.0,y,0.2\n")
    (run,) = load_runs(path)
    assert list(run.frame["kl"]) == [0.1, 0.2]
    assert any("without a run name" in n for n in run.notes)
    assert any("row numbers" in n for n in run.notes)


def test_header_only(tmp_path):
    path = write(tmp_path / "export.csv", "Step,run - kl\n")
    with pytest.raises(FormatError, match=r"export\.csv: the CSV has a header but no rows"):
        IMPORTER.load(path, LoadOptions())


def test_sniff(tmp_path):
    nb_table = write(tmp_path / "t.csv", "Step,Training Loss,rewards / fmt\n1,0.1,0.2\n")
    assert IMPORTER.sniff(nb_table, nb_table.read_bytes()) == 0
    assert detect_format(nb_table).name == "csv"
    export = FIXTURES / "wandb-csv" / "export.csv"
    assert IMPORTER.sniff(export, export.read_bytes()) == 85
