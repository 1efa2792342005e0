"""wandb records' values (JSON texts, nested keys, numbers) and one run's log as it is read:
history rows, summary, config and the step metric.
"""


from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from grpo_doctor.importers.wandb_offline.log import _HEADER, _IDENT

_INTERNAL = ("_runtime", "_timestamp", "_step")


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


def _float(v: float) -> float:
    """A JSON number as a float; integers too large for a float become +-inf."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _to_numeric(values: list[Any]) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(float values, logged-NaN mask, non-numeric count), or None if no value is a number."""
    if isinstance(values, np.ndarray):
        return values, np.isnan(values), 0
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


def _new_log(path: Path, data: bytes | memoryview) -> _RunLog:
    _magic, ident, version = _HEADER.unpack_from(data, 0)
    log = _RunLog(path=path)
    if ident != _IDENT or version != 0:
        log.notes.append(f"unexpected .wandb header (ident {ident:#x}, version {version})")
    return log


def _apply_record(log: _RunLog, rec: Any, kind: str | None) -> None:
    """A record that is neither history nor summary."""
    if kind == "run":
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
