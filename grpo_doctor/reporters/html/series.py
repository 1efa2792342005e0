"""What one metric looks like on a chart: its finite points in segments (a gap breaks the
line), a rolling median, the NaN/inf steps, and the envelope that keeps long series drawable."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from grpo_doctor.rules.plot import ZERO_SHARE
from grpo_doctor.store import Run

#: Points drawn per line at most (min/max envelope beyond).
MAX_POINTS = 1500


@dataclass(frozen=True)
class Series:
    """One metric ready to draw: its finite points, the segment each belongs to (a new segment
    after every gap), a rolling median, and the steps where NaN or inf was logged."""

    metric: str
    steps: np.ndarray
    values: np.ndarray
    segment: np.ndarray
    smooth: np.ndarray
    smooth_label: str
    bad_steps: np.ndarray
    smooth_only: bool = False


def smoothing_window(n: int) -> int:
    """Points in the rolling median: about 1/40 of the series, odd, 5 to 1001."""
    return int(min(1001, max(5, (n // 40) | 1)))


def _segments(rows: np.ndarray, steps: np.ndarray, bad_rows: np.ndarray) -> np.ndarray:
    """Segment ids of finite points (frame rows ``rows``): the line breaks across a NaN or inf,
    across a stretch where other metrics were logged and this one was not (longer than its usual
    spacing), and across a hole of more than four times its usual spacing."""
    if len(rows) < 2:
        return np.zeros(len(rows), dtype=np.int64)
    d = np.diff(steps)
    spacing = float(np.median(d)) if len(d) else 1.0
    spacing = spacing if spacing > 0 else 1.0
    bad_cum = np.concatenate([[0], np.cumsum(bad_rows)])
    bad_between = bad_cum[rows[1:]] - bad_cum[rows[:-1] + 1] > 0
    skipped_rows = np.diff(rows) > 1
    gap = bad_between | (d > 4 * spacing) | (skipped_rows & (d > 1.5 * spacing))
    return np.concatenate([[0], np.cumsum(gap)]).astype(np.int64)


def _rolling(values: np.ndarray, segment: np.ndarray, window: int, *,
             how: str = "median", center: bool = True) -> np.ndarray:
    """A rolling statistic that never reaches across a gap (computed per segment)."""
    if len(values) == 0:
        return values.copy()
    grouped = pd.Series(values).groupby(segment, sort=True).rolling(
        window, center=center, min_periods=1)
    out = grouped.median() if how == "median" else grouped.mean()
    smooth = out.to_numpy(dtype=np.float64, copy=True)
    # Near the float limit a median of two values overflows: the point keeps its own value.
    overflow = ~np.isfinite(smooth)
    smooth[overflow] = values[overflow]
    return smooth


def metric_series(run: Run, metric: str) -> Series | None:
    """The drawable series of a metric, or None when it has no finite value."""
    if metric not in run.frame.columns:
        return None
    col = run.frame[metric].to_numpy(dtype=np.float64)
    all_steps = run.steps
    finite = np.isfinite(col)
    nan_logged = np.isin(all_steps, run.nan_steps.get(metric, np.zeros(0, dtype=np.int64)))
    bad = np.isinf(col) | nan_logged
    if not finite.any():
        return None
    rows = np.flatnonzero(finite)
    steps = all_steps[rows].astype(np.float64)
    values = col[rows]
    segment = _segments(rows, steps, bad)
    window = smoothing_window(len(values))
    return Series(metric=metric, steps=steps, values=values, segment=segment,
                  smooth=_rolling(values, segment, window),
                  smooth_label=f"rolling median of {window}", bad_steps=all_steps[bad])


def zero_share_series(run: Run, metric: str, eps: float, late_fraction: float) -> Series | None:
    """Advantage collapse's signal when only a reward std is logged: the share of the trailing
    ``late_fraction`` of logged steps whose std is zero (what the rule reads at the log's end)."""
    base = metric_series(run, metric)
    if base is None:
        return None
    zero = (np.abs(base.values) <= eps).astype(np.float64)
    k = max(5, int(round(len(zero) * late_fraction)))
    k = min(k, len(zero))
    share = pd.Series(zero).rolling(k, min_periods=k).mean().to_numpy(dtype=np.float64)[k - 1:]
    return Series(metric=ZERO_SHARE, steps=base.steps[k - 1:], values=share,
                  segment=np.zeros(len(share), dtype=np.int64), smooth=share,
                  smooth_label=f"share of the last {k} logged steps with {metric} = 0",
                  bad_steps=base.bad_steps, smooth_only=True)


def bad_stretches(s: Series) -> list[tuple[int, int, int]]:
    """The steps where NaN or inf was logged, as (first, last, count) stretches."""
    bad = np.asarray(s.bad_steps, dtype=np.int64)
    if len(bad) == 0:
        return []
    spacing = float(np.median(np.diff(s.steps))) if len(s.steps) > 1 else 1.0
    cut = np.flatnonzero(np.diff(bad) > 1.5 * max(spacing, 1.0)) + 1
    return [(int(g[0]), int(g[-1]), len(g)) for g in np.split(bad, cut)]


def envelope(values: np.ndarray, segment: np.ndarray, max_points: int = MAX_POINTS
             ) -> np.ndarray:
    """Indices of the points to draw: all of them when few, else the min and the max of each of
    ~max_points/2 bins (bins never straddle a gap), so every spike is still drawn."""
    n = len(values)
    if n <= max_points:
        return np.arange(n)
    size = math.ceil(n / max(1, max_points // 2))
    start_of_segment = np.searchsorted(segment, segment, side="left")
    key = segment.astype(np.int64) * (n + 1) + (np.arange(n) - start_of_segment) // size
    grouped = pd.DataFrame({"v": values, "k": key}).groupby("k", sort=True)["v"]
    return np.union1d(grouped.idxmin().to_numpy(), grouped.idxmax().to_numpy())
