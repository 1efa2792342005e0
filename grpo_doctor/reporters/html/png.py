"""The same chart specification drawn to PNG with matplotlib (the optional ``plot`` extra),
for pull-request comments."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from grpo_doctor.findings import Diagnosis
from grpo_doctor.reporters.html.axes import (
    _log_label,
    beyond_axis,
    beyond_axis_labels,
    step_label,
    y_axis,
)
from grpo_doctor.reporters.html.charts import (
    LEVEL_COLOR,
    NAN_COLOR,
    STATUS_COLOR,
    Chart,
    _Context,
    _slug,
    dashboard_chart,
    finding_chart,
)
from grpo_doctor.reporters.html.page import (
    _step,
)
from grpo_doctor.reporters.html.series import (
    bad_stretches,
    envelope,
)
from grpo_doctor.store import Run

#: What a missing matplotlib says (the ``plot`` extra).
PNG_HINT = "--png needs matplotlib: install the plot extra (from a clone: pip install '.[plot]')"


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
                   f"{_step(check.onset_step)}, first alert {_step(check.shown_alert_step)}")
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
