"""Parquet: a run's history table, as a W&B history export writes it (``_step`` + metric columns).

A file, or a folder of part files (read in name order as one run). Nested (struct) columns are
flattened with "/"; list, binary and other non-scalar columns are left out. A null cell is a
gap and a NaN cell is NaN evidence. A ``<stem>.json`` beside the file (or ``run.json`` in a
folder) holding ``{"name", "config", "summary"}`` names the run and gives its config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from grpo_doctor.errors import FormatError, GrpoDoctorError
from grpo_doctor.files import arrow_input, human_bytes, max_read_bytes
from grpo_doctor.importers._common import file_run_name, read_json
from grpo_doctor.importers.base import Importer, LoadOptions
from grpo_doctor.metrics import find_step_column
from grpo_doctor.store import Run, build_run
from grpo_doctor.text import plural

_MAGIC = b"PAR1"
#: A table past these is refused before it is decompressed: a parquet file of a megabyte can
#: expand to a hundred million rows, which takes minutes and gigabytes to tabulate. 1M steps x
#: 64 metrics (or 10M x 6) is still read.
MAX_ROWS = 1 << 24
MAX_CELLS = 1 << 26


def _part_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.suffix.lower() == ".parquet" and p.is_file())
    except OSError:
        return []


def _sniff(path: Path, head: bytes) -> int:
    if path.is_dir():
        return 80 if _part_files(path) else 0
    return 95 if head.startswith(_MAGIC) else 0


def _one_line(exc: BaseException) -> str:
    """Arrow's messages span lines; an error is one line."""
    return " ".join(str(exc).split())


def _check_expansion(files: list[Path]) -> None:
    """Refuse, from the files' metadata alone, a table too large to decompress."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = cells = size = 0
    for f in files:
        try:
            with arrow_input(f) as source:
                meta = pq.read_metadata(source)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise FormatError(f"{f}: not a readable parquet file ({_one_line(exc)})") from exc
        rows += meta.num_rows
        cells += meta.num_rows * max(meta.num_columns, 1)
        size += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    where = files[0] if len(files) == 1 else files[0].parent
    if rows > MAX_ROWS or cells > MAX_CELLS:
        raise FormatError(f"{where}: the parquet data expands to {rows:,} rows x "
                          f"{plural(cells // max(rows, 1), 'column')}, more than grpo-doctor "
                          f"tabulates ({MAX_ROWS:,} rows, {MAX_CELLS:,} cells); not a training "
                          f"log?")
    if size > max_read_bytes():
        raise FormatError(f"{where}: the parquet data expands to {human_bytes(size)}, more "
                          f"than the {human_bytes(max_read_bytes())} grpo-doctor reads into "
                          f"memory (GRPO_DOCTOR_MAX_READ_MB raises the limit)")


def _read_table(files: list[Path]):  # -> pyarrow.Table
    import pyarrow as pa
    import pyarrow.parquet as pq

    _check_expansion(files)
    tables = []
    for f in files:
        try:
            with arrow_input(f) as source:
                table = pq.read_table(source)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise FormatError(f"{f}: not a readable parquet file ({_one_line(exc)})") from exc
        while any(pa.types.is_struct(t) for t in table.schema.types):
            table = table.flatten()
        tables.append(table)
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowException, ValueError) as exc:
        folder = files[0].parent
        raise FormatError(
            f"{folder}: the parquet parts do not fit together ({_one_line(exc)})"
        ) from exc


def _columns(table: Any, step: str | None = None
             ) -> tuple[pd.DataFrame, dict[str, np.ndarray], list[str]]:
    """Scalar columns as a frame (floats for numbers), logged-NaN masks, and columns left out.
    The ``step`` column, when it holds integers, is kept exact (2^62 + k is not a float)."""
    import pyarrow as pa

    data: dict[str, Any] = {}
    explicit: dict[str, np.ndarray] = {}
    skipped = []
    for name, col in zip(table.column_names, table.columns, strict=True):
        key = str(name)
        kind = col.type
        if key == step and pa.types.is_integer(kind):
            data[key] = (col.to_numpy() if not col.null_count
                         else pd.Series(col.to_pylist(), dtype=object))
        elif pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_boolean(kind):
            values = col.to_numpy(zero_copy_only=False).astype(np.float64)
            nulls = col.is_null().to_numpy(zero_copy_only=False)
            values[nulls] = np.nan
            nan = np.isnan(values) & ~nulls
            if nan.any():
                explicit[key] = nan
            data[key] = values
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            data[key] = col.to_pandas()
        else:
            skipped.append(name)
    return pd.DataFrame(data), explicit, skipped


def _metadata(path: Path) -> dict[str, Any]:
    meta = path / "run.json" if path.is_dir() else path.with_suffix(".json")
    if not meta.is_file():
        return {}
    try:
        obj = read_json(meta, "not valid JSON")
    except GrpoDoctorError:
        return {"_note": f"{meta.name} is not valid JSON and was ignored"}
    return obj if isinstance(obj, dict) else {}


def _load(path: Path, options: LoadOptions) -> list[Run]:
    files = _part_files(path) if path.is_dir() else [path]
    if not files:
        raise FormatError(f"{path}: no .parquet file in the folder")
    table = _read_table(files)
    step = options.step_column or find_step_column([str(c) for c in table.column_names])
    frame, explicit, skipped = _columns(table, step)
    if frame.empty:
        raise FormatError(f"{path}: the parquet file has no rows")
    meta = _metadata(path)
    notes = []
    if skipped:
        notes.append(f"{plural(len(skipped), 'non-scalar column')} left out: "
                     f"{', '.join(skipped[:5])}")
    if "_note" in meta:
        notes.append(meta["_note"])
    fetched = meta.get("notes")  # what the fetch could not take as it was
    notes += [n for n in fetched if isinstance(n, str)] if isinstance(fetched, list) else []
    config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    summary = meta.get("summary") if isinstance(meta.get("summary"), dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) and meta.get("name") else None
    return [
        build_run(
            frame, name=name or file_run_name(path), source=str(path), format="parquet",
            step_column=options.step_column, column_map=options.column_map,
            explicit_nan=explicit, config=config, summary=summary, notes=notes,
        )
    ]


IMPORTER = Importer(
    name="parquet",
    sniff=_sniff,
    load=_load,
    reads_folders=True,
)
