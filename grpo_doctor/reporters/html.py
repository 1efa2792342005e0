"""A self-contained HTML report of one diagnosis: the curves, with onsets and thresholds marked.

One file, viewable offline: inline CSS, charts drawn here as inline SVG (no plotting library,
nothing fetched), a few lines of inline JS for hover tooltips. Each finding gets one chart of its
key metric and the metrics that corroborate it (entropy collapse: entropy and reward; KL drift:
KL and reward; ...): the raw curve thin and light, a rolling median over it, a vertical line at
the onset step and another at the first-alert step, and the rule's thresholds as lines and bands
(KL 0.5 / 5 / 10; entropy at 50% and 10% of its start; zero-std groups at 50% / 80%; grad norm
at 5x its baseline). A dashboard of the main metrics follows. Every string that came from a log
is escaped; long series are reduced to ~1500 points per line with min/max envelopes so spikes
stay visible; a gap in a metric breaks its line rather than being bridged.

The same chart specification is drawn to PNG with matplotlib (``render_png``, the optional
``plot`` extra) for pull-request comments, and ``render_index`` writes an audit's index page.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from grpo_doctor import rules
from grpo_doctor.findings import SCHEMA_VERSION, SOURCE_SEVERITY, Check, Diagnosis
from grpo_doctor.metrics import Metric
from grpo_doctor.reporters import config_line, escape, evidence
from grpo_doctor.reporters.outline import by_onset, cause_text
from grpo_doctor.rules import Rule, rule_named
from grpo_doctor.rules.plot import ZERO_SHARE, Plot, Threshold
from grpo_doctor.store import Run
from grpo_doctor.text import fmt

#: Points drawn per line at most (min/max envelope beyond).
MAX_POINTS = 1500
#: What a missing matplotlib says (the ``plot`` extra).
PNG_HINT = "install grpo-doctor[plot] for --png"

REWARD = Metric.REWARD_MEAN.value
ENTROPY = Metric.ENTROPY.value
KL = Metric.KL.value
ZSF = Metric.ZERO_STD_FRACTION.value
RSTD = Metric.REWARD_STD.value
GSTD = Metric.GROUP_REWARD_STD.value
GRAD = Metric.GRAD_NORM.value
LOGP = Metric.LOG_PROB_MEAN.value
LENGTH = Metric.RESPONSE_LENGTH_MEAN.value
TRUNC = Metric.TRUNCATION_RATIO.value
LOSS = Metric.LOSS.value

STATUS_COLOR = {
    "critical": "#c62828", "warning": "#b86e00", "ok": "#2e7d32", "healthy": "#2e7d32",
    "skipped": "#6b7280", "error": "#6b7280", "inconclusive": "#1f5fae",
}
LEVEL_COLOR = {"warning": "#d08700", "danger": "#e65100", "critical": "#c62828",
               "info": "#6b7280"}
SERIES_COLORS = ("#1f5fae", "#0e7c7b", "#7b3fa0", "#a0522d", "#37474f", "#8a6d00")
NAN_COLOR = "#c62828"

LABELS = {
    REWARD: "reward (mean)", RSTD: "reward std", GSTD: "group reward std", ENTROPY: "entropy",
    KL: "KL to the reference", ZSF: "zero-std group fraction", GRAD: "gradient norm",
    LOGP: "mean token log-prob", LENGTH: "response length (mean)", LOSS: "loss",
    TRUNC: "truncated completions", ZERO_SHARE: "share of steps with zero reward std",
    Metric.RATIO_MAX.value: "PPO ratio max", Metric.RATIO_MIN.value: "PPO ratio min",
    Metric.CLIP_FRACTION.value: "clip fraction", Metric.IS_RATIO_MAX.value: "IS ratio max",
    Metric.HELDOUT_SCORE.value: "held-out score",
}
FRACTIONS = {ZSF, TRUNC, ZERO_SHARE, Metric.CLIP_FRACTION.value,
             Metric.ALL_CORRECT_FRACTION.value, Metric.ALL_WRONG_FRACTION.value}

#: A run's dashboard, in this order (those logged; reward std only without zero-std fraction).
DASHBOARD = (REWARD, ENTROPY, KL, ZSF, RSTD, GRAD, LENGTH, LOGP)
MAX_PANELS = 3


#: Any text from a log, safe in HTML content and in quoted attributes.
esc = escape.html


# --- series: what one metric looks like on a chart ------------------------------------------


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


# --- chart specification -------------------------------------------------------------------


@dataclass(frozen=True)
class Marker:
    step: int
    kind: str  # onset | alert
    label: str


@dataclass(frozen=True)
class Panel:
    title: str
    series: Series
    color: str
    note: str = ""
    log: bool = False
    percent: bool = False
    thresholds: tuple[Threshold, ...] = ()
    markers: tuple[Marker, ...] = ()
    spikes: tuple[int, ...] = ()
    status: str | None = None  # dashboard: status of the check keyed on this metric
    marker_color: str = STATUS_COLOR["critical"]
    fit_thresholds: bool = True  # stretch the axis to show a threshold just beyond the data
    # More runs' curves of the same metric drawn over ``series`` (compare): (series, color).
    overlays: tuple[tuple[Series, str], ...] = ()
    series_label: str = ""  # the legend's name for ``series`` when there are overlays
    overlay_labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    status: str
    panels: tuple[Panel, ...]
    steps: tuple[float, float]
    columns: int = 1


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


class _Context:
    """What thresholds need: the rules' parameters (with the user's overrides) and evidence."""

    def __init__(self, diagnosis: Diagnosis, params: Mapping[str, Mapping[str, float]] | None):
        self.diagnosis = diagnosis
        self.overrides = params or {}

    def params(self, rule_id: str) -> dict[str, float]:
        try:
            values = rule_named(rule_id).defaults()
        except KeyError:
            return {}
        for key, value in self.overrides.get(rule_id, {}).items():
            if key in values:
                values[key] = float(value)
        return values

    def evidence(self, mode: str) -> Mapping[str, Any]:
        """The evidence of the check of ``mode``; empty when it did not run."""
        try:
            return self.diagnosis.check(mode).evidence
        except KeyError:
            return {}


def thresholds_for(metric: str, ctx: _Context) -> tuple[Threshold, ...]:
    """The rules' thresholds on ``metric``, in its units: the lines of the first rule that
    draws any on it (each rule's ``lines``, from its parameters and its check's evidence)."""
    for rule in rules.RULES:
        if rule.lines is not None:
            lines = rule.lines(ctx.params(rule.id), ctx.evidence(rule.id)).get(metric)
            if lines:
                return tuple(lines)
    return ()


def _rule(mode: str) -> Rule | None:
    try:
        return rule_named(mode)
    except KeyError:
        return None


def _is_fraction(metric: str, s: Series) -> bool:
    return metric in FRACTIONS and float(s.values.min()) >= 0 and float(s.values.max()) <= 1


def _use_log(metric: str, s: Series, finding: bool) -> bool:
    positive = s.values[s.values > 0]
    if metric != GRAD or len(positive) < max(2, len(s.values) // 2):
        return False
    return finding or float(positive.max() / positive.min()) > 30


def _positive(s: Series) -> Series:
    """A series for a log axis: values <= 0 cannot be drawn there, so they become gaps."""
    keep = s.values > 0
    if keep.all():
        return s
    dropped_before = np.concatenate([[0], np.cumsum(~keep)[:-1]])
    segment = s.segment * (len(keep) + 1) + dropped_before
    _, segment = np.unique(segment[keep], return_inverse=True)
    segment = segment.astype(np.int64)
    values = s.values[keep]
    window = smoothing_window(len(values))
    return replace(s, steps=s.steps[keep], values=values, segment=segment,
                   smooth=_rolling(values, segment, window),
                   smooth_label=f"rolling median of {window}")


def _source_note(run: Run, metric: str) -> str:
    src = run.mapping.get(metric)
    proxy = run.proxies.get(metric)
    note = f"logged as {src}" if src and src != metric else ""
    if proxy:
        note += f" (proxy: {proxy})"
    return note


def _panel(run: Run, metric: str, ctx: _Context, color: str, *, finding: bool,
           markers: tuple[Marker, ...] = (), status: str | None = None,
           marker_color: str = STATUS_COLOR["critical"], spikes: tuple[int, ...] = ()
           ) -> Panel | None:
    series = metric_series(run, metric)
    if series is None:
        return None
    log = _use_log(metric, series, finding)
    if log:
        series = _positive(series)
    return Panel(
        title=LABELS.get(metric, metric), series=series, color=color,
        note=_source_note(run, metric), log=log,
        percent=_is_fraction(metric, series), thresholds=thresholds_for(metric, ctx),
        markers=markers, spikes=spikes, status=status, marker_color=marker_color,
        fit_thresholds=finding,
    )


def _markers(check: Check) -> tuple[Marker, ...]:
    out = []
    if check.onset_step is not None:
        out.append(Marker(check.onset_step, "onset", f"onset {fmt(check.onset_step)}"))
    if check.first_alert_step is not None:
        out.append(Marker(check.first_alert_step, "alert",
                          f"first alert {fmt(check.first_alert_step)}"))
    return tuple(out)


def _step_range(run: Run) -> tuple[float, float]:
    lo = float(run.first_step) if run.first_step is not None else 0.0
    hi = float(run.last_step) if run.last_step is not None else 1.0
    return lo, hi


def finding_chart(check: Check, run: Run, ctx: _Context) -> Chart:
    """The chart of one finding: its key metric on top, the corroborating metrics below."""
    key = check.key_metric
    rule = _rule(check.mode)
    plot = rule.plot if rule is not None else Plot()
    metrics = [m for m in ((key,) if key else ()) + plot.metrics]
    if plot.metrics_in:
        more = check.evidence.get(plot.metrics_in)
        if isinstance(more, Mapping):
            metrics[1:1] = [str(m) for m in more]
    markers = _markers(check)
    color = STATUS_COLOR.get(check.status.value, STATUS_COLOR["critical"])
    spikes = tuple(int(s) for s in _listed(check.evidence.get(plot.spikes))
                   if isinstance(s, (int, float)) and math.isfinite(s)) if plot.spikes else ()
    zero = plot.zero_share
    panels: list[Panel] = []
    seen: set[str] = set()
    for metric in metrics:
        if metric in seen or len(panels) >= MAX_PANELS:
            continue
        seen.add(metric)
        if zero is not None and metric in zero.of and metric == key:
            p = ctx.params(check.mode)
            share = zero_share_series(run, metric, p[zero.eps], p[zero.window])
            if share is not None:
                panels.append(Panel(LABELS[ZERO_SHARE], share, SERIES_COLORS[0],
                                    note=share.smooth_label, percent=True,
                                    thresholds=thresholds_for(ZERO_SHARE, ctx), markers=markers,
                                    marker_color=color))
        panel = _panel(run, metric, ctx, SERIES_COLORS[len(panels) % len(SERIES_COLORS)],
                       finding=True, markers=markers, marker_color=color,
                       spikes=spikes if metric == key else ())
        if panel is not None:
            panels.append(panel)
    return Chart(id=f"chart-{_slug(check.mode)}", title=_title(check.mode),
                 status=check.status.value, panels=tuple(panels), steps=_step_range(run))


def dashboard_chart(diagnosis: Diagnosis, run: Run, ctx: _Context) -> Chart:
    """The run's main metrics, each marked with the check that watches it."""
    metrics = [m for m in DASHBOARD if run.has(m) and not (m == RSTD and run.has(ZSF))]
    if not metrics:
        metrics = [c for c in run.frame.columns if run.has(c)][:6]
    panels = []
    for i, metric in enumerate(metrics):
        watching = [c for c in diagnosis.checks if c.key_metric == metric
                    and c.status.value != "skipped"]
        worst = max(watching, key=lambda c: c.status.rank, default=None)
        markers = _markers(worst) if worst is not None and worst.fired else ()
        panel = _panel(run, metric, ctx, SERIES_COLORS[i % len(SERIES_COLORS)], finding=False,
                       markers=markers, status=worst.status.value if worst else None,
                       marker_color=STATUS_COLOR.get(worst.status.value, "#666")
                       if worst else "#666")
        if panel is not None:
            panels.append(panel)
    return Chart(id="chart-dashboard", title="Dashboard", status=diagnosis.status,
                 panels=tuple(panels), steps=_step_range(run), columns=2)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-") or "x"


def _title(mode: str) -> str:
    try:
        return rule_named(mode).title
    except KeyError:
        return mode.replace("_", " ")


# --- axes ------------------------------------------------------------------------------------


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


# --- SVG -------------------------------------------------------------------------------------

_FONT = 11.0


def _text_w(text: str, size: float = _FONT, bold: bool = False) -> float:
    """Width of a label, estimated (average glyph widths of a sans-serif font)."""
    return len(text) * size * (0.62 if bold else 0.56)


def _fit(text: str, width: float, size: float) -> str:
    """``text`` cut with an ellipsis to fit ``width``."""
    room = int(width / (size * 0.56))
    return text if len(text) <= room else text[: max(0, room - 1)] + "…"


@dataclass
class _Box:
    x: float
    y: float
    w: float
    h: float


def _path(xs: np.ndarray, ys: np.ndarray, segment: np.ndarray) -> str:
    """Path data with a new subpath after every gap; a lone point is a zero-length stroke
    (drawn as a dot by the round line caps)."""
    out = []
    prev = None
    n = len(xs)
    for i in range(n):
        x, y, seg = xs[i], ys[i], segment[i]
        if seg != prev:
            lone = i + 1 >= n or segment[i + 1] != seg
            out.append(f"M{x:.1f},{y:.1f}" + ("h0" if lone else ""))
        else:
            out.append(f"L{x:.1f},{y:.1f}")
        prev = seg
    return "".join(out)


def _num(v: float) -> float:
    return float(f"{v:.6g}")


class _SvgChart:
    """Draws one Chart as an <svg> element plus the data its tooltips read."""

    def __init__(self, chart: Chart):
        self.chart = chart
        self.parts: list[str] = []
        self.data: list[dict[str, Any]] = []
        self.axes = [y_axis(p) for p in chart.panels]
        self.width = 920.0 if chart.columns == 1 else 1240.0
        self.marker_color = (chart.panels[0].marker_color if chart.columns == 1 and chart.panels
                             else "#374151")

    # layout ------------------------------------------------------------------------------
    def layout(self, top: float) -> tuple[float, list[tuple[_Box, bool]]]:
        """Plot boxes (and whether each shows step labels) and the chart's height."""
        c = self.chart
        boxes: list[tuple[_Box, bool]] = []
        y = top
        if c.columns == 1:
            y += 34 if any(p.markers for p in c.panels) else 0
            left, right = 72.0, 24.0
            for i, _ in enumerate(c.panels):
                h = 220.0 if i == 0 else 130.0
                last = i == len(c.panels) - 1
                y += 24
                boxes.append((_Box(left, y, self.width - left - right, h), last))
                y += h + (44 if last else 14)
            return y, boxes
        cell = self.width / c.columns
        for i, _ in enumerate(c.panels):
            row, col = divmod(i, c.columns)
            boxes.append((_Box(col * cell + 64, y + row * 210 + 24, cell - 64 - 24, 150), True))
        return y + math.ceil(len(c.panels) / c.columns) * 210 + 4, boxes

    def x_of(self, box: _Box, steps: np.ndarray | float) -> np.ndarray:
        lo, hi = self.chart.steps
        span = (hi - lo) or 1.0
        return box.x + (np.asarray(steps, dtype=np.float64) - lo) / span * box.w

    def render(self) -> str:
        c = self.chart
        legend = self.legend()
        height, boxes = self.layout(legend[0])
        self.parts.append(
            f'<svg class="chart" id="{c.id}" data-src="{c.id}-data" viewBox="0 0 '
            f'{self.width:.0f} {height:.0f}" width="{self.width:.0f}" height="{height:.0f}" '
            f'role="img" aria-label="{esc(c.title)}" font-family="system-ui, -apple-system, '
            f'Segoe UI, Roboto, sans-serif" font-size="{_FONT:g}">')
        self.parts.append(f'<rect x="0" y="0" width="{self.width:.0f}" height="{height:.0f}" '
                          f'fill="#ffffff"/>')
        self.parts.extend(legend[1])
        if c.columns == 1 and boxes:
            self.marker_labels(boxes[0][0])
        for k, (panel, (box, show_x)) in enumerate(zip(c.panels, boxes)):
            self.panel(k, panel, box, show_x)
        if not c.panels:
            self.parts.append('<text x="20" y="60" fill="#555">no logged values of the '
                              'metrics this chart shows</text>')
        self.parts.append("</svg>")
        return "".join(self.parts)

    # pieces ------------------------------------------------------------------------------
    def legend(self) -> tuple[float, list[str]]:
        """The legend's items, wrapped into rows: (height used, svg parts)."""
        c = self.chart
        color = "#374151" if c.columns > 1 or not c.panels else c.panels[0].color
        mcolor = self.marker_color
        items = [("raw", f'<line x1="0" y1="-4" x2="22" y2="-4" stroke="{color}" '
                         f'stroke-width="1" stroke-opacity="0.45"/>'),
                 ("rolling median", f'<line x1="0" y1="-4" x2="22" y2="-4" stroke="{color}" '
                                    f'stroke-width="2.2"/>')]
        runs = next((p for p in c.panels if p.overlays), None)
        if runs is not None:
            for name, col in zip((runs.series_label, *runs.overlay_labels),
                                 (runs.color, *(o[1] for o in runs.overlays))):
                items.append((name, f'<line x1="0" y1="-4" x2="22" y2="-4" stroke="{col}" '
                                    f'stroke-width="2.2"/>'))
        kinds = {m.kind for p in c.panels for m in p.markers}
        if "onset" in kinds:
            items.append(("onset", f'<line x1="11" y1="-12" x2="11" y2="3" stroke="{mcolor}" '
                                   f'stroke-width="1.6" stroke-dasharray="4 3"/>'))
        if "alert" in kinds:
            items.append(("first alert", f'<line x1="11" y1="-12" x2="11" y2="3" '
                                         f'stroke="{mcolor}" stroke-width="2.2"/>'))
        drawn = {t.level for p, ax in zip(c.panels, self.axes) for t in p.thresholds
                 if ax.lo <= t.value <= ax.hi}
        for level, name in (("info", "reference level"), ("warning", "warning threshold"),
                            ("danger", "danger threshold"), ("critical", "critical threshold")):
            if level in drawn:
                items.append((name, f'<line x1="0" y1="-4" x2="22" y2="-4" '
                                    f'stroke="{LEVEL_COLOR[level]}" stroke-width="1.6" '
                                    f'stroke-dasharray="2 3"/>'))
        if any(ax.clipped for ax in self.axes):
            items.append(("value beyond the axis", f'<path d="M7,-4 L15,-4 L11,-12 Z" '
                                                   f'fill="{color}"/>'))
        if any(p.spikes for p in c.panels):
            items.append(("spike", f'<path d="M5,-11 L17,-11 L11,-2 Z" fill="{mcolor}"/>'))
        if any(len(p.series.bad_steps) for p in c.panels):
            items.append(("NaN/inf logged", f'<rect x="4" y="-12" width="14" height="14" '
                                            f'fill="{NAN_COLOR}" fill-opacity="0.2"/><text '
                                            f'x="6" y="0" fill="{NAN_COLOR}" '
                                            f'font-weight="700">×</text>'))
        parts = ['<g class="legend">']
        x, y = 16.0, 22.0
        for text, glyph in items:
            w = 28 + _text_w(text) + 18
            if x + w > self.width - 8:
                x, y = 16.0, y + 18
            parts.append(f'<g transform="translate({x:.0f},{y:.0f})">{glyph}'
                         f'<text x="28" y="0" fill="#374151">{esc(text)}</text></g>')
            x += w
        parts.append("</g>")
        return y + 12, parts

    def marker_labels(self, box: _Box) -> None:
        """Onset and first-alert labels in two rows above the top panel, never overlapping."""
        p = self.chart.panels[0]
        top = box.y - 24 - 34
        for row, marker in enumerate(sorted(p.markers, key=lambda m: m.kind != "onset")):
            x = float(self.x_of(box, marker.step))
            text = marker.label
            right = x + 4 + _text_w(text, bold=True) + 14 <= box.x + box.w
            weight = "700" if marker.kind == "alert" else "400"
            self.parts.append(
                f'<text class="marker-label {marker.kind}" x="{x + 4 if right else x - 4:.1f}" '
                f'y="{top + 14 + row * 15:.1f}" text-anchor="{"start" if right else "end"}" '
                f'fill="{p.marker_color}" font-weight="{weight}">'
                f'{"▾ " if right else ""}{esc(text)}{"" if right else " ▾"}</text>')

    def panel(self, k: int, p: Panel, box: _Box, show_x: bool) -> None:
        s = p.series
        ax = self.axes[k]
        lo_s, hi_s = self.chart.steps
        out = self.parts
        out.append(
            f'<g class="panel" data-metric="{esc(s.metric)}" data-x0="{box.x:.1f}" '
            f'data-x1="{box.x + box.w:.1f}" data-s0="{lo_s:g}" data-s1="{hi_s:g}" '
            f'data-y0="{box.y + box.h:.1f}" data-y1="{box.y:.1f}" data-v0="{ax.lo:.6g}" '
            f'data-v1="{ax.hi:.6g}" data-log="{int(ax.log)}">')
        self.panel_title(p, box, ax)
        out.append(f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" '
                   f'height="{box.h:.1f}" fill="#fbfbfc" stroke="#d0d4da"/>')

        def y_of(v: np.ndarray | float) -> np.ndarray:
            f = np.clip(ax.frac(np.asarray(v, dtype=np.float64)), -0.02, 1.02)
            return box.y + box.h - f * box.h

        for t in p.thresholds:  # bands under everything
            if t.band is None:
                continue
            b_lo, b_hi = max(t.band[0], ax.lo), min(t.band[1], ax.hi)
            if b_hi <= b_lo:
                continue
            y_top, y_bot = float(y_of(b_hi)), float(y_of(b_lo))
            out.append(f'<rect class="band {t.level}" x="{box.x:.1f}" y="{y_top:.1f}" '
                       f'width="{box.w:.1f}" height="{max(0.0, y_bot - y_top):.1f}" '
                       f'fill="{LEVEL_COLOR[t.level]}" fill-opacity="0.07"/>')
        self.grid(p, box, ax, show_x, y_of)
        onset = next((m for m in p.markers if m.kind == "onset"), None)
        alert = next((m for m in p.markers if m.kind == "alert"), None)
        if onset and alert and alert.step > onset.step:
            x0, x1 = (float(self.x_of(box, m.step)) for m in (onset, alert))
            out.append(f'<rect class="lag" x="{x0:.1f}" y="{box.y:.1f}" width="{x1 - x0:.1f}" '
                       f'height="{box.h:.1f}" fill="{p.marker_color}" fill-opacity="0.08"/>')
        xs = self.x_of(box, s.steps)
        raw_idx = envelope(s.values, s.segment)
        lines = [("smooth", s.smooth, "2.2", "1")]
        if not s.smooth_only:
            lines.insert(0, ("raw", s.values, "1", "0.4"))
        for cls, values, width, opacity in lines:
            idx = raw_idx if cls == "raw" else envelope(values, s.segment)
            d = _path(xs[idx], y_of(values[idx]), s.segment[idx])
            out.append(f'<path class="{cls}" d="{d}" fill="none" stroke="{p.color}" '
                       f'stroke-width="{width}" stroke-opacity="{opacity}" '
                       f'stroke-linejoin="round" stroke-linecap="round"/>')
        for o, color in p.overlays:
            ox = self.x_of(box, o.steps)
            for cls, values, width, opacity in (("raw", o.values, "1", "0.3"),
                                                ("smooth", o.smooth, "2.2", "1")):
                idx = envelope(values, o.segment)
                d = _path(ox[idx], y_of(values[idx]), o.segment[idx])
                out.append(f'<path class="overlay {cls}" d="{d}" fill="none" stroke="{color}" '
                           f'stroke-width="{width}" stroke-opacity="{opacity}" '
                           f'stroke-linejoin="round" stroke-linecap="round"/>')
        self.threshold_lines(p, box, ax, y_of)
        self.clipped_marks(p, box, ax, xs)
        for m in p.markers:
            x = float(self.x_of(box, m.step))
            dash = ' stroke-dasharray="5 4"' if m.kind == "onset" else ""
            width = "1.6" if m.kind == "onset" else "2.2"
            out.append(f'<line class="marker {m.kind}" data-step="{m.step}" x1="{x:.1f}" '
                       f'y1="{box.y:.1f}" x2="{x:.1f}" y2="{box.y + box.h:.1f}" '
                       f'stroke="{p.marker_color}" stroke-width="{width}"{dash}>'
                       f'<title>{esc(m.label)}</title></line>')
        for step in p.spikes:
            x = float(self.x_of(box, step))
            out.append(f'<path class="spike" data-step="{step}" d="M{x - 5:.1f},{box.y + 1:.1f} '
                       f'L{x + 5:.1f},{box.y + 1:.1f} L{x:.1f},{box.y + 10:.1f} Z" '
                       f'fill="{p.marker_color}"><title>spike at step {step:,}</title></path>')
        for first, last, count in bad_stretches(s):
            x0, x1 = float(self.x_of(box, first)), float(self.x_of(box, last))
            label = f"NaN/inf at step {first:,}" + (f"–{last:,} ({count} logged)"
                                                    if count > 1 else "")
            out.append(f'<rect class="nan" data-step="{first}" data-last="{last}" '
                       f'x="{x0 - 1:.1f}" y="{box.y:.1f}" width="{max(2.0, x1 - x0 + 2):.1f}" '
                       f'height="{box.h:.1f}" fill="{NAN_COLOR}" fill-opacity="0.16">'
                       f'<title>{label}</title></rect>'
                       f'<text x="{x0 + 1:.1f}" y="{box.y + box.h - 5:.1f}" font-weight="700" '
                       f'font-size="13" fill="{NAN_COLOR}">×</text>')
        out.append(f'<line class="hair" x1="0" x2="0" y1="{box.y:.1f}" y2="{box.y + box.h:.1f}" '
                   f'stroke="#111" stroke-width="1" stroke-opacity="0.5" visibility="hidden"/>')
        out.append(f'<rect class="hit" data-panel="{k}" x="{box.x:.1f}" y="{box.y:.1f}" '
                   f'width="{box.w:.1f}" height="{box.h:.1f}" fill="transparent"/>')
        out.append("</g>")
        self.data.append({
            "name": LABELS.get(s.metric, s.metric), "pct": p.percent,
            "x0": round(box.x, 1), "x1": round(box.x + box.w, 1), "s0": lo_s, "s1": hi_s,
            "steps": [_num(v) for v in s.steps[raw_idx]],
            "raw": [_num(v) for v in s.values[raw_idx]],
            "smooth": [_num(v) for v in s.smooth[raw_idx]],
            "smoothOnly": s.smooth_only,
        })

    def clipped_marks(self, p: Panel, box: _Box, ax: Axis, xs: np.ndarray) -> None:
        """A triangle at the edge for each raw point beyond the axis (its value and step in
        the tooltip), and the most extreme one's value written beside it."""
        s = p.series
        above, below = beyond_axis(p, ax)
        for idx, top in ((above, True), (below, False)):
            if not len(idx):
                continue
            if len(idx) > MAX_CLIPPED_MARKS:  # the most extreme ones
                order = np.argsort(s.values[idx])
                idx = np.sort(idx[order[-MAX_CLIPPED_MARKS:] if top
                                  else order[:MAX_CLIPPED_MARKS]])
            y = box.y + 1 if top else box.y + box.h - 1
            tip = 8 if top else -8
            for i in idx:
                x = float(xs[i])
                out = (f'<path class="clipped" data-step="{s.steps[i]:g}" '
                       f'data-value="{s.values[i]:.6g}" d="M{x - 4:.1f},{y + tip:.1f} '
                       f'L{x + 4:.1f},{y + tip:.1f} L{x:.1f},{y:.1f} Z" fill="{p.color}" '
                       f'stroke="#ffffff" stroke-width="0.8"><title>'
                       f'{esc(_value_text(s.values[i]))} at step {fmt(s.steps[i])} (beyond the '
                       f'axis)</title></path>')
                self.parts.append(out)
        for worst, top, label in beyond_axis_labels(p, ax):
            y = box.y + 1 if top else box.y + box.h - 1
            tip = 8 if top else -8
            x = float(xs[worst])
            right = x + 6 + _text_w("00000000000") <= box.x + box.w
            self.parts.append(
                f'<text class="clipped-label" x="{x + 6 if right else x - 6:.1f}" '
                f'y="{y + (tip + 2 if top else tip - 2):.1f}" '
                f'text-anchor="{"start" if right else "end"}" font-size="10" fill="{p.color}" '
                f'stroke="#ffffff" stroke-width="3" paint-order="stroke">'
                f'{esc(label)}</text>')

    def panel_title(self, p: Panel, box: _Box, ax: Axis) -> None:
        """Title, then in grey: the check's status (dashboard), the source column, thresholds
        beyond the axis, and (dashboard) the marked steps."""
        out = self.parts
        y = box.y - 8
        x = box.x
        if p.status:
            color = STATUS_COLOR.get(p.status, "#666")
            out.append(f'<circle cx="{x + 5:.1f}" cy="{y - 4:.1f}" r="4.5" fill="{color}"/>')
            x += 14
        title = p.title + (" (log scale)" if ax.log else "")
        out.append(f'<text class="ptitle" x="{x:.1f}" y="{y:.1f}" font-size="12.5" '
                   f'font-weight="700" fill="#1f2937">{esc(title)}</text>')
        x += _text_w(title, 12.5, bold=True) + 10
        notes = [p.status] if p.status else []
        if self.chart.columns > 1:
            notes += [m.label for m in p.markers]
        off = [t for t in p.thresholds if t.level != "info" and not ax.lo <= t.value <= ax.hi]
        if off and p.fit_thresholds:
            above = [t.label for t in off if t.value > ax.hi]
            below = [t.label for t in off if t.value < ax.lo]
            if above:
                notes.append("above the chart: " + ", ".join(above))
            if below:
                notes.append("below the chart: " + ", ".join(below))
        if ax.clipped:
            above, below = beyond_axis(p, ax)
            notes.append(f"{len(above) + len(below)} outlier(s) beyond the axis, marked at "
                         f"its edge")
        if p.note:
            notes.append(p.note)
        if notes:
            text = _fit(" · ".join(notes), box.x + box.w - x, 10.5)
            out.append(f'<text class="pnote" x="{x:.1f}" y="{y:.1f}" font-size="10.5" '
                       f'fill="#6b7280">{esc(text)}</text>')

    def grid(self, p: Panel, box: _Box, ax: Axis, show_x: bool, y_of: Any) -> None:
        out = self.parts
        if ax.log:
            yt = log_ticks(ax.lo, ax.hi)
            labels = [_log_label(v) for v in yt]
        else:
            yt, step = linear_ticks(ax.lo, ax.hi, 5 if box.h > 150 else 4)
            labels = [tick_label(v, step, p.percent) for v in yt]
        for v, text in zip(yt, labels):
            y = float(y_of(v))
            out.append(f'<line x1="{box.x:.1f}" y1="{y:.1f}" x2="{box.x + box.w:.1f}" '
                       f'y2="{y:.1f}" stroke="#e5e7eb"/>'
                       f'<text class="ytick" x="{box.x - 6:.1f}" y="{y + 3.5:.1f}" '
                       f'text-anchor="end" fill="#4b5563">{esc(text)}</text>')
        lo, hi = self.chart.steps
        xt, _ = linear_ticks(lo, hi if hi > lo else lo + 1, 8 if box.w > 600 else 5)
        for v in xt:
            x = float(self.x_of(box, v))
            out.append(f'<line x1="{x:.1f}" y1="{box.y:.1f}" x2="{x:.1f}" '
                       f'y2="{box.y + box.h:.1f}" stroke="#eef0f3"/>')
            if show_x:
                out.append(f'<line x1="{x:.1f}" y1="{box.y + box.h:.1f}" x2="{x:.1f}" '
                           f'y2="{box.y + box.h + 4:.1f}" stroke="#9ca3af"/>'
                           f'<text class="xtick" x="{x:.1f}" y="{box.y + box.h + 16:.1f}" '
                           f'text-anchor="middle" fill="#4b5563">{step_label(v)}</text>')
        if show_x and self.chart.columns == 1:
            out.append(f'<text x="{box.x + box.w / 2:.1f}" y="{box.y + box.h + 34:.1f}" '
                       f'text-anchor="middle" fill="#374151" font-weight="600">step</text>')

    def threshold_lines(self, p: Panel, box: _Box, ax: Axis, y_of: Any) -> None:
        out = self.parts
        placed: list[float] = []
        for t in p.thresholds:
            if not ax.lo <= t.value <= ax.hi:
                continue
            y = float(y_of(t.value))
            color = LEVEL_COLOR[t.level]
            out.append(f'<line class="threshold {t.level}" data-value="{t.value:.6g}" '
                       f'x1="{box.x:.1f}" y1="{y:.1f}" x2="{box.x + box.w:.1f}" y2="{y:.1f}" '
                       f'stroke="{color}" stroke-width="1.4" stroke-dasharray="2 3"/>')
            ty = y - 4 if y - 14 > box.y else y + 12
            while any(abs(ty - q) < 12 for q in placed):
                ty += 12
            placed.append(ty)
            out.append(f'<text class="threshold-label" x="{box.x + box.w - 6:.1f}" '
                       f'y="{ty:.1f}" text-anchor="end" fill="{color}" font-weight="600" '
                       f'stroke="#ffffff" stroke-width="3" paint-order="stroke">'
                       f'{esc(t.label)}</text>')


def svg_chart(chart: Chart) -> tuple[str, list[dict[str, Any]]]:
    """The <svg> of a chart and its tooltip data (one entry per panel)."""
    drawer = _SvgChart(chart)
    return drawer.render(), drawer.data


def _json_script(element_id: str, data: object) -> str:
    """JSON inside <script type="application/json">: '<', '>' and '&' escaped, so no string
    from a log can close the element."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


# --- the page --------------------------------------------------------------------------------

_CSS = """
*{box-sizing:border-box}
body{margin:0;background:#f3f4f6;color:#111827;font:14px/1.45 system-ui,-apple-system,
"Segoe UI",Roboto,sans-serif}
main{max-width:1360px;margin:0 auto;padding:20px}
.card{background:#fff;border:1px solid #e5e7eb;border-radius:10px;padding:16px 20px;
margin:0 0 18px;box-shadow:0 1px 2px rgba(0,0,0,.04)}
.top{border-left:6px solid var(--st)}
h1{font-size:22px;margin:4px 0 6px;word-break:break-all}
h2{font-size:17px;margin:0 0 10px}
.badge{display:inline-block;border-radius:999px;padding:1px 10px;font-size:12px;
font-weight:700;color:#fff;background:var(--st);text-transform:uppercase;letter-spacing:.03em}
.meta{color:#4b5563;margin:2px 0}
.meta code{background:#f3f4f6;padding:0 4px;border-radius:4px;word-break:break-all}
.verdict{margin:8px 0 0;font-size:15px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #eef0f3;vertical-align:top}
th{font-size:12px;color:#6b7280;text-transform:uppercase;letter-spacing:.03em}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.fired td{background:#fffdf7}
.finding{border-top:5px solid var(--st)}
.finding .summary{font-size:15px;margin:0 0 12px}
.row{display:grid;grid-template-columns:minmax(0,1fr) 360px;gap:20px;align-items:start}
@media (max-width:1200px){.row{grid-template-columns:1fr}}
svg.chart{max-width:100%;height:auto;display:block}
aside h3{font-size:13px;margin:12px 0 4px;color:#374151;text-transform:uppercase;
letter-spacing:.03em}
aside h3:first-child{margin-top:0}
.fired-threshold{background:#fff7ed;border:1px solid #fed7aa;border-radius:6px;padding:6px 8px;
font-weight:600}
dl.ev{display:grid;grid-template-columns:auto 1fr;gap:2px 10px;margin:0;font-size:13px}
dl.ev dt{color:#6b7280}
dl.ev dd{margin:0;word-break:break-word;font-variant-numeric:tabular-nums}
ol.remedies{margin:0;padding-left:20px}
ol.remedies li{margin:3px 0}
.steps{display:flex;gap:14px;font-size:13px}
.steps b{font-size:16px}
ul.plain{margin:0;padding-left:18px}
.muted{color:#6b7280}
footer{color:#9ca3af;font-size:12px;text-align:center;padding:10px}
#tip{position:fixed;pointer-events:none;background:#111827;color:#fff;font-size:12px;
padding:5px 8px;border-radius:6px;white-space:nowrap;z-index:10}
a{color:#1f5fae}
"""

_JS = """
(function () {
  var tip = document.getElementById('tip');
  function nearest(a, v) {
    var lo = 0, hi = a.length - 1;
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (a[mid] < v) lo = mid; else hi = mid; }
    return Math.abs(a[lo] - v) <= Math.abs(a[hi] - v) ? lo : hi;
  }
  function show(v, pct) {
    if (pct) return (v * 100).toFixed(1) + '%';
    var a = Math.abs(v);
    return (a !== 0 && (a < 1e-3 || a >= 1e5)) ? v.toExponential(2) : String(+v.toPrecision(4));
  }
  var charts = document.querySelectorAll('svg.chart');
  for (var c = 0; c < charts.length; c++) {
    (function (svg) {
      var data = JSON.parse(document.getElementById(svg.getAttribute('data-src')).textContent);
      var hits = svg.querySelectorAll('rect.hit');
      for (var h = 0; h < hits.length; h++) {
        (function (rect) {
          var p = data[+rect.getAttribute('data-panel')];
          var hair = rect.parentNode.querySelector('line.hair');
          rect.addEventListener('mousemove', function (ev) {
            if (!p || !p.steps.length) return;
            var pt = svg.createSVGPoint(); pt.x = ev.clientX; pt.y = ev.clientY;
            var loc = pt.matrixTransform(svg.getScreenCTM().inverse());
            var step = p.s0 + (loc.x - p.x0) / ((p.x1 - p.x0) || 1) * (p.s1 - p.s0);
            var i = nearest(p.steps, step);
            var x = p.x0 + (p.steps[i] - p.s0) / ((p.s1 - p.s0) || 1) * (p.x1 - p.x0);
            hair.setAttribute('x1', x); hair.setAttribute('x2', x);
            hair.setAttribute('visibility', 'visible');
            var text = 'step ' + p.steps[i].toLocaleString('en-US') + ' \\u00b7 ' + p.name + ' ';
            text += p.smoothOnly ? show(p.smooth[i], p.pct)
              : show(p.raw[i], p.pct) + ' (median ' + show(p.smooth[i], p.pct) + ')';
            tip.textContent = text;
            tip.hidden = false;
            tip.style.left = (ev.clientX + 14) + 'px';
            tip.style.top = (ev.clientY + 14) + 'px';
          });
          rect.addEventListener('mouseleave', function () {
            tip.hidden = true; hair.setAttribute('visibility', 'hidden');
          });
        })(hits[h]);
      }
    })(charts[c]);
  }
  document.body.setAttribute('data-ready', '1');
})();
"""


def _step(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


def _listed(v: object) -> list[Any]:
    """An evidence value that should be a list, as one (numpy arrays included; else empty)."""
    v = evidence.as_plain(v)
    return list(v) if isinstance(v, (list, tuple)) else []


def _badge(status: str) -> str:
    return (f'<span class="badge" style="--st:{STATUS_COLOR.get(status, "#6b7280")}">'
            f'{esc(status)}</span>')


def _header(diagnosis: Diagnosis) -> str:
    info = diagnosis.run
    status = diagnosis.status
    metrics = ", ".join(diagnosis.metrics) or "none recognised"
    config = config_line(diagnosis.config)
    return (
        f'<header class="card top" style="--st:{STATUS_COLOR[status]}">'
        f'{_badge(status)}<h1>{esc(info.name)}</h1>'
        f'<p class="meta">format <b>{esc(info.format)}</b> · steps <b>{_step(info.first_step)}'
        f'–{_step(info.last_step)}</b> ({info.n_steps:,} logged) · '
        f'{len(diagnosis.findings)} finding(s)</p>'
        f'<p class="meta">source <code>{esc(info.source)}</code></p>'
        f'<p class="meta">metrics: {esc(metrics)}</p>'
        + (f'<p class="meta">{esc(config)}</p>' if config else '')
        + f'{_verdict(diagnosis)}</header>')


def _verdict(diagnosis: Diagnosis) -> str:
    """The root cause and the one thing to do first (or why the run is inconclusive)."""
    cause = diagnosis.root_cause
    if cause is not None:
        where = f" at step {_step(cause.step)}" if cause.step is not None else ""
        return (f'<p class="verdict"><b>Root cause</b>: {esc(cause.mode)}{where}: '
                f'{esc(cause_text(diagnosis))}</p><p class="verdict"><b>Do this first</b>: '
                f'{esc(cause.first_action)}</p>')
    if diagnosis.status_reason:
        return f'<p class="verdict"><b>Inconclusive</b>: {esc(diagnosis.status_reason)}</p>'
    return ""


def _plan(diagnosis: Diagnosis) -> str:
    if not diagnosis.plan:
        return ""
    several = len(diagnosis.findings) > 1
    items = "".join(
        f"<li>{esc(item.action)}"
        + (f' <span class="muted">({esc(", ".join(item.modes))})</span>'
           if several and item.modes else "") + "</li>" for item in diagnosis.plan)
    return (f'<section class="card" id="plan"><h2>What to change, first things first</h2>'
            f'<ol class="remedies">{items}</ol></section>')


def _checks_table(diagnosis: Diagnosis) -> str:
    rows = []
    for c in diagnosis.checks:
        mode = esc(c.mode)
        if c.fired:
            mode = f'<a href="#finding-{_slug(c.mode)}">{mode}</a>'
        rows.append(
            f'<tr class="{"fired" if c.fired else ""}"><td>{mode}</td>'
            f'<td>{_badge(c.status.value)}</td><td class="num">{_step(c.onset_step)}</td>'
            f'<td class="num">{_step(c.first_alert_step)}</td><td>{esc(c.summary)}</td></tr>')
    return ('<section class="card"><h2>Checks</h2><table class="checks"><thead><tr>'
            '<th>check</th><th>status</th><th>onset step</th><th>first alert</th>'
            '<th>summary</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table></section>")


def _aside(check: Check) -> str:
    parts = []
    threshold = evidence.value("threshold", check.evidence.get("threshold"))
    if not evidence.blank(check.evidence.get("threshold")):
        parts.append(f'<h3>Threshold that fired</h3><div class="fired-threshold">'
                     f'{esc(threshold)}</div>')
    lag = ""
    if check.onset_step is not None and check.first_alert_step is not None:
        lag = (f'<div><span class="muted">lag</span><br><b>'
               f'{check.first_alert_step - check.onset_step:,}</b> steps</div>')
    parts.append(f'<h3>When</h3><div class="steps"><div><span class="muted">onset</span><br>'
                 f'<b>{_step(check.onset_step)}</b></div><div><span class="muted">first alert'
                 f'</span><br><b>{_step(check.first_alert_step)}</b></div>{lag}</div>')
    corroboration = [evidence.value("corroboration", x) for key in ("corroboration",
                     "phase3_signs") for x in _listed(check.evidence.get(key))]
    if corroboration:
        parts.append("<h3>Corroborated by</h3><ul class=\"plain\">" + "".join(
            f"<li>{esc(x)}</li>" for x in corroboration) + "</ul>")
    rows = [f"<dt>{esc(k)}</dt><dd>{esc(text)}</dd>" for k, text in evidence.items(
        {k: v for k, v in check.evidence.items() if k not in ("corroboration", "phase3_signs")})]
    if rows:
        parts.append('<h3>Evidence</h3><dl class="ev">' + "".join(rows) + "</dl>")
    if check.remedies:
        parts.append('<h3>What to change</h3><ol class="remedies">' + "".join(
            f"<li>{esc(r)}</li>" for r in check.remedies) + "</ol>")
    return "<aside>" + "".join(parts) + "</aside>"


def render_html(diagnosis: Diagnosis, run: Run,
                settings_params: Mapping[str, Mapping[str, float]] | None = None) -> str:
    """The whole report as one self-contained HTML page.

    ``settings_params`` are the user's rule-parameter overrides (``Settings.params``), so the
    thresholds drawn are the ones the diagnosis used.
    """
    ctx = _Context(diagnosis, settings_params)
    info = diagnosis.run
    body = [_header(diagnosis), _checks_table(diagnosis)]
    scripts = []
    for check in by_onset(diagnosis):
        chart = finding_chart(check, run, ctx)
        svg, data = svg_chart(chart)
        scripts.append(_json_script(f"{chart.id}-data", data))
        color = STATUS_COLOR.get(check.status.value, "#6b7280")
        body.append(
            f'<section class="card finding" id="finding-{_slug(check.mode)}" '
            f'style="--st:{color}"><h2>{_badge(check.status.value)} {esc(_title(check.mode))} '
            f'<span class="muted">({esc(check.mode)})</span></h2>'
            f'<p class="summary">{esc(check.summary)}</p>'
            f'<div class="row"><figure style="margin:0">{svg}</figure>{_aside(check)}</div>'
            f'</section>')
    body.append(_plan(diagnosis))
    dash = dashboard_chart(diagnosis, run, ctx)
    svg, data = svg_chart(dash)
    scripts.append(_json_script(f"{dash.id}-data", data))
    heading = "Dashboard" if not diagnosis.findings else "All main metrics"
    intro = ("No failure mode found. The main metrics, each marked with the status of the "
             "check that watches it:" if not diagnosis.findings else
             "The main metrics, each marked with the status of the check that watches it:")
    body.append(f'<section class="card" id="dashboard"><h2>{heading}</h2>'
                f'<p class="muted">{intro}</p>{svg}</section>')
    skipped = [c for c in diagnosis.checks if c.status.value == "skipped"]
    if skipped:
        body.append('<section class="card" id="skipped"><h2>Skipped checks</h2>'
                    '<ul class="plain">' + "".join(
                        f"<li><b>{esc(c.mode)}</b>: {esc(c.reason or c.summary)}</li>"
                        for c in skipped) + "</ul></section>")
    if diagnosis.notes:
        body.append('<section class="card" id="notes"><h2>Notes</h2><ul class="plain">' +
                    "".join(f"<li>{esc(n)}</li>" for n in diagnosis.notes) + "</ul></section>")
    from grpo_doctor import __version__

    title = f"grpo-doctor: {info.name} — {diagnosis.status}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n"
        f'<body data-ready="0" data-status="{esc(diagnosis.status)}"><main>'
        + "\n".join(body)
        + f'<footer>grpo-doctor {esc(__version__)} · schema {SCHEMA_VERSION}</footer></main>'
        '<div id="tip" hidden></div>\n' + "\n".join(scripts)
        + f"\n<script>{_JS}</script></body></html>\n"
    )


# --- the audit's index page ----------------------------------------------------------------


@dataclass(frozen=True)
class IndexEntry:
    """One run on an audit's index page. ``href`` is a relative path to its report, not yet
    URL-encoded (it is encoded here, so it can never become an external or script URL)."""

    name: str
    status: str  # healthy | warning | critical | error
    href: str | None = None
    findings: tuple[str, ...] = ()
    source: str = ""
    steps: str = ""


def index_entry(diagnosis: Diagnosis, href: str | None) -> IndexEntry:
    """The index row of a diagnosed run."""
    info = diagnosis.run
    findings = tuple(
        f"{c.mode} ({c.status.value})" + (f" from step {c.onset_step:,}"
                                          if c.onset_step is not None else "")
        for c in diagnosis.findings)
    return IndexEntry(name=info.name, status=diagnosis.status, href=href, findings=findings,
                      source=info.source, steps=f"{_step(info.first_step)}–"
                      f"{_step(info.last_step)}")


_SEVERITY = SOURCE_SEVERITY


def _as_entry(e: IndexEntry | Mapping[str, Any]) -> IndexEntry:
    if isinstance(e, IndexEntry):
        return e
    return IndexEntry(name=str(e.get("name", "")), status=str(e.get("status", "error")),
                      href=e.get("href") or e.get("link"),
                      findings=tuple(str(f) for f in e.get("findings", ()) or ()),
                      source=str(e.get("source", "")), steps=str(e.get("steps", "")))


def render_index(entries: Iterable[IndexEntry | Mapping[str, Any]],
                 title: str = "grpo-doctor audit") -> str:
    """An index page over many runs' reports: name, status, findings, link; worst first."""
    rows = sorted((_as_entry(e) for e in entries), key=lambda e: -_SEVERITY.get(e.status, 3))
    counts = {s: sum(1 for e in rows if e.status == s) for s in _SEVERITY}
    summary = " ".join(f"{_badge(s)} {n}" for s, n in counts.items() if n)
    body = []
    for e in rows:
        name = esc(e.name)
        if e.href:
            name = f'<a href="{esc(quote(e.href, safe="/"))}">{name}</a>'
        body.append(f'<tr><td>{name}</td><td>{_badge(e.status)}</td>'
                    f'<td>{"<br>".join(esc(f) for f in e.findings) or "–"}</td>'
                    f'<td class="num">{esc(e.steps)}</td>'
                    f'<td class="muted">{esc(e.source)}</td></tr>')
    worst = max((e.status for e in rows), key=lambda s: _SEVERITY.get(s, 3), default="healthy")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n"
        f'<body data-ready="1"><main><header class="card top" '
        f'style="--st:{STATUS_COLOR.get(worst, "#6b7280")}"><h1>{esc(title)}</h1>'
        f'<p class="meta">{len(rows)} run(s) · {summary}</p></header>'
        '<section class="card"><table class="index"><thead><tr><th>run</th><th>status</th>'
        '<th>findings</th><th>steps</th><th>source</th></tr></thead><tbody>'
        + "".join(body) + "</tbody></table></section></main></body></html>\n"
    )


# --- PNG (matplotlib, optional) --------------------------------------------------------------


def _with_breaks(steps: np.ndarray, values: np.ndarray, segment: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """NaN inserted between segments, where matplotlib breaks a line."""
    cut = np.flatnonzero(np.diff(segment)) + 1
    return (np.insert(steps.astype(np.float64), cut, np.nan),
            np.insert(values.astype(np.float64), cut, np.nan))


def _png(chart: Chart, heading: str) -> bytes:
    buf = io.BytesIO()
    png_figure(chart, heading).savefig(buf, format="png")
    return buf.getvalue()


def png_figure(chart: Chart, heading: str) -> Any:
    """The matplotlib Figure of one PNG chart (what ``--png`` saves)."""
    from matplotlib import patheffects
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, PercentFormatter

    cols = chart.columns
    rows = max(1, math.ceil(len(chart.panels) / cols))
    ratios = [2.2] + [1.3] * (rows - 1) if cols == 1 else [1.0] * rows
    fig = Figure(figsize=(10, 1.2 + sum(ratios) * 1.45), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, sharex=True, squeeze=False,
                        gridspec_kw={"height_ratios": ratios})
    fig.suptitle(heading, fontsize=11, x=0.01, ha="left")
    flat = list(axes.flat)
    for ax in flat[len(chart.panels):]:
        ax.set_visible(False)
    lo_step, hi_step = chart.steps
    for i, (panel, ax) in enumerate(zip(chart.panels, flat)):
        s, yaxis = panel.series, y_axis(panel)
        if panel.log:
            ax.set_yscale("log")
        for t in panel.thresholds:
            color = LEVEL_COLOR[t.level]
            if t.band is not None:
                lo, hi = max(t.band[0], yaxis.lo), min(t.band[1], yaxis.hi)
                if hi > lo:
                    ax.axhspan(lo, hi, color=color, alpha=0.07, lw=0)
            if yaxis.lo <= t.value <= yaxis.hi:
                ax.axhline(t.value, color=color, ls=(0, (2, 3)), lw=1.2)
                ax.text(0.995, t.value, t.label, transform=ax.get_yaxis_transform(),
                        ha="right", va="bottom", fontsize=8, color=color, fontweight="bold",
                        path_effects=[patheffects.withStroke(linewidth=3, foreground="white")])
        # Drawn within the axis (values near the float limit break matplotlib's tick maths).
        raw = np.clip(s.values, yaxis.lo, yaxis.hi)
        smooth = np.clip(s.smooth, yaxis.lo, yaxis.hi)
        idx = envelope(raw, s.segment)
        if not s.smooth_only:
            ax.plot(*_with_breaks(s.steps[idx], raw[idx], s.segment[idx]),
                    color=panel.color, lw=0.8, alpha=0.4, label="raw")
        idx = envelope(smooth, s.segment)
        ax.plot(*_with_breaks(s.steps[idx], smooth[idx], s.segment[idx]), color=panel.color,
                lw=1.9, label=s.smooth_label if s.smooth_only else "rolling median")
        marks = {m.kind: m for m in panel.markers}
        if "onset" in marks and "alert" in marks and marks["alert"].step > marks["onset"].step:
            ax.axvspan(marks["onset"].step, marks["alert"].step, color=panel.marker_color,
                       alpha=0.08, lw=0)
        for m in panel.markers:
            ax.axvline(m.step, color=panel.marker_color, lw=1.4 if m.kind == "onset" else 2,
                       ls="--" if m.kind == "onset" else "-",
                       label=m.label if i == 0 else None)
        for j, (first, last, _count) in enumerate(bad_stretches(s)):
            ax.axvspan(first - 0.5, last + 0.5, color=NAN_COLOR, alpha=0.16, lw=0,
                       label="NaN/inf logged" if i == 0 and j == 0 else None)
        above, below = beyond_axis(panel, yaxis)
        for idx, edge, marker in ((above, yaxis.hi, "^"), (below, yaxis.lo, "v")):
            if len(idx):
                ax.plot(s.steps[idx], np.full(len(idx), edge), ls="none", marker=marker,
                        ms=5, color=panel.color, clip_on=False, zorder=5,
                        label="value beyond the axis" if i == 0 else None)
        for worst, top, label in beyond_axis_labels(panel, yaxis):
            # Beside its mark, inside the plot: to its left when the mark is near the right.
            frac = (s.steps[worst] - lo_step) / max(hi_step - lo_step, 1e-12)
            ax.annotate(label, (s.steps[worst], yaxis.hi if top else yaxis.lo),
                        xytext=(-6 if frac > 0.8 else 6, -9 if top else 9),
                        textcoords="offset points", ha="right" if frac > 0.8 else "left",
                        va="top" if top else "bottom", fontsize=8, color=panel.color,
                        annotation_clip=False, zorder=6, gid="beyond-axis-label",
                        path_effects=[patheffects.withStroke(linewidth=3,
                                                             foreground="white")])
        ax.set_ylim(yaxis.lo, yaxis.hi)
        if panel.log:
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _log_label(v)))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))
        if panel.percent:
            ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        title = panel.title + (f" — {panel.status}" if panel.status else "")
        ax.set_title(title, loc="left", fontsize=9.5, fontweight="bold",
                     color=STATUS_COLOR.get(panel.status or "", "#1f2937"))
        ax.grid(True, color="#e5e7eb", lw=0.6)
        ax.tick_params(labelsize=8)
    # Below the panels, not over the data: nothing it could hide (a spike's label, a mark).
    fig.legend(*flat[0].get_legend_handles_labels(), loc="outside lower left", fontsize=7.5,
               ncols=6, frameon=False)
    flat[0].set_xlim(lo_step, hi_step if hi_step > lo_step else lo_step + 1)
    flat[0].xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: step_label(v)))
    for ax in axes[-1]:
        ax.set_xlabel("step", fontsize=9)
    return fig


def require_matplotlib() -> None:
    """Raise the one-line usage error when the ``plot`` extra is not installed."""
    from grpo_doctor.errors import ConfigError

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ConfigError(PNG_HINT) from None


def _png_jobs(diagnosis: Diagnosis, run: Run | None, ctx: _Context | None
              ) -> list[tuple[str, Chart | None, str]]:
    """(file name, chart, heading) of each PNG: one per finding, or the dashboard."""
    name = diagnosis.run.name
    jobs: list[tuple[str, Chart | None, str]] = []
    for check in diagnosis.findings:
        heading = (f"{name} — {check.mode} ({check.status.value}): onset "
                   f"{_step(check.onset_step)}, first alert {_step(check.first_alert_step)}")
        chart = finding_chart(check, run, ctx) if run is not None and ctx else None
        jobs.append((f"{_slug(check.mode)}.png", chart, heading))
    if not jobs:
        chart = dashboard_chart(diagnosis, run, ctx) if run is not None and ctx else None
        jobs.append(("dashboard.png", chart, f"{name} — {diagnosis.status}"))
    return jobs


def png_paths(diagnosis: Diagnosis, folder: str | Path) -> list[Path]:
    """The files ``render_png`` writes for ``diagnosis`` into ``folder``."""
    return [Path(folder) / file for file, _, _ in _png_jobs(diagnosis, None, None)]


def render_png(diagnosis: Diagnosis, run: Run, folder: str | Path, *,
               settings_params: Mapping[str, Mapping[str, float]] | None = None,
               force: bool = False) -> list[Path]:
    """One PNG per finding (``<mode>.png``), or ``dashboard.png`` for a healthy run, written
    atomically into ``folder``; an existing file is replaced only with ``force``, and every
    file is checked before any is written."""
    require_matplotlib()
    from grpo_doctor.atomic import check_all, write

    jobs = _png_jobs(diagnosis, run, _Context(diagnosis, settings_params))
    targets = check_all([Path(folder) / file for file, _, _ in jobs], force=force)
    return [write(target, _png(chart, heading))
            for target, (_, chart, heading) in zip(targets, jobs) if chart is not None]
