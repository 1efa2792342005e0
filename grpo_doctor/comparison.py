"""What ``compare`` found, as plain data (computed by :mod:`grpo_doctor.compare`, shown by
``reporters/compare_report.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grpo_doctor.trends.divergence import MIN_POINTS, Parting

SCHEMA_VERSION = 1

@dataclass(frozen=True)
class MetricComparison:
    """One canonical metric across the runs."""

    metric: str
    partings: tuple[Parting | None, ...]  # per run; None for the reference and runs that don't
    logged: tuple[bool, ...]  # per run
    window: tuple[int, int] | None  # the steps ``values`` are means over
    values: tuple[float | None, ...]  # each run's mean over ``window``
    #: per run: the points of the grid it shares with the reference (None for the reference
    #: and runs that, or whose reference, did not log the metric); fewer than
    #: ``MIN_POINTS``: not compared (no test ran, so no parting is no finding).
    shared: tuple[int | None, ...] = ()

    @property
    def compared(self) -> tuple[bool, ...]:
        """Per run (the reference included, as False): whether the test ran at all."""
        return tuple(n is not None and n >= MIN_POINTS for n in self.shared) if self.shared \
            else tuple(False for _ in self.logged)

    @property
    def diverges_at(self) -> int | None:
        steps = [p.step for p in self.partings if p is not None]
        return min(steps) if steps else None

    def to_dict(self) -> dict[str, Any]:
        by_run: list[dict[str, Any] | None] = [None]
        shared = self.shared or (None,) * len(self.logged)
        for logged, p, n, compared in zip(self.logged[1:], self.partings[1:], shared[1:],
                                          self.compared[1:]):
            if not logged:
                by_run.append({"logged": False, "compared": False, "shared_points": None,
                               "diverges_at": None})
            elif p is None:
                by_run.append({"logged": True, "compared": compared, "shared_points": n,
                               "diverges_at": None})
            else:
                by_run.append({"logged": True, "compared": True, "shared_points": n,
                               "diverges_at": p.step, "z": p.z, "p": p.p,
                               "window": list(p.window), "values": [p.level_a, p.level_b]})
        return {"diverges_at": self.diverges_at, "values": list(self.values),
                "window": list(self.window) if self.window else None, "by_run": by_run}


@dataclass(frozen=True)
class FindingComparison:
    """One failure mode raised in at least one run."""

    mode: str
    statuses: tuple[str | None, ...]  # per run; None when the run has no such check
    onsets: tuple[int | None, ...]
    first_alerts: tuple[int | None, ...]
    #: per run against the reference; None for the reference; "not_compared" when the check
    #: was skipped (or absent) in that run or in the reference: nothing to say what changed.
    changes: tuple[str | None, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"status": list(self.statuses), "onset_step": list(self.onsets),
                "first_alert_step": list(self.first_alerts), "change": list(self.changes)}


@dataclass(frozen=True)
class Suspect:
    """A setting of the recipe that differs from the reference run's, in the direction the
    chapter links to findings this run has and the reference does not."""

    setting: str  # as this run's config names it
    values: tuple[Any, Any]  # the reference's, this run's
    direction: str  # "higher", "lower", or "set to <value>"
    modes: tuple[str, ...]  # this run's findings it is a known cause of
    primary: bool  # a primary cause of one of them (not only a contributing one)

    def to_dict(self) -> dict[str, Any]:
        return {"setting": self.setting, "reference": self.values[0], "value": self.values[1],
                "direction": self.direction, "modes": list(self.modes),
                "primary": self.primary}


@dataclass(frozen=True)
class Comparison:
    runs: tuple[dict[str, Any], ...]  # name, source, format, first/last step, n_steps, status
    config_diff: dict[str, list[Any]]  # knobs first, then raw keys
    config_origin: dict[str, list[str | None]]  # knob -> where each run's value came from
    metrics: dict[str, MetricComparison]
    findings: dict[str, FindingComparison]
    root_causes: tuple[Any, ...] = field(default=())  # per run: its diagnosis' root cause
    notes: tuple[str, ...] = ()  # how sources holding several runs became runs
    #: per run (the reference's empty): the settings that differ from the reference's and
    #: can explain the findings this run has and it has not, most likely first
    suspects: tuple[tuple[Suspect, ...], ...] = field(default=())
    #: per run: what to do first, as its diagnosis says it (None where nothing fired)
    first_actions: tuple[str | None, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The ``--format json`` document (``schema_version`` 1 of the compare contract)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "runs": [dict(r) for r in self.runs],
            "config_diff": {k: list(v) for k, v in self.config_diff.items()},
            "config_origin": {k: list(v) for k, v in self.config_origin.items()},
            "metrics": {k: m.to_dict() for k, m in self.metrics.items()},
            "findings": {
                "modes": {k: f.to_dict() for k, f in self.findings.items()},
                "root_cause": [as_data(rc) for rc in self.root_causes],
            },
            "suspects": [[x.to_dict() for x in run] for run in self.suspects],
            "first_action": list(self.first_actions),
            "notes": list(self.notes),
        }


def as_data(value: Any) -> Any:
    """A root cause as JSON data, whatever shape the diagnosis gives it (None when none)."""
    if value is None:
        return None
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value if isinstance(value, (str, int, float, dict, list)) else str(value)
