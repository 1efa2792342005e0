"""Jupyter notebooks: the Hugging Face Trainer progress table saved in a cell's output.

In a notebook the Trainer draws an HTML table (``Step | Training Loss | reward | kl | ...``)
that it redraws at each log, so the saved output holds the last state: one row per logged
step, values as printed (``No Log`` where nothing was logged). Tables are read with the
standard library's ``html.parser``; text renderings (``Step | ...`` or tab-separated) in plain
text or stream outputs are read too. Of several tables, those continuing each other's steps
are joined, and the longest training run wins (a table with reward columns before a
loss-only one, such as an SFT warm-up; the later one on ties). A notebook without a table
falls back to printed log lines in its outputs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from grpo_doctor.endings import Ending
from grpo_doctor.errors import FormatError
from grpo_doctor.importers._common import read_json, to_number
from grpo_doctor.importers._tables import Table, parse_text_tables, tables_frame
from grpo_doctor.importers.base import Importer, LoadOptions
from grpo_doctor.importers.console import ending_after_metrics, log_to_run, parse_console
from grpo_doctor.importers.console_text import strip_ansi
from grpo_doctor.importers.notebook_code import code_settings, config_syntax_error
from grpo_doctor.importers.sidecar import settings_text, supplied_settings
from grpo_doctor.metrics import map_columns
from grpo_doctor.store import Run, build_run

_STEP_HEADERS = {"step", "steps", "global_step", "epoch"}
_PROGRESS = re.compile(r"\[\s*(\d+)\s*/\s*(\d+)\b")


class _TableParser(HTMLParser):
    """Every ``<table>`` in an HTML fragment as a header row and body rows of text cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[Table] = []
        self._rows: list[tuple[bool, list[str]]] | None = None
        self._row: list[str] | None = None
        self._row_is_header = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._rows = []
        elif tag == "tr" and self._rows is not None:
            self._row, self._row_is_header = [], False
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            self._row_is_header |= tag == "th"

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._rows is not None:
            self._rows.append((self._row_is_header, self._row))
            self._row = None
        elif tag == "table" and self._rows is not None:
            self._finish(self._rows)
            self._rows = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def _finish(self, rows: list[tuple[bool, list[str]]]) -> None:
        headers = [cells for is_header, cells in rows if is_header]
        body = [cells for is_header, cells in rows if not is_header and cells]
        if headers and body:
            width = len(headers[-1])
            fitted = [(r + [""] * width)[:width] for r in body]
            self.tables.append((headers[-1], fitted))


@dataclass
class _Found:
    """A progress table found in the notebook and where."""

    order: int  # position among all tables found, in cell order
    header: list[str]
    rows: list[list[str]]
    progress: tuple[int, int] | None  # the progress bar above it: (step reached, max_steps)
    ending: Ending | None = None  # the error its cell ended in (an exception raised in it)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else ""


def html_tables(html: str) -> list[Table]:
    parser = _TableParser()
    try:
        parser.feed(html)
        parser.close()
    except (AssertionError, ValueError):  # html.parser gives up on some broken markup
        pass
    return parser.tables


def _is_progress_table(header: Sequence[str]) -> bool:
    return len(header) >= 2 and header[0].strip().lower() in _STEP_HEADERS


def _mime_data(output: dict[str, Any]) -> dict[str, Any]:
    """A cell output's ``data`` (its value per MIME type); empty when missing or malformed."""
    data = output.get("data")
    return data if isinstance(data, dict) else {}


def _output_tables(output: dict[str, Any]) -> tuple[list[Table], str]:
    """The tables in one cell output, and its text (for the log-line fallback)."""
    data = _mime_data(output)
    html = _text(data.get("text/html"))
    text = _text(data.get("text/plain")) + "\n" + _text(output.get("text"))
    tables = html_tables(html) if "<table" in html else []
    if not tables:
        tables = parse_text_tables(text.splitlines())
    return tables, text


def _progress(output: dict[str, Any]) -> tuple[int, int] | None:
    data = _mime_data(output)
    m = _PROGRESS.search(_text(data.get("text/html")))
    return (int(m.group(1)), int(m.group(2))) if m else None


def _read_notebook(path: Path) -> dict[str, Any]:
    nb = read_json(path, "not a valid notebook")
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise FormatError(f"{path}: not a Jupyter notebook (no list of cells)")
    return nb


def _scan(nb: dict[str, Any]) -> tuple[list[_Found], str, Ending | None]:
    """The progress tables, the text of every output, and how the last cell that printed
    log lines ended (its error output, or a traceback its own text ends in: a shell cell
    running ``!python train.py``)."""
    found: list[_Found] = []
    texts: list[str] = []
    printed: Ending | None = None
    for cell in nb["cells"]:
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        outputs = [o for o in outputs if isinstance(o, dict)] if isinstance(outputs, list) else []
        ending = _cell_error(outputs)
        own: list[str] = []
        for output in outputs:
            tables, text = _output_tables(output)
            texts.append(text)
            own.append(text)
            for header, rows in tables:
                if _is_progress_table(header):
                    found.append(_Found(len(found), header, rows, _progress(output), ending))
        cell_text = "\n".join(own)
        if "{'" in cell_text:
            printed = ending or ending_after_metrics(cell_text)
    return found, "\n".join(texts), printed


def _cell_error(outputs: Sequence[dict[str, Any]]) -> Ending | None:
    """The exception a cell's run ended in (its ``error`` output), as the console's ending;
    an interrupted kernel's ``KeyboardInterrupt`` is the user's own stop."""
    error = next((o for o in reversed(outputs) if o.get("output_type") == "error"), None)
    if error is None:
        return None
    name = strip_ansi(_text(error.get("ename"))).strip() or "an error"
    value = " ".join(strip_ansi(_text(error.get("evalue"))).split())
    said = f"{name}: {value}" if value else name
    if len(said) > 160:
        said = said[:157].rstrip() + "..."
    return Ending("interrupted" if name == "KeyboardInterrupt" else "error", said)


def _step_range(table: _Found) -> tuple[float, float] | None:
    steps = [to_number(r[0]) for r in table.rows]
    numbers = [s for s in steps if s is not None and s == s]
    return (min(numbers), max(numbers)) if numbers else None


def _chains(found: Sequence[_Found]) -> list[list[_Found]]:
    """Tables grouped into runs: a table whose steps start after the previous one's continue it."""
    chains: list[list[_Found]] = []
    for table in found:
        if chains:
            prev = chains[-1][-1]
            a, b = _step_range(prev), _step_range(table)
            if a and b and b[0] > a[1] and table.header == prev.header:
                chains[-1].append(table)
                continue
        chains.append([table])
    return chains


def _has_reward(header: Sequence[str]) -> bool:
    mapped = map_columns(header).mapping
    return any(k == "reward_mean" or k.startswith("reward_component/") for k in mapped)


def _pick(found: Sequence[_Found]) -> tuple[list[_Found], int]:
    chains = _chains(found)

    def rank(chain: list[_Found]) -> tuple[bool, int, int]:
        return (_has_reward(chain[0].header), sum(len(t.rows) for t in chain), chain[-1].order)

    return max(chains, key=rank), len(chains)


def notebook_settings(path: Path, *, computed: bool = False) -> dict[str, Any]:
    """The trainer settings a notebook's code sets (a notebook not yet run holds no table);
    with ``computed``, the ones it computes too (``notebook_code.COMPUTED``)."""
    return _code_settings(_read_notebook(path), computed=computed)


def notebook_config_error(path: Path) -> str | None:
    """Where the notebook's config cell fails to parse (``notebook_code``), or None."""
    return config_syntax_error(_code_cells(_read_notebook(path)))


def _code_cells(nb: dict[str, Any]) -> list[str]:
    return [_text(cell.get("source")) for cell in nb["cells"]
            if isinstance(cell, dict) and cell.get("cell_type") == "code"]


def _code_settings(nb: dict[str, Any], *, computed: bool = False) -> dict[str, Any]:
    return code_settings(_code_cells(nb), computed=computed)


def _code_config(nb: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The trainer settings the notebook's code cells set (``notebook_code``), with a note
    naming the recipe's knobs among them."""
    config = _code_settings(nb)
    named = supplied_settings(config, config)
    if named:
        notes.append(f"settings read from the notebook's code: {settings_text(named)}")
    return config


def _load(path: Path, options: LoadOptions) -> list[Run]:
    nb = _read_notebook(path)
    found, text, printed = _scan(nb)
    if not found:
        log = parse_console(text, str(path))
        if log.kind in ("verl", "dict"):
            log.notes.append("no progress table in the notebook: read its printed log lines")
            code = _code_config(nb, log.notes)
            log.config = {**code, **log.config}  # what it printed wins
            run = log_to_run(log, path, "notebook", options)
            # How the cell that printed them ended (helper-77: read HEALTHY over a KeyError).
            run.ending = printed
            return [_from_code(run, code)]
        raise FormatError(f"{path}: no training progress table in the notebook")
    chain, n_runs = _pick(found)
    notes: list[str] = []
    if n_runs > 1:
        notes.append(
            f"the notebook holds {n_runs} training tables: read the longest one with rewards"
        )
    if chain[0].header[0].strip().lower() == "epoch":
        notes.append("the progress table counts epochs, not steps: steps are epoch numbers")
    code = _code_config(nb, notes)
    config = dict(code)
    progress = chain[-1].progress
    if progress is not None:
        config["max_steps"] = progress[1]
        if progress[0] < progress[1]:
            notes.append(f"training stopped at step {progress[0]} of {progress[1]}")
    frame = tables_frame([(t.header, t.rows) for t in chain])
    run = build_run(frame, name=path.stem, source=str(path), format="notebook",
                    step_column=options.step_column, column_map=options.column_map,
                    config=config, notes=notes)
    run.ending = chain[-1].ending
    return [_from_code(run, code)]


def _from_code(run: Run, code: dict[str, Any]) -> Run:
    """``run`` with the settings its code gave marked as such: code edited after the run
    says what the next run will do, so the diagnosis checks them against the log (a
    completion budget the log's completions outran is not the one it ran with)."""
    read = {k: "the notebook's code" for k in code if k in run.config and k != "max_steps"}
    return replace(run, config_beside={**run.config_beside, **read}) if read else run


def _sniff(path: Path, head: bytes) -> int:
    if path.is_dir():
        return 0
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if start != b"{":
        return 0
    if path.suffix.lower() == ".ipynb":
        return 90
    return 70 if b'"cells"' in head and b'"nbformat"' in head else 0


IMPORTER = Importer(
    name="notebook",
    sniff=_sniff,
    load=_load,
)
