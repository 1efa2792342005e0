"""A run's logged points as the rules read them: finite series (binned beyond ``MAX_SERIES``),
two metrics at their common steps, head and tail levels, and snapping to a logged step."""

from __future__ import annotations

from grpo_doctor.lazy import numpy as np
from grpo_doctor.store import Run

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


def logged(run: Run, metric: str) -> int:
    """How many finite values of ``metric`` the log holds: what a sentence counts ("over 3,000
    logged points"), where ``series`` may have binned them."""
    return len(run.finite_series(metric)[0])


def finite_rows(run: Run, columns: list[str]):
    """The run's rows where every one of ``columns`` holds a finite number (a fit on an inf
    never returns from LAPACK; h114)."""
    frame = run.frame[columns]
    return frame[np.isfinite(frame.to_numpy(dtype=float)).all(axis=1)]


def aligned(run: Run, a: str, b: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps where both metrics were logged as finite numbers, and their values there."""
    sa, va = series(run, a)
    sb, vb = series(run, b)
    steps, ia, ib = np.intersect1d(sa, sb, assume_unique=True, return_indices=True)
    return steps, va[ia], vb[ib]


#: The most logged points a 'late' (current) level is read over. A share of the log keeps
#: the level steady on short logs, but on a long one it would make a live monitor wait
#: for half of e.g. 400 points to pass a threshold before calling a level reached 200
#: steps earlier; the median of 50 is as robust to single spikes.
LATE_MAX = 50


def end_size(n: int, frac: float, min_n: int = 3) -> int:
    """How many of ``n`` points ``head_tail`` takes at an end for ``frac``: at least ``min_n``,
    at most half."""
    return min(max(min_n, round(n * frac)), max(1, n // 2))


def late_points(n: int, frac: float = 0.2, min_n: int = 5) -> int:
    """How many points at the end of a series of ``n`` make its 'late' (current) window: the
    last ``frac`` of them, at least ``min_n`` and at most ``LATE_MAX``."""
    return min(n, max(min_n, min(round(n * frac), LATE_MAX)))


def head_tail(values: np.ndarray, frac: float = 0.1, min_n: int = 3,
              head_frac: float | None = None) -> tuple[float, float]:
    """Median of the first ``head_frac`` (default ``frac``) and of the last ``frac`` of the
    points, at least ``min_n`` and at most ``LATE_MAX`` each (``end_size``)."""
    n = len(values)
    # The start is capped as the current level is: on a long log the first fifth is its
    # plateau, and a climb in the first 50 steps would read "it never left its level".
    head = min(end_size(n, frac if head_frac is None else head_frac, min_n), max(min_n, LATE_MAX))
    tail = min(end_size(n, frac, min_n), max(min_n, LATE_MAX))
    return float(np.median(values[:head])), float(np.median(values[-tail:]))


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
