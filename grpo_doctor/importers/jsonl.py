"""JSON lines: one JSON object per line (custom loggers, ms-swift ``logging.jsonl``, wandb dumps).

Nested objects are flattened with "/" (``{"train": {"reward": 1}}`` -> ``train/reward``). Lines
that are not JSON objects are counted and noted, and only fatal when no line parses.

The record helpers here (``to_number``, ``flatten``, ``records_frame``) are shared by the other
importers that read dicts: trainer_state.json entries and printed console dicts.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from grpo_doctor.errors import FormatError
from grpo_doctor.files import read_bytes
from grpo_doctor.importers import Delta, Importer, Incremental, LoadOptions
from grpo_doctor.importers.csv_table import looks_like_text
from grpo_doctor.importers.incremental import (
    TextPosition,
    load_prefix,
    read_lines,
    rows_from_records,
)
from grpo_doctor.live_store import Rows
from grpo_doctor.store import Run, build_run, check_table_size

_NUMBER = re.compile(
    r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf|infinity)(?:\(ind\))?",
    re.IGNORECASE,
)

Record = dict[str, float]


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


def flatten(obj: Mapping[str, Any], sep: str = "/", prefix: str = "") -> dict[str, Any]:
    """Nested mappings flattened into one level, keys joined with ``sep``."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = f"{prefix}{sep}{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            out.update(flatten(value, sep, name))
        else:
            out[name] = value
    return out


def numeric_record(obj: Mapping[str, Any], drop: Iterable[str] = (), *,
                   exact_ints: bool = False) -> Record:
    """The numeric entries of a (flat) mapping as floats; other entries are left out.

    ``exact_ints``: an integer that a float cannot hold exactly but int64 may (2^53 < |v| <
    2^64) stays an int, so that a step of 2^62 + k stays itself (``records_frame`` keeps it)."""
    skip = set(drop)
    out: Record = {}
    for key, value in obj.items():
        if key in skip:
            continue
        if exact_ints and type(value) is int and 1 << 53 < abs(value) < 1 << 64:
            out[str(key)] = value  # type: ignore[assignment]
            continue
        num = to_number(value)
        if num is not None:
            out[str(key)] = num
    return out


def records_frame(
    records: Sequence[Mapping[str, float]], source: str = ""
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """One row per record, one float column per key, and the cells where a NaN was logged.

    A key missing from a record is a gap; a key present with a NaN value is NaN evidence. A
    FormatError naming ``source`` when the table would be absurdly sparse (``check_table_size``).
    """
    columns: dict[str, int] = {}
    for record in records:
        for key in record:
            columns.setdefault(key, len(columns))
    check_table_size(source, len(records), len(columns), sum(len(r) for r in records))
    data = np.full((len(records), len(columns)), np.nan)
    nan_cells: list[tuple[int, int]] = []
    exact: dict[str, dict[int, int]] = {}  # integers beyond 2^53, kept for a step column
    for i, record in enumerate(records):
        for key, value in record.items():
            j = columns[key]
            if type(value) is int:  # from numeric_record(..., exact_ints=True)
                exact.setdefault(key, {})[i] = value
                value = float(value)
            data[i, j] = value
            if value != value:
                nan_cells.append((i, j))
    names = list(columns)
    explicit: dict[str, np.ndarray] = {}
    for i, j in nan_cells:
        explicit.setdefault(names[j], np.zeros(len(records), dtype=bool))[i] = True
    frame = pd.DataFrame(data, columns=names)
    for key, cells in exact.items():
        column = frame[key].astype(object)
        for i, value in cells.items():
            column.iat[i] = value
        frame[key] = column
    return frame, explicit


def _parse_lines(text: str) -> tuple[list[Record], int]:
    records: list[Record] = []
    bad = 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            bad += 1
            continue
        if not isinstance(obj, dict):
            bad += 1
            continue
        # verl's file logger writes {"step": N, "data": {metrics}}: the metrics are the data.
        if set(obj) == {"step", "data"} and isinstance(obj["data"], dict):
            obj = {"step": obj["step"], **obj["data"]}
        record = numeric_record(flatten(obj), exact_ints=True)
        if record:
            records.append(record)
    return records, bad


def _first_line_is_object(head: bytes) -> bool:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if not line.startswith("{"):
            return False
        try:
            return isinstance(json.loads(line), dict)
        except (ValueError, RecursionError):
            # A first line longer than the head is cut; an object start is still telling.
            return len(line) >= len(text) - 2 and line.startswith('{"')
    return False


def _sniff(path: Path, head: bytes) -> int:
    if path.is_dir() or not looks_like_text(head) or not _first_line_is_object(head):
        return 0
    return 85 if path.suffix.lower() in {".jsonl", ".ndjson"} else 80


def _load(path: Path, options: LoadOptions) -> list[Run]:
    records, bad = _parse_lines(read_text(path))
    if not records:
        raise FormatError(f"{path}: no line is a JSON object with a numeric value")
    frame, explicit = records_frame(records, str(path))
    notes = [f"{bad} line(s) were not JSON objects and were skipped"] if bad else []
    return [
        build_run(
            frame, name=path.stem, source=str(path), format="jsonl",
            step_column=options.step_column, column_map=options.column_map,
            explicit_nan=explicit, notes=notes,
        )
    ]


# --- a growing file, read from where the last read stopped (``watch``) ----------------------------


@dataclass(frozen=True)
class _Tail:
    """Where reading a growing JSON-lines file resumes: the lines read, the records so far."""

    at: TextPosition = field(default_factory=TextPosition)
    count: int = 0


def _read_new(path: Path, state: _Tail | None, options: LoadOptions, final: bool) -> Delta:
    state = state or _Tail()
    text, at = read_lines(path, state.at, final)
    if text is None:
        return Delta(Rows(), _Tail(at, state.count))
    records, _bad = _parse_lines(text)
    rows = rows_from_records(records, first_index=state.count)
    return Delta(rows, _Tail(at, state.count + len(records)))


def _load_read(path: Path, state: _Tail | None, options: LoadOptions) -> Run | None:
    return load_prefix(_load, path, state.at.offset, options) if state is not None else None


IMPORTER = Importer(
    name="jsonl",
    description="JSON lines, one object per logged step (nested keys joined with '/')",
    sniff=_sniff,
    load=_load,
    incremental=Incremental(read=_read_new, load=_load_read),
)
