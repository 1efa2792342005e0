"""Where two runs part: the first step from which their curves differ beyond their own noise.

Two curves of one metric go onto a common step grid, and the test runs on their difference
``d = b - a``, window by window:

* **Noise.** Each run's own noise (the robust spread of its values around their rolling
  median over a window: a trend is not noise, a wander shorter than the window is), the two
  combined as independent, and, for a window's mean, inflated for serial correlation by Hamed
  and Rao's n/n* (the correction the Mann-Kendall test uses: a curve that wanders is not a
  curve that moved).
* **A window** of ``window`` points (about 1/12 of the common steps, at least 8 points) is
  significant when its mean difference is beyond what that noise explains (two-sided p below
  ``alpha``) and its median difference is on the same side by at least one standard error
  (a few outlying points move a mean, not a median: a 3-log excursion is not a parting).
* **Parting** needs ``persist`` consecutive half-overlapping windows significant with the same
  sign (about a fifth of the common steps, 20 points at least): a stretch of wander, which
  two seeds of one recipe show, is not parting.
* **Or a gap many times the noise that holds to the end.** A short log cannot hold four
  windows after a late change (a 40-point log changing at 70% has 12 points left). Windows of
  ``TAIL_WINDOW`` points (whatever the log's length) up to its last point count when both
  their mean and median difference are beyond ``TAIL_FACTOR`` times the runs' combined
  per-point noise on one side; ``TAIL_PERSIST`` of them in a row, the last one ending the log,
  are a parting. Wander of seeds stays within a few noise units; a gap of many, still open
  when the log ends, is not wander.
* **The step** is where the gap opened: Page's CUSUM for a shift of ``d`` from 0 to its level
  over that stretch, read back to its last reset before the first significant window ends (the
  classic estimate of when a mean began to move; its allowance is half that level, or three
  noise units when less, so that a gap that grew over a few logs dates from where it left the
  noise). A gap there from the start never resets it: the runs differ from the first common
  step.

A point difference is never enough: a lone spike moves a window's mean by 1/``window`` of it,
and its median not at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grpo_doctor.lazy import numpy as np
from grpo_doctor.trends.binning import MAX_POINTS, finite, rolling_median
from grpo_doctor.trends.monotonic import _normal_sf, variance_inflation

#: Per-window significance (two-sided); ``PERSIST`` same-sign windows in a row make a parting.
ALPHA = 0.05
PERSIST = 4
#: A significant window's median difference is on its mean's side by this many standard errors.
MEDIAN_Z = 1.0
#: The held-gap test: windows of ``TAIL_WINDOW`` points, ``TAIL_PERSIST`` in a row up to the
#: log's end, each with mean and median difference beyond ``TAIL_FACTOR`` x the per-point noise:
#: the gap has held at least the last five logs (a 20-point log changing at 70% has six), and
#: an excursion of three logs at the end cannot move the median of the window before them.
TAIL_WINDOW, TAIL_PERSIST, TAIL_FACTOR = 5, 2, 5.0
#: Dating: a CUSUM allowance of at most this many per-point noise units (see ``_dated``).
DATING_NOISE = 3.0
#: Fewer common points than this: too few to read each run's own noise from.
MIN_POINTS = 12
#: Points per window: about 1/12 of the common grid, within these bounds.
MIN_WINDOW, MAX_WINDOW = 8, 32
#: Relative differences below this are rounding (float32 keeps ~7 digits).
RESOLUTION = 1e-6


@dataclass(frozen=True)
class Parting:
    """Where run B parts from run A on one metric."""

    step: int  # the first step from which they differ
    z: float  # the first significant window's statistic (> 0: B above A)
    p: float  # its two-sided p-value
    window: tuple[int, int]  # first and last step of the first significant window
    level_a: float  # A's mean over ``window``
    level_b: float  # B's mean over ``window``


def common_grid(steps_a: np.ndarray, values_a: np.ndarray, steps_b: np.ndarray,
                values_b: np.ndarray, max_points: int = MAX_POINTS
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both series on one step grid over the steps both logged: their shared steps when they
    log the same ones (and few enough), else equal-width step bins, each the median of each
    run's values in it (bins where either run has none are dropped)."""
    sa, va = finite(steps_a, values_a)
    sb, vb = finite(steps_b, values_b)
    empty = np.zeros(0)
    if len(sa) == 0 or len(sb) == 0:
        return empty, empty, empty
    lo, hi = max(sa[0], sb[0]), min(sa[-1], sb[-1])
    if hi < lo:
        return empty, empty, empty
    ka, kb = (sa >= lo) & (sa <= hi), (sb >= lo) & (sb <= hi)
    sa, va, sb, vb = sa[ka], va[ka], sb[kb], vb[kb]
    shared, ia, ib = np.intersect1d(sa, sb, assume_unique=True, return_indices=True)
    if len(shared) <= max_points and len(shared) >= 0.8 * min(len(sa), len(sb)):
        return shared.astype(np.float64), va[ia], vb[ib]
    n_bins = max(1, min(len(sa), len(sb), max_points))
    edges = np.linspace(float(lo), float(hi), n_bins + 1)
    grid, a, b = [], [], []
    bin_a = np.clip(np.searchsorted(edges, sa, side="right") - 1, 0, n_bins - 1)
    bin_b = np.clip(np.searchsorted(edges, sb, side="right") - 1, 0, n_bins - 1)
    split_a = np.flatnonzero(np.diff(bin_a)) + 1
    split_b = np.flatnonzero(np.diff(bin_b)) + 1
    by_a = {int(g[0]): (s, v) for g, s, v in zip(np.split(bin_a, split_a),
                                                  np.split(sa, split_a), np.split(va, split_a))}
    for g, s, v in zip(np.split(bin_b, split_b), np.split(sb, split_b), np.split(vb, split_b)):
        hit = by_a.get(int(g[0]))
        if hit is None:
            continue
        grid.append(float(np.median(np.concatenate([hit[0], s]))))
        a.append(float(np.median(hit[1])))
        b.append(float(np.median(v)))
    return np.asarray(grid), np.asarray(a), np.asarray(b)


def run_noise(values: np.ndarray, window: int) -> float:
    """A run's own noise for means over ``window`` points, as a standard deviation per point:
    the spread of its values around their rolling median over 3 windows (a trend is not noise;
    a wander at the scale of a window is), times the square root of Hamed and Rao's n/n* of
    those residuals (serially correlated points carry less information, so a window's mean
    varies more). 0 for a constant series."""
    spread, inflation = _spread(values, window)
    return spread * math.sqrt(inflation)


def _spread(values: np.ndarray, window: int) -> tuple[float, float]:
    """A run's spread per point around its rolling median over 3 windows, and Hamed and
    Rao's n/n* of those residuals (1 when the spread is 0)."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) < 2:
        return 0.0, 1.0
    resid = v - rolling_median(v, (3 * window) | 1)
    mad = float(np.median(np.abs(resid - np.median(resid)))) * 1.4826
    spread = mad if mad > 0 else float(np.std(resid))  # a 0/1 metric that is mostly 0
    if spread == 0.0:
        return 0.0, 1.0
    return spread, variance_inflation(resid)


def default_window(n: int) -> int:
    return int(min(MAX_WINDOW, max(MIN_WINDOW, round(n / 12))))


def min_points(window: int, persist: int = PERSIST) -> int:
    """Grid points the test needs: ``persist`` half-overlapping windows."""
    return window + (persist - 1) * max(1, window // 2)


def parting(steps: np.ndarray, a: np.ndarray, b: np.ndarray, *, window: int | None = None,
            alpha: float = ALPHA, persist: int = PERSIST) -> Parting | None:
    """Where ``b`` parts from ``a`` (both on the grid ``steps``, see :func:`common_grid`), or
    None when it never does or the grid is too short for the test (see the module docstring):
    the earlier of a sustained parting and a gap many times the noise held to the end."""
    steps = np.asarray(steps, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    n = len(steps)
    if n < MIN_POINTS:
        return None
    w = window or default_window(n)
    d = b - a
    # Noise floor: a relative difference below float32's resolution (TensorBoard stores float32)
    # is one value written twice, not two values (a learning rate of 1e-4 in both runs).
    floor = RESOLUTION * max(float(np.abs(a).max()), float(np.abs(b).max()))
    (spread_a, inflation_a), (spread_b, inflation_b) = _spread(a, w), _spread(b, w)
    scale = max(math.hypot(spread_a * math.sqrt(inflation_a), spread_b * math.sqrt(inflation_b)),
                floor)
    if scale == 0.0:  # both constant zero
        return None
    point = max(math.hypot(spread_a, spread_b), floor)
    found = [p for p in (_sustained(steps, a, b, d, scale, point, w, alpha, persist),
                         _held_to_the_end(steps, a, b, d, scale, point)) if p is not None]
    return min(found, key=lambda p: p.step) if found else None


def _sustained(steps: np.ndarray, a: np.ndarray, b: np.ndarray, d: np.ndarray, scale: float,
               point: float, w: int, alpha: float, persist: int) -> Parting | None:
    """The first ``persist`` consecutive half-overlapping windows significant on one side."""
    n = len(d)
    if n < min_points(w, persist):
        return None
    hop = max(1, w // 2)
    starts = range(0, n - w + 1, hop)
    run_sign, run_len = 0, 0
    for j, i in enumerate(starts):
        seg = d[i:i + w]
        z, p = _window_test(seg, scale)
        sign = int(np.sign(z)) if p < alpha else 0
        if sign and sign * _median_z(seg, scale) < MEDIAN_Z:
            sign = 0  # a few outlying points moved the mean, not the window
        run_len = run_len + 1 if sign and sign == run_sign else (1 if sign else 0)
        run_sign = sign
        if run_len == persist:
            first = starts[j - persist + 1]
            return _dated(steps, a, b, d, scale, point, first, i + w, w)
    return None


def _held_to_the_end(steps: np.ndarray, a: np.ndarray, b: np.ndarray, d: np.ndarray,
                     scale: float, point: float) -> Parting | None:
    """The stretch of ``TAIL_WINDOW``-point windows (half-overlapping, the last ending the
    log) whose mean and median difference are both beyond ``TAIL_FACTOR`` x ``point`` on
    one side, read back from the end; a parting when it holds ``TAIL_PERSIST`` windows."""
    n, w = len(d), TAIL_WINDOW
    hop = max(1, w // 2)
    first, count, side = n, 0, 0.0
    for i in range(n - w, -1, -hop):
        seg = d[i:i + w]
        mean, median = float(seg.mean()), float(np.median(seg))
        beyond = min(abs(mean), abs(median)) >= TAIL_FACTOR * point
        sign = float(np.sign(mean)) if beyond and np.sign(mean) == np.sign(median) else 0.0
        if not sign or (side and sign != side):
            break
        first, count, side = i, count + 1, sign
    if count < TAIL_PERSIST:
        return None
    return _dated(steps, a, b, d, scale, point, first, n, w)


def _median_z(seg: np.ndarray, scale: float) -> float:
    """A window's median difference in standard errors of a median (1.2533 x a mean's)."""
    return float(np.median(seg)) / (1.2533 * scale / math.sqrt(len(seg)))


def _window_test(seg: np.ndarray, scale: float) -> tuple[float, float]:
    """z and two-sided p of a window's mean difference against the runs' noise."""
    z = float(seg.mean()) / (scale / math.sqrt(len(seg)))
    return z, min(1.0, 2.0 * _normal_sf(abs(z)))


def _dated(steps: np.ndarray, a: np.ndarray, b: np.ndarray, d: np.ndarray, scale: float,
           point: float, first: int, end: int, w: int) -> Parting:
    """The parting step: where the excursion that reached the significant stretch began (see
    :func:`gap_start`), no later than the first significant window's last point. The CUSUM's
    allowance is half the gap, or ``DATING_NOISE`` x the per-point noise ``point`` when that
    is less: a gap many times the noise that grew over a few logs began where it left the
    noise, not where it reached half its later size."""
    z_first, p_first = _window_test(d[first:first + w], scale)
    sign = 1.0 if z_first > 0 else -1.0
    gap = float(np.mean(sign * d[first:end]))
    allowance = min(gap / 2, DATING_NOISE * point)
    k = min(gap_start(sign * d[:first + w], gap, allowance), first + w - 1)
    lo, hi = first, min(len(steps), first + w)
    return Parting(step=int(round(steps[k])), z=z_first, p=p_first,
                   window=(int(round(steps[lo])), int(round(steps[hi - 1]))),
                   level_a=float(a[lo:hi].mean()), level_b=float(b[lo:hi].mean()))


def gap_start(x: np.ndarray, gap: float, allowance: float | None = None) -> int:
    """Where a rise of ``x`` from 0 to ``gap`` began: Page's CUSUM for a shift of the mean from
    0 to ``gap`` (``S = max(0, S + x - k)``, the allowance ``k`` half the gap unless given),
    and the index after its last return to 0."""
    k = gap / 2 if allowance is None else allowance
    total, start = 0.0, 0
    for i, value in enumerate(x):
        total = max(0.0, total + float(value) - k)
        if total == 0.0:
            start = i + 1
    return min(start, len(x) - 1)
