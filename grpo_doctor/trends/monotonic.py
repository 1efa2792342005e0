"""Monotonic trend: Mann-Kendall with the Hamed-Rao autocorrelation correction, Theil-Sen slope.

Training curves are serially correlated (momentum, overlapping batches, smoothed logging);
plain Mann-Kendall then calls noise a trend. Hamed and Rao (1998) inflate Var(S) by n/n*
estimated from the autocorrelation of the ranks of the detrended series (first ``lag`` lags,
significant ones only, as Hamed and Rao suggest).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grpo_doctor.lazy import numpy as np
from grpo_doctor.trends.binning import MAX_POINTS, bin_series


@dataclass(frozen=True)
class TrendTest:
    """Result of a monotonic-trend test on one series."""

    n: int
    s: float  # Mann-Kendall S statistic
    z: float
    p: float  # two-sided p-value
    tau: float  # Kendall's tau: -1 (strictly falling) .. 1 (strictly rising)
    slope: float  # Theil-Sen slope per step
    variance_inflation: float  # n/n* from the autocorrelation correction (1 = none)

    def decreasing(self, alpha: float = 0.01) -> bool:
        return self.p < alpha and self.s < 0

    def increasing(self, alpha: float = 0.01) -> bool:
        return self.p < alpha and self.s > 0


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def theil_sen(steps: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """Median of pairwise slopes (per step) and the matching intercept."""
    x = np.asarray(steps, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    n = len(y)
    if n < 2:
        return 0.0, float(y[0]) if n else 0.0
    i, j = np.triu_indices(n, k=1)
    dx = x[j] - x[i]
    ok = dx != 0
    if not ok.any():
        return 0.0, float(np.median(y))
    slope = float(np.median((y[j] - y[i])[ok] / dx[ok]))
    intercept = float(np.median(y - slope * x))
    return slope, intercept


def _s_and_var(y: np.ndarray) -> tuple[float, float]:
    n = len(y)
    diff = np.sign(y[None, :] - y[:, None])
    s = float(np.triu(diff, k=1).sum())
    _, counts = np.unique(y, return_counts=True)
    ties = counts[counts > 1].astype(np.float64)
    var = (n * (n - 1) * (2 * n + 5) - float((ties * (ties - 1) * (2 * ties + 5)).sum())) / 18.0
    return s, var


def _rank(a: np.ndarray) -> np.ndarray:
    order = np.argsort(a, kind="mergesort")
    ranks = np.empty(len(a), dtype=np.float64)
    ranks[order] = np.arange(1, len(a) + 1)
    return ranks


def variance_inflation(residuals: np.ndarray, lag: int = 3) -> float:
    """Hamed-Rao's n/n*: how much serial correlation inflates the variance of a statistic of
    ``residuals`` (a detrended series) over the same series without it; 1 when none.

    From the autocorrelation of the residuals' ranks at the first ``lag`` lags, counting only
    lags significant at 5% (as Hamed and Rao suggest). Never below 1.
    """
    r = _rank(np.asarray(residuals, dtype=np.float64))
    n = len(r)
    r = r - r.mean()
    denom = float((r * r).sum())
    if n < 4 or denom <= 0:
        return 1.0
    bound = 1.96 / math.sqrt(n)
    acc = 0.0
    for k in range(1, min(lag, n - 3) + 1):
        rk = float((r[:-k] * r[k:]).sum()) / denom
        if abs(rk) > bound:
            acc += (n - k) * (n - k - 1) * (n - k - 2) * rk
    return max(1.0, 1.0 + 2.0 / (n * (n - 1) * (n - 2)) * abs(acc))


def mann_kendall(
    steps: np.ndarray, values: np.ndarray, lag: int = 3, max_points: int = MAX_POINTS
) -> TrendTest:
    """Hamed-Rao corrected Mann-Kendall test and Theil-Sen slope on a (binned) series."""
    x, y = bin_series(steps, values, max_points)
    n = len(y)
    if n < 4:
        slope, _ = theil_sen(x, y)
        return TrendTest(n, 0.0, 0.0, 1.0, 0.0, slope, 1.0)
    s, var = _s_and_var(y)
    slope, intercept = theil_sen(x, y)
    tau = s / (0.5 * n * (n - 1))

    inflation = variance_inflation(y - (slope * x + intercept), lag)
    var *= inflation
    if var <= 0:
        return TrendTest(n, s, 0.0, 1.0, tau, slope, inflation)
    z = (s - np.sign(s)) / math.sqrt(var) if s != 0 else 0.0
    p = 2.0 * _normal_sf(abs(z))
    return TrendTest(n, s, float(z), float(min(1.0, p)), float(tau), slope, inflation)
