"""W&B run folders (``wandb/offline-run-*``, ``wandb/run-*``): metrics from ``run-<id>.wandb``.

Since wandb-core, an offline run's metrics live only in its ``run-<id>.wandb`` transaction log
(no ``wandb-history.jsonl``), and wandb no longer ships a Python reader for it. The log is read
here (research note ``importers-research.md`` §3.4-3.5): a 7-byte header ``:W&B`` + uint16
0xBEE1 + uint8 version, then 32 KiB blocks of LevelDB-log chunks ``uint32 crc | uint16 length |
uint8 type (FULL, FIRST, MIDDLE, LAST) | data`` with ``crc = zlib.crc32(data, crc32(type))``.
Each reassembled record is a ``wandb.proto.wandb_internal_pb2.Record``. A chunk with a bad CRC
loses the rest of its block (as LevelDB does), with a note; a live run's cut tail is tolerated.

History items carry their key as ``nested_key`` (wandb-core) or ``key`` (older writers) and a
JSON value. Nested keys are joined with "/"; media (a group holding ``_type``), text and lists
are skipped; ``_step`` is the step unless ``define_metric("*", step_metric=...)`` named another.

Speed: a clean log's chunks are framed for all its 32 KiB blocks at once (chunks never cross
a block; ``_clean_log_spans``), each chunk's CRC one C call; records split over blocks are
joined after the file. History and summary records in wandb-core's layout are then taken
apart in bulk with numpy (``_read_in_bulk``), a key's values kept as one piece of bytes per
batch, and a key whose values are all plain JSON numbers is read by Arrow's correctly rounded
parser in one call (``_json_numbers``, which first refuses what JSON refuses). A file holding
any history or summary record in another layout, or any damage, is read record by record
with protobuf, with the notes the generator ``iter_log_records`` makes.

Modules: ``log`` (the framing), ``records`` (values and one run's records), ``bulk`` (the
bulk decoder); this one reads a run folder, builds the Run and follows a live log.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.importers._bytes import Buffer
from grpo_doctor.importers._common import has_magic, launches_run_name, read_yaml, walk_files
from grpo_doctor.importers.base import Delta, Importer, Incremental, LoadOptions
from grpo_doctor.importers.incremental import (
    FileIdentity,
    SeveralRuns,
    read_from,
    rows_from_records,
    snapshot,
)
from grpo_doctor.importers.wandb_offline.bulk import _ROOM, _column, _read_in_bulk
from grpo_doctor.importers.wandb_offline.log import (
    _HEADER,
    MAGIC,
    LogFraming,
    LogPosition,
    iter_log_records,
)
from grpo_doctor.importers.wandb_offline.records import (
    _INTERNAL,
    _apply_record,
    _flatten,
    _float,
    _is_number,
    _loads,
    _new_log,
    _RunLog,
    _set_path,
    _to_numeric,
    _unwrap,
)
from grpo_doctor.live_store import Rows
from grpo_doctor.resumed import LAUNCHES, with_resumed
from grpo_doctor.store import Run, build_run, check_table_size
from grpo_doctor.text import agree, plural

_MAX_DEPTH = 4
_SNIFF_MAX_ENTRIES = 5000


# --- one run ----------------------------------------------------------------------------------


def read_wandb_log(path: Path) -> _RunLog:
    """Everything grpo-doctor uses from one ``run-<id>.wandb`` file."""
    # Room after the file for the records split over blocks (joined there, see
    # ``_clean_log_spans``): a few percent of the file in wandb-core's logs.
    b = Buffer.read(path, room=_ROOM)
    data = b.data
    if len(data) < _HEADER.size or data[:4] != MAGIC:
        raise FormatError(f"{path}: not a W&B run file (no ':W&B' header)")

    from google.protobuf.message import DecodeError
    from wandb.proto import wandb_internal_pb2 as pb

    log = _read_in_bulk(b, _new_log(path, data), pb, DecodeError)
    if log is not None:
        return log
    log = _new_log(path, data)
    # wandb's generated protobuf modules make their messages at import time: no stub has them.
    parse = pb.Record.FromString  # type: ignore[attr-defined]
    columns = log.columns
    unreadable = 0
    for raw in iter_log_records(data, log.notes):
        try:
            rec = parse(raw)
        except DecodeError:
            unreadable += 1
            continue
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            row = log.n_rows
            log.n_rows += 1
            hist = rec.history
            for item in hist.item:
                key = "/".join(item.nested_key) if item.nested_key else item.key
                col = columns.get(key)
                if col is None:
                    col = columns[key] = ([], [])
                col[0].append(row)
                col[1].append(item.value_json)
            if hist.HasField("step"):
                log.step_num[row] = hist.step.num
        elif kind == "summary":
            summary = log.summary
            for item in rec.summary.update:
                summary[item.key or "/".join(item.nested_key)] = item.value_json
            for item in rec.summary.remove:
                summary.pop(item.key or "/".join(item.nested_key), None)
        else:
            _apply_record(log, rec, kind)
    if unreadable:
        log.notes.append(f"{plural(unreadable, 'unreadable record')} skipped")
    return log


def _read_config_yaml(folder: Path, notes: list[str]) -> dict[str, Any]:
    path = folder / "files" / "config.yaml"
    if not path.is_file():
        return {}
    try:
        loaded = read_yaml(path)
    except InputError as exc:  # a broken side file must not stop the metrics: noted
        notes.append(f"config left out: {exc}")
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {str(k): _unwrap(v) for k, v in loaded.items()}


def _read_summary_json(folder: Path) -> dict[str, Any]:
    path = folder / "files" / "wandb-summary.json"
    if not path.is_file():
        return {}
    try:
        loaded = _loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    out: dict[str, Any] = {}
    if isinstance(loaded, dict):
        _flatten("", loaded, out)
    return out


def _build_frame(log: _RunLog) -> tuple[Any, dict[str, np.ndarray], np.ndarray, list[str]]:
    """Wide frame (one row per history record), logged-NaN masks, steps, notes."""
    import pandas as pd

    n = log.n_rows
    parsed: dict[str, tuple[list[int], list[Any]]] = {}
    bad_json = 0
    for key, (rows, texts) in log.columns.items():
        r, values, bad = _column(rows, texts)
        bad_json += bad
        if isinstance(values, np.ndarray):  # plain numbers
            if key in parsed:
                parsed[key][0].extend(np.asarray(r).tolist())
                parsed[key][1].extend(values.tolist())
            else:
                parsed[key] = (r, values)
            continue
        # Older writers log a whole dict under one key: flatten it here.
        if dict in set(map(type, values)):  # JSON values: a dict is exactly a dict
            for row, v in zip(r, values):
                flat: dict[str, Any] = {}
                if isinstance(v, dict):
                    _flatten(key, v, flat)
                else:
                    flat[key] = v
                for k, leaf in flat.items():
                    dest = parsed.setdefault(k, ([], []))
                    dest[0].append(row)
                    dest[1].append(leaf)
        elif key in parsed:  # the same key came flattened from a dict as well
            rows_before, values_before = parsed[key]
            if isinstance(values_before, np.ndarray):
                parsed[key] = (np.asarray(rows_before).tolist(), values_before.tolist())
            parsed[key][0].extend(r)
            parsed[key][1].extend(values)
        else:
            parsed[key] = (r, values)

    check_table_size(str(log.path), n, len(parsed), sum(len(r) for r, _ in parsed.values()))
    media = {k[: -len("/_type")] for k in parsed if k.endswith("/_type")}
    skipped: set[str] = set(media)
    data: dict[str, np.ndarray] = {}
    explicit: dict[str, np.ndarray] = {}
    for key, (rows, values) in parsed.items():
        if key in _INTERNAL or key == "_wandb" or key.startswith("_wandb/"):
            continue
        if key.endswith("/_type") or any(key.startswith(m + "/") for m in media):
            continue
        numeric = _to_numeric(values)
        if numeric is None:
            skipped.add(key)
            continue
        arr, nan_mask, _other = numeric
        col = np.full(n, np.nan, dtype=np.float64)
        idx = np.asarray(rows, dtype=np.int64)
        col[idx] = arr
        data[key] = col
        if nan_mask.any():
            mask = np.zeros(n, dtype=bool)
            mask[idx] = nan_mask
            explicit[key] = mask

    notes: list[str] = []
    if bad_json:
        notes.append(f"{plural(bad_json, 'history value')} that {agree(bad_json, 'is', 'are')} not "
                     "JSON skipped")
    if skipped:
        names = sorted(skipped)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        notes.append(f"{plural(len(names), 'non-scalar key')} skipped (media, text, lists): "
                     f"{shown}")

    steps = _steps(log, parsed, notes)
    frame = pd.DataFrame(data, index=pd.RangeIndex(n))
    return frame, explicit, steps, notes


def _steps(log: _RunLog, parsed: dict[str, tuple[list[int], list[Any]]],
           notes: list[str]) -> np.ndarray:
    """``_step`` per history record (else the record's step, else ``_runtime`` order)."""
    n = log.n_rows
    steps = np.full(n, np.nan, dtype=np.float64)
    _put_numbers(steps, parsed.get("_step"))
    missing = np.isnan(steps)
    if missing.any() and log.step_num:
        for r, num in log.step_num.items():
            if missing[r]:
                steps[r] = num
        missing = np.isnan(steps)
    if missing.all() and n:
        runtime = np.full(n, np.inf)
        _put_numbers(runtime, parsed.get("_runtime"))
        steps = np.argsort(np.argsort(runtime, kind="stable"), kind="stable").astype(np.float64)
        notes.append("no _step in the history: steps are records in _runtime order")
    return steps


def _put_numbers(out: np.ndarray, column: tuple[list[int], list[Any]] | None) -> None:
    """A parsed column's numbers into ``out`` at their rows (other values left out)."""
    if column is None:
        return
    rows, values = column
    if isinstance(values, np.ndarray):
        out[np.asarray(rows, dtype=np.int64)] = values
    else:
        for r, v in zip(rows, values):
            if _is_number(v):
                out[r] = float(v)


def _load_log(log: _RunLog, name: str, options: LoadOptions) -> Run:
    folder = log.path.parent
    frame, explicit, steps, notes = _build_frame(log)
    if frame.shape[1] == 0:
        raise FormatError(f"{log.path}: no scalar metrics in the W&B run's history")
    step_column = options.step_column
    if step_column is None and log.step_metric and log.step_metric in frame.columns:
        step_column = log.step_metric
    config = {**_read_config_yaml(folder, notes), **log.config}
    config.pop("_wandb", None)
    config.pop("wandb_version", None)
    summary: dict[str, Any] = {}
    raw_summary: dict[str, Any] = {}
    for key, text in log.summary.items():
        try:
            raw_summary[key] = _loads(text)
        except ValueError:
            continue
    _flatten("", _nest(raw_summary), summary)
    summary = {k: v for k, v in summary.items() if not k.startswith("_wandb")}
    if not summary:
        summary = _read_summary_json(folder)
    return build_run(
        frame, name=name, source=str(folder), format="wandb-offline",
        steps=steps if step_column is None else None, step_column=step_column,
        config=config, column_map=options.column_map, explicit_nan=explicit,
        notes=[*log.notes, *notes], summary=summary,
    )


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    """"/"-joined keys back to nested dicts, so media groups can be recognised and dropped."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        _set_path(out, key.split("/"), value)
    return out


# --- discovery, sniffing, loading -------------------------------------------------------------


def _log_files(path: Path, max_entries: int | None = None) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for p in walk_files(path, _MAX_DEPTH, max_entries):
        if p.name.endswith(".wandb") and has_magic(p, MAGIC):
            yield p


def _sniff(path: Path, head: bytes) -> int:
    try:
        if path.is_dir():
            return 90 if next(_log_files(path, _SNIFF_MAX_ENTRIES), None) is not None else 0
    except OSError:
        return 0
    if head.startswith(MAGIC):
        return 95 if path.name.endswith(".wandb") else 85
    return 0


def _run_names(logs: list[_RunLog]) -> list[str]:
    """The display name where it is set and unique, else the run folder's name."""
    per_folder: dict[Path, int] = {}
    for log in logs:
        per_folder[log.path.parent] = per_folder.get(log.path.parent, 0) + 1
    folder_names = [
        log.path.parent.resolve().name if per_folder[log.path.parent] == 1
        else f"{log.path.parent.resolve().name}/{log.path.stem}"
        for log in logs
    ]
    display = [log.display_name for log in logs]
    return [
        d if d and display.count(d) == 1 and d not in folder_names else f
        for d, f in zip(display, folder_names)
    ]


def _load(path: Path, options: LoadOptions) -> list[Run]:
    files = sorted(_log_files(path))
    if not files:
        raise FormatError(f"{path}: no W&B run files (run-<id>.wandb) found")
    logs: list[_RunLog] = []
    errors: list[FormatError] = []
    for f in files:
        try:
            logs.append(read_wandb_log(f))
        except FormatError as exc:
            if len(files) == 1:
                raise
            errors.append(exc)
    names = _run_names(logs)
    picked_one = False
    if options.run is not None:
        # --run may name a run by display name, folder name or run id.
        picked = [
            i for i, log in enumerate(logs)
            if options.run in (names[i], log.display_name, log.run_id, log.path.parent.name)
        ]
        if picked:
            logs = [logs[i] for i in picked]
            names = [options.run] * len(picked)
            picked_one = True
    runs: list[Run] = []
    for log, name in zip(logs, names):
        if log.n_rows == 0:
            if len(logs) == 1:
                raise FormatError(f"{log.path}: the W&B run has no logged history")
            continue
        try:
            runs.append(_load_log(log, name, options))
        except FormatError as exc:
            if len(logs) == 1:
                raise
            errors.append(exc)
    if not runs:
        if errors:
            raise errors[0]
        raise FormatError(f"{path}: no W&B run with logged history")
    # A name that picked no launch may be a resumed run's joined name: picked after joining.
    return runs if picked_one else _resumed(runs)


def _resumed(runs: list[Run]) -> list[Run]:
    """The run folders of one run resumed joined: a Trainer resumed from a checkpoint starts a
    new offline run beside the first (``wandb/offline-run-<time>-<id>``), its steps going on
    from the checkpoint (trial 59: "holds 2 runs", and audit's second half read "no progress");
    :mod:`grpo_doctor.resumed` says which folders are launches of one run."""
    by_parent: dict[Path, list[Run]] = {}
    for run in runs:
        by_parent.setdefault(Path(run.source).parent, []).append(run)
    out: list[Run] = []
    for parent, siblings in by_parent.items():
        out += with_resumed(siblings, [Path(r.source).name for r in siblings],
                            LAUNCHES["wandb-offline"], launches_run_name(parent), str(parent))
    return out


# --- a growing run, read record by record from where the last read stopped (``watch``) ----------


@dataclass(frozen=True)
class WandbTarget:
    """The W&B run being watched, for ``--notify wandb``."""

    entity: str
    project: str
    run_id: str
    offline: bool
    folder: Path


@dataclass(frozen=True)
class _Tail:
    """Where reading a growing ``.wandb`` log resumes: the log (found at the first read), its
    framing, the media keys seen (their fields are not metrics) and the run named so far."""

    file: Path | None = None
    at: LogPosition = field(default_factory=LogPosition)
    identity: FileIdentity = field(default_factory=FileIdentity)
    media: frozenset[str] = frozenset()
    target: tuple[tuple[str, str], ...] = ()  # entity, project, run_id as far as known


def _tail_file(path: Path, state: _Tail, options: LoadOptions) -> Path | None:
    if state.file is not None:
        return state.file
    files = sorted(_log_files(path))
    if options.run is not None:
        want = options.run
        files = [f for f in files if want in (f.parent.name, f.stem, f.stem[4:])
                 or f.parent.name.endswith(f"-{want}")]
    if not files:
        return None
    if len(files) > 1:
        raise SeveralRuns(str(path), [f.parent.name for f in files], "W&B runs",
                          "--run (its folder name or run id)")
    return files[0]


def _read_new(path: Path, state: _Tail | None, options: LoadOptions, final: bool) -> Delta:
    """The history rows appended since ``state``. The log's first records, a run, config or
    step-metric record, a corrupt chunk, an unreadable record or a history row without a step
    are structural."""
    from google.protobuf.message import DecodeError
    from wandb.proto import wandb_internal_pb2 as pb

    state = state or _Tail()
    file = _tail_file(path, state, options)
    if file is None:
        return Delta(Rows(), state)
    new, identity = state.identity.changed(file)
    if not new:
        return Delta(Rows(), replace(state, file=file, identity=identity))
    structural = state.at.offset == 0
    framing = LogFraming(state.at)
    records = list(framing.records(read_from(file, state.at.offset)))
    identity = identity.marked(file, framing.pos)
    structural = structural or bool(framing.corrupt)
    media = set(state.media)
    target = dict(state.target)
    steps: list[float] = []
    rows: list[dict[str, float]] = []
    for raw in records:
        try:
            rec = pb.Record.FromString(raw)  # type: ignore[attr-defined]
        except DecodeError:
            structural = True
            continue
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            step, row = _history_row(rec.history, media)
            if step is None:
                structural = True
                continue
            steps.append(step)
            rows.append(row)
        elif kind == "run":
            run = rec.run
            for key, value in (("entity", run.entity), ("project", run.project),
                               ("run_id", run.run_id)):
                if value:
                    target[key] = value
            structural = True
        elif kind == "config" or (kind == "metric" and rec.metric.glob_name == "*"
                                  and rec.metric.step_metric):
            structural = True
    state = _Tail(file, framing.position, identity, frozenset(media), tuple(target.items()))
    return Delta(rows_from_records(rows, steps=steps), state, structural)


def _history_row(hist: Any, media: set[str]) -> tuple[float | None, dict[str, float]]:
    """One history record as ``read_wandb_log`` and ``_build_frame`` read it: (step, numeric
    cells). ``media`` gains the media keys it holds."""
    items = {("/".join(i.nested_key) if i.nested_key else i.key): i.value_json
             for i in hist.item}
    media.update(k[: -len("/_type")] for k in items if k.endswith("/_type"))
    step: float | None = None
    row: dict[str, float] = {}
    for key, text in items.items():
        try:
            value = _loads(text)
        except ValueError:
            continue
        if key == "_step":
            if _is_number(value):
                step = _float(value)
            continue
        if key in _INTERNAL or key == "_wandb" or key.startswith("_wandb/"):
            continue
        flat: dict[str, Any] = {}
        if isinstance(value, dict):
            _flatten(key, value, flat)
        else:
            flat[key] = value
        for k, v in flat.items():
            if k.endswith("/_type") or any(k.startswith(m + "/") for m in media):
                continue
            if _is_number(v):
                row[k] = _float(v)
    if step is None and hist.HasField("step"):
        step = float(hist.step.num)
    return step, row


def _load_read(path: Path, state: _Tail | None, options: LoadOptions) -> Run | None:
    """The run ``_load`` reads from the records ``state`` has consumed."""
    if state is None or state.file is None or state.at.offset == 0:
        return None
    import tempfile

    with tempfile.TemporaryDirectory(prefix="grpo-doctor-watch-") as tmp:
        copy = snapshot(state.file, state.at.offset, Path(tmp))
        try:
            log = read_wandb_log(copy)
        except FormatError:
            return None
    log.path = state.file
    if log.n_rows == 0:
        return None
    name = options.run or _run_names([log])[0]
    try:
        return _load_log(log, name, options)
    except FormatError:
        return None


def live_target(state: _Tail | None) -> WandbTarget | None:
    """The W&B run an incremental read (``state``) has found, once its run record is read."""
    target = dict(state.target) if state is not None else {}
    if state is None or state.file is None or "run_id" not in target:
        return None
    folder = state.file.parent
    return WandbTarget(target.get("entity", ""), target.get("project", ""), target["run_id"],
                       folder.name.startswith("offline-run"), folder)


IMPORTER = Importer(
    name="wandb-offline",
    sniff=_sniff,
    load=_load,
    reads_folders=True,
    incremental=Incremental(read=_read_new, load=_load_read),
)
