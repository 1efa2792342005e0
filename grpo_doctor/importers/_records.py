"""Logged dicts into a frame, for the importers that read dicts: JSON lines, trainer_state.json
entries and printed console dicts. Nested keys are joined with "/", values become floats
(``_common.to_number``) and whatever is not a number is left out, except a reward term's
null: TRL logs ``None`` for a reward function that returned None for every completion (a
dataset column it reads that is missing), and that is evidence, kept as a logged NaN.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from grpo_doctor.importers._common import to_number
from grpo_doctor.store import check_table_size

Record = dict[str, float]

#: A reward term's key (TRL's ``rewards/<function>/mean``): a null there is a NaN logged.
_REWARD_TERM = re.compile(r"(^|/)rewards/[^/]+/(mean|std)$")


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


#: ms-swift's progress key ("global_step/max_steps": "12/547"), a step where no other is.
PROGRESS_KEY = "global_step/max_steps"
_PROGRESS_VALUE = re.compile(r"\s*(\d+)\s*/\s*\d+\s*")


def progress_step(value: Any) -> int | None:
    """The step of a ``global_step/max_steps`` value ("12/547" -> 12), else None."""
    m = _PROGRESS_VALUE.fullmatch(value) if isinstance(value, str) else None
    return int(m.group(1)) if m else None


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
            out[str(key)] = value
            continue
        num = to_number(value)
        if num is not None:
            out[str(key)] = num
        elif value is None and _REWARD_TERM.search(str(key)):
            out[str(key)] = float("nan")
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


def log_history_records(
    history: list[Any],
) -> tuple[list[dict[str, float]], dict[str, Any], int]:
    """A Trainer's ``log_history`` (``trainer_state.json``, ``trainer.state.log_history``): one
    record per step (train and eval entries merged), the run summary (the final
    ``train_runtime`` entry), and how many entries were skipped (not a dict, no step)."""
    by_step: dict[float, dict[str, float]] = {}
    summary: dict[str, Any] = {}
    skipped = 0
    for entry in history:
        if not isinstance(entry, dict):
            skipped += 1
            continue
        if "train_runtime" in entry:
            summary.update(numeric_record(entry))
            continue
        record = numeric_record(entry)
        step = record.get("step")
        # (True is no step: 40 entries had collapsed into step 1; inf none either, as NaN.)
        if step is None or not math.isfinite(step) or isinstance(entry.get("step"), bool):
            skipped += 1
            continue
        by_step.setdefault(step, {}).update(record)
    return list(by_step.values()), summary, skipped
