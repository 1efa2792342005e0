"""Helpers every importer may use: reading a file's head, sniffing text, numbers in logged
values, small JSON and text files, walking a run's folder, the notes a reader writes.

Importers take shared helpers from here, never from one another.
"""

from __future__ import annotations

import contextlib
import decimal
import json
import math
import numbers
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.files import check_input, entry_path, is_link, read_bytes, scandir

#: How many leading bytes a sniffer sees.
HEAD_BYTES = 64 * 1024

#: Control bytes that text (UTF-8 or a legacy 8-bit encoding) almost never holds.
_CONTROL_BYTES = bytes([*range(1, 9), 11, *range(14, 27), *range(28, 32), 127])

_NUMBER = re.compile(
    r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf|infinity)(?:\(ind\))?",
    re.IGNORECASE,
)


#: File stems that name what a file holds, not which run: such a run is named by its folder
#: (a verl or trainer "metrics.csv" headed every report "metrics").
_GENERIC_STEMS = frozenset({"metrics", "metric", "progress", "log", "logs", "train",
                            "training", "history", "events", "results", "scalars", "data",
                            "output", "run", "export", "tensorboard", "tb", "tb_logs",
                            "stdout", "console", "nohup", "train_log", "training_log"})


def generic_name(name: str) -> bool:
    """Whether a file stem or folder name names no run (``metrics``, ``tensorboard``, ...)."""
    return name.lower() in _GENERIC_STEMS


def file_run_name(path: Path) -> str:
    """The run a log file holds, by name: its stem, or its folder's name when the stem is a
    generic one (``runs/lr_3e-3/metrics.csv`` is "lr_3e-3")."""
    if generic_name(path.stem) and path.parent.name:
        return path.parent.name
    return path.stem


def folder_run_name(folder: Path) -> str:
    """The run a folder of logs holds, by name: its own, or its parent's when its own is a
    generic one (``w03/tensorboard/`` is "w03")."""
    folder = folder.resolve()
    if generic_name(folder.name) and folder.parent.name:
        return folder.parent.name
    return folder.name


def launches_run_name(parent: Path) -> str:
    """The run whose launches sit side by side in ``parent``: the Trainer's output folder
    for its ``runs/`` (TensorBoard) or ``wandb/`` folder, else the folder's own name."""
    unnamed = generic_name(parent.name) or parent.name in ("runs", "wandb")
    return parent.parent.name if unnamed and parent.parent.name else (
        folder_run_name(parent) or parent.name)


#: The folder a Hugging Face Trainer saves at step N: its state, settings and weights.
CHECKPOINT_FOLDER = re.compile(r"checkpoint-(\d+)")


#: A file of TRL's ``log_completions`` samples: ``completions/completions_00001.parquet``.
_COMPLETION_SAMPLES = re.compile(r"^completions_\d+\.(parquet|jsonl|json)$")
#: Why such a file (or its folder) is not read as a log.
SAMPLES_WHY = "the run's sampled completions (TRL's log_completions), not a metric log"


#: The events ``watch --format json`` writes, one JSON object a line.
_OWN_EVENTS = re.compile(
    rb'^(?:\xef\xbb\xbf)?\s*\{"event": "(alert|advice|cleared|eased|status|warning)"')
OWN_EVENTS_WHY = "grpo-doctor's own events (watch --format json), not a training log"


def own_events(path: Path) -> bool:
    """Whether ``path`` is what ``watch --format json`` wrote: a folder watch had read its
    own output file as a run (trial 72)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)  # (after a byte-order mark or blank lines too; h99)
    except OSError:
        return False
    return bool(_OWN_EVENTS.match(head))


def completion_samples(path: Path) -> bool:
    """Whether ``path`` is one of TRL's ``log_completions`` sample tables (prompt,
    completion, each reward per sample): the run's samples, not a log of another run."""
    return path.parent.name == "completions" and bool(_COMPLETION_SAMPLES.match(path.name))


def completion_samples_at(path: Path) -> bool:
    """Whether ``path``, a file or a folder, is TRL's completion samples."""
    return completion_samples(path) or completion_samples_folder(path)


def completion_samples_folder(folder: Path, peek: int = 50) -> bool:
    """Whether ``folder`` is TRL's ``completions/``: its files the samples, and nothing else."""
    if folder.name != "completions":
        return False
    try:
        files = [f for f in folder.iterdir() if f.is_file() and not f.name.startswith(".")]
    except OSError:
        return False
    return bool(files) and all(completion_samples(f) for f in files[:peek])


def checkpoint_folders(root: Path) -> list[tuple[int, Path]]:
    """The ``checkpoint-N`` folders directly under ``root``, by N (none when it cannot be
    listed)."""
    try:
        # names first (a folder of N logs is listed once per log: no path made per entry)
        return sorted((int(m.group(1)), entry_path(entry)) for entry in scandir(root)
                      if (m := CHECKPOINT_FOLDER.fullmatch(entry.name)) and entry.is_dir())
    except OSError:
        return []


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of a file (``HEAD_BYTES``: what a sniffer sees); an InputError
    when it cannot be read."""
    check_input(path)  # a FIFO or a device is refused, never opened
    try:
        with path.open("rb") as fh:
            return fh.read(size)
    except PermissionError as exc:
        raise InputError(f"{path}: permission denied") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def head_of(path: Path) -> bytes:
    """A file's first bytes for a sniffer (b"" when it cannot be read)."""
    try:
        return read_head(path)
    except InputError:
        return b""


def has_magic(path: Path, magic: bytes) -> bool:
    """Whether the regular file ``path`` starts with ``magic``."""
    if not path.is_file():  # a FIFO named like a log is never opened (it would wait)
        return False
    try:
        with path.open("rb") as fh:
            return fh.read(len(magic)) == magic
    except OSError:
        return False


def looks_like_text(head: bytes) -> bool:
    sample = head[:4096]
    if not sample or sample.count(b"\x00") * 200 > len(sample):
        return False
    # A few NUL bytes in text are what a crash mid-write leaves (read_text drops them); a
    # binary file holds many (helper-84: a 30-row log with three was refused).
    sample = sample.replace(b"\x00", b"")
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the 4 KiB boundary is still text; so is text in a
        # legacy 8-bit encoding (cp1252, latin-1): no NUL and (almost) no control bytes.
        if exc.start < 4090:
            controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
            return controls * 100 <= len(sample)
    return True


def first_line(head: bytes) -> str:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    return text.split("\n", 1)[0].strip("\r")


def _int_as_float(value: int) -> float:
    try:
        return float(value)
    except OverflowError:  # an int too large for a float
        return math.inf if value > 0 else -math.inf


def to_number(value: Any) -> float | None:
    """A logged value as a float, or None when it is not a number (text, None, lists ...).

    Numbers printed as strings (transformers >= 5 prints ``'loss': '0.1234'``) count, and so do
    "nan" and "inf" in any case: a logged NaN is evidence, not a gap.
    """
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int):
        return _int_as_float(value)
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        text = value.strip()
        if len(text) <= 64 and _NUMBER.fullmatch(text):
            return float(text.lower().replace("(ind)", ""))
    # numpy scalars (a callback's np.int64 step, np.float32 value) are numbers too; checked
    # last, the ABCs being slower than the exact types above
    if isinstance(value, numbers.Integral):
        return _int_as_float(int(value))
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    # A one-value array or tensor (np.asarray(x), tensor.cpu().numpy(), a 0-d tensor): its
    # value (helper-84: they had been dropped, then "the metrics are not logged").
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and math.prod(shape) == 1 and callable(
            getattr(value, "item", None)):
        try:
            item = value.item()
        except (TypeError, ValueError, RuntimeError):
            return None
        return None if getattr(item, "shape", None) is not None else to_number(item)
    return None


def read_text(path: Path) -> str:
    """A text file's content; undecodable bytes replaced, NUL bytes dropped."""
    data = read_bytes(path)
    return data.decode("utf-8", errors="replace").lstrip("\ufeff").replace("\x00", "")


def read_json(path: Path, what: str) -> Any:
    """A JSON file's content; a one-line FormatError naming the file when it is not JSON."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        # "Unterminated string starting at" ends in "at": no "at at line 1".
        why = exc.msg.removesuffix(" at")
        raise FormatError(f"{path}: {what} ({why} at line {exc.lineno})") from exc
    except RecursionError as exc:
        raise FormatError(f"{path}: {what} (nested too deeply)") from exc
    except ValueError as exc:
        raise FormatError(f"{path}: {what}") from exc


#: A YAML side file (a run's config, an MLflow ``meta.yaml``) larger than this is not read:
#: they are kilobytes, and a pure-Python YAML parser takes seconds a megabyte.
YAML_MAX_BYTES = 8 << 20
#: How many nodes aliases may add to a YAML document, counted as if expanded. A tracker's own
#: YAML has none, or a few (PyYAML writes one for an object referenced twice); a "billion
#: laughs" document of 1 KB expands to billions, which any later walk (``str`` of a run name,
#: a config flattened) would build in memory.
YAML_MAX_ALIAS_NODES = 10_000


def _node_counts(root: Any, limit: int) -> tuple[int, int] | None:
    """(distinct nodes, nodes with the aliases expanded) of a YAML node graph, counted
    without expanding anything; the count stops as soon as it passes ``limit``. None for a
    recursive graph (an anchor holding an alias of itself)."""
    import yaml

    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children: list[Any] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > limit:
                return len(sizes), sizes[key]
            continue
        if key in sizes:
            continue
        if key in on_path:
            return None
        on_path.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                return None
            if id(child) not in sizes:
                stack.append((child, False))
    return len(sizes), sizes[id(root)]


#: The deepest YAML nesting read (flow brackets, or block indentation in columns / 2).
YAML_MAX_DEPTH = 512


def _nesting(text: str) -> int:
    """An upper bound on a YAML document's nesting depth, without parsing it: the deepest
    run of open flow brackets ([ and {, quoted text skipped), or the widest indentation
    counted at one level per two columns."""
    depth = deepest = 0
    quote = ""
    opens = text.count("[") + text.count("{")
    for ch in text if opens > YAML_MAX_DEPTH else "":  # fewer opens cannot nest deeper
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "\n":
            quote = ""  # a stray quote never hides the rest of the document
    indent = max((len(line) - len(line.lstrip(" ")) for line in text.splitlines()), default=0)
    return max(deepest, indent // 2)


def load_yaml(text: str, where: str | os.PathLike[str], *, unique_keys: bool = False) -> Any:
    """YAML text parsed the safe way (plain data, never objects), with aliases expanding to
    at most ``YAML_MAX_ALIAS_NODES`` more nodes than the document holds and no recursive
    anchor: a one-line :class:`InputError` naming ``where`` otherwise, when it is not YAML, or
    when PyYAML is not installed. Every importer reads YAML through this function.
    ``unique_keys``: a mapping that sets a key twice is an InputError too ("duplicate key
    learning_rate at line 7"; YAML's parsers keep the last value silently)."""
    try:
        import yaml
    except ImportError:
        raise InputError(f"{where}: not read (PyYAML is not installed)") from None
    if _nesting(text) > YAML_MAX_DEPTH:
        # Some libyaml builds (PyYAML 6.0.3) recurse in C without a cap: a deep document
        # overflows the C stack, a crash no except can catch. Refuse it before parsing.
        raise InputError(f"{where}: not read (YAML nested more than {YAML_MAX_DEPTH} deep)")
    loader_type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: fast
    loader = loader_type(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        # A document of n characters holds fewer than 2n + 8 nodes: past that, aliases made them.
        counts = _node_counts(node, limit=2 * len(text) + 8 + YAML_MAX_ALIAS_NODES)
        if counts is None:
            raise InputError(f"{where}: not read (a YAML anchor that holds itself)")
        distinct, expanded = counts
        if expanded > distinct + YAML_MAX_ALIAS_NODES:
            raise InputError(f"{where}: not read (its YAML aliases expand to more than "
                             f"{YAML_MAX_ALIAS_NODES:,} nodes: an alias bomb?)")
        if unique_keys and (twice := _duplicate_key(node)) is not None:
            raise InputError(f"{where}: duplicate key {twice[0]} at line {twice[1]} (it is set "
                             "twice: keep one)")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise InputError(f"{where}: not valid YAML ({problem})") from None
    except RecursionError:
        raise InputError(f"{where}: not read (YAML nested too deeply)") from None
    finally:
        loader.dispose()


def _duplicate_key(root: Any) -> tuple[str, int] | None:
    """The first key set twice in one mapping of a composed YAML document, dotted from the
    top (``actor_rollout_ref.actor.optim.lr``), with the line of its second setting; None when
    every key is set once. Merge keys (``<<``) are YAML's own way to reuse a mapping: not a
    duplicate."""
    import yaml

    seen: set[int] = set()
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, prefix = stack.pop()
        if id(node) in seen:
            continue  # an alias: the anchored node was walked once
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for key, value in node.value:
                name = str(getattr(key, "value", ""))
                if getattr(key, "tag", "") == "tag:yaml.org,2002:merge":
                    continue
                dotted = f"{prefix}{name}"
                if isinstance(key, yaml.ScalarNode):
                    if name in keys:
                        return dotted, key.start_mark.line + 1
                    keys.add(name)
                stack.append((value, dotted + "."))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, prefix) for item in node.value)
    return None


def read_yaml(path: Path) -> Any:
    """A YAML side file's content through :func:`load_yaml`: a one-line :class:`InputError`
    for a file past ``YAML_MAX_BYTES`` (or the read limit), unreadable, or refused."""
    try:
        size = path.stat().st_size  # a local file or an object store's (StorePath)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if size > YAML_MAX_BYTES:
        raise InputError(f"{path}: not read (a YAML file of {size:,} bytes, more than "
                         f"{YAML_MAX_BYTES >> 20} MB)")
    return load_yaml(read_text(path), path)


def truncation_note(offset: int) -> str:
    return f"truncated final record at byte {offset} (run still being written?)"


def walk_files(root: Path, max_depth: int, max_entries: int | None = None) -> Iterator[Path]:
    """Files below ``root``, breadth first, at most ``max_depth`` folders down (a link to a
    folder followed once: a loop ends there; hidden folders skipped) and, if given,
    ``max_entries`` entries looked at."""
    queue = [(root, 0)]
    seen = 0
    folders: set[tuple[int, int]] = set()
    with contextlib.suppress(OSError):
        st = root.stat()
        folders.add((st.st_dev, st.st_ino))
    while queue:
        folder, depth = queue.pop(0)
        try:
            entries = sorted(scandir(folder), key=lambda d: d.name)
        except OSError:
            continue
        # Of two ways to one folder, the folder itself is kept (wandb's ``latest-run`` link).
        for entry in sorted(entries, key=is_link):
            seen += 1
            if max_entries is not None and seen > max_entries:
                return
            try:
                if entry.is_dir():
                    if depth < max_depth and not entry.name.startswith("."):
                        st = entry.stat()
                        if (st.st_dev, st.st_ino) not in folders:
                            folders.add((st.st_dev, st.st_ino))
                            queue.append((entry_path(entry), depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    yield entry_path(entry)
            except OSError:
                continue


def typed_text(value: Any) -> Any:
    """A value a tracker stored as text read as what it stands for: "True" a flag, "8" and
    "0.90000000000000002" numbers, "None" nothing, "[]" and "['a']" a list (MLflow keeps every
    param as text: a report's setup had held '8' and 'False' where another tracker's held 8
    and False; trial 80, nu34). Anything else is returned as it is."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null", ""):
        return None
    if text[:1] in "[{(" and len(text) <= 10_000:
        import ast

        try:  # a list or mapping stored as its repr
            return _as_json(ast.literal_eval(text))
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            return value
    try:
        return int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
    except ValueError:
        return value


def _as_json(value: Any) -> Any:
    """A literal as a JSON value: a set (PEFT's target_modules) a sorted list, a tuple a list;
    anything JSON cannot hold (a complex, bytes) raises ValueError, so the text is kept (a set
    had crashed compare's JSON; h120)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (set, frozenset)):
        return sorted((_as_json(v) for v in value), key=repr)
    if isinstance(value, (list, tuple)):
        return [_as_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _as_json(v) for k, v in value.items()}
    raise ValueError(f"no JSON value: {type(value).__name__}")
