"""Wide CSV: one row per logged step, one column per metric (plain exports, pandas dumps)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.importers import Importer, LoadOptions
from grpo_doctor.metrics import find_run_column
from grpo_doctor.store import Run, build_run

_TEXT_SUFFIXES = {".csv", ".tsv", ".txt"}


def looks_like_text(head: bytes) -> bool:
    if not head or b"\x00" in head[:4096]:
        return False
    try:
        head[:4096].decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the 4 KiB boundary is still text.
        if exc.start < 4090:
            return False
    return True


def first_line(head: bytes) -> str:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    return text.split("\n", 1)[0].strip("\r")


def _sniff(path: Path, head: bytes) -> int:
    if not looks_like_text(head):
        return 0
    line = first_line(head)
    delim = "\t" if path.suffix.lower() == ".tsv" else ","
    if line.count(delim) < 1:
        return 0
    return 50 if path.suffix.lower() in _TEXT_SUFFIXES else 20


def read_csv_frame(path: Path):  # -> pandas.DataFrame, dict of explicit-NaN masks
    """Read a CSV fast (pyarrow) keeping logged NaN apart from empty cells; pandas as fallback."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(
                null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=True
            ),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError):
        table = None
    if table is not None:
        data = {}
        explicit = {}
        for name, col in zip(table.column_names, table.columns):
            if pa.types.is_floating(col.type) or pa.types.is_integer(col.type):
                vals = col.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
                nulls = col.is_null().to_numpy(zero_copy_only=False)
                nan = np.isnan(vals) & ~nulls
                if nan.any():
                    explicit[name] = nan
                data[name] = vals
            elif pa.types.is_boolean(col.type):
                data[name] = col.to_numpy(zero_copy_only=False).astype(np.float64)
            else:
                data[name] = col.to_pandas()
        return pd.DataFrame(data), explicit
    # Fallback for ragged rows and non-UTF-8 bytes: the csv module is forgiving.
    try:
        text = path.read_bytes().decode("utf-8-sig", errors="replace")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    csv.field_size_limit(1 << 30)
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not rows:
        raise FormatError(f"{path}: the file is empty")
    header = rows[0]
    width = len(header)
    body = [(r + [""] * width)[:width] for r in rows[1:] if r]
    frame = pd.DataFrame(body, columns=header, dtype="string")
    frame = frame.replace("", pd.NA)
    return frame, {}


def _load(path: Path, options: LoadOptions) -> list[Run]:
    frame, explicit = read_csv_frame(path)
    if frame.shape[1] < 2 and len(frame.columns) <= 1:
        raise FormatError(f"{path}: a CSV needs a header and at least one metric column")
    if len(frame) == 0:
        raise FormatError(f"{path}: the CSV has a header but no rows")
    run_col = find_run_column(frame.columns)
    if run_col is not None and frame[run_col].nunique(dropna=True) > 1:
        # A file holding several runs (one column names each row's run): one Run per value.
        runs = []
        keys = frame[run_col].astype("string").fillna("")
        for key in pd.unique(keys):
            rows = (keys == key).to_numpy()
            part = frame.loc[rows].drop(columns=[run_col]).reset_index(drop=True)
            nan = {k: v[rows] for k, v in explicit.items()}
            runs.append(
                build_run(
                    part, name=str(key) or path.stem, source=str(path), format="csv",
                    step_column=options.step_column, column_map=options.column_map,
                    explicit_nan=nan,
                )
            )
        return runs
    return [
        build_run(
            frame, name=path.stem, source=str(path), format="csv",
            step_column=options.step_column, column_map=options.column_map,
            explicit_nan=explicit,
        )
    ]


IMPORTER = Importer(
    name="csv",
    description="wide CSV, one row per logged step (step column detected, else row order)",
    sniff=_sniff,
    load=_load,
)
