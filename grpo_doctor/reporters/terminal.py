"""The terminal report, verdict first (with audit_report and fit, the modules that use rich).

What a practitioner reads in ten seconds, top to bottom:

1. the run and its status; the steps and the source;
2. the probable root cause with its step, and the one thing to do first (or why the run is
   inconclusive);
3. the findings in the order they began (onset, first alert, one sentence of evidence, the
   threshold that fired, the incidents in the run's history);
4. the plan: every finding's remedies merged, root cause first;
5. one line naming the checks that passed, one naming those skipped with what to log (or the
   ``--map`` that would use a column the run has); notes.

``-v`` adds the full table of checks (a sparkline of each key metric on wide terminals) and
every check's evidence. Wrapped lines hang under their first word; nothing is wider than the
console. Log-supplied text goes through ``_safe`` (``escape.terminal``: one line, no control
sequence, no bidi reordering, no workflow command) and is never rich markup.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from grpo_doctor.escape import terminal as _safe
from grpo_doctor.findings import Check, Diagnosis, PlanItem, Status
from grpo_doctor.reporters import config_line, evidence
from grpo_doctor.reporters.fit import shorten_left, shorten_right
from grpo_doctor.reporters.outline import (
    by_onset,
    cause_after_mode,
    cause_label,
    cause_name,
    cause_text,
    critical_apart,
    extra_hints,
    next_run,
    passed,
    sentence,
    skipped,
    skipped_line,
    status_words,
    unsettled,
)
from grpo_doctor.reporters.sparkline import sparkline
from grpo_doctor.store import Run
from grpo_doctor.text import plural

_STYLE = {"ok": "green", "warning": "yellow", "critical": "bold red", "skipped": "dim"}
_STATUS_STYLE = {"healthy": "bold green", "warning": "bold yellow", "critical": "bold red",
                 "inconclusive": "bold blue"}
_MARK = {"critical": "✗", "warning": "!"}
#: Incidents listed under a finding before "and N more" (``-v`` lists them all).
MAX_INCIDENTS = 3
#: Plan items shown before "and N more" (``-v`` shows them all).
MAX_PLAN = 5
#: Below this width the full table of ``-v`` becomes one block per check.
TABLE_WIDTH = 100
#: Sparklines in the full table need room.
TREND_WIDTH = 110

def _step(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


class _Hanging:
    """``head`` then ``body``, the body's wrapped lines hanging under its first word (at
    ``indent``), wrapped to the console's width at render time, with no padding after."""

    def __init__(self, head: Text, body: Text, indent: int) -> None:
        self.head, self.body, self.indent = head, body, indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        indent = min(self.indent, max(0, options.max_width - 10))
        width = max(1, options.max_width - indent)
        head = self.head.copy()
        head.truncate(indent, pad=True)
        lines = self.body.wrap(console, width, overflow="fold") or [Text("")]
        out = [Text.assemble(head if i == 0 else " " * indent, line)
               for i, line in enumerate(lines)]
        for line in out:
            line.rstrip()
        yield Text("\n").join(out)


def _hang(head: str, body: Text | str, *, head_style: str = "bold", indent: int | None = None,
          body_style: str = "") -> _Hanging:
    """``head`` then ``body``, the body's wrapped lines hanging under its first word."""
    text = body if isinstance(body, Text) else Text(body, style=body_style)
    return _Hanging(Text(head, style=head_style), text,
                    indent if indent is not None else len(head))


def _indented(body: Text | str, indent: int, *, style: str = "") -> _Hanging:
    return _hang(" " * indent, body, head_style="", body_style=style)


def _header(diagnosis: Diagnosis, width: int, verbose: bool) -> list[RenderableType]:
    info = diagnosis.run
    status = diagnosis.status
    said = status_words(diagnosis)
    # Status and name stay on one line: a name too long for it keeps its start (the file
    # name on the next line keeps the end).
    name = shorten_right(_safe(info.name), max(1, width - len(said) - 3))
    first = Text.assemble((said.upper() if said == status else status.upper() + said[len(
        status):], _STATUS_STYLE.get(status, "bold")), " · ", (name, "bold"))
    first.overflow = "fold"
    facts = f"steps {_step(info.first_step)}–{_step(info.last_step)} ({info.n_steps:,} logged)"
    facts += f" · {_safe(info.format)}"
    source = _safe(info.source)
    room = width - len(facts) - 3
    # A path too long for its room is shortened from the left (its file name kept), never
    # wrapped mid-word; -v gives it a line of its own first.
    own_line = verbose and cell_len(source) > room
    if not own_line and cell_len(source) > room:
        source = shorten_left(source, room) if room > 12 else ""
    second = Text(facts + (f" · {source}" if source and not own_line else ""), style="dim")
    second.overflow = "fold"
    out: list[RenderableType] = [first, second]
    if own_line:
        out.append(Text(shorten_left(source, width), style="dim"))
    if (config := config_line(diagnosis.config)) is not None:
        out.append(_hang("config: ", _safe(config[len("config: "):]), head_style="dim",
                         body_style="dim"))
    return out


def _verdict(diagnosis: Diagnosis) -> list[RenderableType]:
    out: list[RenderableType] = []
    cause = diagnosis.root_cause
    if cause is not None:
        name, seen = cause_name(cause)
        out.append(_hang(f"{cause_label(diagnosis)}: ", Text.assemble(
            (_safe(name), "bold"), _safe(seen + cause_after_mode(diagnosis, _step)))))
        out.append(_hang("do this first: ", _safe(cause.first_action)))
        if (apart := critical_apart(diagnosis)) is not None:
            out.append(_hang("also critical: ", _safe(apart)))
        out += _signs(diagnosis)
    elif diagnosis.status_reason:
        out.append(_hang("inconclusive: ", _safe(diagnosis.status_reason), head_style="bold blue"))
        out += _signs(diagnosis)
        if (settings := next_run(diagnosis)) is not None:
            out.append(_hang("for the next run: ", _safe(settings[1])))
    elif diagnosis.status == "healthy":
        ran = sum(1 for c in diagnosis.checks if c.status is not Status.SKIPPED)
        out.append(Text(f"No failure mode found by the {plural(ran, 'check')} that ran.",
                        style="green"))
        if (settings := next_run(diagnosis)) is not None:
            # A setting outside the recipe on a run that did well all the same: the one
            # thing to change, said where the eye lands, not among the notes.
            out.append(_hang("for the next run: ", _safe(settings[1])))
    return out


def _signs(diagnosis: Diagnosis) -> list[RenderableType]:
    """What every step of a log too short to judge shows at an extreme, one hung line each."""
    shown = "the logged steps show: " if diagnosis.run.n_steps > 1 else "its step shows: "
    return [_hang(shown if k == 0 else " " * len(shown), _safe(sign), head_style="blue")
            for k, sign in enumerate(diagnosis.signs)]


def _onsets(check: Check) -> str:
    """' · onset N · first alert M': the onset of the episode the sentence describes (an
    earlier episode the run came back from is an incident, with its own step)."""
    return f" · onset {_step(check.onset_step)} · {check.first_alert_words}"


def _finding(check: Check, verbose: bool, with_remedies: bool, said: str | None,
             span: int | None = None) -> list[RenderableType]:
    """One finding: heading, one sentence (unless the root cause line said it), threshold,
    incidents (and with ``-v`` the evidence)."""
    status = check.status.value
    head = Text.assemble(
        (f"{_MARK.get(status, '·')} ", _STYLE.get(status, "")), (_safe(check.mode), "bold"),
        " ", (status, _STYLE.get(status, "")),
        _onsets(check))
    head.overflow = "fold"
    text = sentence(check)
    out: list[RenderableType] = [head]
    if text == said:
        out.append(_indented("the root cause, above", 4, style="dim"))
    else:
        out.append(_indented(_safe(text), 4))
    fired = evidence.threshold(check)
    if fired:
        out.append(_hang("    threshold: ", _safe(fired), head_style="dim", body_style="dim"))
    incidents = [i for i in check.incidents if i.summary not in check.summary]
    shown = incidents if verbose else incidents[:MAX_INCIDENTS]
    for incident in shown:
        out.append(_hang("    incident: ", _safe(incident.summary), head_style="dim"))
    if len(shown) < len(incidents):
        out.append(_indented(f"and {plural(len(incidents) - len(shown), 'more incident')} (-v)", 4,
                             style="dim"))
    if verbose:
        out += _evidence(check, 4, span)
    if with_remedies:
        out += [_hang("    • ", _safe(r)) for r in check.remedies]
    return out


def _evidence(check: Check, indent: int, span: int | None = None) -> list[RenderableType]:
    return [_hang(" " * indent + f"{key}: ", _safe(text), head_style="dim", body_style="dim")
            for key, text in evidence.items(check.evidence, span=span)]


def _span(diagnosis: Diagnosis) -> int | None:
    """How many steps the run's log spans (a window longer than this is the whole run)."""
    first, last = diagnosis.run.first_step, diagnosis.run.last_step
    return None if first is None or last is None else last - first


def _plan(diagnosis: Diagnosis, verbose: bool) -> list[RenderableType]:
    plan = diagnosis.plan
    if not plan:
        return []
    several = len(diagnosis.findings) > 1
    apart = [c.mode for c in diagnosis.findings if c.status is Status.CRITICAL] if (
        critical_apart(diagnosis) is not None) else []
    shown = list(plan) if verbose or len(plan) <= MAX_PLAN else _first_items(plan, apart)
    out: list[RenderableType] = [Text("What to change, first things first:", style="bold")]
    for item in shown:
        body = Text(_safe(item.action))
        if several and item.modes:
            tag = ", ".join(_safe(m) for m in item.modes)
            if item.treats == "consequence":
                tag += "; follows from the root cause"
            body.append(f"  [{tag}]", style="dim")
        out.append(_hang(f"{plan.index(item) + 1:>3}. ", body, head_style=""))
    if len(shown) < len(plan):
        out.append(_indented(f"and {len(plan) - len(shown)} more (-v)", 5, style="dim"))
    return out


def _first_items(plan: tuple[PlanItem, ...], modes: Sequence[str] = ()) -> list[PlanItem]:
    """The first ``MAX_PLAN`` items, with a roll-back never among those left out, nor the
    first fix of each of ``modes`` (the critical findings "also critical" points to: h120,
    entropy_collapse's fix had sat behind "and 9 more"); those take the last places shown,
    in the plan's order."""
    wanted = [next(it for it in plan if mode in it.modes) for mode in modes
              if any(mode in it.modes for it in plan)]
    rollback = next((it for it in plan if it.rollback_step is not None), None)
    if rollback is not None:
        wanted.append(rollback)
    keep = [it for it in plan[:MAX_PLAN] if it in wanted or it is plan[0]]
    extra = [it for it in dict.fromkeys(wanted) if plan.index(it) >= MAX_PLAN]
    extra = extra[:MAX_PLAN - len(keep)]
    room = MAX_PLAN - len(extra) - len(keep)
    rest = [it for it in plan[:MAX_PLAN] if it not in keep][:max(room, 0)]
    return sorted({*keep, *rest, *extra}, key=plan.index)


def _lists(diagnosis: Diagnosis) -> list[RenderableType]:
    out: list[RenderableType] = []
    if ok := passed(diagnosis):
        out.append(_hang("passed: ", ", ".join(_safe(m) for m in ok), head_style="green"))
    if open_ := unsettled(diagnosis):
        out.append(_hang("no call: ", "; ".join(_safe(f"{c.mode} ({c.summary})")
                                                for c in open_), head_style="dim"))
    if skipped(diagnosis):
        out.append(_hang("skipped: ", _safe(skipped_line(diagnosis.checks)), head_style="dim"))
    out += [_hang("hint: ", _safe(hint), head_style="cyan") for hint in extra_hints(diagnosis)]
    lifted = next_run(diagnosis)
    out += [_hang("note: ", _safe(note), head_style="dim", body_style="dim")
            for note in diagnosis.notes if lifted is None or note != lifted[0]]
    return out


def _spark(run: Run | None, check: Check) -> Text:
    if run is None or not check.key_metric:
        return Text("")
    try:
        line, pos = sparkline(run, check.key_metric, width=16, mark_step=check.onset_step)
    except Exception:  # a picture is not worth a failed report
        return Text("")
    text = Text(line, style="cyan")
    if pos is not None and check.fired:
        text.stylize("bold reverse " + _STYLE[check.status.value], pos, pos + 1)
    return text


def _full_table(diagnosis: Diagnosis, run: Run | None, width: int) -> list[RenderableType]:
    """``-v``: every check, its status, steps and summary (and evidence)."""
    out: list[RenderableType] = [Text("Every check:", style="bold")]
    if width < TABLE_WIDTH:
        for c in diagnosis.checks:
            head = Text.assemble((_safe(c.mode), "bold"), " ",
                                 (c.status.value, _STYLE.get(c.status.value, "")))
            if c.fired:
                head.append(_onsets(c))
            out += [head, _indented(_safe(c.summary), 4)]
            if not c.fired:
                out += _evidence(c, 4, _span(diagnosis))
        return out
    table = Table(show_edge=False, pad_edge=False, expand=False)
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("onset", justify="right", no_wrap=True)
    table.add_column("alert", justify="right", no_wrap=True)
    trend = run is not None and width >= TREND_WIDTH
    if trend:
        table.add_column("trend", no_wrap=True)
    table.add_column("summary", overflow="fold", ratio=1)
    for c in diagnosis.checks:
        cells: list[Any] = [Text(_safe(c.mode)), Text(c.status.value,
                                                      style=_STYLE.get(c.status.value, "")),
                            _step(c.onset_step), _step(c.shown_alert_step)]
        if trend:
            cells.append(_spark(run, c))
        table.add_row(*cells, Text(_safe(c.summary)))
    out.append(table)
    for c in diagnosis.checks:
        if not c.fired and (lines := _evidence(c, 4, _span(diagnosis))):
            out += [Text(_safe(c.mode), style="bold"), *lines]
    return out


def build(diagnosis: Diagnosis, run: Run | None = None, verbose: bool = False,
          width: int = 120) -> Group:
    """The report as one rich renderable for a console ``width`` columns wide."""
    parts: list[RenderableType] = [*_header(diagnosis, width, verbose), *_verdict(diagnosis)]
    findings = by_onset(diagnosis)
    if findings:
        parts += [Text(""), Text("Findings, in the order they began:", style="bold")]
        cause = diagnosis.root_cause
        for check in findings:
            said = cause_text(diagnosis) if cause is not None and cause.mode == check.mode \
                else None
            parts += _finding(check, verbose, not diagnosis.plan, said, _span(diagnosis))
        plan = _plan(diagnosis, verbose)
        if plan:
            parts += [Text(""), *plan]
    lists = _lists(diagnosis)
    if lists:
        parts += [Text("")] * bool(findings) + lists
    if verbose:
        parts += [Text(""), *_full_table(diagnosis, run, width)]
    return Group(*parts)


def render_terminal(diagnosis: Diagnosis, run: Run | None = None, *,
                    console: Console | None = None, verbose: bool = False) -> None:
    console = console or Console(highlight=False)
    console.print(build(diagnosis, run, verbose, console.width), highlight=False)


def render_to_text(diagnosis: Diagnosis, run: Run | None = None, width: int = 120, *,
                   verbose: bool = False, color: bool = False) -> str:
    """The report as text for a console ``width`` columns wide (no colour unless ``color``:
    then ANSI codes, as on a terminal), e.g. for ``--output``, tests and logs."""
    return as_text(build(diagnosis, run, verbose, width), width, color=color)


def as_text(renderable: RenderableType, width: int, *, color: bool = False) -> str:
    """What ``renderable`` prints on a console ``width`` columns wide, as text without
    trailing spaces (ANSI codes only with ``color``)."""
    console = Console(width=width, file=io.StringIO(), highlight=False,
                      color_system="truecolor" if color else None, force_terminal=color,
                      legacy_windows=False)
    console.print(renderable, highlight=False)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    return "".join(line.rstrip(" ") + "\n" for line in text.splitlines())
