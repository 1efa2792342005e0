"""Helpers every importer may use: reading a file's head, sniffing text, numbers in logged
values, small JSON and text files, walking a run's folder, the notes a reader writes.

Importers take shared helpers from here, never from one another.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.files import check_input, entry_path, read_bytes, scandir

#: How many leading bytes a sniffer sees.
HEAD_BYTES = 64 * 1024

#: Control bytes that text (UTF-8 or a legacy 8-bit encoding) almost never holds.
_CONTROL_BYTES = bytes([*range(1, 9), 11, *range(14, 27), *range(28, 32), 127])

_NUMBER = re.compile(
    r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf|infinity)(?:\(ind\))?",
    re.IGNORECASE,
)


def read_head(path: Path) -> bytes:
    """The first ``HEAD_BYTES`` of a file, what a sniffer sees; an InputError when it cannot be
    read."""
    check_input(path)  # a FIFO or a device is refused, never opened
    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except PermissionError as exc:
        raise InputError(f"{path}: permission denied") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def head_of(path: Path) -> bytes:
    """A file's first bytes for a sniffer (b"" when it cannot be read)."""
    try:
        return read_head(path)
    except InputError:
        return b""


def has_magic(path: Path, magic: bytes) -> bool:
    """Whether the regular file ``path`` starts with ``magic``."""
    if not path.is_file():  # a FIFO named like a log is never opened (it would wait)
        return False
    try:
        with path.open("rb") as fh:
            return fh.read(len(magic)) == magic
    except OSError:
        return False


def looks_like_text(head: bytes) -> bool:
    sample = head[:4096]
    if not sample or b"\x00" in sample:
        return False
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the 4 KiB boundary is still text; so is text in a
        # legacy 8-bit encoding (cp1252, latin-1): no NUL and (almost) no control bytes.
        if exc.start < 4090:
            controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
            return controls * 100 <= len(sample)
    return True


def first_line(head: bytes) -> str:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    return text.split("\n", 1)[0].strip("\r")


def _int_as_float(value: int) -> float:
    try:
        return float(value)
    except OverflowError:  # an int too large for a float
        return math.inf if value > 0 else -math.inf


def to_number(value: Any) -> float | None:
    """A logged value as a float, or None when it is not a number (text, None, lists ...).

    Numbers printed as strings (transformers >= 5 prints ``'loss': '0.1234'``) count, and so do
    "nan" and "inf" in any case: a logged NaN is evidence, not a gap.
    """
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int):
        return _int_as_float(value)
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        text = value.strip()
        if len(text) <= 64 and _NUMBER.fullmatch(text):
            return float(text.lower().replace("(ind)", ""))
    return None


def read_text(path: Path) -> str:
    """A text file's content; undecodable bytes replaced, NUL bytes dropped."""
    data = read_bytes(path)
    return data.decode("utf-8", errors="replace").lstrip("\ufeff").replace("\x00", "")


def read_json(path: Path, what: str) -> Any:
    """A JSON file's content; a one-line FormatError naming the file when it is not JSON."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: {what} ({exc.msg} at line {exc.lineno})") from exc
    except RecursionError as exc:
        raise FormatError(f"{path}: {what} (nested too deeply)") from exc
    except ValueError as exc:
        raise FormatError(f"{path}: {what}") from exc


def truncation_note(offset: int) -> str:
    return f"truncated final record at byte {offset} (run still being written?)"


def walk_files(root: Path, max_depth: int, max_entries: int | None = None) -> Iterator[Path]:
    """Files below ``root``, breadth first, at most ``max_depth`` folders down (a link to a
    folder followed once: a loop ends there; hidden folders skipped) and, if given,
    ``max_entries`` entries looked at."""
    queue = [(root, 0)]
    seen = 0
    folders: set[tuple[int, int]] = set()
    with contextlib.suppress(OSError):
        st = root.stat()
        folders.add((st.st_dev, st.st_ino))
    while queue:
        folder, depth = queue.pop(0)
        try:
            entries = sorted(scandir(folder), key=lambda d: d.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if max_entries is not None and seen > max_entries:
                return
            try:
                if entry.is_dir():
                    if depth < max_depth and not entry.name.startswith("."):
                        st = entry.stat()
                        if (st.st_dev, st.st_ino) not in folders:
                            folders.add((st.st_dev, st.st_ino))
                            queue.append((entry_path(entry), depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    yield entry_path(entry)
            except OSError:
                continue
