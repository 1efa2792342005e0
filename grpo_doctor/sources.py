"""A source by name, read into runs: a file or folder (local or in an object store) through the
importers, or a ``wandb://entity/project[/run_id]`` URI, which ``remote`` first fetches into
its local cache. Here, above both, so that the importers never reach up for the network.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from grpo_doctor import importers
from grpo_doctor.errors import ConfigError, FormatError, InputError
from grpo_doctor.files import is_remote, refuse_empty
from grpo_doctor.importers.launch import launch_error, silent_stop
from grpo_doctor.importers.sidecar import with_sidecar_config
from grpo_doctor.store import Run


def load_runs(
    source: str | os.PathLike[str],
    *,
    format: str | None = None,
    column_map: Mapping[str, str] | None = None,
    step_column: str | None = None,
    run: str | None = None,
) -> list[Run]:
    """Every run held by ``source`` (a file or folder, local or ``s3://``, ``gs://``, ``az://``;
    ``wandb://entity/project/run``)."""
    source = _checked_source(source)
    for name, value in (("format", format), ("step_column", step_column), ("run", run)):
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{name} must be a string, got {type(value).__name__}")
    if column_map is not None and not isinstance(column_map, Mapping):
        raise ConfigError("column_map must be a mapping of canonical names to columns "
                          f"({{'reward_mean': 'my_reward'}}), got {type(column_map).__name__}")
    text = str(source) if is_remote(source) else os.fspath(source)
    if not text.startswith("wandb://"):
        try:
            runs = importers.load_runs(source, format=format, column_map=column_map,
                                       step_column=step_column, run=run)
        except (FormatError, InputError) as exc:
            # No log to read, and a console capture there ending in a traceback: the launch
            # failed before its first step, and the traceback is what to fix (trial 60).
            failed = None if is_remote(source) else (
                launch_error(Path(text)) or silent_stop(Path(text)))
            if failed is None:
                raise
            raise failed from exc
        # The settings a log does not hold, from a training config beside it (local only).
        return runs if is_remote(source) else [_with_richer_note(with_sidecar_config(r))
                                               for r in runs]
    from grpo_doctor.remote.wandb_api import load_wandb_uri  # a large module few sources need

    fetched = load_wandb_uri(text, importers.load_options(column_map, step_column, run))
    return importers.picked(text, fetched, run)


def _checked_source(source: object) -> str | os.PathLike[str]:
    """``source`` as a path (bytes decoded as the file system does); an InputError for a
    value that is no path (None, a DataFrame: ``diagnose_frame`` reads those)."""
    if isinstance(source, bytes):
        return os.fsdecode(source)
    if isinstance(source, (str, os.PathLike)) or is_remote(source):
        if not is_remote(source):
            refuse_empty(source)  # type: ignore[arg-type]
        return source  # type: ignore[return-value]  # (an object store's path)
    hint = " (a DataFrame: diagnose_frame(df))" if type(source).__name__ == "DataFrame" else ""
    raise InputError(f"a log's path is needed, got {type(source).__name__}{hint}")


def load_run(source: str | os.PathLike[str], **options: object) -> Run:
    """The one run held by ``source`` (``run="NAME"`` picks one of several); an error naming
    the runs if there are several and none was picked."""
    return importers.only_run(source, load_runs(source, **options))  # type: ignore[arg-type]


def _with_richer_note(run: Run) -> Run:
    """``run`` with a note naming a richer log of it beside the file it was read from."""
    from grpo_doctor.importers.run_folder import richer_state_beside

    note = richer_state_beside(run)
    return replace(run, notes=[*run.notes, note]) if note else run
