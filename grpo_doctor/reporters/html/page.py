"""The report page: header, verdict, plan, checks table, one chart per finding and the
dashboard; CSS and JS are package data files (report.css, report.js) inlined into it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib.resources import files

from grpo_doctor.escape import html as esc
from grpo_doctor.findings import SCHEMA_VERSION, Check, Diagnosis
from grpo_doctor.reporters import config_line, evidence
from grpo_doctor.reporters.html.charts import (
    STATUS_COLOR,
    _Context,
    _listed,
    _slug,
    _title,
    dashboard_chart,
    finding_chart,
)
from grpo_doctor.reporters.html.svg import (
    svg_chart,
)
from grpo_doctor.reporters.outline import by_onset, cause_label, cause_name, cause_text
from grpo_doctor.store import Run
from grpo_doctor.text import plural


def _json_script(element_id: str, data: object) -> str:
    """JSON inside <script type="application/json">: '<', '>' and '&' escaped, so no string
    from a log can close the element."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _asset(name: str) -> str:
    """A package data file of the page, on a line of its own where it is inlined."""
    return "\n" + (files("grpo_doctor.reporters.html") / name).read_text(encoding="utf-8")


_CSS = _asset("report.css")
_JS = _asset("report.js")


def _step(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


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
        f'{plural(len(diagnosis.findings), "finding")}</p>'
        f'<p class="meta">source <code>{esc(info.source)}</code></p>'
        f'<p class="meta">metrics: {esc(metrics)}</p>'
        + (f'<p class="meta">{esc(config)}</p>' if config else '')
        + f'{_verdict(diagnosis)}</header>')


def _verdict(diagnosis: Diagnosis) -> str:
    """The root cause and the one thing to do first (or why the run is inconclusive)."""
    cause = diagnosis.root_cause
    if cause is not None:
        where = f" at step {_step(cause.step)}" if cause.step is not None else ""
        return (f'<p class="verdict"><b>{cause_label(diagnosis).capitalize()}</b>: '
                f'{esc("".join(cause_name(cause)))}{where}: '
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
            f'<td class="num">{_step(c.shown_alert_step)}</td><td>{esc(c.summary)}</td></tr>')
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
    if check.onset_step is not None and check.shown_alert_step is not None:
        gap = check.shown_alert_step - check.onset_step
        # (raised as it built up, before the step its sentence dates: no "lag -94"; h119)
        lag = (f'<div><span class="muted">lag</span><br><b>{gap:,}</b> steps</div>' if gap >= 0
               else f'<div><span class="muted">raised as it built up</span><br><b>{-gap:,}'
                    '</b> steps before</div>')
    parts.append(f'<h3>When</h3><div class="steps"><div><span class="muted">onset</span><br>'
                 f'<b>{_step(check.onset_step)}</b></div><div><span class="muted">first alert'
                 f'</span><br><b>{_step(check.shown_alert_step)}</b></div>{lag}</div>')
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
    from grpo_doctor.version import package_version

    title = f"grpo-doctor: {info.name} — {diagnosis.status}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n"
        f'<body data-ready="0" data-status="{esc(diagnosis.status)}"><main>'
        + "\n".join(body)
        + f'<footer>grpo-doctor {esc(package_version())} · schema {SCHEMA_VERSION}</footer></main>'
        '<div id="tip" hidden></div>\n' + "\n".join(scripts)
        + f"\n<script>{_JS}</script></body></html>\n"
    )
