"""TensorBoard importer: the three scalar encodings, restarts, damaged files, the real run.

Fixtures come from ``scripts/make_fixtures_tb_wandb.py`` (tensorboardX and tensorboard's own
writers); ``grpo_synthetic.csv`` holds the same values.
"""

from __future__ import annotations

import shutil
import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor.errors import FormatError, GrpoDoctorError
from grpo_doctor.importers import LoadOptions, detect_format, load_run, load_runs
from grpo_doctor.importers import tensorboard as tb
from grpo_doctor.importers.tensorboard import decode as tb_decode
from grpo_doctor.importers.tensorboard import framing as tb_framing
from grpo_doctor.store import Run
from tests.helpers import REAL_RUNS
from tests.importers.common import FIXTURES

FIX = FIXTURES / "tensorboard"
CSV = FIX / "grpo_synthetic.csv"
RUN_FOLDERS = ["simple_value", "tensor_float_val", "tensor_content", "restart"]
CONFIG = {
    "learning_rate": 1e-6, "beta": 0.04, "num_generations": 8, "max_completion_length": 512,
    "model": {"name": "Qwen2.5-0.5B-Instruct", "dtype": "bfloat16"},
}


@pytest.fixture(scope="module")
def expected() -> Run:
    return load_run(CSV)


def assert_same(run: Run, expected: Run) -> None:
    assert list(run.frame.columns) == list(expected.frame.columns)
    assert run.frame.index.equals(expected.frame.index)
    np.testing.assert_allclose(
        run.frame.to_numpy(), expected.frame.to_numpy(), rtol=1e-6, atol=0, equal_nan=True
    )
    assert run.nan_steps.keys() == expected.nan_steps.keys()
    for key, steps in expected.nan_steps.items():
        np.testing.assert_array_equal(run.nan_steps[key], steps)


def event_file(folder: str) -> Path:
    (path,) = sorted((FIX / folder).glob("*tfevents*"))[:1]
    return path


def records(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, payload) of each complete record, trusting the lengths."""
    out = []
    pos = 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        if pos + 16 + n > len(data):
            break
        out.append((pos, data[pos + 12 : pos + 12 + n]))
        pos += 16 + n
    return out


def frame_records(payloads: list[bytes]) -> bytes:
    """TFRecord framing with correct masked CRCs."""
    out = bytearray()
    for p in payloads:
        head = struct.pack("<Q", len(p))
        out += head + struct.pack("<I", tb.masked_crc32c(head)) + p
        out += struct.pack("<I", tb.masked_crc32c(p))
    return bytes(out)


def scalar_points(payload: bytes) -> list[tuple[str, int]]:
    from tensorboard.compat.proto.event_pb2 import Event

    ev = Event.FromString(payload)
    return [(v.tag, ev.step) for v in ev.summary.value if v.WhichOneof("value")]


def load_file(path: Path) -> Run:
    return tb.IMPORTER.load(path, LoadOptions())[0]


# --- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", RUN_FOLDERS)
def test_each_writer_round_trips_to_the_csv(folder: str, expected: Run) -> None:
    path = FIX / folder
    assert detect_format(path).name == "tensorboard"
    run = load_run(path)
    assert run.format == "tensorboard"
    assert run.name == folder
    assert_same(run, expected)
    assert run.mapping["reward_mean"] == "train/reward"
    assert run.mapping["zero_std_fraction"] == "train/frac_reward_zero_std"
    assert run.mapping["response_length_mean"] == "train/completions/mean_length"


def test_fixtures_use_the_encodings_they_claim() -> None:
    from tensorboard.compat.proto.event_pb2 import Event

    def kinds(folder: str) -> set[tuple[str, bool]]:
        out = set()
        for _, payload in records(event_file(folder).read_bytes()):
            for v in Event.FromString(payload).summary.value:
                if v.tag.startswith("train/reward"):
                    t = v.tensor
                    kind = v.WhichOneof("value")
                    if kind == "tensor":
                        kind = "tensor_content" if t.tensor_content else "float_val"
                    out.add((kind, v.HasField("metadata")))
        return out

    assert kinds("simple_value") == {("simple_value", False)}
    assert kinds("tensor_float_val") == {("float_val", True)}
    assert kinds("tensor_content") == {("tensor_content", True), ("tensor_content", False)}


def test_a_single_file_is_a_run_named_after_its_folder(expected: Run) -> None:
    path = event_file("simple_value")
    assert tb.IMPORTER.sniff(path, path.read_bytes()[:64]) == 95
    run = load_run(path)
    assert run.name == "simple_value"
    assert run.source == str(path)
    assert_same(run, expected)


def test_hf_text_summary_becomes_config_and_histograms_are_skipped() -> None:
    run = load_run(FIX / "simple_value")
    assert run.config == CONFIG
    assert not any("completion_lengths" in c for c in run.frame.columns)


def test_bulk_decoder_agrees_with_record_by_record(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = {f: load_run(FIX / f).frame for f in RUN_FOLDERS}
    monkeypatch.setattr(tb_decode, "_BULK_MIN_GROUP", 10**9)
    for folder, frame in fast.items():
        slow = load_run(FIX / folder).frame
        assert frame.equals(slow), folder


def test_most_records_take_the_bulk_path(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    original = tb_decode._one_by_one

    def counting(b, pts, idx, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(len(idx))
        return original(b, pts, idx, *args, **kwargs)

    monkeypatch.setattr(tb_decode, "_one_by_one", counting)
    for folder in ("simple_value", "tensor_float_val", "tensor_content"):
        seen.clear()
        load_run(FIX / folder)
        n_records = len(records(event_file(folder).read_bytes()))
        assert sum(seen) < 0.05 * n_records, folder


# --- restarts and folders of runs -------------------------------------------------------------


def test_restart_merges_by_step_last_file_wins(expected: Run) -> None:
    run = load_run(FIX / "restart")
    assert run.restarts == 1
    assert any("2 event files merged" in n for n in run.notes)
    assert_same(run, expected)  # the first file's different steps 101-120 were replaced


def test_restart_order_comes_from_the_file_timestamps(tmp_path: Path, expected: Run) -> None:
    older, newer = sorted((FIX / "restart").glob("*tfevents*"))
    # Names sort the other way round alphabetically; the timestamp decides.
    shutil.copy(older, tmp_path / "events.out.tfevents.1700000000.zz")
    shutil.copy(newer, tmp_path / "events.out.tfevents.1700003600.aa")
    assert_same(load_run(tmp_path), expected)


def test_parent_folder_holds_one_run_per_event_folder(tmp_path: Path) -> None:
    shutil.copytree(FIX / "simple_value", tmp_path / "a")
    shutil.copytree(FIX / "tensor_content", tmp_path / "nested" / "b")
    (tmp_path / "notes.txt").write_text("not an event file")
    assert tb.IMPORTER.sniff(tmp_path, b"") == 90
    runs = load_runs(tmp_path)
    assert sorted(r.name for r in runs) == ["a", "nested/b"]
    assert [r.name for r in load_runs(tmp_path, run="nested/b")] == ["nested/b"]


def test_fixture_root_is_four_runs() -> None:
    runs = load_runs(FIX, format="tensorboard")
    assert sorted(r.name for r in runs) == sorted(RUN_FOLDERS)


# --- damaged files ----------------------------------------------------------------------------


@pytest.mark.parametrize("cut", ["crc", "payload", "header"])
def test_truncated_tail_reads_every_complete_record(tmp_path: Path, cut: str,
                                                    expected: Run) -> None:
    data = event_file("tensor_content").read_bytes()
    recs = records(data)
    last_off, last_payload = recs[-1]
    keep = {"crc": len(data) - 1, "payload": last_off + 12 + len(last_payload) // 2,
            "header": last_off + 6}[cut]
    path = tmp_path / "events.out.tfevents.1.cut"
    path.write_bytes(data[:keep])
    run = load_file(path)
    assert f"truncated final record at byte {last_off} (run still being written?)" in run.notes
    lost = scalar_points(last_payload)
    assert len(lost) == 1
    frame = expected.frame.copy()
    tag, step = lost[0]
    frame.loc[step, _canonical(expected, tag)] = np.nan
    got = run.frame.reindex(frame.index)
    np.testing.assert_allclose(got.to_numpy(), frame.to_numpy(), rtol=1e-6, equal_nan=True)


def _canonical(run: Run, tag: str) -> str:
    for canonical, src in run.mapping.items():
        if src == tag:
            return canonical
    return tag


@pytest.mark.parametrize("where", ["payload", "length"])
def test_corrupt_record_is_skipped_and_noted(tmp_path: Path, where: str,
                                             expected: Run) -> None:
    data = bytearray(event_file("tensor_content").read_bytes())
    recs = records(bytes(data))
    off, payload = recs[len(recs) // 2]
    if where == "payload":
        data[off + 12 + len(payload) - 3] ^= 0xFF
    else:
        data[off + 1] ^= 0x01  # the length field: its CRC fails, reading resynchronises
    path = tmp_path / "events.out.tfevents.2.bad"
    path.write_bytes(bytes(data))
    run = load_file(path)
    assert run.notes == [f"corrupt record at byte {off} skipped"]
    (tag, step), = scalar_points(payload)
    column = _canonical(expected, tag)
    frame = expected.frame.copy()
    frame.loc[step, column] = np.nan
    np.testing.assert_allclose(run.frame.to_numpy(), frame.to_numpy(), rtol=1e-6,
                               equal_nan=True)


def test_random_bytes_are_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.3.random"
    path.write_bytes(np.random.default_rng(0).bytes(5000))
    with pytest.raises(FormatError, match="not a TensorBoard event file"):
        load_file(path)
    other = tmp_path / "blob.bin"
    other.write_bytes(np.random.default_rng(1).bytes(5000))
    assert tb.IMPORTER.sniff(other, other.read_bytes()) == 0
    empty = tmp_path / "events.out.tfevents.4.empty"
    empty.write_bytes(b"")
    with pytest.raises(FormatError):
        load_file(empty)


def test_event_file_without_scalars_is_a_format_error(tmp_path: Path) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(tmp_path))
    histo = summary_pb2.HistogramProto(min=0, max=1, num=2, sum=1, bucket_limit=[1],
                                       bucket=[2])
    for step in range(5):
        w.add_event(event_pb2.Event(step=step, summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="h", histo=histo)])))
    w.close()
    (path,) = tmp_path.glob("*tfevents*")
    with pytest.raises(FormatError, match="no scalar events in TensorBoard file"):
        load_run(path)
    with pytest.raises(FormatError, match="no scalar events"):
        load_run(tmp_path)


def test_sniff_scores(tmp_path: Path) -> None:
    assert tb.IMPORTER.sniff(tmp_path, b"") == 0  # empty folder
    (tmp_path / "readme.md").write_text("hello")
    assert tb.IMPORTER.sniff(tmp_path, b"") == 0  # a folder without event files
    renamed = tmp_path / "scalars.bin"
    data = event_file("simple_value").read_bytes()
    renamed.write_bytes(data)
    assert tb.IMPORTER.sniff(renamed, data[:65536]) == 80
    assert detect_format(renamed).name == "tensorboard"
    assert tb.IMPORTER.sniff(FIX, b"") == 90
    assert tb.IMPORTER.sniff(FIX / "restart", b"") == 90


# --- encodings and the plugin rule ------------------------------------------------------------


def _tensor_value(tag: str, tensor: object, plugin: str | None) -> object:
    from tensorboard.compat.proto import summary_pb2

    v = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if plugin is not None:
        v.metadata.plugin_data.plugin_name = plugin
    return v


def test_tensor_encodings_and_plugin_rule(tmp_path: Path) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    def tensor(**kw: object) -> object:
        return tensor_pb2.TensorProto(tensor_shape=TensorShapeProto(), **kw)

    w = EventFileWriter(str(tmp_path))
    for step in range(6):
        x = step + 0.5
        values = [
            # "scalars" named on the first event only (TF2), tensor_content float64
            _tensor_value("f64", tensor(dtype=types_pb2.DT_DOUBLE,
                                        tensor_content=struct.pack("<d", x)),
                          "scalars" if step == 0 else None),
            _tensor_value("i32", tensor(dtype=types_pb2.DT_INT32,
                                        tensor_content=struct.pack("<i", step)), None),
            _tensor_value("half", tensor(dtype=types_pb2.DT_HALF,
                                         tensor_content=np.float16(x).tobytes()), None),
            _tensor_value("i64", tensor(dtype=types_pb2.DT_INT64, int64_val=[step * 10]), None),
            _tensor_value("d", tensor(dtype=types_pb2.DT_DOUBLE, double_val=[x]), "scalars"),
            _tensor_value("hv", tensor(dtype=types_pb2.DT_HALF,
                                       half_val=[int(np.float16(x).view(np.uint16))]), None),
            _tensor_value("b", tensor(dtype=types_pb2.DT_BOOL, bool_val=[step % 2 == 0]), None),
            # refused: another plugin, a vector, text
            _tensor_value("hist", tensor(dtype=types_pb2.DT_FLOAT, float_val=[x]),
                          "histograms" if step == 0 else None),
            _tensor_value("vec", tensor_pb2.TensorProto(
                dtype=types_pb2.DT_FLOAT, float_val=[1.0, 2.0],
                tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=2)])), None),
            _tensor_value("txt", tensor(dtype=types_pb2.DT_STRING, string_val=[b"hi"]), "text"),
        ]
        # one event per value (bulk path) and one multi-value summary (record by record)
        for v in values:
            w.add_event(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=[v])))
        w.add_event(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag="multi_a", simple_value=x),
            summary_pb2.Summary.Value(tag="multi_b", simple_value=-x),
        ])))
    w.close()
    run = load_run(tmp_path)
    f = run.frame
    steps = np.arange(6)
    assert sorted(f.columns) == sorted(["f64", "i32", "half", "i64", "d", "hv", "b",
                                        "multi_a", "multi_b"])
    np.testing.assert_allclose(f["f64"], steps + 0.5)
    np.testing.assert_allclose(f["i32"], steps)
    np.testing.assert_allclose(f["half"], steps + 0.5)
    np.testing.assert_allclose(f["i64"], steps * 10)
    np.testing.assert_allclose(f["d"], steps + 0.5)
    np.testing.assert_allclose(f["hv"], steps + 0.5)
    np.testing.assert_allclose(f["b"], (steps % 2 == 0).astype(float))
    np.testing.assert_allclose(f["multi_b"], -(steps + 0.5))


# --- fuzzing: only GrpoDoctorError or a run, never another exception ---------------------------


def _try_load(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.out.tfevents.0.fuzz"
        path.write_bytes(data)
        try:
            runs = tb.IMPORTER.load(path, LoadOptions())
        except GrpoDoctorError:
            return
        assert runs and runs[0].n_steps > 0


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=4096))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    _try_load(data)


_REAL_PAYLOADS = [p for _, p in records(event_file("tensor_float_val").read_bytes())[:40]]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(_REAL_PAYLOADS) - 1), st.integers(0, 200),
                          st.integers(0, 255), st.booleans()), max_size=60),
       st.lists(st.binary(max_size=48), max_size=5))
def test_mutated_payloads_with_valid_crcs_never_crash(
    edits: list[tuple[int, int, int, bool]], junk: list[bytes]
) -> None:
    # Many near-identical records (the bulk path groups them) with bytes changed or cut,
    # framed with correct CRCs so the decoder itself sees the damage.
    payloads = [_REAL_PAYLOADS[0]]
    for i, pos, byte, cut in edits:
        p = bytearray(_REAL_PAYLOADS[i])
        if cut:
            p = p[: pos % (len(p) + 1)]
        elif p:
            p[pos % len(p)] = byte
        payloads.append(bytes(p))
    _try_load(frame_records(payloads + junk))


# --- the real run -----------------------------------------------------------------------------


@pytest.mark.skipif(not (REAL_RUNS / "tensorboard").is_dir(), reason="real runs not present")
def test_real_tensorboard_run() -> None:
    (run,) = load_runs(REAL_RUNS / "tensorboard")
    assert run.format == "tensorboard"
    assert 35 <= run.n_steps <= 45
    assert run.mapping["reward_mean"] == "train/reward"
    assert run.mapping["kl"] == "train/kl"
    assert run.mapping["response_length_mean"] == "train/completion_length"
    assert run.has("reward_mean") and run.has("grad_norm")
    assert run.notes == []
    assert "beta" in run.config  # the HF TrainingArguments text summary


# --- the fast reader against the reference reader ---------------------------------------------
#
# ``tb._read_simple`` follows records one at a time, checks both CRCs per record with the crc32c
# package and parses every record with protobuf. The fast reader (windows, a learnt period of
# record sizes, templates matched in bulk, CRCs from the templates' shares) must give the same
# runs, notes and errors on every file: written by tensorboard's own EventFileWriter in the
# layouts real writers produce, then possibly damaged.


def _same_runs(path: Path) -> None:
    def load(read: object) -> list[Run] | str:
        try:
            return tb._load(path, LoadOptions(), read=read)  # type: ignore[arg-type]
        except GrpoDoctorError as exc:
            return f"{type(exc).__name__}: {exc}"

    fast, simple = load(None), load(tb._read_simple)
    if isinstance(fast, str) or isinstance(simple, str):
        assert fast == simple
        return
    assert [r.name for r in fast] == [r.name for r in simple]
    for a, b in zip(fast, simple):
        assert list(a.frame.columns) == list(b.frame.columns)
        assert a.frame.index.equals(b.frame.index)
        np.testing.assert_array_equal(a.frame.to_numpy(), b.frame.to_numpy())
        assert a.notes == b.notes
        assert a.config == b.config
        assert a.restarts == b.restarts
        assert a.nan_steps.keys() == b.nan_steps.keys()
        for key in a.nan_steps:
            np.testing.assert_array_equal(a.nan_steps[key], b.nan_steps[key])


_ENCODINGS = ("simple_value", "float_val", "double_content", "float_content")


def _value(tag: str, x: float, encoding: str, first: bool) -> object:
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, types_pb2
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

    if encoding == "simple_value":  # tensorboardX / torch add_scalar
        return summary_pb2.Summary.Value(tag=tag, simple_value=x)
    if encoding == "float_val":  # tensorboard.summary.Writer: metadata on every event
        t = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[x],
                                   tensor_shape=TensorShapeProto())
        v = summary_pb2.Summary.Value(tag=tag, tensor=t)
        v.metadata.plugin_data.plugin_name = "scalars"
        return v
    # TF2: tensor_content, metadata on a tag's first event only
    dtype, fmt = ((types_pb2.DT_DOUBLE, "<d") if encoding == "double_content"
                  else (types_pb2.DT_FLOAT, "<f"))
    t = tensor_pb2.TensorProto(dtype=dtype, tensor_content=struct.pack(fmt, x),
                               tensor_shape=TensorShapeProto())
    v = summary_pb2.Summary.Value(tag=tag, tensor=t)
    if first:
        v.metadata.plugin_data.plugin_name = "scalars"
    return v


def _write_events(folder: Path, tags: list[str], steps: list[int], per_event: int,
                  encoding: str, extras: set[int], seed: int, suffix: str = "") -> None:
    """A step's tags logged in order, ``per_event`` values per event; at the steps in
    ``extras`` an evaluation value, a text summary and a histogram in between."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    rng = np.random.default_rng(seed)
    w = EventFileWriter(str(folder), filename_suffix=suffix)
    t0 = 1.7e9 + seed
    for i, step in enumerate(steps):
        values = [_value(tag, float(np.float32(rng.normal())), encoding, i == 0)
                  for tag in tags]
        if rng.random() < 0.05:
            values[0] = _value(tags[0], float("nan"), encoding, i == 0)
        for a in range(0, len(values), per_event):
            summary = summary_pb2.Summary(value=values[a : a + per_event])
            w.add_event(event_pb2.Event(wall_time=t0 + i, step=step, summary=summary))
        if step in extras:
            text = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING,
                                          string_val=[b'{"a": 1}'])
            histo = summary_pb2.HistogramProto(min=0, max=1, num=2, sum=1, bucket_limit=[1],
                                               bucket=[2])
            for v in (summary_pb2.Summary.Value(tag="eval/loss", simple_value=float(step)),
                      summary_pb2.Summary.Value(tag="args/text_summary", tensor=text),
                      summary_pb2.Summary.Value(tag="completion_lengths", histo=histo)):
                w.add_event(event_pb2.Event(wall_time=t0 + i + 0.5, step=step,
                                            summary=summary_pb2.Summary(value=[v])))
    w.close()


_TAG = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_/0123456789", min_size=1, max_size=48)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tags=st.lists(_TAG, min_size=1, max_size=12, unique=True),
    first=st.sampled_from([0, 1, 100, 16_370]),
    n_steps=st.integers(1, 60),
    per_event=st.integers(1, 12),
    encoding=st.sampled_from(_ENCODINGS),
    extra_every=st.sampled_from([0, 7, 25]),
    restart=st.booleans(),
    window=st.sampled_from([64, 700, 4096, 1 << 20]),
    damage=st.sampled_from(["none", "none", "flip", "cut", "junk"]),
    where=st.floats(0, 1),
    seed=st.integers(0, 2**16),
)
def test_fast_reader_equals_the_reference_reader(
    tags: list[str], first: int, n_steps: int, per_event: int, encoding: str,
    extra_every: int, restart: bool, window: int, damage: str, where: float, seed: int,
) -> None:
    steps = list(range(first, first + n_steps))
    extras = {s for s in steps if extra_every and s % extra_every == 0}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        folder.mkdir()
        _write_events(folder, ["train/" + t for t in tags], steps, per_event, encoding,
                      extras, seed, ".a")
        if restart:  # resumed from a checkpoint halfway: the steps overlap
            _write_events(folder, ["train/" + t for t in tags], steps[len(steps) // 2 :],
                          per_event, encoding, set(), seed + 1, ".b")
        if damage != "none":
            path = sorted(folder.glob("*tfevents*"))[-1]
            data = bytearray(path.read_bytes())
            at = int(where * (len(data) - 1))
            if damage == "flip":
                data[at] ^= 0x5A
            elif damage == "cut":
                data = data[: max(at, 1)]
            else:
                data[at:at] = bytes(range(7, 40))
            path.write_bytes(bytes(data))
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(tb, "_WINDOW", window)
            _same_runs(folder)


@pytest.mark.parametrize("folder", [*RUN_FOLDERS, ""])
def test_fixtures_read_the_same_as_the_reference(folder: str) -> None:
    _same_runs(FIX / folder)


@pytest.mark.skipif(not (REAL_RUNS / "tensorboard").is_dir(), reason="real runs not present")
def test_real_run_reads_the_same_as_the_reference() -> None:
    _same_runs(REAL_RUNS / "tensorboard")


# --- the fast path holds on real layouts ------------------------------------------------------


def _count_calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    calls: list[int] = []
    module = {"_walk": tb_framing, "_one_by_one": tb_decode}.get(name, tb)
    original = getattr(module, name)

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(args[2]) if name == "_one_by_one" else 1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


@pytest.mark.parametrize("layout", ["two_lengths", "trl_names", "multi_value", "float_val"])
def test_writer_layouts_stay_on_the_fast_path(tmp_path: Path, layout: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # 300 steps from 1: the step varint grows at 128; several windows; the period of record
    # sizes is learnt once and carried from window to window.
    if layout == "two_lengths":  # train/m0 .. train/m49: ten names of 8 bytes, then 9
        tags = [f"train/m{i}" for i in range(50)]
    else:
        tags = ["train/loss", "train/grad_norm", "train/learning_rate", "train/kl",
                "train/rewards/accuracy_reward/mean", "train/rewards/accuracy_reward/std",
                "train/completions/mean_length", "train/frac_reward_zero_std", "train/epoch"]
    per_event = len(tags) if layout == "multi_value" else 1
    encoding = "float_val" if layout == "float_val" else "simple_value"
    _write_events(tmp_path, tags, list(range(1, 301)), per_event, encoding, {150}, 0)
    monkeypatch.setattr(tb, "_WINDOW", 16 << 10)
    walks = _count_calls(monkeypatch, "_walk")
    slow = _count_calls(monkeypatch, "_one_by_one")
    whole = _count_calls(monkeypatch, "_read_whole")
    run = load_run(tmp_path)
    assert run.n_steps == 300
    assert not whole  # no window fell back to the whole-file reader
    assert sum(slow) <= 5  # the text, histogram and evaluation events at step 150, and step 1
    # Records followed one by one: a few stretches per window, not a few per step.
    windows = -(-next(tmp_path.glob("*tfevents*")).stat().st_size // (16 << 10))
    assert len(walks) <= 4 * windows, (len(walks), windows)
    _same_runs(tmp_path)


def test_smallest_period() -> None:
    sizes = np.array(([40] * 10 + [41] * 40) * 3)
    assert tb_framing._smallest_period(sizes) == 50  # not 1, though the last 40 sizes are equal
    assert tb_framing._smallest_period(np.array([5] * 64)) == 1
    assert tb_framing._smallest_period(np.array([1, 2, 3] * 20 + [1])) == 3
    assert tb_framing._smallest_period(np.arange(64)) is None


def test_crc_rows_are_the_byte_tables() -> None:
    rows = tb_framing._crc_rows(300)
    for d in (0, 1, 7, 8, 63, 64, 299):
        np.testing.assert_array_equal(rows[d], tb_framing._crc_byte_table(d))


# --- a run resumed into a new folder; two runs written to one folder ---------------------------


def _scalars(folder: Path, steps: range, reward: float, stamp: int) -> None:
    """One launch's events, written by TensorBoard's own writer, named as written at
    ``stamp`` (the file-name timestamp orders launches)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder.mkdir(parents=True, exist_ok=True)
    w = EventFileWriter(str(folder))
    for step in steps:
        values = [summary_pb2.Summary.Value(tag="train/reward", simple_value=reward),
                  summary_pb2.Summary.Value(tag="train/learning_rate",
                                            simple_value=1e-4 * (1 - step / 400))]
        w.add_event(event_pb2.Event(wall_time=stamp + step, step=step,
                                    summary=summary_pb2.Summary(value=values)))
    w.close()
    written = max(folder.glob("*tfevents*"), key=lambda p: p.stat().st_mtime_ns)
    written.rename(folder / f"events.out.tfevents.{stamp}.node.{stamp % 997}.0")


def test_a_run_resumed_into_a_new_folder_is_read_as_one_run(tmp_path: Path) -> None:
    """The Trainer writes each launch under runs/<date>_<host>: a run resumed from
    checkpoint-100 is a folder of steps 1-100 beside one of 101-200 (trial 58: refused as
    "holds 2 runs")."""
    root = tmp_path / "out" / "runs"
    _scalars(root / "Dec07_02-12-15_vm", range(1, 101), 0.5, 1_700_000_000)
    _scalars(root / "Dec07_02-12-39_vm", range(101, 201), 0.7, 1_700_000_500)
    runs = load_runs(root)
    assert len(runs) == 1, [r.name for r in runs]
    run = runs[0]
    assert run.name == "out" and run.n_steps == 200
    assert run.notes[0] == ("one run resumed 1 time: 2 event folders read as one "
                            "(Dec07_02-12-15_vm: steps 1-100; Dec07_02-12-39_vm: steps 101-200)")
    # Resumed from an earlier checkpoint than its last step: the later launch's values win.
    _scalars(root / "Dec07_03-00-00_vm", range(181, 231), 0.9, 1_700_001_000)
    run = load_runs(root)[0]
    assert run.last_step == 230 and run.frame.loc[190, "reward_mean"] == pytest.approx(0.9)


def test_runs_that_start_over_are_apart_in_sibling_folders_or_one(tmp_path: Path) -> None:
    """Two launches from step 1, in sibling folders or written into one logging_dir, are two
    runs: merged, a run re-launched into one folder had read as one run, its learning rate
    'jumping' where the second run's values took over (trial 58)."""
    _scalars(tmp_path / "sweep" / "a", range(1, 101), 0.5, 1_700_000_000)
    _scalars(tmp_path / "sweep" / "b", range(1, 101), 0.7, 1_700_000_500)
    assert sorted(r.name for r in load_runs(tmp_path / "sweep")) == ["a", "b"]
    one = tmp_path / "one" / "logs"
    _scalars(one, range(1, 201), 0.5, 1_700_000_000)
    _scalars(one, range(1, 101), 0.9, 1_700_000_900)
    runs = load_runs(one)
    assert [(r.n_steps, r.restarts) for r in runs] == [(200, 0), (100, 0)]
    assert runs[1].frame["reward_mean"].iloc[0] == pytest.approx(0.9)
    assert "2 runs written to this folder" in runs[0].notes[-1]
    with pytest.raises(GrpoDoctorError):
        load_run(one)
