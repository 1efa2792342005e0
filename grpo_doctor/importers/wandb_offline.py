"""W&B run folders (``wandb/offline-run-*``, ``wandb/run-*``): metrics from ``run-<id>.wandb``.

Since wandb-core, an offline run's metrics live only in its ``run-<id>.wandb`` transaction log
(no ``wandb-history.jsonl``), and wandb no longer ships a Python reader for it. The log is read
here (research note ``importers-research.md`` §3.4-3.5): a 7-byte header ``:W&B`` + uint16
0xBEE1 + uint8 version, then 32 KiB blocks of LevelDB-log chunks ``uint32 crc | uint16 length |
uint8 type (FULL, FIRST, MIDDLE, LAST) | data`` with ``crc = zlib.crc32(data, crc32(type))``.
Each reassembled record is a ``wandb.proto.wandb_internal_pb2.Record``. A chunk with a bad CRC
loses the rest of its block (as LevelDB does), with a note; a live run's cut tail is tolerated.

History items carry their key as ``nested_key`` (wandb-core) or ``key`` (older writers) and a
JSON value. Nested keys are joined with "/"; media (a group holding ``_type``), text and lists
are skipped; ``_step`` is the step unless ``define_metric("*", step_metric=...)`` named another.

Speed: a clean log's chunks are framed for all its 32 KiB blocks at once (chunks never cross
a block; ``_clean_log_spans``), each chunk's CRC one C call; records split over blocks are
joined after the file. History and summary records in wandb-core's layout are then taken
apart in bulk with numpy (``_read_in_bulk``), a key's values kept as one piece of bytes per
batch, and a key whose values are all plain JSON numbers is read by Arrow's correctly rounded
parser in one call (``_json_numbers``, which first refuses what JSON refuses). A file holding
any history or summary record in another layout, or any damage, is read record by record
with protobuf, with the notes the generator ``iter_log_records`` makes.
"""

from __future__ import annotations

import itertools
import json
import math
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from grpo_doctor.errors import FormatError
from grpo_doctor.importers import Delta, Importer, Incremental, LoadOptions
from grpo_doctor.importers._bytes import HASH_KEYS, WORD_MASKS, Buffer, gather_rows, varint
from grpo_doctor.importers._common import has_magic, truncation_note, walk_files
from grpo_doctor.importers.incremental import (
    FileIdentity,
    SeveralRuns,
    read_from,
    rows_from_records,
    snapshot,
)
from grpo_doctor.live_store import Rows
from grpo_doctor.store import Run, build_run, check_table_size

MAGIC = b":W&B"
_HEADER = struct.Struct("<4sHB")
_IDENT = 0xBEE1
_BLOCK = 32768
_CHUNK = struct.Struct("<IHB")
_CHUNK_DTYPE = np.dtype([("crc", "<u4"), ("length", "<u2"), ("kind", "u1")])
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4
_TYPE_CRC = {t: zlib.crc32(bytes([t])) for t in (_FULL, _FIRST, _MIDDLE, _LAST)}
_MAX_NOTES = 10
_MAX_DEPTH = 4
_SNIFF_MAX_ENTRIES = 5000
_INTERNAL = ("_runtime", "_timestamp", "_step")


@dataclass(frozen=True)
class LogPosition:
    """Where reading a ``.wandb`` log resumes: the offset after the last chunk read, and the
    chunks read so far of a record whose last chunk is not (yet) there."""

    offset: int = 0
    pending: tuple[bytes, ...] | None = None


class LogFraming:
    """The LevelDB-log framing of a ``.wandb`` log, read from a ``LogPosition`` over the bytes
    that follow it (``records``), so that a growing log is framed as it grows: a chunk not yet
    fully written is read again next time. After ``records``: ``position`` to resume from,
    ``corrupt`` (the offsets of chunks with a bad CRC, each losing the rest of its block) and
    ``cut`` (the bytes end inside a chunk)."""

    def __init__(self, start: LogPosition | None = None) -> None:
        start = start or LogPosition()
        self.pos = start.offset
        self.pending: list[bytes] | None = None if start.pending is None else list(start.pending)
        self.corrupt: list[int] = []
        self.cut = False

    @property
    def position(self) -> LogPosition:
        pending = None if self.pending is None else tuple(bytes(c) for c in self.pending)
        return LogPosition(self.pos, pending)

    def records(self, data: bytes | memoryview) -> Iterator[bytes]:
        """The complete records in ``data``, the log's bytes from ``position`` on."""
        base = self.pos
        n = base + len(data)
        pos = base
        if pos == 0:
            if len(data) < _HEADER.size:
                return
            pos = _HEADER.size
        pending = self.pending
        while True:
            left = _BLOCK - pos % _BLOCK
            if left < _CHUNK.size:  # block trailer: zero padding
                pos += left
                continue
            if pos + _CHUNK.size > n:
                self.cut = pos < n and any(data[pos - base :])
                break
            crc, length, kind = _CHUNK.unpack_from(data, pos - base)
            if kind == 0 and length == 0 and crc == 0:  # pre-allocated zeros
                pos += left
                continue
            end = pos + _CHUNK.size + length
            fits = length <= left - _CHUNK.size
            if end > n and kind in _TYPE_CRC and fits:
                self.cut = True  # not fully written (yet)
                break
            chunk = data[pos + _CHUNK.size - base : end - base]
            if kind not in _TYPE_CRC or not fits or zlib.crc32(chunk, _TYPE_CRC[kind]) != crc:
                self.corrupt.append(pos)
                pending = None
                pos += left  # the length cannot be trusted: drop the rest of the block
                continue
            pos = end
            if kind == _FULL:
                pending = None
                yield chunk
            elif kind == _FIRST:
                pending = [chunk]
            elif pending is not None:  # a MIDDLE or LAST whose FIRST was lost is dropped
                pending.append(chunk)
                if kind == _LAST:
                    yield b"".join(pending)
                    pending = None
        self.pos, self.pending = pos, pending


def iter_log_records(data: bytes | memoryview, notes: list[str]) -> Iterator[bytes]:
    """The records of a whole ``.wandb`` log (after its header), noting corruption and a cut
    tail."""
    framing = LogFraming()
    yield from framing.records(data)
    if framing.cut or framing.pending is not None:
        notes.append(truncation_note(framing.pos))
    corrupt = framing.corrupt
    notes[:0] = [f"corrupt block at byte {p} skipped" for p in corrupt[:_MAX_NOTES]]
    if len(corrupt) > _MAX_NOTES:
        notes.insert(_MAX_NOTES, f"{len(corrupt) - _MAX_NOTES} more corrupt blocks skipped")


# --- values -----------------------------------------------------------------------------------


def _loads(text: str) -> Any:
    """JSON as wandb writes it (NaN and Infinity tokens allowed); never eval."""
    try:
        return json.loads(text)
    except RecursionError as exc:  # absurdly deep nesting
        raise ValueError("JSON nested too deeply") from exc


def _unwrap(value: Any) -> Any:
    """wandb's config.yaml wraps each entry as ``{"value": ..., "desc": ...}``."""
    if isinstance(value, dict) and "value" in value and set(value) <= {"value", "desc"}:
        return value["value"]
    return value


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """Nested dicts to "/"-joined keys; media groups (holding ``_type``) are dropped."""
    stack = [(prefix, value)]
    while stack:
        key, v = stack.pop()
        if not isinstance(v, dict):
            out[key] = v
        elif "_type" not in v:
            stack.extend((f"{key}/{k}" if key else str(k), x) for k, x in reversed(v.items()))


def _set_path(target: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        nxt = target.get(part)
        if not isinstance(nxt, dict):
            nxt = target[part] = {}
        target = nxt
    target[path[-1]] = value


def _del_path(target: dict[str, Any], path: list[str]) -> None:
    for part in path[:-1]:
        nxt = target.get(part)
        if not isinstance(nxt, dict):
            return
        target = nxt
    target.pop(path[-1], None)


def _item_path(item: Any) -> list[str]:
    return list(item.nested_key) if item.nested_key else [item.key]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, complex)


def _column(rows: list[int], texts: list[str] | _JsonTexts) -> tuple[list[int], list[Any], int]:
    """Parse one key's JSON values in one go; items that are not JSON are dropped. Plain
    numbers come back as one float64 array."""
    if isinstance(texts, _JsonTexts):
        numbers = texts.numbers()
        if numbers is not None:
            return rows, numbers, 0  # type: ignore[return-value]
    try:
        joined = texts.joined() if isinstance(texts, _JsonTexts) else ",".join(texts)
        values = _loads("[" + joined + "]")
        if len(values) == len(rows):
            return rows, values, 0
    except ValueError:
        pass
    keep_rows, values, bad = [], [], 0
    for r, t in zip(rows, texts):
        try:
            values.append(_loads(t))
            keep_rows.append(r)
        except ValueError:
            bad += 1
    return keep_rows, values, bad


def _float(v: float) -> float:
    """A JSON number as a float; integers too large for a float become +-inf."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _to_numeric(values: list[Any]) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(float values, logged-NaN mask, non-numeric count), or None if no value is a number."""
    if isinstance(values, np.ndarray):
        return values, np.isnan(values), 0
    kinds = set(map(type, values))
    if kinds <= {int, float, bool}:
        try:
            arr = np.array(values, dtype=np.float64)
        except OverflowError:
            arr = np.array([_float(v) for v in values], dtype=np.float64)
        return arr, np.isnan(arr), 0
    arr = np.full(len(values), np.nan, dtype=np.float64)
    explicit = np.zeros(len(values), dtype=bool)
    numbers = 0
    other = 0
    for i, v in enumerate(values):
        if v is None:
            continue
        if _is_number(v):
            arr[i] = _float(v)
            explicit[i] = arr[i] != arr[i]
            numbers += 1
        else:
            other += 1
    if not numbers:
        return None
    return arr, explicit, other


# --- one run ----------------------------------------------------------------------------------


@dataclass
class _RunLog:
    path: Path
    run_id: str = ""
    display_name: str = ""
    project: str = ""
    n_rows: int = 0
    columns: dict[str, tuple[list[int], list[str]]] = field(default_factory=dict)
    step_num: dict[int, int] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, str] = field(default_factory=dict)
    step_metric: str | None = None
    notes: list[str] = field(default_factory=list)


def read_wandb_log(path: Path) -> _RunLog:
    """Everything grpo-doctor uses from one ``run-<id>.wandb`` file."""
    # Room after the file for the records split over blocks (joined there, see
    # ``_clean_log_spans``): a few percent of the file in wandb-core's logs.
    b = Buffer.read(path, room=_ROOM)
    data = b.data
    if len(data) < _HEADER.size or data[:4] != MAGIC:
        raise FormatError(f"{path}: not a W&B run file (no ':W&B' header)")

    from google.protobuf.message import DecodeError
    from wandb.proto import wandb_internal_pb2 as pb

    log = _read_in_bulk(b, _new_log(path, data), pb, DecodeError)
    if log is not None:
        return log
    log = _new_log(path, data)
    parse = pb.Record.FromString
    columns = log.columns
    unreadable = 0
    for raw in iter_log_records(data, log.notes):
        try:
            rec = parse(raw)
        except DecodeError:
            unreadable += 1
            continue
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            row = log.n_rows
            log.n_rows += 1
            hist = rec.history
            for item in hist.item:
                key = "/".join(item.nested_key) if item.nested_key else item.key
                col = columns.get(key)
                if col is None:
                    col = columns[key] = ([], [])
                col[0].append(row)
                col[1].append(item.value_json)
            if hist.HasField("step"):
                log.step_num[row] = hist.step.num
        elif kind == "summary":
            summary = log.summary
            for item in rec.summary.update:
                summary[item.key or "/".join(item.nested_key)] = item.value_json
            for item in rec.summary.remove:
                summary.pop(item.key or "/".join(item.nested_key), None)
        else:
            _apply_record(log, rec, kind)
    if unreadable:
        log.notes.append(f"{unreadable} unreadable record(s) skipped")
    return log


def _new_log(path: Path, data: bytes) -> _RunLog:
    _magic, ident, version = _HEADER.unpack_from(data, 0)
    log = _RunLog(path=path)
    if ident != _IDENT or version != 0:
        log.notes.append(f"unexpected .wandb header (ident {ident:#x}, version {version})")
    return log


def _apply_record(log: _RunLog, rec: Any, kind: str | None) -> None:
    """A record that is neither history nor summary."""
    if kind == "run":
        run = rec.run
        log.run_id = run.run_id or log.run_id
        log.display_name = run.display_name or log.display_name
        log.project = run.project or log.project
        _apply_config(log.config, run.config.update, [])
    elif kind == "config":
        _apply_config(log.config, rec.config.update, rec.config.remove)
    elif kind == "metric":
        m = rec.metric
        if m.glob_name == "*" and m.step_metric:
            log.step_metric = m.step_metric


# --- history and summary records in bulk ------------------------------------------------------
#
# Nearly all of a run's records are history and summary records of one layout: Record{num,
# history{item{nested_key..., value_json}..., step{num}}} and Record{num, summary{update{...}...}}.
# Those are taken apart with numpy, a batch of records at a time, field by field across the
# batch; each distinct key's bytes are parsed once with protobuf, and a key's values are kept
# as one comma-joined JSON text per batch. Any history or summary record in another layout
# (other fields, another order, summary removals, bytes that are not ASCII in a summary value,
# ...) sends the whole file through the record-by-record reader above, so that what is read
# is exactly what protobuf would parse.

_BULK_BATCH = 8192  # records decoded together
_ROOM = 8 << 20  # bytes of room after a log for its records split over blocks
_MAX_KEY_BYTES = 256


class _JsonTexts:
    """One key's history values, one piece per batch of records: ASCII values back to back
    (bytes), or comma-joined text where one is not ASCII (str); no str is made per value.
    Iterating yields the values one by one; ``numbers`` reads them all at once."""

    __slots__ = ("lengths", "pieces", "rows")

    def __init__(self) -> None:
        self.pieces: list[bytes | str] = []
        self.lengths: list[np.ndarray] = []
        self.rows: list[np.ndarray] = []

    def add(self, piece: bytes | str, lengths: np.ndarray, rows: np.ndarray) -> None:
        self.pieces.append(piece)
        self.lengths.append(lengths)
        self.rows.append(rows)

    def __len__(self) -> int:
        return sum(len(n) for n in self.lengths)

    def joined(self) -> str:
        return ",".join(",".join(self._values(p, n)) if isinstance(p, bytes) else p
                        for p, n in zip(self.pieces, self.lengths))

    @staticmethod
    def _values(piece: bytes | str, lengths: np.ndarray) -> Iterator[str]:
        pos = 0
        step = 1 if isinstance(piece, str) else 0  # the commas between values
        for n in lengths.tolist():
            value = piece[pos : pos + n]
            yield value.decode("ascii") if isinstance(value, bytes) else value
            pos += n + step

    def __iter__(self) -> Iterator[str]:
        for piece, lengths in zip(self.pieces, self.lengths):
            yield from self._values(piece, lengths)

    def numbers(self) -> np.ndarray | None:
        """All values as float64, exactly as ``json.loads`` and ``float`` read them, when
        every one is a plain JSON number; else None."""
        if not all(isinstance(p, bytes) for p in self.pieces):
            return None
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int32)
        return _json_numbers(b"".join(self.pieces), lengths)  # type: ignore[arg-type]


_NUMBER_BYTES = np.zeros(256, dtype=bool)
_NUMBER_BYTES[list(b"0123456789.eE+-")] = True
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[list(b"0123456789")] = True


def _json_numbers(data: bytes, lengths: np.ndarray) -> np.ndarray | None:
    """The JSON numbers in ``data`` (back to back, ``lengths`` bytes each) as float64, as
    ``float(json.loads(x))`` would give them; None when one is not a plain JSON number.

    Arrow's parser (correctly rounded, like Python's) reads them; it also takes "+1", ".5",
    "1.", "1.e5", "-.5", "01", which JSON does not, so those are looked for first, and it
    reads the JSON integer -0 as -0.0 where Python has 0."""
    import pyarrow as pa
    import pyarrow.compute as pc

    count = len(lengths)
    if not count:
        return np.zeros(0, dtype=np.float64)
    d = np.frombuffer(data, dtype=np.uint8)
    if (lengths <= 0).any() or not _NUMBER_BYTES[d].all():
        return None
    ends = np.cumsum(lengths, dtype=np.int64)
    starts = ends - lengths
    first = starts + (d[starts] == 0x2D)  # after an optional minus
    if (first >= ends).any() or not _DIGIT[d[first]].all():
        return None
    zero = np.flatnonzero((d[first] == 0x30) & (first + 1 < ends))
    if len(zero) and _DIGIT[d[first[zero] + 1]].any():
        return None  # a leading zero
    dots = np.flatnonzero(d == 0x2E)
    if len(dots):  # each between two digits of its own number
        is_start = np.zeros(len(d) + 1, dtype=bool)
        is_start[starts] = True
        is_start[-1] = True
        if is_start[dots].any() or is_start[dots + 1].any():
            return None
        if not (_DIGIT[d[dots - 1]].all() and _DIGIT[d[dots + 1]].all()):
            return None
    offsets = np.concatenate([[0], ends]).astype(np.int64)
    try:
        strings = pa.Array.from_buffers(pa.large_string(), count,
                                        [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        values = pc.cast(strings, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    values = np.array(values, dtype=np.float64)  # writable
    for i in np.flatnonzero((values == 0) & np.signbit(values)).tolist():
        if not any(c in data[starts[i] : ends[i]] for c in b".eE"):
            values[i] = 0.0  # the integer -0
    return values


class _Odd(Exception):
    """A history or summary record the bulk reader does not take: read record by record."""


def _varints(u8: np.ndarray, pos: np.ndarray, max_bytes: int
             ) -> tuple[np.ndarray, np.ndarray | int]:
    """Varints at ``pos`` (value, byte count); _Odd if one is longer than ``max_bytes``."""
    first = u8[pos]
    if not len(first) or first.max() < 0x80:  # all one byte long: the common case
        return first.astype(np.int64), 1
    value, length = varint(u8, pos)
    if len(length) and not ((length > 0) & (length <= max_bytes)).all():
        raise _Odd
    return value, length


def _check(ok: np.ndarray) -> None:
    if not ok.all():
        raise _Odd


def _parse_batch(b: Buffer, starts: np.ndarray, ends: np.ndarray) -> dict[str, np.ndarray]:
    """The history and summary records of a batch, field by field across the batch.

    Returns the kind of each record (0 other, 1 history, 2 summary), its items in (record,
    position) order (record, key start and end, value start and end) and the history steps
    (record, num); raises _Odd for a history or summary record in another layout."""
    u8 = b.u8
    size = b.size
    p = starts.copy()
    has_num = (p < ends) & (u8[np.minimum(p, size)] == 0x08)
    _num, num_len = varint(u8, p + 1)
    p = np.where(has_num, p + 1 + num_len, p)
    inside = p < ends
    tag = u8[np.minimum(p, size)]
    hist = inside & (tag == 0x12)
    summ = inside & (tag == 0x1A)
    ours = np.flatnonzero(hist | summ)
    kind = hist.astype(np.int8) + 2 * summ.astype(np.int8)
    out = {"kind": kind}
    _check((num_len[ours] > 0) & (num_len[ours] <= 9) | ~has_num[ours])
    length, n = _varints(u8, p[ours] + 1, 5)
    cur = p[ours] + 1 + n
    end = cur + length
    _check(end == ends[ours])
    is_hist = hist[ours]
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("rec", "k0", "k1", "v0", "v1", "at")}
    step_rec: list[np.ndarray] = []
    step_num: list[np.ndarray] = []
    act = np.flatnonzero(cur < end)
    position = 0
    while len(act):
        at = cur[act]
        t = u8[at]
        item = t == 0x0A
        step = (t == 0x12) & is_hist[act]
        _check(item | step)
        # Items: key fields (key = 1, nested_key = 2), then value_json (16), then nothing.
        ia, ic = act[item], at[item]
        length, n = _varints(u8, ic + 1, 5)
        i0 = ic + 1 + n
        i1 = i0 + length
        _check(i1 <= end[ia])
        q = i0.copy()
        kact = np.arange(len(ia))
        while len(kact):
            qq = q[kact]
            kt = u8[qq]
            kact = kact[((kt == 0x0A) | (kt == 0x12)) & (qq < i1[kact])]
            if not len(kact):
                break
            qq = q[kact]
            length, n = _varints(u8, qq + 1, 5)
            q[kact] = qq + 1 + n + length
            _check(q[kact] <= i1[kact])
        _check((q + 2 <= i1) & (u8[q] == 0x82) & (u8[q + 1] == 0x01))
        length, n = _varints(u8, q + 2, 5)
        v0 = q + 2 + n
        v1 = v0 + length
        _check(v1 == i1)
        parts["rec"].append(ours[ia])
        parts["k0"].append(i0)
        parts["k1"].append(q)
        parts["v0"].append(v0)
        parts["v1"].append(v1)
        parts["at"].append(np.full(len(ia), position))
        position += 1
        cur[ia] = i1
        # The step: HistoryStep{num = 1}, the record's last field.
        sa, sc = act[step], at[step]
        if len(sa):
            length, n = _varints(u8, sc + 1, 5)
            s0 = sc + 1 + n
            s1 = s0 + length
            _check(s1 == end[sa])
            num, n = varint(u8, s0 + 1)
            empty = length == 0
            _check(empty | ((u8[s0] == 0x08) & (n > 0) & (n <= 9) & (s0 + 1 + n == s1)))
            step_rec.append(ours[sa])
            step_num.append(np.where(empty, 0, num))
            cur[sa] = s1
        act = act[cur[act] < end[act]]
    found = {k: np.concatenate(a) if a else np.zeros(0, dtype=np.int64) for k, a in parts.items()}
    # Items were found position by position: put them in (record, position) order.
    count = np.bincount(found["rec"], minlength=len(starts))
    dest = (np.cumsum(count) - count)[found["rec"]] + found["at"]
    for key in ("rec", "k0", "k1", "v0", "v1"):
        out[key] = np.empty_like(found[key])
        out[key][dest] = found[key]
    out["step_rec"] = np.concatenate(step_rec) if step_rec else np.zeros(0, dtype=np.int64)
    out["step_num"] = np.concatenate(step_num) if step_num else np.zeros(0, dtype=np.int64)
    return out


def _clean_log_spans(b: Buffer) -> tuple[Buffer, np.ndarray, np.ndarray] | None:
    """Where each record of a clean log lies: (buffer, starts, ends), records in order, as
    ``iter_log_records`` yields them; None when the log is not clean (a bad CRC, a chunk
    that does not fit, a cut tail, a broken FIRST..LAST sequence), so that the generator,
    with its notes, reads it instead.

    Chunks never cross a block, so every block is walked at once, chunk by chunk; a record
    split over blocks is joined after the file's bytes, in a new buffer."""
    n = b.size
    u8 = b.u8
    blocks = -(-n // _BLOCK)
    block_end = np.arange(1, blocks + 1, dtype=np.int64) * _BLOCK
    pos = block_end - _BLOCK
    pos[0] = _HEADER.size
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (position, length, kind)
    while len(pos):
        alive = (block_end - pos >= _CHUNK.size) & (pos < n)  # else a trailer, or the end
        pos, block_end = pos[alive], block_end[alive]
        if not len(pos):
            break
        if int(pos.max()) + _CHUNK.size > n:
            return None  # a cut chunk header at the end
        left = block_end - pos
        head = u8[pos[:, None] + np.arange(_CHUNK.size)].copy().view(_CHUNK_DTYPE).reshape(-1)
        length = head["length"].astype(np.int64)
        kind = head["kind"].astype(np.int64)
        zero = (kind == 0) & (length == 0) & (head["crc"] == 0)  # pre-allocated: block done
        pos, length, kind, left = pos[~zero], length[~zero], kind[~zero], left[~zero]
        block_end = block_end[~zero]
        if ((kind < _FULL) | (kind > _LAST) | (length > left - _CHUNK.size)).any():
            return None
        if int((pos + _CHUNK.size + length).max(initial=0)) > n:
            return None
        found.append((pos, length, kind))
        pos = pos + _CHUNK.size + length
    if not found:
        return b, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    at = np.concatenate([f[0] for f in found])
    by_pos = np.argsort(at, kind="stable")
    at = at[by_pos]
    length = np.concatenate([f[1] for f in found])[by_pos]
    kind = np.concatenate([f[2] for f in found])[by_pos]
    # Chunk CRCs: zlib.crc32(data, crc32(kind)), one C call each.
    data = b.data
    starts = at + _CHUNK.size
    ends = starts + length
    init = np.array([0, *(_TYPE_CRC[t] for t in (_FULL, _FIRST, _MIDDLE, _LAST))],
                    dtype=np.int64)[kind]
    crc = zlib.crc32
    got = np.fromiter(map(crc, map(data.__getitem__, map(slice, starts.tolist(), ends.tolist())),
                          init.tolist()), dtype=np.uint32, count=len(at))
    stored = b.u32[at]
    if not (got == stored).all():
        return None
    split = np.flatnonzero(kind != _FULL)
    if not len(split):
        return b, starts, ends
    # Records over several blocks: FIRST, MIDDLE..., LAST in a row, joined after the file.
    kinds = kind[split].tolist()
    extra = bytearray()
    joined_at: list[tuple[int, int, int]] = []  # (first chunk, start in extra, end)
    i = 0
    while i < len(kinds):
        if kinds[i] != _FIRST:
            return None
        j = i + 1
        while j < len(kinds) and kinds[j] == _MIDDLE and split[j] == split[j - 1] + 1:
            j += 1
        if j >= len(kinds) or kinds[j] != _LAST or split[j] != split[j - 1] + 1:
            return None
        a = len(extra)
        for c in split[i : j + 1].tolist():
            extra += data[int(starts[c]) : int(ends[c])]
        joined_at.append((int(split[i]), a, len(extra)))
        i = j + 1
    if len(b.padded) >= n + len(extra) + Buffer._PAD:  # in the room left after the file
        b.padded[n : n + len(extra)] = np.frombuffer(extra, dtype=np.uint8)
        b.padded[n + len(extra) : n + len(extra) + Buffer._PAD] = 0
        out = Buffer(b.padded, n + len(extra))
    else:
        whole = bytearray(n + len(extra) + Buffer._PAD)
        whole[:n] = data
        whole[n : n + len(extra)] = extra
        out = Buffer(whole, n + len(extra))
    keep = kind == _FULL
    firsts = np.array([f for f, _, _ in joined_at], dtype=np.int64)
    keep[firsts] = True
    starts, ends = starts.copy(), ends.copy()
    starts[firsts] = n + np.array([a for _, a, _ in joined_at], dtype=np.int64)
    ends[firsts] = n + np.array([z for _, _, z in joined_at], dtype=np.int64)
    return out, starts[keep], ends[keep]


def _read_in_bulk(b: Buffer, log: _RunLog, pb: Any, decode_error: type[Exception]
                  ) -> _RunLog | None:
    """``read_wandb_log`` in bulk; None when the file needs reading record by record."""
    keys: dict[tuple[int, int], tuple[str, bytes]] = {}  # (kind, key-bytes hash) -> key
    texts: dict[str, _JsonTexts] = {}
    unreadable = 0
    parse = pb.Record.FromString
    item_types = {1: pb.HistoryItem.FromString, 2: pb.SummaryItem.FromString}
    try:
        for buf, starts, ends in _batches(b, log):
            data = buf.data
            got = _parse_batch(buf, starts, ends)
            kind = got["kind"]
            for r in np.flatnonzero(kind == 0).tolist():  # run, config, metric, stats, ...
                try:
                    rec = parse(data[starts[r] : ends[r]])
                except decode_error:
                    unreadable += 1
                    continue
                other = rec.WhichOneof("record_type")
                if other in ("history", "summary"):
                    raise _Odd
                _apply_record(log, rec, other)
            _take_items(log, buf, data, got, keys, texts, item_types, decode_error)
    except _Odd:
        return None
    for key, col in texts.items():
        log.columns[key] = (np.concatenate(col.rows), col)  # type: ignore[assignment]
    if unreadable:
        log.notes.append(f"{unreadable} unreadable record(s) skipped")
    return log


def _batches(b: Buffer, log: _RunLog) -> Iterator[tuple[Buffer, np.ndarray, np.ndarray]]:
    """The log's records, ``_BULK_BATCH`` at a time: (buffer, starts, ends)."""
    spans = _clean_log_spans(b)
    if spans is not None:
        buf, starts, ends = spans
        for a in range(0, len(starts), _BULK_BATCH):
            yield buf, starts[a : a + _BULK_BATCH], ends[a : a + _BULK_BATCH]
        return
    records = iter_log_records(b.data, log.notes)
    while True:
        batch = list(itertools.islice(records, _BULK_BATCH))
        if not batch:
            return
        lengths = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
        ends = np.cumsum(lengths)
        joined = b"".join(batch)
        del batch
        yield Buffer(bytearray(joined) + bytes(Buffer._PAD), len(joined)), ends - lengths, ends


def _gather_joined(b: Buffer, starts: np.ndarray, lengths: np.ndarray,
                   sep: int | None = 0x2C) -> np.ndarray:
    """The byte strings ``[start, start + length)`` of the buffer, each followed by ``sep``
    (unless None), one after the other, as a uint8 array.

    Short strings (numbers) are gathered as fixed-width rows, one gather each, and packed
    with a mask; numpy would gather them byte by byte otherwise."""
    count = len(lengths)
    extra = 0 if sep is None else 1
    if not count:
        return np.zeros(0, dtype=np.uint8)
    width = int(lengths.max()) + extra
    if width <= Buffer._PAD:
        rows = np.ndarray((len(b.padded) - width + 1,), dtype=np.dtype((np.void, width)),
                          buffer=b.padded, strides=(1,))
        m = rows[starts].view(np.uint8).reshape(count, width)
        if sep is not None:
            m[np.arange(count), lengths] = sep
        return m[np.arange(width) < (lengths + extra)[:, None]]
    total = int(lengths.sum())
    out = np.full(total + extra * count, 0x2C if sep is None else sep, dtype=np.uint8)
    if total:
        packed = np.cumsum(lengths + extra) - lengths - extra  # each string's start in out
        k = np.arange(total, dtype=np.int64)
        base = np.repeat(np.arange(count, dtype=np.int64), lengths)
        within = k - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out[packed[base] + within] = b.u8[starts[base] + within]
    return out


def _has_high_byte(b: Buffer, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Whether each byte string ``[start, start + length)`` holds a byte >= 0x80."""
    out = np.zeros(len(starts), dtype=bool)
    short = lengths <= Buffer._PAD
    if short.any():  # one gather per string, as a row
        width = int(lengths[short].max(initial=1))
        rows = np.ndarray((len(b.padded) - width + 1,), dtype=np.dtype((np.void, width)),
                          buffer=b.padded, strides=(1,))
        m = rows[starts[short]].view(np.uint8).reshape(-1, width)
        out[short] = ((m >= 0x80) & (np.arange(width) < lengths[short][:, None])).any(axis=1)
    for j in np.flatnonzero(~short).tolist():
        s = int(starts[j])
        out[j] = bool((b.u8[s : s + int(lengths[j])] >= 0x80).any())
    return out


def _take_items(log: _RunLog, b: Buffer, joined: memoryview, got: dict[str, np.ndarray],
                keys: dict[tuple[int, int], tuple[str, bytes]], texts: dict[str, _JsonTexts],
                item_types: dict[int, Any], decode_error: type[Exception]) -> None:
    import pandas as pd

    kind = got["kind"]
    rec, k0, k1, v0, v1 = got["rec"], got["k0"], got["k1"], got["v0"], got["v1"]
    item_kind = kind[rec]
    klen = k1 - k0
    if len(klen) and klen.max() > _MAX_KEY_BYTES:
        raise _Odd
    # Each distinct key's bytes are parsed once; every item is checked byte for byte against
    # the first item of its hash in the batch, and that one against the bytes seen before.
    width = -(-int(klen.max()) // 8) * 8 if len(klen) else 0
    key_rows = gather_rows(b, k0, width)  # each key's bytes in one gather, as aligned words
    words = [key_rows[:, j] & WORD_MASKS[np.clip(klen - 8 * j, 0, 8)]
             for j in range(width // 8)]
    del key_rows
    h = klen.astype(np.uint64) * HASH_KEYS[-1] + item_kind.astype(np.uint64)
    for j, word in enumerate(words):
        h += word * HASH_KEYS[j]
    h ^= h >> np.uint64(31)
    h *= np.uint64(0x9E3779B97F4A7C15)
    inverse, uniq = pd.factorize(h)  # hashing, not sorting: ids in the order first seen
    first = np.full(len(uniq), len(h), dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(len(h)))
    ref = first[inverse]
    same = (klen == klen[ref]) & (item_kind == item_kind[ref])
    for word in words:
        same &= word == word[ref]
    _check(same)
    names: list[str] = []
    for hv, f in zip(uniq.tolist(), first.tolist()):
        kb = bytes(joined[k0[f] : k1[f]])
        k = int(item_kind[f])
        known = keys.get((k, hv))
        if known is None:
            try:
                item = item_types[k](kb)
            except decode_error:
                raise _Odd from None
            if k == 1:
                name = "/".join(item.nested_key) if item.nested_key else item.key
            else:
                name = item.key or "/".join(item.nested_key)
            known = keys[(k, hv)] = (name, kb)
        elif known[1] != kb:
            raise _Odd
        names.append(known[0])
    ids = {n: i for i, n in enumerate(dict.fromkeys(names))}
    key_id = np.array([ids[n] for n in names], dtype=np.int64)[inverse]
    id_names = list(ids)

    # History: rows in record order, values per key as one JSON text.
    hist = kind == 1
    row_of = np.cumsum(hist) - 1 + log.n_rows
    mine = np.flatnonzero(item_kind == 1)
    small = key_id[mine].astype(np.int16 if len(id_names) < 2**15 else np.int64)
    order = mine[np.argsort(small, kind="stable")]  # radix sort for int16
    lengths = v1[order] - v0[order]
    text = _gather_joined(b, v0[order], lengths, None).tobytes()  # values back to back
    cut = np.cumsum(lengths)  # each value's end in ``text``
    bounds = np.flatnonzero(np.diff(key_id[order])) + 1
    segments = list(zip([0, *bounds.tolist()], [*bounds.tolist(), len(order)]))
    segments = segments if len(order) else []
    segments.sort(key=lambda se: int(order[se[0]]))  # keys in the order first logged
    for a, z in segments:
        name = id_names[int(key_id[order[a]])]
        x = int(cut[a - 1]) if a else 0
        raw = text[x : int(cut[z - 1])]
        value_lengths = lengths[a:z].astype(np.int32)
        if not raw.isascii():  # kept as text, comma-joined, lengths in characters
            ends = (cut[a:z] - x).tolist()
            try:
                values = [raw[p:q].decode("utf-8") for p, q in zip([0, *ends[:-1]], ends)]
            except UnicodeDecodeError:
                raise _Odd from None
            raw = ",".join(values)  # type: ignore[assignment]
            value_lengths = np.array([len(v) for v in values], dtype=np.int32)
        if name not in log.columns:
            log.columns[name] = ([], [])  # the rows and texts are set at the end
            texts[name] = _JsonTexts()
        texts[name].add(raw, value_lengths, row_of[rec[order[a:z]]])
    step_rec = got["step_rec"]
    if len(step_rec):
        by_row = np.argsort(step_rec, kind="stable")
        log.step_num.update(zip(row_of[step_rec[by_row]].tolist(),
                                got["step_num"][by_row].tolist()))
    log.n_rows += int(hist.sum())

    # Summary: keys in the order first logged, each with its last value.
    mine = np.flatnonzero(item_kind == 2)
    if len(mine):
        # protobuf would refuse a whole record over a value that is not UTF-8: check them all
        # (those holding a byte >= 0x80, found by the largest byte of each value).
        a, z = v0[mine], v1[mine]
        for j in np.flatnonzero(_has_high_byte(b, a, z - a)).tolist():
            try:
                bytes(joined[int(a[j]) : int(z[j])]).decode("utf-8")
            except UnicodeDecodeError:
                raise _Odd from None
        ids_in = key_id[mine]
        at = np.arange(len(ids_in))
        first_at = np.full(len(id_names), len(ids_in), dtype=np.int64)
        last_at = np.full(len(id_names), -1, dtype=np.int64)
        np.minimum.at(first_at, ids_in, at)
        np.maximum.at(last_at, ids_in, at)
        summary = log.summary
        for _first, li in sorted(zip(first_at.tolist(), last_at.tolist())):
            if li < 0:
                continue  # a history key only
            j = mine[li]
            summary[id_names[int(key_id[j])]] = bytes(joined[v0[j] : v1[j]]).decode("utf-8")


def _apply_config(config: dict[str, Any], updates: Any, removes: Any) -> None:
    for item in updates:
        path = _item_path(item)
        try:
            value = _loads(item.value_json)
        except ValueError:
            value = item.value_json
        _set_path(config, path, _unwrap(value))
    for item in removes:
        _del_path(config, _item_path(item))


def _read_config_yaml(folder: Path) -> dict[str, Any]:
    path = folder / "files" / "config.yaml"
    if not path.is_file():
        return {}
    try:
        import yaml
    except ImportError:
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, yaml.YAMLError):  # a broken side file must not stop the metrics
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {str(k): _unwrap(v) for k, v in loaded.items()}


def _read_summary_json(folder: Path) -> dict[str, Any]:
    path = folder / "files" / "wandb-summary.json"
    if not path.is_file():
        return {}
    try:
        loaded = _loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    out: dict[str, Any] = {}
    if isinstance(loaded, dict):
        _flatten("", loaded, out)
    return out


def _build_frame(log: _RunLog) -> tuple[Any, dict[str, np.ndarray], np.ndarray, list[str]]:
    """Wide frame (one row per history record), logged-NaN masks, steps, notes."""
    import pandas as pd

    n = log.n_rows
    parsed: dict[str, tuple[list[int], list[Any]]] = {}
    bad_json = 0
    for key, (rows, texts) in log.columns.items():
        r, values, bad = _column(rows, texts)
        bad_json += bad
        if isinstance(values, np.ndarray):  # plain numbers
            if key in parsed:
                parsed[key][0].extend(np.asarray(r).tolist())
                parsed[key][1].extend(values.tolist())
            else:
                parsed[key] = (r, values)  # type: ignore[assignment]
            continue
        # Older writers log a whole dict under one key: flatten it here.
        if dict in set(map(type, values)):  # JSON values: a dict is exactly a dict
            for row, v in zip(r, values):
                flat: dict[str, Any] = {}
                if isinstance(v, dict):
                    _flatten(key, v, flat)
                else:
                    flat[key] = v
                for k, leaf in flat.items():
                    dest = parsed.setdefault(k, ([], []))
                    dest[0].append(row)
                    dest[1].append(leaf)
        elif key in parsed:  # the same key came flattened from a dict as well
            if isinstance(parsed[key][1], np.ndarray):
                parsed[key] = (np.asarray(parsed[key][0]).tolist(), parsed[key][1].tolist())
            parsed[key][0].extend(r)
            parsed[key][1].extend(values)
        else:
            parsed[key] = (r, values)

    check_table_size(str(log.path), n, len(parsed), sum(len(r) for r, _ in parsed.values()))
    media = {k[: -len("/_type")] for k in parsed if k.endswith("/_type")}
    skipped: set[str] = set(media)
    data: dict[str, np.ndarray] = {}
    explicit: dict[str, np.ndarray] = {}
    for key, (rows, values) in parsed.items():
        if key in _INTERNAL or key == "_wandb" or key.startswith("_wandb/"):
            continue
        if key.endswith("/_type") or any(key.startswith(m + "/") for m in media):
            continue
        numeric = _to_numeric(values)
        if numeric is None:
            skipped.add(key)
            continue
        arr, nan_mask, _other = numeric
        col = np.full(n, np.nan, dtype=np.float64)
        idx = np.asarray(rows, dtype=np.int64)
        col[idx] = arr
        data[key] = col
        if nan_mask.any():
            mask = np.zeros(n, dtype=bool)
            mask[idx] = nan_mask
            explicit[key] = mask

    notes: list[str] = []
    if bad_json:
        notes.append(f"{bad_json} history value(s) that are not JSON skipped")
    if skipped:
        names = sorted(skipped)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        notes.append(f"{len(names)} non-scalar key(s) skipped (media, text, lists): {shown}")

    steps = _steps(log, parsed, notes)
    frame = pd.DataFrame(data, index=pd.RangeIndex(n))
    return frame, explicit, steps, notes


def _steps(log: _RunLog, parsed: dict[str, tuple[list[int], list[Any]]],
           notes: list[str]) -> np.ndarray:
    """``_step`` per history record (else the record's step, else ``_runtime`` order)."""
    n = log.n_rows
    steps = np.full(n, np.nan, dtype=np.float64)
    if "_step" in parsed:
        rows, values = parsed["_step"]
        if isinstance(values, np.ndarray):
            steps[np.asarray(rows, dtype=np.int64)] = values
        else:
            for r, v in zip(rows, values):
                if _is_number(v):
                    steps[r] = float(v)
    missing = np.isnan(steps)
    if missing.any() and log.step_num:
        for r, num in log.step_num.items():
            if missing[r]:
                steps[r] = num
        missing = np.isnan(steps)
    if missing.all() and n:
        runtime = np.full(n, np.inf)
        if "_runtime" in parsed:
            rows, values = parsed["_runtime"]
            if isinstance(values, np.ndarray):
                runtime[np.asarray(rows, dtype=np.int64)] = values
            else:
                for r, v in zip(rows, values):
                    if _is_number(v):
                        runtime[r] = float(v)
        steps = np.argsort(np.argsort(runtime, kind="stable"), kind="stable").astype(np.float64)
        notes.append("no _step in the history: steps are records in _runtime order")
    return steps


def _load_log(log: _RunLog, name: str, options: LoadOptions) -> Run:
    folder = log.path.parent
    frame, explicit, steps, notes = _build_frame(log)
    if frame.shape[1] == 0:
        raise FormatError(f"{log.path}: no scalar metrics in the W&B run's history")
    step_column = options.step_column
    if step_column is None and log.step_metric and log.step_metric in frame.columns:
        step_column = log.step_metric
    config = {**_read_config_yaml(folder), **log.config}
    config.pop("_wandb", None)
    config.pop("wandb_version", None)
    summary: dict[str, Any] = {}
    raw_summary: dict[str, Any] = {}
    for key, text in log.summary.items():
        try:
            raw_summary[key] = _loads(text)
        except ValueError:
            continue
    _flatten("", _nest(raw_summary), summary)
    summary = {k: v for k, v in summary.items() if not k.startswith("_wandb")}
    if not summary:
        summary = _read_summary_json(folder)
    return build_run(
        frame, name=name, source=str(folder), format="wandb-offline",
        steps=steps if step_column is None else None, step_column=step_column,
        config=config, column_map=options.column_map, explicit_nan=explicit,
        notes=[*log.notes, *notes], summary=summary,
    )


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    """"/"-joined keys back to nested dicts, so media groups can be recognised and dropped."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        _set_path(out, key.split("/"), value)
    return out


# --- discovery, sniffing, loading -------------------------------------------------------------


def _log_files(path: Path, max_entries: int | None = None) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for p in walk_files(path, _MAX_DEPTH, max_entries):
        if p.name.endswith(".wandb") and has_magic(p, MAGIC):
            yield p


def _sniff(path: Path, head: bytes) -> int:
    try:
        if path.is_dir():
            return 90 if next(_log_files(path, _SNIFF_MAX_ENTRIES), None) is not None else 0
    except OSError:
        return 0
    if head.startswith(MAGIC):
        return 95 if path.name.endswith(".wandb") else 85
    return 0


def _run_names(logs: list[_RunLog]) -> list[str]:
    """The display name where it is set and unique, else the run folder's name."""
    per_folder: dict[Path, int] = {}
    for log in logs:
        per_folder[log.path.parent] = per_folder.get(log.path.parent, 0) + 1
    folder_names = [
        log.path.parent.resolve().name if per_folder[log.path.parent] == 1
        else f"{log.path.parent.resolve().name}/{log.path.stem}"
        for log in logs
    ]
    display = [log.display_name for log in logs]
    return [
        d if d and display.count(d) == 1 and d not in folder_names else f
        for d, f in zip(display, folder_names)
    ]


def _load(path: Path, options: LoadOptions) -> list[Run]:
    files = sorted(_log_files(path))
    if not files:
        raise FormatError(f"{path}: no W&B run files (run-<id>.wandb) found")
    logs: list[_RunLog] = []
    errors: list[FormatError] = []
    for f in files:
        try:
            logs.append(read_wandb_log(f))
        except FormatError as exc:
            if len(files) == 1:
                raise
            errors.append(exc)
    names = _run_names(logs)
    if options.run is not None:
        # --run may name a run by display name, folder name or run id.
        picked = [
            i for i, log in enumerate(logs)
            if options.run in (names[i], log.display_name, log.run_id, log.path.parent.name)
        ]
        if picked:
            logs = [logs[i] for i in picked]
            names = [options.run] * len(picked)
    runs: list[Run] = []
    for log, name in zip(logs, names):
        if log.n_rows == 0:
            if len(logs) == 1:
                raise FormatError(f"{log.path}: the W&B run has no logged history")
            continue
        try:
            runs.append(_load_log(log, name, options))
        except FormatError as exc:
            if len(logs) == 1:
                raise
            errors.append(exc)
    if not runs:
        if errors:
            raise errors[0]
        raise FormatError(f"{path}: no W&B run with logged history")
    return runs


# --- a growing run, read record by record from where the last read stopped (``watch``) ----------


@dataclass(frozen=True)
class WandbTarget:
    """The W&B run being watched, for ``--notify wandb``."""

    entity: str
    project: str
    run_id: str
    offline: bool
    folder: Path


@dataclass(frozen=True)
class _Tail:
    """Where reading a growing ``.wandb`` log resumes: the log (found at the first read), its
    framing, the media keys seen (their fields are not metrics) and the run named so far."""

    file: Path | None = None
    at: LogPosition = field(default_factory=LogPosition)
    identity: FileIdentity = field(default_factory=FileIdentity)
    media: frozenset[str] = frozenset()
    target: tuple[tuple[str, str], ...] = ()  # entity, project, run_id as far as known


def _tail_file(path: Path, state: _Tail, options: LoadOptions) -> Path | None:
    if state.file is not None:
        return state.file
    files = sorted(_log_files(path))
    if options.run is not None:
        want = options.run
        files = [f for f in files if want in (f.parent.name, f.stem, f.stem[4:])
                 or f.parent.name.endswith(f"-{want}")]
    if not files:
        return None
    if len(files) > 1:
        raise SeveralRuns(str(path), [f.parent.name for f in files], "W&B runs",
                          "--run (its folder name or run id)")
    return files[0]


def _read_new(path: Path, state: _Tail | None, options: LoadOptions, final: bool) -> Delta:
    """The history rows appended since ``state``. The log's first records, a run, config or
    step-metric record, a corrupt chunk, an unreadable record or a history row without a step
    are structural."""
    from google.protobuf.message import DecodeError
    from wandb.proto import wandb_internal_pb2 as pb

    state = state or _Tail()
    file = _tail_file(path, state, options)
    if file is None:
        return Delta(Rows(), state)
    new, identity = state.identity.changed(file)
    if not new:
        return Delta(Rows(), replace(state, file=file, identity=identity))
    structural = state.at.offset == 0
    framing = LogFraming(state.at)
    records = list(framing.records(read_from(file, state.at.offset)))
    identity = identity.marked(file, framing.pos)
    structural = structural or bool(framing.corrupt)
    media = set(state.media)
    target = dict(state.target)
    steps: list[float] = []
    rows: list[dict[str, float]] = []
    for raw in records:
        try:
            rec = pb.Record.FromString(raw)  # type: ignore[attr-defined]
        except DecodeError:
            structural = True
            continue
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            step, row = _history_row(rec.history, media)
            if step is None:
                structural = True
                continue
            steps.append(step)
            rows.append(row)
        elif kind == "run":
            run = rec.run
            for key, value in (("entity", run.entity), ("project", run.project),
                               ("run_id", run.run_id)):
                if value:
                    target[key] = value
            structural = True
        elif kind == "config" or (kind == "metric" and rec.metric.glob_name == "*"
                                  and rec.metric.step_metric):
            structural = True
    state = _Tail(file, framing.position, identity, frozenset(media), tuple(target.items()))
    return Delta(rows_from_records(rows, steps=steps), state, structural)


def _history_row(hist: Any, media: set[str]) -> tuple[float | None, dict[str, float]]:
    """One history record as ``read_wandb_log`` and ``_build_frame`` read it: (step, numeric
    cells). ``media`` gains the media keys it holds."""
    items = {("/".join(i.nested_key) if i.nested_key else i.key): i.value_json
             for i in hist.item}
    media.update(k[: -len("/_type")] for k in items if k.endswith("/_type"))
    step: float | None = None
    row: dict[str, float] = {}
    for key, text in items.items():
        try:
            value = _loads(text)
        except ValueError:
            continue
        if key == "_step":
            if _is_number(value):
                step = _float(value)
            continue
        if key in _INTERNAL or key == "_wandb" or key.startswith("_wandb/"):
            continue
        flat: dict[str, Any] = {}
        if isinstance(value, dict):
            _flatten(key, value, flat)
        else:
            flat[key] = value
        for k, v in flat.items():
            if k.endswith("/_type") or any(k.startswith(m + "/") for m in media):
                continue
            if _is_number(v):
                row[k] = _float(v)
    if step is None and hist.HasField("step"):
        step = float(hist.step.num)
    return step, row


def _load_read(path: Path, state: _Tail | None, options: LoadOptions) -> Run | None:
    """The run ``_load`` reads from the records ``state`` has consumed."""
    if state is None or state.file is None or state.at.offset == 0:
        return None
    import tempfile

    with tempfile.TemporaryDirectory(prefix="grpo-doctor-watch-") as tmp:
        copy = snapshot(state.file, state.at.offset, Path(tmp))
        try:
            log = read_wandb_log(copy)
        except FormatError:
            return None
    log.path = state.file
    if log.n_rows == 0:
        return None
    name = options.run or _run_names([log])[0]
    try:
        return _load_log(log, name, options)
    except FormatError:
        return None


def live_target(state: _Tail | None) -> WandbTarget | None:
    """The W&B run an incremental read (``state``) has found, once its run record is read."""
    target = dict(state.target) if state is not None else {}
    if state is None or state.file is None or "run_id" not in target:
        return None
    folder = state.file.parent
    return WandbTarget(target.get("entity", ""), target.get("project", ""), target["run_id"],
                       folder.name.startswith("offline-run"), folder)


IMPORTER = Importer(
    name="wandb-offline",
    sniff=_sniff,
    load=_load,
    reads_folders=True,
    incremental=Incremental(read=_read_new, load=_load_read),
)
