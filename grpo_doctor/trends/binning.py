"""Gap removal, equal-count binning and a rolling median."""

from __future__ import annotations

from grpo_doctor.lazy import numpy as np

#: Statistics that cost O(n^2) run on at most this many points (256 bins keep a Mann-Kendall
#: test's power for the trends that matter while costing ~1 ms).
MAX_POINTS = 256


def finite(steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop gaps and non-finite values (NaN/inf are numerical_failure's evidence, not trend)."""
    steps = np.asarray(steps)
    values = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(values)
    return steps[keep], values[keep]


def bin_series(
    steps: np.ndarray, values: np.ndarray, max_points: int = MAX_POINTS
) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_points`` points: equal-count bins, each the median of its values at the
    median of its steps. Medians keep a lone spike from moving a bin. Short series pass through.
    """
    steps = np.asarray(steps, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if n <= max_points:
        return steps, values
    size = int(np.ceil(n / max_points))
    full = (n // size) * size
    s = np.median(steps[:full].reshape(-1, size), axis=1)
    v = np.median(values[:full].reshape(-1, size), axis=1)
    if full < n:
        s = np.append(s, np.median(steps[full:]))
        v = np.append(v, np.median(values[full:]))
    return s, v


def rolling_median(values: np.ndarray, window: int) -> np.ndarray:
    """Centred rolling median (window shrinks at the ends); ``window`` <= 1 returns a copy."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if window <= 1 or n == 0:
        return values.copy()
    half = window // 2
    padded = np.pad(values, half, mode="edge")
    view = np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1)
    return np.median(view, axis=1)[:n]
