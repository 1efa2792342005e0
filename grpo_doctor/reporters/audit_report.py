"""Reports of ``grpo-doctor audit``: a terminal summary table, JSON, JUnit XML, Markdown and
GitHub Actions annotations, all rendered from an :class:`~grpo_doctor.audit.AuditResult`.

Text from logs (run names, sources, summaries, error reasons) goes through the function of
:mod:`grpo_doctor.escape` for each output: rich gets ``Text`` objects of
``escape.terminal`` text, never markup; Markdown ``escape.markdown``; JUnit is built with
ElementTree from ``escape.xml`` text; annotations use GitHub's own escaping. rich is imported
only by the terminal renderers and the progress bar.
"""

from __future__ import annotations

import io
import os
import re
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from grpo_doctor import escape as esc
from grpo_doctor.audit_result import AuditedRun, AuditResult, ProgressFn
from grpo_doctor.engine import ENDS_SHORT
from grpo_doctor.escape import markdown as escape
from grpo_doctor.escape import terminal
from grpo_doctor.findings import MIN_STEPS_FOR_HEALTHY
from grpo_doctor.recipe import next_run_settings
from grpo_doctor.reporters.fit import both_ends
from grpo_doctor.rules.no_progress import LOW_TASK_NOTE
from grpo_doctor.text import without_asides

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

_STYLE = {"healthy": "green", "warning": "yellow", "critical": "bold red", "error": "magenta",
          "inconclusive": "blue"}
_ICON = {"healthy": "✅ healthy", "warning": "⚠️ warning", "critical": "🛑 critical",
         "inconclusive": "❔ inconclusive"}
#: Failing findings detailed in Markdown (a step summary has a size limit).
MARKDOWN_DETAILS = 50


def _tag(run: AuditedRun, mode: str) -> str:
    if mode in (run.worsened or ()):
        return "worsened"
    if mode in (run.new or ()):
        return "new"
    return ""


def _accepted(run: AuditedRun, mode: str) -> bool:
    """A finding the baseline accepts (neither new nor worsened)."""
    return run.new is not None and not _tag(run, mode)


def _in_onset_order(run: AuditedRun) -> list[dict[str, Any]]:
    """The run's findings by onset step (the columns say "onset step"); those without one
    last; the root cause first among equal onsets, as ``diagnose`` lists them (a length
    finding at step 10 that is the cause, before the equal groups it brought about), the
    rule order kept among the others."""
    cause = _root_cause(run)
    root = cause.get("mode") if cause is not None else None
    return sorted(run.findings, key=lambda c: (c.get("onset_step") is None,
                                               c.get("onset_step") or 0,
                                               c.get("mode") != root))


def _onset(check: dict[str, Any]) -> str:
    step = check.get("onset_step")
    return "" if step is None else f"@{step:,}"


def _root_cause(run: AuditedRun) -> dict[str, Any] | None:
    """A run's root cause (its record's) when it has findings, failing or not (a warning under
    ``--fail-on critical`` still says what broke first), or None: a healthy run, or a record
    from a shard written before root causes were reported."""
    cause = run.record.get("root_cause")
    if not run.findings or not isinstance(cause, dict):
        return None
    mode, step, said = cause.get("mode"), cause.get("step"), cause.get("first_action")
    # A shard is data from elsewhere: a cause of other types is not one to print.
    if not isinstance(mode, str) or not mode or (step is not None and (
            type(step) is not int)) or (said is not None and not isinstance(said, str)):
        return None
    return cause


def _cause(cause: dict[str, Any]) -> str:
    """``mode@step``, as the findings are written; ``event@step (seen as mode)`` when the
    cause is an event a finding saw (a reset of the weights, a reward redefined)."""
    at = _onset({'onset_step': cause.get('step')})
    event = cause.get("cause")
    if isinstance(event, str) and event and event != cause["mode"]:
        return f"{event}{at} (seen as {cause['mode']})"
    return f"{cause['mode']}{at}"


def _do_first(cause: dict[str, Any]) -> str:
    """The first action in one line: its parenthesised reasons are in the JSON and ``-v``."""
    return without_asides(str(cause.get("first_action") or ""))


def _plan(run: AuditedRun) -> list[dict[str, Any]]:
    plan = run.record.get("plan")
    return [p for p in plan if isinstance(p, dict) and isinstance(p.get("action"), str)
            and p["action"] and isinstance(p.get("for", []), list)] if isinstance(
        plan, list) else []


def _plan_item(item: dict[str, Any], said: bool = False) -> str:
    """A plan item with the findings it answers; ``said``: the action is the "do this first"
    just above it, named rather than repeated."""
    modes = ", ".join(str(m) for m in item.get("for") or ())
    why = {"consequence": "; follows from the root cause"}.get(str(item.get("treats")), "")
    action = "do this first, above" if said else f"{item['action']}"
    return action + (f" ({modes}{why})" if modes else "")


def _headline(result: AuditResult) -> str:
    s = result.summary()
    text = (f"{s['runs']} run{'s' * (s['runs'] != 1)}: {s['critical']} critical, "
            f"{s['warning']} warning, {s['healthy']} healthy")
    if s["inconclusive"]:
        short = sum(1 for r in result.runs if r.status == "inconclusive" and _too_short(r))
        why = [f"{short} too short to judge"] if short else []
        if s["inconclusive"] - short:
            why.append("no failure and no sign of learning" if not short else
                       f"{s['inconclusive'] - short} with no failure and no sign of learning")
        text += f", {s['inconclusive']} inconclusive ({'; '.join(why)})"
    if s["errors"]:
        text += f"; {s['errors']} unreadable"
    copies = sum(p.copy for p in result.passed_over)
    if copies:
        text += (f"; {copies} cop{'ies' if copies != 1 else 'y'} of a listed run left out "
                 "(-v)")
    # A .log that held no run is said, not only under -v: its name promised one (trial 62:
    # a console of wandb's sparklines had vanished from the audit without a word).
    empty = sum(1 for p in result.passed_over if not p.copy
                and PurePosixPath(p.source).suffix.lower() in _LOG_NAMES)
    if empty:
        text += f"; {empty} log file{'s' if empty != 1 else ''} with no training metrics (-v)"
    return text


#: Names of a captured console, whose file passed over is counted in the headline.
_LOG_NAMES = frozenset({".log", ".out", ".err"})


def _too_short(run: AuditedRun) -> bool:
    """A run of fewer logged steps than a healthy call needs (its record's ``run.n_steps``)."""
    steps = (run.record.get("run") or {}).get("n_steps")
    return isinstance(steps, int) and steps < MIN_STEPS_FOR_HEALTHY


def _packed(text: str, width: int) -> str:
    """``text`` in lines of ``width``, broken after its commas and semicolons only, so that
    no clause ("6 inconclusive (no failure and no sign of learning)") is cut in two; a
    clause longer than the width wraps as the terminal wraps it."""
    parts = re.split(r"(?<=[,;]) ", text)
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 1 + len(part) <= width:
            lines[-1] += " " + part
        else:
            lines.append(part)
    return "\n".join(lines)


def _verdict(result: AuditResult) -> str:
    if result.unreadable_only:
        return "no run could be read: exit 2"
    s = result.summary()
    n = s["failing"]
    text = (f"{n} failing finding{'s' * (n != 1)} (at or above --fail-on {result.fail_on}"
            if result.fail_on != "never" else f"{n} failing findings (--fail-on never")
    if result.baseline is not None:
        text += f"; against the baseline: {s['new']} new, {s['worsened']} worsened"
    return text + ("): the audit fails, exit 1" if n else "): the audit passes")


# --- JSON --------------------------------------------------------------------------------


def render_audit_json(result: AuditResult) -> str:
    """The ``--format json`` document (runs are already cleaned by the JSON reporter)."""
    return esc.json_dumps(result.to_dict(), indent=2, allow_nan=False) + "\n"


# --- terminal ----------------------------------------------------------------------------


def _findings_text(run: AuditedRun):  # -> rich.text.Text
    from rich.text import Text

    text = Text()
    for i, check in enumerate(_in_onset_order(run)):
        if i:
            text.append(", ")
        failing = check["mode"] in run.failing
        text.append(terminal(check["mode"]), style=_STYLE[check["status"]] + " bold" * failing)
        text.append(_onset(check))
        tag = _tag(run, check["mode"])
        if tag:  # joined to its finding: a wrap never puts it beside the next one
            text.append(f"({tag})", style="bold")
    return text if run.findings else Text("–", style="dim")


def _root_lines(run: AuditedRun, width: int) -> list[str]:
    """'→ root MODE@STEP · do first: ACTION', wrapped to ``width`` under a two-space indent
    (none when the run has no root cause)."""
    cause = _root_cause(run)
    if cause is None:
        settings = _next_run(run)
        signs = _signs(run)
        low = _low_task(run)
        short = _ends_short(run)
        if settings is None and not signs and low is None and short is None:
            return []
        status = str(run.record.get("status"))
        said = f"→ {status}"
        if short is not None:
            said += f" · {terminal(short)}"
        if signs:
            said += f" · the logged steps show: {terminal('; '.join(signs))}"
        if low is not None:
            said += f" · {terminal(low)}"
        if settings is not None:
            said += f" · for the next run: {terminal(settings)}"
        return textwrap.wrap(said, max(20, width), initial_indent="  ",
                             subsequent_indent="    ", break_long_words=False,
                             break_on_hyphens=False)
    said = f"→ root {terminal(_cause(cause))}"
    if cause.get("setup_problem") is True:
        # Wrong from the first logged step: "length_hacking@10" alone had read as a policy
        # gaming length where the budget cut every answer (helper-83). On the full-width root
        # line, not in the table, where the names need the room.
        said = said[:-1] + "; a setup problem)" if said.endswith(")") else (
            said + " (a setup problem)")
    if action := _do_first(cause):
        said += f" · do first: {terminal(action)}"
    if signs := _signs(run):
        said += f" · the logged steps show: {terminal('; '.join(signs))}"
    return textwrap.wrap(said, max(20, width), initial_indent="  ", subsequent_indent="    ",
                         break_long_words=False, break_on_hyphens=False)


def _signs(run: AuditedRun) -> list[str]:
    """What every logged step of a run too short to judge shows at an extreme (its record's
    ``signs``)."""
    signs = run.record.get("signs")
    return [s for s in signs if isinstance(s, str)] if isinstance(signs, list) else []


def _low_task(run: AuditedRun) -> str | None:
    """'task score still low: correctness_reward 0.105 -> 0.218 (of 1) ...' from a healthy
    run's record, so a fleet's audit does not read its HEALTHY as learning (the audit had
    dropped the note diagnose shows; trial 52)."""
    notes = run.record.get("notes")
    if run.findings or not isinstance(notes, list):
        return None
    note = next((n for n in notes if isinstance(n, str) and n.startswith(LOW_TASK_NOTE)), None)
    return None if note is None else "task score still low: " + note[len(LOW_TASK_NOTE):]


def _ends_short(run: AuditedRun) -> str | None:
    """'the log ends at step 109 of the 200 steps its config sets (max_steps)...: still
    going, or stopped?' from a run's record with no finding: a run cut off reads healthy
    otherwise (trial 60: SIGTERM at step 110, audit said only "healthy")."""
    notes = run.record.get("notes")
    if not isinstance(notes, list):
        return None
    note = next((n for n in notes if isinstance(n, str) and n.startswith(ENDS_SHORT)), None)
    return None if note is None else note.split(", with no end of training", 1)[0] + (
        ": still going, or stopped?")


def _next_run(run: AuditedRun) -> str | None:
    """The settings a run's record notes for the next run (clearly outside the recipe with no
    finding linked to them) when it is healthy, or inconclusive on a log long enough to judge;
    None otherwise (as ``outline.next_run``)."""
    notes = run.record.get("notes")
    status = run.record.get("status")
    if run.findings or status not in ("healthy", "inconclusive") or not isinstance(notes, list):
        return None
    if status == "inconclusive" and _too_short(run):
        return None
    found = next_run_settings(n for n in notes if isinstance(n, str))
    return found[1] if found is not None else None


def _do_first_section(result: AuditResult, width: int):  # -> rich.console.Group | None
    """Below the table, full width: each run's root cause and first action (in a table
    cell a few words wide they ran to a dozen lines)."""
    from rich.console import Group
    from rich.text import Text

    runs = [r for r in result.runs if _root_cause(r) is not None or _next_run(r) is not None
            or _signs(r) or _low_task(r) is not None or _ends_short(r) is not None]
    if not runs:
        return None
    out: list[Any] = [Text("")]
    labels = both_ends([terminal(r.label) for r in runs], width)
    for run, label in zip(runs, labels):
        out.append(Text(label, style="bold"))
        out.extend(Text(line, overflow="fold") for line in _root_lines(run, width))
    return Group(*out)


#: A column separator (" │ ").
_GAP = 3
#: Room a shortened run name needs to stay recognisable (``ppo_formal_1p5b…20260720T020928Z``):
#: before the names get less, the table drops its format column, then shortens ``inconclusive``.
_NAME_ROOM = 32
#: The status words of a narrow table.
_SHORT_STATUS = {"inconclusive": "inconcl."}


def _finding_tokens(run: AuditedRun) -> list[str]:
    """What the findings cell must never break inside: each ``mode@step`` with its tag and
    the comma after it."""
    tokens = [f"{terminal(c['mode'])}{_onset(c)}" + (f"({t})" if (t := _tag(run, c["mode"]))
                                                      else "")
              for c in _in_onset_order(run)]
    return [t + "," if i < len(tokens) - 1 else t for i, t in enumerate(tokens)]


@dataclass(frozen=True)
class _Layout:
    run_width: int | None  # None: every name fits whole
    findings_width: int  # the findings column's least width: its longest ``mode@step,``
    with_format: bool = True
    short_status: bool = False
    #: False: even the narrowest table would cut a ``mode@step`` (or a step count); the
    #: runs are listed one block each instead (``_blocks``).
    fits: bool = True

    def status(self, status: str) -> str:
        return _SHORT_STATUS.get(status, status) if self.short_status else status


def _layout(result: AuditResult, width: int) -> _Layout:
    """How the table fits ``width`` columns. The run names get the room first (at least
    ``_NAME_ROOM`` when they need it), the findings wrap between tokens; the format column,
    secondary (the source is in JSON and -v), goes before the names would be cut below
    ``_NAME_ROOM``, then ``inconclusive`` is shortened."""
    from rich.cells import cell_len

    runs, errors = result.runs, result.errors
    tokens = [t for r in runs for t in _finding_tokens(r)]
    least = max([len("findings"), *map(cell_len, tokens)])
    findings = max([least, *(cell_len(", ".join(_finding_tokens(r))) for r in runs)])
    names = [cell_len(terminal(r.label)) for r in runs] + [cell_len(terminal(e.source))
                                                           for e in errors]
    longest = max([len("run"), *names])
    steps = max([len("logged"), *(len(f"{r.record['run']['n_steps']:,}") for r in runs)])
    formats = max([len("format"), *(cell_len(terminal(r.record["run"]["format"]))
                                    for r in runs)])
    layout = _Layout(None, least)
    for with_format, short in ((True, False), (False, False), (False, True)):
        layout = _Layout(None, least, with_format, short)
        status = max([len("status"), *(len(layout.status(r.status) + " ✗" * bool(r.failing))
                                       for r in runs), len("error") * bool(errors)])
        room = width - _GAP * (3 + with_format) - status - steps - formats * with_format
        if longest + findings <= room:
            return layout
        # findings get their least width, and up to what leaves the names _NAME_ROOM
        run_width = min(longest, room - max(least, min(findings, room - _NAME_ROOM)))
        layout = _Layout(max(run_width, min(longest, 8)), least, with_format, short)
        if run_width >= min(longest, _NAME_ROOM):
            return layout
    assert layout.run_width is not None
    fits = layout.run_width + least <= room
    return _Layout(layout.run_width, least, layout.with_format, layout.short_status, fits)


def _wrap_tokens(tokens: list[str], room: int) -> list[str]:
    """``tokens`` (``mode@step,``) packed into lines of ``room`` cells, each whole on one line;
    one longer than ``room`` breaks before its ``@``, so that the step stays whole."""
    from rich.cells import cell_len

    lines: list[str] = []
    for token in tokens:
        parts = [token]
        if cell_len(token) > room and "@" in token:
            mode, at, rest = token.rpartition("@")
            parts = [mode, at + rest]
        for part in parts:
            if lines and cell_len(lines[-1]) + 1 + cell_len(part) <= room:
                lines[-1] += " " + part
            else:
                lines.append(part)
    return lines


def _blocks(result: AuditResult, width: int, layout: _Layout):  # -> rich.console.Group
    """The runs one block each, for a terminal too narrow for the table without cutting a
    ``mode@step``: the name (start and end kept) on a line, then its status, steps and
    format, then its findings wrapped between them, never inside a step."""
    from rich.console import Group
    from rich.text import Text

    labels = [terminal(r.label) for r in result.runs] + [terminal(e.source)
                                                         for e in result.errors]
    labels = both_ends(labels, width)
    out: list[Any] = []
    for run, label in zip(result.runs, labels):
        out.append(Text(label, style="bold"))
        facts = Text("  ")
        facts.append(layout.status(run.status), style=_STYLE[run.status])
        if run.failing:
            facts.append(" ✗", style="bold red")
        facts.append(f" · {run.record['run']['n_steps']:,} logged · "
                     f"{terminal(run.record['run']['format'])}")
        facts.overflow = "fold"
        out.append(facts)
        if not run.findings:
            continue
        styles = {f"{terminal(c['mode'])}": (_STYLE[c["status"]]
                                             + " bold" * (c["mode"] in run.failing))
                  for c in run.findings}
        for line in _wrap_tokens(_finding_tokens(run), max(1, width - 2)):
            text = Text("  " + line)
            for mode, style in styles.items():
                text.highlight_words([mode], style=style)
            out.append(text)
        # what broke first and what to change first, words wrapped
        out.extend(Text(line, overflow="fold") for line in _root_lines(run, width))
    for err, label in zip(result.errors, labels[len(result.runs):]):
        out.append(Text(label, style="bold"))
        reason = Text("  ")
        reason.append("error", style=_STYLE["error"])
        reason.append(f": {terminal(err.error)}")
        out.append(reason)
    return Group(*out)


def build_table(result: AuditResult, width: int | None = None) -> Table:
    """The summary table; with ``width`` (the terminal's) it fits: long run names keep their
    start and end (:func:`~grpo_doctor.reporters.fit.both_ends`), a finding's ``mode@step``
    is never broken, a narrow table has no format column."""
    from rich.table import Table
    from rich.text import Text

    layout = _layout(result, width) if width else _Layout(None, 0)
    run_width = layout.run_width
    labels = [terminal(r.label) for r in result.runs] + [terminal(e.source)
                                                         for e in result.errors]
    if run_width is not None:
        labels = both_ends(labels, run_width)
    table = Table(show_edge=False, pad_edge=False, title_justify="left")
    table.add_column("run", overflow="fold", width=run_width, no_wrap=run_width is not None)
    table.add_column("status", no_wrap=True)
    table.add_column("findings (onset step)", overflow="fold", ratio=1,
                     min_width=layout.findings_width)
    # The logged points, not the step span: 50 logs of a 500-step run read "50".
    table.add_column("logged", justify="right", no_wrap=True)
    if layout.with_format:
        table.add_column("format", no_wrap=True)
    for run, label in zip(result.runs, labels):
        status = Text(layout.status(run.status), style=_STYLE[run.status])
        if run.failing:
            status.append(" ✗", style="bold red")
        cells = [Text(label), status, _findings_text(run),
                 Text(f"{run.record['run']['n_steps']:,}")]
        table.add_row(*cells, *[Text(terminal(run.record["run"]["format"]))] * layout.with_format)
    for err, label in zip(result.errors, labels[len(result.runs):]):
        table.add_row(Text(label), Text("error", style=_STYLE["error"]),
                      Text(terminal(err.error)), Text(""), *[Text("")] * layout.with_format)
    return table


def _print(result: AuditResult, console: Console, verbose: bool = False) -> None:
    from rich.text import Text

    layout = _layout(result, console.width)
    if layout.fits:
        console.print(build_table(result, console.width))
        if (section := _do_first_section(result, console.width)) is not None:
            console.print(section)
    else:
        console.print(_blocks(result, console.width, layout))
    console.print(Text(_packed(_headline(result), console.width), style="bold"))
    console.print(Text(_verdict(result)))
    if verbose:
        _print_plans(result, console)
    if verbose and result.passed_over:
        console.print(Text(f"passed over ({len(result.passed_over)}):", style="bold"))
        for item in result.passed_over:
            console.print(Text(f"  {item.source}: {item.why}", style="dim"))


def _print_plans(result: AuditResult, console: Console) -> None:
    """``-v``: each run's root cause and its whole plan, in the order to act."""
    from rich.text import Text

    for run in result.runs:
        cause = _root_cause(run)
        if cause is None:
            continue
        console.print(Text(f"{terminal(run.label)}: root cause {terminal(_cause(cause))}",
                           style="bold"))
        console.print(Text(f"  {terminal(str(cause.get('summary') or ''))}"))
        for k, item in enumerate(_plan(run), 1):
            console.print(Text(f"  {k}. {terminal(_plan_item(item))}"))


def render_audit_terminal(result: AuditResult, console: Console | None = None,
                          verbose: bool = False) -> None:
    from rich.console import Console

    if console is None:
        console = Console()
        if not console.is_terminal and "COLUMNS" not in os.environ:
            console = Console(width=120)  # CI logs: room for the table
    _print(result, console, verbose)


def render_audit_text(result: AuditResult, width: int = 120, verbose: bool = False) -> str:
    """The terminal report as plain text (no colour): for ``--output`` and logs."""
    from rich.console import Console

    console = Console(width=width, color_system=None, force_terminal=False, file=io.StringIO())
    _print(result, console, verbose)
    return console.file.getvalue()  # type: ignore[attr-defined]


@contextmanager
def progress_bar(enabled: bool) -> Iterator[ProgressFn | None]:
    """A progress bar on stderr (when ``enabled``: a TTY), as an ``audit`` progress callback.

    It refreshes on each call, never from a thread, so worker processes fork cleanly."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("auditing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True, auto_refresh=False) as bar:
        task = bar.add_task("audit", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
            bar.refresh()

        yield update


# --- GitHub Actions annotations -----------------------------------------------------------


def _annotation(level: str, title: str, message: str) -> str:
    return f"::{level} title={esc.annotation_property(title)}::{esc.annotation_data(message)}\n"


def github_annotations(result: AuditResult) -> str:
    """Workflow commands: ``::error`` per critical finding, ``::warning`` per warning,
    ``::notice`` for findings the baseline accepts, ``::error`` per unreadable source."""
    out = []
    for run in result.runs:
        for check in run.findings:
            accepted = _accepted(run, check["mode"])
            level = "notice" if accepted else {"critical": "error"}.get(check["status"],
                                                                       "warning")
            note = " (in the baseline)" if accepted else ""
            cause = _root_cause(run)
            if cause is not None and cause["mode"] == check["mode"] and not accepted:
                note += f" Root cause; do first: {_do_first(cause)}"
            elif cause is not None and not accepted:
                note += f" (root cause: {_cause(cause)})"
            out.append(_annotation(level, f"grpo-doctor {check['mode']}",
                                   f"{run.label}: {check['summary']}{note}"))
    for err in result.errors:
        out.append(_annotation("error", "grpo-doctor unreadable log",
                               f"{err.source}: {err.error}"))
    return "".join(out)


# --- Markdown ------------------------------------------------------------------------------


def render_audit_markdown(result: AuditResult, heading_level: int = 2) -> str:
    """For $GITHUB_STEP_SUMMARY and pull-request comments: one line per run (its status, what
    broke first and what to change first), then each failing run's plan folded."""
    h = "#" * heading_level
    lines = [f"{h} grpo-doctor audit: {_headline(result)}", "", _verdict(result), ""]
    if result.runs:
        lines += ["| run | status | root cause | do first | findings (onset step) | logged "
                  "| format | source |", "|---|---|---|---|---|---|---|---|"]
    for run in result.runs:
        found = []
        for check in _in_onset_order(run):
            tag = _tag(run, check["mode"])
            item = f"{escape(check['mode'])}{escape(_onset(check))}"
            item += f" **{tag}**" if tag else ""
            found.append(f"**{item}** ✗" if check["mode"] in run.failing else item)
        info = run.record["run"]
        cause = _root_cause(run)
        root, first = (escape(_cause(cause)), escape(_do_first(cause))) if cause else ("", "")
        lines.append(f"| {escape(run.label)} | {_ICON[run.status]} | {root} | {first} "
                     f"| {', '.join(found) or '–'} | {info['n_steps']:,} "
                     f"| {escape(info['format'])} | {escape(run.source)} |")
    if result.errors:
        lines += ["", f"{h}# Unreadable sources", "", "| source | error |", "|---|---|"]
        lines += [f"| {escape(e.source)} | {escape(e.error)} |" for e in result.errors]
    failing = [run for run in result.runs if run.failing]
    # Runs with findings below --fail-on pass the audit, but a reviewer still needs what
    # broke first and what to do (a run that never learned its task is a warning).
    below = [run for run in result.runs if not run.failing and run.status == "warning"]
    for title, runs in (("Failing runs", failing), ("Runs with warnings (below --fail-on)",
                                                      below)):
        if runs:
            lines += ["", f"{h}# {title}"]
        for run in runs[:MARKDOWN_DETAILS]:
            lines += ["", *_run_details(run)]
        if len(runs) > MARKDOWN_DETAILS:
            lines += ["", f"... and {len(runs) - MARKDOWN_DETAILS} more (see the JSON or JUnit "
                      "report)."]
    return "\n".join(lines) + "\n"


def _run_details(run: AuditedRun) -> list[str]:
    """A run, folded: root cause, the plan in the order to act, its failing findings (or, for
    a run below --fail-on, its findings) in the order they began."""
    cause = _root_cause(run)
    head = f"{escape(run.label)}: {run.status}" + (
        f", root cause {escape(_cause(cause))}" if cause else "")
    lines = [f"<details><summary>{head}</summary>", ""]
    if cause is not None:
        lines += [f"**Root cause**: {escape(str(cause.get('summary') or cause['mode']))}  ",
                  f"**Do this first**: {escape(cause.get('first_action') or '')}", ""]
    plan = _plan(run)
    if plan:
        lines += ["What to change, first things first:", ""]
        first = cause.get("first_action") if cause is not None else None
        lines += [f"{k}. {escape(_plan_item(item, said=item['action'] == first))}"
                  for k, item in enumerate(plan, 1)]
        lines.append("")
    lines += [("Failing findings" if run.failing else "Findings") + ", in the order they began:",
              ""]
    for check in _in_onset_order(run):
        shown = (check["mode"] in run.failing if run.failing
                 else check["status"] in ("warning", "critical"))
        if not shown:
            continue
        tag = _tag(run, check["mode"])
        lines.append(f"- **{escape(check['mode'])}{escape(_onset(check))}** "
                     f"({check['status']}{', ' + tag if tag else ''}): "
                     f"{escape(check['summary'])}")
        if not plan:  # a record without a plan (an older shard): the finding's remedies
            lines += [f"  - {escape(r)}" for r in check["remedies"]]
    return [*lines, "", "</details>"]


# --- JUnit XML -----------------------------------------------------------------------------


def _x(text: object) -> str:
    return esc.xml(text)


def _suite(parent: ET.Element, name: str, counts: dict[str, int]) -> ET.Element:
    return ET.SubElement(parent, "testsuite", {"name": _x(name),
                                               **{k: str(v) for k, v in counts.items()}})


def _failure_message(run: AuditedRun, check: dict[str, Any]) -> str:
    """What a CI page shows of a failing check: its summary, and the run's root cause and
    first action (on the root cause's own check) or a pointer to the root cause."""
    cause = _root_cause(run)
    if cause is None:
        return _x(check["summary"])
    if cause["mode"] == check["mode"]:
        return _x(f"root cause: {check['summary']}; do first: {_do_first(cause)}")
    return _x(f"{check['summary']} (root cause: {_cause(cause)}; do first: "
              f"{_do_first(cause)})")


def _failure_text(run: AuditedRun, check: dict[str, Any]) -> str:
    lines = [check["summary"]]
    cause = _root_cause(run)
    plan = _plan(run)
    if cause is not None:
        lines += ["", f"Root cause: {_cause(cause)}: {cause.get('summary') or ''!s}",
                  f"Do this first: {cause.get('first_action') or ''}"]
    if plan:
        lines += ["", "What to change, first things first:"]
        lines += [f"{k}. {_plan_item(item)}" for k, item in enumerate(plan, 1)]
    elif check["remedies"]:
        lines += ["", "What to change:"] + [f"- {r}" for r in check["remedies"]]
    return _x("\n".join(lines))


def _run_suite(root: ET.Element, run: AuditedRun) -> dict[str, int]:
    checks = run.record["checks"]
    counts = {"tests": len(checks), "failures": len(run.failing), "errors": 0,
              "skipped": sum(c["status"] == "skipped" for c in checks)}
    suite = _suite(root, run.label, counts)
    props = ET.SubElement(suite, "properties")
    cause = _root_cause(run)
    for key, value in (("source", run.source), ("format", run.record["run"]["format"]),
                       ("status", run.status), ("steps", run.record["run"]["n_steps"]),
                       *((("root_cause", _cause(cause)), ("first_action", _do_first(cause)))
                         if cause else ())):
        ET.SubElement(props, "property", {"name": key, "value": _x(value)})
    for check in checks:
        case = ET.SubElement(suite, "testcase", {"classname": _x(run.label),
                                                 "name": _x(check["mode"]), "time": "0"})
        if check["mode"] in run.failing:
            failure = ET.SubElement(case, "failure", {"message": _failure_message(run, check),
                                                      "type": check["status"]})
            failure.text = _failure_text(run, check)
        elif check["status"] == "skipped":
            ET.SubElement(case, "skipped", {"message": _x(check["reason"] or check["summary"])})
        elif check["status"] in ("warning", "critical"):
            why = "accepted by the baseline" if _accepted(run, check["mode"]) else (
                "below --fail-on")
            out = ET.SubElement(case, "system-out")
            out.text = _x(f"{check['status']} ({why}): {check['summary']}")
    return counts


def render_audit_junit(result: AuditResult) -> str:
    """JUnit XML: a testsuite per run, a testcase per check; an unreadable source is a
    testsuite holding one errored testcase."""
    root = ET.Element("testsuites", {"name": "grpo-doctor audit"})
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for run in result.runs:
        for key, value in _run_suite(root, run).items():
            total[key] += value
    for err in result.errors:
        counts = {"tests": 1, "failures": 0, "errors": 1, "skipped": 0}
        suite = _suite(root, err.source, counts)
        case = ET.SubElement(suite, "testcase", {"classname": _x(err.source), "name": "read",
                                                 "time": "0"})
        error = ET.SubElement(case, "error", {"message": _x(err.error), "type": "unreadable"})
        error.text = _x(err.error)
        for key, value in counts.items():
            total[key] += value
    for key, value in total.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") \
        + "\n"
