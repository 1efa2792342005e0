"""W&B history rows (``Run.scan_history``) into a parquet table: scalar columns only (media,
histograms and text are left out and named), sorted by ``_step``, gaps null and logged NaNs
kept.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

from grpo_doctor.store import check_table_size


def _scalar_columns(rows: Sequence[Mapping[str, Any]], source: str = ""
                    ) -> tuple[dict[str, list[Any]], set[str]]:
    """Rows -> one list per key (None where a row lacks it). Nested dicts become ``a.b``;
    media, histograms, strings and lists are left out (their keys are returned).

    The cells are gathered sparsely first: a history that logs a new key at each step is
    refused (``check_table_size``) before its steps x keys table is allocated."""
    n = len(rows)
    cells: dict[str, list[tuple[int, Any]]] = {}
    dropped: set[str] = set()

    def put(i: int, key: str, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool):
            value = float(value)
        elif isinstance(value, dict):
            if "_type" in value:
                dropped.add(key)
                return
            for k, v in value.items():
                put(i, f"{key}.{k}", v)
            return
        elif not isinstance(value, (int, float)):
            dropped.add(key)
            return
        cells.setdefault(key, []).append((i, value))

    for i, row in enumerate(rows):
        for key, value in row.items():
            put(i, str(key), value)
    check_table_size(source, n, len(cells), sum(len(c) for c in cells.values()))
    cols: dict[str, list[Any]] = {}
    for key, found in cells.items():
        col = cols[key] = [None] * n
        for i, value in found:
            col[i] = value
    return cols, dropped - set(cols)


def _int64_steps(values: Sequence[Any]) -> bool:
    """Whether every ``_step`` is a whole number int64 can hold exactly (else the column is
    written as text, and the importer drops and notes the rows it cannot use)."""
    return all((isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < 1 << 63)
               or (isinstance(v, float) and v.is_integer() and abs(v) < 2.0 ** 53)
               for v in values)


def history_table(rows: Sequence[Mapping[str, Any]], source: str = ""
                  ) -> tuple[bytes, int, list[str]]:
    """Parquet bytes of the history rows (sorted by ``_step``), the row count, and the keys
    left out. A key a row lacks is null (a gap); a logged NaN stays NaN."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if rows and all(isinstance(r.get("_step"), (int, float)) for r in rows):
        rows = sorted(rows, key=lambda r: r["_step"])
    cols, dropped = _scalar_columns(rows, source)
    arrays: dict[str, Any] = {}
    order = (["_step"] if "_step" in cols else []) + [k for k in cols if k != "_step"]
    for key in order:
        values = cols[key]
        if key == "_step" and _int64_steps([v for v in values if v is not None]):
            arrays[key] = pa.array([None if v is None else int(v) for v in values],
                                   type=pa.int64())
        elif key == "_step":  # past int64 or past a float's exact range: each kept as text,
            # read back exactly (the importer drops and notes what no int64 can hold)
            arrays[key] = pa.array([None if v is None else repr(v) for v in values],
                                   type=pa.string())
        else:
            arrays[key] = pa.array([None if v is None else _as_float(v) for v in values],
                                   type=pa.float64())
    table = pa.table(arrays) if arrays else pa.table({"_step": pa.array([], pa.int64())})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue(), table.num_rows, sorted(dropped)


def _as_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an int too large for a float
        return math.inf if value > 0 else -math.inf
