"""Weights & Biases chart export ("Export panel data -> CSV").

Header: the x-axis (``Step`` by default), then ``<run name> - <metric>`` columns, each with
``__MIN`` and ``__MAX`` companions (bucket extremes, dropped here). Run and metric are split on
the last " - " (metric names may contain one). A file with several runs gives several runs,
named by their display names; the rows of a run are those where any of its metrics has a value.
The export holds only the points the chart drew (sampled), which a note says.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from grpo_doctor.errors import FormatError
from grpo_doctor.importers._common import HEAD_BYTES, looks_like_text
from grpo_doctor.importers._csv import csv_header, read_csv_frame
from grpo_doctor.importers.base import Importer, LoadOptions
from grpo_doctor.metrics import find_step_column
from grpo_doctor.store import Run, build_run
from grpo_doctor.text import plural

_SEP = " - "
_BANDS = ("__MIN", "__MAX")


def split_run_metric(column: str) -> tuple[str, str] | None:
    """``"run - train/reward"`` -> ("run", "train/reward"); None for band and other columns."""
    if column.endswith(_BANDS) or _SEP not in column:
        return None
    run, _, metric = column.rpartition(_SEP)
    run, metric = run.strip(), metric.strip()
    return (run, metric) if run and metric else None


def _sniff(path: Path, head: bytes) -> int:
    if path.is_dir() or path.suffix.lower() != ".csv" or not looks_like_text(head):
        return 0
    header = csv_header(head)
    if len(header) < 2 or not any(split_run_metric(c) for c in header[1:]):
        return 0
    if header[0].strip().lower() == "step" or all(_SEP in c for c in header[1:]):
        return 85
    return 60


def _run_columns(columns: Sequence[str]) -> dict[str, dict[str, str]]:
    """Run name -> {source column: metric name}, in the order the runs appear."""
    runs: dict[str, dict[str, str]] = {}
    for col in columns:
        parts = split_run_metric(col)
        if parts:
            runs.setdefault(parts[0], {})[col] = parts[1]
    return runs


def _notes(header: Sequence[str], x: str, runs: dict[str, dict[str, str]]) -> list[str]:
    notes = ["a W&B chart export holds only the points the chart drew (it may be sampled)"]
    dup = [c for c, n in Counter(header).items() if n > 1]
    if dup:
        notes.append(
            f"{plural(len(dup), 'column name')} {'repeats' if len(dup) == 1 else 'repeat'} "
            "(W&B display names are not unique): "
            "the last of each was read"
        )
    other = [c for c in header if c != x and not c.endswith(_BANDS) and not split_run_metric(c)]
    if other:
        notes.append(f"{'a column' if len(other) == 1 else 'columns'} without a run name "
                     f"{'was' if len(other) == 1 else 'were'} left out: {', '.join(other[:5])}")
    return notes


def _load(path: Path, options: LoadOptions) -> list[Run]:
    read_notes: list[str] = []
    frame, explicit = read_csv_frame(path, read_notes)
    columns = [str(c) for c in frame.columns]
    x = options.step_column or (columns[0] if columns else "")
    runs = _run_columns([c for c in columns if c != x])  # the x-axis is never a metric
    if not runs:
        raise FormatError(f"{path}: not a W&B chart export (no '<run> - <metric>' column)")
    if len(frame) == 0:
        raise FormatError(f"{path}: the CSV has a header but no rows")
    if x not in frame.columns:
        raise FormatError(f"{path}: step column {x!r} not found")
    step_col = x if find_step_column([x]) is not None or options.step_column else None
    with path.open("rb") as fh:
        notes = _notes(csv_header(fh.read(HEAD_BYTES)), x, runs) + read_notes
    out = []
    for run, metrics in runs.items():
        part = frame[[x, *metrics]].rename(columns=metrics)
        has_value = part[list(metrics.values())].notna().any(axis=1).to_numpy()
        nan = {metrics[c]: explicit[c][has_value] for c in metrics if c in explicit}
        part = part.loc[has_value].reset_index(drop=True)
        if step_col is None:
            part = part.drop(columns=[x])
        out.append(
            build_run(
                part, name=run, source=str(path), format="wandb-csv", step_column=step_col,
                column_map=options.column_map, explicit_nan=nan, notes=list(notes),
            )
        )
    return out


IMPORTER = Importer(
    name="wandb-csv",
    sniff=_sniff,
    load=_load,
)
