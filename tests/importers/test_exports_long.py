"""Long (tidy) CSV: step, metric, value."""

import pytest

from grpo_doctor.errors import FormatError
from grpo_doctor.importers import LoadOptions, detect_format, load_runs
from grpo_doctor.importers.exports_long import IMPORTER
from tests.importers.common import write


def test_run_column_splits_runs_and_text_values_parse(tmp_path):
    path = write(tmp_path / "tidy.csv",
                 "run,step,key,value\nA,1,reward,0.5\nA,2,reward,nan\nB,1,kl,0.1\nB,1,kl,0.2\n"
                 "B,x,kl,0.3\nB,2,kl,oops\n")
    assert detect_format(path).name == "long-csv"
    a, b = load_runs(path)
    assert (a.name, b.name) == ("A", "B")
    assert list(a.nan_steps["reward_mean"]) == [2]
    assert b.frame.loc[1, "kl"] == 0.2
    assert any("repeated" in n for n in b.notes) and any("without a step" in n for n in b.notes)


def test_not_long(tmp_path):
    path = write(tmp_path / "wide.csv", "step,loss,reward\n1,0.1,0.2\n")
    assert IMPORTER.sniff(path, path.read_bytes()) == 0
    with pytest.raises(FormatError, match=r"wide\.csv: a long CSV needs"):
        IMPORTER.load(path, LoadOptions())
