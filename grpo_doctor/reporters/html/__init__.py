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

Layout: ``series`` (one metric as drawn), ``charts`` (what each chart shows, from the rules'
``plot`` and ``lines``), ``axes``, ``svg``, ``page`` (with ``report.css`` and ``report.js``),
``index`` (an audit's index page) and ``png``. The names other modules use are re-exported here.
"""

from __future__ import annotations

from grpo_doctor.reporters.html.axes import Axis, beyond_axis, beyond_axis_labels, y_axis
from grpo_doctor.reporters.html.charts import (
    LABELS,
    SERIES_COLORS,
    STATUS_COLOR,
    Chart,
    Marker,
    Panel,
    Threshold,
    _Context,
    _slug,
    dashboard_chart,
    finding_chart,
    thresholds_for,
)
from grpo_doctor.reporters.html.index import IndexEntry, index_entry, render_index
from grpo_doctor.reporters.html.page import (
    _CSS,
    _JS,
    _badge,
    _json_script,
    _step,
    esc,
    render_html,
)
from grpo_doctor.reporters.html.png import (
    PNG_HINT,
    png_figure,
    png_paths,
    render_png,
    require_matplotlib,
)
from grpo_doctor.reporters.html.series import (
    MAX_POINTS,
    Series,
    bad_stretches,
    envelope,
    metric_series,
    zero_share_series,
)
from grpo_doctor.reporters.html.svg import svg_chart

__all__ = [
    "LABELS",
    "MAX_POINTS",
    "PNG_HINT",
    "SERIES_COLORS",
    "STATUS_COLOR",
    "_CSS",
    "_JS",
    "Axis",
    "Chart",
    "IndexEntry",
    "Marker",
    "Panel",
    "Series",
    "Threshold",
    "_Context",
    "_badge",
    "_json_script",
    "_slug",
    "_step",
    "bad_stretches",
    "beyond_axis",
    "beyond_axis_labels",
    "dashboard_chart",
    "envelope",
    "esc",
    "finding_chart",
    "index_entry",
    "metric_series",
    "png_figure",
    "png_paths",
    "render_html",
    "render_index",
    "render_png",
    "require_matplotlib",
    "svg_chart",
    "thresholds_for",
    "y_axis",
    "zero_share_series",
]
