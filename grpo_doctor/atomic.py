"""Writing files without ever losing what a user had.

What a target path is decides how it is written (:func:`plan`):

* **nothing there**: written to a temp file in the target's folder, then published with a hard
  link, which fails if the name appeared meanwhile: of several writers racing for one name
  exactly one wins, and the others say the file exists (``O_EXCL`` where links are refused).
* **a regular file**: replaced by renaming the temp file over it, only with ``force``. A
  symbolic link to one keeps being a link: the file it points to is replaced.
* **our own stdout or stderr** (``-o /dev/stdout``, whatever stdout is): written to that stream.
* **a null device, a terminal or a FIFO** (``-o /dev/null``, ``-o /dev/tty``, a named pipe
  with a reader): written into in place; the device stays a device. A FIFO nobody reads is
  an error, not a wait; so is ``/dev/tty`` with no controlling terminal, each said as such.
* **anything else** (a folder, a socket, a block device, any other character device, a broken
  link): refused with one line, and never opened. ``--force`` does not change that.

:func:`check_all` plans every target of a command before any is written, so a command that
refuses one target has written none.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from grpo_doctor.errors import InputError
from grpo_doctor.files import kind as file_kind

Kind = Literal["new", "replace", "stdout", "stderr", "device"]

#: Character devices written into in place: the null device (and its kin) and terminals.
_MEMORY_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")
#: Linux major numbers of terminals (virtual consoles, /dev/tty and /dev/console, ptys).
_TTY_MAJORS = frozenset({4, 5, *range(136, 144)})


@dataclass(frozen=True)
class Target:
    """Where and how one file is written (see the module docstring)."""

    path: Path  # as the user named it
    kind: Kind
    real: Path  # the file a rename replaces, the device written into


def _cannot(path: Path, exc: OSError) -> InputError:
    return InputError(f"{path}: cannot write ({exc.strerror or exc})")


def _same_file(st: os.stat_result, fd: int) -> bool:
    try:
        other = os.fstat(fd)
    except (OSError, ValueError):
        return False
    return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)


def _stream_of(st: os.stat_result) -> Kind | None:
    for kind, stream in (("stdout", sys.stdout), ("stderr", sys.stderr)):
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            continue
        if _same_file(st, fd):
            return kind  # type: ignore[return-value]
    return None


def _writable_device(st: os.stat_result) -> bool:
    """A character device a report may be written into: a null-like device or a terminal."""
    for name in _MEMORY_DEVICES:
        with contextlib.suppress(OSError):
            known = os.stat(name)
            if stat.S_ISCHR(known.st_mode) and known.st_rdev == st.st_rdev:
                return True
    return os.major(st.st_rdev) in _TTY_MAJORS


def _what(mode: int) -> str:
    return "is a folder" if stat.S_ISDIR(mode) else f"is {file_kind(mode) or 'a regular file'}"


def plan(path: str | os.PathLike[str], *, force: bool = False, in_place: bool = True) -> Target:
    """How ``path`` would be written; raises the one-line error when it must not be.

    ``in_place=False`` (a cache file) accepts only a new or a regular file.
    """
    target = Path(path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        if os.path.lexists(target):
            raise InputError(f"{target}: is a broken link (it points to "
                             f"{os.readlink(target)!r}); not writing through it") from None
        return Target(target, "new", target)
    except OSError as exc:
        raise _cannot(target, exc) from exc
    mode = st.st_mode
    stream = _stream_of(st) if in_place else None
    if stream is not None:
        return Target(target, stream, target)
    if stat.S_ISREG(mode):
        if not force:
            raise InputError(f"{target}: already exists; pass --force to replace it")
        return Target(target, "replace", Path(os.path.realpath(target)))
    in_place_ok = in_place and (stat.S_ISFIFO(mode) or (stat.S_ISCHR(mode)
                                                        and _writable_device(st)))
    if in_place_ok:
        return Target(target, "device", target)
    what = _what(mode)
    if stat.S_ISDIR(mode):
        raise InputError(f"{target}: {what}")
    raise InputError(f"{target}: {what}, not a regular file; grpo-doctor writes reports only "
                     f"to files (or to /dev/stdout, /dev/null, a terminal or a FIFO)")


def _read_files(inputs: Iterable[str | os.PathLike[str] | None]
                ) -> dict[tuple[int, int], str]:
    """The regular files among ``inputs`` (a command's logs and config files), by device and
    inode: what no report may replace."""
    out: dict[tuple[int, int], str] = {}
    for path in inputs:
        if path is None:
            continue
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode):
            out[(st.st_dev, st.st_ino)] = str(path)
    return out


def _folders(inputs: Iterable[str | os.PathLike[str] | None]) -> list[str]:
    """The folders among ``inputs``, resolved, each ending in the path separator."""
    out = []
    for path in inputs:
        if path is None:
            continue
        try:
            if os.path.isdir(path):
                out.append(os.path.join(os.path.realpath(path), ""))
        except (OSError, ValueError):
            continue
    return out


def check_all(paths: Iterable[str | os.PathLike[str] | None], *, force: bool = False,
              inputs: Iterable[str | os.PathLike[str] | None] = (),
              reads: Callable[[Path], bool] | None = None) -> list[Target]:
    """Plan every target (None entries skipped) before any is written; a target named twice
    is an error too (the second write would replace the first), and so is one that is a file
    the command reads (``inputs``: ``-o run.csv --force`` on run.csv had replaced the log
    with its own report, through a link too)."""
    planned: list[Target] = []
    seen: dict[str, Path] = {}
    inputs = list(inputs)
    read = _read_files(inputs)
    folders = _folders(inputs) if reads is not None else []
    for path in paths:
        if path is None:
            continue
        target = plan(path, force=force)
        if target.kind == "replace" and read:
            st = os.stat(target.real)
            given = read.get((st.st_dev, st.st_ino))
            if given is not None:
                what = ("a file this command reads" if os.path.abspath(given) ==
                        os.path.abspath(target.path) else f"{given}, which this command reads")
                raise InputError(f"{target.path}: is {what}; not writing a report over it "
                                 "(name another file)")
        if target.kind == "replace" and folders and reads is not None:
            # A log inside a folder the command reads (``diagnose runA -o runA/train.log``):
            # what it would read, lost to its report (helper-75).
            real = os.path.realpath(target.real)
            inside = next((f for f in folders if real.startswith(f)), None)
            if inside is not None and reads(Path(real)):
                raise InputError(f"{target.path}: is a log in {inside.rstrip(os.sep)}, which "
                                 "this command reads; not writing a report over it (name "
                                 "another file)")
        key = os.path.realpath(target.real) if target.kind in ("new", "replace") else \
            f"{target.kind}:{target.real}"
        if target.kind in ("new", "replace") and key in seen:
            raise InputError(f"{target.path}: named twice (also as {seen[key]})")
        seen[key] = target.path
        planned.append(target)
    return planned


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, force: bool = False,
                 in_place: bool = True) -> Path:
    """Write ``data`` to ``path`` as the module docstring says; returns ``path``."""
    return write(plan(path, force=force, in_place=in_place), data)


def write(target: Target, data: str | bytes) -> Path:
    """Write ``data`` to a planned target (checked again: it may have changed since)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if target.kind in ("stdout", "stderr"):
        _write_stream(target, data)
    elif target.kind == "device":
        _write_device(target, raw)
    else:
        _write_file(target, raw)
    return target.path


def _write_stream(target: Target, data: str | bytes) -> None:
    stream = sys.stdout if target.kind == "stdout" else sys.stderr
    try:
        if isinstance(data, bytes):
            stream.flush()
            stream.buffer.write(data)
        else:
            stream.write(data)
        stream.flush()
    except OSError as exc:
        raise _cannot(target.path, exc) from exc


def _write_device(target: Target, raw: bytes) -> None:
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target.real, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise _no_device(target) from exc
        raise _cannot(target.path, exc) from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) or not (stat.S_ISFIFO(st.st_mode) or
                                            stat.S_ISCHR(st.st_mode)):
            raise InputError(f"{target.path}: changed while being written; not written")
        os.set_blocking(fd, True)
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise _cannot(target.path, exc) from exc
    finally:
        os.close(fd)


#: The controlling terminal's device (``/dev/tty``): (major, minor).
_CONTROLLING_TTY = (5, 0)


def _no_device(target: Target) -> InputError:
    """What ENXIO ("no such device or address") from opening ``target`` means, by what the
    path is now: a FIFO nobody reads, ``/dev/tty`` with no controlling terminal, a device
    with no driver (or gone), a socket (the path changed since it was planned)."""
    try:
        st = os.stat(target.real)
    except OSError:
        return InputError(f"{target.path}: cannot write (no such device or address)")
    mode = st.st_mode
    if stat.S_ISFIFO(mode):
        return InputError(f"{target.path}: a FIFO that nobody reads; start its reader first")
    if stat.S_ISCHR(mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == _CONTROLLING_TTY:
        return InputError(f"{target.path}: no controlling terminal (this process has none, as "
                          f"under nohup, cron or a job scheduler); write to a file instead")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return InputError(f"{target.path}: is {file_kind(mode)} with no device behind it (no "
                          f"driver, or the device is gone); not written")
    return InputError(f"{target.path}: {_what(mode)}, not a regular file; grpo-doctor writes "
                      f"reports only to files (or to /dev/stdout, /dev/null, a terminal or a "
                      f"FIFO)")


def _write_file(target: Target, raw: bytes) -> None:
    final = target.real
    folder = final.parent if str(final.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise _cannot(target.path, exc) from exc
    try:
        # mkstemp makes the file private (0600); a report should get the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        if target.kind == "replace":
            _replace(target, tmp)
        else:
            _publish(target, tmp, raw)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _cannot(target.path, exc) from exc
        raise
    with contextlib.suppress(OSError):
        os.unlink(tmp)  # published by a link: the temp name is a second name of the file


def _replace(target: Target, tmp: str) -> None:
    try:
        now = os.lstat(target.real)
    except FileNotFoundError:
        now = None
    if now is not None and not stat.S_ISREG(now.st_mode):
        raise InputError(f"{target.path}: {_what(now.st_mode)} now, not a regular file; "
                         f"not replaced")
    os.replace(tmp, target.real)


def _exists(target: Target) -> InputError:
    return InputError(f"{target.path}: already exists; pass --force to replace it")


def _publish(target: Target, tmp: str, raw: bytes) -> None:
    """Give the written temp file its name, unless something took the name meanwhile."""
    try:
        os.link(tmp, target.real)
        return
    except FileExistsError:
        raise _exists(target) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV,
                             errno.EMLINK, errno.ENOSYS):
            raise
    # A filesystem without hard links: create the name exclusively and copy.
    try:
        fd = os.open(target.real, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        raise _exists(target) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(target.real)
        raise
