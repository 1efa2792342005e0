"""What ``watch`` shows: alert lines (or JSON lines), the live status panel on a terminal, and
the last status of each run watched. Names from a log are escaped (``escape.terminal``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from grpo_doctor.escape import json_dumps, terminal
from grpo_doctor.findings import RUN_SEVERITY, Check, Status
from grpo_doctor.monitor import by_first_alert, step_unit
from grpo_doctor.text import fmt, plural

if TYPE_CHECKING:
    from grpo_doctor.monitor import Alert, Clearing
    from grpo_doctor.store import Run


class Watched(Protocol):
    """What is shown of one watched run (``watch.Watcher``)."""

    path: Path
    polls: int
    last_poll_seconds: float

    @property
    def run(self) -> Run | None: ...

    @property
    def status(self) -> str: ...

    @property
    def checks(self) -> tuple[Check, ...]: ...

    @property
    def format(self) -> str | None: ...

    @property
    def clearing(self) -> Mapping[str, Clearing]: ...

    @property
    def first_action(self) -> str | None: ...

    @property
    def shown_at(self) -> Mapping[str, int | None]: ...


class Watch(Protocol):
    """What is shown of a watch (``watch.Watcher``, or ``watch.WatchAll`` of several runs)."""

    path: Path
    polls: int
    last_poll_seconds: float

    @property
    def several(self) -> bool: ...

    def members(self) -> Sequence[Watched]: ...


def status_dict(watcher: Watched) -> dict[str, Any]:
    """The last status as a JSON object (``--format json``)."""
    run = watcher.run
    return {
        "event": "status", "status": watcher.status if run is not None else "no data",
        "run": run.name if run is not None else None, "source": str(watcher.path),
        "step": run.last_step if run is not None else None,
        "n_steps": run.n_steps if run is not None else 0, "polls": watcher.polls,
        "step_unit": step_unit(run) if run is not None else "step",
        "findings": [{"mode": c.mode, "status": c.status.value,
                      "first_alert_step": c.first_alert_step, "onset_step": c.onset_step,
                      "clearing": _clearing_dict(watcher, c.mode)}
                     for c in by_first_alert(watcher.checks)],
        "first_action": watcher.first_action,
    }


def _clearing_dict(watcher: Watched, mode: str) -> dict[str, Any] | None:
    held = watcher.clearing.get(mode)
    return held.to_dict() if held is not None else None


def _held(watcher: Watched, mode: str, sep: str) -> str:
    """A held finding's progress towards its clear (``; clearing: ...``), else ""."""
    held = watcher.clearing.get(mode)
    return f"{sep}{held.text()}" if held is not None else ""


def _as_of(watcher: Watched, mode: str, unit: str) -> str:
    """`` (as of step 20)`` when a held finding's summary was written before the last step
    read: its numbers are of then ("always 0 over 20 steps" shown at step 60 read as now)."""
    at = watcher.shown_at.get(mode)
    run = watcher.run
    if at is None or run is None or run.last_step is None or at >= run.last_step:
        return ""
    return f" (as of {unit} {fmt(at)})"


def status_line(watcher: Watched, *, named: bool = False) -> str:
    """The last status in one line (``named``: starting with the run's name)."""
    run = watcher.run
    if run is None:
        return (f"status: no data yet from {terminal(watcher.path)} "
                f"({plural(watcher.polls, 'poll')})")
    unit = step_unit(run)  # a log with no step: its line numbers, never called steps
    found = [f"{c.mode} {c.status.value} (first alert at {unit} {fmt(c.first_alert_step)}"
             f"{_held(watcher, c.mode, '; ')})" for c in by_first_alert(watcher.checks)]
    stopped = not found and watcher.status != "healthy" and bool(watcher.first_action)
    what = "; ".join(found) if found else (
        "the run stopped on an error" if stopped else "no failure mode found")
    who = f"{terminal(run.name)}: " if named else ""
    do = f". Do first: {terminal(watcher.first_action)}" if (
        found or stopped) and watcher.first_action else ""
    return (f"status: {who}{watcher.status} at {unit} {fmt(run.last_step)} "
            f"({plural(run.n_steps, unit)}, {plural(watcher.polls, 'poll')}): {what}{do}")



def _panel(watcher: Watched, interval: float) -> Any:
    """The live status panel on a terminal."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    run = watcher.run
    title = Text(f"grpo-doctor watch · {terminal(run.name if run else watcher.path)}")
    if run is None:
        what = "waiting for data in" if watcher.polls else "reading"
        return Panel(Text(f"{what} {terminal(watcher.path)} · poll {watcher.polls} · every "
                          f"{interval:g} s · Ctrl-C to stop"), title=title, title_align="left")
    unit = step_unit(run)
    head = Text(f"{terminal(watcher.format)} · {unit} {fmt(run.last_step)} · "
                f"{plural(run.n_steps, unit)} · poll {watcher.polls} "
                f"({watcher.last_poll_seconds:.2f} s) · every {interval:g} s · Ctrl-C to stop")
    fired = [c for c in watcher.checks if c.fired]
    ok = sum(c.status is Status.OK for c in watcher.checks)
    skipped = sum(c.status is Status.SKIPPED for c in watcher.checks)
    if not fired:
        body: Any = Text(f"no failure mode found · {ok} checks ok, {skipped} skipped",
                         style="green")
    else:
        body = Table(box=None, pad_edge=False, expand=True)
        for name in ("mode", "status", "first alert", "onset", "summary"):
            body.add_column(name, no_wrap=name != "summary", overflow="ellipsis")
        for c in sorted(fired, key=lambda c: -c.status.rank):
            style = "bold red" if c.status is Status.CRITICAL else "yellow"
            body.add_row(Text(c.mode), Text(c.status.value, style=style),
                         Text(fmt(c.first_alert_step)), Text(fmt(c.onset_step)),
                         Text(terminal(c.summary) + _as_of(watcher, c.mode, unit)
                              + _held(watcher, c.mode, " · ")))
    border = {"critical": "red", "warning": "yellow"}.get(watcher.status, "green")
    parts: list[Any] = [head, body]
    if fired and watcher.first_action:
        parts.append(Text(f"do first: {terminal(watcher.first_action)}", style="bold"))
    return Panel(Group(*parts), title=title, title_align="left", border_style=border)


def _fleet_panel(watcher: Watch, interval: float) -> Any:
    """The live panel of a folder of runs: one row per run."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    members = watcher.members()
    head = Text(f"{plural(len(members), 'run')} · poll {watcher.polls} "
                f"({watcher.last_poll_seconds:.2f} s) · every {interval:g} s · Ctrl-C to stop")
    table = Table(box=None, pad_edge=False, expand=True)
    for name in ("run", "status", "step", "findings (first alert)"):
        table.add_column(name, no_wrap=name != "findings (first alert)", overflow="ellipsis")
    worst = "healthy"
    for w in members:
        run = w.run
        if run is None:
            table.add_row(Text(terminal(w.path)), Text("no data", style="dim"), "–", "")
            continue
        status = w.status
        if RUN_SEVERITY.get(status, 0) > RUN_SEVERITY.get(worst, 0):
            worst = status
        found = ", ".join(f"{c.mode}@{fmt(c.first_alert_step)}"
                          f"{' (clearing)' if c.mode in w.clearing else ''}"
                          for c in w.checks if c.fired)
        style = {"critical": "bold red", "warning": "yellow"}.get(status, "green")
        table.add_row(Text(terminal(run.name)), Text(status, style=style), fmt(run.last_step),
                      Text(found or "–"))
    border = {"critical": "red", "warning": "yellow"}.get(worst, "green")
    return Panel(Group(head, table), title=Text(f"grpo-doctor watch · {terminal(watcher.path)}"),
                 title_align="left", border_style=border)


def live_panel(watcher: Watch, interval: float) -> Any:
    """The live panel: one run's findings, or one row per run of a folder of runs."""
    if watcher.several:
        return _fleet_panel(watcher, interval)
    members = watcher.members()
    if members:
        return _panel(members[0], interval)
    from rich.panel import Panel
    from rich.text import Text

    what = "waiting for data in" if watcher.polls else "reading"
    return Panel(Text(f"{what} {terminal(watcher.path)} · poll {watcher.polls} · every "
                      f"{interval:g} s · Ctrl-C to stop"),
                 title=Text(f"grpo-doctor watch · {terminal(watcher.path)}"), title_align="left")


class LiveOutput:
    """Writes a watch to ``out``: each alert as a line (``output`` terminal, styled under a
    live panel when ``panel``) or a JSON object (``json``), and at the end the last status of
    every run."""

    def __init__(self, watcher: Watch, out: Any, *, output: str = "terminal",
                 panel: bool = False, interval: float = 10.0) -> None:
        self.watcher = watcher
        self.out = out
        self.output = output
        self.interval = interval
        self.console: Any = None
        self.live: Any = None
        # The first action last printed for each run: an alert with the same one says "as
        # above" (helper-83: seven lines had each repeated the same 400 characters).
        self._said: dict[str | None, str] = {}
        if panel:
            from rich.console import Console
            from rich.live import Live

            self.console = Console(file=out)
            self.live = Live(live_panel(watcher, interval), console=self.console,
                             refresh_per_second=4, transient=True)

    def start(self) -> None:
        if self.live is not None:
            self.live.start()

    def refresh(self) -> None:
        if self.live is not None:
            self.live.update(live_panel(self.watcher, self.interval))

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()

    def alert(self, alert: Alert) -> None:
        out = self.out
        if self.output == "json":
            out.write(json_dumps(alert.to_dict(), default=str) + "\n")
            out.flush()
            return
        said = bool(alert.first_action) and self._said.get(alert.run) == alert.first_action
        if alert.first_action:
            self._said[alert.run] = alert.first_action
        text = alert.line(action_said=said and not alert.revised)
        line = f"{terminal(alert.run)}: {text}" if self.watcher.several else text
        if self.console is not None:
            from rich.text import Text

            style = {Status.CRITICAL: "bold red", Status.WARNING: "yellow"}.get(
                alert.severity, "green")
            self.console.print(Text(self._fit(line), style=style), highlight=False,
                               soft_wrap=True)
        else:
            out.write(self._fit(line) + "\n")
            out.flush()

    def warning(self, run: str, message: str) -> None:
        """A watch warning (a log gone, back, replaced by another, unreadable) as an event of
        its own under ``--format json``: said on stderr only, a JSON consumer had seen the
        findings cleared "its log was replaced by another" with nothing before (helper-88).
        Other outputs print it on stderr, not here."""
        if self.output == "json":
            self.out.write(json_dumps({"event": "warning", "run": run, "message": message})
                           + "\n")
            self.out.flush()

    def _fit(self, line: str) -> str:
        """On a terminal, ``line`` wrapped to its width with a hanging indent; into a file or
        a pipe, one line per alert (what a log scraper or ``grep`` wants)."""
        isatty = getattr(self.out, "isatty", None)
        if not (callable(isatty) and isatty()):
            return line
        import shutil
        import textwrap

        width = max(40, shutil.get_terminal_size().columns)
        return textwrap.fill(line, width, subsequent_indent="    ", break_long_words=False,
                             break_on_hyphens=False)

    def statuses(self) -> None:
        """The last status of every run watched (a line, or a JSON object, each)."""
        watcher, out = self.watcher, self.out
        members = watcher.members()
        if not members:
            if self.output == "json":
                out.write(json_dumps({"event": "status", "status": "no data", "run": None,
                                      "source": str(watcher.path), "step": None,
                                      "n_steps": 0, "polls": watcher.polls,
                                      "step_unit": "step", "findings": []})
                          + "\n")
            else:
                out.write(f"status: no data yet from {terminal(watcher.path)} "
                          f"({plural(watcher.polls, 'poll')})\n")
        for member in members:
            if self.output == "json":
                out.write(json_dumps(status_dict(member), default=str) + "\n")
            else:
                out.write(self._fit(status_line(member, named=watcher.several)) + "\n")
        out.flush()
