"""Jupyter notebooks: the Trainer progress table in cell outputs."""

import json

import numpy as np
import pytest

from grpo_doctor.errors import FormatError
from grpo_doctor.importers import LoadOptions, load_runs
from grpo_doctor.importers.notebook import IMPORTER, html_tables
from tests.importers.common import FIXTURES, write


def _nb(*outputs: dict) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "source": [], "outputs": [o]} for o in outputs]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _html_output(header: list[str], rows: list[list[str]]) -> dict:
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    html = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return {"output_type": "display_data", "data": {"text/html": html}, "metadata": {}}


def test_grpo_table_wins_over_a_longer_sft_table():
    (run,) = load_runs(FIXTURES / "notebook" / "grpo.ipynb")
    assert run.name == "grpo"
    assert run.n_steps == 12  # the SFT table above it has 20 rows but no reward
    assert run.config["max_steps"] == 12
    assert any("2 training tables" in n for n in run.notes)
    # "No Log" is a gap, "nan" is NaN evidence.
    assert np.isnan(run.frame.loc[3, "grad_norm"]) and "grad_norm" not in run.nan_steps
    assert list(run.nan_steps["kl"]) == [7]


def test_tables_that_continue_each_other_are_joined(tmp_path):
    header = ["Step", "Training Loss", "reward"]
    path = write(tmp_path / "resumed.ipynb", _nb(
        _html_output(header, [["1", "0.1", "0.5"], ["2", "0.1", "No Log"]]),
        _html_output(header, [["3", "0.2", "0.7"]]),
    ))
    (run,) = load_runs(path)
    assert list(run.frame.index) == [1, 2, 3]
    assert list(run.frame["reward_mean"].fillna(-1)) == [0.5, -1, 0.7]


def test_epoch_tables_say_so(tmp_path):
    header = ["Epoch", "Training Loss", "Validation Loss"]
    path = write(tmp_path / "sft.ipynb", _nb(_html_output(header, [["1", "0.5", "0.6"]])))
    (run,) = load_runs(path)
    assert list(run.frame.index) == [1]
    assert any("epoch numbers" in n for n in run.notes)


def test_text_table_and_printed_dicts_are_fallbacks(tmp_path):
    stream = {"output_type": "stream", "name": "stdout",
              "text": ["Step\tTraining Loss\treward\n", "1\t0.5\t1.0\n", "2\t0.4\t1.5\n"]}
    (run,) = load_runs(write(tmp_path / "text.ipynb", _nb(stream)))
    assert list(run.frame["reward_mean"]) == [1.0, 1.5]
    dicts = {"output_type": "stream", "name": "stdout",
             "text": ["{'loss': 0.5, 'reward': 1.0, 'step': 10}\n"]}
    (run,) = load_runs(write(tmp_path / "dicts.ipynb", _nb(dicts)))
    assert list(run.frame.index) == [10]
    assert any("printed log lines" in n for n in run.notes)


def test_no_table_is_a_format_error(tmp_path):
    path = write(tmp_path / "plain.ipynb", _nb({"output_type": "stream", "text": "hello"}))
    with pytest.raises(FormatError, match=r"plain\.ipynb: no training progress table in the"):
        IMPORTER.load(path, LoadOptions())


@pytest.mark.parametrize("text,message", [
    ('{"cells": [', "not a valid notebook"),
    ('{"metadata": {}}', "not a Jupyter notebook"),
    ("[1, 2]", "not a Jupyter notebook"),
])
def test_broken_notebooks(tmp_path, text, message):
    with pytest.raises(FormatError, match=message):
        IMPORTER.load(write(tmp_path / "x.ipynb", text), LoadOptions())


def test_html_parser_reads_cells_as_text():
    html = ("<table><tr><th>Step</th><th>rewards / <b>fmt</b> &amp; co</th></tr>"
            "<tr><td>1</td><td> 0.5 </td></tr><tr><td>2</td></tr></table>")
    assert html_tables(html) == [(["Step", "rewards / fmt & co"], [["1", "0.5"], ["2", ""]])]


def test_sniff(tmp_path):
    nb = write(tmp_path / "a.ipynb", _nb())
    assert IMPORTER.sniff(nb, nb.read_bytes()) == 90
    other = write(tmp_path / "a.json", _nb())
    assert IMPORTER.sniff(other, other.read_bytes()) == 70
    assert IMPORTER.sniff(tmp_path / "b.ipynb", b"\x00\x01") == 0
