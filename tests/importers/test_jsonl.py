"""JSON lines and the record helpers other importers share."""

import math

import numpy as np
import pytest

from grpo_doctor.errors import FormatError
from grpo_doctor.importers import LoadOptions, load_runs
from grpo_doctor.importers._common import to_number
from grpo_doctor.importers._records import flatten, records_frame
from grpo_doctor.importers.jsonl import IMPORTER
from tests.importers.common import FIXTURES, write


def test_fixture_counts_the_broken_line():
    (run,) = load_runs(FIXTURES / "jsonl" / "run.jsonl")
    assert run.mapping["reward_mean"] == "train/reward"
    assert run.mapping["reward_component/format_reward"] == "rewards/format_reward/mean"
    assert "1 line was not a JSON object and was skipped" in run.notes


@pytest.mark.parametrize("value,expected", [
    (1, 1.0), (True, 1.0), ("0.25", 0.25), (" -1e-3 ", -0.001), ("NaN", math.nan),
    ("-inf", -math.inf), ("nan(ind)", math.nan), (10**400, math.inf), ("abc", None),
    (None, None), ([1], None), ("1/2", None),
])
def test_to_number(value, expected):
    got = to_number(value)
    if expected is None:
        assert got is None
    elif math.isnan(expected):
        assert got is not None and math.isnan(got)
    else:
        assert got == expected


def test_flatten_and_records_frame_tell_nan_from_gaps():
    assert flatten({"a": {"b": 1, "c": {"d": 2}}, "e": 3}) == {"a/b": 1, "a/c/d": 2, "e": 3}
    frame, explicit = records_frame([{"x": 1.0, "y": math.nan}, {"x": math.nan}, {"y": 2.0}])
    assert set(explicit) == {"x", "y"}
    assert explicit["x"].tolist() == [False, True, False]
    assert explicit["y"].tolist() == [True, False, False]
    assert np.isnan(frame.loc[2, "x"])


def test_steps_strings_and_bad_lines(tmp_path):
    path = write(tmp_path / "log.jsonl",
                 '{"_step": 2, "loss": "0.5", "tag": "x"}\n[1, 2]\n\n{"_step": 1, "kl": NaN}\n')
    (run,) = load_runs(path)
    assert list(run.frame.index) == [1, 2]
    assert run.restarts == 1  # the step went backwards in file order
    assert list(run.nan_steps["kl"]) == [1]
    assert "tag" not in run.frame.columns


def test_nothing_parses(tmp_path):
    path = write(tmp_path / "bad.jsonl", "not json\n{broken\n")
    with pytest.raises(FormatError, match=r"bad\.jsonl: no line is a JSON object"):
        IMPORTER.load(path, LoadOptions())


def test_sniff(tmp_path):
    a = write(tmp_path / "a.jsonl", '\n{"loss": 1}\n')
    b = write(tmp_path / "a.log", '{"loss": 1}\n')
    c = write(tmp_path / "c.json", '{\n  "loss": 1\n}\n')
    assert IMPORTER.sniff(a, a.read_bytes()) == 85
    assert IMPORTER.sniff(b, b.read_bytes()) == 80
    assert IMPORTER.sniff(c, c.read_bytes()) == 0


def test_verl_file_logger_records_are_unwrapped(tmp_path):
    # verl's `file` logger: {"step": N, "data": {metrics}}; the metrics keep their own names.
    path = write(tmp_path / "gsm8k.jsonl",
                 '{"step": 0, "data": {"val-core/openai/gsm8k/acc/mean@1": 0.1}}\n'
                 '{"step": 1, "data": {"critic/score/mean": 0.2, "actor/grad_norm": 3.0}}\n'
                 '{"step": 2, "data": {"critic/score/mean": 0.4, "actor/grad_norm": null}}\n')
    (run,) = load_runs(path)
    assert run.mapping["reward_mean"] == "critic/score/mean"
    assert run.mapping["heldout_score"] == "val-core/openai/gsm8k/acc/mean@1"
    assert list(run.frame.index) == [0, 1, 2]
    assert run.frame.loc[2, "reward_mean"] == 0.4


def test_ms_swift_and_llama_factory_steps_and_a_cut_off_last_line(tmp_path):
    """ms-swift's logging.jsonl names its step only as "global_step/max_steps": "12/547" (read
    as row numbers 0, 1); LLaMA-Factory's trainer_log.jsonl as current_steps (a gap of 1,200
    steps disappeared); a paste cut off in its last line lost that line's values."""
    swift = write(tmp_path / "logging.jsonl",
                  '{"loss": 0.1, "reward": 0.5, "global_step/max_steps": "1/547"}\n'
                  '{"loss": 0.2, "reward": 0.6, "global_step/max_steps": "2/547"}\n'
                  '{"loss": 0.3, "reward": 0.7, "global_step/max_steps": "3/547", "memo')
    (run,) = load_runs(swift)
    assert list(run.frame.index) == [1, 2, 3]
    assert list(run.frame["reward_mean"]) == [0.5, 0.6, 0.7]
    assert any("last line was cut off" in n for n in run.notes), run.notes
    factory = write(tmp_path / "trainer_log.jsonl",
                    '{"current_steps": 10, "total_steps": 1287, "reward": 0.13}\n'
                    '{"current_steps": 20, "total_steps": 1287, "reward": 0.14}\n'
                    '{"current_steps": 1260, "total_steps": 1287, "reward": 0.12}\n')
    assert list(load_runs(factory)[0].frame.index) == [10, 20, 1260]


def test_a_line_pasted_above_the_json_lines_is_skipped(tmp_path):
    """trl#986's paste began with a line of its own ("mean|std") above the JSON lines: the
    file read as no known format (exit 2), while --from jsonl read it."""
    path = write(tmp_path / "paste.jsonl", '"mean|std"\n' + "".join(
        f'{{"step": {k}, "reward": {0.1 * k}}}\n' for k in range(1, 5)))
    (run,) = load_runs(path)
    assert run.format == "jsonl" and list(run.frame.index) == [1, 2, 3, 4]
