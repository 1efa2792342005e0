"""Hugging Face trainer_state.json: file, checkpoint folder, output folder."""

import json

import numpy as np
import pytest

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.importers import LoadOptions, detect_format, load_runs
from grpo_doctor.importers.trainer_state import IMPORTER
from tests.importers.common import FIXTURES, write

SYNTHETIC = FIXTURES / "trainer_state" / "synthetic-run"


def test_output_folder_reads_the_latest_checkpoint():
    (run,) = load_runs(SYNTHETIC)
    assert run.name == "synthetic-run"
    assert run.source.endswith("checkpoint-12/trainer_state.json")
    assert run.last_step == 12
    assert any("latest of 2 checkpoints" in n for n in run.notes)


def test_train_and_eval_entries_at_one_step_are_one_row():
    (run,) = load_runs(SYNTHETIC / "checkpoint-12")
    assert run.duplicate_steps == 0
    assert run.frame.loc[8, "eval_loss"] == pytest.approx(0.42)
    assert np.isnan(run.frame.loc[7, "eval_loss"])
    assert run.frame.loc[8, "reward_mean"] == 0.45


def test_config_and_summary():
    (run,) = load_runs(SYNTHETIC / "checkpoint-12" / "trainer_state.json")
    for key, value in {"max_steps": 12, "logging_steps": 1, "num_train_epochs": 1,
                       "train_batch_size": 8}.items():
        assert run.config[key] == value
    assert "log_history" not in run.config
    # Where training got to is its summary, not a setting (compare would list it as one).
    assert "global_step" not in run.config and run.summary["global_step"] == 12
    assert run.summary["train_runtime"] == 60.0
    # The closing entry's train_loss is a summary, never a point of the loss curve.
    assert run.frame.loc[12, "loss"] == pytest.approx(0.009)


def test_real_trainer_state():
    (run,) = load_runs(FIXTURES / "trainer_state" / "hf-real" / "checkpoint-12")
    assert list(run.frame.index) == [2, 4, 6, 8, 10, 12]
    assert {"loss", "grad_norm", "learning_rate"} <= set(run.mapping)
    assert run.frame["eval_loss"].notna().sum() == 3
    assert run.config["logging_steps"] == 2 and run.config["max_steps"] == 12


def test_state_without_log_history(tmp_path):
    path = write(tmp_path / "trainer_state.json", json.dumps({"global_step": 3, "epoch": 1.0}))
    assert detect_format(path).name == "trainer-state"
    with pytest.raises(FormatError, match=r"trainer_state\.json: no log_history"):
        load_runs(path)


def test_empty_history_and_bad_json(tmp_path):
    empty = write(tmp_path / "a.json", json.dumps({"log_history": []}))
    with pytest.raises(FormatError, match="log_history is empty"):
        IMPORTER.load(empty, LoadOptions())
    broken = write(tmp_path / "trainer_state.json", '{"log_history": [{"step": 1, "loss": ')
    with pytest.raises(FormatError, match=r"trainer_state\.json: not valid JSON"):
        IMPORTER.load(broken, LoadOptions())


def test_nan_logged_in_json_is_evidence(tmp_path):
    path = write(tmp_path / "trainer_state.json",
                 '{"log_history": [{"step": 1, "loss": NaN}, {"step": 2, "loss": 0.5},'
                 ' {"loss": 1.0}, "junk"], "max_steps": 2}')
    (run,) = load_runs(path)
    assert list(run.nan_steps["loss"]) == [1]
    assert any("without a step" in n for n in run.notes)


def test_sniff(tmp_path):
    assert IMPORTER.sniff(SYNTHETIC, b"") == 90
    assert IMPORTER.sniff(SYNTHETIC / "checkpoint-6", b"") == 95
    assert IMPORTER.sniff(tmp_path, b"") == 0
    other = write(tmp_path / "config.json", '{"hidden_size": 8}')
    assert IMPORTER.sniff(other, other.read_bytes()) == 0
    with pytest.raises(InputError, match=r"no trainer_state\.json"):
        IMPORTER.load(tmp_path, LoadOptions())


def test_a_bare_log_history_list_reads_like_its_trainer_state(tmp_path):
    """``json.dump(trainer.state.log_history, f)``: the list alone, no trainer state around it."""
    state = SYNTHETIC / "checkpoint-12" / "trainer_state.json"
    history = json.loads(state.read_text())["log_history"]
    bare = tmp_path / "step_logs.json"
    bare.write_text(json.dumps(history, indent=2))
    assert detect_format(bare).name == "trainer-state"
    (run,) = load_runs(bare)
    (expected,) = load_runs(state)
    assert run.name == "step_logs"
    assert run.frame.equals(expected.frame)
    # The closing entry's summary is the same; where training got to is only in the state.
    assert run.summary.items() <= expected.summary.items()
    assert set(expected.summary) - set(run.summary) <= set(json.loads(state.read_text()))
    assert run.config == {}


def test_a_json_list_of_other_dicts_is_not_a_log_history(tmp_path):
    other = write(tmp_path / "people.json", json.dumps([{"name": "a", "step": 1}] * 3, indent=2))
    with pytest.raises(FormatError, match="not a JSON training log"):
        load_runs(other)
