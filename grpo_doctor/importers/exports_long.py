"""Long ("tidy") CSV: one row per (step, metric, value), pivoted to one column per metric.

Written by pandas ``melt``, tbparse and many hand-rolled exporters. A run column (``run``,
``run_id``, ``run_name``) splits the file into several runs; ``_long.long_frame`` pivots.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from grpo_doctor.errors import FormatError
from grpo_doctor.importers._common import looks_like_text
from grpo_doctor.importers._csv import csv_header, read_csv_frame
from grpo_doctor.importers._long import long_frame, numeric_values
from grpo_doctor.importers.base import Importer, LoadOptions
from grpo_doctor.metrics import find_step_column
from grpo_doctor.store import Run, build_run

_NAME_COLUMNS = ["metric", "key", "name", "tag", "metric_name", "series"]
_VALUE_COLUMNS = ["value", "val", "metric_value", "y"]
_RUN_COLUMNS = ["run", "run_id", "run_name"]


def _find(columns: Sequence[str], wanted: Sequence[str]) -> str | None:
    by_lower = {c.strip().lower(): c for c in columns}
    for name in wanted:
        if name in by_lower:
            return by_lower[name]
    return None


def _layout(columns: Sequence[str]) -> tuple[str, str, str, str | None] | None:
    """The (step, name, value, run) columns of a long table, or None if it is not one."""
    step = find_step_column(columns)
    name = _find(columns, _NAME_COLUMNS)
    value = _find(columns, _VALUE_COLUMNS)
    if step is None or name is None or value is None:
        return None
    return step, name, value, _find(columns, _RUN_COLUMNS)


def _sniff(path: Path, head: bytes) -> int:
    if path.is_dir() or path.suffix.lower() not in (".csv", ".txt") or not looks_like_text(head):
        return 0
    header = csv_header(head)
    return 85 if _layout(header) is not None and len(header) <= 8 else 0


def _load(path: Path, options: LoadOptions) -> list[Run]:
    read_notes: list[str] = []
    frame, explicit = read_csv_frame(path, read_notes)
    layout = _layout([str(c) for c in frame.columns])
    if layout is None:
        raise FormatError(f"{path}: a long CSV needs step, metric (or key) and value columns")
    if len(frame) == 0:
        raise FormatError(f"{path}: the CSV has a header but no rows")
    step_col, name_col, value_col, run_col = layout
    steps = frame[step_col].to_numpy()  # as read: exact (see _long.long_frame)
    values, nan = numeric_values(frame[value_col], explicit.get(value_col))
    names = frame[name_col].astype("string").fillna("").str.strip()
    runs = frame[run_col].astype("string").fillna("") if run_col else None
    keys = list(pd.unique(runs)) if runs is not None else [""]
    out = []
    for key in keys:
        rows = (runs == key).to_numpy(dtype=bool) if runs is not None else slice(None)
        wide = long_frame(steps[rows], names.to_numpy()[rows], values[rows], nan[rows],
                          str(path))
        out.append(
            build_run(
                wide.frame, name=str(key) or path.stem, source=str(path), format="long-csv",
                steps=wide.steps, column_map=options.column_map, explicit_nan=wide.explicit,
                notes=read_notes + wide.notes,
            )
        )
    return out


IMPORTER = Importer(
    name="long-csv",
    sniff=_sniff,
    load=_load,
)
