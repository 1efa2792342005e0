"""Importers: one module per source format, detected by content, all ending in ``build_run``.

Each format module (``tensorboard`` and ``wandb_offline`` are packages) defines ``IMPORTER``,
an :class:`Importer`. What several importers share lives in the ``_``-prefixed modules
(``_common``: file heads, text sniffing, numbers, small files; ``_records``: dicts into a frame;
``_csv``, ``_long``: CSV and long rows; ``_tables``: progress tables pasted as text; ``_bytes``:
numpy byte primitives of the binary logs) and ``incremental`` (reading a growing log); importers
take helpers from there, never from one another (the notebook importer reads a cell's console
output with the console importer's parser). ``wandb://`` sources are fetched by
``grpo_doctor.remote`` into a local cache, which ``grpo_doctor.sources`` then reads here.

Modules are imported only when a format is being detected or loaded, and heavy packages
(tensorboard, wandb, pyarrow) only inside ``load``; so ``grpo-doctor --help`` stays fast.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from grpo_doctor.errors import ConfigError, FormatError, InputError
from grpo_doctor.files import as_path, check_input, is_remote
from grpo_doctor.importers._common import (
    HEAD_BYTES,
    OWN_EVENTS_WHY,
    SAMPLES_WHY,
    completion_samples,
    completion_samples_at,
    completion_samples_folder,
    looks_like_text,
    own_events,
    read_head,
    read_json,
)
from grpo_doctor.importers.base import Delta, Importer, Incremental, LoadOptions
from grpo_doctor.metrics import ColumnMap
from grpo_doctor.objstore import StorePath
from grpo_doctor.store import Run
from grpo_doctor.text import agree, plural

# Module names under grpo_doctor.importers, in the order ties are broken.
_MODULES = [
    "run_folder",
    "tensorboard",
    "wandb_offline",
    "mlflow_store",
    "trackio_store",
    "swanlab_log",
    "trainer_state",
    "notebook",
    "console",
    "exports",
    "exports_tb",
    "exports_long",
    "parquet",
    "jsonl",
    "csv_table",
]


def registry() -> list[Importer]:
    """Every importer, in tie-break order."""
    return [importlib.import_module(f"grpo_doctor.importers.{mod}").IMPORTER for mod in _MODULES]


def format_names() -> list[str]:
    return [imp.name for imp in registry()]


def detect_format(path: Path) -> Importer:
    """The importer whose sniffer is most confident about ``path``."""
    head = b"" if path.is_dir() else read_head(path)
    scored = []
    for order, imp in enumerate(registry()):
        if path.is_dir() and not imp.reads_folders:
            continue
        score = imp.sniff(path, head)
        if score > 0:
            scored.append((-score, order, imp))
    json_like = not path.is_dir() and path.suffix.lower() == ".json" and (
        head.lstrip()[:1] in (b"[", b"{"))
    if not scored:
        what = "folder" if path.is_dir() else "file"
        if not path.is_dir() and not head:
            raise FormatError(f"{path}: the file is empty")
        if json_like:
            _not_a_json_log(path)
        if head.startswith((b"\xff\xfe", b"\xfe\xff")):
            # What Windows PowerShell's ">" writes (helper-84: refused, not saying why).
            raise FormatError(f"{path}: UTF-16 text (as Windows PowerShell's '>' writes it): "
                              f"save it as UTF-8 (iconv -f UTF-16 -t UTF-8 FILE > NEW.log, or "
                              f"'| Out-File -Encoding utf8'), then read that")
        if path.suffix.lower() in _CAPTURE_SUFFIXES and looks_like_text(head):
            raise FormatError(f"{path}: {_no_metric_lines(head)}")
        raise FormatError(
            f"{path}: not a training log grpo-doctor can read ({what} format not recognised; "
            f"formats: {', '.join(format_names())})"
        )
    scored.sort(key=lambda t: (t[0], t[1]))
    best = scored[0][2]
    if best.name == "csv" and json_like:
        # A .json file no JSON reader took (cut short, or not a log): a CSV reader would
        # only misname it ("a header but no rows").
        _not_a_json_log(path)
    return best


#: Names of a captured console: a text one with no metric line says so, not "format".
_CAPTURE_SUFFIXES = frozenset({".log", ".out", ".txt", ".err", ".stdout", ".stderr"})


def _no_metric_lines(head: bytes) -> str:
    """Why a captured console's text holds no run: no metric line; wandb's closing summary
    draws its history as sparklines, which hold no values (trial 62)."""
    said = ("not a training log grpo-doctor can read: text with no metric lines (expected "
            "verl 'step:N - key:value' lines, printed {'loss': ...} dicts or a Step | ... "
            "table)")
    if b"wandb: Run history:" in head or b"wandb: Run summary:" in head:
        said += ("; wandb's closing 'Run history' draws sparklines, not values: read the "
                 "run's wandb/run-*/ folder, or grpo-doctor fetch ENTITY/PROJECT/RUN")
    return said


#: The size up to which a .json no reader took is parsed to say where it breaks.
_JSON_CHECK_BYTES = 64 << 20


def _not_a_json_log(path: Path) -> NoReturn:
    """Raise the error for a .json file no reader took: where its JSON breaks (a file cut
    short, mid-copy or mid-save, is the usual case), else that it holds no logged steps."""
    if path.stat().st_size <= _JSON_CHECK_BYTES:
        read_json(path, "not valid JSON: cut short, or not a training log")
    raise FormatError(f"{path}: not a JSON training log grpo-doctor can read (not valid "
                      "JSON, or JSON with no logged steps: a trainer_state.json, a "
                      "log_history list or JSON lines are)")


#: Markdown documents: read only as a console capture (a terminal saved as ``.md``); any
#: other reading of one found in a folder (a heading with a comma sniffed as a CSV header, a
#: table of prose) is a document's, not a log's.
MARKDOWN_DOCS = frozenset({".md", ".markdown"})

#: Files of a folder tried as logs when the folder itself is not one.
MAX_FOLDER_FILES = 200


def _logs_in(folder: Path) -> tuple[list[Path], bool]:
    """The files directly in ``folder`` that some importer recognises, and whether there were
    more files than were tried."""
    try:
        files = sorted(f for f in folder.iterdir() if f.is_file() and not f.name.startswith("."))
    except OSError:
        return [], False
    from grpo_doctor.importers.sidecar import NAMES as CONFIG_NAMES

    logs = []
    for f in files[:MAX_FOLDER_FILES]:
        if f.name in CONFIG_NAMES:
            continue  # the run's settings beside its log, read with it (sidecar)
        if completion_samples(f):
            continue  # TRL's log_completions samples: the run's, no log (trial 70)
        try:
            imp = detect_format(f)
        except (FormatError, InputError):
            continue
        if f.suffix.lower() in MARKDOWN_DOCS and imp.name != "console":
            continue  # notes beside the log (a table sniffed as CSV), as audit passes them over
        logs.append(f)
    return logs, len(files) > MAX_FOLDER_FILES


#: Subfolders of a folder looked into for logs when the folder itself is not one.
MAX_FOLDER_DIRS = 50


def _subfolder_logs(folder: Path) -> list[tuple[Path, str | None]]:
    """(subfolder, format) for each subfolder of ``folder`` that is a log itself (a logger's
    store: SwanLab's ``swanlog/``, Trackio's, ``mlruns/``), or (subfolder, None) when it
    directly holds log files."""
    try:
        subs = sorted(d for d in folder.iterdir() if d.is_dir() and not d.name.startswith("."))
    except OSError:
        return []
    found: list[tuple[Path, str | None]] = []
    for sub in subs[:MAX_FOLDER_DIRS]:
        if completion_samples_folder(sub):
            continue  # TRL's log_completions samples: the run's, no log (trial 70)
        try:
            found.append((sub, detect_format(sub).name))
        except (FormatError, InputError):
            if _logs_in(sub)[0]:
                found.append((sub, None))
    return found


def _beside_events(folder: Path) -> list[Path]:
    """Logs in ``folder`` (its files, its subfolders) that hold no TensorBoard event file:
    other runs beside the events the TensorBoard reader would read as the folder's run."""
    events = importer_named("tensorboard")
    others = [sub for sub, fmt in _subfolder_logs(folder)
              if fmt != events.name and events.sniff(sub, b"") <= 0]
    return others + [f for f in _logs_in(folder)[0] if detect_format(f) is not events]


def _several_logs(folder: Path, logs: list[Path], more: bool) -> FormatError:
    """A folder holding separate logs is not one run: say what it holds and what to do."""
    names = ", ".join(f.name for f in logs[:4]) + (", ..." if len(logs) > 4 else "")
    count = f"at least {len(logs)}" if more else str(len(logs))
    return FormatError(f"{folder} holds {count} training logs ({names}): diagnose one of them, "
                       f"or audit the folder")


def _no_log(folder: Path) -> FormatError:
    """A folder that is no log and holds none: said as ``audit`` says it, and what was there."""
    try:
        files = sum(1 for f in folder.iterdir() if not f.name.startswith("."))
    except OSError:
        files = 0
    held = (f" ({plural(files, 'entry', 'entries')}, none a log in a format grpo-doctor reads: "
            f"{', '.join(format_names())})" if files else " (the folder is empty)")
    return FormatError(f"no training log found in {folder}{held}")


def importer_named(name: str) -> Importer:
    for imp in registry():
        if imp.name == name:
            return imp
    raise ConfigError(f"unknown format {name!r}; formats: {', '.join(format_names())}")


def load_options(column_map: Mapping[str, str] | None = None, step_column: str | None = None,
                 run: str | None = None) -> LoadOptions:
    # A ColumnMap keeps its optional (config-file) entries; a plain mapping is copied.
    cmap = column_map if isinstance(column_map, ColumnMap) else dict(column_map or {})
    return LoadOptions(column_map=cmap, step_column=step_column, run=run)


def load_runs(
    source: str | os.PathLike[str],
    *,
    format: str | None = None,
    column_map: Mapping[str, str] | None = None,
    step_column: str | None = None,
    run: str | None = None,
) -> list[Run]:
    """Every run held by ``source``: a file or folder, local or ``s3://``, ``gs://``, ``az://``.
    (A ``wandb://`` run is fetched into a local cache first: ``grpo_doctor.load_runs`` does.)"""
    options = load_options(column_map, step_column, run)
    text = str(source) if is_remote(source) else os.fspath(source)
    if text.startswith("wandb://"):
        raise InputError(f"{text}: a wandb:// source is fetched before it is read; "
                         "grpo_doctor.load_runs reads it")
    path = as_path(source if isinstance(source, StorePath) else text)
    check_input(path)
    if not is_remote(path) and not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")
    if not format and not is_remote(path) and path.is_file() and own_events(path):
        raise FormatError(f"{path}: {OWN_EVENTS_WHY}: diagnose the log it watched")
    if not format and completion_samples_at(path):
        run_folder = path.parent if path.is_dir() else path.parent.parent
        raise FormatError(f"{path}: {SAMPLES_WHY} (a prompt, a completion and its rewards per "
                          f"row): diagnose the run's folder, {run_folder}")
    if format:
        imp = importer_named(format)
    else:
        try:
            imp = detect_format(path)
        except FormatError:
            # A run folder holding one log file (e.g. metrics.csv): read that file; or one
            # logger's store (an output folder whose only log is swanlog/): read that.
            logs, more = _logs_in(path) if path.is_dir() else ([], False)
            if len(logs) > 1 and run is not None and (one := _named_log(logs, run)):
                # A run of the folder named as audit names it (its log's name): that log
                # (helper-84: --run was passed over for a folder of several logs).
                return load_runs(one, column_map=column_map, step_column=step_column)
            if len(logs) > 1:
                raise _several_logs(path, logs, more) from None
            if not logs and path.is_dir():
                stores = _subfolder_logs(path)
                subs = [sub for sub, _ in stores]
                if len(stores) > 1 and run is not None and (one := _named_log(subs, run)):
                    return load_runs(one, column_map=column_map, step_column=step_column)
                if len(stores) == 1 and stores[0][1] is not None:
                    logs = [stores[0][0]]
                elif stores:
                    raise _several_logs(path, subs, False) from None
                else:
                    raise _no_log(path) from None
            if not logs:
                raise
            path, imp = logs[0], detect_format(logs[0])
        else:
            if imp.name == "tensorboard" and path.is_dir() and not is_remote(path):
                # Event files somewhere below, and other logs beside them: a folder of runs
                # (it read one TensorBoard file as the folder's run, helper-50).
                beside = _beside_events(path)
                if beside:
                    names = ", ".join(f.name for f in beside[:4]) + (
                        ", ..." if len(beside) > 4 else "")
                    raise FormatError(
                        f"{path} holds TensorBoard events and {plural(len(beside), 'other log')}"
                        f" ({names}): diagnose one of them, or audit the folder")
    return picked(text, imp.load(path, options), run)


def _named_log(logs: Sequence[Path], run: str) -> Path | None:
    """The one log (a file, or a run's folder) of a folder that ``run`` names, or None."""
    named = name_matches([f.stem for f in logs], run) or name_matches(
        [f.name for f in logs], run)
    return logs[named[0]] if len(named) == 1 else None


def name_matches(names: Sequence[str], run: str) -> list[int]:
    """The indices of ``names`` that ``run`` names: the name itself, else a part of it, else
    its two ends around a cut ("…" or "...")."""
    chosen = [k for k, n in enumerate(names) if n == run]
    if not chosen:
        # A part of the name picks the one run whose name holds it (long generated names:
        # "grpo_formal_1" for "grpo_formal_1p5b_seed3").
        chosen = [k for k, n in enumerate(names) if run.lower() in n.lower()]
    if not chosen and ("…" in run or "..." in run):
        # A name as a report cut it in the middle ("grpo_formal_1p5b_…_20260720T035927Z"):
        # its two ends pick the run (helper-83: a name copied from audit was refused).
        head, _, tail = run.replace("...", "…").partition("…")
        tail = tail.lstrip("…")
        chosen = [k for k, n in enumerate(names) if n.lower().startswith(head.lower())
                  and n.lower().endswith(tail.lower())
                  and len(n) > len(head) + len(tail)]  # the cut took something
    return chosen


def picked(source: str, runs: list[Run], run: str | None) -> list[Run]:
    """The runs read from ``source`` that are reported: the one named ``run`` if given, and
    only those holding a logged step."""
    if run is not None:
        chosen = [runs[k] for k in name_matches([r.name for r in runs], run)]
        if not chosen or (len(chosen) > 1 and any(r.name != run for r in chosen)):
            names = ", ".join(r.name for r in (chosen or runs))
            what = "no run named" if not chosen else "more than one run matches"
            raise InputError(f"{source}: {what} {run!r} (runs: {names})")
        runs = chosen
    if not runs:
        raise InputError(f"{source}: no run found")
    return _with_steps(source, runs)


def _with_steps(source: str, runs: list[Run]) -> list[Run]:
    """The runs holding at least one logged step: a report on no step at all would say nothing
    while looking like a diagnosis. An error when no run has one."""
    kept = [r for r in runs if r.n_steps]
    if not kept:
        why = next((n for r in runs for n in r.notes if "step" in n and "dropped" in n), None)
        raise InputError(f"{source}: no logged steps found" + (f" ({why})" if why else ""))
    if len(kept) < len(runs):
        names = [r.name for r in runs if not r.n_steps]
        what = f"{agree(len(names), 'a run', 'runs')} without a logged step left out"
        for run in kept:
            run.notes.append(f"{what}: {', '.join(names)}")
    return kept


def load_run(source: str | os.PathLike[str], **options: object) -> Run:
    """The one run held by ``source`` (``run="NAME"`` picks one of several); an error naming
    the runs if there are several and none was picked."""
    return only_run(source, load_runs(source, **options))  # type: ignore[arg-type]


def only_run(source: str | os.PathLike[str], runs: list[Run]) -> Run:
    """The one run of ``runs`` (what ``source`` held); an error naming them when several."""
    if len(runs) > 1:
        names = ", ".join(r.name for r in runs[:10])
        more = f" and {len(runs) - 10} more" if len(runs) > 10 else ""
        raise InputError(
            f"{os.fspath(source)} holds {len(runs)} runs ({names}{more}); pick one with "
            f"load_run(path, run=NAME), or read them all with load_runs(path)"
        )
    return runs[0]


__all__ = ["HEAD_BYTES", "Delta", "Importer", "Incremental", "LoadOptions", "detect_format",
           "format_names", "importer_named", "load_options", "load_run", "load_runs", "only_run",
           "picked", "registry"]
