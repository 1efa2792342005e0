"""Runs already in memory: a pandas DataFrame (a notebook's table, ``wandb.Api().run(...)
.history()``) and a Trainer's ``log_history`` list (``trainer.state.log_history``). They become
a :class:`~grpo_doctor.store.Run` exactly as a file holding the same values does: the same
step detection, column mapping and notes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from grpo_doctor.errors import ConfigError, FormatError, InputError
from grpo_doctor.importers._records import log_history_records, records_frame
from grpo_doctor.metrics import find_run_column
from grpo_doctor.store import Run, build_run
from grpo_doctor.text import agree, plural


def run_from_frame(
    frame: pd.DataFrame,
    *,
    name: str = "dataframe",
    step_column: str | None = None,
    column_map: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
    run: str | None = None,
) -> Run:
    """``frame`` (one row per logged record, the logger's own column names) as a Run.

    A frame holding several runs (a column naming each row's run: ``run_id``, ``run`` ...) is
    read as a CSV holding them is: ``run="NAME"`` picks one, and without it an error names
    them (stacked, their steps would go backwards and overwrite one another).

    The step is ``step_column``, else a step column found by name (``step``, ``_step``,
    ``global_step`` ...), else the frame's index when it is named (``df.set_index("step")``),
    else row order. A NaN cell is a gap, as an empty CSV cell is: a frame cannot tell a logged
    NaN from a metric not logged at that step. ``config`` is the run's settings (its trainer
    arguments), read as evidence as a log's own config is."""
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"expected a pandas DataFrame, got {type(frame).__name__}")
    _check_mappings(column_map, config)
    if frame.empty:
        raise FormatError(f"{name}: the DataFrame has no rows or no columns")
    run_col = find_run_column(str(c) for c in frame.columns)
    if run_col is not None:
        keys = frame[run_col].astype("string").fillna("")
        names = list(pd.unique(keys))
        if run is not None:
            if run not in names:
                raise InputError(f"{name}: no run {run!r} in column {run_col!r}; runs: "
                                 f"{', '.join(names[:10])}")
            frame = frame.loc[(keys == run).to_numpy()].drop(columns=[run_col])
            name = run if name == "dataframe" else name
        elif len(names) > 1:
            more = f" and {len(names) - 10} more" if len(names) > 10 else ""
            raise InputError(f"{name}: the DataFrame holds {len(names)} runs (column "
                             f"{run_col!r}: {', '.join(names[:10])}{more}); pick one with "
                             "run=NAME")
        else:
            frame = frame.drop(columns=[run_col])
    elif run is not None:
        raise InputError(f"{name}: run={run!r} given, but no column names the runs")
    if step_column is None and frame.index.name is not None and frame.index.name not in frame:
        frame = frame.reset_index()
        step_column = str(frame.columns[0])
    return build_run(frame, name=name, source="<DataFrame>", format="dataframe",
                     step_column=step_column, column_map=column_map, config=config)


def _check_mappings(column_map: object, config: object) -> None:
    """A ConfigError for a ``column_map`` or ``config`` that is no mapping (a list, a path)."""
    for name, value, example in (("column_map", column_map, "{'reward_mean': 'my_reward'}"),
                                 ("run_config", config, "trainer.args.to_dict()")):
        if value is not None and not isinstance(value, Mapping):
            raise ConfigError(f"{name} must be a mapping ({example}), got "
                              f"{type(value).__name__}")


def run_from_log_history(
    history: Sequence[Mapping[str, Any]],
    *,
    name: str = "trainer",
    column_map: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
    source: str = "<log_history>",
) -> Run:
    """A Trainer's ``log_history`` (a list of the dicts it logged, each with its ``step``) as
    a Run, read as ``trainer_state.json`` is. ``config`` is the run's settings, e.g.
    ``trainer.args.to_dict()``: the recipe checks read them as evidence."""
    if isinstance(history, (str, bytes)) or not isinstance(history, Sequence):
        raise InputError(f"expected a list of logged dicts, got {type(history).__name__}")
    _check_mappings(column_map, config)
    records, summary, skipped = log_history_records(list(history))
    if not records:
        raise FormatError(f"{name}: the log history has no entry with a step")
    notes = [f"{plural(skipped, 'log_history entry', 'log_history entries')} without a step "
             f"{agree(skipped, 'was', 'were')} skipped"] if skipped else []
    frame, explicit = records_frame(records, source)
    return build_run(frame, name=name, source=source, format="trainer-state",
                     step_column="step", column_map=column_map, explicit_nan=explicit,
                     config=config, notes=notes, summary=summary)
