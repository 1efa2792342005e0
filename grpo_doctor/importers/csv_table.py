"""Wide CSV: one row per logged step, one column per metric (plain exports, pandas dumps)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from grpo_doctor.errors import FormatError
from grpo_doctor.importers._common import file_run_name, first_line, looks_like_text
from grpo_doctor.importers._csv import read_csv_frame
from grpo_doctor.importers.base import Delta, Importer, Incremental, LoadOptions
from grpo_doctor.importers.incremental import TextPosition, prefix_loader, read_lines
from grpo_doctor.live_store import Rows
from grpo_doctor.metrics import find_run_column
from grpo_doctor.store import Run, build_run, column_floats

_TEXT_SUFFIXES = {".csv", ".tsv", ".txt"}


def _sniff(path: Path, head: bytes) -> int:
    if not looks_like_text(head):
        return 0
    line = first_line(head)
    delim = "\t" if path.suffix.lower() == ".tsv" else ","
    if line.count(delim) < 1:
        return 0
    if path.suffix.lower() in _TEXT_SUFFIXES:
        return 50
    # Under another name (a .log), a table's next line holds as many delimiters as its
    # header: a console whose first line has a comma (a Ray worker's echoed source line) is
    # no table (trial 62: its words had been offered as columns to --map).
    lines = head.decode("utf-8", errors="replace").split("\n", 2)
    if len(lines) == 3 and lines[1].strip("\r").count(delim) != line.count(delim):
        return 0
    return 20


def _load(path: Path, options: LoadOptions) -> list[Run]:
    notes: list[str] = []
    frame, explicit = read_csv_frame(path, notes)
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
                    part, name=str(key) or file_run_name(path), source=str(path), format="csv",
                    step_column=options.step_column, column_map=options.column_map,
                    explicit_nan=nan, notes=notes,
                )
            )
        return runs
    return [
        build_run(
            frame, name=file_run_name(path), source=str(path), format="csv",
            step_column=options.step_column, column_map=options.column_map,
            explicit_nan=explicit, notes=notes,
        )
    ]


# --- a growing CSV, read from where the last read stopped (``watch``) -----------------------------

_BOOL_WORDS = {"true": 1.0, "false": 0.0}


def _text_cells(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSV cells (strings) as ``_load`` reads them: numbers, ``nan`` as a logged NaN, ``inf``,
    an empty cell or other text as a gap, true/false as a boolean column is read."""
    try:
        values = cells.astype(np.float64)  # numbers, nan and inf words: the common case
    except ValueError:
        series = pd.Series(cells, dtype="string").replace("", pd.NA)
        values, explicit = column_floats(series)
        words = series.str.strip().str.lower().to_numpy(dtype=object, na_value="")
        for word, value in _BOOL_WORDS.items():
            values[words == word] = value
        return values, explicit
    return values, np.isnan(values)


def _csv_cells(text: str, width: int, delimiter: str) -> list[np.ndarray]:
    """The cells of CSV lines, one array of strings per column (short rows padded, long ones
    cut, blank lines skipped, as ``_load`` reads them)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = [f"c{i}" for i in range(width)]
    try:
        table = pacsv.read_csv(
            io.BytesIO(text.encode("utf-8")),
            read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()),
                                                 strings_can_be_null=False),
        )
        return [col.to_numpy(zero_copy_only=False).astype(object) for col in table.columns]
    except pa.ArrowInvalid:  # ragged rows: the csv module is forgiving
        csv.field_size_limit(1 << 30)
        # newline="" as the csv module wants it: a bare CR inside a line (garbage appended to
        # a watched log) is then a cell's character, not "new-line in unquoted field".
        body = [(r + [""] * width)[:width]
                for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if r]
        return [np.array([r[j] for r in body], dtype=object) for j in range(width)]


@dataclass(frozen=True)
class _Tail:
    """Where reading a growing CSV resumes: the lines read, its header, the rows so far."""

    at: TextPosition = field(default_factory=TextPosition)
    header: tuple[str, ...] | None = None
    count: int = 0
    several_runs: bool = False  # a run column: each row may start another run


def _read_new(path: Path, state: _Tail | None, options: LoadOptions, final: bool) -> Delta:
    """The rows appended after ``state``; the header, and any row of a file holding several
    runs, are structural (a rebuild reads them)."""
    state = state or _Tail()
    text, at = read_lines(path, state.at, final)
    if text is None:
        return Delta(Rows(), _Tail(at, state.header, state.count, state.several_runs))
    header, several_runs = state.header, state.several_runs
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    structural = False
    if header is None:
        first, _, text = text.partition("\n")
        # A bare CR inside the line (a progress bar redrawn: "\rLoading weights: 0%|...") is
        # a character of the header's text, not "new-line in unquoted field" (helper-79: an
        # internal error for a console capture watched as a CSV).
        header = tuple(next(csv.reader(io.StringIO(first.rstrip("\r"), newline=""),
                                       delimiter=delimiter), []))
        several_runs = find_run_column(header) is not None
        structural = True
    values: dict[str, np.ndarray] = {}
    explicit: dict[str, np.ndarray] = {}
    count = 0
    if text.strip():
        cells = _csv_cells(text, len(header), delimiter)
        count = len(cells[0]) if cells else 0
        for name, column in zip(header, cells):  # a repeated name: the last one wins
            values[name], explicit[name] = _text_cells(column)
    rows = Rows(values, explicit, None, state.count, count)
    return Delta(rows, _Tail(at, header, state.count + count, several_runs),
                 structural or several_runs)


IMPORTER = Importer(
    name="csv",
    sniff=_sniff,
    load=_load,
    incremental=Incremental(read=_read_new, load=prefix_loader(_load)),
)
