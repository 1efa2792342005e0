"""Axes of a panel: the value range (cut to the body of the data when a few outliers would
squash it), the points beyond it, ticks and their labels."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from grpo_doctor.reporters.html.charts import (
    Panel,
)
from grpo_doctor.text import fmt


@dataclass(frozen=True)
class Axis:
    lo: float
    hi: float
    log: bool
    clipped: bool = False

    def frac(self, v: np.ndarray) -> np.ndarray:
        """0 at ``lo``, 1 at ``hi``."""
        if self.log:
            v = np.log10(np.maximum(v, 1e-300))
            lo, hi = math.log10(self.lo), math.log10(self.hi)
        else:
            lo, hi = self.lo, self.hi
        return (np.asarray(v, dtype=np.float64) - lo) / ((hi - lo) or 1.0)


#: The largest magnitude an axis reaches: its span and padding stay finite.
_AXIS_LIMIT = 1e300


#: An axis is cut to the body of the data when the points beyond it are at most this share...
OUTLIER_SHARE = 0.05
#: ... and showing them would take at least this many times the body's height.
OUTLIER_SQUASH = 1.6
#: Outliers marked one by one on a panel (the most extreme ones).
MAX_CLIPPED_MARKS = 60


def body_range(values: np.ndarray, smooth: np.ndarray) -> tuple[float, float]:
    """Where the data lives: the rolling median's range, widened by four robust standard
    deviations of the raw points around it. A trend (KL drifting 0.1 -> 1.2) is inside; a
    spike the rolling median steps over (one raw KL of 25) is not."""
    resid = values - smooth
    resid = resid[np.isfinite(resid)]
    mad = float(np.median(np.abs(resid - np.median(resid)))) * 1.4826 if len(resid) else 0.0
    lo, hi = float(np.nanmin(smooth)), float(np.nanmax(smooth))
    spread = max(4 * mad, 0.05 * (hi - lo), 1e-12 * max(1.0, abs(hi)))
    return max(float(values.min()), lo - spread), min(float(values.max()), hi + spread)


def y_axis(panel: Panel) -> Axis:
    """The value range: the body of the data, outliers left beyond the axis when they are few
    and would squash what matters into a flat line (they are drawn at the edge and marked:
    ``Axis.clipped``), stretched to a nearby threshold so the line the data is approaching is
    on the chart."""
    s = panel.series
    v = s.smooth if s.smooth_only else s.values
    if panel.overlays:
        v = np.concatenate([v, *(o.values for o, _ in panel.overlays)])
    if panel.log:
        v = v[v > 0]
    lo, hi = float(v.min()), float(v.max())
    clipped = False
    if len(v) >= 8 and not panel.log and not s.smooth_only and len(s.smooth) == len(v):
        b_lo, b_hi = body_range(v, s.smooth)
        beyond = (v > b_hi) | (v < b_lo)
        body = max(b_hi - b_lo, 1e-12 * max(1.0, abs(b_hi)))
        if 0 < beyond.mean() <= OUTLIER_SHARE and (hi - lo) >= OUTLIER_SQUASH * body:
            pad = 0.08 * body
            if hi > b_hi:
                hi, clipped = b_hi + pad, True
            if lo < b_lo:
                lo, clipped = b_lo - pad, True
    if panel.percent:
        lo, hi = 0.0, 1.0
        clipped = False
    if panel.fit_thresholds:
        for t in panel.thresholds:
            if panel.log:
                if hi < t.value <= hi * 3:
                    hi = t.value
                if lo / 3 <= t.value < lo:
                    lo = t.value
            else:
                reach = 0.6 * max(hi - lo, abs(hi) * 0.05, 1e-12)
                if hi < t.value <= hi + reach:
                    hi = t.value
                if lo - reach <= t.value < lo:
                    lo = t.value
    # Values near the float limit (a grad norm of 1e308) would make the span, the padding and
    # the ticks overflow: the axis stops short of it and the point is drawn at its edge.
    if panel.log:
        lo, hi = min(max(lo, 1e-300), _AXIS_LIMIT / 10), min(hi, _AXIS_LIMIT)
        clipped = clipped or hi < float(v.max())
        hi = max(hi, lo * 10 if hi <= lo else hi)
        log_lo, log_hi = math.log10(lo), math.log10(hi)
        pad = (log_hi - log_lo) * 0.06 or 0.3
        edge = math.log10(_AXIS_LIMIT)
        return Axis(10 ** max(log_lo - pad, -edge), 10 ** min(log_hi + pad, edge), True,
                    clipped)
    if max(abs(lo), abs(hi)) > _AXIS_LIMIT:
        lo, hi = max(lo, -_AXIS_LIMIT), min(hi, _AXIS_LIMIT)
        lo, clipped = min(lo, hi), True
    if hi - lo <= 1e-12 * max(1.0, abs(hi)):
        half = max(abs(hi) * 0.1, 1e-6)
        lo, hi = lo - half, hi + half
    pad = 0.0 if panel.percent else (hi - lo) * 0.06
    return Axis(lo - pad, hi + pad, False, clipped)


def beyond_axis(panel: Panel, axis: Axis) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the raw points above and below the axis (drawn at its edge, marked)."""
    s = panel.series
    if not axis.clipped or s.smooth_only:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.flatnonzero(s.values > axis.hi), np.flatnonzero(s.values < axis.lo)


def beyond_axis_labels(panel: Panel, axis: Axis) -> list[tuple[int, bool, str]]:
    """(index, above, text) of the most extreme raw point above the axis and of the one
    below it: the value a chart writes beside its edge ("17.8 at step 71"), so the spike a
    finding is about is read even when the axis keeps to the body of the data."""
    s = panel.series
    out = []
    for idx, above in zip(beyond_axis(panel, axis), (True, False)):
        if len(idx):
            worst = int(idx[np.argmax(s.values[idx])] if above else idx[np.argmin(s.values[idx])])
            out.append((worst, above, f"{_value_text(s.values[worst])} at step "
                                      f"{fmt(s.steps[worst])}"))
    return out


def linear_ticks(lo: float, hi: float, n: int = 5) -> tuple[list[float], float]:
    """Round ticks (steps of 1, 2, 2.5 or 5 x 10^k) over [lo, hi], as close to n as can be."""
    span = hi - lo
    if not (span > 0 and math.isfinite(span)):
        return [lo], 1.0
    mag = 10 ** math.floor(math.log10(span / max(n, 1)))
    best: tuple[float, float] | None = None
    for m in (0.5, 1, 2, 2.5, 5, 10, 20):
        step = m * mag
        count = math.floor(hi / step + 1e-9) - math.ceil(lo / step - 1e-9) + 1
        score = abs(count - n) + (0.5 if m in (2.5, 20) else 0.0)  # 2.5 reads less well
        if best is None or score < best[0]:
            best = (score, step)
    assert best is not None
    step = best[1]
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)], step


def log_ticks(lo: float, hi: float) -> list[float]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    stride = max(1, math.ceil((b - a) / 7))
    decades = [10.0 ** k for k in range(a, b + 1, stride)]
    ticks = [t for t in decades if lo <= t <= hi]
    if len(ticks) < 3:
        ticks = sorted({m * d for d in decades for m in (1, 2, 5) if lo <= m * d <= hi})
    return ticks


def tick_label(v: float, step: float, percent: bool = False) -> str:
    if percent:
        decimals = max(0, -math.floor(math.log10(step * 100) + 1e-9)) if step > 0 else 0
        return f"{v * 100:.{decimals}f}%"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6 or a < 1e-4:
        mant, exp = f"{v:.1e}".split("e")
        return f"{mant.rstrip('0').rstrip('.')}e{int(exp)}"
    if step <= 0:
        return fmt(v)
    exponent = math.floor(math.log10(step) + 1e-9)
    decimals = max(0, -exponent)
    if exponent <= 0 and f"{step / 10 ** exponent:.2f}" == "2.50":
        decimals += 1
    return f"{v:,.{decimals}f}"


def _value_text(v: float) -> str:
    """A value written beside a chart (an outlier's label): short at any magnitude."""
    return tick_label(float(v), 0.0)


def step_label(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:.3g}M"
    return f"{int(round(v)):,}"


def _log_label(v: float) -> str:
    if not (math.isfinite(v) and v > 0):
        return ""
    return tick_label(v, 10 ** math.floor(math.log10(v)))
