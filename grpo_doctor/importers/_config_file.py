"""A trainer's config file read as settings (YAML, JSON or TOML, bounded in size and depth),
and a launch's flags put over the config file the launch names. Shared by preflight and by
the sidecar reader that finds a launch script beside a run's log."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.importers._common import load_yaml, looks_like_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")
MAX_CONFIG_BYTES = 4 * 1024 * 1024
#: Nesting no trainer's config comes near (verl's deepest keys are 6 levels).
MAX_DEPTH = 64


def depth(config: Any) -> int:
    """How deep ``config``'s mappings and lists nest (iteratively: no recursion limit)."""
    deepest, stack = 0, [(config, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, Mapping):
            children = list(node.values())
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((c, level + 1) for c in children)
    return deepest


def named_config(config: Mapping[str, Any]) -> str | None:
    """The config file a launch names (``trl grpo --config grpo.yaml``, EasyR1's
    ``config=examples/config.yaml``), or None."""
    named = config.get("config")
    return named if isinstance(named, str) and named.lower().endswith(CONFIG_SUFFIXES) else None


def with_base_config(config: dict[str, Any], folders: Sequence[Path]) -> dict[str, Any]:
    """A launch's settings over the config file it names, looked for in ``folders`` in turn:
    the flags win, as the launcher applies them. A file not found or unreadable leaves the
    flags alone, its name kept under ``config`` (so a caller can say it was not read; c79:
    the file's beta had read as TRL's default 0)."""
    named = named_config(config)
    if named is None:
        return config
    try:
        base_path = next((f / named for f in folders if (f / named).is_file()), None)
    except OSError:
        base_path = None
    if base_path is None:
        return config
    try:
        base = read_config_file(base_path)
    except (FormatError, InputError):
        return config  # (an unreadable base is not this launch's fault: its flags stand)
    if depth(base) > MAX_DEPTH:
        return config
    return _merged(base, {k: v for k, v in config.items() if k != "config"})


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = (_merged(out[key], value) if isinstance(value, dict)
                    and isinstance(out.get(key), dict) else value)
    return out


def read_small(path: Path) -> str:
    """A config-sized text file's text; FormatError for a large or binary file."""
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise FormatError(f"{path}: {size:,} bytes is not a config file")
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if data.strip() and not looks_like_text(data):
        raise FormatError(f"{path}: binary data, not a config file")
    return data.decode("utf-8", errors="replace").lstrip("\ufeff")


#: How many config files a ``defaults:`` chain may read in all (NeMo-RL's go two or three
#: deep).
_MAX_PARENTS = 8


def read_config_file(path: Path) -> dict[str, Any]:
    """The settings a YAML, JSON or TOML config holds, over the parent configs it names in
    ``defaults:`` (NeMo-RL's ``defaults: grpo_math_1B.yaml``, beside it); FormatError or
    InputError saying what is wrong with it. A key set twice is refused, not silently the
    last value (which one did the user mean?)."""
    return _with_parents(_read_one(path), path, {path.resolve()})


def parent_files(config: Mapping[str, Any]) -> list[str]:
    """The config files ``config``'s ``defaults:`` names (a file name or a list of them);
    Hydra's own defaults lists (``- ppo_trainer``, ``- _self_``) name none."""
    named = config.get("defaults")
    names = [named] if isinstance(named, str) else named if isinstance(named, list) else []
    return [n for n in names if isinstance(n, str) and n.lower().endswith(CONFIG_SUFFIXES)]


def _with_parents(config: dict[str, Any], path: Path, seen: set[Path]) -> dict[str, Any]:
    """``config`` over the files its ``defaults:`` names (a file name or a list of them,
    relative to ``path``'s folder), first to last; Hydra's own defaults lists (``- ppo_trainer``,
    ``- _self_``) name no file and stay as they are. A parent not found or unreadable leaves the
    child alone (its name kept under ``defaults``); a parent's own parents are read in turn."""
    files = parent_files(config)
    if not files:
        return config
    merged: dict[str, Any] = {}
    for name in files:
        parent_path = path.parent / name
        try:
            if not parent_path.is_file():
                return config
            if parent_path.resolve() in seen or len(seen) >= _MAX_PARENTS:
                # Each file read once, and a few in all (which bounds the chain's depth too):
                # a list naming a file six times had fanned out to 6^8 reads (h119).
                continue
            seen.add(parent_path.resolve())
            parent = _with_parents(_read_one(parent_path), parent_path, seen)
        except (FormatError, InputError, OSError, RuntimeError):
            return config  # (an unreadable parent is not this config's fault: it stands)
        if depth(parent) > MAX_DEPTH:
            return config
        merged = _merged(merged, parent)
    # (NeMo-RL's inheritance: the child's keys over its parents', nested sections merged)
    return _merged(merged, {k: v for k, v in config.items() if k != "defaults"})


def _read_one(path: Path) -> dict[str, Any]:
    text = read_small(path)
    if not text.strip():
        raise FormatError(f"{path}: the file is empty (no settings to check)")
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            # prime-rl's (and any trainer's) TOML config: every one had been refused (c79).
            loaded = tomllib.loads(text)
        elif suffix == ".json":
            loaded = json.loads(text, object_pairs_hook=_unique_pairs)
        else:
            # The one bounded YAML loader (no alias bombs).
            loaded = load_yaml(text, path, unique_keys=True)
    except InputError:
        raise
    except RecursionError:
        raise FormatError(f"{path}: not a readable config (nested too deeply)") from None
    except ValueError as exc:  # json's and tomllib's errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FormatError(f"{path}: not a readable config ({first})") from None
    if loaded is None:
        raise FormatError(f"{path}: holds no settings (only comments, or an empty document)")
    if not isinstance(loaded, dict):
        what = {list: "a list", str: "a string", int: "a number", float: "a number",
                bool: "a boolean"}.get(type(loaded), type(loaded).__name__)
        raise FormatError(f"{path}: holds {what}, not settings (a config file is a mapping, "
                          "key: value)")
    return {str(k): v for k, v in loaded.items()}


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each set once (``json.loads`` keeps the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key}")
        out[key] = value
    return out
