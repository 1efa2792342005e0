"""TFRecord framing of TensorBoard event files: ``uint64 length | uint32 masked_crc32c(length) |
data | uint32 masked_crc32c(data)``, found and checked in bulk.

Record boundaries are learnt as a repeating pattern of sizes and checked against the stored
lengths in bulk (the importer's docstring says how); header CRCs are computed with numpy, and
payload CRCs of many records of one length at once (CRC-32C is affine). A record with a bad
CRC is skipped and noted; a truncated last record ends the file with a note.
"""


from __future__ import annotations

import struct
from dataclasses import dataclass, field

import crc32c
import numpy as np

from grpo_doctor.errors import FormatError
from grpo_doctor.importers._bytes import Buffer
from grpo_doctor.importers._common import truncation_note

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
_MAX_NOTES = 10  # corrupt-record notes per file before they are summed up

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


# --- framing ----------------------------------------------------------------------------------


@dataclass
class _Framing:
    starts: np.ndarray  # payload start of each good record (int64)
    lengths: np.ndarray  # payload length (int64)
    offsets: np.ndarray  # record start, for notes (int64)
    notes: list[str] = field(default_factory=list)


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


def _walk_all(b: Buffer, pos: int, model: _SizeModel | None = None) -> tuple[np.ndarray, int]:
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


def _same_length_crcs(b: Buffer, starts: np.ndarray, length: int) -> np.ndarray | None:
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


def _payload_crcs(b: Buffer, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
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


def _payloads_valid(b: Buffer, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    computed = _payload_crcs(b, starts, lengths)
    masked = ((computed >> 15) | (computed << 17)) + np.uint32(_MASK_DELTA)
    return masked == b.u32[starts + lengths]


def _resync(b: Buffer, pos: int) -> int | None:
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


def _lengths_valid(b: Buffer, offs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _corruption_notes(corrupt: list[int], truncated_at: int | None) -> list[str]:
    """The notes of a file's framing: its corrupt records (sorted in place; the first
    ``_MAX_NOTES`` by offset, then a count) and a truncated last record."""
    corrupt.sort()
    notes = [f"corrupt record at byte {where} skipped" for where in corrupt[:_MAX_NOTES]]
    if len(corrupt) > _MAX_NOTES:
        notes.append(f"{len(corrupt) - _MAX_NOTES} more corrupt records skipped")
    if truncated_at is not None:
        notes.append(truncation_note(truncated_at))
    return notes


def _frame(b: Buffer, label: str, model: _SizeModel | None = None,
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
    notes = _corruption_notes(corrupt, truncated_at)
    return _Framing(starts=starts, lengths=lengths, offsets=offs, notes=notes)
