"""A launch that stopped before its first logged step, told by its console output.

A config the trainer refuses (``num_generations`` not dividing the batch) or a reward function
that raises on its first call leaves no metric: the loggers hold nothing, or only their own
bookkeeping (profiling timings), and the console capture holds a traceback where the metrics
would be. Reported as "not a training log" or "holds 2 training logs", the one line a user
fixes went unsaid (trial 60). When reading fails, the capture is looked for: the file named,
or the text files in the folder named or beside the log named.
"""

from __future__ import annotations

import re
from pathlib import Path

from grpo_doctor.endings import TRACEBACK, Ending, ending_in
from grpo_doctor.errors import GrpoDoctorError, InputError
from grpo_doctor.files import check_input

#: The end of a capture read for its traceback; files looked at in one folder.
_TAIL_BYTES = 1 << 20
_MAX_FILES = 50
#: Where a console capture is kept: ``console.log``, ``nohup.out``, ``train.err``, ``stdout``.
_TEXT_SUFFIXES = frozenset({".log", ".out", ".txt", ".err", ""})


#: What a training launch prints before its first step (a library's warning, a progress
#: bar, weights loading): a capture of one, not notes or a README.
_LAUNCHED = re.compile(r"[/\\](?:site|dist)-packages[/\\]|\d(?:it/s|s/it)\]|Loading (?:weights|"
                       r"checkpoint shards)")


def _tail(path: Path) -> str:
    try:
        check_input(path)  # never opened when a FIFO, a device or a kernel's file
        with path.open("rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - _TAIL_BYTES))
            return fh.read().decode("utf-8", errors="replace")
    except (OSError, InputError):
        return ""


def _text_files(folder: Path) -> list[Path]:
    try:
        found = sorted(f for f in folder.iterdir()
                       if f.suffix.lower() in _TEXT_SUFFIXES and not f.name.startswith(".")
                       and f.is_file())
    except OSError:
        return []
    return found[:_MAX_FILES]


def failed_launch(path: Path, *, beside: bool = True) -> tuple[Path, Ending] | None:
    """The console capture that shows the launch behind ``path`` stopping on an error before
    its first logged step, and how; None when there is none. ``beside``: also the text files
    of the folder ``path`` names, or of the folder holding it."""
    candidates = [path] if path.is_file() else []
    if beside:
        folders = [path] if path.is_dir() else []
        folders.append(path.parent)
        candidates += [f for folder in folders for f in _text_files(folder) if f != path]
    for file in candidates:
        ending = ending_in(_tail(file))  # a traceback, or a fatal line (bash's "Killed")
        # (Metric lines before it: a run that stopped later, read as such.)
        if ending is None or not ending.needs_fix or _holds_metrics(file):
            continue
        return file, ending
    return None


class LaunchFailed(InputError):
    """A launch that stopped on an error before its first logged step."""


def launch_error(path: Path, *, beside: bool = True) -> LaunchFailed | None:
    """The error to raise for ``path`` when its launch failed before logging (see
    :func:`failed_launch`), else None."""
    found = failed_launch(path, beside=beside)
    if found is None:
        return None
    file, ending = found
    if ending.kind == "killed":
        return LaunchFailed(f"{file}: the run stopped before its first logged step: "
                            f"{ending.words()}; find what killed it (the host's memory, a "
                            "scheduler's limit), then launch again (no training metric was "
                            "logged: there is nothing else to diagnose)")
    return LaunchFailed(f"{file}: the run stopped before its first logged step, on an error: "
                        f"{ending.words()}{_column_hint(ending)}; fix it and launch again (no "
                        "training metric was logged: there is nothing else to diagnose)")


def _column_hint(ending: Ending) -> str:
    """A reward function's ``KeyError`` on its first call: a dataset column it reads by name
    that the dataset does not have (TRL hands each column to the reward functions as a
    keyword argument: trial 61's ``kwargs["answer"]`` on a dataset whose column was
    ``solution``)."""
    if not ending.error.startswith("KeyError: ") or "reward" not in (ending.where or ""):
        return ""
    key = ending.error[len("KeyError: "):]
    return (f" (the trainer hands each dataset column to the reward functions by name: does "
            f"the dataset have a column {key}?)")


def _holds_metrics(path: Path) -> bool:
    """Whether ``path`` reads as a run with a training metric at a logged step."""
    from grpo_doctor.importers import load_runs  # the registry (it does not import this)

    try:
        return any(run.mapping and run.n_steps for run in load_runs(path))
    except (GrpoDoctorError, OSError, ValueError):
        return False


def silent_stop(path: Path) -> LaunchFailed | None:
    """No log in the folder of ``path`` holds a training step, and its console capture ends
    with no error and no end of training: the process stopped before its first log with
    nothing printed, as a kill from outside leaves it (trial 61: SIGKILL after the first
    step, an MLflow run still RUNNING with only profiling timings, read "holds 2 training
    logs: diagnose one of them"). None otherwise."""
    folder = path if path.is_dir() else path.parent
    try:
        entries = sorted(e for e in folder.iterdir() if not e.name.startswith("."))
    except OSError:
        return None
    captures = []
    for file in _text_files(folder):
        text = _tail(file)
        if (_LAUNCHED.search(text) and not TRACEBACK.search(text)
                and "train_runtime" not in text):
            captures.append(file)
    if not captures or any(_holds_metrics(e) for e in entries[:_MAX_FILES]):
        return None
    return LaunchFailed(
        f"{folder}: no training step was logged, and {captures[0].name} ends with no error and "
        "no end of training: the process stopped before its first log with nothing printed "
        "(killed from outside: the out-of-memory killer, exit status 137; a scheduler's time "
        "or memory limit), or it is still starting; check the job's exit status and the "
        "host's kernel log (dmesg), then relaunch")
