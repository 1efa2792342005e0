"""Audit many runs at once (``grpo-doctor audit``): for CI over a folder of historical runs.

Three steps:

1. **Expand** the paths into sources. A file named on the command line is always a source. A
   folder is searched recursively: a folder that a folder-reading importer owns (one run's
   folder holding several logs of it, a TensorBoard run folder, a wandb offline run, a Trainer
   output or checkpoint folder, a tracker store, a folder of TensorBoard CSV downloads or
   parquet parts) is one source and is not descended into; other files are tried one by one.
   A file that no importer recognises is passed over only when it is clearly not a log (code,
   images, configs, weights, a ``.json`` that is not a trainer state, a text document holding
   no training log ...), with its reason kept for ``-v``; one that looks like a log (``.csv``,
   ``.jsonl``, ``.parquet``, event files ...) but cannot be read becomes an error row. Glob
   patterns expand like folders; ``wandb://entity/project`` goes to
   :func:`grpo_doctor.importers.load_runs`. A path named that does not exist (or a pattern
   matching nothing) is an error row too, unless nothing else could be read.
2. **Diagnose** every source, in a process pool. A worker loads and diagnoses and sends back
   plain dicts (the ``diagnose`` JSON contract), never frames. Any failure is an error row with
   a one-line reason: one bad file never stops the rest.
3. **Judge** the findings against ``fail_on`` and, optionally, a :class:`Baseline` of accepted
   findings: with a baseline, a finding fails only when it is new or has worsened.

Runs are keyed by run name and source path *relative to the audited root*, so a baseline
survives moving the checkout.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from datetime import datetime
from glob import glob
from pathlib import Path
from typing import Any

from grpo_doctor.api import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_OK,
    applied_config,
    checked_map,
    doctor_config,
    require_metrics,
)
from grpo_doctor.config import Settings, failing_statuses
from grpo_doctor.engine import DoctorConfig, diagnose
from grpo_doctor.errors import ConfigError, FormatError, GrpoDoctorError, InputError
from grpo_doctor.files import kind as file_kind
from grpo_doctor.files import walk
from grpo_doctor.findings import RUN_SEVERITY, SCHEMA_VERSION
from grpo_doctor.fleet import in_shard, run_context
from grpo_doctor.importers import HEAD_BYTES, Importer, detect_format, load_runs, registry
from grpo_doctor.importers.jsonl import read_json
from grpo_doctor.importers.trainer_state import is_log_history_list
from grpo_doctor.reporters.json_report import to_json_obj

#: ``progress(done, total)``: called once the sources are known, then after each source.
ProgressFn = Callable[[int, int], None]

#: Worst first.
SEVERITY = RUN_SEVERITY  # kept for callers of the 0.x API
#: The baseline file's own format (its findings list); apart from the report's contract.
BASELINE_VERSION = 1

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
_TEXT_DOCS = frozenset({".md", ".txt", ".log", ".out"})
#: Files that are logs by their name: not recognised means broken, an error row.
_LOG_SUFFIXES = frozenset({".csv", ".tsv", ".jsonl", ".ndjson", ".parquet", ".pq", ".wandb"})
_SKIP_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages"})
#: Folders searched below an audited folder; deeper ones are an error row, not searched.
MAX_DEPTH = 64
_CHECKPOINT = re.compile(r"checkpoint-\d+")
_GLOB_MAGIC = re.compile(r"[*?[]")
_FORMATS_LIST = re.compile(r"; formats: [^)]*")


# --- sources ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """One thing to load: a file, a folder one importer owns, or a wandb:// URI."""

    path: str
    key: str  # relative to the audited root (posix), or the URI: what a baseline stores
    explicit: bool = False  # named on the command line: never passed over silently
    format: str | None = None  # the importer that owns a folder source


def _is_uri(text: str) -> bool:
    return text.startswith("wandb://")


def _rel(path: Path, root: Path) -> str:
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    return path.resolve().name if rel == "." else rel


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
    if path.suffix.lower() in _NOT_LOGS:
        return f"not a log ({path.suffix.lower()} file)"
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
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        path = Path(entry.path)
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
        passed.append(PassedOver(_rel(Path(entry.path), root) + "/",
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
                passed.append(PassedOver(_rel(Path(d.path), root) + "/", "folder not searched"))
            else:
                kept.append(d)
        dirs[:] = kept
        for entry in files:
            path = Path(entry.path)
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


def _newest_mtime(path: Path) -> float:
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

    def add(src: Source) -> None:
        key = src.path if _is_uri(src.path) else os.path.realpath(src.path)
        sources.setdefault(key, src)

    for arg in paths:
        path = Path(arg)
        if _is_uri(arg):
            add(Source(arg, arg, explicit=True))
        elif path.is_dir():
            for src in _walk(path, path, errors, passed):
                add(src)
        elif path.exists():
            add(Source(arg, path.name, explicit=True))
        elif _GLOB_MAGIC.search(arg):
            matches = sorted(glob(arg, recursive=True))
            if not matches:
                errors.append(AuditError(arg, f"{arg}: the pattern matches no file or folder",
                                         missing=True))
                continue
            root = _glob_root(arg)
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
        cutoff = since.timestamp()
        out = [s for s in out if _is_uri(s.path) or _newest_mtime(Path(s.path)) >= cutoff]
    return out, errors


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


# --- the work of one source (runs in a worker process) ------------------------------------


def _one_line(text: object) -> str:
    """A reason for an error row: one line, without the list of every format."""
    return _FORMATS_LIST.sub("", " ".join(str(text).split()))


def _inside(src: Source, path: str) -> str:
    """A path within a source, keyed like the source (relative to the audited root)."""
    try:
        return f"{src.key}/{Path(path).relative_to(src.path).as_posix()}"
    except ValueError:
        return path


def _text_doc(src: Source) -> bool:
    """A text document found in a folder (not named on the command line)."""
    return (not src.explicit and not _is_uri(src.path)
            and Path(src.path).suffix.lower() in _TEXT_DOCS)


def diagnose_one(src: Source, column_map: Mapping[str, str], cfg: DoctorConfig,
                 config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load and diagnose one source: ``{"runs": [contract, ...], "passed_over": [[path,
    why], ...]}``, ``{"error": reason}``, or ``{"skip": reason}`` for a file that is not a
    log. Never raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fmt = src.format
            if fmt is None and not _is_uri(src.path):
                imp = classify(Path(src.path), explicit=src.explicit)
                if imp is None:
                    return {"skip": "not recognised as a training log"}
                fmt = imp.name
            try:
                runs = load_runs(src.path, format=fmt, column_map=column_map)
            except FormatError as exc:
                if _text_doc(src):  # a README, notes: text that holds no training log
                    return {"skip": f"no training log in it ({_one_line(exc).split(': ', 1)[-1]})"}
                raise
            if _text_doc(src) and not any(run.mapping for run in runs):
                return {"skip": "no training log in it (no metric grpo-doctor knows)"}
            for run in runs:
                require_metrics(run)
            return {"runs": [{**to_json_obj(replace(diagnose(run, cfg), config=config)),
                              "context": run_context(run)} for run in runs],
                    "passed_over": [[p, why] for run in runs for p, why in run.passed_over]}
    except GrpoDoctorError as exc:
        return {"error": _one_line(exc)}
    except Exception as exc:
        return {"error": f"internal error: {type(exc).__name__}: {_one_line(exc)}"}


def _run_all(sources: list[Source], column_map: dict[str, str], cfg: DoctorConfig,
             config: dict[str, Any], jobs: int | None, progress: ProgressFn | None
             ) -> list[dict[str, Any]]:
    total = len(sources)
    results: list[dict[str, Any]] = [{} for _ in sources]
    if progress:
        progress(0, total)
    workers = min(jobs or os.cpu_count() or 1, total)
    if workers <= 1:
        for i, src in enumerate(sources):
            results[i] = diagnose_one(src, column_map, cfg, config)
            if progress:
                progress(i + 1, total)
        return results
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_sigint)
    try:
        with _sigint_deferred():  # workers are forked here: they start with SIGINT ignored
            futures = {pool.submit(diagnose_one, src, column_map, cfg, config): i
                       for i, src in enumerate(sources)}
        for done, future in enumerate(as_completed(futures), 1):
            try:
                results[futures[future]] = future.result()
            except Exception as exc:  # a worker that died (killed, out of memory)
                results[futures[future]] = {
                    "error": f"internal error: {type(exc).__name__}: {_one_line(exc)}"}
            if progress:
                progress(done, total)
    except BaseException:
        _stop(pool)  # Ctrl-C (or any error): the workers are stopped, not waited for
        raise
    pool.shutdown(wait=True, cancel_futures=True)
    return results


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C reaches the whole process group; the parent handles it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold a Ctrl-C back while workers are being forked (a child forked with Python's
    handler would print a traceback), then raise it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending:
        raise KeyboardInterrupt


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: cancel what has not started, terminate the workers, reap them."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        with suppress(Exception):
            proc.terminate()
    deadline = time.monotonic() + 5.0
    for proc in processes:
        with suppress(Exception):
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(1.0)


# --- results -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditError:
    """A source that could not be read, and the one-line reason."""

    source: str
    error: str
    missing: bool = field(default=False, compare=False)  # a path named that does not exist

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "error": self.error}


@dataclass(frozen=True)
class PassedOver:
    """A file or folder found and not read, and why (listed by ``audit -v``)."""

    source: str
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "why": self.why}


@dataclass(frozen=True)
class AuditedRun:
    """One run's diagnosis (the ``diagnose`` JSON contract) and how the audit judged it."""

    source: str  # relative to the audited root
    label: str  # the run's name, qualified by its source where names repeat
    record: dict[str, Any]
    failing: tuple[str, ...] = ()  # modes that fail the audit
    new: tuple[str, ...] | None = None  # with a baseline: findings not in it
    worsened: tuple[str, ...] | None = None  # with a baseline: warning -> critical

    @property
    def name(self) -> str:
        return str(self.record["run"]["name"])

    @property
    def status(self) -> str:
        return str(self.record["status"])

    @property
    def findings(self) -> list[dict[str, Any]]:
        return [c for c in self.record["checks"] if c["status"] in ("warning", "critical")]

    def to_dict(self) -> dict[str, Any]:
        audit = {"source": self.source, "label": self.label, "failing": list(self.failing),
                 "new": None if self.new is None else list(self.new),
                 "worsened": None if self.worsened is None else list(self.worsened)}
        return {**self.record, "audit": audit}


@dataclass(frozen=True)
class Baseline:
    """Accepted findings: (run name, source relative to the root, mode) -> status."""

    findings: Mapping[tuple[str, str, str], str] = field(default_factory=dict)

    @classmethod
    def of(cls, runs: Sequence[AuditedRun]) -> Baseline:
        return cls({(r.name, r.source, c["mode"]): c["status"] for r in runs
                    for c in r.findings})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Baseline:
        where = os.fspath(path)
        if not os.path.lexists(where):
            raise ConfigError(f"{where}: baseline not found (write one with --write-baseline)")
        try:
            data = read_json(Path(where), "the baseline is not valid JSON")
        except GrpoDoctorError as exc:
            raise ConfigError(str(exc)) from None
        if not isinstance(data, dict):
            data = {}
        items = data.get("findings")
        if data.get("schema_version") != BASELINE_VERSION or not isinstance(items, list):
            raise ConfigError(f"{where}: not a grpo-doctor baseline (schema_version "
                              f"{BASELINE_VERSION} with a findings list expected)")
        out: dict[tuple[str, str, str], str] = {}
        for item in items:
            keys = ("run", "source", "mode", "status")
            if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in keys):
                raise ConfigError(f"{where}: each baseline finding needs run, source, mode and "
                                  f"status strings, got {item!r}")
            out[(item["run"], item["source"], item["mode"])] = item["status"]
        return cls(out)

    def to_json(self) -> str:
        items = [{"run": run, "source": source, "mode": mode, "status": status}
                 for (run, source, mode), status in sorted(self.findings.items(),
                                                           key=lambda kv: (kv[0][1], *kv[0]))]
        doc = {"schema_version": BASELINE_VERSION, "findings": items}
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class AuditResult:
    runs: tuple[AuditedRun, ...]  # worst first, then by label
    errors: tuple[AuditError, ...]  # by source
    fail_on: str = "critical"
    baseline: Baseline | None = None
    shard: str | None = None  # "K/N" when this is one shard of an audit (grpo_doctor.fleet)
    passed_over: tuple[PassedOver, ...] = ()  # by source

    def judged(self, fail_on: str, baseline: Baseline | None) -> AuditResult:
        """The same runs judged against ``fail_on`` and ``baseline`` (None: every finding at or
        above ``fail_on`` fails)."""
        runs = tuple(_judge(r, fail_on, baseline) for r in self.runs)
        return AuditResult(runs, self.errors, fail_on, baseline, self.shard, self.passed_over)

    def summary(self) -> dict[str, int | None]:
        status = Counter(r.status for r in self.runs)
        with_baseline = self.baseline is not None
        return {
            "runs": len(self.runs), "critical": status["critical"], "warning": status["warning"],
            "healthy": status["healthy"], "inconclusive": status["inconclusive"],
            "errors": len(self.errors),
            "new": sum(len(r.new or ()) for r in self.runs) if with_baseline else None,
            "worsened": sum(len(r.worsened or ()) for r in self.runs) if with_baseline else None,
            "failing": sum(len(r.failing) for r in self.runs),
        }

    def exit_code(self, *, strict: bool = False) -> int:
        """2 when no run could be read; 1 for a failing finding, for an inconclusive run under
        ``--fail-on inconclusive`` or ``strict``, or (``strict``) an error row; else 0."""
        if not self.runs and self.shard is None:  # a shard may hold no run
            return EXIT_ERROR
        unjudged = "inconclusive" in failing_statuses(self.fail_on, strict=strict) and any(
            r.status == "inconclusive" for r in self.runs)
        if any(r.failing for r in self.runs) or unjudged or (strict and self.errors):
            return EXIT_FINDINGS
        return EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        """The ``--format json`` document."""
        doc = {"schema_version": SCHEMA_VERSION, "runs": [r.to_dict() for r in self.runs],
               "errors": [e.to_dict() for e in self.errors], "summary": self.summary()}
        return {**doc, "shard": self.shard} if self.shard else doc


def _judge(run: AuditedRun, fail_on: str, baseline: Baseline | None) -> AuditedRun:
    failing, new, worsened = [], [], []
    for check in run.findings:
        mode, status = check["mode"], check["status"]
        accepted = None if baseline is None else baseline.findings.get((run.name, run.source,
                                                                        mode))
        if baseline is not None and accepted is None:
            new.append(mode)
        elif accepted == "warning" and status == "critical":
            worsened.append(mode)
        if status in failing_statuses(fail_on) and (baseline is None or mode in new + worsened):
            failing.append(mode)
    keep = baseline is not None
    return AuditedRun(run.source, run.label, run.record, tuple(failing),
                      tuple(new) if keep else None, tuple(worsened) if keep else None)


def _labelled(found: list[tuple[str, dict[str, Any]]]) -> list[AuditedRun]:
    names = Counter(record["run"]["name"] for _, record in found)
    runs = []
    for source, record in found:
        name = str(record["run"]["name"])
        label = name if names[name] == 1 else f"{name} ({source})"
        runs.append(AuditedRun(source, label, record))
    return sorted(runs, key=lambda r: (-SEVERITY.get(r.status, 0), r.label, r.source))


def audit(
    paths: Sequence[str],
    settings: Settings | None = None,
    *,
    jobs: int | None = None,
    since: datetime | None = None,
    progress: ProgressFn | None = None,
    baseline: Baseline | None = None,
    shard: tuple[int, int] | None = None,
) -> AuditResult:
    """Diagnose every run found under ``paths`` (see the module docstring).

    ``shard=(K, N)``: only the sources of shard K of N (see :mod:`grpo_doctor.fleet`).

    ``jobs``: worker processes (default: one per CPU; 1 runs in this process). Raises
    :class:`~grpo_doctor.errors.GrpoDoctorError` for bad settings, or when nothing that could
    be a log is found (a path that does not exist is an error row, unless it is all there is).
    """
    if not paths:
        raise ConfigError("give at least one log, folder, glob pattern or wandb:// source")
    if jobs is not None and jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, got {jobs}")
    s = settings or Settings()
    column_map = checked_map(s.column_map)
    cfg = doctor_config(s)
    for rule in cfg.rules():  # bad --select/--ignore/--set: one usage error, before any work
        cfg.params_for(rule)
    passed: list[PassedOver] = []
    sources, errors = expand(paths, since, passed)
    sources = [src for src in sources if in_shard(src.key, shard)]
    errors = [e for e in errors if in_shard(e.source, shard)]
    passed = [p for p in passed if in_shard(p.source, shard)]
    results = (_run_all(sources, column_map, cfg, applied_config(s), jobs, progress)
               if sources else [])
    found: list[tuple[str, dict[str, Any]]] = []
    for src, result in zip(sources, results):
        if "error" in result:
            errors.append(AuditError(src.key, result["error"]))
        if "skip" in result:
            passed.append(PassedOver(src.key, str(result["skip"])))
        found += [(src.key, record) for record in result.get("runs", [])]
        passed += [PassedOver(_inside(src, p), why) for p, why in result.get("passed_over", [])]
    if not found and shard is None and all(e.missing for e in errors):
        if errors:  # nothing to read but paths that do not exist: as a usage error
            raise InputError(errors[0].error)
        when = f" modified since {since.isoformat()}" if since else ""
        raise InputError(f"no training log found{when} in {', '.join(paths)}")
    errors.sort(key=lambda e: (e.source, e.error))
    passed.sort(key=lambda p: (p.source, p.why))
    label = f"{shard[0]}/{shard[1]}" if shard else None
    return AuditResult(tuple(_labelled(found)), tuple(errors), shard=label,
                       passed_over=tuple(passed)).judged(s.fail_on, baseline)
