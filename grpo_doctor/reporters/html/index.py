"""The index page of an audit: one row per run, worst first, linking to its report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from grpo_doctor.escape import html as esc
from grpo_doctor.findings import SOURCE_SEVERITY, Diagnosis
from grpo_doctor.reporters.html.charts import (
    STATUS_COLOR,
)
from grpo_doctor.reporters.html.page import (
    _CSS,
    _badge,
    _step,
)
from grpo_doctor.text import plural


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
        f'<p class="meta">{plural(len(rows), "run")} · {summary}</p></header>'
        '<section class="card"><table class="index"><thead><tr><th>run</th><th>status</th>'
        '<th>findings</th><th>steps</th><th>source</th></tr></thead><tbody>'
        + "".join(body) + "</tbody></table></section></main></body></html>\n"
    )
