"""Hugging Face Trackio: a project's SQLite file (``<project>.db``), or the folder holding them.

Trackio keeps one SQLite database per project in ``TRACKIO_DIR`` (default
``~/.cache/huggingface/trackio``). Read directly with stdlib ``sqlite3``, never through the
trackio package. How trackio (0.43, checked against databases its client wrote) stores a run:

* ``metrics`` (id, run_id, timestamp, run_name, step, metrics): one row per ``trackio.log``
  call, ``metrics`` the logged dict as JSON (nested dicts stay nested: joined here with "/";
  NaN and +-inf written as the strings "NaN", "Infinity", "-Infinity"; media and histograms
  are dicts with a ``_type``, left out). Databases written before trackio 0.24 have no
  ``run_id``: a run is then its name.
* ``configs`` (run_id, run_name, config): the run's config as JSON, with trackio's own
  ``_Username``, ``_Created`` and ``_Group`` entries (left out of the config).

Every run becomes a Run named after it (qualified by its project where names repeat; ``--run``
picks one by name or run id). The database is opened read-only (trackio writes it in WAL mode,
which lets a reader in while a run is still logging).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from grpo_doctor.errors import FormatError
from grpo_doctor.importers._common import head_of, to_number
from grpo_doctor.importers._long import Wide
from grpo_doctor.importers.base import Importer, LoadOptions
from grpo_doctor.importers.tracker_store import (
    TrackedRun,
    build_runs,
    open_sqlite,
    read_each,
    scan_rows,
    sqlite_tables,
    tables_of,
    text_of,
    unreadable_sqlite,
)
from grpo_doctor.store import Run, check_table_size, step_array
from grpo_doctor.text import agree, plural

FORMAT = "trackio"
_METRIC_COLUMNS = {"run_name", "step", "metrics"}
_MAX_PROJECTS = 1000


def _is_trackio(tables: Mapping[str, set[str]] | None) -> bool:
    return tables is not None and tables.get("metrics", set()) >= _METRIC_COLUMNS


def _project_files(folder: Path, damaged: bool = False) -> list[Path]:
    """The Trackio project databases directly in ``folder``; with ``damaged``, the SQLite
    files there that cannot be opened too (loading them says why, as a note)."""
    try:
        files = sorted(f for f in folder.iterdir() if f.suffix == ".db" and f.is_file())
    except OSError:
        return []
    found = []
    for f in files[:_MAX_PROJECTS]:
        head = head_of(f)
        if _is_trackio(sqlite_tables(f, head)) or (damaged and unreadable_sqlite(f, head)):
            found.append(f)
    return found


def _sniff(path: Path, head: bytes) -> int:
    if path.is_dir():
        return 85 if _project_files(path) else 0
    return 95 if _is_trackio(sqlite_tables(path, head)) else 0


def _numbers(obj: Mapping[str, Any], prefix: str, out: dict[str, float]) -> None:
    """The numbers of a logged dict, nested keys joined with "/"; media, histograms, tables
    (dicts with a ``_type``), text and lists left out."""
    for key, value in obj.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            if "_type" not in value:
                _numbers(value, name, out)
            continue
        num = to_number(value)
        if num is not None:
            out[name] = num


def _json_parsers() -> list[Any]:
    """orjson first where it is installed (trackio writes with it, and it parses ~3x faster
    than the standard library; it refuses the NaN token, which json then reads)."""
    try:
        import orjson
    except ImportError:
        return [json.loads]
    return [orjson.loads, json.loads]


def _decode_rows(blobs: list[Any]) -> tuple[list[Any], int]:
    """The logged dicts: all rows parsed in one call when they are all valid JSON, else row
    by row (a row that is not a JSON object counts as bad and is None)."""
    # SQLite keeps any type in any cell: only text and blobs can hold a logged dict (an
    # integer cell is not one, and bytes(10**12) would allocate a terabyte).
    texts = [b.encode("utf-8", "surrogatepass") if isinstance(b, str)
             else bytes(b) if isinstance(b, (bytes, bytearray, memoryview)) else b"null"
             for b in blobs]
    joined = b"[" + b",".join(texts) + b"]"
    for loads in _json_parsers():
        try:
            parsed = loads(joined)
        except (ValueError, RecursionError):
            continue
        if len(parsed) == len(texts) and all(isinstance(p, dict) for p in parsed):
            return parsed, 0
        break
    out: list[Any] = []
    bad = 0
    for text in texts:
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            obj = None
        if not isinstance(obj, dict):
            obj = None
            bad += 1
        out.append(obj)
    return out, bad


def _read_project(path: Path, notes: list[str]) -> list[TrackedRun]:
    project = path.stem
    with open_sqlite(path, notes) as conn:
        tables = tables_of(conn)
        if not _is_trackio(tables):
            raise FormatError(f"{path}: not a Trackio database (no metrics table with "
                              "run_name, step and metrics columns)")
        by_id = "run_id" in tables["metrics"]
        ident = "run_id" if by_id else "run_name"
        rows = scan_rows(
            conn, f"SELECT {ident}, run_name, step, metrics FROM metrics ORDER BY id",
            notes, "logged rows", path)
        configs: dict[str, Any] = {}
        config_cols = tables.get("configs", set())
        if {"run_name", "config"} <= config_cols:
            cident = "run_id" if "run_id" in config_cols and by_id else "run_name"
            try:
                for key, blob in conn.execute(f"SELECT {cident}, config FROM configs"):
                    configs[text_of(key)] = blob
            except sqlite3.Error:
                notes.append("the configs table could not be read: runs without config")
    runs: dict[str, TrackedRun] = {}
    logged_rows: dict[str, tuple[list[Any], list[dict[str, Any]]]] = {}
    dicts, bad = _decode_rows([r[3] for r in rows])
    for (raw_key, name, step, _), logged in zip(rows, dicts):
        key = text_of(raw_key)  # SQLite's cells hold any type: run 1 and run "1" are one
        if key not in runs:
            runs[key] = TrackedRun(name=text_of(name), run_id=key, group=project)
            logged_rows[key] = ([], [])
        if logged is not None and step is not None:
            logged_rows[key][0].append(step)  # as stored: build_run reads it exactly
            logged_rows[key][1].append(logged)
    if bad:
        notes.append(f"{plural(bad, 'logged row')} that "
                     f"{agree(bad, 'is not a JSON object was', 'are not JSON objects were')} "
                     "skipped")
    for key, run in runs.items():
        steps, logged = logged_rows[key]
        if logged:
            run.wide = _wide(steps, logged, str(path))
        run.config = _config(configs.get(key))
    return list(runs.values())


def _wide(steps: list[Any], logged: list[dict[str, Any]], source: str = "") -> Wide:
    """One row per ``trackio.log`` call, one float column per logged number. Columns that
    pandas reads as numbers are taken whole; the others (text, "NaN" strings, nested dicts,
    media) value by value. The table's size is checked (``check_table_size``) before it is
    allocated: a project logging a new key at each step is refused, not tabulated."""
    import pandas as pd

    n = len(logged)
    keys: dict[str, None] = {}
    for row in logged:
        keys.update(dict.fromkeys(row))
    check_table_size(source, n, len(keys), sum(len(row) for row in logged))
    raw = pd.DataFrame.from_records(logged, columns=list(keys))
    columns: dict[str, np.ndarray] = {}
    explicit: dict[str, np.ndarray] = {}
    cells: list[tuple[int, str, float]] = []  # the values of the other columns, found first
    for col in raw.columns:
        series = raw[col]
        if series.dtype.kind in "fiub":
            columns[str(col)] = series.to_numpy(dtype=np.float64)
            continue
        for i, value in enumerate(series.to_numpy(dtype=object)):
            found: dict[str, float] = {}
            if isinstance(value, Mapping):
                _numbers(value, str(col), found)
            elif isinstance(value, (str, bool, int, float)) and not (
                    isinstance(value, float) and value != value):  # NaN: a key not logged
                num = to_number(value)
                if num is not None:
                    found[str(col)] = num
            cells += [(i, name, num) for name, num in found.items()]
    names = dict.fromkeys(name for _, name, _ in cells if name not in columns)
    check_table_size(source, n, len(columns) + len(names),
                     len(cells) + sum(len(row) for row in logged))
    for i, name, num in cells:
        columns.setdefault(name, np.full(n, np.nan))[i] = num
        if num != num:
            explicit.setdefault(name, np.zeros(n, dtype=bool))[i] = True
    frame = pd.DataFrame(columns) if columns else pd.DataFrame(index=range(n))
    return Wide(frame, step_array(steps), explicit)


def _config(blob: Any) -> dict[str, Any]:
    if blob is None:
        return {}
    try:
        config = json.loads(blob)
    except (ValueError, RecursionError, TypeError):
        return {}
    if not isinstance(config, dict):
        return {}
    return {k: v for k, v in config.items() if not str(k).startswith("_")}


def _load(path: Path, options: LoadOptions) -> list[Run]:
    notes: list[str] = []
    if path.is_dir():
        files = _project_files(path, damaged=True)
        if not files:
            raise FormatError(f"{path}: no Trackio project database (<project>.db) in the "
                              "folder")
    else:
        files = [path]
    found = read_each(files, lambda f: _read_project(f, notes), notes)
    return build_runs(found, path, FORMAT, options, notes)


IMPORTER = Importer(
    name=FORMAT,
    sniff=_sniff,
    load=_load,
    reads_folders=True,
)
