"""The importers' incremental readers (``Importer.incremental``), format by format: a log read in
random pieces while it grows, resuming each time from the state the last read returned, gives
the rows one read of the whole log gives, and the Run ``load`` builds from the last state is the
importer's Run of the whole file. Reading again from an earlier state reads the same rows again
(a state is never changed in place). The W&B framing is checked on its own against the whole-log
generator, damaged logs included."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor.importers import Delta, LoadOptions, importer_named
from grpo_doctor.importers import wandb_offline as wo
from grpo_doctor.importers.incremental import Restarted
from grpo_doctor.live_store import Rows
from tests.importers.common import FIXTURES
from tests.importers.test_wandb_offline import BLOCK, damaged, write_log

OPTIONS = LoadOptions()
PIECES = settings(max_examples=15, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _csv_log() -> bytes:
    """A CSV with the cells a tail reader can get wrong: text, logged NaN, gaps, booleans, a
    repeated step, a quoted cell holding a comma, a short row, CRLF line ends, and UTF-8."""
    lines = ["\ufeffstep,train/entropy,train/kl,eval/score,done,note"]
    for s in range(1, 120):
        ent = "No Log" if s % 17 == 0 else ("nan" if s % 23 == 0 else f"{1 / (1 + s / 100):.5f}")
        lines.append(f"{s},{ent},{s / 100:.4f},{'' if s % 10 else 0.3},"
                     f"{'True' if s % 2 else 'False'},\"é, ok\"")
        if s % 50 == 0:
            lines.append(f"{s},,,0.4")  # the same step again, a short row
    return ("\r\n".join(lines) + "\r\n").encode()


def _jsonl_log() -> bytes:
    lines = []
    for s in range(1, 150):
        kl = math.nan if s % 31 == 0 else s / 100
        lines.append(json.dumps({"step": s, "train": {"entropy": 1 / (1 + s / 100), "kl": kl}}))
        if s % 25 == 0:
            lines.append(json.dumps({"step": s, "eval_reward": 0.3, "tag": "eval ü"}))
        if s % 40 == 0:
            lines.append("not json")
    return ("\n".join(lines) + "\n").encode()


def _verl_log() -> bytes:
    lines = []
    for s in range(1, 150):
        lines.append(f"\x1b[36m(main_task pid=1)\x1b[0m step:{s} - actor/entropy:"
                     f"{1 / (1 + s / 100):.4f} - actor/kl_loss:{s / 100:.4f}")
        lines.append(f"step:{s} - critic/score/mean:0.5 - response_length/mean:{300 + s}")
    return ("\n".join(lines) + "\n").encode()


#: Case -> (file name, the log's bytes); the format is the case's first word.
TEXT_LOGS = {
    "csv": ("run.csv", _csv_log),
    "csv-fixture": ("wide.csv", lambda: (FIXTURES / "csv" / "wide.csv").read_bytes()),
    "jsonl": ("run.jsonl", _jsonl_log),
    "jsonl-fixture": ("run.jsonl", lambda: (FIXTURES / "jsonl" / "run.jsonl").read_bytes()),
    "console-verl": ("verl.log", _verl_log),
    "console-verl-fixture": ("verl.log",
                             lambda: (FIXTURES / "console" / "verl.log").read_bytes()),
    "console-dicts": ("trl.log", lambda: (FIXTURES / "console" / "trl.log").read_bytes()),
}


def _cells(rows: Rows, i: int) -> dict[str, Any]:
    """Row ``i``'s logged cells; a logged NaN as the word, so that rows compare equal."""
    return {k: "nan" if v != v else v for k, v in rows.record(i).items()}


def _table(parts: list[Rows], merge: bool) -> list[tuple[Any, dict[str, Any]]]:
    """The rows of ``parts`` in order as (step or row number, cells). ``merge``: rows of one
    step in a row are one (a later cell replacing an earlier one), as the formats whose reads
    can split a step (TensorBoard scalars, verl lines) combine them."""
    out: list[tuple[Any, dict[str, Any]]] = []
    for part in parts:
        for i in range(part.count):
            key = (float(part.steps[i]) if part.steps is not None
                   else ("row", part.first_index + i))
            if merge and out and out[-1][0] == key:
                out[-1][1].update(_cells(part, i))
            else:
                out.append((key, _cells(part, i)))
    return out


def _grow(path: Path, data: bytes, cuts: list[int], fmt: str, target: Path
          ) -> tuple[list[Delta], list[Any]]:
    """Append ``data`` to ``path`` in pieces ending at ``cuts``, reading after each append from
    the state the last read returned, then once more with ``final``. The deltas, and the state
    before each read."""
    reader = importer_named(fmt).incremental
    assert reader is not None
    state: Any = None
    deltas: list[Delta] = []
    states: list[Any] = []
    pos = 0
    for cut, final in [*((c, False) for c in cuts), (len(data), False), (len(data), True)]:
        with path.open("ab") as fh:
            fh.write(data[pos:cut])
        pos = cut
        states.append(state)
        delta = reader.read(target, state, OPTIONS, final)
        deltas.append(delta)
        state = delta.state
    return deltas, states


def _check_pieces(tmp: Path, fmt: str, name: str, data: bytes, cuts: list[int],
                  again: int, merge: bool, folder: bool = False) -> list[Delta]:
    """Pieces against one read, the Run of the last state against the importer's, and a read
    from an earlier state against the pieces read after it. The deltas of the pieces."""
    imp = importer_named(fmt)
    reader = imp.incremental
    assert reader is not None
    grown, whole_dir = tmp / "grown", tmp / "whole"
    for d in (grown, whole_dir):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
    path = grown / name
    path.write_bytes(b"")
    deltas, states = _grow(path, data, cuts, fmt, grown if folder else path)
    (whole_dir / name).write_bytes(data)
    whole = reader.read(whole_dir if folder else whole_dir / name, None, OPTIONS, True)
    assert _table([d.rows for d in deltas], merge) == _table([whole.rows], merge)

    run = reader.load(grown if folder else path, deltas[-1].state, OPTIONS)
    (expected,) = imp.load(whole_dir if folder else whole_dir / name, OPTIONS)
    assert run is not None
    pd.testing.assert_frame_equal(run.frame, expected.frame, check_exact=True)
    assert {k: list(v) for k, v in run.nan_steps.items()} == \
        {k: list(v) for k, v in expected.nan_steps.items()}

    k = again % len(states)  # from an earlier state: the same rows as the reads after it
    later = reader.read(grown if folder else path, states[k], OPTIONS, True)
    assert _table([later.rows], merge) == _table([d.rows for d in deltas[k:]], merge)
    return deltas


def _cuts(data: st.DataObject, size: int, most: int = 30) -> list[int]:
    return sorted(set(data.draw(st.lists(st.integers(1, size - 1), max_size=most))))


@pytest.mark.parametrize("case", sorted(TEXT_LOGS))
@PIECES
@given(data=st.data())
def test_a_text_log_read_in_random_pieces_is_read_whole(tmp_path: Path, case: str,
                                                        data: st.DataObject) -> None:
    name, make = TEXT_LOGS[case]
    log = make()
    fmt = case.split("-")[0]
    cuts = _cuts(data, len(log))
    deltas = _check_pieces(tmp_path, fmt, name, log, cuts, data.draw(st.integers(0, 100)),
                           merge=fmt == "console")
    # What needs a rebuild: the header (CSV); console lines until a verl line has been read
    # (printed dicts: every read that brings lines, since they are parsed whole). A read
    # brings lines when a line ended since the last one; the final read, the rest.
    offsets = [0, *(log.rfind(b"\n", 0, cut) + 1 for cut in [*cuts, len(log)]), len(log)]
    brought = [after > before for before, after in zip(offsets, offsets[1:])]
    first_rows = next((i for i, d in enumerate(deltas) if d.rows.count), len(deltas))
    expected = {"jsonl": [False] * len(deltas),
                "csv": [i == brought.index(True) for i in range(len(deltas))],
                "console": [b and i <= first_rows for i, b in enumerate(brought)]}[fmt]
    assert [d.structural for d in deltas] == expected


@pytest.mark.parametrize("fixture", ["simple_value", "tensor_content", "tensor_float_val"])
@PIECES
@given(data=st.data())
def test_a_tensorboard_file_read_in_random_pieces_is_read_whole(
        tmp_path: Path, fixture: str, data: st.DataObject) -> None:
    (src,) = (FIXTURES / "tensorboard" / fixture).glob("*tfevents*")
    log = src.read_bytes()
    _check_pieces(tmp_path, "tensorboard", src.name, log, _cuts(data, len(log)),
                  data.draw(st.integers(0, 100)), merge=True, folder=True)


@PIECES
@given(data=st.data())
def test_a_wandb_log_read_in_random_pieces_is_read_whole(tmp_path: Path,
                                                         data: st.DataObject) -> None:
    src = next((FIXTURES / "wandb" / "wandb").glob("offline-run-*grpofix1/run-*.wandb"))
    log = src.read_bytes()
    _check_pieces(tmp_path, "wandb-offline", src.name, log, _cuts(data, len(log)),
                  data.draw(st.integers(0, 100)), merge=False, folder=True)


def test_a_second_event_file_is_structural_and_read_from_its_start(tmp_path: Path) -> None:
    first, second = sorted((FIXTURES / "tensorboard" / "restart").glob("*tfevents*"))
    reader = importer_named("tensorboard").incremental
    assert reader is not None and reader.policy == "update"
    shutil.copy(first, tmp_path / first.name)
    one = reader.read(tmp_path, None, OPTIONS, False)
    assert one.structural and one.rows.count
    assert not reader.read(tmp_path, one.state, OPTIONS, False).rows.count  # nothing new
    shutil.copy(second, tmp_path / second.name)
    two = reader.read(tmp_path, one.state, OPTIONS, False)
    assert two.structural and two.rows.count
    run = reader.load(tmp_path, two.state, OPTIONS)
    assert run is not None and run.restarts == 1


def test_a_rewritten_log_is_a_restart(tmp_path: Path) -> None:
    reader = importer_named("csv").incremental
    assert reader is not None
    path = tmp_path / "run.csv"
    path.write_text("step,entropy\n1,0.5\n2,0.4\n")
    state = reader.read(path, None, OPTIONS, False).state
    path.write_text("step,entropy\n1,0.7\n2,0.4\n3,0.3\n")  # what was read is not there
    with pytest.raises(Restarted, match="rewritten"):
        reader.read(path, state, OPTIONS, False)
    path.write_text("step,entropy\n")
    with pytest.raises(Restarted, match="shrank"):
        reader.read(path, state, OPTIONS, False)


# --- the W&B framing, resumable -----------------------------------------------------------------


def _record(i: int, size: int) -> bytes:
    """``size`` bytes that differ from one record to the next and along the record."""
    return bytes((i * 7 + j) % 251 for j in range(size))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 3 * BLOCK), max_size=6),
       st.sampled_from(["none", "flip", "cut", "zeros"]), st.floats(0, 1), st.data())
def test_wandb_framing_resumed_in_pieces_equals_the_whole_log(
        sizes: list[int], damage: str, where: float, data: st.DataObject) -> None:
    # Records of any size: FULL chunks, and FIRST/MIDDLE/LAST ones across blocks, which a
    # piece can end between.
    log = damaged(write_log([_record(i, n) for i, n in enumerate(sizes)]), damage, where)
    notes: list[str] = []
    expected = list(wo.iter_log_records(log, notes))
    whole = wo.LogFraming()
    assert list(whole.records(log)) == expected

    got: list[bytes] = []
    corrupt: list[int] = []
    position = wo.LogPosition()
    for cut in [*_cuts(data, max(len(log), 2), 12), len(log)]:
        framing = wo.LogFraming(position)
        got += [bytes(r) for r in framing.records(log[position.offset:cut])]
        corrupt += framing.corrupt
        position = framing.position
    assert got == [bytes(r) for r in expected]
    assert corrupt == whole.corrupt
    assert position == whole.position
