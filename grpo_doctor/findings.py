"""What a diagnosis says: one Check per failure mode, gathered in a Diagnosis.

Every output format (terminal, JSON, Markdown, JUnit, HTML) renders from ``to_dict()``, so
they can never disagree. The JSON form is a versioned contract (``SCHEMA_VERSION``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

SCHEMA_VERSION = 1


class Status(str, Enum):
    OK = "ok"
    WARNING = "warning"
    CRITICAL = "critical"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Status.SKIPPED: -1, Status.OK: 0, Status.WARNING: 1, Status.CRITICAL: 2}


@dataclass(frozen=True)
class Check:
    """The outcome of one rule on one run."""

    mode: str
    status: Status
    summary: str
    onset_step: int | None = None
    first_alert_step: int | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    remedies: tuple[str, ...] = ()
    reason: str | None = None
    key_metric: str | None = None  # what a sparkline or chart of this check shows

    @property
    def fired(self) -> bool:
        return self.status in (Status.WARNING, Status.CRITICAL)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "status": self.status.value,
            "onset_step": self.onset_step,
            "first_alert_step": self.first_alert_step,
            "summary": self.summary,
            "evidence": self.evidence,
            "remedies": list(self.remedies),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class RunInfo:
    name: str
    source: str
    format: str
    first_step: int | None
    last_step: int | None
    n_steps: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "source": self.source, "format": self.format,
            "first_step": self.first_step, "last_step": self.last_step, "n_steps": self.n_steps,
        }


@dataclass(frozen=True)
class Diagnosis:
    run: RunInfo
    metrics: dict[str, str]
    checks: tuple[Check, ...]
    notes: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        worst = max((c.status.rank for c in self.checks), default=0)
        return {2: "critical", 1: "warning"}.get(worst, "healthy")

    @property
    def findings(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.fired)

    def check(self, mode: str) -> Check:
        for c in self.checks:
            if c.mode == mode:
                return c
        raise KeyError(mode)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "run": self.run.to_dict(),
            "metrics": dict(self.metrics),
            "checks": [c.to_dict() for c in self.checks],
            "status": self.status,
        }
