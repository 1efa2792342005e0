"""Progress tables pasted as text into a console log or an issue (``Step | loss | reward``
rows, or tab-separated): the console importer reads them beside verl lines and printed dicts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

#: A table: its header cells and its rows of cells.
Table = tuple[list[str], list[list[str]]]

_TABLE_STEP_NAMES = {"step", "steps", "global_step", "_step", "train/global_step", "iteration"}
_TABLE_SEPARATOR = re.compile(r"^[\s|:+\-=]+$")


def _cells(line: str, delim: str) -> list[str]:
    text = line.strip()
    if delim == "|":
        text = text.strip("|")
    return [c.strip().strip("*`").strip() for c in text.split(delim)]


#: A space-aligned table's column gap: two spaces or more (a header's "Training Loss" is one
#: name).
_GAP = re.compile(r"\s{2,}")
_ALIGNED = " "  # the delimiter said for a space-aligned table
#: A row of a space-aligned table left out as a pasted elision ("...", "…").
_ELISION = re.compile(r"^\s*(?:\.{2,}|…)\s*$")


def table_header(line: str) -> tuple[str, list[str]] | None:
    """(delimiter, cells) of a table's header line (its first cell names the step), else None.
    Cells are split by ``|``, a tab, or, for a table aligned with spaces (``df.to_string()``,
    a paste from a terminal), runs of two spaces or more."""
    for delim in ("|", "\t"):
        if delim in line:
            cells = _cells(line, delim)
            if len(cells) >= 2 and cells[0].lower() in _TABLE_STEP_NAMES and all(cells):
                return delim, cells
    cells = _GAP.split(line.strip())
    if len(cells) >= 3 and cells[0].lower() in _TABLE_STEP_NAMES and all(
            _NAME.fullmatch(c) for c in cells):
        return _ALIGNED, cells
    return None


#: A metric name in a space-aligned header: no punctuation a sentence would have.
_NAME = re.compile(r"[A-Za-z_][\w/.\-]*(?: [A-Za-z_][\w/.\-]*)*")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|inf|-inf")


def _aligned_row(line: str, width: int) -> list[str] | None:
    """A space-aligned row's cells: numbers split by whitespace, as many as the header's (one
    more is a printed DataFrame's index, dropped)."""
    cells = line.split()
    if len(cells) == width + 1 and cells[0].isdigit():
        cells = cells[1:]
    if len(cells) != width or not all(_NUMBER.fullmatch(c) for c in cells):
        return None
    return cells


def parse_text_tables(lines: Sequence[str]) -> list[Table]:
    """Progress tables printed as text: a ``Step | ... `` (or tab-separated) header, then rows."""
    tables: list[Table] = []
    i = 0
    while i < len(lines):
        found = table_header(lines[i])
        i += 1
        if found is None:
            continue
        delim, header = found
        rows: list[list[str]] = []
        if delim == _ALIGNED:
            while i < len(lines):
                if _ELISION.match(lines[i]):
                    i += 1
                    continue
                cells = _aligned_row(lines[i], len(header))
                if cells is None:
                    break
                rows.append(cells)
                i += 1
            if rows:
                tables.append((header, rows))
            continue
        while i < len(lines) and delim in lines[i]:
            if table_header(lines[i]) is not None:
                break
            if not _TABLE_SEPARATOR.match(lines[i]):
                cells = _cells(lines[i], delim)
                if len(cells) <= len(header):
                    rows.append(cells + [""] * (len(header) - len(cells)))
            i += 1
        if rows:
            tables.append((header, rows))
    return tables


def tables_frame(tables: Sequence[Table]) -> pd.DataFrame:
    """Rows of several tables as one text frame keyed by ``Step`` (a later cell at a step wins)."""
    columns: dict[str, None] = {"Step": None}
    by_step: dict[str, dict[str, str]] = {}
    for header, rows in tables:
        names = ["Step", *header[1:]]
        for name in names:
            columns.setdefault(name, None)
        for row in rows:
            step = row[0]
            cells = by_step.setdefault(step, {"Step": step})
            cells.update({n: v for n, v in zip(names[1:], row[1:]) if v})
    data = {c: [row.get(c) for row in by_step.values()] for c in columns}
    return pd.DataFrame(data, dtype="string")
