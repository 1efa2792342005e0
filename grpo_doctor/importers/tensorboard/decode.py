"""Event records into scalar points: protobuf parsing record by record, and the bulk decoder
that reads records equal to a template but for their numbers straight from rows of bytes
(the importer's docstring says how).
"""


from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crc32c
import numpy as np

from grpo_doctor.importers._bytes import HASH_KEYS, WORD_MASKS, Buffer, gather_rows
from grpo_doctor.importers.tensorboard.framing import (
    _MASK_DELTA,
    _MAX_NOTES,
    _crc_rows,
    _frame,
    _Framing,
    _payloads_valid,
)

# TensorProto dtype -> struct format of one element in ``tensor_content``.
_CONTENT_FORMATS = {1: "<f", 2: "<d", 3: "<i", 9: "<q", 19: "<e"}
_DT_STRING = 7
_DT_BFLOAT16 = 14

# --- decoding ---------------------------------------------------------------------------------


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
    """``varint`` of each row of ``r8`` at column ``at``: (value, byte length; 0 if bad, a
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
    masks = WORD_MASKS[hi] & ~WORD_MASKS[lo]  # distinct pairs x words
    h = np.zeros(len(r), dtype=np.uint64)
    for k in range(words):  # a column at a time: no temporary of rows x words
        if masks[:, k].any():
            h += (r[:, k] & masks[pair, k]) * _ROW_KEYS[k]
    h += length.astype(np.uint64) * HASH_KEYS[-1]
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


def _gather(b: Buffer, at: np.ndarray, dtype: str) -> np.ndarray:
    """One ``dtype`` value at each byte offset ``at`` (gathered as whole items, not words)."""
    dt = np.dtype(dtype)
    items = np.ndarray((len(b.padded) - dt.itemsize + 1,), dtype=np.dtype((np.void, dt.itemsize)),
                       buffer=b.padded, strides=(1,))
    return items[at].view(dt)


class _Damaged(Exception):
    """A payload CRC failed in a window read with ``verify``: read the file whole instead."""


# Records are decoded in bulk by length class, each class in rows of its longest record.
_ROW_CLASSES = (120, 504, _TEMPLATE_MAX_LENGTH)


def _decode(b: Buffer, fr: _Framing, file_no: int, label: str,
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


def _bulk(b: Buffer, pts: _Points, templates: _Templates, idx: np.ndarray, s: np.ndarray,
          lengths: np.ndarray, order: np.ndarray, Event: Any, DecodeError: type[Exception],
          verify: bool) -> np.ndarray:
    """Decode the records ``idx`` that match a template; returns those decoded."""
    import pandas as pd

    length = lengths[idx]
    width = (int(length.max()) + 4 + 7) // 8 * 8  # the payload and its CRC
    r = gather_rows(b, s[idx], width)
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
    key ^= length.astype(np.uint64) * HASH_KEYS[0]
    key ^= (t0 * 64 + head).astype(np.uint64) * HASH_KEYS[1]
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


def _one_by_one(b: Buffer, pts: _Points, idx: np.ndarray, s: np.ndarray, e: np.ndarray,
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
                if v.tag == HPARAMS_TAG and v.metadata.plugin_data.plugin_name == "hparams":
                    hparams = _session_hparams(v.metadata.plugin_data.content)
                    if hparams:
                        pts.texts.append((HPARAMS_TAG, o, json.dumps(hparams)))
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


#: Where ``SummaryWriter.add_hparams`` (torch, tensorboardX) keeps the settings of a run: the
#: hparams plugin's session start, in an event file of its own sub-folder.
HPARAMS_TAG = "_hparams_/session_start_info"


def _session_hparams(content: bytes) -> dict[str, Any]:
    """The settings of an hparams session start (``HParamsPluginData``): name -> number, text or
    bool; {} when the bytes are no such record."""
    from google.protobuf.message import DecodeError
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    try:
        data = HParamsPluginData.FromString(content)
    except DecodeError:
        return {}
    out: dict[str, Any] = {}
    for name, value in data.session_start_info.hparams.items():
        kind = value.WhichOneof("kind")
        if kind in ("number_value", "string_value", "bool_value"):
            number = getattr(value, kind)
            # add_hparams stores ints as doubles: 8.0 back to 8, as the trainer had it.
            out[name] = int(number) if kind == "number_value" and float(number).is_integer() \
                and abs(number) < 2**53 else number
    return out


def read_event_file(path: Path, file_no: int = 0) -> _Points:
    """Every scalar point in one event file (before the per-tag plugin filter)."""
    b = Buffer.read(path)
    framing = _frame(b, str(path))
    return _decode(b, framing, file_no, str(path))
