"""Chart specifications: which panels a finding's chart and the dashboard show, their curves,
markers and threshold lines. What a finding draws comes from its rule (``Rule.plot``,
``Rule.lines``): nothing here knows a rule by name."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from grpo_doctor import rules
from grpo_doctor.findings import Check, Diagnosis
from grpo_doctor.metrics import Metric
from grpo_doctor.reporters.evidence import as_plain
from grpo_doctor.reporters.html.series import (
    Series,
    _rolling,
    metric_series,
    smoothing_window,
    zero_share_series,
)
from grpo_doctor.rules import Rule, rule_named
from grpo_doctor.rules.plot import ZERO_SHARE, Plot, Threshold
from grpo_doctor.store import Run
from grpo_doctor.text import fmt

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

    def fired(self, mode: str) -> bool:
        try:
            return self.diagnosis.check(mode).fired
        except KeyError:
            return False

    def evidence(self, mode: str) -> Mapping[str, Any]:
        """The evidence of the check of ``mode``; empty when it did not run."""
        try:
            return self.diagnosis.check(mode).evidence
        except KeyError:
            return {}


def thresholds_for(metric: str, ctx: _Context, mode: str | None = None
                   ) -> tuple[Threshold, ...]:
    """The rules' thresholds on ``metric``, in its units (each rule's ``lines``, from its
    parameters and its check's evidence): those of the finding ``mode`` the chart is about,
    else of the first rule that fired and draws on it, else of the first rule that draws on
    it (a blow-up's chart never shows the collapse lines)."""
    fired = [r for r in rules.RULES if ctx.fired(r.id)]
    first = [r for r in rules.RULES if r.id == mode]
    for rule in first + fired + list(rules.RULES):
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
           marker_color: str = STATUS_COLOR["critical"], spikes: tuple[int, ...] = (),
           mode: str | None = None) -> Panel | None:
    series = metric_series(run, metric)
    if series is None:
        return None
    log = _use_log(metric, series, finding)
    if log:
        series = _positive(series)
    return Panel(
        title=LABELS.get(metric, metric), series=series, color=color,
        note=_source_note(run, metric), log=log,
        percent=_is_fraction(metric, series), thresholds=thresholds_for(metric, ctx, mode),
        markers=markers, spikes=spikes, status=status, marker_color=marker_color,
        fit_thresholds=finding,
    )


def _markers(check: Check) -> tuple[Marker, ...]:
    out = []
    if check.onset_step is not None:
        out.append(Marker(check.onset_step, "onset", f"onset {fmt(check.onset_step)}"))
    if check.shown_alert_step is not None:
        out.append(Marker(check.shown_alert_step, "alert",
                          f"first alert {fmt(check.shown_alert_step)}"))
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
                                    thresholds=thresholds_for(ZERO_SHARE, ctx, check.mode),
                                    markers=markers,
                                    marker_color=color))
        panel = _panel(run, metric, ctx, SERIES_COLORS[len(panels) % len(SERIES_COLORS)],
                       finding=True, markers=markers, marker_color=color,
                       spikes=spikes if metric == key else (), mode=check.mode)
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


def _listed(v: object) -> list[Any]:
    """An evidence value that should be a list, as one (numpy arrays included; else empty)."""
    v = as_plain(v)
    return list(v) if isinstance(v, (list, tuple)) else []


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-") or "x"


def _title(mode: str) -> str:
    try:
        return rule_named(mode).title
    except KeyError:
        return mode.replace("_", " ")
