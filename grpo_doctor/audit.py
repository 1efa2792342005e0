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
   :func:`grpo_doctor.sources.load_runs`. A path named that does not exist (or a pattern
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

import os
import re
import signal
import threading
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

from grpo_doctor.audit_result import (
    BASELINE_VERSION,
    SEVERITY,
    VALUES_DIGEST,
    AuditedRun,
    AuditError,
    AuditResult,
    Baseline,
    PassedOver,
    ProgressFn,
    labelled,
    listed_once,
)
from grpo_doctor.config import Settings
from grpo_doctor.discovery import (
    TEXT_DOCS,
    Source,
    classify,
    expand,
    folder_owner,
    is_uri,
    no_log_found,
    parse_since,
    passed_over_reason,
)
from grpo_doctor.engine import DoctorConfig, diagnose
from grpo_doctor.errors import ConfigError, GrpoDoctorError, InputError
from grpo_doctor.files import as_path, is_remote
from grpo_doctor.fleet import in_shard, run_context
from grpo_doctor.hints import require_metrics
from grpo_doctor.importers._common import launches_run_name, read_head
from grpo_doctor.importers.console_text import holds_metric_lines
from grpo_doctor.importers.launch import LaunchFailed, launch_error
from grpo_doctor.reporters.json_report import to_json_obj
from grpo_doctor.resumed import LAUNCHES, Span, chains, identity, span_of, with_resumed
from grpo_doctor.sources import load_runs
from grpo_doctor.store import Run

__all__ = [
    "BASELINE_VERSION", "SEVERITY", "AuditError", "AuditResult", "AuditedRun", "Baseline",
    "PassedOver", "ProgressFn", "Source", "audit", "classify", "diagnose_one", "expand",
    "folder_owner", "parse_since", "passed_over_reason",
]

_FORMATS_LIST = re.compile(r"; formats: [^)]*")
#: A record's launch span, for finding a resumed run's launches (popped before the report).
_LAUNCH = "_launch"
#: Where the sources are diagnosed: this machine's processes, or Ray tasks.
EXECUTORS = ("local", "ray")


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


def values_digest(run: Run) -> str:
    """A digest of what a run logged: its steps and canonical metrics, to 6 significant
    digits. A notebook and the CSV table exported from it (or one log copied into two
    folders) share it; two runs that differ anywhere do not."""
    import hashlib

    frame = run.frame.reindex(sorted(run.frame.columns), axis=1)
    h = hashlib.sha256(",".join(map(str, frame.columns)).encode())
    h.update(frame.index.to_numpy(dtype="int64").tobytes())
    for col in frame.columns:
        h.update(" ".join(f"{x:.6g}" for x in frame[col].to_numpy(dtype="float64")).encode())
    return h.hexdigest()[:20]


#: Text files that are logs by their name: metric lines in one are a log of a format not
#: read (notes.txt or a README quoting a log line stay documents; h103).
_LOG_TEXT = frozenset({".log", ".out"})


def _unread_metric_lines(path: Path) -> bool:
    """A ``.log`` or ``.out`` file whose head holds metric lines: a log, of a format not read."""
    if path.suffix.lower() not in _LOG_TEXT:
        return False
    return holds_metric_lines(read_head(path).decode("utf-8", "replace"))


def _text_doc(src: Source) -> bool:
    """A text document found in a folder (not named on the command line)."""
    return (not src.explicit and not is_uri(src.path)
            and Path(src.path).suffix.lower() in TEXT_DOCS)


def diagnose_one(src: Source, column_map: Mapping[str, str], cfg: DoctorConfig
                 ) -> dict[str, Any]:
    """Load and diagnose one source: ``{"runs": [contract, ...], "passed_over": [[path,
    why], ...]}``, ``{"error": reason}``, or ``{"skip": reason}`` for a file that is not a
    log. Never raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fmt = src.format
            # An object store's source is listed once here, and read through that listing.
            remote = is_remote(src.path)
            path = as_path(src.path) if remote else Path(src.path)
            where: str | Path = path if remote else src.path
            if fmt is None and not is_uri(src.path):
                imp = classify(path, explicit=src.explicit)
                failed = launch_error(path, beside=False) if (
                    imp is None and _text_doc(src)) else None
                if failed is not None:  # a console capture of a launch that failed
                    return {"error": _one_line(failed)}
                if imp is None and _text_doc(src) and _unread_metric_lines(path):
                    # A log of a format not read (DeepSpeed-Chat's had been "a document with
                    # no console-log lines", its inf loss unseen; trial 74): an error row.
                    return {"error": "metric lines in a format grpo-doctor does not read "
                                     "(grpo-doctor diagnose FILE names the formats it reads)"}
                if imp is None:
                    return {"skip": "no training log in it (a document with no console-log "
                                    "lines)" if _text_doc(src) else
                            "not recognised as a training log"}
                fmt = imp.name
            try:
                runs = (_launches_joined(src, column_map) if src.launches else
                        load_runs(where, format=fmt, column_map=column_map))
            except GrpoDoctorError as exc:
                # A README, notes: text that holds no training log; or a .log of text whose
                # timestamps hold a comma ("11:11:39,323", wandb's debug.log), read as a table
                # with no numbers.
                if _text_doc(src) and not isinstance(exc, LaunchFailed):
                    if _unread_metric_lines(path):
                        return {"error": "metric lines in a format grpo-doctor does not read ("
                                         f"{_one_line(exc).split(': ', 1)[-1]})"}
                    return {"skip": f"no training log in it ({_one_line(exc).split(': ', 1)[-1]})"}
                raise
            if _text_doc(src) and not any(run.mapping for run in runs):
                return {"skip": "no training log in it (no metric grpo-doctor knows)"}
            for run in runs:
                require_metrics(run)
            return {"runs": [{**to_json_obj(diagnose(run, cfg)),
                              "context": run_context(run, where),
                              VALUES_DIGEST: values_digest(run),
                              _LAUNCH: _launch(run)} for run in runs],
                    "passed_over": [[p, why] for run in runs for p, why in run.passed_over]}
    except GrpoDoctorError as exc:
        return {"error": _one_line(exc)}
    except Exception as exc:
        return {"error": f"internal error: {type(exc).__name__}: {_one_line(exc)}"}


def _launch(run: Run) -> dict[str, Any] | None:
    """What :mod:`grpo_doctor.resumed` needs to tell a run's launches apart from other runs
    (read back in the parent, where the frames are not)."""
    span = span_of(run)
    if span is None:
        return None
    return {"first": span.first, "last": span.last, "gap": span.gap, "identity": identity(run),
            "metrics": sorted(span.metrics)}


def _launches_joined(src: Source, column_map: Mapping[str, str]) -> list[Run]:
    """The launches of one resumed run (``src.launches``, each read alone first) as one run."""
    runs = [run for path in src.launches
            for run in load_runs(path, format=src.format, column_map=column_map)]
    parent = Path(src.path)
    joined = with_resumed(runs, [Path(p).name for p in src.launches],
                          LAUNCHES.get(src.format or "", "run folders"),
                          launches_run_name(parent), str(parent))
    if len(joined) != 1:
        raise InputError(f"{src.path}: its launches are not one run")
    return joined


def _resumed_sources(sources: list[Source], results: list[dict[str, Any]]
                     ) -> list[tuple[Source, list[int]]]:
    """Sources that are launches of one run (sibling folders of one format, each one run,
    the later going on from the earlier's steps: a run resumed from a checkpoint), as the one
    source to read them from and the indices of the sources it replaces."""
    by_parent: dict[tuple[str, str], list[int]] = {}
    for i, (src, result) in enumerate(zip(sources, results)):
        records = result.get("runs", [])
        if (len(records) != 1 or src.format is None or not records[0].get(_LAUNCH)
                or is_uri(src.path) or is_remote(src.path)):
            continue
        by_parent.setdefault((os.path.dirname(src.path), src.format), []).append(i)
    out = []
    for (parent, fmt), members in by_parent.items():
        if len(members) < 2:
            continue
        launches = [results[i]["runs"][0][_LAUNCH] for i in members]
        spans = [Span(int(x["first"]), int(x["last"]), float(x["gap"]),
                      frozenset(x.get("metrics", ()))) for x in launches]
        names = [Path(sources[i].path).name for i in members]
        for chain in chains(names, spans, [x["identity"] for x in launches]):
            if len(chain) < 2:
                continue
            picked = [members[k] for k in chain]
            key = sources[picked[0]].key.rpartition("/")[0] or Path(parent).resolve().name
            out.append((Source(parent, key, format=fmt,
                               launches=tuple(sources[i].path for i in picked)), picked))
    return out


def _with_launches_joined(sources: list[Source], results: list[dict[str, Any]],
                          run: Any) -> tuple[list[Source], list[dict[str, Any]]]:
    """``sources`` and their results with each resumed run's launches read again as one
    source (``run`` reads sources: :func:`_run_all`); where that fails, the launches stay
    rows of their own."""
    resumed = _resumed_sources(sources, results)
    if not resumed:
        return sources, results
    again = run([src for src, _ in resumed])
    replaced: set[int] = set()
    extra_sources, extra_results = [], []
    for (src, picked), result in zip(resumed, again):
        if len(result.get("runs", [])) == 1:
            replaced.update(picked)
            extra_sources.append(src)
            extra_results.append(result)
    kept = [i for i in range(len(sources)) if i not in replaced]
    return ([sources[i] for i in kept] + extra_sources,
            [results[i] for i in kept] + extra_results)


def _run_all(sources: list[Source], column_map: dict[str, str], cfg: DoctorConfig,
             jobs: int | None, progress: ProgressFn | None, executor: str = "local",
             ray_address: str | None = None) -> list[dict[str, Any]]:
    if executor == "ray":
        from grpo_doctor.ray_executor import run_tasks

        return run_tasks(sources, column_map, cfg, diagnose_one, address=ray_address,
                         jobs=jobs, progress=progress)
    total = len(sources)
    results: list[dict[str, Any]] = [{} for _ in sources]
    if progress:
        progress(0, total)
    workers = min(jobs or os.cpu_count() or 1, total)
    if workers <= 1:
        for i, src in enumerate(sources):
            results[i] = diagnose_one(src, column_map, cfg)
            if progress:
                progress(i + 1, total)
        return results
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_sigint)
    try:
        with _sigint_deferred():  # workers are forked here: they start with SIGINT ignored
            futures = {pool.submit(diagnose_one, src, column_map, cfg): i
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


def audit(
    paths: Sequence[str],
    settings: Settings | None = None,
    *,
    jobs: int | None = None,
    since: datetime | None = None,
    progress: ProgressFn | None = None,
    baseline: Baseline | None = None,
    shard: tuple[int, int] | None = None,
    executor: str = "local",
    ray_address: str | None = None,
) -> AuditResult:
    """Diagnose every run found under ``paths`` (see the module docstring).

    ``shard=(K, N)``: only the sources of shard K of N (see :mod:`grpo_doctor.fleet`).

    ``executor``: ``"local"`` (this machine's process pool) or ``"ray"`` (a Ray task per
    source on the cluster at ``ray_address``, else ``RAY_ADDRESS``, else a local Ray instance:
    :mod:`grpo_doctor.ray_executor`); the records are judged here either way.

    ``jobs``: worker processes (default: one per CPU; 1 runs in this process). Raises
    :class:`~grpo_doctor.errors.GrpoDoctorError` for bad settings, or when nothing that could
    be a log is found (a path that does not exist is an error row, unless it is all there is).
    """
    if not paths:
        raise ConfigError("give at least one log, folder, glob pattern or wandb:// source")
    for given in paths:
        if isinstance(given, str) and not given.strip():
            raise ConfigError("an empty path names no log (an unset variable?)")
    if jobs is not None and jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, got {jobs}")
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor takes {' or '.join(EXECUTORS)}, got {executor!r}")
    if executor == "ray":
        from grpo_doctor.ray_executor import _import_ray

        _import_ray()  # without the extra: one line saying what to install, before any work
    s = settings or Settings()
    column_map = s.checked_map()
    cfg = s.doctor_config()
    for rule in cfg.rules():  # bad --select/--ignore/--set: one usage error, before any work
        cfg.params_for(rule)
    passed: list[PassedOver] = []
    sources, errors = expand(paths, since, passed)
    sources = [src for src in sources if in_shard(src.key, shard)]
    errors = [e for e in errors if in_shard(e.source, shard)]
    passed = [p for p in passed if in_shard(p.source, shard)]
    results = (_run_all(sources, column_map, cfg, jobs, progress, executor, ray_address)
               if sources else [])
    sources, results = _with_launches_joined(
        sources, results,
        lambda more: _run_all(more, column_map, cfg, jobs, None, executor, ray_address))
    found: list[tuple[str, dict[str, Any]]] = []
    for src, result in zip(sources, results):
        if "error" in result:
            errors.append(AuditError(src.key, result["error"]))
        if "skip" in result:
            passed.append(PassedOver(src.key, str(result["skip"])))
        for record in result.get("runs", []):
            record.pop(_LAUNCH, None)
            found.append((src.key, record))
        passed += [PassedOver(_inside(src, p), why) for p, why in result.get("passed_over", [])]
    found = listed_once(found, passed, keep_digest=shard is not None)
    if not found and shard is None and all(e.missing for e in errors):
        empty = [e.source for e in errors if e.error == no_log_found(e.source)]
        if len(empty) < len(errors):  # paths that do not exist: as a usage error
            raise InputError(next(e.error for e in errors if e.source not in empty))
        if since is not None:  # a quiet day for a nightly audit, not an error
            return AuditResult((), (), s.fail_on, baseline, passed_over=tuple(passed),
                               nothing_since=since.isoformat())
        raise InputError(no_log_found(', '.join(paths)))
    errors.sort(key=lambda e: (e.source, e.error))
    passed.sort(key=lambda p: (p.source, p.why))
    label = f"{shard[0]}/{shard[1]}" if shard else None
    # (A bucket's folder as a local one: the same labels, whichever the copy.)
    roots = frozenset(p.rstrip("/").rsplit("/", 1)[-1] if is_uri(p) else Path(p).resolve().name
                      for p in paths)
    return AuditResult(tuple(labelled(found, roots)), tuple(errors), shard=label,
                       passed_over=tuple(passed),
                       fingerprint=fingerprint(paths, s, since, baseline) if shard else None,
                       ).judged(s.fail_on, baseline)


def fingerprint(paths: Sequence[str], settings: Settings, since: datetime | None,
                baseline: Baseline | None) -> str:
    """What every shard of one audit shares, hashed: the paths as given, the checks and their
    thresholds, the column map, ``--fail-on``, ``--since``, the baseline's findings and
    grpo-doctor's version. ``audit-merge`` refuses shards whose fingerprints differ."""
    import hashlib
    import json

    from grpo_doctor.version import package_version

    cfg = settings.doctor_config()
    column_map = settings.checked_map()
    doc = {
        "version": package_version(), "paths": list(paths), "fail_on": settings.fail_on,
        "checks": {rule.id: cfg.params_for(rule) for rule in cfg.rules()},
        "map": sorted(column_map.items()),
        "optional": sorted(getattr(column_map, "optional", ())),
        "since": since.isoformat() if since else None,
        "recipe": cfg.recipe, "config": cfg.run_config, "reward_roles": cfg.reward_roles,
        "baseline": None if baseline is None else sorted(
            [*key, status] for key, status in baseline.findings.items()),
    }
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
