"""Which files and folders under a path are runs (``audit`` and ``watch`` of a folder).

A file named on the command line is always a source. A folder is searched recursively: a folder
that a folder-reading importer owns is one source and is not descended into; other files are
tried one by one, and a file no importer recognises is passed over only when it is clearly not
a log (its reason kept for ``-v``). See :mod:`grpo_doctor.audit` for the whole audit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from glob import glob
from pathlib import Path

from grpo_doctor.audit_result import AuditError, PassedOver
from grpo_doctor.errors import ConfigError, FormatError, GrpoDoctorError, InputError
from grpo_doctor.files import as_path, entry_path, in_kernel_fs, is_remote, scandir, walk
from grpo_doctor.files import kind as file_kind
from grpo_doctor.importers import HEAD_BYTES, MARKDOWN_DOCS, Importer, detect_format, registry
from grpo_doctor.importers._common import (
    OWN_EVENTS_WHY,
    SAMPLES_WHY,
    completion_samples,
    own_events,
)
from grpo_doctor.importers.trainer_state import is_log_history_list
from grpo_doctor.objstore import StoreError, StorePath, within

#: Files never tried when found in a folder: clearly not training logs.
_NOT_LOGS = frozenset({
    ".py", ".pyc", ".pyi", ".pyx", ".c", ".h", ".cc", ".cpp", ".rs", ".go", ".java", ".js",
    ".ts", ".sh", ".bat", ".ps1", ".rst", ".tex", ".html", ".htm", ".css", ".xml",
    ".yaml", ".yml", ".toml", ".cfg", ".ini", ".conf", ".lock", ".png", ".jpg", ".jpeg", ".gif",
    ".svg", ".webp", ".bmp", ".ico", ".pdf", ".mp4", ".mp3", ".wav", ".gz", ".tgz", ".zip",
    ".tar", ".bz2", ".xz", ".zst", ".7z", ".pt", ".pth", ".bin", ".safetensors", ".ckpt", ".h5",
    ".onnx", ".gguf", ".npy", ".npz", ".pkl", ".pickle", ".model", ".vocab", ".tiktoken", ".so",
    ".dll", ".exe", ".whl", ".pem", ".key",
})
#: Text documents that may hold a console capture (``diagnose`` reads them): tried, and passed
#: over (with the reason, for ``-v``) when they hold no training log.
TEXT_DOCS = frozenset({".md", ".txt", ".log", ".out"})
#: Files that are logs by their name: not recognised means broken, an error row.
_LOG_SUFFIXES = frozenset({".csv", ".tsv", ".jsonl", ".ndjson", ".parquet", ".pq", ".wandb"})
_SKIP_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages"})
#: What wandb logs of itself beside its runs (``wandb/debug.log``, a run's
#: ``logs/debug-internal.log``): never a training log (watch had waited on them for data).
_WANDB_OWN = frozenset({"debug.log", "debug-internal.log", "debug-core.log"})
#: Folders searched below an audited folder; deeper ones are an error row, not searched.
MAX_DEPTH = 64
_CHECKPOINT = re.compile(r"checkpoint-\d+")
_GLOB_MAGIC = re.compile(r"[*?[]")



# --- sources ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """One thing to load: a file, a folder one importer owns, or a wandb:// URI."""

    path: str
    key: str  # relative to the audited root (posix), or the URI: what a baseline stores
    explicit: bool = False  # named on the command line: never passed over silently
    format: str | None = None  # the importer that owns a folder source
    # The folders of one run's launches (resumed from a checkpoint), read as one run from
    # ``path``, the folder holding them (:mod:`grpo_doctor.resumed`).
    launches: tuple[str, ...] = ()


def is_uri(text: str) -> bool:
    return text.startswith("wandb://")


def _rel(path: Path, root: Path) -> str:
    """``path``'s key: its path relative to ``root`` (both as given, or made absolute without
    resolving links), posix; the folder's own name when it is the root."""
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        try:
            rel = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
        except ValueError:
            rel = path.as_posix()
    return path.resolve().name if rel == "." else rel


def _arg_root(arg: str) -> str | None:
    """The folder an argument's keys start from: a folder itself, a file's folder, a glob
    pattern's fixed part; None for a URI or a path that does not exist."""
    path = Path(arg)
    if is_uri(arg):
        return None
    if path.is_dir():
        return os.path.abspath(path)
    if path.exists():
        return os.path.dirname(os.path.abspath(path))
    if _GLOB_MAGIC.search(arg):
        return os.path.abspath(_glob_root(arg))
    return None


def common_root(paths: Sequence[str]) -> Path | None:
    """The command line's common root: the deepest folder holding every argument's root.
    Keys are made relative to it, so ``v0/metrics.csv`` and ``v1/metrics.csv`` (named as files,
    or by the shell's glob) are two keys, never two runs keyed ``metrics.csv``; and one folder
    (or one file) audited alone keys its runs as before: relative to itself (by its name)."""
    roots = [r for r in map(_arg_root, paths) if r is not None]
    if not roots:
        return None
    try:
        return Path(os.path.commonpath(roots))
    except ValueError:  # no common path (Windows drives): each argument keyed on its own
        return None


def _remote_key(arg: str, paths: Sequence[str]) -> str:
    """An object named on the command line: its key relative to the prefix all the remote
    arguments share (``v0/metrics.csv``, never two runs keyed ``metrics.csv``), its name when
    it is the only one."""
    remote = [p for p in paths if is_remote(p)]
    if len(remote) < 2:
        return arg.rstrip("/").rsplit("/", 1)[-1]
    scheme = arg.split("://", 1)[0] + "://"
    if not all(p.startswith(scheme) for p in remote):
        return arg
    prefix = os.path.commonpath([p[len(scheme):] for p in remote])
    return arg[len(scheme):][len(prefix):].lstrip("/") or arg


def _named_like_a_log(path: Path) -> bool:
    return path.suffix.lower() in _LOG_SUFFIXES or "tfevents" in path.name


def _json_log(path: Path) -> bool:
    """A ``.json`` that is a log: a trainer state (``log_history``), or JSON lines (several
    lines, each an object). Not: an API response, a config, a tokenizer."""
    try:
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return True  # let the importer say what is wrong
    if b'"log_history"' in head or is_log_history_list(head):
        return True
    return sum(1 for line in head.splitlines() if line.lstrip().startswith(b"{")) >= 2


def passed_over_reason(path: Path) -> str | None:
    """Why a file found in a folder is not tried at all, or None when it is tried."""
    if path.name.startswith("."):
        return "hidden"
    # An event file's name ends in its writer's host name (``...tfevents.1700000000.node.sh``):
    # whatever that ends like, it is a log (watch had waited on one forever, helper-73).
    if "tfevents" in path.name:
        return None
    if path.suffix.lower() in _NOT_LOGS:
        return f"not a log ({path.suffix.lower()} file)"
    if completion_samples(path):
        return SAMPLES_WHY
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson", ".log", ".txt") and own_events(path):
        return OWN_EVENTS_WHY
    if path.name in _WANDB_OWN and "wandb" in (path.parent.name, path.parent.parent.name,
                                              path.parent.parent.parent.name):
        return "wandb's own log of itself"
    if path.suffix.lower() == ".json" and not _json_log(path):
        return "a .json that is neither a trainer state nor JSON lines"
    return None


def classify(path: Path, *, explicit: bool = False) -> Importer | None:
    """The importer for a file, or None for a file that is clearly not a log (passed over).

    Raises the detection error for a file named on the command line, or one that looks like a
    log (by its name) but that no importer recognises.
    """
    if not explicit and passed_over_reason(path) is not None:
        return None
    try:
        imp = detect_format(path)
    except FormatError:
        if explicit or _named_like_a_log(path):
            raise
        return None
    if not explicit and path.suffix.lower() in MARKDOWN_DOCS and imp.name != "console":
        return None  # a Markdown document with no console-log lines in it: passed over, as a
        # README is
    return imp


def _is_file(entry: os.DirEntry) -> bool:
    """A regular file (following links); a link loop or a vanished entry is not."""
    try:
        return entry.is_file()
    except OSError:
        return False


def _owns(imp: Importer, folder: Path) -> bool:
    """Whether ``folder`` is one source of ``imp``: it holds the format's files itself (or the
    ``checkpoint-N`` folders of a Trainer output folder) and no log of another format. A
    folder claimed as a whole (one run's folder, an mlruns/ store) is owned by the sniffer's
    word."""
    if imp.whole_folder:
        return True
    own = False
    for entry in sorted(scandir(folder), key=lambda e: e.name):
        path = entry_path(entry)
        if entry.is_dir(follow_symlinks=False):
            own = own or bool(_CHECKPOINT.fullmatch(entry.name) and imp.sniff(path, b"") > 0)
            continue
        if not _is_file(entry):
            continue
        try:
            kind = classify(path)
        except GrpoDoctorError:
            return False  # a broken log: look at the files one by one, so it is reported
        if kind is not None:
            if kind.name != imp.name:
                return False
            own = True
    return own


def folder_owner(folder: Path) -> Importer | None:
    """The folder-reading importer that owns ``folder`` as one source, if any."""
    scored = []
    for order, imp in enumerate(registry()):
        if imp.reads_folders:
            try:
                score = imp.sniff(folder, b"")
            except (OSError, GrpoDoctorError):
                score = 0
            if score > 0:
                scored.append((-score, order, imp))
    for _, _, imp in sorted(scored, key=lambda t: (t[0], t[1])):
        try:
            if _owns(imp, folder):
                return imp
        except OSError:
            return None
    return None


def _special(entry: os.DirEntry) -> str | None:
    """Why a folder entry that is neither a folder nor a regular file cannot be read."""
    try:
        st = entry.stat(follow_symlinks=True)
    except FileNotFoundError:
        return f"is a broken link (to {os.readlink(entry.path)!r})" if entry.is_symlink() \
            else None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    what = file_kind(st.st_mode)
    return f"is {what}, not a regular file" if what else None


def _walk(top: Path, root: Path, errors: list[AuditError],
          passed: list[PassedOver]) -> Iterator[Source]:
    """The sources under ``top``, without recursion; links to folders are followed, each
    folder once (a second way to one folder, a link loop, is passed over with why); a tree
    deeper than ``MAX_DEPTH`` is an error row for the folder whose subfolders were not
    searched."""

    def unlistable(folder: Path, exc: OSError) -> None:
        errors.append(AuditError(_rel(folder, root), f"{folder}: cannot list the folder "
                                 f"({exc.strerror or exc})"))

    def too_deep(folder: Path) -> None:
        errors.append(AuditError(_rel(folder, root), f"{folder}: more than {MAX_DEPTH} folders "
                                 f"deep; the folders below it were not searched"))

    def again(entry: os.DirEntry) -> None:
        passed.append(PassedOver(_rel(entry_path(entry), root) + "/",
                                 "a link to a folder searched already"))

    for folder, dirs, files in walk(top, max_depth=MAX_DEPTH, follow_links=True,
                                    on_error=unlistable, on_too_deep=too_deep, on_repeat=again):
        owner = folder_owner(folder)
        if owner is not None:
            yield Source(str(folder), _rel(folder, root), format=owner.name)
            dirs.clear()
            continue
        kept = []
        for d in dirs:
            if d.name.startswith(".") or d.name in _SKIP_FOLDERS:
                passed.append(PassedOver(_rel(entry_path(d), root) + "/", "folder not searched"))
            else:
                kept.append(d)
        dirs[:] = kept
        for entry in files:
            path = entry_path(entry)
            if _is_file(entry):
                why = passed_over_reason(path)
                if why is None:
                    yield Source(str(path), _rel(path, root))
                else:
                    passed.append(PassedOver(_rel(path, root), why))
            elif _named_like_a_log(path) and (why := _special(entry)):
                errors.append(AuditError(_rel(path, root), f"{path}: {why}"))


def _glob_root(pattern: str) -> Path:
    """The folder a glob pattern starts from: its parts before the first wildcard."""
    parts = Path(pattern).parts
    fixed = []
    for part in parts:
        if _GLOB_MAGIC.search(part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def newest_mtime(path: Path) -> float:
    if path.is_file():
        return path.stat().st_mtime
    newest = path.stat().st_mtime
    for _folder, dirs, files in walk(path, max_depth=MAX_DEPTH):
        dirs[:] = [d for d in dirs if not d.name.startswith(".")]
        for entry in files:
            try:
                newest = max(newest, entry.stat().st_mtime)
            except OSError:
                continue
    return newest


def expand(paths: Sequence[str], since: datetime | None = None,
           passed: list[PassedOver] | None = None) -> tuple[list[Source], list[AuditError]]:
    """The sources behind ``paths`` (files, folders, glob patterns, wandb:// URIs), each once,
    and the folders that could not be listed. ``since`` keeps files modified since then;
    ``passed`` collects what was found and not tried, and why."""
    sources: dict[str, Source] = {}
    errors: list[AuditError] = []
    passed = [] if passed is None else passed
    located: dict[str, Path] = {}  # an object store's sources, as listed (for --since)

    def add(src: Source, path: Path | None = None) -> None:
        remote = is_uri(src.path) or is_remote(src.path)
        key = src.path if remote else os.path.realpath(src.path)
        sources.setdefault(key, src)
        if path is not None and isinstance(path, StorePath):
            located.setdefault(src.path, within(path, src.path))

    common = common_root(paths)
    for arg in paths:
        if is_remote(arg):
            try:
                path = as_path(arg)  # one listing of everything under it, page by page
            except StoreError:
                raise  # no credentials, access denied, no such bucket: one line, exit 2
            except InputError as exc:
                errors.append(AuditError(arg, str(exc), missing=True))
                continue
            errors += [AuditError(_rel_uri(where, arg), why)
                       for where, why in path.listing.failed]  # type: ignore[attr-defined]
        else:
            path = Path(arg)
        if is_uri(arg):
            add(Source(arg, arg, explicit=True))
        elif not isinstance(path, StorePath) and in_kernel_fs(path):
            # /proc's folders lead everywhere (/proc/<pid>/root is "/"): never walked.
            errors.append(AuditError(arg, f"{arg}: a kernel pseudo-file (/proc, /sys), not a "
                                          "log", missing=True))
        elif path.is_dir():
            # A bucket's prefix keys its runs from itself; local folders from the common root.
            root = path if isinstance(path, StorePath) else (common or path)
            n_errors, n_found = len(errors), 0
            for src in _walk(path, root, errors, passed):
                add(src, path)
                n_found += 1
            if not n_found and len(errors) == n_errors:
                # A folder named that holds no log (only a config.json, say) is an error row,
                # as a path that does not exist is: not left out of the report without a word.
                errors.append(AuditError(arg, no_log_found(arg), missing=True))
        elif path.exists():
            key = (_remote_key(arg, paths) if isinstance(path, StorePath)
                   else _rel(path, common or path.parent))
            add(Source(arg, key, explicit=True), path)
        elif _GLOB_MAGIC.search(arg):
            matches = sorted(glob(arg, recursive=True))
            if not matches:
                errors.append(AuditError(arg, f"{arg}: the pattern matches no file or folder",
                                         missing=True))
                continue
            root = common or _glob_root(arg)
            for match in map(Path, matches):
                if match.is_dir():
                    for src in _walk(match, root, errors, passed):
                        add(src)
                elif match.is_file():
                    why = passed_over_reason(match)
                    if why is None:
                        add(Source(str(match), _rel(match, root)))
                    else:
                        passed.append(PassedOver(_rel(match, root), why))
        else:  # an error row: the other paths are still audited
            errors.append(AuditError(arg, f"{arg}: no such file or folder", missing=True))
    out = list(sources.values())
    if since is not None:
        try:
            cutoff = since.timestamp()
        except (ValueError, OverflowError):  # before the epoch's range (0001-01-01): no cut
            cutoff = float("-inf")
        out = [s for s in out if is_uri(s.path)
               or newest_mtime(located.get(s.path) or Path(s.path)) >= cutoff]
    return out, errors


def no_log_found(paths: str) -> str:
    """Why a folder named (or several, comma-separated) gave the audit nothing to read."""
    return f"no training log found in {paths}"


def _rel_uri(uri: str, root: str) -> str:
    """An object-store URI under the audited ``root`` URI, keyed as a source under it."""
    base = root.rstrip("/") + "/"
    return uri[len(base):] if uri.startswith(base) else uri


def parse_since(text: str) -> datetime:
    """``--since``: a date (``2025-01-31``, local midnight) or an ISO time (``...T12:00Z``)."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"--since takes a date or an ISO time (2025-01-31, "
                          f"2025-01-31T12:00:00Z), got {text!r}") from None
