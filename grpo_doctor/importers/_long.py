"""Long rows (step, key, value) into a wide frame, for the importers that read long data: long
CSV exports, TensorBoard's CSV and the tracker stores. A value logged twice at one step: the
last one logged is kept, and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from grpo_doctor.importers._common import to_number
from grpo_doctor.store import check_table_size
from grpo_doctor.text import agree, plural


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
    steps: np.ndarray, names: Sequence[str] | np.ndarray, values: np.ndarray, nan: np.ndarray,
    source: str = "",
) -> Wide:
    """Pivot (step, name, value) rows; a repeated (step, name) keeps the last value written.
    A FormatError naming ``source`` when the table would be absurdly sparse."""
    rows = pd.DataFrame({"step": steps, "name": list(names), "value": values, "nan": nan})
    notes = []
    bad = ~np.isfinite(rows["step"].to_numpy(dtype=np.float64))
    if bad.any():
        notes.append(f"{plural(int(bad.sum()), 'row')} without a step "
                     f"{agree(int(bad.sum()), 'was', 'were')} dropped")
        rows = rows.loc[~bad]
    rows["step"] = np.round(rows["step"].to_numpy(dtype=np.float64)).astype(np.int64)
    deduped = rows.drop_duplicates(["step", "name"], keep="last")
    if len(deduped) < len(rows):
        notes.append(
            f"{plural(len(rows) - len(deduped), 'repeated (step, metric) row')}: the last one "
            "was kept"
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
