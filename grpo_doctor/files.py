"""Reading input files safely: only regular files (and folders), only as much as memory allows.

A FIFO, a character device (``/dev/zero``, a terminal) or a socket named as a log would block
a reader forever or feed it without end; they are refused up front with one line. A whole-file
read (CSV, JSON, text logs, W&B logs) is refused past ``max_read_bytes()``, before anything is
read; importers that stream (TensorBoard) are not capped by size.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from grpo_doctor.errors import InputError
from grpo_doctor.objstore import StoreEntry, StorePath, is_store_uri, open_uri, within

#: Whole-file reads past this many bytes are refused (GRPO_DOCTOR_MAX_READ_MB raises it).
DEFAULT_MAX_READ_BYTES = 4 << 30


def as_path(source: str | os.PathLike[str] | StorePath) -> Path:
    """A source as a path: a local ``Path``, or for an object-store URI a ``StorePath`` listed
    now (typed as ``Path``: it answers the subset of ``Path`` the readers use)."""
    if isinstance(source, StorePath):
        return source  # type: ignore[return-value]
    text = os.fspath(source)
    if is_store_uri(text):
        return open_uri(text)  # type: ignore[return-value]
    return Path(text)


def located(root: Path, source: str) -> Path:
    """The path of ``source``, found under ``root``: in a store, from ``root``'s listing."""
    if isinstance(root, StorePath):
        return within(root, source)
    return Path(source)


def is_remote(path: object) -> bool:
    """Whether ``path`` is in an object store."""
    return isinstance(path, StorePath) or is_store_uri(path)


def fresh(path: Path) -> Path:
    """``path`` as it is now: an object-store path is listed again (a local one needs not)."""
    if isinstance(path, StorePath):
        return path.refreshed()
    return path


def stat_of(path: Path) -> os.stat_result:
    """``os.stat`` of a local path, or what the listing says of a store's."""
    if isinstance(path, StorePath):
        return path.stat()
    return os.stat(path)


def size_of(fh: object) -> int:
    """The size of an open file (``os.fstat``), local or in a store."""
    size = getattr(fh, "size", None)
    if callable(size):
        return int(size())
    return os.fstat(fh.fileno()).st_size  # type: ignore[attr-defined]


def scandir(folder: Path) -> list[os.DirEntry[str]]:
    """The entries of a folder (``os.scandir``), local or in a store, in no set order."""
    if isinstance(folder, StorePath):
        return folder.scandir()
    with os.scandir(folder) as it:
        return list(it)


def entry_path(entry: os.DirEntry[str]) -> Path:
    """The path of a folder entry from :func:`scandir`."""
    if isinstance(entry, StoreEntry):
        return entry.store_path
    return Path(entry.path)


@contextmanager
def arrow_input(path: Path) -> Iterator[Any]:
    """What a pyarrow reader (CSV, parquet) is given: a local path as it is, an object in a
    store opened for range reads through the layer."""
    if isinstance(path, StorePath) or not _utf8(str(path)):
        # pyarrow takes a path only as UTF-8: a name of other bytes (``bad-\xff.csv``, kept by
        # Python as surrogates) is opened here and read through the file object.
        with path.open("rb") as fh:
            yield fh
    else:
        yield path


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def max_read_bytes() -> int:
    text = os.environ.get("GRPO_DOCTOR_MAX_READ_MB", "").strip()
    if text:
        try:
            return max(1, int(float(text) * (1 << 20)))
        except ValueError:
            pass
    return DEFAULT_MAX_READ_BYTES


def kind(mode: int) -> str | None:
    """What a file that is neither a regular file nor a folder is (None for those two)."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def refuse(path: Path, what: str) -> InputError:
    return InputError(f"{path}: is {what}, not a regular file")


def watched_input(path: str | os.PathLike[str]) -> Path:
    """``path`` to follow as it grows: refused now when it is a FIFO or a device, not at the
    first poll; a path not there yet is fine (training may not have started)."""
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)) and not is_remote(path):
        raise InputError(f"a log's path is needed to watch, got {type(path).__name__}")
    if is_remote(path):
        return open_uri(str(path), missing_ok=True)  # type: ignore[return-value]
    refuse_empty(path)
    p = Path(path)
    if p.exists():
        check_input(p)
    return p


def refuse_empty(path: str | os.PathLike[str]) -> None:
    """An empty path (an unset shell variable: ``diagnose "$LOG"``) names no log; as
    ``Path("")`` it would be the current folder, read whole (helper-77)."""
    if not os.fspath(path).strip():
        raise InputError("no log given (an empty path: an unset variable?)")


def check_input(path: str | os.PathLike[str]) -> os.stat_result:
    """``path`` is a folder or a regular file: its stat; else the one-line error (never
    opened, so a FIFO or a device cannot block or flood the read)."""
    p = path if isinstance(path, (Path, StorePath)) else Path(path)
    try:
        st = stat_of(p)
    except FileNotFoundError:
        raise InputError(f"{p}: no such file or folder") from None
    except PermissionError:
        raise InputError(f"{p}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({exc.strerror or exc})") from None
    what = kind(st.st_mode)
    if what is not None:
        raise refuse(p, what)
    if isinstance(p, Path) and (st.st_size == 0 or stat.S_ISDIR(st.st_mode)) and in_kernel_fs(p):
        # A kernel's file reports size 0 and may block its reader forever (/proc/kmsg); its
        # folders lead everywhere (/proc/<pid>/root is "/": an audit of /proc never ended).
        raise InputError(f"{p}: a kernel pseudo-file (/proc, /sys), not a log")
    return st


#: Where a kernel's pseudo-files live: regular files by their mode, no logs.
_KERNEL = ("/proc", "/sys")


def in_kernel_fs(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` resolves into /proc or /sys."""
    real = os.path.realpath(path)
    return any(real == k or real.startswith(k + "/") for k in _KERNEL)


def human_bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"  # pragma: no cover


def check_size(path: str | os.PathLike[str], size: int) -> None:
    """Refuse a whole-file read of ``size`` bytes past ``max_read_bytes()``."""
    limit = max_read_bytes()
    if size > limit:
        raise InputError(f"{path}: the file is {human_bytes(size)}, more than the "
                         f"{human_bytes(limit)} grpo-doctor reads into memory "
                         f"(GRPO_DOCTOR_MAX_READ_MB raises the limit)")


def read_error(path: Path, exc: OSError) -> InputError:
    """The one-line error for a file that cannot be read."""
    if isinstance(exc, PermissionError):
        return InputError(f"{path}: permission denied")
    return InputError(f"{path}: cannot read ({exc.strerror or exc})")


def read_bytes(path: Path) -> bytes:
    """The whole content of a regular file within the size limit, or an InputError naming
    it. A FIFO or a device is refused before it is opened (opening a FIFO waits for a
    writer)."""
    try:
        what = kind(stat_of(path).st_mode)
        if what is not None:
            raise refuse(path, what)
        with path.open("rb") as fh:
            if isinstance(path, StorePath):
                check_size(path, size_of(fh))
                return bytes(fh.read())
            st = os.fstat(fh.fileno())
            what = kind(st.st_mode)
            if what is not None:
                raise refuse(path, what)
            check_size(path, st.st_size)
            return fh.read(max_read_bytes() + 1)
    except OSError as exc:
        raise read_error(path, exc) from exc


# --- folders -----------------------------------------------------------------------------


def _key(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def is_link(entry: os.DirEntry[str]) -> bool:
    """Whether a folder entry is a symbolic link (an entry that vanished is not)."""
    try:
        return entry.is_symlink()
    except OSError:
        return False


def walk(root: str | os.PathLike[str], *, max_depth: int | None = None,
         follow_links: bool = False,
         on_error: Callable[[Path, OSError], None] | None = None,
         on_too_deep: Callable[[Path], None] | None = None,
         on_repeat: Callable[[os.DirEntry[str]], None] | None = None,
         ) -> Iterator[tuple[Path, list[os.DirEntry[str]], list[os.DirEntry[str]]]]:
    """``os.walk`` without recursion (a tree thousands of folders deep is no RecursionError):
    ``(folder, dirs, files)`` top-down in name order; the caller may prune ``dirs`` in place.

    Folders more than ``max_depth`` below ``root`` are not entered (``on_too_deep(folder)``
    names the folder whose subfolders were left out). With ``follow_links``, a link to a folder
    is entered once: a folder already walked (a loop, or a second link to it) is not entered
    again, and ``on_repeat(entry)`` hears of it. ``on_error(folder, exc)`` hears about a
    folder that cannot be listed.
    """
    top = root if isinstance(root, (Path, StorePath)) else as_path(root)
    seen: set[tuple[int, int]] = set()
    try:
        seen.add(_key(stat_of(top)))
    except OSError as exc:
        if on_error is not None:
            on_error(top, exc)
        return
    stack: list[tuple[Path, int]] = [(top, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = sorted(scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            if on_error is not None:
                on_error(folder, exc)
            continue
        dirs: list[os.DirEntry[str]] = []
        files: list[os.DirEntry[str]] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=follow_links)
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry)
        yield folder, dirs, files
        if not dirs:
            continue
        if max_depth is not None and depth >= max_depth:
            if on_too_deep is not None:
                on_too_deep(folder)
            continue
        kept: set[str] = set()
        # Of two ways to one folder, the folder itself is kept (wandb's ``latest-run`` link is
        # not the run's name), else the first in name order.
        for entry in sorted(dirs, key=is_link):
            try:
                if is_link(entry) and in_kernel_fs(entry.path):
                    continue  # a link into /proc or /sys: the whole machine behind it
                key = _key(entry.stat(follow_symlinks=True))
            except OSError:
                continue
            if key not in seen:
                seen.add(key)
                kept.add(entry.name)
            elif on_repeat is not None:
                on_repeat(entry)
        stack.extend(reversed([(entry_path(e), depth + 1) for e in dirs if e.name in kept]))
