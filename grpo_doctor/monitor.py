"""Alerting on a growing run: the rules over successive Runs, one alert per new, escalated or
cleared finding. Used by ``watch`` and by the trainer callback (``grpo_doctor.integrations.trl``).

Hysteresis: a raised finding stays raised until its rule has found it clear on
``Settings.clear_after`` logged points in a row (20 by default), and a critical one eases to
warning only after as many points below critical; an escalation is shown and alerted at once.
A rule that cannot judge the run at a poll (skipped: not enough data) holds the finding
without counting towards the clear: a check that says nothing is not a clear one. A verdict
on the log as a whole (``no_progress``: learning over the log's second half) clears only
after a quarter of the logged points too, whichever is more: its check turns with the log's
length, not with the run (trial 81: raised at 205, cleared at 240, raised again at 281).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from grpo_doctor import recipe
from grpo_doctor.config import Settings
from grpo_doctor.engine import assemble, check_rule, run_verdicts, with_reward_roles
from grpo_doctor.escape import terminal
from grpo_doctor.findings import RUN_STOPPED, Check, Diagnosis, Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.resumed import RELAUNCHED
from grpo_doctor.root_cause import stopped_cause
from grpo_doctor.rules import rule_named
from grpo_doctor.rules.points import series
from grpo_doctor.run_settings import with_run_settings
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, in_log_lines, step_text

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Alert:
    """A finding that newly fired (or escalated) at one poll, or one that cleared (severity
    ``ok``: it was raised before and no longer is)."""

    mode: str
    severity: Status  # warning or critical; ok when the finding cleared
    first_alert_step: int | None  # as ``diagnose`` computes it on the data seen at this poll
    onset_step: int | None
    summary: str
    step: int | None  # the last logged step when the alert was raised
    previous: Status | None = None  # the severity alerted before (an escalation), else None
    previous_first_alert_step: int | None = None  # what the earlier alert of the mode carried
    remedies: tuple[str, ...] = ()
    run: str = ""
    source: str = ""
    #: What the steps count: "log line" for a log with no step in it, whose steps are the
    #: order of its metric lines until the run's end tells the step count (diagnose then).
    step_unit: str = "step"
    #: A cleared finding: the last step at which its rule raised it, and the logged points
    #: since then on which the rule found it clear (at least ``Settings.clear_after``).
    last_seen_step: int | None = None
    clear_points: int | None = None
    #: What to do first, as ``diagnose`` would say it on the data seen at this poll: the
    #: probable root cause's first action (another finding's, when that finding caused this
    #: one), and that root cause's mode.
    first_action: str | None = None
    root_cause: str | None = None
    #: No new finding: the root cause, and so the first action, changed and held for
    #: ``ADVICE_HOLD`` logged points (an "advice" event).
    revised: bool = False
    #: A raised finding's new episode: the onset of the one alerted before, which the run
    #: recovered from (rho1.00: a crash at step 45 the reward came back from by 55, then the
    #: real one at 130 that a finding still held from step 45 had kept silent).
    earlier_onset: int | None = None
    #: When an earlier episode raised the finding first (``first_alert_step`` before the
    #: onset) and cleared by its rule: where this episode's own alert came, as diagnose's
    #: ``episode_alert_step`` (rho1.00's JSON had "first_alert_step": 40 beside onset 135 and
    #: nothing to tie them; helper-106).
    episode_alert_step: int | None = None
    #: A critical finding held below critical for ``clear_after`` logged points, now shown as
    #: a warning (an "eased" event): a JSON reader that saw "critical" is told it is no longer.
    eased: bool = False

    @property
    def cleared(self) -> bool:
        return self.severity is Status.OK

    @property
    def escalated(self) -> bool:
        return (self.previous is not None and not self.cleared and not self.revised
                and not self.eased)

    @property
    def news_only(self) -> bool:
        """An event that raises nothing (a revised advice, an easing, a clear): never a
        reason for ``--exit-on``."""
        return self.revised or self.eased or self.cleared

    @property
    def event(self) -> str:
        return ("cleared" if self.cleared else "advice" if self.revised
                else "eased" if self.eased else "alert")

    def line(self, *, action_said: bool = False) -> str:
        """One line for a log or a terminal (the summary's names from the log escaped: one
        line, no control sequence). ``action_said``: the first action is the one the line
        before gave, named rather than repeated."""
        unit = self.step_unit
        if self.revised:
            return (f"DO FIRST (revised at {unit} {fmt(self.step)}: the probable root cause is "
                    f"now {self.mode}, onset {fmt(self.onset_step)}): "
                    f"{terminal(self.first_action or '')}")
        if self.eased:
            was = self.previous.value if self.previous is not None else "raised"
            return (f"EASED {self.mode} to {self.severity.value} (was {was}, first alerted at "
                    f"{unit} {fmt(self.first_alert_step)}): below {was} for "
                    f"{fmt(self.clear_points)} logged points; eased at {unit} "
                    f"{fmt(self.step)}. {terminal(self.summary)}")
        if self.cleared:
            was = self.previous.value if self.previous is not None else "raised"
            return (f"CLEARED {self.mode} (was {was}, first alerted at {unit} "
                    f"{fmt(self.first_alert_step)}): last seen at {unit} "
                    f"{fmt(self.last_seen_step)}, clear for {fmt(self.clear_points)} logged "
                    f"points since; cleared at {unit} {fmt(self.step)}. "
                    f"{terminal(self.summary)}")
        what = f"{self.severity.value.upper()} {self.mode}"
        if self.earlier_onset is not None:
            what += (f" (a new episode: the one from {unit} {fmt(self.earlier_onset)} "
                     "recovered)")
        elif self.previous is not None:
            what += f" (escalated from {self.previous.value}"
            if self.previous_first_alert_step != self.first_alert_step:
                what += f", first alerted at {unit} {fmt(self.previous_first_alert_step)}"
            what += ")"
        do = ""
        if self.first_action:
            why = (f" (root cause: {self.root_cause})" if self.root_cause
                   and self.root_cause != self.mode else "")
            do = (f". Do first{why}: as above" if action_said else
                  f". Do first{why}: {terminal(self.first_action)}")
        # A first alert before the onset was an earlier episode's, said as diagnose says it
        # ("first alert at step 65, onset 170" read backwards; helper-83).
        earlier = (" (an earlier episode)" if self.first_alert_step is not None
                   and self.onset_step is not None and self.first_alert_step < self.onset_step
                   else "")
        if earlier and self.episode_alert_step is not None:
            earlier = (f" (an earlier episode; this one's at {unit} "
                       f"{fmt(self.episode_alert_step)})")
        return (f"{what}: first alert at {unit} {fmt(self.first_alert_step)}{earlier}, onset "
                f"{fmt(self.onset_step)}, seen at {unit} {fmt(self.step)}. "
                f"{terminal(self.summary).rstrip('.')}{do}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": self.event, "mode": self.mode, "severity": self.severity.value,
            "previous": self.previous.value if self.previous is not None else None,
            "previous_first_alert_step": self.previous_first_alert_step,
            "first_alert_step": self.first_alert_step, "onset_step": self.onset_step,
            "step": self.step, "summary": self.summary, "remedies": list(self.remedies),
            "run": self.run, "source": self.source, "step_unit": self.step_unit,
            "last_seen_step": self.last_seen_step, "clear_points": self.clear_points,
            "first_action": self.first_action, "root_cause": self.root_cause,
            "earlier_onset": self.earlier_onset,
            "episode_alert_step": self.episode_alert_step, "eased": self.eased,
        }


@dataclass(frozen=True)
class Clearing:
    """A raised finding held as shown while its rule says less than that: clear (``now`` ok),
    below critical (``now`` warning under a critical finding), or not judged (``now``
    skipped, which counts for nothing)."""

    mode: str
    shown: Status
    now: Status
    points: int  # logged points counted so far (clear ones; for an easing, below critical)
    of: int  # Settings.clear_after
    last_seen_step: int | None  # the last step at which the rule raised it

    def text(self) -> str:
        """``clearing: clear for 3 of 20 logged points`` and the like."""
        if self.now is Status.OK:
            return f"clearing: clear for {self.points} of {self.of} logged points"
        if self.now is Status.SKIPPED:
            return (f"held: not judged at the last poll; clear for {self.points} of {self.of} "
                    "logged points")
        return f"easing: below {self.shown.value} for {self.points} of {self.of} logged points"

    def to_dict(self) -> dict[str, Any]:
        return {"now": self.now.value, "points": self.points, "of": self.of,
                "last_seen_step": self.last_seen_step}


@dataclass
class _Hold:
    """How long a raised finding has been below what is shown."""

    last_seen: int | None  # the last step at which the rule raised it
    clear: int = 0  # logged points since then at which it was clear
    below: int = 0  # logged points since it was last at its shown severity


class Monitor:
    """The alerting half of a watch: the rules over successive Runs of one growing log.

    ``evaluate`` checks every rule without the first-alert replay, and replays only for a mode
    that newly fired or escalated, so the alert carries the ``first_alert_step`` that
    ``diagnose`` would report on the same Run. What it shows is stable: an escalation keeps the
    mode's first-alert step (it never moves backwards), and a finding that keeps its severity
    keeps the onset, first alert and summary it had when it last changed.

    Hysteresis (see the module docstring): a raised finding is held as shown until its rule
    has found it clear on ``clear_after`` logged points since it last raised it, then reported
    once as cleared (and alerted again if it comes back); a critical finding eases to warning
    only after ``clear_after`` points below critical. ``clearing`` says, per held finding, how
    far it has got. Logged points are the Run's rows, however many a poll brings. Used by
    :class:`Watcher` and by the trainer callback (``grpo_doctor.integrations.trl``).
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self._settings = settings or Settings()
        cfg = self._settings.doctor_config()
        #: The configuration the advice is judged with (the recipe's overrides among it: a
        #: watch had judged the lr against the chapter's ceiling where diagnose, in the same
        #: folder, used the file's; trial 80).
        self._doctor_config = cfg
        self._given_config, self._reward_roles = cfg.run_config, cfg.reward_roles
        self._rules = cfg.rules()
        self._params = {rule.id: cfg.params_for(rule) for rule in self._rules}
        self.clear_after = self._settings.clear_after
        self.alerted: dict[str, Alert] = {}
        self._stop_alerted = False  # the run's stop on an error was alerted (``_stopped``)
        #: Hold a stop until the caller says the log went quiet (``release_stop``): a watched
        #: log whose last lines are a traceback may be a run that printed a caught exception
        #: and goes on (helper-76: "run_stopped" at once, never taken back, and
        #: ``--exit-on warning`` ended the watch of a healthy run). The callback reads no
        #: console: it never holds one.
        self.hold_stop = False
        self._pending_stop: Alert | None = None
        self.alerts: list[Alert] = []
        self.checks: tuple[Check, ...] = ()
        self.run: Run | None = None
        #: The raised findings held as shown while their rule says less (see ``Clearing``).
        self.clearing: dict[str, Clearing] = {}
        self._shown: dict[str, Check] = {}  # each raised finding as it last changed
        #: The step each raised finding was last shown anew at: its summary's numbers are
        #: those of then, and the panel says so ("as of step 20") once the log has moved on.
        self.shown_at: dict[str, int | None] = {}
        self._holds: dict[str, _Hold] = {}  # each raised finding's count towards its clear
        self._cleared_at: dict[str, int | None] = {}  # the step each mode last cleared at
        self._n_steps = 0  # the Run's rows at the last evaluate
        self._last_frame: pd.DataFrame | None = None  # and its frame
        #: What to do first now: the root cause's first action at the last evaluate (None
        #: when nothing is raised).
        self.first_action: str | None = None
        self._advised: tuple[str, ...] | None = None  # the root cause last advised on
        self._candidate: tuple[tuple[str, ...], int] | None = None  # another, and its points
        self._refiring: dict[str, int] = {}  # polls in a row a cleared warning fired again
        self._pending: Alert | None = None  # the advice event the candidate would be

    def _new_points(self, run: Run) -> int:
        """Logged points of ``run`` not evaluated before: the rows beyond the last run's, when
        the last run is where this one starts; else all of them (the log was rewritten)."""
        before = self._last_frame
        if before is None or run.n_steps < self._n_steps:
            return run.n_steps
        head = run.frame.iloc[:len(before)]
        shared = before.columns.intersection(head.columns)
        if not (head.index.equals(before.index) and _kept(before[shared], head[shared])):
            return run.n_steps
        return run.n_steps - self._n_steps

    def evaluate(self, run: Run, *, final: bool = False) -> list[Alert]:
        """Every rule on ``run``; the alerts it raises (new modes, escalations, and findings
        that cleared). ``final``: the run is complete, so a finding waiting for a second poll
        to confirm it is raised now (there is none)."""
        new: list[Alert] = []
        checks: list[Check] = []
        fresh: list[Check] = []  # as the rules judge this poll, for the advice
        # The settings and reward roles the user gave, as diagnose applies them.
        run = with_reward_roles(with_run_settings(run, self._given_config), self._reward_roles)
        unit = step_unit(run)
        # A log started over or rewritten (a watch's restart, a file rewritten in place to the
        # same size) is all new points; one that grew keeps what was evaluated before.
        points = self._new_points(run)
        self._n_steps, self._last_frame = run.n_steps, run.frame
        self.clearing = {}
        ruled = {rule.id: _in_unit(check_rule(rule, run, self._params[rule.id],
                                              with_first_alert=False), unit)
                 for rule in self._rules}
        # The whole run's verdicts, as diagnose gives them (a low score under an optimizer
        # far outside the recipe: "no failure mode found" in a watch; h121).
        whole = {c.mode: c for c in run_verdicts(run, list(ruled.values()), recipe.read_run(
            run, self._doctor_config.settings_of_recipe()), self._doctor_config)}
        for rule in self._rules:
            params = self._params[rule.id]
            check = whole.get(rule.id, ruled[rule.id])
            verdict = check is not ruled[rule.id]  # the run's verdict, not the rule's alone
            prev = self.alerted.get(rule.id)
            if prev is None and not self._confirmed(check, final):
                fresh.append(check)
                checks.append(replace(check, status=Status.OK))  # held clear until confirmed
                continue
            episode = prev is not None and self._new_episode(check)
            if check.fired and (prev is None or check.status.rank > prev.severity.rank
                                or episode):
                check = self._raised(check if verdict else _in_unit(
                    check_rule(rule, run, params), unit), prev, run)
                if episode and prev is not None:
                    # A new episode is alerted as it begins, not as the mode's first.
                    check = replace(check, first_alert_step=run.last_step)
                alert = Alert(
                    mode=rule.id, severity=check.status, first_alert_step=check.first_alert_step,
                    onset_step=check.onset_step, summary=check.summary, step=run.last_step,
                    previous=prev.severity if prev is not None and not episode else None,
                    previous_first_alert_step=prev.first_alert_step if prev is not None else None,
                    remedies=check.remedies, run=run.name, source=run.source, step_unit=unit,
                    earlier_onset=prev.onset_step if episode and prev is not None else None,
                    episode_alert_step=check.episode_alert_step,
                )
                self.alerted[rule.id] = alert
                self._shown[rule.id] = check
                self.shown_at[rule.id] = run.last_step
                self._holds[rule.id] = _Hold(last_seen=run.last_step)
                self._refiring.pop(rule.id, None)  # raised: no longer waiting
                new.append(alert)
            elif prev is not None:
                fresh.append(replace(check, first_alert_step=prev.first_alert_step))
                cleared, check = self._held(check, prev, run, points)
                if cleared is not None:
                    new.append(cleared)
                checks.append(check)
                continue
            fresh.append(check)
            checks.append(check)
        self.checks = tuple(checks)
        self.run = run
        new = self._advise(run, new, points, fresh)
        stopped = self._stopped(run, unit)
        if stopped is not None:
            new.append(stopped)
        new.sort(key=lambda a: _step_order(a.first_alert_step))  # as the log raised them
        self.alerts.extend(new)
        return new

    def gone_with_log(self) -> list[Alert]:
        """Every raised finding, cleared because the log it was read from is no more: its
        path now holds another log (``Watcher``), which a fresh monitor reads anew. Its
        events stream then closes what it opened."""
        cleared = [replace(alert, severity=Status.OK, previous=alert.severity,
                           summary="its log was replaced by another, read anew",
                           last_seen_step=alert.step, clear_points=0, first_action=None,
                           root_cause=None, revised=False, earlier_onset=None)
                   for alert in self.alerted.values() if not alert.cleared]
        self.alerts.extend(cleared)
        return cleared

    def _stopped(self, run: Run, unit: str) -> Alert | None:
        """An alert, once, when the log shows its process stopped on an error (a traceback
        after the last metrics): a watched run that died had gone on being polled in
        silence, its last status standing. Its fix is what to do first while no finding
        was raised."""
        cause = stopped_cause(run, 0) if run.ending is not None else None
        if cause is None:
            self._pending_stop = None
            if self._stop_alerted:
                # Metrics after the traceback: the run went on (a caught exception printed),
                # or was launched again (a resume appended to the log).
                self._stop_alerted = False
                resumed = any(RELAUNCHED in n for n in run.notes)
                return Alert(mode=RUN_STOPPED, severity=Status.OK, first_alert_step=None,
                             onset_step=None, summary=(
                                 "the run was launched again after the stop (resumed)"
                                 if resumed else "the run went on after the traceback it "
                                 "printed: an exception it caught, not a stop"),
                             step=run.last_step, previous=Status.WARNING, run=run.name,
                             source=run.source, step_unit=unit)
            return None
        if not self.alerted:
            self.first_action = cause.first_action
        if self._stop_alerted:
            return None
        alert = Alert(mode=RUN_STOPPED, severity=Status.WARNING, first_alert_step=run.last_step,
                      onset_step=run.last_step, summary=cause.summary, step=run.last_step,
                      run=run.name, source=run.source, step_unit=unit,
                      first_action=cause.first_action, root_cause=RUN_STOPPED)
        if self.hold_stop:
            self._pending_stop = alert
            return None
        self._stop_alerted = True
        return alert

    def release_stop(self) -> list[Alert]:
        """The stop held (``hold_stop``), now that the log stayed quiet after it; [] when
        none is held."""
        alert, self._pending_stop = self._pending_stop, None
        if alert is None or self._stop_alerted:
            return []
        self._stop_alerted = True
        self.alerts.append(alert)
        return [alert]

    def awaiting(self) -> bool:
        """Whether a cleared warning fired again at the last poll and waits for the next to
        be raised (``evaluate(final=True)`` raises it)."""
        return any(self._refiring.values())

    def _confirmed(self, check: Check, final: bool) -> bool:
        """Whether a finding not raised now may be: a warning that cleared before is raised
        again at the second poll in a row that fires it (one poll is the flicker the clear
        waited out: a callback checking every 10 steps had raised, cleared and raised a
        warning at steps 50, 80 and 90, trial 43; and, 40 steps after its clear, no_progress
        at 120, 160 and 200 on a task out of reach, helper-57). A critical is raised at
        once."""
        mode = check.mode
        if not check.fired:
            self._refiring.pop(mode, None)
            return True
        if check.status is not Status.WARNING or mode not in self._cleared_at:
            return True
        self._refiring[mode] = self._refiring.get(mode, 0) + 1
        # The last poll of a complete run has no next one: the whole log's verdict stands
        # (trial 81: a watch ended "healthy" on a folder every one-shot reading called warning).
        return final or self._refiring[mode] >= 2

    def _advise(self, run: Run, new: list[Alert], points: int, fresh: Sequence[Check]
                ) -> list[Alert]:
        """``new`` with what to do first: the root cause's first action on the checks as the
        rules judge this poll (``fresh``: a held finding's text is as it was when raised, its
        evidence too), as diagnose would give it (a live alert had carried its own finding's
        remedy: "dynamic sampling" where the reward function was the cause); and an advice
        event when, with no new finding, the root cause changed and held for
        ``ADVICE_HOLD`` logged points (a first action never revised had said "dynamic
        sampling" for 69 logs)."""
        raised = [a for a in new if not a.news_only]
        if not self.alerted:  # nothing raised (or everything cleared): nothing to advise
            self.first_action, self._advised, self._candidate = None, None, None
            self._pending = None
            return new
        if not any(c.fired for c in fresh):
            return new  # held findings the rules did not raise at this poll: advice stands
        diagnosis = assemble(run, fresh, self._doctor_config)
        cause = diagnosis.root_cause
        if cause is None:
            return new
        self.first_action = cause.first_action
        rollback = diagnosis.plan[0].rollback_step if diagnosis.plan else None
        key = (*_advice_key(cause.mode, cause.knob, cause.first_action), str(rollback))
        if raised:
            self._advised, self._candidate, self._pending = key, None, None
            out = [replace(a, first_action=cause.first_action, root_cause=cause.cause or cause.mode)
                   if not a.news_only else a for a in new]
            for a in out:
                if not a.news_only:
                    self.alerted[a.mode] = a
            return out
        if key == self._advised:
            self._candidate, self._pending = None, None
            return new
        # Counted from the poll that first showed it: a callback checking every 10 steps
        # had revised at once on each poll's root ("easier prompts" at step 60, "look at the
        # groups" at 70, "easier prompts" at 80: trial 43), however briefly it held.
        held = (points + self._candidate[1]) if (
            self._candidate and self._candidate[0] == key) else 0
        self._candidate = (key, held)
        shown = self._shown.get(cause.mode)
        prev = self.alerted.get(cause.mode)
        revised = Alert(
            mode=cause.mode, severity=shown.status if shown is not None else Status.WARNING,
            first_alert_step=prev.first_alert_step if prev is not None else None,
            onset_step=cause.step, summary=cause.summary, step=run.last_step,
            run=run.name, source=run.source, step_unit=step_unit(run),
            first_action=cause.first_action, root_cause=cause.cause or cause.mode,
            revised=True)
        if held < ADVICE_HOLD:
            self._pending = revised
            return new
        self._advised, self._candidate, self._pending = key, None, None
        return [*new, revised]

    def settle(self) -> list[Alert]:
        """At the end of a watch or of training: the revised advice still waiting out its
        hold, so the last word printed is the diagnosis' on the whole log (sclr_l3's last
        status had said "check the reward function" while its last alert said "dynamic
        sampling")."""
        pending, self._pending = self._pending, None
        if pending is None:
            return []
        self._advised = self._candidate[0] if self._candidate is not None else None
        self._candidate = None
        self.alerts.append(pending)
        return [pending]

    def _held(self, check: Check, prev: Alert, run: Run, points: int
              ) -> tuple[Alert | None, Check]:
        """A finding raised before, at a poll that does not raise it anew: (the cleared alert,
        if it has now been clear long enough, and) the check as shown."""
        mode = check.mode
        shown, hold = self._shown[mode], self._holds[mode]
        if check.fired:
            hold.last_seen, hold.clear = run.last_step, 0
        elif check.status is Status.OK:
            hold.clear += points
        if check.fired and check.status.rank >= shown.status.rank:
            hold.below = 0
        elif check.status is not Status.SKIPPED:  # skipped says nothing: the count waits
            hold.below += points
        if check.status is Status.OK and hold.clear >= self._clear_after(mode, run) and not any(
                _stirring(run, m, self.clear_after) for m in _signals(check)):
            del self._shown[mode], self._holds[mode], self.alerted[mode]
            self.shown_at.pop(mode, None)
            self._cleared_at[mode] = run.last_step
            return Alert(
                mode=mode, severity=Status.OK, first_alert_step=prev.first_alert_step,
                onset_step=shown.onset_step, summary=check.summary, step=run.last_step,
                previous=shown.status, previous_first_alert_step=prev.first_alert_step,
                run=run.name, source=run.source, step_unit=step_unit(run),
                last_seen_step=hold.last_seen, clear_points=hold.clear), check
        if check.fired and check.status is not shown.status and (
                check.status.rank > shown.status.rank or hold.below >= self.clear_after):
            # Back up to what was alerted (at once), or eased for long enough: shown anew,
            # the mode's first alert kept.
            check = _onset_by(replace(check, first_alert_step=prev.first_alert_step))
            self._shown[mode] = check
            self.shown_at[mode] = run.last_step
            below, hold.below = hold.below, 0
            if check.status.rank >= prev.severity.rank:
                return None, check
            # Eased below what was alerted: said once, and what a return is measured against
            # (critical again is an escalation, alerted).
            eased = Alert(
                mode=mode, severity=check.status, first_alert_step=prev.first_alert_step,
                onset_step=check.onset_step, summary=check.summary, step=run.last_step,
                previous=prev.severity, previous_first_alert_step=prev.first_alert_step,
                remedies=check.remedies, run=run.name, source=run.source,
                step_unit=step_unit(run), last_seen_step=hold.last_seen, clear_points=below,
                eased=True)
            self.alerted[mode] = eased
            return eased, check
        if check.status is not shown.status:
            self.clearing[mode] = Clearing(
                mode=mode, shown=shown.status, now=check.status,
                points=hold.clear if check.status is not Status.WARNING else hold.below,
                of=self._clear_after(mode, run), last_seen_step=hold.last_seen)
        return None, shown  # held: as it was shown

    def _clear_after(self, mode: str, run: Run) -> int:
        """Clear logged points a raised finding needs before it is cleared (see the module's
        docstring)."""
        if mode in _WHOLE_LOG_VERDICTS:
            return max(self.clear_after, len(run.steps) // 4)
        return self.clear_after

    def _new_episode(self, check: Check) -> bool:
        """Whether a raised finding, held while its rule found it clear on ``NEW_EPISODE``
        logged points and half of ``clear_after`` or more (the run came back: held only by the
        hysteresis), fires again
        for an episode that began after the rule last raised it: a new alert, not silence
        under the old one."""
        hold = self._holds.get(check.mode)
        return (check.fired and hold is not None
                and hold.clear >= max(NEW_EPISODE, self.clear_after // 2)
                and hold.last_seen is not None and check.onset_step is not None
                and check.onset_step > hold.last_seen)

    def _raised(self, check: Check, prev: Alert | None, run: Run) -> Check:
        """A finding newly raised or escalated, as it is shown: an escalation keeps the mode's
        first alert; a finding back after it cleared is first alerted after that."""
        first = check.first_alert_step
        if prev is not None and prev.first_alert_step is not None:
            first = prev.first_alert_step
        elif check.mode in self._cleared_at:
            cleared = self._cleared_at[check.mode]
            if first is None or (cleared is not None and first <= cleared):
                first = run.last_step
        return _onset_by(replace(check, first_alert_step=first))

    def diagnosis(self) -> Diagnosis | None:
        """The latest checks as a Diagnosis (first-alert steps from the alerts raised)."""
        run = self.run
        if run is None:
            return None
        if self._pending_stop is not None:
            run = replace(run, ending=None)  # a stop held until the log goes quiet: not yet
        return replace(assemble(run, self.checks, self._doctor_config),
                       config=self._settings.applied_config())

    def severities(self) -> dict[str, int]:
        """0 ok / 1 warning / 2 critical per mode that could be checked (skipped ones left out)."""
        return {c.mode: c.status.rank for c in self.checks if c.status is not Status.SKIPPED}


#: Logged points (and half of ``clear_after``) a held finding's rule must have found it clear
#: for a later firing to be a new episode, alerted anew: a recovery, not a flicker the
#: hysteresis holds through.
NEW_EPISODE = 5

#: Logged points a changed root cause must hold, from the poll that first showed it, before
#: the advice is revised (so at two polls at least): a root that flips back at the next poll
#: is noise, not news.
ADVICE_HOLD = 5


def _signals(check: Check) -> list[str]:
    """The signals a finding is read from: its key metric, those its rule draws and those it
    needs (the reward aside: most rules read it, and it moves on its own)."""
    try:
        rule = rule_named(check.mode)
    except KeyError:
        return [check.key_metric] if check.key_metric else []
    drawn = list(getattr(rule.plot, "metrics", ()) or ())
    read = [*rule.requires, *(m for group in rule.requires_any for m in group)]
    return [m for m in dict.fromkeys([check.key_metric, *drawn, *read])
            if m and m != Metric.REWARD_MEAN.value]


#: Findings whose check judges the log as a whole, turning with its length.
_WHOLE_LOG_VERDICTS = frozenset({"no_progress"})


def _stirring(run: Run, metric: str | None, window: int) -> bool:
    """The newest logged value of a finding's signal far outside its calm stretch (more than
    5 median deviations from the median of the ``window`` points before it): the poll where
    the signal moves again is no time to call it clear (helper-67: length_hacking cleared at
    step 145, where the truncated share had just jumped to 52%, and was raised again at 160).
    The clear waits a poll."""
    if not metric:
        return False
    _, v = series(run, metric)
    if len(v) < window + 1:
        return False
    calm = v[-window - 1:-1]
    centre = float(np.median(calm))
    spread = float(np.median(np.abs(calm - centre)))
    return abs(float(v[-1]) - centre) > 5 * max(spread, 1e-9 + 0.01 * abs(centre))


def _advice_key(mode: str, knob: dict[str, Any] | None, first_action: str) -> tuple[str, ...]:
    """What makes two first actions the same advice: the root cause's mode, the knob it
    turns, and the action's kind (its first two words: "roll back", "check the", ...), not the
    numbers that move at every poll."""
    return (mode, str((knob or {}).get("name") or ""), " ".join(first_action.split()[:2]))


def _step_order(step: int | None) -> tuple[bool, int]:
    """Sort key: by step, an unknown step last."""
    return step is None, step or 0


def by_first_alert(checks: Sequence[Check]) -> list[Check]:
    """The findings among ``checks``, in the order they were first alerted."""
    return sorted((c for c in checks if c.fired), key=lambda c: _step_order(c.first_alert_step))


def _onset_by(check: Check) -> Check:
    """A finding alerted at some step had begun by then: its onset is no later, and its
    sentence says so where it names a later step ("onset 3 ... from step 6" read as two
    onsets), as diagnose's does. An earlier episode that raised it (an incident at or before
    the alert) keeps the onset of the episode the sentence describes, as diagnose's does."""
    first, onset = check.first_alert_step, check.onset_step
    if first is None or onset is None or first >= onset:
        return check
    if any(i.step <= first for i in check.incidents):
        return check
    summary = check.summary
    if f"step {step_text(first)}" not in summary:
        summary += f"; raised from step {step_text(first)}"
    return replace(check, onset_step=first, summary=summary)


def step_unit(run: Run) -> str:
    """What ``run``'s steps count: "log line" for a console log with no step in it (its
    metric lines numbered in order until the run's end tells the trainer steps), else "step"."""
    from grpo_doctor.importers.console import LOG_LINE_STEPS

    return "log line" if LOG_LINE_STEPS in run.notes else "step"


def _in_unit(check: Check, unit: str) -> Check:
    """``check`` with its text in ``unit``: on a run numbered by log lines, a summary or a
    remedy that says "step N" would pass a log line off as a trainer step."""
    if unit == "step":
        return check
    return replace(check, summary=in_log_lines(check.summary),
                   remedies=tuple(in_log_lines(r) for r in check.remedies))


def _kept(before: Any, now: Any) -> bool:
    """Whether every value ``before`` held is still in ``now``: a cell empty before may have
    been filled since (a tracker's row written a metric at a time, read mid-step). Any other
    change is the log rewritten. (A watch of an MLflow store had counted each poll's whole
    log as new points: "clear for 274 logged points" at step 274, and a finding cleared and
    raised again 7 points later; trial 79.)"""
    if now.equals(before):
        return True
    try:
        b = before.to_numpy(dtype=float, na_value=np.nan)
        n = now.to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError):
        return False
    logged = ~np.isnan(b)
    return bool(np.array_equal(b[logged], n[logged]))
