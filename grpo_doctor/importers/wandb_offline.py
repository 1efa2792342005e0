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
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from grpo_doctor.errors import FormatError
from grpo_doctor.importers import Importer, LoadOptions
from grpo_doctor.importers.tensorboard import read_bytes, truncation_note, walk_files
from grpo_doctor.store import Run, build_run

MAGIC = b":W&B"
_HEADER = struct.Struct("<4sHB")
_IDENT = 0xBEE1
_BLOCK = 32768
_CHUNK = struct.Struct("<IHB")
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4
_TYPE_CRC = {t: zlib.crc32(bytes([t])) for t in (_FULL, _FIRST, _MIDDLE, _LAST)}
_MAX_NOTES = 10
_MAX_DEPTH = 4
_SNIFF_MAX_ENTRIES = 5000
_INTERNAL = ("_runtime", "_timestamp", "_step")


def iter_log_records(data: bytes, notes: list[str]) -> Iterator[bytes]:
    """The records of a ``.wandb`` log (after its header), noting corruption and truncation."""
    n = len(data)
    pos = _HEADER.size
    pending: list[bytes] | None = None
    corrupt: list[int] = []
    while True:
        left = _BLOCK - pos % _BLOCK
        if left < _CHUNK.size:  # block trailer: zero padding
            pos += left
            continue
        if pos + _CHUNK.size > n:
            if pos < n and any(data[pos:]):
                notes.append(truncation_note(pos))
                pending = None
            break
        crc, length, kind = _CHUNK.unpack_from(data, pos)
        if kind == 0 and length == 0 and crc == 0:  # pre-allocated zeros
            pos += left
            continue
        end = pos + _CHUNK.size + length
        if end > n and kind in _TYPE_CRC and length <= left - _CHUNK.size:
            notes.append(truncation_note(pos))
            pending = None
            break
        chunk = data[pos + _CHUNK.size : end]
        if (
            kind not in _TYPE_CRC
            or length > left - _CHUNK.size
            or zlib.crc32(chunk, _TYPE_CRC[kind]) != crc
        ):
            corrupt.append(pos)
            pending = None
            pos += left  # the length cannot be trusted: drop the rest of the block
            continue
        pos = end
        if kind == _FULL:
            pending = None
            yield chunk
        elif kind == _FIRST:
            pending = [chunk]
        elif pending is not None:  # a MIDDLE or LAST whose FIRST was lost is dropped
            pending.append(chunk)
            if kind == _LAST:
                yield b"".join(pending)
                pending = None
    if pending is not None:
        notes.append(truncation_note(pos))
    notes[:0] = [f"corrupt block at byte {p} skipped" for p in corrupt[:_MAX_NOTES]]
    if len(corrupt) > _MAX_NOTES:
        notes.insert(_MAX_NOTES, f"{len(corrupt) - _MAX_NOTES} more corrupt blocks skipped")


# --- values -----------------------------------------------------------------------------------


def _loads(text: str) -> Any:
    """JSON as wandb writes it (NaN and Infinity tokens allowed); never eval."""
    try:
        return json.loads(text)
    except RecursionError as exc:  # absurdly deep nesting
        raise ValueError("JSON nested too deeply") from exc


def _unwrap(value: Any) -> Any:
    """wandb's config.yaml wraps each entry as ``{"value": ..., "desc": ...}``."""
    if isinstance(value, dict) and "value" in value and set(value) <= {"value", "desc"}:
        return value["value"]
    return value


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """Nested dicts to "/"-joined keys; media groups (holding ``_type``) are dropped."""
    stack = [(prefix, value)]
    while stack:
        key, v = stack.pop()
        if not isinstance(v, dict):
            out[key] = v
        elif "_type" not in v:
            stack.extend((f"{key}/{k}" if key else str(k), x) for k, x in reversed(v.items()))


def _set_path(target: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        nxt = target.get(part)
        if not isinstance(nxt, dict):
            nxt = target[part] = {}
        target = nxt
    target[path[-1]] = value


def _del_path(target: dict[str, Any], path: list[str]) -> None:
    for part in path[:-1]:
        nxt = target.get(part)
        if not isinstance(nxt, dict):
            return
        target = nxt
    target.pop(path[-1], None)


def _item_path(item: Any) -> list[str]:
    return list(item.nested_key) if item.nested_key else [item.key]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, complex)


def _column(rows: list[int], texts: list[str]) -> tuple[list[int], list[Any], int]:
    """Parse one key's JSON values in one go; items that are not JSON are dropped."""
    try:
        values = _loads("[" + ",".join(texts) + "]")
        if len(values) == len(rows):
            return rows, values, 0
    except ValueError:
        pass
    keep_rows, values, bad = [], [], 0
    for r, t in zip(rows, texts):
        try:
            values.append(_loads(t))
            keep_rows.append(r)
        except ValueError:
            bad += 1
    return keep_rows, values, bad


def _float(v: float) -> float:
    """A JSON number as a float; integers too large for a float become +-inf."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _to_numeric(values: list[Any]) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(float values, logged-NaN mask, non-numeric count), or None if no value is a number."""
    kinds = set(map(type, values))
    if kinds <= {int, float, bool}:
        try:
            arr = np.array(values, dtype=np.float64)
        except OverflowError:
            arr = np.array([_float(v) for v in values], dtype=np.float64)
        return arr, np.isnan(arr), 0
    arr = np.full(len(values), np.nan, dtype=np.float64)
    explicit = np.zeros(len(values), dtype=bool)
    numbers = 0
    other = 0
    for i, v in enumerate(values):
        if v is None:
            continue
        if _is_number(v):
            arr[i] = _float(v)
            explicit[i] = arr[i] != arr[i]
            numbers += 1
        else:
            other += 1
    if not numbers:
        return None
    return arr, explicit, other


# --- one run ----------------------------------------------------------------------------------


@dataclass
class _RunLog:
    path: Path
    run_id: str = ""
    display_name: str = ""
    project: str = ""
    n_rows: int = 0
    columns: dict[str, tuple[list[int], list[str]]] = field(default_factory=dict)
    step_num: dict[int, int] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, str] = field(default_factory=dict)
    step_metric: str | None = None
    notes: list[str] = field(default_factory=list)


def read_wandb_log(path: Path) -> _RunLog:
    """Everything grpo-doctor uses from one ``run-<id>.wandb`` file."""
    data = read_bytes(path)
    if len(data) < _HEADER.size or data[:4] != MAGIC:
        raise FormatError(f"{path}: not a W&B run file (no ':W&B' header)")
    _magic, ident, version = _HEADER.unpack_from(data, 0)
    log = _RunLog(path=path)
    if ident != _IDENT or version != 0:
        log.notes.append(f"unexpected .wandb header (ident {ident:#x}, version {version})")

    from google.protobuf.message import DecodeError
    from wandb.proto import wandb_internal_pb2 as pb

    parse = pb.Record.FromString
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
        elif kind == "run":
            run = rec.run
            log.run_id = run.run_id or log.run_id
            log.display_name = run.display_name or log.display_name
            log.project = run.project or log.project
            _apply_config(log.config, run.config.update, [])
        elif kind == "config":
            _apply_config(log.config, rec.config.update, rec.config.remove)
        elif kind == "metric":
            m = rec.metric
            if m.glob_name == "*" and m.step_metric:
                log.step_metric = m.step_metric
    if unreadable:
        log.notes.append(f"{unreadable} unreadable record(s) skipped")
    return log


def _apply_config(config: dict[str, Any], updates: Any, removes: Any) -> None:
    for item in updates:
        path = _item_path(item)
        try:
            value = _loads(item.value_json)
        except ValueError:
            value = item.value_json
        _set_path(config, path, _unwrap(value))
    for item in removes:
        _del_path(config, _item_path(item))


def _read_config_yaml(folder: Path) -> dict[str, Any]:
    path = folder / "files" / "config.yaml"
    if not path.is_file():
        return {}
    try:
        import yaml
    except ImportError:
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, yaml.YAMLError):  # a broken side file must not stop the metrics
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
        # Older writers log a whole dict under one key: flatten it here.
        if any(isinstance(v, dict) for v in values):
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
            parsed[key][0].extend(r)
            parsed[key][1].extend(values)
        else:
            parsed[key] = (r, values)

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
        notes.append(f"{bad_json} history value(s) that are not JSON skipped")
    if skipped:
        names = sorted(skipped)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        notes.append(f"{len(names)} non-scalar key(s) skipped (media, text, lists): {shown}")

    steps = _steps(log, parsed, notes)
    frame = pd.DataFrame(data, index=pd.RangeIndex(n))
    return frame, explicit, steps, notes


def _steps(log: _RunLog, parsed: dict[str, tuple[list[int], list[Any]]],
           notes: list[str]) -> np.ndarray:
    """``_step`` per history record (else the record's step, else ``_runtime`` order)."""
    n = log.n_rows
    steps = np.full(n, np.nan, dtype=np.float64)
    if "_step" in parsed:
        rows, values = parsed["_step"]
        for r, v in zip(rows, values):
            if _is_number(v):
                steps[r] = float(v)
    missing = np.isnan(steps)
    if missing.any() and log.step_num:
        for r, num in log.step_num.items():
            if missing[r]:
                steps[r] = num
        missing = np.isnan(steps)
    if missing.all() and n:
        runtime = np.full(n, np.inf)
        if "_runtime" in parsed:
            rows, values = parsed["_runtime"]
            for r, v in zip(rows, values):
                if _is_number(v):
                    runtime[r] = float(v)
        steps = np.argsort(np.argsort(runtime, kind="stable"), kind="stable").astype(np.float64)
        notes.append("no _step in the history: steps are records in _runtime order")
    return steps


def _load_log(log: _RunLog, name: str, options: LoadOptions) -> Run:
    folder = log.path.parent
    frame, explicit, steps, notes = _build_frame(log)
    if frame.shape[1] == 0:
        raise FormatError(f"{log.path}: no scalar metrics in the W&B run's history")
    step_column = options.step_column
    if step_column is None and log.step_metric and log.step_metric in frame.columns:
        step_column = log.step_metric
    config = {**_read_config_yaml(folder), **log.config}
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


def _has_magic(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(4) == MAGIC
    except OSError:
        return False


def _log_files(path: Path, max_entries: int | None = None) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for p in walk_files(path, _MAX_DEPTH, max_entries):
        if p.name.endswith(".wandb") and _has_magic(p):
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
    if options.run is not None:
        # --run may name a run by display name, folder name or run id.
        picked = [
            i for i, log in enumerate(logs)
            if options.run in (names[i], log.display_name, log.run_id, log.path.parent.name)
        ]
        if picked:
            logs = [logs[i] for i in picked]
            names = [options.run] * len(picked)
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
    return runs


IMPORTER = Importer(
    name="wandb-offline",
    description="W&B run folders (wandb/offline-run-*, wandb/run-*) or run-<id>.wandb files",
    sniff=_sniff,
    load=_load,
    reads_folders=True,
)
