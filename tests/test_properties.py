"""Properties over generated input (hypothesis, bounded, a few seconds in all).

* any bytes, or a damaged fixture, given to any importer: a list of runs or a GrpoDoctorError,
  never another exception, and the runs keep the store's invariants;
* any finite series: finite, deterministic trend statistics (windows, spikes, onsets);
* permuting a CSV's rows leaves the diagnosis (its JSON) unchanged;
* the same data written as a CSV and as a TensorBoard event file (by tensorboardX, else by
  tensorboard's own writer) gives the same diagnosis.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor.errors import GrpoDoctorError
from grpo_doctor.importers import format_names, load_runs
from grpo_doctor.trends import (
    bin_series,
    decisive_short_fall,
    hinge_onset,
    largest_relative_drop,
    largest_relative_rise,
    level_shift_onset,
    robust_spikes,
    rolling_median,
    trend_onset,
)
from tests.helpers import run_cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FAST = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                       HealthCheck.function_scoped_fixture])

# --- importers: bytes in, runs or a GrpoDoctorError out --------------------------------------

#: Each importer's usual file name, and fixtures to damage.
IMPORTERS = {
    "tensorboard": ("events.out.tfevents.1700000000.fuzz",
                    ["tensorboard/simple_value", "tensorboard/tensor_content"]),
    "wandb-offline": ("run-fuzz.wandb", ["wandb/wandb/offline-run-20250101_010000-grpofix2"]),
    "trainer-state": ("trainer_state.json", ["trainer_state/synthetic-run/checkpoint-12"]),
    "notebook": ("run.ipynb", ["notebook"]),
    "console": ("train.log", ["console"]),
    "wandb-csv": ("export.csv", ["wandb-csv"]),
    "tensorboard-csv": ("run-x-tag-train_reward.csv", ["tensorboard-csv/synthetic"]),
    "long-csv": ("long.csv", ["long-csv"]),
    "parquet": ("run.parquet", ["parquet"]),
    "jsonl": ("run.jsonl", ["jsonl"]),
    "csv": ("run.csv", ["csv", "bad"]),
    "mlflow": ("mlflow.db", ["mlflow"]),
    "trackio": ("grpo.db", ["trackio"]),
    "swanlab": ("run-fuzz.swanlab", sorted(
        p.relative_to(FIXTURES).as_posix() for p in (FIXTURES / "swanlab" / "swanlog").glob(
            "run-*"))),
    # Reads folders only: a file given to it is refused in one line.
    "run-folder": ("trainer_state.json", ["trainer_state/synthetic-run/checkpoint-12"]),
}
_SEED_BYTES = 24_000


def _seeds(folders: list[str]) -> list[bytes]:
    out = []
    for folder in folders:
        for path in sorted((FIXTURES / folder).iterdir()):
            sidecar = path.suffix == ".json" and path.name != "trainer_state.json"
            if path.is_file() and not sidecar:
                data = path.read_bytes()
                if path.suffix == ".gz":  # a SQLite store, kept gzipped
                    data = gzip.decompress(data)
                out.append(data[:_SEED_BYTES])
    return out


def test_every_importer_is_fuzzed():
    assert set(IMPORTERS) >= set(format_names())


def _load_bytes(fmt: str, data: bytes) -> None:
    name = IMPORTERS[fmt][0]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        for given_format in (fmt, None):
            try:
                runs = load_runs(path, format=given_format)
            except GrpoDoctorError as exc:
                assert "\n" not in str(exc)
                continue
            assert runs
            for run in runs:
                index = run.frame.index
                assert index.is_monotonic_increasing and index.is_unique
                assert str(index.dtype) == "int64" and run.n_steps > 0
                assert all(str(t) == "float64" for t in run.frame.dtypes)


@pytest.mark.parametrize("fmt", sorted(IMPORTERS))
@settings(FAST, max_examples=12)
@given(data=st.binary(max_size=2048))
def test_any_bytes_load_or_fail_cleanly(fmt, data):
    _load_bytes(fmt, data)


@st.composite
def damaged(draw, seeds: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 6))):
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        kind = draw(st.sampled_from(["flip", "insert", "delete"]))
        if kind == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.sampled_from(
                [b"nan", b"inf", b"-1e309", b"\xff\xfe", b"\x00", b"{", b"}", b'"', b",",
                 b"\n", b"\r", b"step:3 - ", b"{'loss': ", b"|", b"\t", b"[[[[[[[["]))
        elif data:
            del data[pos : pos + draw(st.integers(1, 64))]
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut] if draw(st.booleans()) else data)


@pytest.mark.parametrize("fmt", sorted(IMPORTERS))
@settings(FAST, max_examples=10)
@given(data=st.data())
def test_damaged_fixtures_load_or_fail_cleanly(fmt, data):
    _load_bytes(fmt, data.draw(damaged(_seeds(IMPORTERS[fmt][1]))))


# --- trends: finite in, finite and deterministic out -----------------------------------------

#: Values a training metric takes: 0, or a magnitude between 1e-9 and 1e9 (beyond that a
#: relative change can overflow a float, see the module notes in the report).
values = st.one_of(st.just(0.0), st.floats(1e-9, 1e9), st.floats(-1e9, -1e-9))


@settings(FAST, max_examples=150)
@given(st.lists(values, max_size=300), st.integers(1, 3000), st.integers(1, 9),
       st.booleans())
def test_window_and_spike_statistics_are_finite_and_deterministic(ys, window, smooth, log):
    y = np.array(ys, dtype=np.float64)
    x = np.cumsum(np.arange(len(y)) % 7 + 1).astype(np.float64)  # irregular steps

    def stats():
        out = [bin_series(x, y), rolling_median(y, smooth),
               largest_relative_drop(x, y, window, smooth=smooth),
               largest_relative_rise(x, y, window, smooth=smooth),
               decisive_short_fall(y, 0.1), robust_spikes(np.abs(y), log=log)]
        if len(y):
            out += [hinge_onset(x, y), level_shift_onset(x, y), trend_onset(x, y, y[0], y[-1])]
        return out

    first, second = stats(), stats()
    assert repr(first) == repr(second)
    bx, by = first[0]
    assert np.isfinite(bx).all() and np.isfinite(by).all() and len(bx) <= 257
    assert np.isfinite(first[1]).all()
    for change in first[2:4]:
        if change is not None:
            assert np.isfinite([change.fraction, change.start_step, change.end_step,
                                change.start_value, change.end_value]).all()
    spikes = first[5]
    assert np.isfinite(spikes.z).all()
    assert np.isfinite(spikes.baseline[~np.isnan(spikes.baseline)]).all()
    # A spike's ratio is finite against a positive baseline (+inf against a zero one).
    base = spikes.baseline[spikes.index]
    assert (np.isfinite(spikes.ratio) | (base <= 0)).all()
    for onset in first[6:]:
        assert np.isfinite(onset).all()


# --- diagnoses: row order and file format do not change them ---------------------------------

TAGS = ["train/loss", "train/reward", "train/reward_std", "train/entropy", "train/kl",
        "train/grad_norm", "train/completions/mean_length", "train/frac_reward_zero_std"]


@st.composite
def training_logs(draw) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A GRPO-like log: steps, and per tag float32-exact values (NaN: logged NaN or a gap)."""
    n = draw(st.integers(2, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    steps = np.cumsum(rng.integers(1, 6, n)).astype(np.int64)
    t = np.linspace(0, 1, n)
    fall, rise = draw(st.floats(0, 0.99)), draw(st.floats(0, 30))
    cols = {
        "train/loss": rng.normal(0, 0.01, n),
        "train/reward": 0.3 + draw(st.floats(-0.3, 0.5)) * t + rng.normal(0, 0.03, n),
        "train/reward_std": np.abs(0.3 - 0.3 * draw(st.floats(0, 1)) * t
                                   + rng.normal(0, 0.02, n)),
        "train/entropy": 1.2 * (1 - fall * t) + rng.normal(0, 0.01, n),
        "train/kl": 0.01 + rise * t ** 2 + np.abs(rng.normal(0, 0.005, n)),
        "train/grad_norm": 0.5 + np.abs(rng.normal(0, 0.05, n)),
        "train/completions/mean_length": 200 + 300 * draw(st.floats(0, 1)) * t,
        "train/frac_reward_zero_std": np.clip(draw(st.floats(0, 1)) * t, 0, 1),
    }
    for i in draw(st.lists(st.integers(0, n - 1), max_size=3)):
        cols["train/grad_norm"][i] *= 40  # spikes
    for tag in draw(st.lists(st.sampled_from(TAGS[1:]), max_size=2)):
        cols[tag][draw(st.integers(0, n - 1))] = np.nan  # logged NaN
    cols = {k: v.astype(np.float32).astype(np.float64) for k, v in cols.items()}
    return steps, cols


def _csv(steps: np.ndarray, cols: dict[str, np.ndarray], order: np.ndarray) -> str:
    lines = [",".join(["step", *cols])]
    lines += [",".join([str(int(steps[r])), *(repr(float(v[r])) for v in cols.values())])
              for r in order]
    return "\n".join(lines) + "\n"


def _report(capsys, path: Path) -> dict:
    code, out, err = run_cli(capsys, "diagnose", str(path), "-f", "json")
    assert code in (0, 1) and err == ""
    return json.loads(out)


@settings(FAST, max_examples=10)
@given(log=training_logs(), data=st.data())
def test_row_order_does_not_change_the_diagnosis(capsys, tmp_path, log, data):
    steps, cols = log
    path = tmp_path / "run.csv"
    path.write_text(_csv(steps, cols, np.arange(len(steps))))
    before = _report(capsys, path)
    order = data.draw(st.permutations(range(len(steps))))
    path.write_text(_csv(steps, cols, np.array(order)))
    after = _report(capsys, path)
    # The importer's notes may say the rows were sorted; the diagnosis itself is the same.
    assert {**after, "notes": None} == {**before, "notes": None}


def _write_events(folder: Path, steps: np.ndarray, cols: dict[str, np.ndarray]) -> None:
    try:
        from tensorboardX import SummaryWriter

        writer = SummaryWriter(str(folder), flush_secs=3600)
        for r, step in enumerate(steps):
            for tag, v in cols.items():
                writer.add_scalar(tag, float(v[r]), int(step), walltime=1.7e9 + r)
        writer.close()
    except ImportError:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        writer = EventFileWriter(str(folder))
        for r, step in enumerate(steps):
            for tag, v in cols.items():
                value = summary_pb2.Summary.Value(tag=tag, simple_value=float(v[r]))
                writer.add_event(event_pb2.Event(wall_time=1.7e9 + r, step=int(step),
                                                 summary=summary_pb2.Summary(value=[value])))
        writer.close()


@settings(FAST, max_examples=8)
@given(log=training_logs())
def test_csv_and_tensorboard_give_the_same_diagnosis(capsys, log):
    steps, cols = log
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "run.csv"
        csv_path.write_text(_csv(steps, cols, np.arange(len(steps))))
        events = Path(tmp) / "tb"
        _write_events(events, steps, cols)
        a, b = _report(capsys, csv_path), _report(capsys, events)
    assert (a["run"]["format"], b["run"]["format"]) == ("csv", "tensorboard")
    for report in (a, b):
        del report["run"]["name"], report["run"]["source"], report["run"]["format"]
    assert a == b



@pytest.mark.parametrize("n", [20, 60, 200])
def test_a_flat_noisy_reward_is_rarely_called_a_rise_or_a_fall(n):
    """A reward that is one level plus independent noise has no trend. Its last fifth sits
    above or below its first by chance; judged against the smoothed range alone (a quarter
    of it), that shift called 57% of 20-point logs improving or declining (a healthy run
    polled live read "reward falling" at 0.85 after 0.9). Against the noise of the medians
    it compares too, only the 5% trend test's chance calls and rare shifts remain."""
    from grpo_doctor.rules.signals import reward_progress
    from tests.helpers import make_run

    calls = 0
    for seed in range(200):
        r = 0.9 + 0.07 * np.random.default_rng(seed).standard_normal(n)
        progress = reward_progress(make_run(train__reward=r), 0)
        calls += progress.improving or progress.declining
    assert calls / 200 <= 0.15


def test_a_level_shift_well_beyond_the_noise_is_a_fall():
    from grpo_doctor.rules.signals import reward_progress
    from tests.helpers import make_run

    rng = np.random.default_rng(0)
    r = 0.9 + 0.05 * rng.standard_normal(60)
    r[-12:] -= 0.2
    assert reward_progress(make_run(train__reward=r), 0).declining


def _dict_end_by_character(text: str) -> int | None:
    """The reference reading of where a printed dict closes: one character at a time."""
    depth, quote, escaped = 0, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            elif ch == "\n":
                return None
        elif ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


@given(st.text(alphabet="{}[]()'\"\\\n ab:,1", max_size=30))
def test_where_a_printed_dict_closes_is_read_as_by_character(body: str) -> None:
    """The console reader finds a dict's end by regex (a long log's dicts had spent a second
    in the character loop); quotes, escapes, newlines and nesting read the same."""
    from grpo_doctor.importers.console import _dict_end

    text = "{" + body
    assert _dict_end(text) == _dict_end_by_character(text)


_KEYS = st.text(alphabet="abc_/ 'x\\", min_size=0, max_size=6)
_VALUES = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-10**6, 10**6).map(str),
    st.sampled_from(["nan", "-nan", "inf", "-inf", "Infinity", "NaN", "1.", ".5", "+2",
                     "007", "1e-05", "True", "None", "'text'", "np.float64(0.5)"]))


@given(st.lists(st.tuples(_KEYS, _VALUES), min_size=1, max_size=6))
def test_a_plain_printed_row_reads_as_the_parser_reads_it(entries) -> None:
    """The Trainer's rows of plain numbers are read without ``ast`` (most of a long log's
    parse); any row, plain or not, reads as the parser alone would read it."""
    from grpo_doctor.importers import console

    text = "{" + ", ".join(f"{k!r}: {v}" for k, v in entries) + "}"
    fast = console.literal_dict(text)
    saved = console._plain_dict
    console._plain_dict = lambda _text: None  # the parser alone
    try:
        slow = console.literal_dict(text)
    finally:
        console._plain_dict = saved
    assert repr(fast) == repr(slow)
