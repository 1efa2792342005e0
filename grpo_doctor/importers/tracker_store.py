"""What the experiment-tracker stores (MLflow, Trackio, SwanLab) share.

Their runs are read directly, never through the trackers' packages: a SQLite file is opened
read-only with the standard library (one-line errors for a locked, damaged or unreadable
database), and each run's points, a (step, key, value) row per logged value, are pivoted with
``_long.long_frame`` (a value logged twice at one step: the last one logged
is kept and counted) into a :class:`~grpo_doctor.store.Run`.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from grpo_doctor.errors import FormatError, GrpoDoctorError, InputError
from grpo_doctor.files import is_remote, read_bytes
from grpo_doctor.importers._long import Wide, long_frame
from grpo_doctor.importers.base import LoadOptions
from grpo_doctor.store import Run, build_run
from grpo_doctor.text import agree

SQLITE_MAGIC = b"SQLite format 3\x00"
#: Seconds to wait for a writer's lock before saying the database is locked.
LOCK_TIMEOUT = 2.0


def is_sqlite(head: bytes) -> bool:
    return head.startswith(SQLITE_MAGIC)


def sqlite_error(path: Path, exc: BaseException) -> GrpoDoctorError:
    """The one-line error for a SQLite file that cannot be read."""
    text = " ".join(str(exc).split())
    if "locked" in text or "busy" in text:
        return InputError(f"{path}: the database is locked by another process (a run still "
                          "writing it?); try again when it is done")
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return FormatError(f"{path}: the SQLite database is damaged ({text})")
    if isinstance(exc, PermissionError) or "unable to open" in text:
        if not os.access(path, os.R_OK):
            return InputError(f"{path}: permission denied")
        return InputError(f"{path}: cannot open the SQLite database ({text})")
    return FormatError(f"{path}: cannot read the SQLite database ({text})")


def _connect(path: Path, immutable: bool) -> sqlite3.Connection:
    mode = "immutable=1" if immutable else "mode=ro"
    uri = f"file:{quote(str(path.resolve()))}?{mode}"
    conn = sqlite3.connect(uri, uri=True, timeout=LOCK_TIMEOUT, check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _idle_wal_database(path: Path) -> bool:
    """A database in write-ahead-log mode that no one has open (no ``-wal`` file beside it).

    Opened the ordinary read-only way, SQLite would create ``-wal`` and ``-shm`` files beside
    it and, being read-only, leave them there; with nothing in a log to miss it is read as an
    immutable file instead, which creates nothing."""
    try:
        with path.open("rb") as fh:
            header = fh.read(20)
    except OSError:
        return False
    return len(header) == 20 and header[18:20] == b"\x02\x02" and not Path(f"{path}-wal").exists()


@contextmanager
def open_sqlite(path: Path, notes: list[str] | None = None) -> Iterator[sqlite3.Connection]:
    """``path`` opened read-only: never written, and no file is created beside it."""
    if is_remote(path):
        # Unavoidable temp file: SQLite reads only local files. The object is read once
        # through the filesystem layer into a private temporary folder, removed after.
        with tempfile.TemporaryDirectory(prefix="grpo-doctor-") as tmp:
            local = Path(tmp) / "store.db"
            try:
                local.write_bytes(read_bytes(path))
                conn = _connect(local, immutable=True)
            except sqlite3.Error as exc:
                raise sqlite_error(path, exc) from exc
            with closing(conn):
                yield conn
        return
    immutable = _idle_wal_database(path)
    try:
        conn = _connect(path, immutable=immutable)
    except sqlite3.Error as exc:
        # A write-ahead-log database in a folder we cannot write needs its -shm file: read
        # the main file alone, and say what that may leave out.
        if immutable or "unable to open" not in str(exc) or not os.access(path, os.R_OK):
            raise sqlite_error(path, exc) from exc
        try:
            conn = _connect(path, immutable=True)
        except sqlite3.Error as exc2:
            raise sqlite_error(path, exc2) from exc2
        if notes is not None and Path(f"{path}-wal").exists():
            notes.append("read without its write-ahead log (the folder is read-only): the "
                         "newest rows may be missing")
    with closing(conn):
        yield conn


def quoted(name: str) -> str:
    """An SQL identifier (a table or column name) quoted, whatever it holds."""
    return '"' + str(name).replace('"', '""') + '"'


def text_of(value: Any) -> str:
    """A SQLite cell read as text (SQLite keeps any type in any column: an integer run id,
    a blob name): None as "", bytes decoded, anything else as ``str``."""
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def flags(column: Sequence[Any] | np.ndarray) -> np.ndarray:
    """A SQLite boolean column (``is_nan``) as booleans, whatever its cells hold: a number is
    true when not 0, text when it reads as a true number or word ("1", "true"); NULL, other
    text and blobs are false (never a string's mere presence)."""
    values = list(column)
    if all(type(v) is int for v in values):
        return np.array(values, dtype=np.int64) != 0 if values else np.zeros(0, dtype=bool)
    out = np.zeros(len(values), dtype=bool)
    for i, v in enumerate(values):
        if isinstance(v, (int, float)):
            out[i] = v == v and v != 0
        elif isinstance(v, str):
            word = v.strip().lower()
            try:
                out[i] = word in ("true", "t", "yes") or float(word) != 0
            except ValueError:
                out[i] = False
    return out


def tables_of(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """Each table's column names."""
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {str(n): {text_of(r[1]) for r in conn.execute(f"PRAGMA table_info({quoted(n)})")}
            for n in names}


def sqlite_tables(path: Path, head: bytes) -> dict[str, set[str]] | None:
    """For a sniffer: the tables of a SQLite file, or None when it is not one or cannot be
    opened (see :func:`unreadable_sqlite`)."""
    if path.is_dir() or not is_sqlite(head):
        return None
    try:
        with open_sqlite(path) as conn:
            return tables_of(conn)
    except (GrpoDoctorError, sqlite3.Error):
        return None


def unreadable_sqlite(path: Path, head: bytes) -> bool:
    """A SQLite file that cannot be opened or listed (locked, damaged, cut short): a sniffer
    claims it at a low score so that loading it says why, in one line."""
    return is_sqlite(head) and not path.is_dir() and sqlite_tables(path, head) is None


def scan_rows(conn: sqlite3.Connection, query: str, notes: list[str], what: str,
              path: Path, batch: int = 1024) -> list[tuple[Any, ...]]:
    """Every row of ``query``; a database damaged part-way gives the rows read before the
    damage (to within ``batch`` rows) and a note (an error when nothing could be read)."""
    rows: list[tuple[Any, ...]] = []
    try:
        cursor = conn.execute(query)
        while True:
            got = cursor.fetchmany(batch)
            if not got:
                break
            rows.extend(got)
    except sqlite3.Error as exc:
        if not rows:
            raise sqlite_error(path, exc) from exc
        notes.append(f"the database is damaged ({' '.join(str(exc).split())}): the first "
                     f"{len(rows):,} {what} were read, the rest is lost")
    return rows


# --- runs -------------------------------------------------------------------------------------


@dataclass
class TrackedRun:
    """One tracker run: its points as (step, key, value) rows in the order they were logged,
    or (``wide``) as one row per logged dict with its step."""

    name: str
    run_id: str
    group: str = ""  # the experiment or project: qualifies names that repeat
    steps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    keys: Sequence[str] | np.ndarray = ()  # an array (of str) when taken from a table
    values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    nan: np.ndarray | None = None  # where a NaN was logged (default: every NaN value)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    wide: Wide | None = None  # rows may repeat a step: build_run keeps the last value logged


def read_each(files: Sequence[Path], read: Callable[[Path], list[TrackedRun]],
              notes: list[str]) -> list[TrackedRun]:
    """The runs of each file; a file that cannot be read is a note, or the error itself when
    it is the only file or no file could be read."""
    found: list[TrackedRun] = []
    errors: list[GrpoDoctorError] = []
    for file in files:
        try:
            try:
                found += read(file)
            except sqlite3.Error as exc:
                raise sqlite_error(file, exc) from exc
        except (FormatError, InputError) as exc:
            if len(files) == 1:
                raise
            errors.append(exc)
            notes.append(f"{file.name}: skipped ({str(exc).split(': ', 1)[-1]})")
    if not found and errors:
        raise errors[0]
    return found


def distinct_names(runs: Sequence[TrackedRun]) -> list[str]:
    """Each run's name; qualified by its group, then its id, where names repeat."""
    names = [r.name or r.run_id for r in runs]
    counts = Counter(names)
    names = [f"{r.group}/{n}" if counts[n] > 1 and r.group else n for r, n in zip(runs, names)]
    counts = Counter(names)
    return [f"{n} ({r.run_id[:8]})" if counts[n] > 1 else n for r, n in zip(runs, names)]


def build_runs(found: Sequence[TrackedRun], path: Path, format: str, options: LoadOptions,
               notes: Sequence[str] = ()) -> list[Run]:
    """Runs from tracker runs; ``--run`` may name a run by its name (plain or qualified) or
    id. An error naming ``path`` when no run holds a logged value."""
    names = distinct_names(found)
    pairs = list(zip(found, names))
    if options.run is not None:
        picked = [(r, options.run) for r, n in pairs
                  if options.run in (n, r.name, r.run_id, f"{r.group}/{r.name}")]
        pairs = picked or pairs
    empty = [n for r, n in pairs if not len(r.steps) and r.wide is None]
    out: list[Run] = []
    built: list[TrackedRun] = []
    for tracked, name in pairs:
        if tracked.wide is not None:
            wide = tracked.wide
        elif len(tracked.steps):
            nan = np.isnan(tracked.values) if tracked.nan is None else tracked.nan
            wide = long_frame(tracked.steps, tracked.keys, tracked.values, nan, str(path))
        else:
            continue
        run_notes = [*notes, *tracked.notes, *wide.notes]
        if empty:
            run_notes.append(f"{agree(len(empty), 'a run', 'runs')} without a logged value "
                             "left out: "
                             f"{', '.join(empty)}")
        out.append(build_run(
            wide.frame, name=name, source=str(path), format=format,
            steps=wide.steps if options.step_column is None else None,
            step_column=options.step_column, config=tracked.config,
            column_map=options.column_map, explicit_nan=wide.explicit, notes=run_notes,
            summary=tracked.summary,
        ))
        built.append(tracked)
    if not out:
        raise FormatError(f"{path}: no {format} run with a logged value")
    return _resumes_joined(out, built, path, format)


def _resumes_joined(runs: list[Run], tracked: Sequence[TrackedRun], path: Path,
                    format: str) -> list[Run]:
    """Runs of one name (and group) that are launches of one run resumed from a checkpoint,
    joined as TensorBoard's and W&B's are (TRL's MLflow callback starts a run per launch under
    the same name: trial 67's resume read as two runs that --run could not tell apart)."""
    from grpo_doctor.resumed import with_resumed

    groups: dict[tuple[str, str], list[int]] = {}
    for k, t in enumerate(tracked):
        groups.setdefault((t.group, t.name or t.run_id), []).append(k)
    if all(len(g) == 1 for g in groups.values()):
        return runs
    out: list[Run] = []
    for (group, name), members in groups.items():
        if len(members) == 1:
            out.append(runs[members[0]])
            continue
        shown = f"{group}/{name}" if group and sum(
            n == name for _, n in groups) > 1 else name
        out += with_resumed([runs[k] for k in members],
                            [tracked[k].run_id[:8] for k in members], f"{format} runs",
                            shown, str(path))
    return out
