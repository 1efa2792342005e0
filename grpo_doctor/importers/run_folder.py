"""One run's folder holding several logs of it (a Trainer output folder): one run, named after
the folder.

A Hugging Face / TRL output folder commonly holds the same run several times over:
``trainer_state.json`` (and a prefix of it in every ``checkpoint-N/``), TensorBoard event files
under ``runs/`` or ``tensorboard/``, a ``wandb/`` run, a ``metrics.csv`` the user wrote, a
console capture. Read one by one they would be counted as several runs. Here they are the
*copies* of one run: each is read with its own importer, the richest (most steps x metrics)
is the run, the others are checked against it where they share steps and metrics (a
disagreement is a note), and the ones passed over are listed with why. Richest counts the
metrics grpo-doctor knows (steps x GRPO metrics logged): a GPU-statistics CSV's many columns
do not outrank the trainer state. A copy that disagrees with the run at (nearly) every shared
step, beyond rounding, is not a copy: it is read as a run of its own, named after it.

A folder is one run's folder when it holds at least two copies and something that only a
run's own output holds: a trainer state (``trainer_state.json`` or ``checkpoint-N/``), or
exactly one TensorBoard or W&B run. Only the latest trainer state is read (an earlier
checkpoint's is a prefix of it). A folder of unrelated logs side by side (CSV exports of
several runs) is not one run and is read file by file, as are multi-run tracker stores.
``--input-format NAME`` or a file path still reads one copy alone.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from grpo_doctor.errors import FormatError, GrpoDoctorError, InputError
from grpo_doctor.files import entry_path, scandir
from grpo_doctor.importers import detect_format, importer_named
from grpo_doctor.importers._common import (
    SAMPLES_WHY,
    completion_samples_folder,
    head_of,
    walk_files,
)
from grpo_doctor.importers.base import Importer, LoadOptions
from grpo_doctor.importers.console import LOG_LINE_STEPS
from grpo_doctor.importers.tracker_store import unreadable_sqlite
from grpo_doctor.importers.trainer_state import STATE_FILE
from grpo_doctor.resumed import RELAUNCHED, launch_stamped, relaunch_notes
from grpo_doctor.store import Run
from grpo_doctor.text import agree, plural

FORMAT = "run-folder"
_CHECKPOINT_PREFIX = "checkpoint-"
#: Formats whose logs can be a copy of one run (tracker stores hold many runs: not copies).
_COPY_FORMATS = frozenset({
    "trainer-state", "tensorboard", "wandb-offline", "csv", "jsonl", "console", "parquet",
    "long-csv", "wandb-csv", "tensorboard-csv", "notebook",
})
#: Logger stores that can hold many runs. In a run's own folder (TRL's MLflow, Trackio and
#: SwanLab callbacks write ``mlflow.db``/``mlruns/``, ``trackio/``, ``swanlog/`` beside the
#: checkpoints) one holding a single run is a copy of it, and may be the only copy that
#: reaches the last step (a crash after the last save).
_STORE_FORMATS = ("mlflow", "trackio", "swanlab")
#: The format read first among copies equally rich (a trainer state carries the config).
_PREFERENCE = ("trainer-state", "wandb-offline", "tensorboard", "parquet", "jsonl", "csv")
_MAX_ENTRIES = 5000
_SQLITE = frozenset({".db", ".sqlite", ".sqlite3"})
#: Where trainers put a run's TensorBoard files: HF ``runs/<date_host>/``, verl
#: ``tensorboard_log/<project>/<experiment>/``, and the names people give ``logging_dir``.
_TENSORBOARD_FOLDERS = frozenset({
    "runs", "tensorboard", "tensorboard_log", "tensorboard_logs", "tb", "tb_log", "tb_logs",
    "logs", "log",
})
_MAX_PEEK = 50  # files looked at in a subfolder that is not the run's own
#: The console sniffer's score for printed metric dicts or verl step lines (a table alone
#: scores less).
_CAPTURE_SCORE = 80
_MAX_DEPTH = 4
#: Relative tolerance when checking a copy's values against the run's: TensorBoard stores
#: float32, and transformers 5 prints its console dicts to 4 significant figures ('0.3136' for
#: 0.313588, off by up to 5e-4).
_RTOL = 1e-3
#: And absolute: a notebook's table prints 6 decimals (a loss of -6.6e-9 is -0.000000 there;
#: trial 55 read "disagrees ... at 116 of 200 shared steps" from the rounding alone).
_ATOL = 5e-7


@dataclass(frozen=True)
class Copy:
    """One log of the run: a file or folder, and the importer that reads it."""

    path: Path
    format: str
    label: str  # relative to the run's folder


@dataclass(frozen=True)
class Layout:
    copies: tuple[Copy, ...]
    passed_over: tuple[tuple[str, str], ...]  # (label, why) found but not read at all


def _checkpoint_number(name: str) -> int | None:
    tail = name[len(_CHECKPOINT_PREFIX):]
    return int(tail) if name.startswith(_CHECKPOINT_PREFIX) and tail.isdigit() else None


def _event_folders(folder: Path) -> list[Path]:
    """Folders below ``folder`` that directly hold TensorBoard event files (one run each)."""
    found = {p.parent for p in walk_files(folder, _MAX_DEPTH, _MAX_ENTRIES) if "tfevents" in p.name}
    return sorted(found)


def _wandb_runs(folder: Path) -> list[Path]:
    try:
        return sorted(c for c in folder.iterdir() if c.is_dir() and c.name.startswith(
            ("offline-run-", "run-")) and any(c.glob("*.wandb")))
    except OSError:
        return []


def _direct_log(path: Path) -> str | None:
    """The format of a file directly in the folder, when it is a log that can be a copy."""
    try:
        imp = detect_format(path)
    except (FormatError, InputError):
        return None
    if imp.name not in _COPY_FORMATS:
        return None
    # A .json is a log only as a trainer state: config.json, all_results.json ... are not.
    if path.suffix.lower() == ".json" and imp.name != "trainer-state":
        return None
    # Text that only holds a table (a README) is not a capture of the run's training.
    if imp.name == "console" and imp.sniff(path, head_of(path)) < _CAPTURE_SCORE:
        return None
    return imp.name


def _store(path: Path) -> str | None:
    """The format of a logger's store at ``path`` (a folder, or an SQLite file), if it is one."""
    head = b"" if path.is_dir() else head_of(path)
    for name in _STORE_FORMATS:
        # Above an unreadable SQLite's low score: a damaged file is no copy to offer.
        if importer_named(name).sniff(path, head) >= 50:
            return name
    return None


def _holds_logs(folder: Path) -> bool:
    """Whether a folder directly holds log files (a folder of other runs' logs)."""
    try:
        files = sorted(f for f in folder.iterdir() if f.is_file() and not f.name.startswith("."))
    except OSError:
        return False
    return any(_direct_log(f) is not None for f in files[:_MAX_PEEK])


_DAMAGED = "a tracker's SQLite store that cannot be read"



def layout(folder: Path) -> Layout | None:
    """The copies of the run whose folder ``folder`` is, or None when it is not one run's."""
    try:
        entries = sorted(scandir(folder), key=lambda e: e.name)[:_MAX_ENTRIES]
    except OSError:
        return None
    copies: list[Copy] = []
    passed: list[tuple[str, str]] = []
    checkpoints: list[tuple[int, Path]] = []
    structured = 0  # TensorBoard and W&B runs
    has_state = False
    for entry in entries:
        path = entry_path(entry)
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file()
        except OSError:
            continue
        if is_dir:
            number = _checkpoint_number(entry.name)
            if number is not None:
                if (path / STATE_FILE).is_file():
                    checkpoints.append((number, path / STATE_FILE))
                continue
            if entry.name == "wandb":
                runs = _wandb_runs(path)
                if len(runs) > 1:
                    # Launches of the run (a resume starts a new offline run beside the
                    # first): one copy, its importer joins them (helper-79: the folder had
                    # been refused, or read without the console's word of the crash).
                    copies.append(Copy(path, "wandb-offline", entry.name))
                    structured += 1
                    continue
                for run in runs:
                    copies.append(Copy(run, "wandb-offline", run.relative_to(folder).as_posix()))
                    structured += 1
                continue
            if completion_samples_folder(path):
                # TRL's log_completions tables (prompt, completion, rewards per sample): the
                # run's samples, not another run's log (trial 70: the folder had split into
                # six runs and an error row).
                passed.append((entry.name, SAMPLES_WHY))
                continue
            if entry.name.lower() not in _TENSORBOARD_FOLDERS:
                store = _store(path)
                if store is not None:
                    copies.append(Copy(path, store, entry.name))
                    continue
                if _holds_logs(path):
                    return None  # logs of other runs beside this one: a folder of runs
                continue
            launch_folders = _event_folders(path)
            if len(launch_folders) > 1 and all(e.parent == path and launch_stamped(e.name)
                                               for e in launch_folders):
                # The Trainer's runs/<date>_<host> of each launch: one copy, joined as one run.
                copies.append(Copy(path, "tensorboard", entry.name))
                structured += 1
                continue
            for found in launch_folders:
                copies.append(Copy(found, "tensorboard", found.relative_to(folder).as_posix()))
                structured += 1
        elif is_file:
            fmt = _direct_log(path) or (_store(path) if path.suffix.lower() in _SQLITE else None)
            if fmt is None:
                # A tracker's store cut short: said among what was passed over, not dropped.
                if path.suffix.lower() in _SQLITE and unreadable_sqlite(path, head_of(path)):
                    passed.append((entry.name, _DAMAGED))
                continue
            if fmt == "tensorboard":
                structured += 1
            if entry.name == STATE_FILE:
                has_state = True
            copies.append(Copy(path, fmt, entry.name))
    if checkpoints:
        checkpoints.sort()
        if not has_state:
            _, latest = checkpoints.pop()
            copies.append(Copy(latest, "trainer-state", latest.relative_to(folder).as_posix()))
            has_state = True
        passed += [(p.relative_to(folder).as_posix(), _EARLIER) for _, p in checkpoints]
    # Event files directly in the folder are one TensorBoard run: one copy, not one per file.
    events = [c for c in copies if c.format == "tensorboard" and c.path.parent == folder
              and c.path.is_file()]
    if len(events) > 1:
        copies = [c for c in copies if c not in events]
        copies.append(Copy(folder, "tensorboard", "."))
        structured -= len(events) - 1
    # One copy beside a store that cannot be read is still this run's folder: the store is
    # listed as passed over (it had gone unsaid, the folder read as its checkpoint; helper-57).
    damaged = any(why == _DAMAGED for _, why in passed)
    # A run still in its first steps: its console beside the one logger store TRL's callback
    # writes, before any checkpoint (trial 72: a folder watch on a Trackio run alerted twice,
    # once per copy).
    early = (len(copies) == 2 and sum(c.format in _STORE_FORMATS for c in copies) == 1
             and sum(c.format == "console" for c in copies) == 1
             and _single_run_store(next(c for c in copies if c.format in _STORE_FORMATS)))
    if (len(copies) < 2 and not (copies and damaged)) or not (
            has_state or structured == 1 or early):
        return None
    return Layout(tuple(copies), tuple(passed))


def _single_run_store(copy: Copy) -> bool:
    """Whether a logger's store holds exactly one run (a store of several is a folder of
    runs, each read on its own)."""
    try:
        stamp = copy.path.stat().st_mtime_ns
    except OSError:
        return False
    return _store_runs(str(copy.path), copy.format, stamp) == 1


@functools.lru_cache(maxsize=64)
def _store_runs(path: str, format: str, stamp: int) -> int:
    """How many runs a store holds, read once per change of it (``stamp``): the layout is
    asked for when the folder is sniffed and again when it is read."""
    try:
        return len(importer_named(format).load(Path(path), LoadOptions()))
    except GrpoDoctorError:
        return 0


def _sniff(path: Path, head: bytes) -> int:
    if not path.is_dir():
        return 0
    return 97 if layout(path) is not None else 0


def _size(run: Run) -> int:
    """Steps x metrics holding a value: how much of the run a copy holds."""
    logged = int(run.frame.notna().any().sum()) if len(run.frame) else 0
    return run.n_steps * logged


def _known(run: Run) -> int:
    """Steps x metrics grpo-doctor knows (mapped) holding a value: what ranks the copies."""
    if not len(run.frame):
        return 0
    mapped = [m for m in run.mapping if m in run.frame.columns]
    if not mapped:
        return 0
    held = run.frame[mapped].notna()
    return int(held.any(axis=1).sum()) * int(held.any().sum())


def _rank(fmt: str) -> int:
    return _PREFERENCE.index(fmt) if fmt in _PREFERENCE else len(_PREFERENCE)


def _disagreement(run: Run, other: Run) -> str | None:
    """Where ``other`` holds values different from ``run``'s at shared steps and metrics."""
    shared_steps = run.frame.index.intersection(other.frame.index)
    metrics = [m for m in run.mapping if m in other.mapping]
    if not len(shared_steps) or not metrics:
        return "shares no step and metric with it" if metrics else None
    worst: tuple[int, str, int, float, float] | None = None
    for metric in metrics:
        a = run.frame.loc[shared_steps, metric].to_numpy(dtype=np.float64)
        b = other.frame.loc[shared_steps, metric].to_numpy(dtype=np.float64)
        both = np.isfinite(a) & np.isfinite(b)
        off = both & ~np.isclose(a, b, rtol=_RTOL, atol=_ATOL)
        if off.any() and (worst is None or off.sum() > worst[0]):
            i = int(np.flatnonzero(off)[0])
            worst = (int(off.sum()), metric, int(shared_steps[i]), float(a[i]), float(b[i]))
    if worst is None:
        return None
    count, metric, step, mine, theirs = worst
    if _another_run(run, other, shared_steps, metrics):
        return (f"it differs at {plural(count, 'step')} of {len(shared_steps)} shared "
                f"({metric} at step {step}: {theirs:.6g} there, {mine:.6g} here): "
                f"{_ANOTHER}")
    return (f"{metric} differs at {count} of {len(shared_steps)} shared "
            f"{agree(len(shared_steps), 'step', 'steps')} (step {step}: "
            f"{theirs:.6g} there, {mine:.6g} here)")


def _on_steps_of(other: Run, run: Run) -> Run:
    """``other`` on ``run``'s steps when it logged no step of its own (a console capture of
    stdout alone: the Trainer's dicts carry none, its progress bar went to stderr) and holds
    as many rows: its i-th printed dict is the run's i-th logged step. Numbered 1, 2, 3 it
    would be compared with steps 1, 2, 3 of a run logging every 10th, and read as another
    run."""
    if LOG_LINE_STEPS not in other.notes or other.n_steps != run.n_steps or other is run:
        return other
    frame = other.frame.copy()
    frame.index = run.frame.index
    return replace(other, frame=frame, notes=[n for n in other.notes if n != LOG_LINE_STEPS])


def _never_a_number(run: Run, other: Run) -> list[str]:
    """Columns ``other`` logged on every step with no number (TRL's ``None`` for a reward
    function that returned None for every completion) that ``run`` lacks: TensorBoard drops
    such a tag, so the richest copy may be the one without the evidence. Added to ``run``
    as logged NaNs, at the steps the two share."""
    added = []
    for col, steps in other.nan_steps.items():
        if col in run.frame.columns or col not in other.frame.columns or \
                other.frame[col].notna().any():
            continue
        shared = np.intersect1d(steps, run.frame.index.to_numpy())
        if not len(shared):
            continue
        run.frame[col] = np.nan
        run.nan_steps[col] = shared
        if col in other.mapping:
            run.mapping[col] = other.mapping[col]
        added.append(col)
    return added


def _another_run(run: Run, other: Run, steps, metrics: list[str]) -> bool:
    """Whether ``other`` differs from ``run`` beyond rounding (1%) at nine in ten or more of
    the (at least five) shared steps where both logged a shared metric: another run's log,
    not a copy of this one."""
    compared = np.zeros(len(steps), dtype=bool)
    differs = np.zeros(len(steps), dtype=bool)
    for metric in metrics:
        a = run.frame.loc[steps, metric].to_numpy(dtype=np.float64)
        b = other.frame.loc[steps, metric].to_numpy(dtype=np.float64)
        both = np.isfinite(a) & np.isfinite(b)
        compared |= both
        differs |= both & ~np.isclose(a, b, rtol=1e-2, atol=1e-8)
    n = int(compared.sum())
    return n >= 5 and int(differs.sum()) >= 0.9 * n


#: Why a run folder left a log of its run out (audit counts them as copies, not as logs that
#: held no run).
FOLDER_COPY = "another copy of the same run, no richer"
_ANOTHER = "another run's log, read as a run of its own"
_UNKNOWN = "holds no metric grpo-doctor knows"
_EARLIER = "an earlier save of the same log_history"


def _passed_note(passed: list[tuple[str, str]]) -> str:
    """One line naming every log passed over, grouped by why (``audit -v`` has each reason)."""
    copies = [f"{label} {why.removeprefix(FOLDER_COPY).strip()}" for label, why in passed
              if why.startswith(FOLDER_COPY)]
    earlier = [label for label, why in passed if why == _EARLIER]
    other = [f"{label} ({why})" for label, why in passed
             if not why.startswith(FOLDER_COPY) and why != _EARLIER]
    parts = ([f"other copies: {', '.join(copies)}"] if copies else []) + (
        [f"earlier checkpoints: {', '.join(earlier)}"] if earlier else []) + other
    return "passed over " + "; ".join(parts)


def _kept(read: list[tuple[Copy, Run]], keep: str | None) -> int:
    """Where in ``read`` (richest first) the copy ``keep`` is, when it is as far on as the
    richest (its last step not before it); 0 otherwise. A live watch reads its copy while it
    keeps up: a SwanLab log buffered, a console, a checkpoint's state each richest in turn
    had flipped the watch between them, a copy with poorer evidence clearing what another
    had raised (trial 76)."""
    if keep is None or len(read) < 2:
        return 0
    try:
        wanted = Path(keep).resolve()
        i = next((i for i, (c, _) in enumerate(read) if c.path.resolve() == wanted), 0)
    except OSError:
        return 0
    last, best = read[i][1].last_step, read[0][1].last_step
    return i if last is not None and best is not None and last >= best else 0


def _load(path: Path, options: LoadOptions) -> list[Run]:
    found = layout(path)
    if found is None:
        raise FormatError(f"{path}: not one run's folder (no trainer state, TensorBoard or W&B "
                          "run among at least two logs)")
    read: list[tuple[Copy, Run]] = []
    passed = list(found.passed_over)
    relaunched: list[str] = []  # what a copy holding a crash and a relaunch says of it
    one = LoadOptions(column_map=options.column_map, step_column=options.step_column)
    for copy in found.copies:
        try:
            runs = importer_named(copy.format).load(copy.path, one)
        except GrpoDoctorError as exc:
            passed.append((copy.label, f"cannot be read ({str(exc).split(': ', 1)[-1]})"))
            continue
        runs = [r for r in runs if r.n_steps]
        if len(runs) != 1:
            why = "holds no logged step" if not runs else f"holds {len(runs)} runs"
            passed.append((copy.label, why))
            relaunched.extend(relaunch_notes(copy.label, runs))
            continue
        # A copy whose launches read as one run (a console log of a crash, then a resume)
        # says the crash itself: said under the copy's name, whichever copy is read.
        relaunched.extend(f"{copy.label}: {n.split(': ', 1)[1]}" for n in runs[0].notes
                          if RELAUNCHED in n and ": " in n)
        read.append((copy, runs[0]))
    if not read:
        why = "; ".join(f"{label}: {reason}" for label, reason in passed[:3])
        raise FormatError(f"{path}: no log of the run could be read ({why})")
    # Equally rich in what the checks read, the preferred format wins over a copy that only
    # adds columns (a tracker's profiling timings): a trainer state brings its checkpoint's
    # training_args.bin and config.json.
    read.sort(key=lambda cr: (-_known(cr[1]), _rank(cr[0].format), -_size(cr[1]),
                              cr[0].label))
    kept = _kept(read, options.keep_copy)
    if kept:
        read.insert(0, read.pop(kept))
    (best_copy, run), others = read[0], read[1:]
    shape = f"{run.n_steps} steps x {int(run.frame.notna().any().sum())} metrics"
    richest = ("" if len(found.copies) == 1 else ", the one read before, as far on as the "
               "richest" if kept else ", the richest") + (
        "" if _known(run) else " (no metric grpo-doctor knows)")
    notes = [f"one run's folder: {plural(len(found.copies), 'log')} of it found; read "
             f"{best_copy.label} ({best_copy.format}, {shape}){richest}"]
    config: dict = {}
    apart: list[tuple[Copy, Run]] = []
    for copy, other in others:
        ending, summary = other.ending, other.summary
        other = _on_steps_of(other, run)
        other_shape = f"{other.n_steps} x {int(other.frame.notna().any().sum())}"
        clash = _disagreement(run, other)
        if clash and clash.endswith(_ANOTHER):
            notes.append(f"{copy.label} is not a copy of {best_copy.label}: {clash}")
            other.notes = [f"in {path.resolve().name}/ beside {best_copy.label}, which it "
                           f"is not a copy of: {clash.removesuffix(_ANOTHER)}read as a run "
                           f"of its own", *other.notes]
            apart.append((copy, other))
            continue
        if run.mapping and not other.mapping and _known(run):
            passed.append((copy.label, f"{_UNKNOWN} ({other_shape})"))
            continue
        passed.append((copy.label, f"{FOLDER_COPY} ({other_shape})"))
        # The process's console beside the logs it wrote says how it ended (a traceback, or
        # the Trainer's closing summary).
        run.ending = run.ending or ending
        # Where a copy that kept its launches apart says the run was resumed (a trainer state
        # carries its history on through a resume, unmarked).
        run.resumed_at = run.resumed_at or other.resumed_at
        run.summary = {**(summary or {}), **(run.summary or {})}
        never = _never_a_number(run, other)
        if never:
            notes.append(f"{', '.join(other.mapping.get(c, c) for c in never)} logged with no "
                         f"value (None) on every step in {copy.label}, absent from "
                         f"{best_copy.label}: kept as evidence")
        if clash:
            notes.append(f"{copy.label} disagrees with {best_copy.label}: {clash}")
        config.update(other.config)
    passed.sort()
    if passed:  # (an empty "passed over " had been said, helper-77)
        notes.insert(1, _passed_note(passed))
    # (The copy read says its own crash in its notes already.)
    notes.extend(n for n in relaunched if not n.startswith(f"{best_copy.label}: "))
    run.config = {**config, **run.config}
    run.name = path.resolve().name
    run.notes = [*notes, *run.notes]
    run.passed_over = [(os.path.join(str(path), label), why) for label, why in passed]
    out = [run]
    for copy, other in apart:
        other.name = f"{run.name}/{copy.label}"
        out.append(other)
    return out


IMPORTER = Importer(
    name=FORMAT,
    sniff=_sniff,
    load=_load,
    reads_folders=True,
    whole_folder=True,
)


def _state_beside(folder: Path) -> bool:
    """Whether ``folder`` holds a trainer state, its own or a checkpoint's: by names alone, and
    once per folder as it stands, so that an audit of a flat folder of N logs neither sniffs
    every file N times (helper-77) nor lists the folder N times."""
    if not isinstance(folder, Path):  # a store's folder: listed as it is
        return _names_a_state(folder)
    try:
        changed = os.stat(folder).st_mtime_ns
    except OSError:
        return False
    return _local_names_a_state(str(folder), changed)


@functools.lru_cache(maxsize=64)
def _local_names_a_state(folder: str, changed: int) -> bool:
    """``_state_beside`` of a local folder as of its modification time ``changed``."""
    return _names_a_state(Path(folder))


def _names_a_state(folder: Path) -> bool:
    try:
        entries = list(scandir(folder))
    except OSError:
        return False
    return any(e.name == STATE_FILE or _checkpoint_number(e.name) is not None for e in entries)


def richer_state_beside(run: Run) -> str | None:
    """A note when ``run`` was read from one log file of a run's folder whose trainer state
    (the folder's own or its latest checkpoint's) holds more of what the checks read: pointed
    at a notebook, a user had 7 checks run of 11, the entropy and grad norm sitting in the
    checkpoint beside it (trial 55). Only the trainer state is read, a small JSON; None
    otherwise."""
    path = Path(run.source)
    if not path.is_file() or path.name == STATE_FILE or not _state_beside(path.parent):
        return None
    found = layout(path.parent)
    if found is None or not any(c.path == path for c in found.copies):
        return None
    state = next((c for c in found.copies if c.format == "trainer-state"), None)
    if state is None:
        return None
    try:
        other = importer_named(state.format).load(state.path, LoadOptions())
    except GrpoDoctorError:
        return None
    if len(other) != 1 or _known(other[0]) <= _known(run):
        return None
    clash = _disagreement(run, _on_steps_of(other[0], run))
    if clash and clash.endswith(_ANOTHER):
        return None
    mine = sum(m in run.frame.columns for m in run.mapping)
    theirs = sum(m in other[0].frame.columns for m in other[0].mapping)
    if theirs <= mine:
        return None
    return (f"a richer log of this run lies beside it: {state.label} ({theirs} metrics "
            f"grpo-doctor reads, against {mine} here); point grpo-doctor at the folder "
            f"({path.parent.name}/) to read the richest")
