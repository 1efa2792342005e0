"""Windowed relative change: the largest fall (or rise) within a span of steps."""

from __future__ import annotations

from dataclasses import dataclass

from grpo_doctor.lazy import numpy as np
from grpo_doctor.trends.binning import MAX_POINTS, bin_series, rolling_median


@dataclass(frozen=True)
class WindowChange:
    fraction: float  # relative change, e.g. 0.6 for a 60% drop
    start_step: float
    end_step: float
    start_value: float
    end_value: float


def _smooth(steps, values, max_points, smooth):
    x, y = bin_series(steps, values, max_points)
    if smooth > 1:
        y = rolling_median(y, smooth)
    return x, y


def largest_relative_drop(
    steps: np.ndarray,
    values: np.ndarray,
    window: float,
    *,
    smooth: int = 5,
    max_points: int = MAX_POINTS,
) -> WindowChange | None:
    """The largest fall relative to its starting level, ``(v_i - v_j)/|v_i|``, with
    ``0 < step_j - step_i <= window``, on a rolling-median-smoothed (binned) series."""
    x, y = _smooth(steps, values, max_points, smooth)
    n = len(y)
    if n < 2:
        return None
    best = None
    for i in range(n - 1):
        hi = int(np.searchsorted(x, x[i] + window, side="right"))
        if hi <= i + 1 or y[i] == 0:
            continue
        seg = y[i + 1 : hi]
        j = int(np.argmin(seg)) + i + 1
        frac = (y[i] - y[j]) / abs(y[i])
        if best is None or frac > best.fraction:
            best = WindowChange(float(frac), float(x[i]), float(x[j]), float(y[i]), float(y[j]))
    return best


def largest_relative_rise(
    steps: np.ndarray,
    values: np.ndarray,
    window: float,
    *,
    smooth: int = 5,
    max_points: int = MAX_POINTS,
) -> WindowChange | None:
    """Mirror of :func:`largest_relative_drop` for rises: ``(v_j - v_i)/|v_i|``."""
    drop = largest_relative_drop(steps, -np.asarray(values, dtype=np.float64), window,
                                 smooth=smooth, max_points=max_points)
    if drop is None:
        return None
    return WindowChange(drop.fraction, drop.start_step, drop.end_step, -drop.start_value,
                        -drop.end_value)


def decisive_short_fall(values: np.ndarray, ratio: float) -> bool:
    """For logs too short for a trend test (3-7 points, e.g. logged every 10 steps, each an
    average of those steps): every point after the first at most half the start, and the last
    two at most ``ratio`` of it. A fall by an order of magnitude that never recovers needs no
    p-value; one that bounces back does not qualify."""
    v = np.asarray(values, dtype=np.float64)
    if not 3 <= len(v) < 8 or v[0] <= 0:
        return False
    return bool(np.all(v[1:] <= 0.5 * v[0]) and np.median(v[-2:]) <= ratio * v[0])
