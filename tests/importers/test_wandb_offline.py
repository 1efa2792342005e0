"""W&B offline importer: run folders, the .wandb block framing, damaged logs, config.

Fixtures come from ``scripts/make_fixtures_tb_wandb.py`` (``wandb.init(mode="offline")`` +
``wandb.log``); ``tensorboard/grpo_synthetic.csv`` holds the same values.
"""

from __future__ import annotations

import json
import shutil
import struct
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor.errors import FormatError, GrpoDoctorError
from grpo_doctor.importers import LoadOptions, detect_format, load_run, load_runs
from grpo_doctor.importers import wandb_offline as wo
from grpo_doctor.importers._bytes import Buffer
from grpo_doctor.importers.wandb_offline import bulk as wo_bulk
from grpo_doctor.importers.wandb_offline import log as wo_log
from grpo_doctor.store import Run
from tests.importers.common import FIXTURES
from tests.importers.test_tensorboard import CSV, assert_same

FIX = FIXTURES / "wandb"
WANDB_DIR = FIX / "wandb"
RUN_DIR = WANDB_DIR / "offline-run-20250101_000000-grpofix1"
RUN_FILE = RUN_DIR / "run-grpofix1.wandb"
HF_DIR = WANDB_DIR / "offline-run-20250101_010000-grpofix2"
CONFIG = {
    "learning_rate": 1e-6, "beta": 0.04, "num_generations": 8, "max_completion_length": 512,
    "model": {"name": "Qwen2.5-0.5B-Instruct", "dtype": "bfloat16"}, "max_steps": 200,
}
BLOCK = 32768


@pytest.fixture(scope="module")
def expected() -> Run:
    return load_run(CSV)


def assert_subset(run: Run, expected: Run) -> None:
    """Every row read equals the CSV's row for that step."""
    assert list(run.frame.columns) == list(expected.frame.columns)
    want = expected.frame.loc[run.frame.index]
    np.testing.assert_allclose(run.frame.to_numpy(), want.to_numpy(), rtol=1e-6, equal_nan=True)


def write_log(records: list[bytes], version: int = 0) -> bytes:
    """A .wandb log: header, then LevelDB-log chunks in 32 KiB blocks."""
    out = bytearray(b":W&B" + struct.pack("<HB", 0xBEE1, version))
    for data in records:
        first = True
        while True:
            left = BLOCK - len(out) % BLOCK
            if left < 7:
                out += bytes(left)
                continue
            frag, data = data[: left - 7], data[left - 7 :]
            last = not data
            kind = (1 if last else 2) if first else (4 if last else 3)
            crc = zlib.crc32(frag, zlib.crc32(bytes([kind])))
            out += struct.pack("<IHB", crc, len(frag), kind) + frag
            first = False
            if last:
                break
    return bytes(out)


def history(items: dict[str, object], step: int | None = None, nested: bool = True) -> bytes:
    from wandb.proto import wandb_internal_pb2 as pb

    rec = pb.Record()
    for key, value in items.items():
        item = rec.history.item.add()
        if nested:
            item.nested_key.extend(key.split("."))
        else:
            item.key = key
        item.value_json = json.dumps(value)
    if step is not None:
        rec.history.step.num = step
    return rec.SerializeToString()


def load_file(path: Path) -> list[Run]:
    return wo.IMPORTER.load(path, LoadOptions())


# --- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [RUN_DIR, RUN_FILE])
def test_run_folder_and_file_round_trip(source: Path, expected: Run) -> None:
    assert detect_format(source).name == "wandb-offline"
    run = load_run(source)
    assert run.format == "wandb-offline"
    assert run.name == "grpo-synthetic"  # the display name
    assert run.source == str(RUN_DIR)
    assert_same(run, expected)
    assert run.config == CONFIG
    assert run.summary["best_reward"] == pytest.approx(float(np.nanmax(
        expected.frame["reward_mean"])))
    assert not any(k.startswith("_wandb") for k in run.summary)
    assert any("2 non-scalar keys skipped" in n for n in run.notes)


def test_nested_dicts_are_flattened_with_slashes() -> None:
    run = load_run(RUN_DIR)
    # train/kl and train/grad_norm were logged as {"train": {"kl": ..., "grad_norm": ...}}
    assert run.mapping["kl"] == "train/kl"
    assert run.mapping["grad_norm"] == "train/grad_norm"
    assert run.nan_steps["grad_norm"].tolist() == [150]


@pytest.mark.parametrize("source", [FIX, WANDB_DIR])
def test_wandb_folder_and_its_parent_hold_two_runs(source: Path, expected: Run) -> None:
    assert wo.IMPORTER.sniff(source, b"") == 90
    runs = load_runs(source, format="wandb-offline")
    assert sorted(r.name for r in runs) == ["grpo-hf-style", "grpo-synthetic"]
    assert_same(next(r for r in runs if r.name == "grpo-synthetic"), expected)


def test_run_picked_by_id_display_name_or_folder() -> None:
    for key in ("grpofix2", "grpo-hf-style", HF_DIR.name):
        (run,) = load_runs(WANDB_DIR, run=key)
        assert run.name == key
        assert run.config == {"learning_rate": 2e-6, "beta": 0.0}


def test_define_metric_step_is_the_step() -> None:
    run = load_run(HF_DIR)
    assert run.step_source == "train/global_step"
    assert run.frame.index.tolist() == list(range(1, 21))
    assert run.frame["heldout_score"].dropna().index.tolist() == [10, 20]
    assert run.frame["reward_mean"].notna().all()


def test_duplicate_display_names_fall_back_to_folder_names(tmp_path: Path) -> None:
    shutil.copytree(RUN_DIR, tmp_path / "wandb" / "offline-run-a")
    shutil.copytree(RUN_DIR, tmp_path / "wandb" / "offline-run-b")
    runs = load_runs(tmp_path)
    assert sorted(r.name for r in runs) == ["offline-run-a", "offline-run-b"]


def test_config_yaml_is_read_and_unwrapped(tmp_path: Path) -> None:
    run_dir = tmp_path / "run-20250101_000000-grpofix1"
    shutil.copytree(RUN_DIR, run_dir)
    (run_dir / "files").mkdir()
    (run_dir / "files" / "config.yaml").write_text(
        "wandb_version: 1\n_wandb:\n  value:\n    cli_version: 0.19.0\n"
        "beta:\n  desc: null\n  value: 0.5\nseed:\n  desc: null\n  value: 42\n"
    )
    run = load_run(run_dir)
    assert run.config["seed"] == 42  # only in config.yaml
    assert run.config["beta"] == 0.04  # the log's own config wins
    assert "_wandb" not in run.config and "wandb_version" not in run.config


# --- damaged logs -----------------------------------------------------------------------------


def test_truncated_live_log_reads_complete_records(tmp_path: Path, expected: Run) -> None:
    data = RUN_FILE.read_bytes()
    path = tmp_path / "run-live.wandb"
    path.write_bytes(data[: len(data) - 20_000])
    (run,) = load_file(path)
    assert any(n.startswith("truncated final record at byte") for n in run.notes)
    assert 150 < run.n_steps < 200
    assert run.frame.index[0] == 1
    assert_subset(run, expected)


def test_corrupt_block_is_skipped_and_the_rest_read(tmp_path: Path, expected: Run) -> None:
    data = bytearray(RUN_FILE.read_bytes())
    assert len(data) > 4 * BLOCK
    data[2 * BLOCK + 5000] ^= 0xFF
    path = tmp_path / "run-bad.wandb"
    path.write_bytes(bytes(data))
    (run,) = load_file(path)
    corrupt = [n for n in run.notes if n.startswith("corrupt block at byte")]
    assert len(corrupt) == 1
    offset = int(corrupt[0].split()[4])
    assert 2 * BLOCK <= offset <= 2 * BLOCK + 5000
    lost = 200 - run.n_steps
    assert 0 < lost < 40  # only what was in the rest of that block
    assert run.frame.index[0] == 1 and run.frame.index[-1] == 200
    assert_subset(run, expected)


def test_random_bytes_and_bad_headers_are_format_errors(tmp_path: Path) -> None:
    path = tmp_path / "run-x.wandb"
    path.write_bytes(np.random.default_rng(0).bytes(5000))
    assert wo.IMPORTER.sniff(path, path.read_bytes()) == 0
    with pytest.raises(FormatError, match="not a W&B run file"):
        load_file(path)
    path.write_bytes(write_log([]))
    assert wo.IMPORTER.sniff(path, path.read_bytes()) == 95
    with pytest.raises(FormatError, match="no logged history"):
        load_file(path)
    path.write_bytes(write_log([history({"_step": 0, "text": "hello"})]))
    with pytest.raises(FormatError, match="no scalar metrics"):
        load_file(path)


def test_sniff_scores(tmp_path: Path) -> None:
    assert wo.IMPORTER.sniff(tmp_path, b"") == 0
    (tmp_path / "run-abc.wandb").write_bytes(b"not a log")
    assert wo.IMPORTER.sniff(tmp_path, b"") == 0
    head = RUN_FILE.read_bytes()[:65536]
    assert wo.IMPORTER.sniff(RUN_FILE, head) == 95
    assert wo.IMPORTER.sniff(RUN_DIR, b"") == 90


# --- values, keys and steps from hand-written logs ---------------------------------------------


def test_legacy_keys_dicts_media_nan_and_records_across_blocks(tmp_path: Path) -> None:
    big = "x" * 70_000  # one record spanning three blocks (FIRST, MIDDLE, LAST)
    records = [
        history({"_step": 0, "train": {"kl": 0.1, "h": {"_type": "histogram", "bins": [1]}},
                 "loss": float("nan"), "_runtime": 1.0, "_wandb": {"runtime": 1}},
                nested=False),
        history({"_step": 1, "loss": 2.0, "note": big, "flag": True, "lst": [1, 2],
                 "empty": None}, nested=False),
        history({"_step": 2, "loss": float("inf"), "train.kl": 0.3}),
    ]
    path = tmp_path / "run-legacy.wandb"
    path.write_bytes(write_log(records))
    (run,) = load_file(path)
    f = run.frame
    assert f.index.tolist() == [0, 1, 2]
    assert run.mapping["kl"] == "train/kl"
    np.testing.assert_allclose(f["kl"], [0.1, np.nan, 0.3])
    assert np.isnan(f["loss"][0]) and f["loss"][1] == 2.0 and np.isinf(f["loss"][2])
    assert run.nan_steps["loss"].tolist() == [0]
    np.testing.assert_allclose(f["flag"], [np.nan, 1.0, np.nan])
    assert "note" not in f.columns and "lst" not in f.columns and "empty" not in f.columns
    assert not any(c.startswith(("train/h", "_")) for c in f.columns)


def test_steps_fall_back_to_record_step_then_runtime(tmp_path: Path) -> None:
    path = tmp_path / "run-steps.wandb"
    path.write_bytes(write_log([history({"loss": 1.0}, step=5), history({"loss": 2.0}, step=6)]))
    (run,) = load_file(path)
    assert run.frame.index.tolist() == [5, 6]
    path.write_bytes(write_log([history({"loss": 1.0, "_runtime": 9.0}),
                                history({"loss": 2.0, "_runtime": 3.0})]))
    (run,) = load_file(path)
    assert run.frame["loss"].tolist() == [2.0, 1.0]
    assert any("_runtime order" in n for n in run.notes)


# --- fuzzing: only GrpoDoctorError or a run, never another exception ---------------------------


def _try_load(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run-fuzz.wandb"
        path.write_bytes(data)
        try:
            runs = load_file(path)
        except GrpoDoctorError:
            return
        assert runs and runs[0].n_steps > 0


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=4096), st.booleans())
def test_arbitrary_bytes_never_crash(data: bytes, with_header: bool) -> None:
    _try_load((b":W&B\xe1\xbe\x00" if with_header else b"") + data)


_HEAD = RUN_FILE.read_bytes()[: 3 * BLOCK]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(7, len(_HEAD) - 1), st.integers(0, 255)), max_size=8),
       st.integers(8, len(_HEAD)), st.lists(st.binary(max_size=300), max_size=4))
def test_damaged_real_log_and_framed_junk_never_crash(
    edits: list[tuple[int, int]], cut: int, junk: list[bytes]
) -> None:
    data = bytearray(_HEAD[:cut])
    for pos, byte in edits:
        if pos < len(data):
            data[pos] = byte
    _try_load(bytes(data))
    _try_load(write_log(junk))  # valid framing around arbitrary record bytes


# --- the bulk paths against the record-by-record ones -------------------------------------------


def _spans_as_records(data: bytes) -> list[bytes] | None:
    b = Buffer(bytearray(data) + bytes(Buffer._PAD), len(data))
    spans = wo_log._clean_log_spans(b)
    if spans is None:
        return None
    buf, starts, ends = spans
    return [bytes(buf.data[s:e]) for s, e in zip(starts.tolist(), ends.tolist())]


def damaged(log: bytes, damage: str, where: float) -> bytes:
    """``log`` with a bit flipped, cut, or followed by pre-allocated zeros, at ``where`` (0-1)."""
    data = bytearray(log)
    at = 7 + int(where * max(len(data) - 8, 0))
    if damage == "flip" and len(data) > 8:
        data[at] ^= 0x20
    elif damage == "cut":
        data = data[:at]
    elif damage == "zeros":  # pre-allocated space after the last record
        data += bytes(BLOCK - len(data) % BLOCK + BLOCK)
    return bytes(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(min_size=0, max_size=40_000), max_size=12),
       st.sampled_from(["none", "flip", "cut", "zeros"]), st.floats(0, 1))
def test_block_framing_in_bulk_equals_the_generator(
    records: list[bytes], damage: str, where: float
) -> None:
    # Records of any size: FULL chunks, and FIRST/MIDDLE/LAST ones across blocks.
    data = damaged(write_log(records), damage, where)
    notes: list[str] = []
    expected = list(wo.iter_log_records(data, notes))
    got = _spans_as_records(data)
    if got is not None:  # taken only when the generator would note nothing
        assert got == expected
        assert notes == []
    elif damage == "none":
        pytest.fail("a clean log was not framed in bulk")


def test_real_log_is_framed_in_bulk() -> None:
    data = RUN_FILE.read_bytes()
    notes: list[str] = []
    assert _spans_as_records(data) == list(wo.iter_log_records(data, notes))
    assert notes == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(json.dumps),
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(["-0", "0", "-0.0", "0e0", "1E+05", "2.5e-324", "1e400", "-1e400",
                     "1.00000000000000011102230246251565404236316680908203125",
                     "1" + "0" * 400, "+1", ".5", "1.", "01", "-01", "1.e5", "-.5", "00",
                     "1e", "--1", "NaN", "Infinity", "true", "null", '"1"', " 1", "1_0"]),
), min_size=1, max_size=40))
def test_numbers_in_bulk_equal_json(tokens: list[str]) -> None:
    def reference() -> np.ndarray | None:
        try:
            values = [json.loads(t) for t in tokens]
        except ValueError:
            return None
        if not all(type(v) in (int, float) for v in values):
            return None
        return np.array([wo._float(v) for v in values], dtype=np.float64)

    data = "".join(tokens).encode()
    lengths = np.array([len(t.encode()) for t in tokens], dtype=np.int32)
    got = wo_bulk._json_numbers(data, lengths)
    want = reference()
    if want is None:
        assert got is None  # not every token a JSON number: left to json.loads
    elif got is not None:  # None is allowed (json.loads then reads them)
        np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
    if want is not None and all(t.lstrip("-")[:1].isdigit() for t in tokens):
        assert got is not None  # plain numbers are read in bulk


def test_plain_numbers_take_the_bulk_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[bool] = []
    original = wo_bulk._JsonTexts.numbers

    def numbers(self: wo_bulk._JsonTexts) -> np.ndarray | None:
        got = original(self)
        parsed.append(got is not None)
        return got

    monkeypatch.setattr(wo_bulk._JsonTexts, "numbers", numbers)
    fast = load_run(HF_DIR)
    assert parsed and sum(parsed) >= len(parsed) - 1  # every key of numbers, in bulk
    monkeypatch.setattr(wo_bulk._JsonTexts, "numbers", lambda self: None)
    slow = load_run(HF_DIR)  # json.loads of the same texts
    assert list(fast.frame.columns) == list(slow.frame.columns)
    np.testing.assert_array_equal(fast.frame.to_numpy(), slow.frame.to_numpy())
    assert fast.summary == slow.summary and fast.notes == slow.notes


@pytest.mark.parametrize("value", ['"caf\\u00e9 ok"', "XX"])
def test_summary_text_beyond_ascii_reads_as_record_by_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    from wandb.proto import wandb_internal_pb2 as pb

    records = [history({"_step": i, "train.loss": 1.0 / (i + 1)}) for i in range(40)]
    for i in range(40):
        rec = pb.Record()
        item = rec.summary.update.add()
        item.nested_key.extend(["train", "loss"])
        item.value_json = json.dumps(1.0 / (i + 1))
        note = rec.summary.update.add()
        note.nested_key.append("note")
        note.value_json = value if value != "XX" else '"XX"'
        raw = rec.SerializeToString()
        if value == "XX" and i == 20:  # bytes that are not UTF-8: protobuf refuses the record
            raw = raw.replace(b"XX", b"\xff\xfe")
        elif value != "XX":
            raw = raw.replace(b"caf\\u00e9", "café".encode())  # raw UTF-8, as wandb-core writes
        records.append(raw)
    path = tmp_path / "run-text.wandb"
    path.write_bytes(write_log(records))
    (bulk,) = load_file(path)
    monkeypatch.setattr(wo, "_read_in_bulk", lambda *args: None)
    (slow,) = load_file(path)
    assert bulk.frame.equals(slow.frame)
    assert bulk.summary == slow.summary
    assert bulk.notes == slow.notes
