"""What a rule is: data declared at the top of its module (id, title, required metrics,
parameters with the chapter's defaults, the logged points it needs, what its chart draws,
documentation) plus a pure ``detect`` function over a run's metric store, bound to it by the
``@RULE.detects`` decorator. No I/O, no printing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grpo_doctor.findings import Incident, Status
from grpo_doctor.rules.plot import Lines, Plot
from grpo_doctor.rules.points import (  # noqa: F401 (re-exported: rules.base.series)
    MAX_SERIES,
    aligned,
    head_tail,
    series,
    snap_to_logged,
)
from grpo_doctor.store import Run
from grpo_doctor.text import step_text

#: Where a summary names its onset step: the engine writes the step there, moved to the first
#: alert when a monitor could have called the finding earlier than the rule's estimate.
ONSET = "{onset}"


@dataclass(frozen=True)
class Param:
    """A tunable threshold: name, the chapter's default, what it means, and the values it can
    take (``min``/``max``, None for no bound): thresholds are ratios, shares, levels and
    counts, none of them negative, so ``min`` is 0 unless a rule says otherwise."""

    name: str
    default: float
    help: str
    min: float | None = 0.0
    max: float | None = None

    # Bounds every rule's parameters share, by what a parameter is (so that no value a
    # config can give divides by zero, loops over half a window or tests at 500% confidence):
    # a significance level (``alpha``) lies strictly between 0 and 1; a share
    # (``*_fraction``, ``*_share``, or "share of ..." in its help) is at most 1; a ratio or
    # factor (``*_ratio``, ``*_factor``: divisors) is above 0; a count or window (an integer
    # default) is a whole number of at least 1.

    @property
    def integer(self) -> bool:
        return isinstance(self.default, int) and not isinstance(self.default, bool)

    def _is_share(self) -> bool:
        return self.name.endswith(("_fraction", "_share")) or self.help.startswith("share ")

    def out_of_bounds(self, value: float) -> str | None:
        """Why ``value`` cannot be this threshold ("at least 0"), or None when it can."""
        if self.name == "alpha" or self.name.endswith("_alpha"):
            return None if 0 < value < 1 else "between 0 and 1 (exclusive)"
        if self.integer:
            low_int = max(1.0, self.min if self.min is not None else 1.0)
            if not (float(value).is_integer() and value >= low_int) or (
                    self.max is not None and value > self.max):
                return f"a whole number of at least {low_int:g}" + (
                    f" and at most {self.max:g}" if self.max is not None else "")
            return None
        if self.name.endswith(("_ratio", "_factor")) and value <= 0:
            return "greater than 0"
        high_bound = self.max if self.max is not None else 1.0 if self._is_share() else None
        low = self.min is not None and value < self.min
        high = high_bound is not None and value > high_bound
        if not (low or high):
            return None
        if self.min is not None and high_bound is not None:
            return f"between {self.min:g} and {high_bound:g}"
        return f"at least {self.min:g}" if low else f"at most {high_bound:g}"


@dataclass(frozen=True)
class Outcome:
    """What ``detect`` returns; the engine adds the first-alert step and remedies' order.

    ``summary`` holds ``ONSET`` where it names ``onset_step`` ("... from step {onset}"); the
    engine fills it in."""

    status: Status
    summary: str
    onset_step: int | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    remedies: tuple[str | None, ...] = ()  # None: a remedy that does not apply here
    key_metric: str | None = None
    incidents: tuple[Incident, ...] = ()

    @property
    def fired(self) -> bool:
        return self.status in (Status.WARNING, Status.CRITICAL)


def onset_text(step: int, onset: int) -> str:
    """How a summary names ``step``: the onset slot when it is the outcome's ``onset``, which
    the engine may move; else the step itself (an earlier incident took the onset)."""
    return ONSET if step == onset else step_text(step)


class Skip(Exception):
    """Raised by ``detect`` when the run cannot be judged (too short, a metric all gaps)."""


Detect = Callable[[Run, Mapping[str, float]], Outcome]
#: What a rule can still tell from a log shorter than its ``min_points`` (an incident already
#: visible, a fall already decisive): an outcome, None to skip, or a ``Skip`` of its own words.
ShortLog = Callable[[Run, Mapping[str, float]], Outcome | None]


def _unbound(run: Run, params: Mapping[str, float]) -> Outcome:
    raise NotImplementedError("this rule's module defines no @RULE.detects function")


@dataclass(frozen=True)
class Rule:
    """One failure mode, declared at the top of its module.

    ``requires``: every one of these canonical metrics must be logged. ``requires_any``: at least
    one of these groups must be fully logged (alternative signals). ``needs``: what else the
    rule needs, in words, when it says so only in its ``Skip`` (reward components named like
    a kind); ``grpo-doctor rules`` shows it. ``min_points``: finite logged points of
    ``points_of`` (default: the first required metric, else the most logged alternative of
    ``requires_any``, else the run's logged steps) below which the engine does not run
    ``detect`` but the rule's short-log reader, else skips with "needs at least N logged
    {points}"; an int, or the name of the parameter that sets it (0: no minimum). ``plot``:
    what its chart draws; ``lines``: its threshold lines (``@RULE.draws``). The module
    docstring is the rule's user documentation, with the sections What / Why / How / False
    positives / Remedies.
    """

    id: str
    title: str
    params: tuple[Param, ...]
    doc: str = ""  # the module docstring, filled in by the registry
    requires: tuple[str, ...] = ()
    requires_any: tuple[tuple[str, ...], ...] = ()
    needs: str = ""
    min_points: int | str = 0
    points_of: str = ""
    points: str = "values"
    plot: Plot = field(default_factory=Plot)
    # Bound once, at import, by the decorators below (the functions come later in the module).
    detect: Detect = field(default=_unbound, compare=False)
    short_log: ShortLog | None = field(default=None, compare=False)
    lines: Lines | None = field(default=None, compare=False)

    def detects(self, fn: Detect) -> Detect:
        """Decorator: ``fn`` is this rule's ``detect``."""
        object.__setattr__(self, "detect", fn)
        return fn

    def reads_short_logs(self, fn: ShortLog) -> ShortLog:
        """Decorator: ``fn`` says what a log shorter than ``min_points`` still shows."""
        object.__setattr__(self, "short_log", fn)
        return fn

    def draws(self, fn: Lines) -> Lines:
        """Decorator: ``fn`` gives this rule's threshold lines per metric."""
        object.__setattr__(self, "lines", fn)
        return fn

    def defaults(self) -> dict[str, float]:
        return {p.name: p.default for p in self.params}

    def points_needed(self, params: Mapping[str, float]) -> float:
        """The minimum of logged points under ``params`` (0: none)."""
        if isinstance(self.min_points, str):
            return params[self.min_points]
        return self.min_points

    @property
    def counted_metrics(self) -> tuple[str, ...]:
        """The metrics whose logged points ``min_points`` counts (the most logged of them):
        ``points_of``, else the first required metric, else every alternative of
        ``requires_any``; none: the run's logged steps are counted."""
        if self.points_of:
            return (self.points_of,)
        if self.requires:
            return self.requires[:1]
        return tuple(dict.fromkeys(m for group in self.requires_any for m in group))

    @property
    def cli_name(self) -> str:
        return self.id.replace("_", "-")
