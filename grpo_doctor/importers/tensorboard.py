"""TensorBoard event files (``*tfevents*``): one run per folder that holds event files.

The TFRecord framing is read here, not by tensorboard's loaders: those check CRCs in pure
Python and keep a 10,000-point reservoir per tag (research note ``importers-research.md`` §1).
Each record is ``uint64 length | uint32 masked_crc32c(length) | data | uint32
masked_crc32c(data)``; both CRCs are checked with the ``crc32c`` C package. A record with a
bad CRC is skipped and noted, a truncated last record (a live run) ends the file quietly with a
note, and every scalar event is kept.

Scalars come in three encodings: ``simple_value`` (torch, tensorboardX, TF1), a tensor with
``float_val``/``double_val``/… (``tensorboard.plugins.scalar.summary_v2.scalar_pb``) and a tensor
with raw ``tensor_content`` bytes (TF2). Tensors count only when their tag's plugin is
"scalars", or when no plugin was ever named for the tag and the tensor holds a single number.

Speed: most events of one tag differ from its earlier ones only in wall time, step and
value(s), so records are decoded in bulk with numpy, with no Python step per record:

* Record boundaries: the pattern of record sizes (the tags of a step, in order) repeats. Its
  period is learnt once per file, from sizes followed one by one over a stretch long enough to
  hold it twice, and kept from window to window; the next records are guessed to repeat it and
  the guess is checked against the stored lengths in bulk. Where a guess fails (the step varint
  one byte longer at 128 and 16,384, an evaluation logged between steps) one period is followed
  one by one and guessing resumes; only a pattern that keeps failing soon is learnt again.
* Templates: a record parsed with protobuf becomes a template (its bytes, which bytes vary:
  wall time, step, each value; each value's tag, dtype and place), for one value per event or
  several (``_make_template``). Records are gathered as rows (one gather per record: numpy
  gathers unaligned words one at a time, slowly), keyed by length and tag, and compared with
  their template byte for byte outside the varying bytes, all templates at once; a record that
  equals its template is that event with other numbers, read straight from its row.
* Payload CRCs of those records follow from the template's (CRC-32C is affine): only the
  varying bytes' shares are added, read from the rows' columns and the values' raw bits.
* Anything else (first events, histograms, text, records of no template) is parsed record by
  record. ``_read_simple`` is the plain reader the tests hold all this against.

Memory: a run is read ``_WINDOW`` bytes at a time into compact per-window points, which are
written into the wide grid window by window; the peak stays near 2.5 times the float64 frame
however big the file (a file with damaged records is read whole by the same decoder, after its
framing has checked every CRC, so that its notes are those of the whole file).
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import crc32c
import numpy as np

from grpo_doctor.errors import FormatError
from grpo_doctor.files import check_size, read_bytes, read_error, refuse, walk
from grpo_doctor.files import kind as file_kind
from grpo_doctor.importers import Delta, Importer, Incremental, LoadOptions
from grpo_doctor.importers._common import truncation_note, walk_files
from grpo_doctor.importers.incremental import FileIdentity, SeveralRuns, read_from, snapshot
from grpo_doctor.live_store import Rows
from grpo_doctor.store import Run, build_run, check_table_size

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
_MAX_NOTES = 10  # corrupt-record notes per file before they are summed up
_SNIFF_MAX_DEPTH = 4
_SNIFF_MAX_ENTRIES = 5000

# TensorProto dtype -> struct format of one element in ``tensor_content``.
_CONTENT_FORMATS = {1: "<f", 2: "<d", 3: "<i", 9: "<q", 19: "<e"}
_DT_STRING = 7
_DT_BFLOAT16 = 14


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c(data: bytes | memoryview) -> int:
    """TFRecord's masked CRC-32C of ``data``."""
    return _mask(crc32c.crc32c(data))


def _header_is_valid(data: bytes | memoryview, offset: int = 0) -> bool:
    """Whether ``data[offset:offset + 12]`` is a TFRecord length with its masked CRC."""
    if len(data) < offset + 12:
        return False
    (stored,) = _U32.unpack_from(data, offset + 8)
    return masked_crc32c(data[offset : offset + 8]) == stored


# --- vectorised CRC-32C (for the 8-byte length headers) ---------------------------------------


def _crc_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0x82F63B78), table >> 1)
    return table.astype(np.uint32)


_CRC_TABLE = _crc_table()


def _headers_valid(u8: np.ndarray, u32: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """For each record start in ``pos``: does the masked CRC of its length bytes match?"""
    crc = np.full(len(pos), 0xFFFFFFFF, dtype=np.uint32)
    for j in range(8):
        crc = _CRC_TABLE[(crc ^ u8[pos + j]) & 0xFF] ^ (crc >> 8)
    crc ^= np.uint32(0xFFFFFFFF)
    masked = ((crc >> 15) | (crc << 17)) + np.uint32(_MASK_DELTA)
    return masked == u32[pos + 8]


def _strided(buf: bytes | bytearray, dtype: str) -> np.ndarray:
    """A view of ``buf`` holding one (unaligned) element at every byte offset."""
    dt = np.dtype(dtype)
    count = max(len(buf) - dt.itemsize + 1, 0)
    return np.ndarray((count,), dtype=dt, buffer=buf, offset=0, strides=(1,))


# --- framing ----------------------------------------------------------------------------------


@dataclass
class _Framing:
    starts: np.ndarray  # payload start of each good record (int64)
    lengths: np.ndarray  # payload length (int64)
    offsets: np.ndarray  # record start, for notes (int64)
    notes: list[str] = field(default_factory=list)


class _Buffer:
    """A file's bytes, zero-padded so that gathers a few bytes past a checked position stay in
    bounds, with the numpy views the bulk decoder gathers from."""

    _PAD = 64

    def __init__(self, padded: bytearray | np.ndarray, size: int) -> None:
        self.size = size
        self.padded = padded
        self.data = memoryview(padded)[:size]
        self.u8 = np.frombuffer(padded, dtype=np.uint8)
        self.u32 = _strided(padded, "<u4")
        self.u64 = _strided(padded, "<u8")

    @classmethod
    def read(cls, path: Path, room: int = 0) -> _Buffer:
        """A whole file, with ``room`` spare bytes (then the zero padding) after it. A FIFO or a
        device is refused before it is opened (a FIFO would wait for a writer), and so is a
        file past the whole-file read limit (``files.check_size``)."""
        try:
            if (what := file_kind(os.stat(path).st_mode)) is not None:
                raise refuse(path, what)
            with path.open("rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                check_size(path, size)
                # Not a bytearray: it would be zero-filled first, a second pass over the file.
                padded = np.empty(size + room + cls._PAD, dtype=np.uint8)
                size = fh.readinto(memoryview(padded)[:size])  # a live file may have grown
        except OSError as exc:
            raise read_error(path, exc) from exc
        padded[size : size + cls._PAD] = 0  # the room beyond stays untouched (not resident)
        return cls(padded, size)


def _walk(data: memoryview, pos: int, limit: int | None = None) -> tuple[list[int], int]:
    """Follow the length fields from ``pos`` (no CRC checks); where the chain stopped.

    With ``limit``, at most that many records are followed."""
    n = len(data)
    unpack = _U64.unpack_from
    offsets: list[int] = []
    append = offsets.append
    left = -1 if limit is None else limit
    while pos + 12 <= n and left:
        (length,) = unpack(data, pos)
        end = pos + length + 16
        if end > n:
            break
        append(pos)
        pos = end
        left -= 1
    return offsets, pos


_LEARN_MIN = 64  # records followed one by one before a period of sizes is looked for
_LEARN_MAX = 8192  # the longest stretch of sizes a period is learnt from
_GUESS_MIN = 64
_GUESS_MAX = 1 << 16


def _smallest_period(sizes: np.ndarray) -> int | None:
    """The smallest P <= len/2 such that ``sizes[i] == sizes[i + P]`` for every i."""
    n = len(sizes)
    if n < 2:
        return None
    # P is a candidate when the last sizes recur P records earlier (checked on the last 16).
    cands = np.arange(1, n // 2 + 1)
    for j in range(n - min(16, n - 1), n):
        back = j - cands
        cands = cands[(back < 0) | (sizes[np.maximum(back, 0)] == sizes[j])]
    for p in cands.tolist():
        if np.array_equal(sizes[p:], sizes[:-p]):
            return p
    return None


@dataclass
class _SizeModel:
    """What ``_walk_all`` learnt about a file's record sizes, kept from window to window:
    the period of the pattern of sizes (the tags of a step, in order) and how many records
    it was learnt from."""

    period: int | None = None
    learn: int = _LEARN_MIN


def _walk_all(b: _Buffer, pos: int, model: _SizeModel | None = None) -> tuple[np.ndarray, int]:
    """``_walk(b.data, pos)``, without a Python step for most records.

    Event files repeat a pattern of record sizes (the tags of each step in the same order).
    Its period is learnt once, from sizes followed one by one over a stretch long enough to
    hold it twice, and kept (in ``model``, from window to window). The next records are then
    guessed to repeat the last period of sizes, and the guess is checked in bulk: a record is
    taken only if the length stored at its guessed start is the guessed one, it ends inside
    the buffer, and every record before it was taken. That is the chain ``_walk`` follows,
    record for record. Where a guess fails (a step number one byte longer at 128 and 16,384,
    an evaluation logged between two steps), one period is followed one by one and guessing
    resumes with the same period; only a pattern that keeps failing soon is learnt again,
    from a stretch twice as long.
    """
    model = model if model is not None else _SizeModel()
    n = b.size
    data = b.data
    u64 = b.u64
    parts: list[np.ndarray] = []
    recent: list[int] = []  # sizes of the records taken since the last failed guess
    early = 0  # guesses in a row that failed soon
    misses = 0  # stretches in a row without a period
    while True:
        p = model.period
        follow = max(p, 16) if p is not None else model.learn
        offsets, stop = _walk(data, pos, follow)
        if offsets:
            parts.append(np.asarray(offsets, dtype=np.int64))
            recent.extend(np.diff(np.append(offsets, stop)).tolist())
            del recent[: -2 * _LEARN_MAX]
        pos = stop
        if len(offsets) < follow:
            break  # the chain ended
        if p is None:
            if len(recent) < model.learn:
                continue
            p = _smallest_period(np.asarray(recent[-model.learn :], dtype=np.int64))
            if p is None:
                # Twice in a row (not a one-off break in the stretch): look over a longer one.
                misses += 1
                if misses >= 2:
                    model.learn = min(model.learn * 2, _LEARN_MAX)
                    misses = 0
                continue
            misses = 0
            model.period = p
        pattern = np.asarray(recent[-p:], dtype=np.int64)
        rel = np.concatenate([[0], np.cumsum(pattern)[:-1]])
        span = int(pattern.sum())
        guess = _GUESS_MIN
        taken = 0
        while True:
            blocks = -(-guess // p)
            at = (pos + span * np.arange(blocks, dtype=np.int64)[:, None] + rel).reshape(-1)
            size = np.tile(pattern, blocks)
            ok = (at + size <= n) & (u64[np.minimum(at, n)] == (size - 16).astype(np.uint64))
            miss = np.flatnonzero(~ok)
            k = int(miss[0]) if len(miss) else len(at)
            if k:
                parts.append(at[:k])
                pos = int(at[k - 1] + size[k - 1])
                taken += k
            if k < len(at):
                break
            guess = min(guess * 2, _GUESS_MAX)
        recent = size[max(k - p, 0) : k].tolist() if k else recent[-p:]
        if taken < max(2 * p, 4 * model.learn):
            early += 1
            if early >= 2:  # the pattern keeps breaking: learn it from a longer stretch
                model.period = None
                model.learn = min(model.learn * 2, _LEARN_MAX)
                recent = []
                early = 0
        else:
            early = 0
    offs = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return offs, pos


# --- payload CRCs in bulk -------------------------------------------------------------------

_CRC_BULK_MIN = 32  # records of one length for the bulk CRC
_CRC_BULK_MAX_DIFF = 48  # byte positions where they may differ
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(bool)
_CRC_SHIFT: dict[int, np.ndarray] = {}


def _crc_byte_table(distance: int) -> np.ndarray:
    """How CRC-32C changes when a byte ``distance`` bytes before the end changes by x
    (CRCs are affine: crc(a ^ d) = crc(a) ^ crc(d) ^ crc(0), for messages of one length)."""
    table = _CRC_SHIFT.get(distance)
    if table is None:
        if len(_CRC_SHIFT) > 4096:
            _CRC_SHIFT.clear()
        buf = bytearray(distance + 1)
        zero = crc32c.crc32c(buf)
        bits = np.empty(8, dtype=np.uint32)
        for i in range(8):
            buf[0] = 1 << i
            bits[i] = crc32c.crc32c(buf) ^ zero
        table = np.bitwise_xor.reduce(np.where(_BYTE_BITS, bits, np.uint32(0)), axis=1)
        _CRC_SHIFT[distance] = table
    return table


def _same_length_crcs(b: _Buffer, starts: np.ndarray, length: int) -> np.ndarray | None:
    """CRC-32C of ``length`` bytes at each start, from the first one's CRC and the bytes
    where the others differ from it; None when they differ in too many places."""
    first = int(starts[0])
    ref = bytes(b.data[first : first + length])
    where: list[int] = []
    for k in range(0, length, 8):
        diff = np.bitwise_or.reduce(b.u64[starts + k] ^ b.u64[first + k])
        if length - k < 8:
            diff &= np.uint64((1 << (8 * (length - k))) - 1)
        diff = int(diff)
        while diff:
            j = (diff & -diff).bit_length() - 1
            where.append(k + j // 8)
            diff &= ~(0xFF << (j // 8 * 8))
        if len(where) > _CRC_BULK_MAX_DIFF:
            return None
    crc = np.full(len(starts), crc32c.crc32c(ref), dtype=np.uint32)
    for j in where:
        crc ^= _crc_byte_table(length - 1 - j)[b.u8[starts + j] ^ ref[j]]
    return crc


def _payload_crcs(b: _Buffer, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """CRC-32C of each payload: records of one length in bulk, the rest one C call each."""
    out = np.empty(len(starts), dtype=np.uint32)
    if not len(starts):
        return out
    by_length = np.argsort(lengths, kind="stable")
    sorted_lengths = lengths[by_length]
    bounds = [0, *(np.flatnonzero(np.diff(sorted_lengths)) + 1).tolist(), len(starts)]
    rest: list[np.ndarray] = []
    for a, z in zip(bounds[:-1], bounds[1:]):
        idx = by_length[a:z]
        length = int(sorted_lengths[a])
        got = None
        if z - a >= _CRC_BULK_MIN and 0 < length <= 1 << 16:
            got = _same_length_crcs(b, starts[idx], length)
        if got is None:
            rest.append(idx)
        else:
            out[idx] = got
    if rest:
        idx = np.sort(np.concatenate(rest))
        data = b.data
        crc = crc32c.crc32c
        out[idx] = np.fromiter(
            (crc(data[s : s + ln]) for s, ln in zip(starts[idx].tolist(), lengths[idx].tolist())),
            dtype=np.uint32, count=len(idx),
        )
    return out


def _payloads_valid(b: _Buffer, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    computed = _payload_crcs(b, starts, lengths)
    masked = ((computed >> 15) | (computed << 17)) + np.uint32(_MASK_DELTA)
    return masked == b.u32[starts + lengths]


def _resync(b: _Buffer, pos: int) -> int | None:
    """The first offset at or after ``pos`` holding a valid record header, if any."""
    window = 1 << 20
    last = b.size - 12  # last offset where a header fits
    while pos <= last:
        cand = np.arange(pos, min(last, pos + window) + 1, dtype=np.int64)
        hits = np.flatnonzero(_headers_valid(b.u8, b.u32, cand))
        if len(hits):
            return int(cand[hits[0]])
        pos = int(cand[-1]) + 1
    return None


_LENGTH_LUT_MAX = 1 << 16


_HEADER = np.dtype([("length", "<u8"), ("crc", "<u4")])


def _lengths_valid(b: _Buffer, offs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``_headers_valid`` of record starts, and the lengths they hold: a header's CRC depends
    only on its length, so it is computed once per distinct length (records are mostly of a
    few)."""
    items = np.ndarray((len(b.padded) - 11,), dtype=np.dtype((np.void, 12)), buffer=b.padded,
                       strides=(1,))
    head = items[offs].view(_HEADER)
    lengths, stored = head["length"], head["crc"]
    top = int(lengths.max()) if len(offs) else 0
    if top >= _LENGTH_LUT_MAX:
        return _headers_valid(b.u8, b.u32, offs), lengths.astype(np.int64)
    present = np.zeros(top + 1, dtype=bool)
    present[lengths] = True
    lut = np.zeros(top + 1, dtype=np.uint32)
    for length in np.flatnonzero(present).tolist():
        lut[length] = masked_crc32c(_U64.pack(length))
    return lut[lengths] == stored, lengths.astype(np.int64)


def _frame(b: _Buffer, label: str, model: _SizeModel | None = None,
           payloads: bool = True) -> _Framing:
    """The records of a buffer: headers checked, payload CRCs too unless ``payloads`` is
    False (then the caller checks them: ``_decode(..., verify=True)``)."""
    data = b.data
    n = b.size
    if n == 0:
        raise FormatError(f"{label}: the file is empty")
    if n < 12 or not _header_is_valid(data, 0):
        raise FormatError(f"{label}: not a TensorBoard event file (no valid record at byte 0)")
    good: list[np.ndarray] = []
    good_lengths: list[np.ndarray] = []
    corrupt: list[int] = []
    truncated_at: int | None = None
    pos: int | None = 0
    while pos is not None and pos < n:
        offs, stop = _walk_all(b, pos, model)
        valid, held = _lengths_valid(b, offs)
        bad = np.flatnonzero(~valid)
        if len(bad):
            # A length whose CRC fails cannot be trusted: find the next valid header.
            good.append(offs[: bad[0]])
            good_lengths.append(held[: bad[0]])
            corrupt.append(int(offs[bad[0]]))
            pos = _resync(b, int(offs[bad[0]]) + 1)
            continue
        good.append(offs)
        good_lengths.append(held)
        if stop >= n:
            break
        if n - stop < 12 or _header_is_valid(data, stop):
            truncated_at = stop
            break
        corrupt.append(stop)
        pos = _resync(b, stop + 1)

    offs = np.concatenate(good)
    lengths = np.concatenate(good_lengths)
    starts = offs + 12
    ok = _payloads_valid(b, starts, lengths) if payloads else np.ones(len(offs), dtype=bool)
    if not ok.all():
        corrupt.extend(offs[~ok].tolist())
        starts, lengths, offs = starts[ok], lengths[ok], offs[ok]
    corrupt.sort()
    notes = [f"corrupt record at byte {where} skipped" for where in corrupt[:_MAX_NOTES]]
    if len(corrupt) > _MAX_NOTES:
        notes.append(f"{len(corrupt) - _MAX_NOTES} more corrupt records skipped")
    if truncated_at is not None:
        notes.append(truncation_note(truncated_at))
    return _Framing(starts=starts, lengths=lengths, offsets=offs, notes=notes)


# --- decoding ---------------------------------------------------------------------------------


def _varint(u8: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode a protobuf varint at each position: (value as int64, byte length; 0 if bad)."""
    byte = u8[pos]
    more = byte >= 0x80
    if not more.any():  # all one byte long (lengths, steps below 128): the common case
        return byte.astype(np.int64), np.ones(len(pos), dtype=np.int64)
    value = (byte & 0x7F).astype(np.uint64)
    length = np.where(more, 0, 1)
    idx = np.flatnonzero(more)
    for i in range(1, 10):
        byte = u8[pos[idx] + i]
        value[idx] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * i)
        end = byte < 0x80
        length[idx[end]] = i + 1
        idx = idx[~end]
        if not len(idx):
            break
    return value.view(np.int64), length


_HASH_KEYS = np.random.default_rng(20240229).integers(
    1, 2**63, size=33, dtype=np.int64
).astype(np.uint64) | np.uint64(1)
# WORD_MASKS[i] keeps the low i bytes (0 to 8) of a little-endian uint64.
_WORD_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(9)], dtype=np.uint64)


def _same_value(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)


def _tensor_scalar(t: Any) -> float | None:
    """The single number in a TensorProto, or None when it is not one number."""
    count = 1
    for dim in t.tensor_shape.dim:
        count *= dim.size
    if count != 1 or t.dtype == _DT_STRING:
        return None
    if t.tensor_content:
        fmt = _CONTENT_FORMATS.get(t.dtype)
        if fmt is None or len(t.tensor_content) != struct.calcsize(fmt):
            return None
        return float(struct.unpack(fmt, t.tensor_content)[0])
    for name in ("float_val", "double_val", "int_val", "int64_val", "bool_val",
                 "uint32_val", "uint64_val"):
        vals = getattr(t, name)
        if len(vals) == 1:
            return float(vals[0])
    if len(t.half_val) == 1:
        bits = int(t.half_val[0]) & 0xFFFF
        if t.dtype == _DT_BFLOAT16:
            return float(struct.unpack("<f", struct.pack("<I", bits << 16))[0])
        return float(np.array([bits], dtype=np.uint16).view(np.float16)[0])
    return None


def _find_slot(rbytes: bytes, tag_end: int, keys: tuple[bytes, ...], fmt: str,
               value: float) -> int | None:
    """The one offset in ``rbytes`` (after the tag) where ``value`` is stored after a key."""
    size = struct.calcsize(fmt)
    found: list[int] = []
    for key in keys:
        i = rbytes.find(key, tag_end)
        while i >= 0:
            slot = i + len(key)
            if slot + size <= len(rbytes):
                (x,) = struct.unpack_from(fmt, rbytes, slot)
                if _same_value(float(x), value):
                    found.append(slot)
            i = rbytes.find(key, i + 1)
    return found[0] if len(found) == 1 else None


_SLOT_KEYS: dict[str, tuple[tuple[bytes, ...], str]] = {
    "simple_value": ((b"\x15",), "<f"),
    "float_val": ((b"\x2a\x04", b"\x2d"), "<f"),
    "double_val": ((b"\x32\x08", b"\x31"), "<d"),
}
_DTYPES = ("<f4", "<f8", "<i4", "<i8", "<f2")  # a slot's dtype, by code
_DTYPE_CODE = {"<f": 0, "<d": 1, "<i": 2, "<q": 3, "<e": 4}


@dataclass
class _Points:
    """Scalar points read from one event file; tags are indices into ``tags``."""

    tags: list[str] = field(default_factory=list)
    tag_idx: list[np.ndarray] = field(default_factory=list)
    steps: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    order: list[np.ndarray] = field(default_factory=list)
    tensor: list[np.ndarray] = field(default_factory=list)
    plugins: list[tuple[str, int, str]] = field(default_factory=list)  # (tag, order, plugin)
    texts: list[tuple[str, int, str]] = field(default_factory=list)  # (tag, order, text)
    notes: list[str] = field(default_factory=list)
    _ids: dict[str, int] = field(default_factory=dict)

    def tag_id(self, tag: str) -> int:
        i = self._ids.get(tag)
        if i is None:
            i = self._ids[tag] = len(self.tags)
            self.tags.append(tag)
        return i

    def extend(self, tag_idx: np.ndarray, steps: np.ndarray, values: np.ndarray,
               order: np.ndarray, tensor: np.ndarray) -> None:
        self.tag_idx.append(tag_idx)
        self.steps.append(steps)
        self.values.append(values)
        self.order.append(order)
        self.tensor.append(tensor)


# --- decoding in bulk: templates --------------------------------------------------------------
#
# Most events of a file differ from an earlier event of the same tag only in wall time, step and
# value(s). An event parsed with protobuf becomes a template: its bytes, which of them vary (the
# wall time, the step's varint, each value's bytes) and what each value is (tag, dtype, where).
# Every other record of the same length and tag is compared with its template byte for byte
# outside the varying bytes; a record that equals it is that event with other numbers, so its
# step and values are read straight from the buffer, and its payload CRC follows from the
# template's (CRC-32C is affine: only the varying bytes' contributions are added). Templates
# are kept for the whole file (all its windows) and matched for all of them at once.

_BULK_MIN_GROUP = 4  # records of a key in a window before a template is made for it
_TEMPLATE_MAX_LENGTH = 4096
_TEMPLATES_PER_KEY = 3


@dataclass
class _Template:
    length: int
    head: int  # has wall time * 32 + has step * 16 + the step varint's length
    words: np.ndarray  # uint64: the payload 8 bytes at a time, varying bytes zeroed
    masks: np.ndarray  # uint64: 0xFF on each byte that must equal the template's
    crc0: int  # CRC-32C of the payload with its varying bytes zeroed
    varying: list[int]  # positions of the varying bytes
    slots: list[tuple[int, int, str, bool, int]]  # (offset, dtype code, tag, tensor, k)
    plugins: list[tuple[str, int, str]]  # (tag, k, plugin)


class _Templates:
    """The templates of one event file, and the same stacked into arrays for matching."""

    def __init__(self) -> None:
        self.by_key: dict[int, list[int]] = {}
        self.items: list[_Template] = []
        self._stacked: dict[str, Any] | None = None

    def add(self, key: int, t: _Template | None) -> None:
        ids = self.by_key.setdefault(key, [])
        if t is None:
            ids.append(-1)  # not a scalar layout: records of this key go one by one
            return
        ids.append(len(self.items))
        self.items.append(t)
        self._stacked = None

    def stacked(self) -> dict[str, Any]:
        if self._stacked is None:
            items = self.items
            n_words = np.array([len(t.words) for t in items], dtype=np.int64)
            width = int(n_words.max())
            words = np.zeros((len(items), width), dtype=np.uint64)
            masks = np.zeros((len(items), width), dtype=np.uint64)
            for i, t in enumerate(items):
                words[i, : len(t.words)] = t.words
                masks[i, : len(t.masks)] = t.masks
            n_vary = np.array([len(t.varying) for t in items], dtype=np.int64)
            n_slots = np.array([len(t.slots) for t in items], dtype=np.int64)
            slots = [s for t in items for s in t.slots]
            self._stacked = {
                "width": width, "n_words": n_words,
                # word k of every template, contiguous: matching gathers one column at a time
                "words": np.ascontiguousarray(words.T), "masks": np.ascontiguousarray(masks.T),
                "length": np.array([t.length for t in items], dtype=np.int64),
                "head": np.array([t.head for t in items], dtype=np.int64),
                "crc0": np.array([t.crc0 for t in items], dtype=np.uint32),
                "n_vary": n_vary, "vary_at": np.cumsum(n_vary) - n_vary,
                "vary": np.array([p for t in items for p in t.varying], dtype=np.int64),
                "n_slots": n_slots, "slot_at": np.cumsum(n_slots) - n_slots,
                "slot_offset": np.array([s[0] for s in slots], dtype=np.int64),
                "slot_dtype": np.array([s[1] for s in slots], dtype=np.int8),
                "slot_tag": [s[2] for s in slots],
                "slot_tensor": np.array([s[3] for s in slots], dtype=bool),
                "slot_k": np.array([s[4] for s in slots], dtype=np.int64),
            }
        return self._stacked


def _value_spec(v: Any) -> tuple[tuple[bytes, ...], str, float, bool] | None:
    """(slot keys, struct format, value, is a tensor) of a scalar Summary.Value read in bulk."""
    kind = v.WhichOneof("value")
    if kind == "simple_value":
        keys, fmt = _SLOT_KEYS["simple_value"]
        return keys, fmt, float(v.simple_value), False
    if kind != "tensor":
        return None
    t = v.tensor
    x = _tensor_scalar(t)
    if x is None:
        return None
    if t.tensor_content:
        fmt = _CONTENT_FORMATS[t.dtype]
        return (b"\x22" + bytes([struct.calcsize(fmt)]),), fmt, x, True
    if len(t.float_val) == 1:
        keys, fmt = _SLOT_KEYS["float_val"]
    elif len(t.double_val) == 1:
        keys, fmt = _SLOT_KEYS["double_val"]
    else:
        return None  # varint-encoded values: parsed one by one
    return keys, fmt, x, True


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it); (-1, pos) when it runs past the data or 10 bytes."""
    value = shift = 0
    for i in range(pos, min(pos + 10, len(data))):
        value |= (data[i] & 0x7F) << shift
        shift += 7
        if data[i] < 0x80:
            return value, i + 1
    return -1, pos


def _make_template(payload: bytes, step: int, has_wt: bool, has_step: bool, step_len: int,
                   Event: Any, DecodeError: type[Exception]) -> _Template | None:
    """The template of one record (parsed with protobuf), or None if not a scalar layout."""
    length = len(payload)
    if length > _TEMPLATE_MAX_LENGTH:
        return None
    try:
        event = Event.FromString(payload)
    except DecodeError:
        return None
    if event.WhichOneof("what") != "summary" or event.step != step:
        return None
    values = event.summary.value
    varying = list(range(1, 9)) if has_wt else []
    pos = 9 if has_wt else 0
    if has_step:
        varying.extend(range(pos + 1, pos + 1 + step_len))
        pos += 1 + step_len
    if pos >= length or payload[pos] != 0x2A:
        return None
    size, pos = _read_varint(payload, pos + 1)
    if size < 0 or pos + size != length:
        return None
    ranges = []  # each Summary.Value's bytes
    while pos < length:
        if payload[pos] != 0x0A:
            return None
        size, pos = _read_varint(payload, pos + 1)
        if size < 0 or pos + size > length:
            return None
        ranges.append((pos, pos + size))
        pos += size
    if not values or len(ranges) != len(values):
        return None
    slots: list[tuple[int, int, str, bool, int]] = []
    plugins: list[tuple[str, int, str]] = []
    for k, (v, (a, z)) in enumerate(zip(values, ranges)):
        spec = _value_spec(v)
        if spec is None or payload[a] != 0x0A:
            return None
        tag_len, tag_at = _read_varint(payload, a + 1)
        if tag_len < 0:
            return None
        keys, fmt, x, is_tensor = spec
        slot = _find_slot(payload[:z], tag_at + tag_len, keys, fmt, x)
        if slot is None:
            return None
        k = min(k, 255)
        slots.append((slot, _DTYPE_CODE[fmt], v.tag, is_tensor, k))
        varying.extend(range(slot, slot + struct.calcsize(fmt)))
        if v.HasField("metadata"):
            plugins.append((v.tag, k, v.metadata.plugin_data.plugin_name))
    zeroed = bytearray(payload)
    keep = np.ones(length + (-length % 8), dtype=np.uint8)
    keep[length:] = 0
    for p in varying:
        zeroed[p] = 0
        keep[p] = 0
    zeroed.extend(bytes(-length % 8))
    return _Template(
        length=length, head=has_wt * 32 + has_step * 16 + step_len,
        words=np.frombuffer(bytes(zeroed), dtype="<u8").copy(),
        masks=(keep * np.uint8(0xFF)).view("<u8").copy(),
        crc0=crc32c.crc32c(bytes(zeroed[:length])), varying=varying, slots=slots,
        plugins=plugins,
    )


_CRC_ROWS = np.zeros((0, 256), dtype=np.uint32)


def _crc_rows(count: int) -> np.ndarray:
    """Row d: how CRC-32C changes when a byte d bytes before the end is x instead of 0
    (``_crc_byte_table(d)``), for d < ``count``; grown as needed and kept."""
    global _CRC_ROWS
    have = len(_CRC_ROWS)
    if have < count:
        rows = np.empty((count, 256), dtype=np.uint32)
        rows[:have] = _CRC_ROWS
        row = _CRC_TABLE.copy() if not have else _CRC_ROWS[-1]
        if not have:
            rows[0] = row
            have = 1
        for d in range(have, count):
            row = _CRC_TABLE[row & 0xFF] ^ (row >> 8)  # one more zero byte after it
            rows[d] = row
        _CRC_ROWS = rows
    return _CRC_ROWS


def _rows(b: _Buffer, starts: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes (a multiple of 8) from each start, as aligned rows of uint64 (zeros past
    the buffer). One gather of whole rows: numpy gathers unaligned words one by one, slowly."""
    padded = b.padded
    room = max(len(padded) - width + 1, 0)  # starts below this have a whole row in the buffer
    rows = np.ndarray((room,), dtype=np.dtype((np.void, width)), buffer=padded, strides=(1,))
    if not len(starts) or int(starts.max()) < room:
        return rows[starts].view("<u8").reshape(len(starts), width // 8)
    out = np.zeros((len(starts), width // 8), dtype=np.uint64)
    fit = starts < room
    out[fit] = rows[starts[fit]].view("<u8").reshape(-1, width // 8)
    for i in np.flatnonzero(~fit).tolist():
        tail = bytes(padded[int(starts[i]) : int(starts[i]) + width])
        out[i] = np.frombuffer(tail.ljust(width, b"\0"), dtype="<u8")
    return out


def _byte_at(r8: np.ndarray, at: np.ndarray | int) -> np.ndarray:
    """The byte at column ``at`` of each row (a column view when ``at`` is one number)."""
    if isinstance(at, int):
        return r8[:, min(at, r8.shape[1] - 1)]
    return r8[np.arange(len(r8)), np.minimum(at, r8.shape[1] - 1)]


def _same(x: np.ndarray) -> np.ndarray | int:
    """``x`` as one int when all its values are equal (rows then read columns), else ``x``."""
    return int(x[0]) if len(x) and int(x.min()) == int(x.max()) else x


def _row_varint(r8: np.ndarray, at: np.ndarray | int
                ) -> tuple[np.ndarray, np.ndarray | int]:
    """``_varint`` of each row of ``r8`` at column ``at``: (value, byte length; 0 if bad, a
    varint running past the row included); the length is one int when it is the same in
    every row."""
    last = r8.shape[1] - 1
    byte = _byte_at(r8, at)
    more = byte >= 0x80
    if not more.any():
        return byte.astype(np.int64), 1
    if isinstance(at, int):  # whole columns, no gathers
        value = (byte & 0x7F).astype(np.uint64)
        length = np.where(more, 0, 1)
        for i in range(1, min(10, last - at + 1)):
            byte = r8[:, at + i]
            value |= ((byte & 0x7F).astype(np.uint64) << np.uint64(7 * i)) * more
            length[more & (byte < 0x80)] = i + 1
            more &= byte >= 0x80
            if not more.any():
                break
        return value.view(np.int64), _same(length)
    at = np.broadcast_to(np.asarray(at, dtype=np.int64), (len(r8),))
    value = (byte & 0x7F).astype(np.uint64)
    length = np.where(more, 0, 1)
    idx = np.flatnonzero(more)
    for i in range(1, 10):
        col = at[idx] + i
        inside = col <= last
        idx = idx[inside]
        if not len(idx):
            break
        byte = r8[idx, col[inside]]
        value[idx] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * i)
        end = byte < 0x80
        length[idx[end]] = i + 1
        idx = idx[~end]
        if not len(idx):
            break
    return value.view(np.int64), _same(length)


_ROW_KEYS = np.random.default_rng(20240301).integers(
    1, 2**63, size=40, dtype=np.int64
).astype(np.uint64) | np.uint64(1)


def _row_hash(r: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """A 64-bit hash of the bytes ``[start, start + length)`` of each row (within 320 bytes)."""
    import pandas as pd

    words = min(r.shape[1], len(_ROW_KEYS), -(-int((start + length).max()) // 8))
    # The byte masks depend on (start, length) only: made once per distinct pair.
    pair, pairs = pd.factorize(start * 1024 + length)
    k8 = np.arange(0, 8 * words, 8)
    lo = np.clip((pairs // 1024)[:, None] - k8, 0, 8)
    hi = np.clip((pairs // 1024 + pairs % 1024)[:, None] - k8, 0, 8)
    masks = _WORD_MASKS[hi] & ~_WORD_MASKS[lo]  # distinct pairs x words
    h = np.zeros(len(r), dtype=np.uint64)
    for k in range(words):  # a column at a time: no temporary of rows x words
        if masks[:, k].any():
            h += (r[:, k] & masks[pair, k]) * _ROW_KEYS[k]
    h += length.astype(np.uint64) * _HASH_KEYS[-1]
    h ^= h >> np.uint64(31)
    h *= np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(29)
    return h


def _match(r: np.ndarray, stk: dict[str, Any], tid: np.ndarray) -> np.ndarray:
    """Which rows equal their template ``tid`` outside its varying bytes."""
    width = min(r.shape[1], stk["width"])
    words, masks = stk["words"], stk["masks"]
    differ = np.zeros(len(r), dtype=np.uint64)
    for k in range(width):  # a column at a time: no temporary of rows x words
        differ |= (r[:, k] ^ words[k][tid]) & masks[k][tid]
    return differ == 0


def _template_crcs(r8: np.ndarray, stk: dict[str, Any], tid: np.ndarray, head: np.ndarray,
                   which: np.ndarray, at: np.ndarray,
                   groups: list[tuple[Any, np.ndarray]]) -> np.ndarray:
    """CRC-32C of each row's payload: its template's, plus its varying bytes' share (the wall
    time and step, read from the rows; each value's bytes, from ``groups``: (points, raw
    bits) with ``which`` the row and ``at`` the offset of each point)."""
    table = _crc_rows(int(stk["length"].max())).reshape(-1)
    end = ((stk["length"][tid] - 1) * 256).astype(np.int32)  # last byte's row, flat table
    crc = stk["crc0"][tid]
    heads = np.flatnonzero(np.bincount(head)).tolist()
    for h in heads:
        sel = slice(None) if len(heads) == 1 else np.flatnonzero(head == h)
        varying = list(range(1, 9)) if h & 32 else []
        if h & 16:
            first = 10 if h & 32 else 1
            varying.extend(range(first, first + (h & 15)))
        part = crc[sel]
        for p in varying:
            part ^= table[end[sel] - p * 256 + r8[sel, p]]
        crc[sel] = part
    share = np.zeros(len(which), dtype=np.uint32)
    point_end = end[which] - (at * 256).astype(np.int32)  # first value byte's row, per point
    for sel, raw in groups:
        base = point_end[sel]
        part = np.zeros(len(raw), dtype=np.uint32)
        for i in range(raw.dtype.itemsize):
            part ^= table[base - i * 256 + ((raw >> (8 * i)) & 0xFF).astype(np.int32)]
        share[sel] = part
    if len(which) == len(tid):
        return crc ^ share
    starts = np.flatnonzero(np.diff(which, prepend=-1))
    return crc ^ np.bitwise_xor.reduceat(share, starts)


def _gather(b: _Buffer, at: np.ndarray, dtype: str) -> np.ndarray:
    """One ``dtype`` value at each byte offset ``at`` (gathered as whole items, not words)."""
    dt = np.dtype(dtype)
    items = np.ndarray((len(b.padded) - dt.itemsize + 1,), dtype=np.dtype((np.void, dt.itemsize)),
                       buffer=b.padded, strides=(1,))
    return items[at].view(dt)


class _Damaged(Exception):
    """A payload CRC failed in a window read with ``verify``: read the file whole instead."""


# Records are decoded in bulk by length class, each class in rows of its longest record.
_ROW_CLASSES = (120, 504, _TEMPLATE_MAX_LENGTH)


def _decode(b: _Buffer, fr: _Framing, file_no: int, label: str,
            templates: _Templates | None = None, verify: bool = False) -> _Points:
    """The scalar points of the framed records. With ``verify``, payload CRCs (not checked by
    ``_frame``) are checked here, and a failure raises ``_Damaged``."""
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto.event_pb2 import Event

    templates = templates if templates is not None else _Templates()
    pts = _Points(notes=list(fr.notes))
    s = fr.starts
    lengths = fr.lengths
    n = len(s)
    order = (np.int64(file_no) << np.int64(48)) | (np.arange(n, dtype=np.int64) << np.int64(8))
    slow = np.ones(n, dtype=bool)
    low = 0
    for high in _ROW_CLASSES:
        if not n:
            break
        if low == 0 and int(lengths.max()) <= high:
            idx = np.arange(n)
        else:
            idx = np.flatnonzero((lengths > low) & (lengths <= high))
        low = high
        if len(idx):
            done = _bulk(b, pts, templates, idx, s, lengths, order, Event, DecodeError, verify)
            slow[done] = False
        if len(idx) == n:
            break
    idx = np.flatnonzero(slow)
    if len(idx):
        if verify and not _payloads_valid(b, s[idx], lengths[idx]).all():
            raise _Damaged
        _one_by_one(b, pts, idx, s, s + lengths, fr.offsets, order, Event, DecodeError, label)
    return pts


def _layout(r8: np.ndarray, length: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The layout [wall_time] [step] summary{value{tag ...} ...} in each row: (whether it is
    one, step, head = has wall time * 32 + has step * 16 + step varint length, tag start,
    tag length). Positions that are the same in every row are kept as ints, so that bytes
    are read as columns."""
    has_wt = r8[:, 0] == 0x09
    p: np.ndarray | int = _same(np.where(has_wt, 9, 0))
    has_step = _byte_at(r8, p) == 0x10
    step, step_len = _row_varint(r8, p + 1)
    step = np.where(has_step, step, 0)
    step_len = np.where(has_step, step_len, 0)
    head = has_wt * 32 + has_step * 16 + step_len
    ok = ~has_step | (step_len > 0)
    p = _same(np.where(has_step, p + 1 + step_len, p))
    del has_wt, has_step, step_len
    ok &= _byte_at(r8, p) == 0x2A
    size, n = _row_varint(r8, p + 1)
    p = p + 1 + n
    ok &= (n > 0) & (size >= 0) & (p + size == length)
    ok &= _byte_at(r8, p) == 0x0A
    size, n = _row_varint(r8, p + 1)
    p = p + 1 + n
    value_end = p + size
    ok &= (n > 0) & (size >= 0) & (value_end <= length)
    ok &= _byte_at(r8, p) == 0x0A
    tag_len, n = _row_varint(r8, p + 1)
    p = p + 1 + n
    ok &= (n > 0) & (tag_len >= 0) & (tag_len <= 256) & (p + tag_len < value_end)
    ok &= p + tag_len <= 8 * len(_ROW_KEYS)
    return ok, step, head, np.broadcast_to(np.asarray(p, dtype=np.int64), (len(r8),)), tag_len


def _bulk(b: _Buffer, pts: _Points, templates: _Templates, idx: np.ndarray, s: np.ndarray,
          lengths: np.ndarray, order: np.ndarray, Event: Any, DecodeError: type[Exception],
          verify: bool) -> np.ndarray:
    """Decode the records ``idx`` that match a template; returns those decoded."""
    import pandas as pd

    length = lengths[idx]
    width = (int(length.max()) + 4 + 7) // 8 * 8  # the payload and its CRC
    r = _rows(b, s[idx], width)
    r8 = r.view(np.uint8)
    ok, step, head, t0, tag_len = _layout(r.view(np.uint8), length)
    cand = np.flatnonzero(ok)
    del ok
    if not len(cand):
        return cand
    if len(cand) < len(idx):
        r = r[cand]
        length, step, head, t0, tag_len = (x[cand] for x in (length, step, head, t0, tag_len))
    key = _row_hash(r, t0, tag_len)
    key ^= length.astype(np.uint64) * _HASH_KEYS[0]
    key ^= (t0 * 64 + head).astype(np.uint64) * _HASH_KEYS[1]
    del t0, tag_len
    codes, uniq = pd.factorize(key)  # ids in the order first seen
    counts = np.bincount(codes, minlength=len(uniq))
    tid = np.full(len(cand), -1, dtype=np.int64)
    # Round j matches each key's records left so far against the key's j-th template, made
    # from the first of them when there is none yet.
    left = np.ones(len(cand), dtype=bool)
    for j in range(_TEMPLATES_PER_KEY):
        if j:
            counts = np.bincount(codes[left], minlength=len(uniq))
        firsts = _first_of_each(codes, left, len(uniq))
        want = np.full(len(uniq), -1, dtype=np.int64)
        for u, k in enumerate(uniq.tolist()):
            ids = templates.by_key.get(k, [])
            if len(ids) == j and counts[u] >= _BULK_MIN_GROUP:
                i = int(idx[cand[firsts[u]]])
                h = int(head[firsts[u]])
                payload = bytes(b.data[int(s[i]) : int(s[i] + lengths[i])])
                templates.add(k, _make_template(payload, int(step[firsts[u]]), bool(h & 32),
                                                bool(h & 16), h & 15, Event, DecodeError))
                ids = templates.by_key[k]
            if len(ids) > j:
                want[u] = ids[j]
        try_now = left & (want[codes] >= 0)
        if not try_now.any():
            break
        stk = templates.stacked()
        if try_now.all():
            t = want[codes]
            hit = (stk["length"][t] == length) & (stk["head"][t] == head) & _match(r, stk, t)
            at = np.arange(len(cand))
        else:
            at = np.flatnonzero(try_now)
            t = want[codes[at]]
            hit = (stk["length"][t] == length[at]) & (stk["head"][t] == head[at])
            hit &= _match(r[at], stk, t)
        tid[at[hit]] = t[hit]
        left[at[hit]] = False
        if not left.any():
            break
    m = np.flatnonzero(~left)
    if not len(m):
        return m
    r8 = r.view(np.uint8)
    rows = np.arange(len(m))
    if len(m) < len(cand):
        r8, length, step, head = r8[m], length[m], step[m], head[m]
    t = tid[m]
    rec = idx[cand[m]]
    stk = templates.stacked()
    # One point per slot of each record, in record order.
    n_slots = stk["n_slots"][t]
    if bool((n_slots == 1).all()):
        flat = stk["slot_at"][t]
        which = rows
    else:
        total = int(n_slots.sum())
        which = np.repeat(rows, n_slots)
        rank = np.arange(total) - np.repeat(np.cumsum(n_slots) - n_slots, n_slots)
        flat = stk["slot_at"][t][which] + rank
    at = stk["slot_offset"][flat]
    dtypes = stk["slot_dtype"][flat]
    values = np.empty(len(flat), dtype=np.float64)
    groups = []  # (points, their raw bits) per dtype
    codes_present = np.flatnonzero(np.bincount(dtypes, minlength=len(_DTYPES))).tolist()
    for code in codes_present:
        dt = np.dtype(_DTYPES[code])
        sel = slice(None) if len(codes_present) == 1 else np.flatnonzero(dtypes == code)
        raw = _gather(b, s[rec[which[sel]]] + at[sel], f"<u{dt.itemsize}")
        values[sel] = raw.view(dt)
        groups.append((sel, raw))
    if verify:
        crc = _template_crcs(r8, stk, t, head, which, at, groups)
        masked = ((crc >> 15) | (crc << 17)) + np.uint32(_MASK_DELTA)
        stored = _gather(b, s[rec] + length, "<u4")
        if not (masked == stored).all():
            raise _Damaged
    slot_ids = np.array([pts.tag_id(tag) for tag in stk["slot_tag"]], dtype=np.int64)
    pts.extend(slot_ids[flat], step[which], values, order[rec[which]] + stk["slot_k"][flat],
               stk["slot_tensor"][flat])
    # The plugin named by a template's first record in this window.
    with_plugins = [i for i, tpl in enumerate(templates.items) if tpl.plugins]
    if with_plugins:
        first_rec = np.full(len(templates.items), len(s), dtype=np.int64)
        np.minimum.at(first_rec, t, rec)
        for i in with_plugins:
            r0 = int(first_rec[i])
            if r0 < len(s):
                for tag, k, plugin in templates.items[i].plugins:
                    pts.plugins.append((tag, int(order[r0]) + k, plugin))
    return rec


def _first_of_each(codes: np.ndarray, keep: np.ndarray, n_codes: int) -> np.ndarray:
    """The first index with ``keep`` of each code (len(codes) where there is none)."""
    first = np.full(n_codes, len(codes), dtype=np.int64)
    idx = np.flatnonzero(keep)
    np.minimum.at(first, codes[idx], idx)
    return first


def _one_by_one(b: _Buffer, pts: _Points, idx: np.ndarray, s: np.ndarray, e: np.ndarray,
                offsets: np.ndarray, order: np.ndarray, Event: Any,
                DecodeError: type[Exception], label: str) -> None:
    data = b.data
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    orders: list[int] = []
    tensor: list[bool] = []
    bad: list[int] = []
    for i in idx.tolist():
        try:
            event = Event.FromString(data[int(s[i]) : int(e[i])])
        except DecodeError:
            bad.append(int(offsets[i]))
            continue
        if event.WhichOneof("what") != "summary":
            continue
        base = int(order[i])
        for k, v in enumerate(event.summary.value):
            o = base + min(k, 255)
            if v.HasField("metadata"):
                pts.plugins.append((v.tag, o, v.metadata.plugin_data.plugin_name))
            kind = v.WhichOneof("value")
            if kind == "simple_value":
                x: float | None = float(v.simple_value)
                is_tensor = False
            elif kind == "tensor":
                x = _tensor_scalar(v.tensor)
                is_tensor = True
                if x is None and v.tensor.dtype == _DT_STRING and v.tensor.string_val:
                    text = v.tensor.string_val[0].decode("utf-8", errors="replace")
                    pts.texts.append((v.tag, o, text))
            else:
                continue  # histograms, images, audio
            if x is None:
                continue
            tags.append(v.tag)
            steps.append(event.step)
            values.append(x)
            orders.append(o)
            tensor.append(is_tensor)
    if bad:
        for where in bad[:_MAX_NOTES]:
            pts.notes.append(f"unreadable record at byte {where} skipped")
        if len(bad) > _MAX_NOTES:
            pts.notes.append(f"{len(bad) - _MAX_NOTES} more unreadable records skipped")
    if tags:
        ids = np.fromiter((pts.tag_id(t) for t in tags), dtype=np.int64, count=len(tags))
        pts.tag_idx.append(ids)
        pts.steps.append(np.asarray(steps, dtype=np.int64))
        pts.values.append(np.asarray(values, dtype=np.float64))
        pts.order.append(np.asarray(orders, dtype=np.int64))
        pts.tensor.append(np.asarray(tensor, dtype=bool))


def read_event_file(path: Path, file_no: int = 0) -> _Points:
    """Every scalar point in one event file (before the per-tag plugin filter)."""
    b = _Buffer.read(path)
    framing = _frame(b, str(path))
    return _decode(b, framing, file_no, str(path))


# --- a run's points, read a window at a time --------------------------------------------------

#: Bytes of an event file framed and decoded at a time: memory stays near the frame's size.
_WINDOW = 1 << 20


@dataclass
class _Chunk:
    """Points of one stretch of a run's event files, in file order, in compact dtypes:
    ``code`` is tag id * 2 + (1 if the value was a tensor)."""

    code: np.ndarray
    step: np.ndarray
    value: np.ndarray


@dataclass
class _FilePoints:
    chunks: list[_Chunk] = field(default_factory=list)
    plugins: list[tuple[str, int, str]] = field(default_factory=list)
    texts: list[tuple[str, int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _compact(pts: _Points, tag_ids: dict[str, int]) -> _Chunk | None:
    """``pts`` as one chunk in file order (``order``), with run-wide tag ids."""
    if not pts.tag_idx:
        return None
    ids = np.array([tag_ids.setdefault(t, len(tag_ids)) for t in pts.tags], dtype=np.int64)
    parts = len(pts.tag_idx)
    tag = ids[pts.tag_idx[0]] if parts == 1 else ids[np.concatenate(pts.tag_idx)]
    order = pts.order[0] if parts == 1 else np.concatenate(pts.order)
    # Bulk groups are runs in file order: the stable sort (timsort) merges them cheaply.
    by_order = np.argsort(order, kind="stable")
    tensor = pts.tensor[0] if parts == 1 else np.concatenate(pts.tensor)
    code = tag[by_order] * 2 + tensor[by_order]
    step = (pts.steps[0] if parts == 1 else np.concatenate(pts.steps))[by_order]
    value = (pts.values[0] if parts == 1 else np.concatenate(pts.values))[by_order]
    code = code.astype(np.int16 if len(tag_ids) < 2**14 else np.int32)
    if len(step) and step.min() >= -(2**31) and step.max() < 2**31:
        step = step.astype(np.int32)
    small = value.astype(np.float32)
    if np.array_equal(small, value, equal_nan=True):  # float32 values: kept exactly
        value = small
    return _Chunk(code, step, value)


def _shift_orders(pts: _Points, base: int) -> None:
    """Window-relative record numbers in ``pts`` to file-relative ones."""
    if not base:
        return
    shift = base << 8
    pts.order = [o + shift for o in pts.order]
    pts.plugins = [(t, o + shift, p) for t, o, p in pts.plugins]
    pts.texts = [(t, o + shift, x) for t, o, x in pts.texts]


def _read_points(path: Path, file_no: int, tag_ids: dict[str, int]) -> _FilePoints:
    """Every scalar point in one event file, as chunks.

    The file is read ``_WINDOW`` bytes at a time, each window ending at a record boundary,
    so that memory is bounded by the points, not the file. Notes and order are those of
    ``read_event_file``: should a window hold anything but clean records (corruption, an
    unreadable record), the whole file is read again at once by ``read_event_file``.
    """
    label = str(path)
    out = _FilePoints()
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            pos = 0  # file offset of the window
            rec_base = 0  # records before the window
            want = _WINDOW
            model = _SizeModel()  # learnt in the first window, checked in the others
            templates = _Templates()
            while True:
                n = min(want, size - pos)
                padded = bytearray(n + _Buffer._PAD)
                fh.seek(pos)
                got = fh.readinto(memoryview(padded)[:n])
                b = _Buffer(padded, got)
                at_end = pos + got >= size or got < n
                try:
                    fr = _frame(b, label, model, payloads=False)
                except FormatError:
                    if pos == 0:
                        raise
                    return _read_whole(path, file_no, tag_ids)
                count = len(fr.offsets)
                stop = int(fr.offsets[-1] + fr.lengths[-1] + 16) if count else 0
                if fr.notes:
                    if len(fr.notes) > 1 or not fr.notes[0].startswith("truncated final"):
                        return _read_whole(path, file_no, tag_ids)
                    if at_end:
                        fr.notes = [truncation_note(pos + stop)]
                    else:
                        fr.notes = []
                        if not count:  # one record longer than the window: widen it
                            (length,) = _U64.unpack_from(b.data, 0)
                            want = max(want, int(length) + 16)
                            continue
                try:
                    pts = _decode(b, fr, file_no, label, templates, verify=True)
                except _Damaged:
                    return _read_whole(path, file_no, tag_ids)
                if len(pts.notes) > len(fr.notes):
                    return _read_whole(path, file_no, tag_ids)
                _shift_orders(pts, rec_base)
                chunk = _compact(pts, tag_ids)
                if chunk is not None:
                    out.chunks.append(chunk)
                out.plugins.extend(pts.plugins)
                out.texts.extend(pts.texts)
                out.notes.extend(pts.notes)
                if at_end or not count:
                    return out
                pos += stop
                rec_base += count
                want = _WINDOW
    except OSError as exc:
        raise read_error(path, exc) from exc


def _read_whole(path: Path, file_no: int, tag_ids: dict[str, int]) -> _FilePoints:
    pts = read_event_file(path, file_no)
    chunk = _compact(pts, tag_ids)
    return _FilePoints([chunk] if chunk is not None else [], pts.plugins, pts.texts, pts.notes)


def _read_simple(path: Path, file_no: int, tag_ids: dict[str, int]) -> _FilePoints:
    """The reference reader the fast one is tested against: the whole file at once, records
    followed one at a time, both CRCs checked per record, every record parsed by protobuf.
    Slow, and meant to stay obviously right: it shares only ``_one_by_one`` and the run
    assembly with the fast path."""
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto.event_pb2 import Event

    data = read_bytes(path)
    label = str(path)
    n = len(data)
    if n == 0:
        raise FormatError(f"{label}: the file is empty")
    if n < 12 or not _header_is_valid(data, 0):
        raise FormatError(f"{label}: not a TensorBoard event file (no valid record at byte 0)")
    good: list[int] = []
    lengths: list[int] = []
    corrupt: list[int] = []
    truncated_at: int | None = None
    pos: int | None = 0
    while pos is not None and pos < n:
        if n - pos < 12:
            truncated_at = pos
            break
        if not _header_is_valid(data, pos):
            corrupt.append(pos)  # a length that cannot be trusted: the next valid header
            pos = next((q for q in range(pos + 1, n - 11) if _header_is_valid(data, q)), None)
            continue
        (length,) = _U64.unpack_from(data, pos)
        if pos + 16 + length > n:
            truncated_at = pos
            break
        (stored,) = _U32.unpack_from(data, pos + 12 + length)
        if masked_crc32c(data[pos + 12 : pos + 12 + length]) == stored:
            good.append(pos)
            lengths.append(length)
        else:
            corrupt.append(pos)
        pos += 16 + length
    corrupt.sort()
    notes = [f"corrupt record at byte {where} skipped" for where in corrupt[:_MAX_NOTES]]
    if len(corrupt) > _MAX_NOTES:
        notes.append(f"{len(corrupt) - _MAX_NOTES} more corrupt records skipped")
    if truncated_at is not None:
        notes.append(truncation_note(truncated_at))
    b = _Buffer(bytearray(data) + bytes(_Buffer._PAD), n)
    offsets = np.asarray(good, dtype=np.int64)
    s = offsets + 12
    e = s + np.asarray(lengths, dtype=np.int64)
    order = (np.int64(file_no) << np.int64(48)) | (np.arange(len(s), dtype=np.int64) << 8)
    pts = _Points(notes=notes)
    _one_by_one(b, pts, np.arange(len(s)), s, e, offsets, order, Event, DecodeError, label)
    chunk = _compact(pts, tag_ids)
    return _FilePoints([chunk] if chunk is not None else [], pts.plugins, pts.texts, pts.notes)


_malloc_trim: Any = None


def _return_freed_memory() -> None:
    """Give the heap memory freed so far back to the OS (glibc only; elsewhere nothing).

    Reading a big file leaves megabytes of freed temporaries in the heap, which glibc keeps,
    while the grid and the frame are then mapped afresh: without this the resident set would
    hold both.
    """
    global _malloc_trim
    if _malloc_trim is None:
        _malloc_trim = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
            except (OSError, AttributeError):
                pass
    if _malloc_trim:
        _malloc_trim(0)


def _kept(chunk: _Chunk, refused: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A chunk's (tag, step, value) without the tensors of refused tags."""
    code = chunk.code
    if refused is None:
        return code >> 1, chunk.step, chunk.value
    tag = code >> 1
    keep = ~(((code & 1) == 1) & refused[tag])
    return tag[keep], chunk.step[keep], chunk.value[keep]


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` by sorting (numpy 2.4's hashing unique takes ~0.5 s per 1M ints)."""
    s = np.sort(values)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if len(s) else s


def _grid(chunks: list[_Chunk], refused: np.ndarray | None, n_tags: int, source: str = ""
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int] | None:
    """Wide grid (steps x used tags) of the chunks, the last point logged winning each cell.

    Returns (steps, used tag ids in first-logged order, grid, logged-NaN mask, points
    replaced), or None when no point is kept. Chunks are in file order, so writing them in
    turn leaves the last point logged in each cell; each is dropped from ``chunks`` once
    written, so that the points and the grid are not held in full at once.
    """
    first_seen = np.full(n_tags, np.iinfo(np.int64).max, dtype=np.int64)
    step_sets = []
    total = 0
    for chunk in chunks:
        tag, step, _value = _kept(chunk, refused)
        if len(tag):
            np.minimum.at(first_seen, tag, np.arange(total, total + len(tag)))
            step_sets.append(_distinct(step))
            total += len(tag)
    if not total:
        return None
    steps = _distinct(np.concatenate(step_sets)).astype(np.int64)
    used = np.flatnonzero(first_seen < np.iinfo(np.int64).max)
    used = used[np.argsort(first_seen[used], kind="stable")]
    column = np.full(n_tags, -1, dtype=np.int64)
    column[used] = np.arange(len(used))
    check_table_size(source, len(steps), len(used), total)
    grid = np.full((len(steps), len(used)), np.nan, dtype=np.float64)
    written = np.zeros(grid.shape, dtype=bool)
    cells = grid.reshape(-1)
    marks = written.reshape(-1)
    n_written = 0
    for i, chunk in enumerate(chunks):
        chunks[i] = None  # type: ignore[call-overload]
        tag, step, value = _kept(chunk, refused)
        if not len(tag):
            continue
        cell = np.searchsorted(steps, step) * len(used) + column[tag]
        marks[cell] = True
        now = int(np.count_nonzero(marks))
        if now - n_written < len(cell):
            # A cell written twice (here or before): keep this chunk's last point per cell.
            _, last = np.unique(cell[::-1], return_index=True)
            last = len(cell) - 1 - last
            cell, value = cell[last], value[last]
        cells[cell] = value
        n_written = now
    explicit = written & np.isnan(grid)
    return steps, used, grid, explicit, total - n_written


# --- one run from its event files -------------------------------------------------------------


def _text_config(texts: list[tuple[str, int, str]]) -> dict[str, Any]:
    """Hugging Face writes TrainingArguments (and the model config) as JSON text summaries."""
    config: dict[str, Any] = {}
    for tag, _order, text in sorted(texts, key=lambda t: t[1]):
        if not tag.endswith("text_summary"):
            continue
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if not isinstance(parsed, dict):
            continue
        name = tag[: -len("/text_summary")] if tag.endswith("/text_summary") else tag
        if name in ("args", "hparams", "config"):
            config.update(parsed)
        else:
            config[name] = parsed
    return config


def _event_file_key(path: Path) -> tuple[int, str]:
    m = re.search(r"tfevents\.(\d+)", path.name)
    return (int(m.group(1)) if m else 0, path.name)


def _load_run(name: str, files: list[Path], source: str, options: LoadOptions,
              read: Callable[[Path, int, dict[str, int]], _FilePoints] | None = None
              ) -> Run | None:
    """One run from its event files, oldest first; None when they hold no scalar. ``read``
    reads one file's points (``_read_points``; tests pass ``_read_simple``)."""
    read = read or _read_points
    files = sorted(files, key=_event_file_key)
    notes: list[str] = []
    errors: list[FormatError] = []
    tag_ids: dict[str, int] = {}  # run-wide tag ids
    chunks: list[_Chunk] = []
    plugins: list[tuple[str, int, str]] = []
    texts: list[tuple[str, int, str]] = []
    files_read = files_with_points = 0
    for file_no, path in enumerate(files):
        try:
            got = read(path, file_no, tag_ids)
        except FormatError as exc:
            if len(files) == 1:
                raise
            errors.append(exc)
            notes.append(f"{path.name}: skipped ({str(exc).split(': ', 1)[-1]})")
            continue
        prefix = f"{path.name}: " if len(files) > 1 else ""
        notes.extend(prefix + note for note in got.notes)
        files_read += 1
        if got.chunks:
            files_with_points += 1
            chunks.extend(got.chunks)
        plugins.extend(got.plugins)
        texts.extend(got.texts)
    got = None  # the chunks list alone holds the points: _grid frees them as it goes
    _return_freed_memory()
    if not files_read and errors:
        raise errors[0]
    if not chunks:
        return None

    # A tensor counts only when its tag's plugin (from the first event naming one) is
    # "scalars", or when no plugin was ever named for the tag.
    plugin_of: dict[str, str] = {}
    for t, _o, plugin in sorted(plugins, key=lambda x: x[1]):
        plugin_of.setdefault(t, plugin)
    names = [""] * len(tag_ids)
    for t, i in tag_ids.items():
        names[i] = t
    refused = np.array([plugin_of.get(t, "") not in ("", "scalars") for t in names], dtype=bool)
    pivoted = _grid(chunks, refused if refused.any() else None, len(names), source)
    if pivoted is None:
        return None
    frame_steps, used, grid, explicit, n_replaced = pivoted
    _return_freed_memory()

    import pandas as pd

    columns = [names[i] for i in used]
    frame = pd.DataFrame(grid, columns=columns, copy=False)
    explicit_nan = {columns[j]: explicit[:, j] for j in range(len(used)) if explicit[:, j].any()}
    restarts = max(files_with_points - 1, 0)
    if restarts:
        notes.append(
            f"{files_with_points} event files merged ({restarts} restart(s)); where steps "
            f"overlap the later file's value is kept ({n_replaced} value(s) replaced)"
        )
    return build_run(
        frame, name=name, source=source, format="tensorboard",
        steps=frame_steps if options.step_column is None else None,
        step_column=options.step_column, config=_text_config(texts),
        column_map=options.column_map, explicit_nan=explicit_nan, notes=notes,
        restarts=restarts,
    )


def _pivot(tag: np.ndarray, step: np.ndarray, value: np.ndarray, order: np.ndarray,
           n_tags: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Wide grid (steps x tags), the last point logged winning each cell; logged-NaN mask."""
    steps, row = np.unique(step, return_inverse=True)
    cell = row.astype(np.int64) * n_tags + tag
    n_cells = len(steps) * n_tags
    counts = np.bincount(cell, minlength=n_cells)
    n_replaced = int(len(cell) - np.count_nonzero(counts))
    if n_replaced:
        latest = np.full(n_cells, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(latest, cell, order)
        win = order == latest[cell]
        cell, value = cell[win], value[win]
    grid = np.full(n_cells, np.nan, dtype=np.float64)
    grid[cell] = value
    explicit = np.zeros(n_cells, dtype=bool)
    explicit[cell] = np.isnan(value)
    return steps, grid.reshape(len(steps), n_tags), explicit.reshape(len(steps), n_tags), n_replaced


# --- discovery, sniffing, loading -------------------------------------------------------------


def _is_event_file(name: str) -> bool:
    return "tfevents" in name


def _sniff(path: Path, head: bytes) -> int:
    try:
        if path.is_dir():
            return 90 if any(
                _is_event_file(p.name)
                for p in walk_files(path, _SNIFF_MAX_DEPTH, _SNIFF_MAX_ENTRIES)
            ) else 0
    except OSError:
        return 0
    if _header_is_valid(head):
        return 95 if _is_event_file(path.name) else 80
    # Named like an event file but not one: a low claim, so that a sniffer recognising the
    # content (a CSV named *tfevents*) wins, and otherwise the error says what is wrong.
    return 10 if _is_event_file(path.name) else 0


def _discover(path: Path) -> list[tuple[str, list[Path], str]]:
    """(run name, event files, source) for each folder that directly holds event files."""
    if path.is_file():
        return [(path.resolve().parent.name or path.name, [path], str(path))]
    by_folder: dict[Path, list[Path]] = {}
    # No recursion (a deep tree is no RecursionError); a linked folder is read, each folder once.
    for folder, _dirs, files in walk(path, follow_links=True):
        found = [Path(e.path) for e in files if _is_event_file(e.name)]
        found = [f for f in found if f.is_file()]
        if found:
            by_folder[folder] = found
    out = []
    for folder, files in by_folder.items():
        rel = folder.relative_to(path).as_posix()
        name = path.resolve().name if rel == "." else rel
        out.append((name, files, str(folder)))
    return out


def _load(path: Path, options: LoadOptions,
          read: Callable[[Path, int, dict[str, int]], _FilePoints] | None = None) -> list[Run]:
    found = _discover(path)
    if not found:
        raise FormatError(f"{path}: no TensorBoard event files (*tfevents*) found")
    if options.run is not None and any(name == options.run for name, _, _ in found):
        found = [f for f in found if f[0] == options.run]
    runs = []
    for name, files, source in found:
        run = _load_run(name, files, source, options, read)
        if run is not None:
            runs.append(run)
        elif len(found) == 1:
            what = "file" if len(files) == 1 else "files"
            where = files[0] if len(files) == 1 else source
            raise FormatError(f"{where}: no scalar events in TensorBoard {what}")
    if not runs:
        raise FormatError(f"{path}: no scalar events in any TensorBoard file")
    return runs


# --- a growing run, read record by record from where each file left off (``watch``) -------------


@dataclass(frozen=True)
class _FileTail:
    offset: int = 0  # end of the last complete record consumed
    identity: FileIdentity = field(default_factory=FileIdentity)
    records: int = 0


@dataclass(frozen=True)
class _Tail:
    """Where reading a growing TensorBoard run resumes: the run (found at the first read) and
    each of its event files' tail, and the plugin named for each tag so far."""

    name: str | None = None
    run_source: str = ""
    folder: Path | None = None  # None: the run is one event file
    files: Mapping[Path, _FileTail] = field(default_factory=dict)
    plugin_of: Mapping[str, str] = field(default_factory=dict)


def _tail_files(path: Path, state: _Tail, options: LoadOptions) -> tuple[_Tail, list[Path] | None]:
    """The run's event files now (None: no run yet); the run is found at the first call."""
    if state.name is None:
        found = _discover(path)
        if options.run is not None:
            found = [f for f in found if f[0] == options.run]
        if not found:
            return state, None
        if len(found) > 1:
            raise SeveralRuns(str(path), [f[0] for f in found])
        name, _files, run_source = found[0]
        folder = None if path.is_file() else Path(run_source)
        state = replace(state, name=name, run_source=run_source, folder=folder)
    if state.folder is None:
        return state, [path]
    try:
        files = [p for p in state.folder.iterdir() if _is_event_file(p.name) and p.is_file()]
    except OSError:
        return state, []
    return state, sorted(files, key=_event_file_key)


def _read_new(path: Path, state: _Tail | None, options: LoadOptions, final: bool) -> Delta:
    """The points appended to the run's event files since ``state``, one row per step. A new
    file, a corrupt record, a text summary, or a tag's first plugin is structural."""
    state, files = _tail_files(path, state or _Tail(), options)
    if files is None:
        return Delta(Rows(), state)
    structural = False
    parts: list[Rows] = []
    tails = dict(state.files)
    plugin_of = dict(state.plugin_of)
    for file in files:
        tail = tails.get(file)
        if tail is None:
            tail = _FileTail()
            structural = True
        new, identity = tail.identity.changed(file)
        tail = replace(tail, identity=identity)
        if new:
            rows, odd, tail = _read_tail(file, tail, plugin_of)
            tail = replace(tail, identity=tail.identity.marked(file, tail.offset))
            structural = structural or odd
            if rows is not None:
                parts.append(rows)
        tails[file] = tail
    state = replace(state, files=tails, plugin_of=plugin_of)
    return Delta(Rows.concat(parts), state, structural)


def _read_tail(path: Path, tail: _FileTail, plugin_of: dict[str, str]
               ) -> tuple[Rows | None, bool, _FileTail]:
    """The whole records after ``tail`` in one event file, pivoted to rows (``plugin_of``
    gains the plugins named there); whether anything but clean scalar records was read."""
    data = read_from(path, tail.offset)
    if len(data) < 12:
        return None, False, tail
    buf = _Buffer(bytearray(data) + bytes(_Buffer._PAD), len(data))
    try:
        framing = _frame(buf, str(path))
    except FormatError:
        # No record starts where the last one ended: corruption. Skip to the next header.
        nxt = _resync(buf, 1)
        if nxt is None:
            return None, False, tail
        rows, _odd, tail = _read_tail(path, replace(tail, offset=tail.offset + nxt), plugin_of)
        return rows, True, tail
    if not len(framing.offsets):
        return None, False, tail
    odd = any(not n.startswith("truncated final record") for n in framing.notes)
    points = _decode(buf, framing, 0, str(path))
    odd = odd or bool(points.texts) or len(points.notes) > len(framing.notes)
    tail = replace(tail, offset=tail.offset + int(framing.offsets[-1] + framing.lengths[-1] + 16),
                   records=tail.records + len(framing.offsets))
    for name, _order, plugin in sorted(points.plugins, key=lambda t: t[1]):
        if name not in plugin_of:
            plugin_of[name] = plugin
            odd = True  # a plugin named for the first time may refuse earlier points
    if not points.tag_idx:
        return None, odd, tail
    tag = np.concatenate(points.tag_idx)
    step = np.concatenate(points.steps)
    value = np.concatenate(points.values)
    order = np.concatenate(points.order)
    tensor = np.concatenate(points.tensor)
    refused = np.array([plugin_of.get(t, "") not in ("", "scalars") for t in points.tags],
                       dtype=bool)
    keep = ~(tensor & refused[tag])
    if not keep.any():
        return None, odd, tail
    steps, grid, explicit, _ = _pivot(tag[keep], step[keep], value[keep], order[keep],
                                      len(points.tags))
    present = ~np.isnan(grid) | explicit
    cols = np.flatnonzero(present.any(axis=0))
    rows = Rows({points.tags[j]: grid[:, j] for j in cols},
                {points.tags[j]: explicit[:, j] for j in cols},
                steps.astype(np.float64), 0, len(steps))
    return rows, odd, tail


def _load_read(path: Path, state: _Tail | None, options: LoadOptions) -> Run | None:
    """The run ``_load`` reads from the records ``state`` has consumed of each file."""
    if state is None or state.name is None:
        return None
    files = [(p, t.offset) for p, t in state.files.items() if t.offset > 0]
    if not files:
        return None
    import tempfile

    with tempfile.TemporaryDirectory(prefix="grpo-doctor-watch-") as tmp:
        copies = [snapshot(p, size, Path(tmp)) for p, size in files]
        try:
            return _load_run(state.name, copies, state.run_source, options)
        except FormatError:
            return None


IMPORTER = Importer(
    name="tensorboard",
    sniff=_sniff,
    load=_load,
    reads_folders=True,
    incremental=Incremental(read=_read_new, load=_load_read, policy="update"),
)
