"""Where a change began: the knot of a continuous two-piece linear fit, and mean-shift onset.

``hinge_onset`` fits y = a + b*t + c*max(0, t - tau) for every candidate tau in closed form
(cumulative sums, a batched 3x3 solve), so the cost is linear in the number of points. The
knot is where the trend bent: the retrospective onset of a decline or rise.
``level_shift_onset`` is binary segmentation's first split under an L2 cost, for metrics that
jump between regimes (zero-std fraction, truncation ratio).
"""

from __future__ import annotations

from grpo_doctor.lazy import numpy as np
from grpo_doctor.trends.binning import MAX_POINTS, bin_series


def hinge_onset(
    steps: np.ndarray, values: np.ndarray, min_size: int = 3, max_points: int = MAX_POINTS
) -> tuple[float, float, float]:
    """Best knot of a continuous piecewise-linear fit with one bend.

    Returns ``(knot_step, slope_before, slope_after)``. With fewer than ``2*min_size`` points the
    knot is the first step and the slopes are the overall least-squares slope.
    """
    x, y = bin_series(steps, values, max_points)
    x = x.astype(np.float64)
    n = len(y)
    if n < 2 * min_size:
        slope = float(np.polyfit(x, y, 1)[0]) if n >= 2 and np.ptp(x) > 0 else 0.0
        return (float(x[0]) if n else 0.0), slope, slope
    # Centre and scale t for a well-conditioned solve.
    t0, ts = x.mean(), max(np.ptp(x), 1e-12)
    t = (x - t0) / ts
    # Suffix sums: sums over points with index >= k.
    def suffix(a: np.ndarray) -> np.ndarray:
        return np.concatenate([np.cumsum(a[::-1])[::-1], [0.0]])

    c1, ct, ctt, cy, cty = suffix(np.ones(n)), suffix(t), suffix(t * t), suffix(y), suffix(t * y)
    ks = np.arange(min_size, n - min_size + 1)
    tau = t[ks - 1]  # knot at a data point; h = 0 for index < k
    m = c1[ks]
    st, stt, sy, sty = ct[ks], ctt[ks], cy[ks], cty[ks]
    sh = st - tau * m
    shh = stt - 2 * tau * st + tau * tau * m
    sth = stt - tau * st
    shy = sty - tau * sy
    N, T, TT, Y, TY = float(n), t.sum(), (t * t).sum(), y.sum(), (t * y).sum()
    A = np.empty((len(ks), 3, 3))
    A[:, 0, 0], A[:, 0, 1], A[:, 0, 2] = N, T, sh
    A[:, 1, 0], A[:, 1, 1], A[:, 1, 2] = T, TT, sth
    A[:, 2, 0], A[:, 2, 1], A[:, 2, 2] = sh, sth, shh
    rhs = np.stack([np.full(len(ks), Y), np.full(len(ks), TY), shy], axis=1)
    A[:, [0, 1, 2], [0, 1, 2]] += 1e-12
    try:
        coef = np.linalg.solve(A, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        coef = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(A, rhs)])
    sse = (y * y).sum() - (coef * rhs).sum(axis=1)
    best = int(np.argmin(sse))
    k = ks[best]
    b, c = coef[best, 1], coef[best, 2]
    return float(x[k - 1]), float(b / ts), float((b + c) / ts)


def level_shift_onset(
    steps: np.ndarray, values: np.ndarray, min_size: int = 3, max_points: int = MAX_POINTS
) -> tuple[float, float, float]:
    """The single best mean-shift split: ``(first_step_after, mean_before, mean_after)``."""
    x, y = bin_series(steps, values, max_points)
    n = len(y)
    if n < 2 * min_size:
        m = float(y.mean()) if n else 0.0
        return (float(x[0]) if n else 0.0), m, m
    cs = np.cumsum(y)
    cs2 = np.cumsum(y * y)
    ks = np.arange(min_size, n - min_size + 1)
    left_n, right_n = ks, n - ks
    left_s, right_s = cs[ks - 1], cs[-1] - cs[ks - 1]
    left_q, right_q = cs2[ks - 1], cs2[-1] - cs2[ks - 1]
    sse = (left_q - left_s**2 / left_n) + (right_q - right_s**2 / right_n)
    best = int(np.argmin(sse))
    k = ks[best]
    return float(x[k]), float(left_s[best] / k), float(right_s[best] / (n - k))


def trend_onset(steps: np.ndarray, values: np.ndarray, start_level: float, end_level: float,
                *, smooth: int = 5, done: float = 0.9, bend: float = 0.0) -> float:
    """Where a move from ``start_level`` to ``end_level`` began.

    The hinge is fitted only up to the point where ``done`` of the move is complete, so a
    plateau after the move (or a second phase) does not pull the knot away from its start.
    With ``bend`` > 0, a fit whose slope before the knot already goes the move's way at
    ``bend`` times the slope after it or more has no start in it (at 1, the knot is where the
    move slowed down): the move ran from the first step. An exponential decay is a straight
    line in log space, where any knot fits.
    """
    from grpo_doctor.trends.binning import rolling_median

    x = np.asarray(steps, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    if len(y) < 2:
        return float(x[0]) if len(x) else 0.0
    s = rolling_median(y, smooth)
    target = start_level + done * (end_level - start_level)
    reached = np.nonzero(s <= target)[0] if end_level < start_level else np.nonzero(
        s >= target)[0]
    end = int(reached[0]) + 1 if len(reached) else len(y)
    end = max(end, min(len(y), 6))
    knot, before, after = hinge_onset(x[:end], y[:end])
    if bend > 0 and after != 0 and before / after >= bend and (
            (before < 0) == (end_level < start_level)):
        return float(x[0])
    return knot
