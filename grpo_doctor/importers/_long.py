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
from grpo_doctor.store import check_table_size, integer_steps, step_notes
from grpo_doctor.text import plural


@dataclass
class Wide:
    """A pivoted long table: one row per step, one column per metric."""

    frame: pd.DataFrame
    steps: np.ndarray
    explicit: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def concat_steps(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Step arrays joined without a float round trip: integer arrays stay int64, and a mix
    with text, floats or Python ints past int64 becomes one object array
    (:func:`~grpo_doctor.store.integer_steps` reads each value exactly)."""
    if all(np.asarray(p).dtype.kind in "iu" for p in parts) and not any(
            np.asarray(p).dtype.kind == "u" for p in parts):
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if all(np.asarray(p).dtype.kind == "f" for p in parts):
        return np.concatenate(parts)
    return np.concatenate([np.asarray(p, dtype=object) for p in parts])


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
    steps: np.ndarray | pd.Series, names: Sequence[str] | np.ndarray, values: np.ndarray,
    nan: np.ndarray, source: str = "",
) -> Wide:
    """Pivot (step, name, value) rows; a repeated (step, name) keeps the last value written.
    A FormatError naming ``source`` when the table would be absurdly sparse.

    ``steps`` as the source holds them (integers, Python ints past int64 in an object array,
    text, floats): read by :func:`~grpo_doctor.store.integer_steps`, exactly, never through
    float64 (which would merge 2^62+1 and 2^62+2 into one step). Rows without a whole step
    within the 64-bit range are dropped, and said."""
    step_int, masks = integer_steps(np.asarray(steps) if not isinstance(steps, pd.Series)
                                    else steps)
    rows = pd.DataFrame({"step": step_int, "name": list(names), "value": values, "nan": nan})
    notes = []
    bad = masks["missing"] | masks["fractional"] | masks["out_of_range"]
    if bad.any():
        notes += step_notes(steps, masks)
        rows = rows.loc[~bad]
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
