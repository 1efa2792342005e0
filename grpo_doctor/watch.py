"""Watching a live run: follow a growing log, re-check the rules at each poll, alert once per
new (or escalated) finding.

    >>> from grpo_doctor.watch import Watcher
    >>> watcher = Watcher("runs/exp1")     # TensorBoard folder, W&B run folder, CSV, JSONL, console
    >>> for alert in watcher.poll():       # call it every few seconds
    ...     print(alert.line())

What is guaranteed
------------------
* ``poll`` reads only what was appended since the previous poll, through the format's
  incremental reader (``Importer.incremental``): a partially written last line (CSV, JSONL,
  console) or record (TensorBoard, W&B) is left for the next poll (a last line is read when
  the watch stops, if the log was quiet for a poll interval: ``Watcher.finish``), and event
  files that appear in a TensorBoard run folder are picked up. Other formats are read whole
  again when their files change.
* The Run it checks is the Run ``diagnose`` builds from the bytes read so far: rebuilt by the
  format's own importer whenever anything but new rows changed, and otherwise extended in place
  (``live_store.LiveStore``), with the same steps, values, logged-NaN evidence and mapping.
* An alert is raised at the first poll whose data raises the finding, and carries the
  ``first_alert_step`` that ``diagnose`` computes on that data (``monitor.Monitor``: the replay
  of prefixes). With one poll per logged step, that is the last step of the poll that alerted,
  and ``diagnose`` on the finished log reports the same step wherever a finding, once raised,
  stays raised (the replay's coarse scan can only report a later step when a finding comes and
  goes). With coarser polls the alert still carries the replayed earliest step.
* A mode alerts when it first fires, and again if it escalates (warning -> critical), keeping
  its first-alert step. A finding stays raised until its rule has found it clear on
  ``Settings.clear_after`` logged points (20 by default; a poll its rule skips counts for
  nothing), then is reported once (``Alert.cleared``: the step it was last seen at, the clear
  points, the step it cleared at), and alerts again if it comes back; a critical finding eases
  to warning only after as many points below critical, said once (``Alert.eased``), and a
  return to critical is alerted as an escalation (``monitor.Monitor``). What is shown
  between changes (onset, first alert, summary) stays; ``clearing`` says how far a held
  finding has got.
* ``WatchAll`` watches every run under a path, each with its own ``Watcher``, and picks up runs
  that appear later.

Cost of a poll (n logged steps, m metrics, k new rows): reading O(new bytes), files that did
not change are not opened (console logs other than verl ``step:N`` lines are parsed whole at
each poll that brings lines: a printed dict's step depends on what follows it); the Run O(k m),
or O(n m) for a rebuild (``live_store``); every rule on the whole run without replay, each
reading at most 2,000 binned points (``rules.base.series``), and the first-alert replay,
O(log n) rule evaluations, only for a mode that newly fired or escalated.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grpo_doctor.config import Settings
from grpo_doctor.discovery import newest_mtime
from grpo_doctor.errors import ConfigError, GrpoDoctorError, InputError
from grpo_doctor.escape import terminal
from grpo_doctor.files import fresh, is_remote, located
from grpo_doctor.files import watched_input as _watched_path
from grpo_doctor.findings import Check, Diagnosis, check_rank
from grpo_doctor.importers import LoadOptions, importer_named
from grpo_doctor.importers._common import SAMPLES_WHY, completion_samples_at
from grpo_doctor.importers.incremental import LiveSource, Restarted, SeveralRuns, open_live
from grpo_doctor.importers.sidecar import with_sidecar_config
from grpo_doctor.interrupts import interrupt_on_sigterm
from grpo_doctor.live_store import LiveStore
from grpo_doctor.monitor import Alert, Clearing, Monitor
from grpo_doctor.notifiers import WandbNotifier, notifiers
from grpo_doctor.reporters.live import LiveOutput
from grpo_doctor.resumed import launch_stamped
from grpo_doctor.store import Run

if TYPE_CHECKING:
    from grpo_doctor.importers.wandb_offline import WandbTarget

#: Polls in a row a run already read may be unreadable (caught mid-rewrite: garbage, half a
#: header) before the watch gives up on it; until then it keeps the last Run read.
MAX_UNREADABLE_POLLS = 3
#: Seconds a log must stay unchanged after a traceback at its end before the watch calls the
#: run stopped: a run that printed an exception it caught goes on writing before then.
STOP_QUIET = 30.0

def watched_input(path: str | os.PathLike[str]) -> Path:
    """The path to follow (``files.watched_input``), refused at once when it is TRL's
    completion samples: no log will ever grow there (helper-97: watch waited on one forever)."""
    p = _watched_path(path)
    if not is_remote(p) and completion_samples_at(p):
        raise InputError(f"{p}: {SAMPLES_WHY}: watch the run's folder or its console log")
    return p


class Watcher:
    """Follows one growing run and re-checks it at each ``poll`` (see the module docstring).

    ``format`` names the input format (as ``--input-format``); by default it is detected once
    the log has content. ``run`` picks one run from a folder or file holding several.
    """

    def __init__(self, path: str | os.PathLike[str], settings: Settings | None = None, *,
                 format: str | None = None, run: str | None = None,
                 step_column: str | None = None) -> None:
        self.path = watched_input(path)
        self.settings = settings or Settings()
        self.options = LoadOptions(column_map=self.settings.checked_map(),
                                   step_column=step_column, run=run)
        self._format = importer_named(format).name if format else None
        self.monitor = Monitor(self.settings)
        self.monitor.hold_stop = True  # released once the log stays quiet (``STOP_QUIET``)
        self.source: LiveSource | None = None
        self.store: LiveStore | None = None
        self.polls = 0
        self.restarts = 0
        self.last_poll_seconds = 0.0
        self.unreadable = 0  # polls in a row that could not read the run (see ``poll``)
        self.gone = False  # the log read before is no longer there (deleted, moved)
        self.read_kind: str | None = None  # "file" or "folder": what the run was read from
        self._read_before: Run | None = None  # the Run read before a restart, while re-read
        self.warnings: list[str] = []  # for the user, once each: taken by ``run_watch``

    #: One run: its alerts and status need not name it (a ``WatchAll`` may watch several).
    several = False

    # -- state -------------------------------------------------------------------------------

    def members(self) -> list[Watcher]:
        """The runs watched: this one (as ``WatchAll.members``)."""
        return [self]

    @property
    def run(self) -> Run | None:
        """The Run as of the last poll. Extended in place by later polls: copy it to keep it."""
        return self.store.run if self.store is not None else None

    @property
    def alerts(self) -> list[Alert]:
        return self.monitor.alerts

    @property
    def checks(self) -> tuple[Check, ...]:
        return self.monitor.checks

    @property
    def clearing(self) -> dict[str, Clearing]:
        """The raised findings held while their rule says less (``monitor.Clearing``)."""
        return self.monitor.clearing

    @property
    def shown_at(self) -> dict[str, int | None]:
        """The step each raised finding's summary was written at (``Monitor.shown_at``)."""
        return self.monitor.shown_at

    @property
    def first_action(self) -> str | None:
        """What to do first as of the last poll (the root cause's first action)."""
        return self.monitor.first_action

    @property
    def status(self) -> str:
        """healthy, warning or critical, as of the last poll (healthy before any data)."""
        diagnosis = self.monitor.diagnosis()
        return diagnosis.status if diagnosis is not None else "healthy"

    def diagnosis(self) -> Diagnosis | None:
        return self.monitor.diagnosis()

    @property
    def format(self) -> str | None:
        return self.source.format if self.source is not None else self._format

    def wandb_target(self) -> WandbTarget | None:
        """The W&B run watched, once its log has named it (``--notify wandb``)."""
        if self.source is None or self.source.format != "wandb-offline":
            return None
        from grpo_doctor.importers.wandb_offline import live_target

        return live_target(self.source.state)

    # -- polling -----------------------------------------------------------------------------

    def poll(self, *, final: bool = False) -> list[Alert]:
        """Read what was appended, update the Run, re-check the rules; the new alerts.

        ``final``: the log is complete, so a last line without a newline is read too (as
        ``diagnose`` reads it); otherwise it is left for the next poll.

        A run read before that cannot be read now (a rewrite caught half done: garbage, an
        empty header) keeps its last Run and is read again at the next poll, said once in
        ``warnings``; only ``MAX_UNREADABLE_POLLS`` polls in a row raise the error (``final``
        raises it at once: there is no next poll).
        """
        import time

        start = time.perf_counter()
        self.polls += 1
        self._said_if_gone()
        if self.gone:
            return []  # nothing at the path to read: what was read stands
        try:
            alerts = self._poll(final)
            if self.source is not None and (final or self.source.quiet_for(STOP_QUIET)):
                alerts += self.monitor.release_stop()
            failed = self._failed_launch(final)
            if failed is not None:
                raise failed
        except SeveralRuns:
            raise
        except GrpoDoctorError as exc:
            if final or self.run is None or isinstance(exc, ConfigError):
                failed = self._failed_launch(True) if not isinstance(exc, ConfigError) else None
                if failed is not None and failed is not exc:
                    raise failed from None
                raise
            self.unreadable += 1
            if self.unreadable >= MAX_UNREADABLE_POLLS:
                raise InputError(f"{exc} ({self.unreadable} polls in a row)") from exc
            if self.unreadable == 1:
                self.warnings.append(f"cannot read {self.path} now ({exc}); keeping what was "
                                     f"read and trying again at the next poll")
            return []
        finally:
            self.last_poll_seconds = time.perf_counter() - start
        if self.unreadable:
            self.warnings.append(f"{self.path} is readable again")
        self.unreadable = 0
        return alerts

    def _said_if_gone(self) -> None:
        """A warning, once, when the log read before is no longer at its path (deleted, or
        moved by a rotation), or a folder now stands where the log was, and once when it is
        back: the watch had gone on silently, reporting a run from a log that no longer
        existed (helper-77, helper-84)."""
        if self.run is None or is_remote(self.path):
            return
        path = Path(self.path)
        kind = "folder" if path.is_dir() else "file" if path.exists() else None
        if self.read_kind is None:
            self.read_kind = kind
        there = kind is not None and kind == self.read_kind
        if not there and not self.gone:
            what = (f"is now a {kind}, not the {self.read_kind} read" if kind is not None
                    else "is gone (deleted or moved)")
            self.warnings.append(f"{self.path} {what}: keeping what was read, and waiting "
                                 "for it to come back")
        elif there and self.gone:
            self.warnings.append(f"{self.path} is back: reading it again")
        self.gone = not there

    def _another_log(self, before: Run, now: Run) -> list[Alert]:
        """After a restart, when the log at the path is not the one read before (its first
        steps hold other values: another run's log moved over it, a relaunch writing over
        it): said once, its raised findings cleared, and a fresh monitor to raise the new
        log's anew: the old log's first alerts had stood in the new one's status
        (helper-84). Nothing for a rewrite that keeps the steps read (an export saved whole
        each time): the monitor reads on."""
        if _continues(before, now):
            if (now.last_step or 0) < (before.last_step or 0):
                # The same log cut back (rewritten to its first steps): what it no longer
                # holds is not what cleared (helper-88: findings cleared "at step 30" of 250).
                self.warnings.append(
                    f"{self.path} now ends at step {now.last_step}, before step "
                    f"{before.last_step} read: read again from its start")
            return []
        self.warnings.append(f"{self.path} now holds another log (its first steps differ "
                             "from those read): reading it from its start, its alerts anew")
        cleared = self.monitor.gone_with_log()
        self.monitor = Monitor(self.settings)
        self.monitor.hold_stop = True
        return cleared

    def _failed_launch(self, final: bool) -> GrpoDoctorError | None:
        """The launch's error when the watched log holds no run and its console capture ends
        in a traceback, once it stayed quiet (``STOP_QUIET``; at once when ``final``): watch
        had waited for data forever, or said "not a training log" (helper-79)."""
        if self.run is not None or is_remote(self.path) or not (final or _quiet(self.path)):
            return None
        from grpo_doctor.importers.launch import launch_error, silent_stop

        path = Path(self.path)
        # Nothing printed: said only at the end (a launch still loading prints nothing yet).
        return launch_error(path) or (silent_stop(path) if final else None)

    def finish(self, quiet: float) -> list[Alert]:
        """The last read as the watch stops: a last line without a newline (a finished log
        often ends so) is complete once the log was unchanged for ``quiet`` s. Not while
        polling: buffered output is flushed mid-line, then may pause for minutes."""
        if self.source is None or not self.source.quiet_for(quiet):
            return self.monitor.settle()
        # Not a poll (--max-polls N reports N); then the advice pending its hold, and a stop
        # held for the log to go quiet (it has).
        return self._poll(final=True) + self.monitor.release_stop() + self.monitor.settle()

    def _poll(self, final: bool) -> list[Alert]:
        if self.source is None:
            self.source = open_live(fresh(self.path), self.options, self._format, final=final)
            if self.source is None:
                return []
            self.store = LiveStore(self.source.policy, self.options.column_map)
        assert self.store is not None
        try:
            delta = self.source.read(final)
        except Restarted:
            # The log was truncated, replaced or rewritten: start over on what it holds now.
            # The monitor keeps the alerts it sent: the same finding in the rewritten log is
            # not news (an escalation still is). What was read stays until the new content
            # gives a Run: a rewrite caught half done (garbage, a header cut short) is read
            # again at the next poll.
            before = self.source, self.store
            old = before[1].run if before[1] is not None else None
            self.source, self.store, self._read_before = None, None, old
            try:
                alerts = self._poll(final)
            except GrpoDoctorError:
                self.source, self.store = before
                raise
            finally:
                self._read_before = None
            if self.run is None and old is not None:
                self.source, self.store = before
                return alerts
            self.restarts += 1
            return alerts
        if not (delta.rows.count or delta.structural):
            if final and self.monitor.awaiting() and self.store.run is not None:
                return self.monitor.evaluate(with_sidecar_config(self.store.run), final=True)
            return []
        store = self.store
        if delta.structural or not store.append(delta.rows):
            store.seed(self.source.rebuild(), delta.rows)
        if store.run is None:
            return []
        # The settings a live log holds none of, from a training config beside it, as
        # ``diagnose`` reads them (its remedies then name the values: "learning_rate 1e-4 ->
        # 5e-5", not "x0.5").
        cleared = ([] if self._read_before is None
                   else self._another_log(self._read_before, store.run))
        return cleared + self.monitor.evaluate(with_sidecar_config(store.run), final=final)


#: The first steps of a log compared to tell a rewrite of it from another log.
_FIRST_STEPS = 5


def _continues(before: Run, now: Run) -> bool:
    """Whether ``now`` is the log ``before`` was read from: its first steps (those it still
    holds) log the same values in the columns both hold, or its steps go on after them."""
    import numpy as np

    old, new = before.frame, now.frame
    if len(old.index) and len(new.index) and new.index[0] > old.index[-1]:
        return True  # its steps go on from the last read: rotated (copytruncate; helper-88)
    steps = old.index[:_FIRST_STEPS].intersection(new.index)
    columns = old.columns.intersection(new.columns)
    if len(steps) == 0 or len(columns) == 0:
        return False
    a = old.loc[steps, columns].to_numpy(dtype=float, na_value=np.nan)
    b = new.loc[steps, columns].to_numpy(dtype=float, na_value=np.nan)
    return bool(np.allclose(a, b, rtol=1e-6, atol=0.0, equal_nan=True))


def _quiet(path: Path) -> bool:
    """Whether ``path`` (a file, or a folder's newest file) was unchanged for ``STOP_QUIET``."""
    import time

    try:
        return newest_mtime(Path(path)) <= time.time() - STOP_QUIET
    except OSError:
        return False


class WatchAll:
    """Every run under a path, each followed by its own :class:`Watcher`: the runs of a folder
    (found as ``audit`` finds them: a TensorBoard or W&B run folder, a log file), the runs of a
    log that holds several (``--run`` would pick one), and runs that appear later (a training
    job started after the watch). A path that is one run is watched as ``Watcher`` watches it.

    In a folder of runs, a file that is not (yet) recognisable as a log waits for the next
    poll, and a run that cannot be read is reported once (``problems``) and left out, so one
    broken log never stops the others.
    """

    def __init__(self, path: str | os.PathLike[str], settings: Settings | None = None, *,
                 format: str | None = None, run: str | None = None,
                 step_column: str | None = None) -> None:
        self.path = watched_input(path)
        self.settings = settings or Settings()
        self._format = format
        self._run = run  # only the run(s) of this name
        self._step_column = step_column
        self.watchers: dict[str, Watcher] = {}
        self._dropped: set[str] = set()
        self._split = False  # a log held several runs
        self.problems: list[str] = []  # a run left out, and why (each once)
        self.polls = 0
        self.last_poll_seconds = 0.0

    def members(self) -> list[Watcher]:
        """The runs watched (with ``run``: those of that name, once they have data)."""
        found = list(self.watchers.values())
        if self._run is None:
            return found
        return [w for w in found if w.run is not None] or found[:1]

    def wandb_target(self) -> WandbTarget | None:
        """The W&B run watched, when the path is one run (``--notify wandb``)."""
        members = self.members()
        return members[0].wandb_target() if len(members) == 1 and not self.several else None

    @property
    def several(self) -> bool:
        """Watching more than the one run at the path (alerts and statuses name their run)."""
        return self._split or len(self.members()) > 1 or any(
            w.path != self.path for w in self.members())

    def _sources(self) -> list[Path]:
        """The runs to watch now: the path itself (a file, or a folder that is one run), or
        the run folders and log files under it."""
        from grpo_doctor.discovery import classify, expand

        self.path = fresh(self.path)  # an object store is listed again at each poll
        if not self.path.is_dir():
            return [self.path] if self.path.exists() else []
        try:
            sources, _ = expand([str(self.path)])
        except GrpoDoctorError:
            return []
        out = []
        launches: dict[Path, list[Path]] = {}
        for src in sources:
            path = located(self.path, src.path)
            if src.format is None:  # a file: watched once it is recognisably a log
                try:
                    if classify(path) is None:
                        continue
                except GrpoDoctorError:
                    continue  # named like a log, not readable yet (still being written)
            if src.format == "tensorboard" and launch_stamped(path.name):
                launches.setdefault(path.parent, []).append(path)
                continue
            out.append(path)
        for parent, folders in launches.items():
            # The Trainer's runs/<date>_<host> of one run's launches: watched through their
            # folder, which reads them as one run when they are (helper-79: a resumed run
            # had been two runs, the second told to check its reward).
            out += [parent] if len(folders) > 1 else folders
        return out

    def _add(self, path: Path, run: str | None = None) -> Watcher | None:
        key = str(path) if run is None else f"{path}\0{run}"
        if key in self.watchers or key in self._dropped:
            return None
        inside = [k for k, w in self.watchers.items()
                  if w.path != path and w.path.is_relative_to(path)]
        if any(self.watchers[k].run is not None for k in inside):
            return None  # its files are watched one by one already: keep their alerts
        if any(path != w.path and path.is_relative_to(w.path) for w in self.watchers.values()):
            return None  # already watched through its folder
        for k in inside:  # a file first (while empty), now known as its run's folder
            del self.watchers[k]
        watcher = Watcher(path, self.settings, format=self._format, run=run or self._run,
                          step_column=self._step_column)
        self.watchers[key] = watcher
        return watcher

    def poll(self, *, final: bool = False) -> list[Alert]:
        """Pick up new runs, then poll each; the alerts of all of them."""
        import time

        start = time.perf_counter()
        self.polls += 1
        for path in self._sources():
            self._add(path)
        alerts: list[Alert] = []
        pending = list(self.watchers.items())
        while pending:
            key, watcher = pending.pop(0)
            try:
                alerts += watcher.poll(final=final)
            except SeveralRuns as exc:  # one watcher per run of the source
                self._split = True
                del self.watchers[key]
                self._dropped.add(key)
                for name in exc.names:
                    member = self._add(watcher.path, name)
                    if member is not None:
                        pending.append((f"{watcher.path}\0{name}", member))
            except GrpoDoctorError as exc:
                if watcher.path == self.path and watcher.options.run is None:
                    raise  # the one run asked for cannot be read: a usage error
                del self.watchers[key]
                self._dropped.add(key)
                self.problems.append(str(exc))
        self.last_poll_seconds = time.perf_counter() - start
        return alerts

    def finish(self, quiet: float) -> list[Alert]:
        """``Watcher.finish`` of each run (one that fails it keeps its last poll's status)."""
        alerts: list[Alert] = []
        for watcher in list(self.watchers.values()):
            with contextlib.suppress(GrpoDoctorError):
                alerts += watcher.finish(quiet)
        return alerts


def run_watch(watcher: Watcher | WatchAll, *, interval: float = 10.0,
              exit_on: str | None = None, notify: Sequence[str] = (), output: str = "terminal",
              once: bool = False, max_polls: int | None = None, live: bool | None = None,
              out: Any = None, err: Any = None,
              sleep: Callable[[float], None] | None = None) -> int:
    """Poll until stopped; print alerts (and cleared findings); return the exit code (see
    ``grpo-doctor watch``). ``watcher`` follows one run, or (``WatchAll``) every run under a
    path: alerts then name their run, and the last status is one line per run.

    1 as soon as a finding at or above ``exit_on`` appears; 0 on Ctrl-C, after ``once`` or
    ``max_polls``. A live panel is shown when ``output`` is terminal and ``out`` is a terminal.
    """
    import sys
    import time

    out = out or sys.stdout
    err = err or sys.stderr
    try:
        threshold = 99 if exit_on is None else check_rank(exit_on)
    except ValueError as e:
        raise ConfigError(f"--exit-on {e}") from None
    if output not in ("terminal", "json"):
        raise ConfigError(f"--format must be terminal or json, got {output!r}")
    senders = notifiers(notify, watcher)
    wandb_senders = [s for s in senders if isinstance(s, WandbNotifier)]
    pause = sleep or time.sleep
    show_panel = (output == "terminal" and (out.isatty() if live is None else live)
                  and not once)

    def say(line: str) -> None:
        err.write(f"grpo-doctor: {terminal(line)}\n")  # names from the log: one safe line
        err.flush()

    printer = LiveOutput(watcher, out, output=output, panel=show_panel, interval=interval)

    def emit(alert: Alert) -> None:
        printer.alert(alert)
        for send in senders:
            warning = send(alert)
            if warning:
                say(f"warning: {warning}")

    def finish(code: int) -> int:
        # A second Ctrl-C stops the last read. --once has read the log whole already.
        with contextlib.suppress(KeyboardInterrupt):
            for alert in [] if once else watcher.finish(max(interval, 1.0)):
                emit(alert)
        printer.stop()
        for send in wandb_senders:
            send.close()
        printer.statuses()
        return code

    if not once and not show_panel and output == "terminal":
        say(f"watching {watcher.path} every {interval:g} s (Ctrl-C to stop)")
    printer.start()
    stop_on_term = interrupt_on_sigterm()
    checked_wandb = False
    waiting_said = False
    problems_said = 0
    try:
        while True:
            alerts = watcher.poll(final=once)
            has_data = any(m.run is not None for m in watcher.members())
            if not has_data and not waiting_said and not once:
                say(f"waiting for data in {watcher.path}")
                waiting_said = True
            problems = watcher.problems if isinstance(watcher, WatchAll) else []
            for problem in problems[problems_said:]:
                say(f"warning: left out: {problem}")
            problems_said = len(problems)
            for member in watcher.members():
                for warning in member.warnings:
                    say(f"warning: {warning}")
                    printer.warning(member.run.name if member.run is not None else "",
                                    warning)
                member.warnings.clear()
            if has_data and not checked_wandb:
                checked_wandb = True
                for send in wandb_senders:
                    why = send.problem()
                    if why:
                        send.disabled = why
                        say(f"warning: {why}")
            for alert in alerts:
                emit(alert)
            printer.refresh()
            if any(a.severity.rank >= threshold for a in alerts if not a.news_only):
                return finish(1)
            if once or (max_polls is not None and watcher.polls >= max_polls):
                return finish(0)
            pause(interval)
    except KeyboardInterrupt:
        return finish(0)
    finally:
        stop_on_term()
