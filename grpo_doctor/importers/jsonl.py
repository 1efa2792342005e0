"""JSON lines: one JSON object per line (custom loggers, ms-swift ``logging.jsonl``, wandb dumps).

Nested objects are flattened with "/" (``{"train": {"reward": 1}}`` -> ``train/reward``). Lines
that are not JSON objects are counted and noted, and only fatal when no line parses.

Lines become rows through ``_records`` (shared with the other importers that read dicts).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from grpo_doctor.errors import FormatError
from grpo_doctor.importers._common import file_run_name, looks_like_text, read_text
from grpo_doctor.importers._records import (
    PROGRESS_KEY,
    Record,
    flatten,
    numeric_record,
    progress_step,
    records_frame,
)
from grpo_doctor.importers.base import Delta, Importer, Incremental, LoadOptions
from grpo_doctor.importers.console import salvage_pairs
from grpo_doctor.importers.incremental import (
    TextPosition,
    prefix_loader,
    read_lines,
    rows_from_records,
)
from grpo_doctor.live_store import Rows
from grpo_doctor.metrics import STEP_KEYS
from grpo_doctor.store import TEXT_VALUES_NOTE, Run, build_run
from grpo_doctor.text import agree, plural


def _parse_lines(text: str, whole: bool = False, text_keys: dict[str, str] | None = None
                 ) -> tuple[list[Record], int, bool]:
    """The records of the lines, how many lines were no JSON object, and whether the last one
    was an object cut off, of which (``whole``: the file read to its end, as pasted or left by
    a crash) the complete ``"key": number`` entries were kept."""
    records: list[Record] = []
    bad = 0
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    cut = False
    for k, line in enumerate(lines):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            if whole and k == len(lines) - 1 and line.startswith("{") and (
                    pairs := salvage_pairs(line)):
                obj, cut = {**pairs, **_progress_of(line)}, True
            else:
                bad += 1
                continue
        if not isinstance(obj, dict):
            bad += 1
            continue
        # verl's file logger writes {"step": N, "data": {metrics}}: the metrics are the data.
        if set(obj) == {"step", "data"} and isinstance(obj["data"], dict):
            obj = {"step": obj["step"], **obj["data"]}
        step = progress_step(obj.get(PROGRESS_KEY))
        if step is not None and not any(k in obj for k in ("step", "global_step")):
            obj = {**obj, "global_step": step}  # ms-swift logs its step only as "12/547"
        flat = flatten(obj)
        record = numeric_record(flat, exact_ints=True)
        if text_keys is not None and len(text_keys) < 5:
            # Kept out as text, said: "no columns", then "--map names a column not in" it,
            # read as two contradictions (trial 74: "ppo_response_length": "52.5|37.8").
            for key, value in flat.items():
                if isinstance(value, str) and key not in record and key not in text_keys and (
                        _NUMBERS_IN_TEXT.match(value)):
                    text_keys[key] = value[:40]
        if record:
            records.append(record)
    return records, bad, cut


#: Text that holds numbers but is none ("52.5469|37.7781", "0.5 ± 0.1").
_NUMBERS_IN_TEXT = re.compile(r"^\s*[-+]?\d[\d.eE+-]*\s*[|±/,;]\s*[-+]?\d")


#: The step keys a record may hold (the importer reads the step column by these names).
_STEPS = frozenset(STEP_KEYS)


def _progress_of(line: str) -> dict[str, str]:
    """ms-swift's ``"global_step/max_steps": "12/547"`` in a line cut off after it."""
    m = re.search(rf'"{re.escape(PROGRESS_KEY)}"\s*:\s*"([^"]*)"', line)
    return {PROGRESS_KEY: m.group(1)} if m else {}


def _first_line_is_object(head: bytes) -> bool:
    """Whether the first line is a JSON object; or the second, after one line of a header or
    a note pasted above the log (a paste's ``"mean|std"``)."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for k, line in enumerate(lines[:2]):
        if not line.startswith("{"):
            if k == 0 and len(lines) > 2 and len(line) <= 200:
                continue  # one line above the log
            return False
        try:
            return isinstance(json.loads(line), dict) and (k == 0 or _is_object(lines[2]))
        except (ValueError, RecursionError):
            # A first line longer than the head is cut; an object start is still telling.
            return k == 0 and len(line) >= len(text) - 2 and line.startswith('{"')
    return False


def _is_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _sniff(path: Path, head: bytes) -> int:
    if path.is_dir() or not looks_like_text(head) or not _first_line_is_object(head):
        return 0
    if path.suffix.lower() == ".json" and b"\n" not in head.strip():
        return 0  # one JSON object in a .json file: a config or a summary, not logged steps
    return 85 if path.suffix.lower() in {".jsonl", ".ndjson"} else 80


def _load(path: Path, options: LoadOptions) -> list[Run]:
    text_keys: dict[str, str] = {}
    records, bad, cut = _parse_lines(read_text(path), whole=True, text_keys=text_keys)
    if cut and len(records) > 1 and _STEPS & records[0].keys() and not (
            _STEPS & records[-1].keys()):
        records.pop()  # cut off before its step: a row of no known step
        cut_note = "the last line was cut off before its step: it was left out"
    else:
        cut_note = "the last line was cut off: only its complete numeric entries were read"
    if not records:
        raise FormatError(f"{path}: no line is a JSON object with a numeric value")
    frame, explicit = records_frame(records, str(path))
    notes = [f"{plural(bad, 'line')} "
             f"{agree(bad, 'was not a JSON object', 'were not JSON objects')} and "
             f"{agree(bad, 'was', 'were')} skipped"] if bad else []
    if cut:
        notes.append(cut_note)
    if text_keys:
        notes.append(TEXT_VALUES_NOTE + ", ".join(f"{k} ({v!r})" for k, v in text_keys.items()))
    return [
        build_run(
            frame, name=file_run_name(path), source=str(path), format="jsonl",
            step_column=options.step_column, column_map=options.column_map,
            explicit_nan=explicit, notes=notes,
        )
    ]


# --- a growing file, read from where the last read stopped (``watch``) ----------------------------


@dataclass(frozen=True)
class _Tail:
    """Where reading a growing JSON-lines file resumes: the lines read, the records so far."""

    at: TextPosition = field(default_factory=TextPosition)
    count: int = 0


def _read_new(path: Path, state: _Tail | None, options: LoadOptions, final: bool) -> Delta:
    state = state or _Tail()
    text, at = read_lines(path, state.at, final)
    if text is None:
        return Delta(Rows(), _Tail(at, state.count))
    records, _bad, _cut = _parse_lines(text)
    rows = rows_from_records(records, first_index=state.count)
    return Delta(rows, _Tail(at, state.count + len(records)))


IMPORTER = Importer(
    name="jsonl",
    sniff=_sniff,
    load=_load,
    incremental=Incremental(read=_read_new, load=prefix_loader(_load)),
)
