"""Hugging Face ``trainer_state.json``: the ``log_history`` a ``Trainer`` saves in each checkpoint.

Accepts the file itself, a checkpoint folder holding it, or an output folder holding
``checkpoint-N/`` folders (the latest checkpoint has the whole history), and a bare
``log_history`` list dumped to JSON by hand (``json.dump(trainer.state.log_history, f)``).
Train and eval entries logged at the same step become one row (``eval_*`` keys kept); the
closing entry with ``train_runtime`` goes to the summary, not into the curves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.importers._common import (
    CHECKPOINT_FOLDER,
    checkpoint_folders,
    looks_like_text,
    read_json,
)
from grpo_doctor.importers._records import log_history_records, records_frame
from grpo_doctor.importers.base import Importer, LoadOptions
from grpo_doctor.store import SAVED_CHECKPOINTS, Run, build_run
from grpo_doctor.text import plural

STATE_FILE = "trainer_state.json"
#: Keys every Trainer log entry has; one of them in a JSON list's head makes it a log_history.
_LOG_KEYS = (b'"loss"', b'"learning_rate"', b'"epoch"', b'"grad_norm"', b'"reward"')


def _checkpoints_in(root: Path) -> list[tuple[int, Path]]:
    """The trainer states of the ``checkpoint-N`` folders directly under ``root``, by N."""
    return [(n, folder / STATE_FILE) for n, folder in checkpoint_folders(root)
            if (folder / STATE_FILE).is_file()]


def _latest_checkpoint(folder: Path) -> tuple[Path, int] | None:
    """The trainer_state.json of the highest ``checkpoint-N`` under ``folder``, and how many."""
    found = _checkpoints_in(folder)
    return (found[-1][1], len(found)) if found else None


def saved_checkpoints(state_path: Path) -> list[int]:
    """The steps of the ``checkpoint-N`` folders (with a trainer state) beside the one
    ``state_path`` is in, or under the output folder holding it: what a roll-back can reach."""
    folder = state_path.parent
    root = folder.parent if CHECKPOINT_FOLDER.fullmatch(folder.name) else folder
    return [n for n, _ in _checkpoints_in(root)]


def _state_file(path: Path) -> tuple[Path | None, list[str]]:
    if not path.is_dir():
        return path, []
    if (path / STATE_FILE).is_file():
        return path / STATE_FILE, []
    latest = _latest_checkpoint(path)
    if latest is None:
        return None, []
    state, count = latest
    return state, [f"read {state.parent.name}/{STATE_FILE}, the latest of "
                   f"{plural(count, 'checkpoint')}"]


def _sniff(path: Path, head: bytes) -> int:
    if path.is_dir():
        if (path / STATE_FILE).is_file():
            return 95
        return 90 if _latest_checkpoint(path) is not None else 0
    if not looks_like_text(head):
        return 0
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if is_log_history_list(start):
        return 90
    if not start.startswith(b"{"):
        return 0
    if b'"log_history"' in head:
        return 95
    # Named like one but without a history: claim it, so the error says what is missing.
    return 90 if path.name == STATE_FILE else 0


def is_log_history_list(head: bytes) -> bool:
    """A JSON list of Trainer log dicts (its first 64 KiB, leading blanks stripped)."""
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not start.startswith(b"[") or not start[1:].lstrip().startswith(b"{"):
        return False
    return b'"step"' in head and any(key in head for key in _LOG_KEYS)


def _run_name(state: Path) -> str:
    if state.name != STATE_FILE:
        return state.stem
    folder = state.parent
    if CHECKPOINT_FOLDER.fullmatch(folder.name) and folder.parent.name:
        return folder.parent.name
    return folder.name or state.stem


def _read_state(state: Path) -> dict[str, Any]:
    obj = read_json(state, "not valid JSON")
    if isinstance(obj, list):  # a bare log_history, dumped by hand
        obj = {"log_history": obj}
    if not isinstance(obj, dict):
        raise FormatError(f"{state}: not a trainer state (a JSON object with log_history expected)")
    history = obj.get("log_history")
    if not isinstance(history, list):
        raise FormatError(f"{state}: no log_history in the trainer state")
    if not history:
        raise FormatError(f"{state}: log_history is empty (nothing was logged before this save)")
    return obj


#: Top-level keys of a trainer state that say where training got to, not how it was set up:
#: the run's summary, never its config (two runs stopped at different steps do not differ
#: in a setting).
_PROGRESS = frozenset({
    "epoch", "global_step", "total_flos", "num_input_tokens_seen", "best_metric",
    "best_model_checkpoint", "best_global_step", "is_local_process_zero",
    "is_world_process_zero", "is_hyper_param_search", "trial_name", "trial_params",
})


def _scalars(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items()
            if k != "log_history" and (v is None or isinstance(v, (str, int, float, bool)))}


def _config(state: dict[str, Any]) -> dict[str, Any]:
    """The trainer state's top-level settings (max_steps, logging_steps, train_batch_size ...)."""
    return {k: v for k, v in _scalars(state).items() if k not in _PROGRESS}


def _progress(state: dict[str, Any]) -> dict[str, Any]:
    """Where training got to (global_step, epoch, total_flos ...)."""
    return {k: v for k, v in _scalars(state).items() if k in _PROGRESS}


def _with_checkpoints(config: dict[str, Any], state_path: Path) -> dict[str, Any]:
    saved = saved_checkpoints(state_path)
    return {**config, SAVED_CHECKPOINTS: saved} if saved else config


def _load(path: Path, options: LoadOptions) -> list[Run]:
    state_path, notes = _state_file(path)
    if state_path is None:
        raise InputError(f"{path}: no {STATE_FILE} in the folder or its checkpoint-N folders")
    state = _read_state(state_path)
    records, summary, skipped = log_history_records(state["log_history"])
    if not records:
        raise FormatError(f"{state_path}: log_history has no entry with a step")
    if skipped:
        notes.append(f"{skipped} log_history entr(ies) without a step were skipped")
    frame, explicit = records_frame(records, str(state_path))
    return [
        build_run(
            frame, name=_run_name(state_path), source=str(state_path), format="trainer-state",
            step_column=options.step_column or "step", column_map=options.column_map,
            explicit_nan=explicit, config=_with_checkpoints(_config(state), state_path),
            notes=notes, summary={**_progress(state), **summary},
        )
    ]


IMPORTER = Importer(
    name="trainer-state",
    sniff=_sniff,
    load=_load,
    reads_folders=True,
)
