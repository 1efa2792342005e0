"""What an audit found: each run's diagnosis record, the sources that could not be read, the
baseline of accepted findings, and how the findings were judged against ``--fail-on``. Plain data,
shared by the audit, the fleet merge and the audit reports.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_doctor.config import failing_statuses
from grpo_doctor.errors import ConfigError, GrpoDoctorError
from grpo_doctor.exit_codes import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK
from grpo_doctor.files import as_path, is_remote
from grpo_doctor.findings import RUN_SEVERITY, RUN_STOPPED, SCHEMA_VERSION
from grpo_doctor.importers._common import read_json
from grpo_doctor.importers.run_folder import FOLDER_COPY

#: ``progress(done, total)``: called once the sources are known, then after each source.
ProgressFn = Callable[[int, int], None]

#: Worst first.
SEVERITY = RUN_SEVERITY  # kept for callers of the 0.x API
#: The baseline file's own format (its findings list); apart from the report's contract.
BASELINE_VERSION = 1


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

    @property
    def copy(self) -> bool:
        """A run read and left out as a copy of another (the same logged values)."""
        # (or a log a run's folder left out as a copy of the log it read: trial 68's audit
        # had called ten such consoles "log files with no training metrics")
        return self.why.startswith((COPY_OF, FOLDER_COPY))


#: The record key holding a digest of a run's logged values (dropped once copies are found;
#: a shard's report keeps it under ``audit``, for ``audit-merge``).
VALUES_DIGEST = "_values_digest"

#: How a copy left out says whose copy it is.
COPY_OF = "the same logged values as "


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
        found = [c for c in self.record["checks"] if c["status"] in ("warning", "critical")]
        cause = self.record.get("root_cause")
        if not found and isinstance(cause, dict) and cause.get("mode") == RUN_STOPPED:
            # A run that died on an error is a warning with no check's finding: listed, judged
            # against --fail-on and kept by a baseline as one (``root_cause.stopped_cause``).
            found = [{"mode": RUN_STOPPED, "status": "warning", "onset_step": cause.get("step"),
                      "summary": cause.get("summary")}]
        return found

    def to_dict(self) -> dict[str, Any]:
        audit = {"source": self.source, "label": self.label, "failing": list(self.failing),
                 "new": None if self.new is None else list(self.new),
                 "worsened": None if self.worsened is None else list(self.worsened)}
        record = dict(self.record)
        digest = record.pop(VALUES_DIGEST, None)
        if digest is not None:  # a shard's run: for the merge to list copies once
            audit["values_digest"] = digest
        return {**record, "audit": audit}


def listed_once(found: list[tuple[str, dict[str, Any]]], passed: list[PassedOver],
                keep_digest: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """The runs of ``found`` with the same logged values read through another format (a
    notebook and the CSV table exported from it, event files and their CSV download) listed
    once: the copy whose source told the most settings (a notebook's GRPOConfig beside its
    table's CSV, which has none: the audit had kept the CSV and lost the notebook's
    "num_generations 2 -> 16"; nu33), else the first in path order. Each copy left out is
    said in ``passed``. Copies in one format stay rows of their own, as they were given.
    ``keep_digest``: a shard's records keep their digest, for the merge to find copies in two
    shards."""
    ordered = sorted(found, key=lambda kr: kr[0])
    digests = [record.get(VALUES_DIGEST) if keep_digest else record.pop(VALUES_DIGEST, None)
               for _, record in ordered]
    best: dict[str, int] = {}  # digest -> index of the copy kept
    for i, ((_, record), digest) in enumerate(zip(ordered, digests)):
        if digest is None:
            continue
        if digest not in best or _settings_told(record) > _settings_told(ordered[best[digest]][1]):
            best[digest] = i
    out = []
    for i, ((key, record), digest) in enumerate(zip(ordered, digests)):
        kept = best.get(digest) if digest is not None else None
        if kept is not None and kept != i:
            kept_key, kept_record = ordered[kept]
            kept_fmt = str(kept_record["run"].get("format"))
            if kept_fmt != str(record["run"].get("format")):
                passed.append(PassedOver(key, f"{COPY_OF}{kept_key} (read as {kept_fmt}): "
                                              "listed once"))
                continue
        out.append((key, record))
    return out


def _settings_told(record: dict[str, Any]) -> int:
    """How many of the recipe's settings a run's source told (its diagnosis's ``setup``)."""
    setup = record.get("setup")
    return len(setup) if isinstance(setup, list) else 0


def read_json_option(path: str, missing: str, invalid: str) -> Any:
    """A JSON file a user named in an option (a baseline, a shard report): a file that is not
    there or not JSON is a usage error (exit 2), said in one line. An object-store URI is
    read through the filesystem layer."""
    if is_remote(path):
        try:
            found = as_path(path)
        except GrpoDoctorError as exc:
            raise ConfigError(str(exc).replace("no such file or folder", missing)) from None
        try:
            return read_json(found, invalid)
        except GrpoDoctorError as exc:
            raise ConfigError(str(exc)) from None
    if not os.path.lexists(path):
        raise ConfigError(f"{path}: {missing}")
    try:
        return read_json(Path(path), invalid)
    except GrpoDoctorError as exc:
        raise ConfigError(str(exc)) from None


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
        data = read_json_option(where, "baseline not found (write one with --write-baseline)",
                                "the baseline is not valid JSON")
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
    # ``--since``: the cutoff (ISO), when no run was modified after it. A quiet day for a
    # nightly audit: no run to judge is then not an error.
    nothing_since: str | None = None
    # A shard's: what must be the same in every shard of one audit (see audit.fingerprint),
    # which ``audit-merge`` checks.
    fingerprint: str | None = None

    def judged(self, fail_on: str, baseline: Baseline | None) -> AuditResult:
        """The same runs judged against ``fail_on`` and ``baseline`` (None: every finding at or
        above ``fail_on`` fails)."""
        runs = tuple(_judge(r, fail_on, baseline) for r in self.runs)
        return AuditResult(runs, self.errors, fail_on, baseline, self.shard, self.passed_over,
                           self.nothing_since, self.fingerprint)

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

    @property
    def unreadable_only(self) -> bool:
        """Sources were named and none of them could be read (exit 2)."""
        return bool(self.errors) and not self.runs and self.shard is None

    def unreadable_summary(self) -> str:
        """One line: why no run could be read."""
        first = self.errors[0].error
        if len(self.errors) == 1:
            return first
        return f"none of the {len(self.errors)} sources could be read ({first}; ...)"

    def exit_code(self, *, strict: bool = False) -> int:
        """2 when no run could be read; 1 for a failing finding, for an inconclusive run under
        ``--fail-on inconclusive`` or ``strict``, or (``strict``) an error row; else 0."""
        if not self.runs and self.shard is None and self.nothing_since is None:
            return EXIT_ERROR  # a shard may hold no run; so may a quiet day under --since
        unjudged = "inconclusive" in failing_statuses(self.fail_on, strict=strict) and any(
            r.status == "inconclusive" for r in self.runs)
        if any(r.failing for r in self.runs) or unjudged or (strict and self.errors):
            return EXIT_FINDINGS
        return EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        """The ``--format json`` document."""
        doc = {"schema_version": SCHEMA_VERSION, "runs": [r.to_dict() for r in self.runs],
               "errors": [e.to_dict() for e in self.errors], "summary": self.summary()}
        if not self.shard:
            return doc
        return {**doc, "shard": self.shard, **(
            {"fingerprint": self.fingerprint} if self.fingerprint else {})}


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


def labelled(found: list[tuple[str, dict[str, Any]]],
             roots: frozenset[str] = frozenset()) -> list[AuditedRun]:
    """The runs, each labelled by its name (with its source where two share one). A run named
    after an audited folder itself (events directly in ``real-runs/tensorboard/`` are named
    "real-runs") is labelled by its source: the root's name read as a summary row (helper-95)."""
    names = Counter(record["run"]["name"] for _, record in found)
    runs = []
    for source, record in found:
        name = str(record["run"]["name"])
        label = (source if name in roots and source not in (".", "") else
                 name if names[name] == 1 else f"{name} ({source})")
        runs.append(AuditedRun(source, label, record))
    return sorted(runs, key=lambda r: (-SEVERITY.get(r.status, 0), r.label, r.source))
