"""The rich terminal report: header, one row per check, then each finding's evidence and
remedies. The only library module that imports rich. Log-supplied text is never markup."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from grpo_doctor.findings import Check, Diagnosis
from grpo_doctor.reporters.sparkline import sparkline
from grpo_doctor.store import Run

_STYLE = {"ok": "green", "warning": "yellow", "critical": "bold red", "skipped": "dim"}
_STATUS_STYLE = {"healthy": "bold green", "warning": "bold yellow", "critical": "bold red",
                 "inconclusive": "bold blue"}


def _step(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


def _spark(run: Run | None, check: Check) -> Text:
    if run is None or not check.key_metric:
        return Text("")
    line, pos = sparkline(run, check.key_metric, width=16, mark_step=check.onset_step)
    text = Text(line, style="cyan")
    if pos is not None and check.fired:
        text.stylize("bold reverse " + _STYLE[check.status.value], pos, pos + 1)
    return text


def _headline(check: Check) -> str:
    """The table's short form: a finding's first clause; the panel below has the rest."""
    if check.fired:
        return check.summary.split(":", 1)[0]
    return check.summary


def _evidence_lines(evidence: dict[str, Any]) -> list[str]:
    out = []
    for key, value in evidence.items():
        if value is None or (isinstance(value, (list, tuple, dict)) and not value):
            continue
        out.append(f"{key}: {value}")
    return out


def build(diagnosis: Diagnosis, run: Run | None = None, verbose: bool = False,
          width: int = 120) -> Group:
    info = diagnosis.run
    header = Text.assemble(
        ("grpo-doctor ", "bold"), (info.name, "bold cyan"), "  ",
        (diagnosis.status.upper(), _STATUS_STYLE[diagnosis.status]),
        f"\n{info.format} · {info.source}\nsteps {_step(info.first_step)}–"
        f"{_step(info.last_step)} ({info.n_steps:,} logged) · metrics: "
        f"{', '.join(diagnosis.metrics) or 'none recognised'}",
    )
    table = Table(show_edge=False, pad_edge=False, expand=False)
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("onset", justify="right", no_wrap=True)
    table.add_column("alert", justify="right", no_wrap=True)
    trend = run is not None and width >= 110  # sparklines need room
    if trend:
        table.add_column("trend", no_wrap=True)
    table.add_column("summary", overflow="fold", ratio=1)
    for c in diagnosis.checks:
        cells = [Text(c.mode), Text(c.status.value, style=_STYLE[c.status.value]),
                 _step(c.onset_step), _step(c.first_alert_step)]
        if trend:
            cells.append(_spark(run, c))
        table.add_row(*cells, Text(_headline(c)))
    parts: list[Any] = [header]
    if diagnosis.status_reason:
        parts.append(Text(f"inconclusive: {diagnosis.status_reason}", style="blue"))
    cause = diagnosis.root_cause
    if cause is not None:
        parts.append(Text.assemble(("root cause: ", "bold"), f"{cause.mode} at step "
                                   f"{_step(cause.step)}: {cause.summary}"))
        parts.append(Text.assemble(("do this first: ", "bold"), cause.first_action))
    parts += [Text(f"hint: {hint}", style="cyan") for hint in diagnosis.hints]
    parts += [Text(""), table]
    for c in diagnosis.findings:
        body = [Text(c.summary)]
        if c.incidents:
            body.append(Text("incidents:", style="bold"))
            body += [Text(f"  • {i.summary}") for i in c.incidents]
        ev = _evidence_lines(c.evidence) if verbose or c.fired else []
        if ev:
            body.append(Text("evidence:", style="bold"))
            body += [Text(f"  {line}", style="dim") for line in ev]
        if c.remedies:
            body.append(Text("what to change:", style="bold"))
            body += [Text(f"  • {r}") for r in c.remedies]
        title = Text.assemble((c.mode, "bold"), " ", (c.status.value, _STYLE[c.status.value]),
                              f"  onset {_step(c.onset_step)} · first alert "
                              f"{_step(c.first_alert_step)}")
        parts.append(Panel(Group(*body), title=title, title_align="left",
                           border_style=_STYLE[c.status.value]))
    skipped = [c for c in diagnosis.checks if c.status.value == "skipped" and c.reason]
    if skipped and verbose:
        parts.append(Text("skipped checks:", style="bold"))
        parts += [Text(f"  {c.mode}: {c.reason}", style="dim") for c in skipped]
    for note in diagnosis.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    if len(diagnosis.plan) > 1:
        parts.append(Text("plan (every finding's remedies, merged):", style="bold"))
        parts += [Text(f"  {k}. {item.action} ({', '.join(item.modes)})")
                  for k, item in enumerate(diagnosis.plan, 1)]
    if not diagnosis.findings and diagnosis.status == "healthy":
        parts.append(Text("No failure mode found.", style="green"))
    return Group(*parts)


def render_terminal(diagnosis: Diagnosis, run: Run | None = None, *,
                    console: Console | None = None, verbose: bool = False) -> None:
    console = console or Console()
    console.print(build(diagnosis, run, verbose, console.width))


def render_to_text(diagnosis: Diagnosis, run: Run | None = None, width: int = 120) -> str:
    """The report as plain text (no colour), e.g. for tests and logs."""
    console = Console(width=width, color_system=None, force_terminal=False, file=io.StringIO())
    console.print(build(diagnosis, run, width=width))
    return console.file.getvalue()  # type: ignore[attr-defined]
