"""The ``run-<id>.wandb`` transaction log's framing: a 7-byte header ``:W&B`` + uint16 0xBEE1 +
uint8 version, then 32 KiB blocks of LevelDB-log chunks ``uint32 crc | uint16 length | uint8
type (FULL, FIRST, MIDDLE, LAST) | data`` with ``crc = zlib.crc32(data, crc32(type))``.

``LogFraming`` reassembles records and resumes from a ``LogPosition`` (a live log read as it
grows); ``iter_log_records`` reads a whole log with notes for damage; ``_clean_log_spans``
frames a clean log's blocks all at once. SwanLab's run log uses the same framing.
"""


from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from grpo_doctor.importers._bytes import Buffer
from grpo_doctor.importers._common import truncation_note

MAGIC = b":W&B"
_HEADER = struct.Struct("<4sHB")
_IDENT = 0xBEE1
_BLOCK = 32768
_CHUNK = struct.Struct("<IHB")
_CHUNK_DTYPE = np.dtype([("crc", "<u4"), ("length", "<u2"), ("kind", "u1")])
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4
_TYPE_CRC = {t: zlib.crc32(bytes([t])) for t in (_FULL, _FIRST, _MIDDLE, _LAST)}
_MAX_NOTES = 10
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
        # Chunks are views of the bytes being framed (copied to bytes only in ``position``).
        self.pending: list[bytes | memoryview] | None = (
            None if start.pending is None else list(start.pending))
        self.corrupt: list[int] = []
        self.cut = False

    @property
    def position(self) -> LogPosition:
        pending = None if self.pending is None else tuple(bytes(c) for c in self.pending)
        return LogPosition(self.pos, pending)

    def records(self, data: bytes | memoryview) -> Iterator[bytes | memoryview]:
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


def iter_log_records(data: bytes | memoryview, notes: list[str]) -> Iterator[bytes | memoryview]:
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
    padded = b.padded
    # In the room left after the file: only ``Buffer.read``'s array has any (a bytearray could
    # not take the slice assignments below).
    if isinstance(padded, np.ndarray) and len(padded) >= n + len(extra) + Buffer._PAD:
        padded[n : n + len(extra)] = np.frombuffer(extra, dtype=np.uint8)
        padded[n + len(extra) : n + len(extra) + Buffer._PAD] = 0
        out = Buffer(padded, n + len(extra))
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
