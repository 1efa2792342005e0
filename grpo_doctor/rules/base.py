"""What a rule is: data (id, title, required metrics, parameters with the chapter's defaults,
documentation) plus a pure ``detect`` function over a run's metric store. No I/O, no printing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grpo_doctor.findings import Incident, Status
from grpo_doctor.store import Run


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

    def out_of_bounds(self, value: float) -> str | None:
        """Why ``value`` cannot be this threshold ("at least 0"), or None when it can."""
        low = self.min is not None and value < self.min
        high = self.max is not None and value > self.max
        if not (low or high):
            return None
        if self.min is not None and self.max is not None:
            return f"between {self.min:g} and {self.max:g}"
        return f"at least {self.min:g}" if low else f"at most {self.max:g}"


@dataclass(frozen=True)
class Outcome:
    """What ``detect`` returns; the engine adds the first-alert step and remedies' order."""

    status: Status
    summary: str
    onset_step: int | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    remedies: tuple[str, ...] = ()
    key_metric: str | None = None
    incidents: tuple[Incident, ...] = ()

    @property
    def fired(self) -> bool:
        return self.status in (Status.WARNING, Status.CRITICAL)


class Skip(Exception):
    """Raised by ``detect`` when the run cannot be judged (too short, a metric all gaps)."""


@dataclass(frozen=True)
class Rule:
    """One failure mode.

    ``requires``: every one of these canonical metrics must be logged. ``requires_any``: at least
    one of these groups must be fully logged (alternative signals). ``needs``: what else the
    rule needs, in words, when it says so only in its ``Skip`` (reward components named like
    a kind); ``grpo-doctor rules`` shows it. The module docstring is the rule's user
    documentation, with the sections What / Why / How / False positives / Remedies.
    """

    id: str
    title: str
    detect: Callable[[Run, Mapping[str, float]], Outcome]
    params: tuple[Param, ...]
    doc: str
    requires: tuple[str, ...] = ()
    requires_any: tuple[tuple[str, ...], ...] = ()
    min_points: int = 8
    needs: str = ""

    def defaults(self) -> dict[str, float]:
        return {p.name: p.default for p in self.params}

    @property
    def cli_name(self) -> str:
        return self.id.replace("_", "-")


# --- helpers every rule uses ----------------------------------------------------------------


#: Longer series are binned to this many points before a rule looks at them, so every rule
#: costs about the same on 10^4 and 10^6 logged steps.
MAX_SERIES = 2000


def series(run: Run, metric: str, reduce: str = "median") -> tuple[np.ndarray, np.ndarray]:
    """Finite (step, value) pairs of one metric; gaps and NaN/inf dropped.

    Beyond ``MAX_SERIES`` points, equal-count bins: each the median of its values (``reduce
    ="max"`` keeps spikes visible) at the last step of the bin, so a bin's value is what was
    known at its step.
    """
    steps, values = run.finite_series(metric)
    n = len(values)
    if n <= MAX_SERIES:
        return steps, values
    cached = run._derived.get((metric, reduce))
    if cached is not None:
        return cached
    size = -(-n // MAX_SERIES)
    full = (n // size) * size
    agg = np.max if reduce == "max" else np.median
    s = steps[size - 1:full:size]
    v = agg(values[:full].reshape(-1, size), axis=1)
    if full < n:
        s = np.append(s, steps[-1])
        v = np.append(v, agg(values[full:]))
    run._derived[(metric, reduce)] = (s, v)
    return s, v


def aligned(run: Run, a: str, b: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps where both metrics were logged as finite numbers, and their values there."""
    sa, va = series(run, a)
    sb, vb = series(run, b)
    steps, ia, ib = np.intersect1d(sa, sb, assume_unique=True, return_indices=True)
    return steps, va[ia], vb[ib]


def head_tail(values: np.ndarray, frac: float = 0.1, min_n: int = 3,
              head_frac: float | None = None) -> tuple[float, float]:
    """Median of the first ``head_frac`` (default ``frac``) and of the last ``frac`` of the
    points, at least ``min_n`` each."""
    n = len(values)

    def size(f: float) -> int:
        return min(max(min_n, round(n * f)), max(1, n // 2))

    return (float(np.median(values[: size(frac if head_frac is None else head_frac)])),
            float(np.median(values[-size(frac):])))


def snap_to_logged(run: Run, metric: str, step: float) -> int:
    """The logged step of ``metric`` nearest ``step`` (binning can produce in-between steps)."""
    steps, _ = run.finite_series(metric)
    if len(steps) == 0:
        return int(round(step))
    i = int(np.searchsorted(steps, step))
    if i >= len(steps):
        return int(steps[-1])
    if i > 0 and abs(steps[i - 1] - step) <= abs(steps[i] - step):
        return int(steps[i - 1])
    return int(steps[i])
