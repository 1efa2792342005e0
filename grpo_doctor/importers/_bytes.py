"""A binary log's bytes as numpy views, and the vectorised primitives the TensorBoard and wandb
readers decode records with: protobuf varints at many positions, aligned rows of bytes
gathered in one go, and the keys that hash byte spans.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from grpo_doctor.files import check_size, read_error, refuse, size_of, stat_of
from grpo_doctor.files import kind as file_kind


def _strided(buf: bytes | bytearray | np.ndarray, dtype: str) -> np.ndarray:
    """A view of ``buf`` holding one (unaligned) element at every byte offset."""
    dt = np.dtype(dtype)
    count = max(len(buf) - dt.itemsize + 1, 0)
    return np.ndarray((count,), dtype=dt, buffer=buf, offset=0, strides=(1,))


class Buffer:
    """A file's bytes, zero-padded so that gathers a few bytes past a checked position stay in
    bounds, with the numpy views the bulk decoder gathers from."""

    _PAD = 64

    def __init__(self, padded: bytearray | np.ndarray, size: int) -> None:
        self.size = size
        self.padded = padded
        # numpy's stubs declare ndarray.__buffer__ only for Python >= 3.12.
        self.data = memoryview(padded)[:size]  # type: ignore[arg-type]
        self.u8 = np.frombuffer(padded, dtype=np.uint8)
        self.u32 = _strided(padded, "<u4")
        self.u64 = _strided(padded, "<u8")

    @classmethod
    def read(cls, path: Path, room: int = 0) -> Buffer:
        """A whole file, with ``room`` spare bytes (then the zero padding) after it. A FIFO or a
        device is refused before it is opened (a FIFO would wait for a writer), and so is a
        file past the whole-file read limit (``files.check_size``)."""
        try:
            if (what := file_kind(stat_of(path).st_mode)) is not None:
                raise refuse(path, what)
            with path.open("rb") as fh:
                size = size_of(fh)
                check_size(path, size)
                # Not a bytearray: it would be zero-filled first, a second pass over the file.
                padded = np.empty(size + room + cls._PAD, dtype=np.uint8)
                # A live file may have grown. (The ignore: numpy's stubs declare
                # ndarray.__buffer__ only for Python >= 3.12.)
                size = fh.readinto(memoryview(padded)[:size])  # type: ignore[arg-type]
        except OSError as exc:
            raise read_error(path, exc) from exc
        padded[size : size + cls._PAD] = 0  # the room beyond stays untouched (not resident)
        return cls(padded, size)


def varint(u8: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


HASH_KEYS = np.random.default_rng(20240229).integers(
    1, 2**63, size=33, dtype=np.int64
).astype(np.uint64) | np.uint64(1)
# WORD_MASKS[i] keeps the low i bytes (0 to 8) of a little-endian uint64.
WORD_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(9)], dtype=np.uint64)


def gather_rows(b: Buffer, starts: np.ndarray, width: int) -> np.ndarray:
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
