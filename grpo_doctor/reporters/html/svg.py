"""A chart specification drawn as inline SVG (no plotting library), with the data the page's
tooltips read."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from grpo_doctor.escape import html as esc
from grpo_doctor.reporters.html.axes import (
    MAX_CLIPPED_MARKS,
    Axis,
    _log_label,
    _value_text,
    beyond_axis,
    beyond_axis_labels,
    linear_ticks,
    log_ticks,
    step_label,
    tick_label,
    y_axis,
)
from grpo_doctor.reporters.html.charts import (
    LABELS,
    LEVEL_COLOR,
    NAN_COLOR,
    STATUS_COLOR,
    Chart,
    Panel,
)
from grpo_doctor.reporters.html.series import (
    bad_stretches,
    envelope,
)
from grpo_doctor.text import fmt, plural

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
            high, low = beyond_axis(p, ax)
            notes.append(f"{plural(len(high) + len(low), 'outlier')} beyond the axis, marked at "
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
