"""Long ("tidy") CSV: one row per (step, metric, value), pivoted to one column per metric.

Written by pandas ``melt``, tbparse and many hand-rolled exporters. A run column (``run``,
``run_id``, ``run_name``) splits the file into several runs. ``long_frame`` is shared with the
TensorBoard CSV importer, whose files are one metric each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from grpo_doctor.errors import FormatError
from grpo_doctor.importers import Importer, LoadOptions
from grpo_doctor.importers._common import looks_like_text, to_number
from grpo_doctor.importers.csv_table import read_csv_frame
from grpo_doctor.importers.exports import csv_header
from grpo_doctor.metrics import find_step_column
from grpo_doctor.store import Run, build_run, check_table_size

_NAME_COLUMNS = ["metric", "key", "name", "tag", "metric_name", "series"]
_VALUE_COLUMNS = ["value", "val", "metric_value", "y"]
_RUN_COLUMNS = ["run", "run_id", "run_name"]


@dataclass
class Wide:
    """A pivoted long table: one row per step, one column per metric."""

    frame: pd.DataFrame
    steps: np.ndarray
    explicit: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def numeric_values(
    values: pd.Series, explicit: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A column as floats, with the cells where a NaN was written."""
    if pd.api.types.is_numeric_dtype(values.dtype):
        arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
        nan = np.zeros(len(arr), bool) if explicit is None else np.asarray(explicit, bool)
        return arr, nan
    parsed = [to_number(v) if isinstance(v, str) else None for v in values.tolist()]
    arr = np.array([np.nan if v is None else v for v in parsed], dtype=np.float64)
    nan = np.array([v is not None and v != v for v in parsed], dtype=bool)
    return arr, nan


def long_frame(
    steps: np.ndarray, names: Sequence[str], values: np.ndarray, nan: np.ndarray,
    source: str = "",
) -> Wide:
    """Pivot (step, name, value) rows; a repeated (step, name) keeps the last value written.
    A FormatError naming ``source`` when the table would be absurdly sparse."""
    rows = pd.DataFrame({"step": steps, "name": list(names), "value": values, "nan": nan})
    notes = []
    bad = ~np.isfinite(rows["step"].to_numpy(dtype=np.float64))
    if bad.any():
        notes.append(f"{int(bad.sum())} row(s) without a step were dropped")
        rows = rows.loc[~bad]
    rows["step"] = np.round(rows["step"].to_numpy(dtype=np.float64)).astype(np.int64)
    deduped = rows.drop_duplicates(["step", "name"], keep="last")
    if len(deduped) < len(rows):
        notes.append(
            f"{len(rows) - len(deduped)} repeated (step, metric) row(s): the last one was kept"
        )
    order = list(pd.unique(deduped["name"]))
    check_table_size(source, deduped["step"].nunique(), len(order), len(deduped))
    wide = deduped.pivot(index="step", columns="name", values="value").reindex(columns=order)
    nan_wide = deduped.pivot(index="step", columns="name", values="nan").reindex(columns=order)
    explicit = {}
    for col in order:
        mask = nan_wide[col].fillna(False).to_numpy(dtype=bool)
        if mask.any():
            explicit[col] = mask
    frame = wide.reset_index(drop=True).astype(np.float64)
    frame.columns = [str(c) for c in frame.columns]
    return Wide(frame, wide.index.to_numpy(), explicit, notes)


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
    steps, _ = numeric_values(frame[step_col])
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
