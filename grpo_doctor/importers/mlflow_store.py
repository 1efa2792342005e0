"""MLflow tracking stores: a SQLite database (``mlflow.db``) or an ``mlruns/`` file store.

Read directly (stdlib ``sqlite3`` and plain files), never through the mlflow package. Every
run of every experiment becomes a Run (``--run`` picks one by name or run id); runs and
experiments in MLflow's "deleted" stage are left out, as MLflow's UI leaves them out. Params
become the run's config (MLflow stores them as text), metric history keeps its steps.

How MLflow stores them (mlflow 3.x, checked against fixtures its client wrote):

* SQLite: tables ``experiments`` (experiment_id, name, lifecycle_stage), ``runs`` (run_uuid,
  name, experiment_id, lifecycle_stage), ``params`` and ``tags`` (key, value, run_uuid),
  ``metrics`` (key, value, timestamp, run_uuid, step, is_nan): every logged value is a row;
  a NaN is stored as 0 with ``is_nan`` set and +-inf as +-``sys.float_info.max``, turned back
  here. The metrics table is read in one pass, in the order the rows were written, so a
  database damaged part-way still gives the rows before the damage, with a note.
* Files: ``<experiment_id>/meta.yaml`` (name, lifecycle_stage), ``<experiment_id>/<run_id>/
  meta.yaml`` (run_name, lifecycle_stage), ``params/<key>`` (the value), ``metrics/<key>``
  with one ``timestamp value step`` line per logged value (a key holding "/" is a path).

Several values logged at one step of one key: the last one logged is kept (noted).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.files import human_bytes, max_read_bytes, read_error
from grpo_doctor.importers._common import read_text, read_yaml, to_number, typed_text
from grpo_doctor.importers.base import Importer, LoadOptions
from grpo_doctor.importers.tracker_store import (
    TrackedRun,
    build_runs,
    flags,
    open_sqlite,
    quoted,
    scan_rows,
    sqlite_error,
    sqlite_tables,
    tables_of,
    text_of,
    unreadable_sqlite,
)
from grpo_doctor.store import Run, step_array
from grpo_doctor.text import agree, plural

FORMAT = "mlflow"
_TABLES = ("experiments", "runs", "metrics", "params")
_DELETED = "deleted"
_MAX_FLOAT = sys.float_info.max
_ID = re.compile(r"[0-9A-Za-z_-]+")
_MAX_METRIC_FILES = 100_000


def _sniff(path: Path, head: bytes) -> int:
    if path.is_dir():
        return 90 if _file_store_root(path) is not None else 0
    tables = sqlite_tables(path, head)
    if tables is None:
        return 5 if unreadable_sqlite(path, head) else 0
    return 95 if all(t in tables for t in _TABLES) else 0


# --- the SQLite store ---------------------------------------------------------------------


def _real_values(values: np.ndarray) -> np.ndarray:
    """MLflow's SQL store writes +-inf as +-max float: what was logged was inf."""
    out = values.copy()
    out[values >= _MAX_FLOAT] = math.inf
    out[values <= -_MAX_FLOAT] = -math.inf
    return out


def _load_sqlite(path: Path, options: LoadOptions) -> list[Run]:
    notes: list[str] = []
    try:
        found, rows = _read_sqlite(path, notes)
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc) from exc
    _attach_points(found, rows)
    return build_runs(list(found.values()), path, FORMAT, options, notes)


def _read_sqlite(path: Path, notes: list[str]
                 ) -> tuple[dict[str, TrackedRun], list[tuple[Any, ...]]]:
    """The live runs (params as config) and every metric row, in the order written."""
    with open_sqlite(path, notes) as conn:
        tables = tables_of(conn)
        missing = [t for t in _TABLES if t not in tables]
        if missing:
            raise FormatError(f"{path}: not an MLflow database (no {', '.join(missing)} table)")
        # SQLite keeps any type in any cell: ids, names and stages are read as text.
        experiments = {
            text_of(eid): (text_of(name), text_of(stage))
            for eid, name, stage in conn.execute(
                "SELECT experiment_id, name, lifecycle_stage FROM experiments")
        }
        run_cols = tables["runs"]
        name_col = "name" if "name" in run_cols else "''"
        found: dict[str, TrackedRun] = {}
        deleted = 0
        for run_id, name, eid, stage in conn.execute(
                f"SELECT run_uuid, {name_col}, experiment_id, lifecycle_stage FROM runs"):
            exp_name, exp_stage = experiments.get(text_of(eid), (text_of(eid), ""))
            if _DELETED in (text_of(stage), exp_stage):
                deleted += 1
                continue
            found[text_of(run_id)] = TrackedRun(name=text_of(name), run_id=text_of(run_id),
                                                group=exp_name)
        for table in ("params", "tags"):
            for key, value, run_id in conn.execute(
                    f"SELECT key, value, run_uuid FROM {quoted(table)}"):
                run = found.get(text_of(run_id))
                if run is None:
                    continue
                if table == "params":
                    run.config[text_of(key)] = typed_text(value)
                elif text_of(key) == "mlflow.runName" and not run.name:
                    run.name = text_of(value)
        metric_cols = tables["metrics"]
        step = "step" if "step" in metric_cols else "0"
        is_nan = "is_nan" if "is_nan" in metric_cols else "0"
        rows = scan_rows(
            conn, f"SELECT run_uuid, key, value, {step}, {is_nan} FROM metrics", notes,
            "metric rows", path)
    if deleted:
        notes.append(f"{plural(deleted, 'deleted run')} left out")
    return found, rows


def _floats(column: np.ndarray) -> np.ndarray:
    """A column of SQLite values as floats (SQLite does not enforce types: NULL or text that
    is not a number becomes NaN)."""
    try:
        return column.astype(np.float64)
    except (TypeError, ValueError):
        out = [to_number(v) for v in column]
        return np.array([np.nan if v is None else v for v in out], dtype=np.float64)


def _attach_points(found: dict[str, TrackedRun], rows: list[tuple[Any, ...]]) -> None:
    """Split the metric rows (run, key, value, step, is_nan) by run, keeping their order."""
    if not rows:
        return
    table = np.array(rows, dtype=object)  # one C pass; columns are sliced from it
    code_of = {run_id: i for i, run_id in enumerate(found)}
    run_ids = table[:, 0] if all(type(v) is str for v in table[:, 0]) else np.array(
        [text_of(v) for v in table[:, 0]], dtype=object)
    codes = np.fromiter(map(code_of.get, run_ids, itertools.repeat(-1)), dtype=np.int64,
                        count=len(table))
    key_arr = table[:, 1] if all(type(v) is str for v in table[:, 1]) else np.array(
        [text_of(v) for v in table[:, 1]], dtype=object)
    value_arr = _floats(table[:, 2])
    step_arr = step_array(table[:, 3].tolist())  # exact: long_frame reads it
    # is_nan as stored: a text "0" is not a logged NaN (astype(bool) called it one).
    nan_arr = flags(table[:, 4]) | np.isnan(value_arr)
    value_arr[nan_arr] = np.nan
    value_arr = _real_values(value_arr)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(found) + 1))
    for i, run in enumerate(found.values()):
        idx = order[bounds[i]:bounds[i + 1]]
        if len(idx):
            run.steps, run.keys, run.values = step_arr[idx], key_arr[idx], value_arr[idx]
            run.nan = nan_arr[idx]


# --- the file store -----------------------------------------------------------------------


def _meta(path: Path, notes: list[str] | None = None) -> dict[str, Any]:
    """A meta.yaml as a mapping ({} when it cannot be read: the folder name stands in; why
    is noted in ``notes``)."""
    try:
        loaded = read_yaml(path)
    except InputError as exc:  # no PyYAML, not YAML, an alias bomb: names fall back to ids
        if notes is not None:
            notes.append(f"{exc}: the folder's name stands in")
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _text(value: Any) -> str:
    """A name from a meta.yaml: a string or a number as text, anything else (a list, a
    mapping: not a name MLflow writes) as nothing."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return ""
    return str(value)


def _kind(folder: Path) -> str | None:
    """"run", "experiment" or None, from the folder's meta.yaml."""
    try:
        if _ID.fullmatch(folder.name) is None or not (folder / "meta.yaml").is_file():
            return None
    except OSError:  # a folder that cannot be searched (another user's, mode 700)
        return None
    unreadable: list[str] = []
    meta = _meta(folder / "meta.yaml", unreadable)
    if "run_id" in meta or "run_uuid" in meta:
        return "run"
    if "experiment_id" in meta:
        return "experiment"
    if unreadable:  # not YAML, an alias bomb: MLflow's layout says what the folder is
        if any((folder / part).is_dir() for part in ("metrics", "params", "tags")):
            return "run"
        try:
            if any((c / "meta.yaml").is_file() for c in folder.iterdir() if c.is_dir()):
                return "experiment"
        except OSError:
            return None
    return None


def _file_store_root(path: Path) -> Path | None:
    """``path`` when it is an mlruns folder, one experiment folder or one run folder; its
    ``mlruns/`` when it is the folder MLflow made that in (the client's default place: a run
    folder holding only it had read "no training log found")."""
    try:
        if path.name != "mlruns" and (path / "mlruns").is_dir() and _only_mlruns(path):
            inner = _file_store_root(path / "mlruns")
            if inner is not None:
                return inner
        if (path / "meta.yaml").is_file():
            return path if _kind(path) is not None else None
        children = sorted(c for c in path.iterdir() if c.is_dir() and _ID.fullmatch(c.name))
    except OSError:
        return None
    return path if any(_kind(c) == "experiment" for c in children[:20]) else None


#: Files beside an ``mlruns/`` that are no log (a script, its config, a README): the folder
#: is still the run's MLflow store. Any other entry (a store or a log of its own) makes it a
#: folder of several sources, for ``audit`` to walk.
_BESIDE_MLRUNS = frozenset({".py", ".yaml", ".yml", ".toml", ".sh", ".md", ".cfg", ".ini"})


def _only_mlruns(path: Path) -> bool:
    """Whether ``path`` holds its ``mlruns/`` and nothing that could be a log of its own."""
    for child in path.iterdir():
        if child.name.startswith(".") or child.name == "mlruns":
            continue
        if child.is_dir() or child.suffix.lower() not in _BESIDE_MLRUNS:
            return False
    return True


def _run_folders(root: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(run folder, its experiment's meta) of every run in ``root``."""
    kind = _kind(root) if (root / "meta.yaml").is_file() else None
    if kind == "run":
        yield root, _meta(root.parent / "meta.yaml")
        return
    experiments = [root] if kind == "experiment" else sorted(
        c for c in root.iterdir() if c.is_dir() and _kind(c) == "experiment")
    for exp in experiments:
        meta = _meta(exp / "meta.yaml")
        for run in sorted(c for c in exp.iterdir() if c.is_dir()):
            if _kind(run) == "run":
                yield run, meta


def _metric_files(folder: Path) -> Iterator[tuple[str, Path]]:
    """(key, file) of every metric of a run; a key holding "/" is a nested path."""
    seen = 0
    for file in sorted(folder.rglob("*")):
        if file.is_file():
            seen += 1
            if seen > _MAX_METRIC_FILES:
                break
            yield file.relative_to(folder).as_posix(), file


def _number(text: str) -> int | float:
    """A step as written: an integer exactly (2^62 + 1 is not a float), else a float."""
    try:
        return int(text) if len(text) <= 40 else float(text)
    except ValueError:
        return float(text)


class _StoreTooLarge(InputError):
    """The store's files together pass the read limit: the whole load stops."""


class _Budget:
    """The bytes a file store's reads may take in all (``GRPO_DOCTOR_MAX_READ_MB``, as for one
    whole file): every file is read through it, each within the limit too."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.left = max_read_bytes()

    def read(self, file: Path) -> str:
        """The file's text; an InputError for this file (too large, a FIFO, unreadable), or
        for the store once its files together pass the limit."""
        try:
            size = os.stat(file).st_size
        except OSError as exc:
            raise read_error(file, exc) from exc
        if size > self.left and size <= max_read_bytes():
            raise _StoreTooLarge(f"{self.root}: the store's files hold more than the "
                             f"{human_bytes(max_read_bytes())} grpo-doctor reads into memory "
                             "(GRPO_DOCTOR_MAX_READ_MB raises the limit)")
        text = read_text(file)
        self.left -= size
        return text


def _parse_metric_file(key: str, file: Path, notes: list[str], budget: _Budget
                       ) -> tuple[list[int | float], list[float]]:
    """Steps and values of one metric file; lines that do not parse are counted, and a cut
    last line (a run still writing) is left out."""
    try:
        text = budget.read(file)
    except _StoreTooLarge:
        raise
    except InputError as exc:
        notes.append(f"metric {key!r} left out: {exc}")
        return [], []
    lines = text.split("\n")
    if lines[-1].strip():
        notes.append(f"metric {key!r}: its last line is cut (run still being written?)")
    steps: list[int | float] = []
    values: list[float] = []
    bad = 0
    for line in lines[:-1]:
        parts = line.split()
        if not parts:
            continue
        try:
            if len(parts) not in (2, 3, 5):
                raise ValueError
            value = float(parts[1])
            step = _number(parts[2]) if len(parts) >= 3 else 0
        except ValueError:
            bad += 1
            continue
        steps.append(step)
        values.append(value)
    if bad:
        notes.append(f"metric {key!r}: {plural(bad, 'line')} that "
                     f"{agree(bad, 'is', 'are')} not 'timestamp value step' "
                     f"{agree(bad, 'was', 'were')} skipped")
    return steps, values


def _load_files(path: Path, options: LoadOptions) -> list[Run]:
    root = _file_store_root(path)
    if root is None:
        raise FormatError(f"{path}: not an MLflow file store (no experiment meta.yaml)")
    found: list[TrackedRun] = []
    notes: list[str] = []
    deleted = 0
    budget = _Budget(path)
    for run_dir, exp_meta in _run_folders(root):
        meta_notes: list[str] = []
        meta = _meta(run_dir / "meta.yaml", meta_notes)
        if _DELETED in (meta.get("lifecycle_stage"), exp_meta.get("lifecycle_stage")):
            deleted += 1
            continue
        run = TrackedRun(name=_text(meta.get("run_name")), run_id=run_dir.name,
                         group=_text(exp_meta.get("name")) or run_dir.parent.name,
                         notes=meta_notes)
        params = run_dir / "params"
        if params.is_dir():
            for key, file in _metric_files(params):
                try:
                    run.config[key] = typed_text(budget.read(file))
                except _StoreTooLarge:
                    raise
                except InputError as exc:
                    run.notes.append(f"param {key!r} left out: {exc}")
        if not run.name and (run_dir / "tags" / "mlflow.runName").is_file():
            try:
                run.name = budget.read(run_dir / "tags" / "mlflow.runName")
            except _StoreTooLarge:
                raise
            except InputError as exc:
                run.notes.append(f"its name tag left out: {exc}")
        metrics = run_dir / "metrics"
        if not metrics.is_dir():
            run.notes.append(f"{run_dir}: no metrics folder")
        else:
            steps: list[int | float] = []
            keys: list[str] = []
            values: list[float] = []
            for key, file in _metric_files(metrics):
                s, v = _parse_metric_file(key, file, run.notes, budget)
                steps += s
                values += v
                keys += [key] * len(s)
            run.steps = step_array(steps)
            run.keys = keys
            run.values = np.array(values, dtype=np.float64)
        found.append(run)
    if deleted:
        notes.append(f"{plural(deleted, 'deleted run')} left out")
    if not found:
        raise FormatError(f"{path}: no MLflow run found")
    if len(found) == 1 and not len(found[0].steps) and found[0].notes:
        raise FormatError(f"{path}: the MLflow run has no metric ({found[0].notes[0]})")
    return build_runs(found, path, FORMAT, options, notes)


def _load(path: Path, options: LoadOptions) -> list[Run]:
    if path.is_dir():
        return _load_files(path, options)
    return _load_sqlite(path, options)


IMPORTER = Importer(
    name=FORMAT,
    sniff=_sniff,
    load=_load,
    reads_folders=True,
    whole_folder=True,
)
