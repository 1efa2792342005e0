"""What the importers' incremental readers share (``Importer.incremental``), and ``LiveSource``,
one growing run read through its importer (what ``watch`` polls).

A reader resumes from a small state it returned: for a file, the offset of the end of what it
consumed and a ``FileIdentity`` that tells new bytes from nothing new, and a file appended to
from one truncated, replaced or rewritten (``Restarted``).
"""

from __future__ import annotations

import contextlib
import tempfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from grpo_doctor.errors import FormatError, GrpoDoctorError, InputError
from grpo_doctor.files import entry_path, fresh, is_remote, size_of, walk
from grpo_doctor.importers import detect_format, importer_named
from grpo_doctor.importers._common import looks_like_text, read_head
from grpo_doctor.importers.base import Delta, Importer, LoadOptions
from grpo_doctor.live_store import Rows
from grpo_doctor.store import Run


class Restarted(Exception):
    """The file shrank or was replaced: the log started over."""


class SeveralRuns(InputError):
    """A source holds several runs; ``names`` picks each (``--run``). ``WatchAll`` watches them
    all, one ``Watcher`` each."""

    def __init__(self, where: str, names: Sequence[str], what: str = "runs",
                 how: str = "--run NAME") -> None:
        self.names = list(names)
        shown = ", ".join(self.names[:8])
        super().__init__(f"{where} holds {len(self.names)} {what} ({shown}); pick one with {how}")


def read_from(path: Path, offset: int) -> bytes:
    """The bytes of ``path`` from ``offset`` to its end; ``Restarted`` when it is shorter."""
    try:
        with path.open("rb") as fh:
            size = size_of(fh)
            if size < offset:
                raise Restarted(f"{path} shrank from {offset} to {size} bytes")
            fh.seek(offset)
            return fh.read(size - offset)
    except FileNotFoundError:
        raise Restarted(f"{path} disappeared") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc


#: Bytes at each end of what was consumed of a file, compared to tell an append from a rewrite.
_MARK_BYTES = 4096


def _marks(path: Path, offset: int) -> tuple[int, int]:
    """Checksums of the first and the last ``_MARK_BYTES`` of the first ``offset`` bytes."""
    if offset <= 0:
        return (0, 0)
    try:
        with path.open("rb") as fh:
            head = fh.read(min(offset, _MARK_BYTES))
            fh.seek(max(0, offset - _MARK_BYTES))
            tail = fh.read(min(offset, _MARK_BYTES))
    except FileNotFoundError:
        raise Restarted(f"{path} disappeared") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    return (zlib.crc32(head), zlib.crc32(tail))


@dataclass(frozen=True)
class FileIdentity:
    """What a watched file was when it was last read: its inode, size, modification and
    change times, and checksums of the ends of what was consumed. ``changed`` tells new bytes
    from nothing new, and raises ``Restarted`` for a file replaced (another inode), truncated,
    or rewritten in place (same inode, the consumed bytes differ: a size check alone misses a
    rewrite to the same length, and an mtime check one whose mtime was put back, as ``cp -p``
    or ``touch -r`` do; the change time cannot be put back)."""

    inode: tuple[int, int] | None = None
    size: int = -1
    mtime: int = -1
    consumed: int = 0
    marks: tuple[int, int] = (0, 0)
    ctime: int = -1

    def changed(self, path: Path) -> tuple[bool, FileIdentity]:
        """Whether ``path`` may hold new bytes, and the identity it has now; raises
        ``Restarted``."""
        try:
            st = path.stat()
        except OSError:
            raise Restarted(f"{path} disappeared") from None
        inode = (st.st_dev, st.st_ino)
        if self.inode is not None and inode != self.inode:
            raise Restarted(f"{path} was replaced")
        if st.st_size < self.consumed:
            raise Restarted(f"{path} shrank from {self.consumed} to {st.st_size} bytes")
        ctime = getattr(st, "st_ctime_ns", -1)
        if (st.st_size, st.st_mtime_ns, ctime) == (self.size, self.mtime, self.ctime):
            return False, self
        if self.consumed and _marks(path, self.consumed) != self.marks:
            raise Restarted(f"{path} was rewritten")
        now = replace(self, inode=inode, size=st.st_size, mtime=st.st_mtime_ns, ctime=ctime)
        return st.st_size > self.consumed, now

    def marked(self, path: Path, consumed: int) -> FileIdentity:
        """The identity once ``consumed`` bytes of ``path`` have been read."""
        if consumed == self.consumed:
            return self
        return replace(self, consumed=consumed, marks=_marks(path, consumed))


@dataclass(frozen=True)
class TextPosition:
    """Where reading a text log resumes: the end of its last complete line read."""

    offset: int = 0
    identity: FileIdentity = field(default_factory=FileIdentity)


def read_lines(path: Path, at: TextPosition, final: bool) -> tuple[str | None, TextPosition]:
    """The complete lines appended after ``at`` (``final``: the rest too), decoded as the text
    importers decode them, and where to resume; None when there is none."""
    changed, identity = at.identity.changed(path)
    if not changed and not final:
        return None, replace(at, identity=identity)
    data = read_from(path, at.offset)
    cut = len(data) if final else data.rfind(b"\n") + 1
    if cut <= 0:
        return None, replace(at, identity=identity)
    text = data[:cut].decode("utf-8", errors="replace").replace("\x00", "")
    if at.offset == 0:
        text = text.lstrip("\ufeff")
    offset = at.offset + cut
    return text, TextPosition(offset, identity.marked(path, offset))


def snapshot(path: Path, size: int, folder: Path) -> Path:
    """The first ``size`` bytes of ``path``, copied into ``folder`` under the same name, in a
    folder named as its own (a ``metrics.csv`` run is named by its folder)."""
    if path.parent.name:
        folder = folder / path.parent.name
        folder.mkdir(exist_ok=True)
    out = folder / path.name
    with path.open("rb") as src, out.open("wb") as dst:
        left = size
        while left > 0:
            chunk = src.read(min(left, 1 << 22))
            if not chunk:
                break
            dst.write(chunk)
            left -= len(chunk)
    return out


def load_prefix(load: Callable[[Path, LoadOptions], list[Run]], path: Path, size: int,
                options: LoadOptions) -> Run | None:
    """The Run ``load`` reads from the first ``size`` bytes of ``path`` (None: nothing
    recognisable yet, such as a header without rows)."""
    if size <= 0:
        return None
    with tempfile.TemporaryDirectory(prefix="grpo-doctor-watch-") as tmp:
        copy = snapshot(path, size, Path(tmp))
        try:
            runs = load(copy, options)
        except FormatError:
            return None
        except GrpoDoctorError as exc:
            # Said of the user's log, not of the copy read (a temporary folder's path).
            raise type(exc)(str(exc).replace(str(copy), str(path))) from None
    return pick_run(runs, options, str(path), source=str(path))


def prefix_loader(load: Callable[[Path, LoadOptions], list[Run]]
                  ) -> Callable[[Path, Any, LoadOptions], Run | None]:
    """``Incremental.load`` for a text importer whose state keeps its ``TextPosition`` in
    ``at``: ``load`` of the bytes read so far."""
    def load_read(path: Path, state: Any, options: LoadOptions) -> Run | None:
        return load_prefix(load, path, state.at.offset, options) if state is not None else None
    return load_read


def pick_run(runs: list[Run], options: LoadOptions, where: str, *,
             source: str | None = None) -> Run | None:
    """The run ``options.run`` names, or the only one; ``source`` replaces a snapshot's path.
    ``SeveralRuns`` when there are several to choose from."""
    if source is not None:
        for run in runs:
            run.source = source
    if options.run is not None:
        runs = [r for r in runs if r.name == options.run]
        if not runs:
            return None
    if len(runs) > 1:
        raise SeveralRuns(where, [r.name for r in runs])
    return runs[0] if runs else None


def rows_from_records(records: Sequence[Mapping[str, float]], *,
                      steps: Sequence[float] | np.ndarray | None = None,
                      first_index: int = 0) -> Rows:
    """Rows from dicts, as the importers that read dicts turn them into a frame."""
    from grpo_doctor.importers._records import records_frame

    frame, explicit = records_frame(records)
    values = {str(c): frame[c].to_numpy(dtype=np.float64) for c in frame.columns}
    masks = {c: explicit.get(c, np.zeros(len(records), dtype=bool)) for c in values}
    given = None if steps is None else np.asarray(steps, dtype=np.float64)
    return Rows(values, masks, given, first_index, len(records))


# --- one growing run ----------------------------------------------------------------------------


def _files_stamp(path: Path) -> tuple[Any, ...]:
    """Names, modification times, sizes, change times and inodes of a file, or of the files in
    a folder (2 deep): a file rewritten to the same size with its mtime put back still has
    another change time (or, replaced, another inode)."""
    def one(p: Path) -> tuple[str, int, int, int, int]:
        st = p.stat()
        return (str(p), st.st_mtime_ns, st.st_size, getattr(st, "st_ctime_ns", -1),
                getattr(st, "st_ino", 0))

    if path.is_file():
        return (one(path),)
    out = []
    for _folder, _dirs, files in walk(path, max_depth=2):
        for entry in files:
            with contextlib.suppress(OSError):
                out.append(one(entry_path(entry)))
    return tuple(sorted(out))


class LiveSource:
    """One growing run: ``read`` what was appended, ``rebuild`` the Run from all read.

    Reads through the importer's incremental reader; a format without one (trainer_state.json,
    parquet, notebooks, exports: rewritten rather than appended to) is read whole again
    whenever its files change.
    """

    def __init__(self, importer: Importer, path: Path, options: LoadOptions) -> None:
        self.importer = importer
        self.path = path
        self.options = options
        self.format = importer.name
        # An object store's objects are not appended to in place: a run there is read whole
        # again whenever its listing changes (polled, listed again at each read).
        self.reader = None if is_remote(path) else importer.incremental
        self.policy = self.reader.policy if self.reader is not None else "last"
        self.state: Any = None
        self._last: Run | None = None  # read whole: the Run read before a rewrite

    def read(self, final: bool = False) -> Delta:
        if self.reader is None:
            self.path = fresh(self.path)
            stamp = _files_stamp(self.path)
            changed = stamp != self.state
            self.state = stamp
            return Delta(Rows(), stamp, structural=changed)
        delta = self.reader.read(self.path, self.state, self.options, final)
        self.state = delta.state
        return delta

    def quiet_for(self, seconds: float) -> bool:
        """Whether nothing of the run (its file, or the files of its folder) was modified in
        the last ``seconds``: its writer has paused at least that long."""
        import time

        try:
            stamps = _files_stamp(fresh(self.path))
        except OSError:
            return False
        return bool(stamps) and max(st[1] for st in stamps) <= time.time_ns() - seconds * 1e9

    def rebuild(self) -> Run | None:
        if self.reader is not None:
            return self.reader.load(self.path, self.state, self.options)
        options = self.options
        if self._last is not None and self._last.source != str(self.path):
            options = replace(options, keep_copy=self._last.source)  # a run folder's copy
        try:
            runs = self.importer.load(self.path, options)
        except FormatError:
            return self._last  # caught mid-rewrite: keep what was read before
        self._last = pick_run(runs, self.options, str(self.path))
        return self._last


#: Files a trainer's console is captured in: a comma in their first lines is prose, not a CSV
#: header, until the log is complete.
_CONSOLE_SUFFIXES = frozenset({".log", ".out", ".txt", ".err"})


def open_live(path: Path, options: LoadOptions, format: str | None = None, *,
              final: bool = False) -> LiveSource | None:
    """The live source for the log at ``path``, once there is enough of it to tell its format
    (None until then); ``format`` names it (as ``--input-format``). A text file that is not
    yet recognisable waits too: a trainer prints hundreds of lines of start-up (Ray, config,
    model loading) before its first metrics. ``final``: the file is complete, so one that is
    still not a log is an error."""
    if not path.exists():
        return None
    head = b"" if path.is_dir() else read_head(path)
    if path.is_file() and not head:
        return None
    if format is not None:
        imp = importer_named(format)
    else:
        try:
            imp = detect_format(path)
        except FormatError:
            if path.is_dir() or b"\n" not in head or (looks_like_text(head) and not final):
                return None  # an empty folder, a first line, start-up lines before metrics
            raise
        if imp.name in ("csv", "jsonl", "console") and b"\n" not in head:
            return None  # told from a partial first line: wait for the line to end
        if imp.name == "csv" and path.suffix.lower() in _CONSOLE_SUFFIXES and not final:
            return None  # a start-up line with a comma, not a table: wait for the metrics
    return LiveSource(imp, path, options)
