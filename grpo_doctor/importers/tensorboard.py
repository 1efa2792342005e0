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

Speed: most events of one tag differ only in wall time, step and value, so records are decoded
in bulk with numpy. Records of one tag and layout are grouped, one of them is parsed with
protobuf to find where the value sits, and the group's other records are checked byte for byte
against it (outside the value) before their values are read straight from the buffer. Anything
else (first events, multi-value summaries, histograms, text) is parsed record by record.
Record boundaries are found by guessing that the record sizes repeat their last period and
checking the guess in bulk, and payload CRCs of records of one length are computed together
from the bytes where they differ (CRC-32C is affine), so no Python step runs per record.

Memory: a run is read ``_WINDOW`` bytes at a time into compact per-window points, which are
written into the wide grid window by window; the peak stays near three times the float64 frame
however big the file (a file with damaged records is read whole, as before).
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crc32c
import numpy as np

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.importers import Importer, LoadOptions
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

    def __init__(self, padded: bytearray, size: int) -> None:
        self.size = size
        self.padded = padded
        self.data = memoryview(padded)[:size]
        self.u8 = np.frombuffer(padded, dtype=np.uint8)
        self.u32 = _strided(padded, "<u4")
        self.u64 = _strided(padded, "<u8")

    @classmethod
    def read(cls, path: Path) -> _Buffer:
        try:
            with path.open("rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                padded = bytearray(size + cls._PAD)
                size = fh.readinto(memoryview(padded)[:size])  # a live file may have grown
        except OSError as exc:
            raise read_error(path, exc) from exc
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


_PERIOD_MAX = 256  # records in the longest repeating pattern of record sizes looked for
_GUESS_MIN = 64
_GUESS_MAX = 1 << 16


def _period(sizes: list[int]) -> int | None:
    """The shortest P such that the last P sizes repeat the P before them."""
    r = np.asarray(sizes, dtype=np.int64)
    half = min(_PERIOD_MAX, len(r) // 2)
    if not half:
        return None
    back = r[-2 : -2 - half : -1]  # r[-1 - P] for P = 1 .. half
    for p in (np.flatnonzero(back == r[-1]) + 1).tolist():
        if np.array_equal(r[-p:], r[-2 * p : -p]):
            return p
    return None


def _walk_all(b: _Buffer, pos: int) -> tuple[np.ndarray, int]:
    """``_walk(b.data, pos)``, without a Python step for most records.

    Event files repeat a pattern of record sizes (the tags of each step in the same order),
    so after some records followed one by one, the next ones are guessed to repeat the last
    period of sizes, and the guess is checked in bulk: a record is taken only if the length
    stored at its guessed start is the guessed one, it ends inside the buffer, and every
    record before it was taken. That is the chain ``_walk`` follows, record for record;
    where a guess fails, following resumes one by one.
    """
    n = b.size
    data = b.data
    u64 = b.u64
    parts: list[np.ndarray] = []
    recent: list[int] = []  # sizes of the last records taken
    step = 16  # records to follow one by one before the next guess
    guess = _GUESS_MIN
    while True:
        offsets, stop = _walk(data, pos, step)
        if offsets:
            parts.append(np.asarray(offsets, dtype=np.int64))
            recent.extend(np.diff(np.append(offsets, stop)).tolist())
            del recent[: -2 * _PERIOD_MAX]
        pos = stop
        if len(offsets) < step:
            break  # the chain ended
        p = _period(recent)
        if p is None:
            step = min(step * 2, 4096)
            continue
        pattern = np.asarray(recent[-p:], dtype=np.int64)
        rel = np.concatenate([[0], np.cumsum(pattern)[:-1]])
        span = int(pattern.sum())
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
                recent.extend(size[max(k - 2 * _PERIOD_MAX, 0) : k].tolist())
                del recent[: -2 * _PERIOD_MAX]
            if k < len(at):
                # The pattern changed: follow one by one for a while (longer each time a
                # guess fails at once, so that irregular files do not pay for guessing).
                step = 16 if k >= guess // 2 else min(step * 2, 4096)
                guess = _GUESS_MIN
                break
            guess = min(guess * 2, _GUESS_MAX)
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


def _frame(b: _Buffer, label: str) -> _Framing:
    data = b.data
    n = b.size
    if n == 0:
        raise FormatError(f"{label}: the file is empty")
    if n < 12 or not _header_is_valid(data, 0):
        raise FormatError(f"{label}: not a TensorBoard event file (no valid record at byte 0)")
    good: list[np.ndarray] = []
    corrupt: list[int] = []
    truncated_at: int | None = None
    pos: int | None = 0
    while pos is not None and pos < n:
        offs, stop = _walk_all(b, pos)
        bad = np.flatnonzero(~_headers_valid(b.u8, b.u32, offs))
        if len(bad):
            # A length whose CRC fails cannot be trusted: find the next valid header.
            good.append(offs[: bad[0]])
            corrupt.append(int(offs[bad[0]]))
            pos = _resync(b, int(offs[bad[0]]) + 1)
            continue
        good.append(offs)
        if stop >= n:
            break
        if n - stop < 12 or _header_is_valid(data, stop):
            truncated_at = stop
            break
        corrupt.append(stop)
        pos = _resync(b, stop + 1)

    offs = np.concatenate(good)
    lengths = b.u64[offs].astype(np.int64)
    starts = offs + 12
    computed = _payload_crcs(b, starts, lengths)
    masked = ((computed >> 15) | (computed << 17)) + np.uint32(_MASK_DELTA)
    ok = masked == b.u32[starts + lengths]
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
    n = len(pos)
    value = np.zeros(n, dtype=np.uint64)
    length = np.zeros(n, dtype=np.int64)
    idx = np.arange(n)
    for i in range(10):
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


_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


def _byte_mask(valid: np.ndarray) -> np.ndarray:
    """uint64 masks keeping the low ``valid`` bytes (0 to 8) of a little-endian word."""
    valid = np.clip(valid, 0, 8)
    low = (np.uint64(1) << (np.uint64(8) * np.minimum(valid, 7).astype(np.uint64))) - np.uint64(1)
    return np.where(valid >= 8, _ALL_ONES, low)


def _hash_bytes(b: _Buffer, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each byte string ``data[start:start+length]`` (length <= 256)."""
    h = length.astype(np.uint64) * _HASH_KEYS[-1]
    if not len(start):
        return h
    for k in range(-(-int(length.max()) // 8)):
        # Words past a string's end are masked to zero; clip keeps the read in the buffer.
        word = b.u64[np.minimum(start + 8 * k, b.size)]
        h += (word & _byte_mask(length - 8 * k)) * _HASH_KEYS[k]
    h ^= h >> np.uint64(31)
    h *= np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(29)
    return h


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


@dataclass(frozen=True)
class _Slot:
    """Where the value sits in a group's records, relative to the summary field."""

    offset: int
    dtype: str


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
_NUMPY_DTYPE = {"<f": "<f4", "<d": "<f8", "<i": "<i4", "<q": "<i8", "<e": "<f2"}


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

    def add(self, tag: str, steps: np.ndarray, values: np.ndarray, order: np.ndarray,
            tensor: bool) -> None:
        n = len(steps)
        self.tag_idx.append(np.full(n, self.tag_id(tag), dtype=np.int64))
        self.steps.append(np.asarray(steps, dtype=np.int64))
        self.values.append(np.asarray(values, dtype=np.float64))
        self.order.append(np.asarray(order, dtype=np.int64))
        self.tensor.append(np.full(n, tensor, dtype=bool))


def _group_spec(
    event: Any, rbytes: bytes, tag_end: int, step: int
) -> tuple[str, _Slot, str | None] | None:
    """Parse a group's representative: (tag, value slot, plugin) when the bulk path applies."""
    if event.WhichOneof("what") != "summary" or event.step != step:
        return None
    values = event.summary.value
    if len(values) != 1:
        return None
    v = values[0]
    plugin = v.metadata.plugin_data.plugin_name if v.HasField("metadata") else None
    kind = v.WhichOneof("value")
    if kind == "simple_value":
        keys, fmt = _SLOT_KEYS["simple_value"]
        x = float(v.simple_value)
    elif kind == "tensor":
        t = v.tensor
        x_or_none = _tensor_scalar(t)
        if x_or_none is None:
            return None
        x = x_or_none
        if t.tensor_content:
            fmt = _CONTENT_FORMATS[t.dtype]
            keys = (b"\x22" + bytes([struct.calcsize(fmt)]),)
        elif len(t.float_val) == 1:
            keys, fmt = _SLOT_KEYS["float_val"]
        elif len(t.double_val) == 1:
            keys, fmt = _SLOT_KEYS["double_val"]
        else:
            return None  # varint-encoded values: parsed one by one
    else:
        return None
    slot = _find_slot(rbytes, tag_end, keys, fmt, x)
    if slot is None:
        return None
    return v.tag, _Slot(slot, _NUMPY_DTYPE[fmt]), plugin


_BULK_MIN_GROUP = 4


def _decode(b: _Buffer, fr: _Framing, file_no: int, label: str) -> _Points:
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto.event_pb2 import Event

    pts = _Points(notes=list(fr.notes))
    u8 = b.u8
    s = fr.starts
    e = s + fr.lengths
    n = len(s)
    order = (np.int64(file_no) << np.int64(48)) | (np.arange(n, dtype=np.int64) << np.int64(8))
    slow = np.ones(n, dtype=bool)

    if n:
        # Event layout of a one-value summary: [wall_time] [step] summary{value{tag ...}}.
        has_wt = u8[s] == 0x09
        p = s + np.where(has_wt, 9, 0)
        has_step = u8[np.minimum(p, b.size)] == 0x10
        step, vl = _varint(u8, np.minimum(p + 1, b.size))
        step = np.where(has_step, step, 0)
        ok = ~has_step | (vl > 0)
        p = np.where(has_step, p + 1 + vl, p)
        rp = p  # start of the summary field
        pc = np.minimum(p, b.size)
        ok &= u8[pc] == 0x2A
        ls, vl = _varint(u8, pc + 1)
        p2 = p + 1 + vl
        ok &= (vl > 0) & (ls >= 0) & (p2 + ls == e)
        pc = np.minimum(p2, b.size)
        ok &= u8[pc] == 0x0A
        lv, vl = _varint(u8, pc + 1)
        p3 = p2 + 1 + vl
        ok &= (vl > 0) & (lv >= 0) & (p3 + lv == e)
        pc = np.minimum(p3, b.size)
        ok &= u8[pc] == 0x0A
        lt, vl = _varint(u8, pc + 1)
        t0 = p3 + 1 + vl
        ok &= (vl > 0) & (lt >= 0) & (lt <= 256) & (t0 + lt < e)
        cand = np.flatnonzero(ok)
        if len(cand):
            slow = _bulk(b, pts, cand, rp, e, t0, lt, step, order, s, slow, Event, DecodeError)

    idx = np.flatnonzero(slow)
    if len(idx):
        _one_by_one(b, pts, idx, s, e, fr.offsets, order, Event, DecodeError, label)
    return pts


def _bulk(b: _Buffer, pts: _Points, cand: np.ndarray, rp: np.ndarray, e: np.ndarray,
          t0: np.ndarray, lt: np.ndarray, step: np.ndarray, order: np.ndarray, s: np.ndarray,
          slow: np.ndarray, Event: Any, DecodeError: type[Exception]) -> np.ndarray:
    """Decode the candidates group by group; returns the mask of records left for one-by-one."""
    data = b.data
    rlen = (e - rp)[cand]
    hdr = (t0 - rp)[cand]
    key = _hash_bytes(b, t0[cand], lt[cand])
    key ^= rlen.astype(np.uint64) * _HASH_KEYS[0]
    key ^= hdr.astype(np.uint64) * _HASH_KEYS[1]
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    by_group = np.argsort(inverse, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=len(first)))])
    views: dict[str, np.ndarray] = {}
    for g in range(len(first)):
        members = cand[by_group[bounds[g] : bounds[g + 1]]]
        if len(members) < _BULK_MIN_GROUP:
            continue
        r = int(cand[first[g]])
        r0, r1 = int(rp[r]), int(e[r])
        try:
            event = Event.FromString(data[int(s[r]) : r1])
        except DecodeError:
            continue
        spec = _group_spec(event, bytes(data[r0:r1]), int(t0[r]) - r0, int(step[r]))
        if spec is None:
            continue
        tag, slot, plugin = spec
        # Every member must equal the representative outside the value, byte for byte
        # (compared a little-endian word at a time; the value's bytes are masked out).
        keep = np.ones(r1 - r0, dtype=bool)
        keep[slot.offset : slot.offset + np.dtype(slot.dtype).itemsize] = False
        keep = np.concatenate([keep, np.zeros(-len(keep) % 8, dtype=bool)])
        masks = np.packbits(keep.reshape(-1, 8)[:, ::-1], axis=1).reshape(-1)
        starts = rp[members]
        same = np.ones(len(members), dtype=bool)
        for k, mbyte in enumerate(masks.tolist()):
            mask = np.uint64(sum(0xFF << (8 * i) for i in range(8) if mbyte >> i & 1))
            same &= (b.u64[starts + 8 * k] & mask) == (b.u64[r0 + 8 * k] & mask)
        members = members[same]
        view = views.get(slot.dtype)
        if view is None:
            view = views[slot.dtype] = _strided(b.padded, slot.dtype)
        values = view[rp[members] + slot.offset].astype(np.float64)
        is_tensor = event.summary.value[0].WhichOneof("value") == "tensor"
        pts.add(tag, step[members], values, order[members], is_tensor)
        if plugin is not None:
            pts.plugins.append((tag, int(order[members[0]]), plugin))
        slow[members] = False
    return slow


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


def read_error(path: Path, exc: OSError) -> InputError:
    """The one-line error for a file that cannot be read."""
    if isinstance(exc, PermissionError):
        return InputError(f"{path}: permission denied")
    return InputError(f"{path}: cannot read ({exc.strerror or exc})")


def read_bytes(path: Path) -> bytes:
    """A whole file, or an InputError naming it."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise read_error(path, exc) from exc


def truncation_note(offset: int) -> str:
    return f"truncated final record at byte {offset} (run still being written?)"


def read_event_file(path: Path, file_no: int = 0) -> _Points:
    """Every scalar point in one event file (before the per-tag plugin filter)."""
    b = _Buffer.read(path)
    framing = _frame(b, str(path))
    return _decode(b, framing, file_no, str(path))


# --- a run's points, read a window at a time --------------------------------------------------

#: Bytes of an event file framed and decoded at a time: memory stays near the frame's size.
_WINDOW = 2 << 20


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
            while True:
                n = min(want, size - pos)
                padded = bytearray(n + _Buffer._PAD)
                fh.seek(pos)
                got = fh.readinto(memoryview(padded)[:n])
                b = _Buffer(padded, got)
                at_end = pos + got >= size or got < n
                try:
                    fr = _frame(b, label)
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
                pts = _decode(b, fr, file_no, label)
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
        except ValueError:
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


def _load_run(name: str, files: list[Path], source: str, options: LoadOptions) -> Run | None:
    """One run from its event files, oldest first; None when they hold no scalar."""
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
            got = _read_points(path, file_no, tag_ids)
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


def walk_files(root: Path, max_depth: int, max_entries: int | None = None) -> Iterator[Path]:
    """Files below ``root``, breadth first, at most ``max_depth`` folders down (links not
    followed, hidden folders skipped) and, if given, ``max_entries`` entries looked at."""
    queue = [(root, 0)]
    seen = 0
    while queue:
        folder, depth = queue.pop(0)
        try:
            entries = sorted(os.scandir(folder), key=lambda d: d.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if max_entries is not None and seen > max_entries:
                return
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < max_depth and not entry.name.startswith("."):
                        queue.append((Path(entry.path), depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    yield Path(entry.path)
            except OSError:
                continue


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
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        found = [Path(folder) / f for f in sorted(files) if _is_event_file(f)]
        found = [f for f in found if f.is_file()]
        if found:
            by_folder[Path(folder)] = found
    out = []
    for folder, files in by_folder.items():
        rel = folder.relative_to(path).as_posix()
        name = path.resolve().name if rel == "." else rel
        out.append((name, files, str(folder)))
    return out


def _load(path: Path, options: LoadOptions) -> list[Run]:
    found = _discover(path)
    if not found:
        raise FormatError(f"{path}: no TensorBoard event files (*tfevents*) found")
    if options.run is not None and any(name == options.run for name, _, _ in found):
        found = [f for f in found if f[0] == options.run]
    runs = []
    for name, files, source in found:
        run = _load_run(name, files, source, options)
        if run is not None:
            runs.append(run)
        elif len(found) == 1:
            what = "file" if len(files) == 1 else "files"
            where = files[0] if len(files) == 1 else source
            raise FormatError(f"{where}: no scalar events in TensorBoard {what}")
    if not runs:
        raise FormatError(f"{path}: no scalar events in any TensorBoard file")
    return runs


IMPORTER = Importer(
    name="tensorboard",
    description="TensorBoard event files (*tfevents*): a file, a run folder, or a folder of runs",
    sniff=_sniff,
    load=_load,
    reads_folders=True,
)
