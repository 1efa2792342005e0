"""Auditing at the scale of an organisation's history: shards, merging them, a queryable table.

* **Shards** (``audit --shard K/N``): a source belongs to shard ``1 + sha256(key) mod N``,
  where ``key`` is its path relative to the audited root (or its ``wandb://`` URI), the same
  key a baseline stores. So the partition depends on neither the machine, the checkout's
  location, nor the order the sources were found in; shards 1..N hold every source exactly
  once, and a source's runs (a CSV with a ``run_id`` column holds several) stay together.
* **Merging** (``audit-merge a.json b.json ...``): shard reports (``--format json``) joined
  into the report the whole audit gives: the same runs, labels (a name repeated across shards
  is qualified by its source, as within one audit), order, summary and exit code. Each shard's
  judgment of its runs (``--fail-on``, ``--baseline``) is kept as it was made.
* **Rows** (``audit --format parquet``): one row per (run, check), plus one row per
  unreadable source, with the run's context (log modified time, the GRPO knobs of its config)
  for DuckDB or pandas.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grpo_doctor.audit_result import (
    VALUES_DIGEST,
    AuditedRun,
    AuditError,
    AuditResult,
    Baseline,
    labelled,
    listed_once,
    read_json_option,
)
from grpo_doctor.discovery import newest_mtime
from grpo_doctor.errors import ConfigError
from grpo_doctor.findings import RUN_SEVERITY, SCHEMA_VERSION, Status
from grpo_doctor.objstore import StorePath, is_store_uri, within
from grpo_doctor.rules.knobs import BY_NAME as KNOBS
from grpo_doctor.rules.knobs import configured_value
from grpo_doctor.store import Run
from grpo_doctor.text import agree

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


# --- shards ----------------------------------------------------------------------------------


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N) with 1 <= K <= N."""
    m = _SHARD.fullmatch(text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ConfigError(f"--shard takes K/N with 1 <= K <= N (e.g. 3/8), got {text!r}")
    return int(m.group(1)), int(m.group(2))


def shard_of(key: str, shards: int) -> int:
    """The shard (1..``shards``) of a source key: stable across machines, runs and orderings."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % shards


def in_shard(key: str, shard: tuple[int, int] | None) -> bool:
    return shard is None or shard_of(key, shard[1]) == shard[0]


# --- what the audit adds to each run's record ------------------------------------------------


def run_context(run: Run, where: str | Path | None = None) -> dict[str, Any]:
    """The run's log modified time (UTC, ISO 8601; None for a wandb:// run) and the GRPO knobs
    of its config (``knobs.BY_NAME``; the logged value where the config lacks one). ``where``:
    the source the run was read from (an object store's listing says its times)."""
    modified = None
    stamp = None
    if isinstance(where, StorePath) and is_store_uri(run.source):
        with contextlib.suppress(OSError):
            stamp = newest_mtime(within(where, run.source))
    elif not run.source.startswith("wandb://") and os.path.exists(run.source):
        stamp = newest_mtime(Path(run.source))
    if stamp is not None:
        modified = datetime.fromtimestamp(stamp, tz=timezone.utc).isoformat(timespec="seconds")
    config = {}
    for name, knob in KNOBS.items():
        value, _ = configured_value(run, knob)
        config[name] = float(value) if isinstance(value, (int, float)) else None
    return {"modified": modified, "config": config}


# --- merging shard reports ------------------------------------------------------------------


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """One audit JSON report, checked to be one."""
    where = os.fspath(path)
    doc = read_json_option(where, "no such file", "not valid JSON")
    if not (isinstance(doc, dict) and doc.get("schema_version") == SCHEMA_VERSION
            and isinstance(doc.get("runs"), list) and isinstance(doc.get("errors"), list)
            and isinstance(doc.get("summary"), dict)):
        raise ConfigError(f"{where}: not a grpo-doctor audit JSON report (audit --format json,"
                          f" schema_version {SCHEMA_VERSION})")
    return doc


_INT64 = (-(1 << 63), (1 << 63) - 1)
_CHECK_STATUSES = frozenset(s.value for s in Status)


class _Bad(Exception):
    """What is wrong with one field of a shard report (said with the file by the caller)."""


def _field(obj: Any, key: str, kinds: tuple[type, ...], where: str, *, none: bool = False
           ) -> Any:
    """``obj[key]`` when it is one of ``kinds`` (``none``: or null); booleans are not
    numbers, and an integer must fit 64 bits (a step)."""
    if not isinstance(obj, dict):
        raise _Bad(f"{where} is not an object")
    value = obj.get(key)
    if value is None and none:
        return None
    ok = isinstance(value, kinds) and not isinstance(value, bool)
    if ok and isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
        ok = False
    if not ok:
        wanted = " or ".join({str: "a string", int: "an integer", float: "a number",
                              list: "a list", dict: "an object"}[k] for k in kinds)
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise _Bad(f"{where}.{key} must be {wanted}{' or null' if none else ''}, got {shown}")
    return value


def _strings(obj: dict[str, Any], key: str, where: str, *, none: bool = False) -> None:
    items = _field(obj, key, (list,), where, none=none)
    for item in items or ():
        if not isinstance(item, str):
            raise _Bad(f"{where}.{key} must hold strings, got {item!r:.40}")


def _check_record(entry: Any, where: str) -> None:
    """One run of a shard report, as ``audit --format json`` writes it: every field the merge
    and the reports read, with its type (a report edited by hand, or not grpo-doctor's)."""
    if not isinstance(entry, dict):
        raise _Bad(f"{where} must be an object, got {entry!r:.40}")
    info = entry
    run = _field(info, "run", (dict,), where)
    for key in ("name", "source", "format"):
        _field(run, key, (str,), f"{where}.run")
    for key in ("first_step", "last_step"):
        _field(run, key, (int,), f"{where}.run", none=True)
    if _field(run, "n_steps", (int,), f"{where}.run") < 0:
        raise _Bad(f"{where}.run.n_steps must not be negative")
    if _field(info, "status", (str,), where) not in RUN_SEVERITY:
        raise _Bad(f"{where}.status must be one of {', '.join(RUN_SEVERITY)}, got "
                   f"{info['status']!r:.40}")
    for k, check in enumerate(_field(info, "checks", (list,), where)):
        at = f"{where}.checks[{k}]"
        if not isinstance(check, dict):
            raise _Bad(f"{at} must be an object, got {check!r:.40}")
        _field(check, "mode", (str,), at)
        if _field(check, "status", (str,), at) not in _CHECK_STATUSES:
            raise _Bad(f"{at}.status must be one of {', '.join(sorted(_CHECK_STATUSES))}, "
                       f"got {check['status']!r:.40}")
        _field(check, "summary", (str,), at)
        _field(check, "reason", (str,), at, none=True)
        for key in ("onset_step", "first_alert_step"):
            _field(check, key, (int,), at, none=True)
        _strings(check, "remedies", at)
    audit = _field(info, "audit", (dict,), where)
    for key in ("source", "label"):
        _field(audit, key, (str,), f"{where}.audit")
    _strings(audit, "failing", f"{where}.audit")
    for key in ("new", "worsened"):
        _strings(audit, key, f"{where}.audit", none=True)
    context = _field(info, "context", (dict,), where, none=True)
    if context is not None:
        modified = _field(context, "modified", (str,), f"{where}.context", none=True)
        if modified is not None:
            try:
                datetime.fromisoformat(modified)
            except ValueError:
                raise _Bad(f"{where}.context.modified must be an ISO time or null, got "
                           f"{modified!r:.40}") from None
        config = _field(context, "config", (dict,), f"{where}.context", none=True) or {}
        for key in config:
            _field(config, key, (int, float), f"{where}.context.config", none=True)


def _finite(doc: Any) -> bool:
    """No NaN or Infinity anywhere (Python's JSON reads them; grpo-doctor never writes
    them, and a report cannot carry them)."""
    stack = [doc]
    while stack:
        obj = stack.pop()
        if isinstance(obj, float) and not math.isfinite(obj):
            return False
        if isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, list):
            stack.extend(obj)
    return True


def _check_report(where: str, doc: dict[str, Any]) -> None:
    """Every run and error row of a shard report; a ConfigError naming the field otherwise."""
    try:
        if not _finite(doc):
            raise _Bad("a NaN or Infinity, which JSON does not have")
        for i, entry in enumerate(doc["runs"]):
            _check_record(entry, f"runs[{i}]")
        for i, error in enumerate(doc["errors"]):
            for key in ("source", "error"):
                _field(error, key, (str,), f"errors[{i}]")
        _field(doc["summary"], "new", (int,), "summary", none=True)
        _field(doc, "fingerprint", (str,), "report", none=True)
    except _Bad as exc:
        raise ConfigError(f"{where}: not a valid audit JSON report ({exc})") from None


def _check_shards(docs: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """Shard reports of one audit: one N, each K once, none missing."""
    shards = [(where, doc.get("shard")) for where, doc in docs]
    if not any(s for _, s in shards):
        return
    if not all(s for _, s in shards):
        plain = next(where for where, s in shards if not s)
        raise ConfigError(f"{plain}: a whole audit's report mixed with shard reports")
    seen: dict[int, str] = {}
    totals = set()
    for where, text in shards:
        k, n = parse_shard(str(text))
        totals.add(n)
        if k in seen:
            raise ConfigError(f"{where}: shard {k}/{n} also in {seen[k]}")
        seen[k] = where
    if len(totals) > 1:
        raise ConfigError(f"shard reports of different audits (N = {sorted(totals)})")
    prints = {doc.get("fingerprint") for _, doc in docs}
    if len(prints) > 1:
        first, other = docs[0], next(d for d in docs if d[1].get("fingerprint")
                                     != docs[0][1].get("fingerprint"))
        raise ConfigError(f"{other[0]}: a shard of a different audit than {first[0]} (other "
                          "paths, checks, thresholds, --fail-on, --since, --baseline or "
                          "grpo-doctor version): give every shard the same command")
    (n,) = totals
    missing = [f"{k}/{n}" for k in range(1, n + 1) if k not in seen]
    if missing:
        raise ConfigError(f"{agree(len(missing), 'shard', 'shards')} {', '.join(missing)} "
                          "missing: the merge would not be the whole audit")


def merge(paths: Iterable[str | os.PathLike[str]]):
    """The :class:`~grpo_doctor.audit.AuditResult` of the whole audit from its shard reports."""
    docs = [(os.fspath(p), load_report(p)) for p in paths]
    for where, doc in docs:
        _check_report(where, doc)
    if not docs:
        raise ConfigError("give the JSON reports to merge (audit --shard K/N --format json)")
    _check_shards(docs)
    found: list[tuple[str, dict[str, Any]]] = []
    judged: dict[int, dict[str, Any]] = {}  # id(record) -> the shard's judgment of it
    came_from: dict[tuple[str, str], str] = {}  # (source, run name) -> the report holding it
    errors: list[AuditError] = []
    for where, doc in docs:
        for entry in doc["runs"]:
            record = {k: v for k, v in entry.items() if k != "audit"}
            audit = entry.get("audit") or {}
            key = (str(audit.get("source")), str(record.get("run", {}).get("name")))
            # One report may hold two runs of one name in one source (a W&B project's runs
            # sharing a display name); the same run in two reports is what a merge refuses.
            if came_from.setdefault(key, where) != where:
                raise ConfigError(f"{where}: run {key[1]!r} of {key[0]} is also in "
                                  f"{came_from[key]}")
            judged[id(record)] = audit
            if isinstance(audit.get("values_digest"), str):
                record[VALUES_DIGEST] = audit["values_digest"]
            found.append((key[0], record))
        errors += [AuditError(str(e.get("source")), str(e.get("error"))) for e in doc["errors"]]
    # A run read in two formats (a notebook and the CSV table exported from it) whose files
    # fell in two shards is listed once, as the whole audit lists it (helper-67: the merge
    # counted 52 runs where the audit counts 51).
    found = listed_once(found, [])
    runs = []
    for run in labelled(found):
        audit = judged[id(run.record)]
        new, worsened = audit.get("new"), audit.get("worsened")
        runs.append(AuditedRun(run.source, run.label, run.record,
                               tuple(audit.get("failing") or ()),
                               None if new is None else tuple(new),
                               None if worsened is None else tuple(worsened)))
    with_baseline = any(doc["summary"].get("new") is not None for _, doc in docs)
    return AuditResult(tuple(runs), tuple(sorted(errors, key=lambda e: (e.source, e.error))),
                       baseline=Baseline() if with_baseline else None)


# --- rows for DuckDB / pandas --------------------------------------------------------------

#: The table's columns, in order (``config_*`` follow: one per knob of ``knobs.BY_NAME``).
COLUMNS = ("run", "label", "source", "format", "run_status", "failing", "mode", "status",
           "severity", "onset_step", "first_alert_step", "first_step", "last_step", "n_steps",
           "summary", "modified")


def rows(result) -> list[dict[str, Any]]:
    """One row per (run, check) of an audit, and one per unreadable source (status ``error``)."""
    out = []
    for run in result.runs:
        info = run.record["run"]
        context = run.record.get("context") or {}
        config = context.get("config") or {}
        base = {"run": info["name"], "label": run.label, "source": run.source,
                "format": info["format"], "run_status": run.status,
                "first_step": info["first_step"], "last_step": info["last_step"],
                "n_steps": info["n_steps"], "modified": context.get("modified")}
        knobs = {f"config_{k}": config.get(k) for k in KNOBS}
        for check in run.record["checks"]:
            out.append({**base, "failing": check["mode"] in run.failing, "mode": check["mode"],
                        "status": check["status"], "severity": Status(check["status"]).rank,
                        "onset_step": check["onset_step"],
                        "first_alert_step": check["first_alert_step"],
                        "summary": check["summary"], **knobs})
    for error in result.errors:
        out.append({"source": error.source, "status": "error", "summary": error.error})
    return out


def to_parquet(result) -> bytes:
    """The rows as one parquet file (pyarrow), typed: the steps nullable integers, the
    modified time a UTC timestamp, the knobs floats."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [("run", pa.string()), ("label", pa.string()), ("source", pa.string()),
         ("format", pa.string()), ("run_status", pa.string()), ("failing", pa.bool_()),
         ("mode", pa.string()), ("status", pa.string()), ("severity", pa.int8()),
         ("onset_step", pa.int64()), ("first_alert_step", pa.int64()),
         ("first_step", pa.int64()), ("last_step", pa.int64()), ("n_steps", pa.int64()),
         ("summary", pa.string()), ("modified", pa.timestamp("s", tz="UTC"))]
        + [(f"config_{k}", pa.float64()) for k in KNOBS])
    table_rows = rows(result)
    for row in table_rows:
        if row.get("modified"):
            row["modified"] = datetime.fromisoformat(row["modified"])
    table = pa.Table.from_pylist(table_rows, schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()
