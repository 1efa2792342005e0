"""CSV text into a numeric frame, for the importers that read CSV (wide tables, tracker exports,
long tables, TensorBoard's CSV): pyarrow's reader, a column count checked before reading, and
the cells where a NaN was written.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd

from grpo_doctor.errors import FormatError
from grpo_doctor.files import arrow_input, check_size, read_bytes, read_error
from grpo_doctor.importers._common import first_line
from grpo_doctor.text import plural

#: Columns a CSV header may hold; more is not a training log (and would take minutes to read).
MAX_COLUMNS = 20_000


def csv_header(head: bytes) -> list[str]:
    """The column names in the first line of a CSV head (empty when it cannot be parsed)."""
    try:
        return next(csv.reader(io.StringIO(first_line(head))), [])
    except csv.Error:
        return []


def _header_width(path: Path, delimiter: str) -> int:
    """Fields in the first line (counted up to just past ``MAX_COLUMNS``), read in chunks."""
    count = 0
    sep = delimiter.encode()
    try:
        with path.open("rb") as fh:
            while count <= MAX_COLUMNS:
                chunk = fh.read(1 << 20)
                if not chunk:
                    break
                end = chunk.find(b"\n")
                count += chunk.count(sep, 0, len(chunk) if end < 0 else end)
                if end >= 0:
                    break
    except OSError as exc:
        raise read_error(path, exc) from exc
    return count + 1


def _numeric_frame(table):  # -> (pandas.DataFrame, explicit-NaN masks) | None
    """A table of number columns only (the usual log) as a frame over one float64 block,
    filled chunk by chunk: no per-column copies and no consolidation copy by pandas. None for
    other tables (text or boolean columns, repeated names), which the general path reads."""
    import pyarrow as pa

    names = [str(n) for n in table.column_names]
    if len(set(names)) != len(names) or not all(
        pa.types.is_floating(t) or pa.types.is_integer(t) for t in table.schema.types
    ) or any(_beyond_float(col) for col in table.columns):
        return None
    block = np.empty((len(names), table.num_rows), dtype=np.float64)
    explicit = {}
    for name, col, row in zip(names, table.columns, block):
        at = 0
        for chunk in col.chunks:
            row[at : at + len(chunk)] = chunk.to_numpy(zero_copy_only=False)
            at += len(chunk)
        nan = np.isnan(row)
        if col.null_count:
            nan &= ~col.is_null().to_numpy(zero_copy_only=False)
        if nan.any():
            explicit[name] = nan
    return pd.DataFrame(block.T, columns=names, copy=False), explicit


def _beyond_float(col) -> bool:
    """An integer column holding values a float64 cannot tell apart (a step of 2^62 + k)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_integer(col.type) or col.null_count == len(col):
        return False
    bounds = pc.min_max(col)
    return max(abs(bounds["min"].as_py()), abs(bounds["max"].as_py())) > 1 << 53


def read_csv_frame(path: Path, notes: list[str] | None = None):
    """Read a CSV fast (pyarrow) keeping logged NaN apart from empty cells; the ``csv`` module
    as fallback for ragged rows and bytes that are not UTF-8, which it says in ``notes``.

    Returns a pandas DataFrame and a dict of explicit-NaN masks.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        check_size(path, path.stat().st_size)
    except OSError as exc:
        raise read_error(path, exc) from exc
    if _header_width(path, delimiter) > MAX_COLUMNS:
        raise FormatError(
            f"{path}: the header has more than {MAX_COLUMNS:,} columns (not a training log)"
        )
    try:
        with arrow_input(path) as source:
            table = pacsv.read_csv(
                source,
                read_options=pacsv.ReadOptions(block_size=1 << 24),
                parse_options=pacsv.ParseOptions(delimiter=delimiter),
                convert_options=pacsv.ConvertOptions(
                    null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=True
                ),
            )
        names = [str(n) for n in table.column_names]  # raises on names that are not UTF-8
        if any(pa.types.is_binary(t) or pa.types.is_large_binary(t)
               for t in table.schema.types):
            table = None  # cells that are not UTF-8: the fallback decodes them
    except (pa.ArrowInvalid, UnicodeDecodeError):
        table = None
    except OSError as exc:
        raise read_error(path, exc) from exc
    if table is not None:
        numeric = _numeric_frame(table)
        if numeric is not None:
            return numeric
        data: list[object] = []
        explicit = {}
        repeated = {n for n in names if names.count(n) > 1}
        for name, col in zip(names, table.columns):
            if _beyond_float(col):  # kept exact: it may be the step
                data.append(col.to_numpy() if not col.null_count
                            else pd.Series(col.to_pylist(), dtype=object))
            elif pa.types.is_floating(col.type) or pa.types.is_integer(col.type):
                vals = col.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
                nulls = col.is_null().to_numpy(zero_copy_only=False)
                nan = np.isnan(vals) & ~nulls
                if name in repeated:
                    # Copies under one name: the store picks one, so a logged NaN is written
                    # as the word the store reads as NaN evidence rather than keyed by name.
                    cells = pd.Series(vals, dtype=object)
                    cells[nulls] = None
                    cells[nan] = "nan"
                    data.append(cells)
                    continue
                if nan.any():
                    explicit[name] = nan
                data.append(vals)
            elif pa.types.is_boolean(col.type):
                data.append(col.to_numpy(zero_copy_only=False).astype(np.float64))
            else:
                data.append(col.to_pandas())
        frame = pd.DataFrame(dict(enumerate(data)))
        frame.columns = names
        return frame, explicit
    # Fallback for ragged rows and non-UTF-8 bytes: the csv module is forgiving.
    raw = read_bytes(path)
    said = notes if notes is not None else []
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("utf-8-sig", errors="replace")
        said.append("the file is not valid UTF-8: undecodable bytes were replaced (U+FFFD)")
    csv.field_size_limit(1 << 30)
    reader = csv.reader(io.StringIO(text.replace("\x00", ""), newline=""), delimiter=delimiter)
    try:
        rows = [r for r in reader if r]
    except csv.Error as exc:
        raise FormatError(f"{path}: not a readable CSV (line {reader.line_num}: {exc})") from exc
    if not rows:
        raise FormatError(f"{path}: the file is empty")
    header = rows[0]
    width = len(header)
    short = sum(len(r) < width for r in rows[1:])
    long = sum(len(r) > width for r in rows[1:])
    if short:
        said.append(f"{plural(short, 'row')} {'has' if short == 1 else 'have'} fewer cells than "
                    "the header: the missing cells are gaps")
    if long:
        said.append(f"{plural(long, 'row')} {'has' if long == 1 else 'have'} more cells than the "
                    "header: the extra cells were "
                    "left out")
    body = [(r + [""] * width)[:width] for r in rows[1:]]
    frame = pd.DataFrame(body, columns=header, dtype="string")
    frame = frame.replace("", pd.NA)
    return frame, {}
