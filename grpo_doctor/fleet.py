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
import os
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grpo_doctor.audit_result import (
    AuditedRun,
    AuditError,
    AuditResult,
    Baseline,
    labelled,
    read_json_option,
)
from grpo_doctor.discovery import newest_mtime
from grpo_doctor.errors import ConfigError
from grpo_doctor.findings import SCHEMA_VERSION, Status
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
    (n,) = totals
    missing = [f"{k}/{n}" for k in range(1, n + 1) if k not in seen]
    if missing:
        raise ConfigError(f"{agree(len(missing), 'shard', 'shards')} {', '.join(missing)} "
                          "missing: the merge would not be the whole audit")


def merge(paths: Iterable[str | os.PathLike[str]]):
    """The :class:`~grpo_doctor.audit.AuditResult` of the whole audit from its shard reports."""
    docs = [(os.fspath(p), load_report(p)) for p in paths]
    if not docs:
        raise ConfigError("give the JSON reports to merge (audit --shard K/N --format json)")
    _check_shards(docs)
    found: list[tuple[str, dict[str, Any]]] = []
    judged: dict[tuple[str, str], dict[str, Any]] = {}
    errors: list[AuditError] = []
    for where, doc in docs:
        for entry in doc["runs"]:
            record = {k: v for k, v in entry.items() if k != "audit"}
            audit = entry.get("audit") or {}
            key = (str(audit.get("source")), str(record.get("run", {}).get("name")))
            if key in judged:
                raise ConfigError(f"{where}: run {key[1]!r} of {key[0]} is in two reports")
            judged[key] = audit
            found.append((key[0], record))
        errors += [AuditError(str(e.get("source")), str(e.get("error"))) for e in doc["errors"]]
    runs = []
    for run in labelled(found):
        audit = judged[(run.source, run.name)]
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
