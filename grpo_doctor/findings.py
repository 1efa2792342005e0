"""What a diagnosis says: one Check per failure mode, gathered in a Diagnosis.

Every output format (terminal, JSON, Markdown, JUnit, HTML) renders from ``to_dict()``, so
they can never disagree. The JSON form is a versioned contract (``SCHEMA_VERSION``): version 2
only added keys to version 1 (``incidents`` per check; ``notes``, ``root_cause``, ``plan``,
``hints``, ``setup`` and ``status_reason`` at the top; ``inconclusive`` as a status;
``root_cause.knob``/``setup`` and ``plan[].treats``/``knob``/``rollback_step`` later), so
version-1 readers keep working.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from grpo_doctor import display
from grpo_doctor.metrics import RL_METRICS, is_reward_component
from grpo_doctor.text import agree, plural

SCHEMA_VERSION = 2

#: The mode that checks for NaN/inf: it runs on any log, so it is no evidence of health alone.
NAN_CHECK = "numerical_failure"
#: The root cause of a run whose process stopped on an error (a traceback ends its log), when
#: no finding explains it: no check's, the engine's (``root_cause.stopped_cause``).
RUN_STOPPED = "run_stopped"
#: What broke, when it is no failure mode but an event a finding saw (``RootCause.cause``):
#: the finding names the symptom, these the event.
WEIGHTS_RESET = "weights_reset"
REWARD_REWEIGHTED = "reward_reweighted"
TERM_ADDED = "reward_term_added"
BUDGET_CUT = "completion_budget_cut"
STOP_CHANGED = "completion_stop_changed"
LR_JUMP = "lr_jump"
SCORER_STOPPED = "scorer_stopped"
SCORER_FAILING = "scorer_failing"
DATA_ORDER = "data_order"
SCORES_MISSING = "scores_missing"
SAMPLER_CHANGED = "sampler_changed"
STOPS_EARLY = "generation_stops_early"
BUDGET_TOO_SMALL = "completion_budget_too_small"
NEVER_STOPS = "generation_never_stops"
#: Every such name (``grpo-doctor explain`` says each in words).
CAUSES = (WEIGHTS_RESET, REWARD_REWEIGHTED, TERM_ADDED, BUDGET_CUT, STOP_CHANGED, LR_JUMP,
          SCORER_STOPPED, SCORER_FAILING, DATA_ORDER, BUDGET_TOO_SMALL, NEVER_STOPS,
          SCORES_MISSING, SAMPLER_CHANGED, STOPS_EARLY)
#: Checks (besides the NaN check) that must have judged a run before it is called healthy.
MIN_CHECKS_FOR_HEALTHY = 2
#: Logged steps a run needs before silence means health: the trend tests need 8 points and
#: have little power below 20; the 0/1 zero-std signal needs 20; a level read off a handful
#: of steps says little (an 11-step excerpt of a run is not a healthy run).
MIN_STEPS_FOR_HEALTHY = 20


class Status(str, Enum):
    OK = "ok"
    WARNING = "warning"
    CRITICAL = "critical"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Status.SKIPPED: -1, Status.OK: 0, Status.WARNING: 1, Status.CRITICAL: 2}

#: A run's verdict, worst first, and its rank (higher is worse). The one severity order:
#: everything that ranks runs or checks reads it from here. "error" is an audited source that
#: could not be read at all, worse than any verdict.
RUN_STATUSES = ("critical", "warning", "inconclusive", "healthy")
RUN_SEVERITY = {s: len(RUN_STATUSES) - 1 - i for i, s in enumerate(RUN_STATUSES)}
SOURCE_SEVERITY = {"error": len(RUN_STATUSES), **RUN_SEVERITY}


def check_rank(severity: str) -> int:
    """The rank of a check severity named by a user ("warning" or "critical")."""
    if severity not in (Status.WARNING.value, Status.CRITICAL.value):
        raise ValueError(f"must be critical or warning, got {severity!r}")
    return Status(severity).rank


@dataclass(frozen=True)
class Incident:
    """An episode in the run's history: a metric crossing a threshold, whether or not the run
    came back. ``recovered_step`` is the first logged step back on the safe side (None: it
    never came back within the log)."""

    metric: str
    step: int  # where the episode began
    peak_step: int
    peak: float
    threshold: float | None  # None: an earlier episode of a finding, judged by its rule
    recovered_step: int | None
    summary: str
    severity: Status = Status.WARNING

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step, "peak_step": self.peak_step, "peak": self.peak,
            "threshold": self.threshold, "recovered_step": self.recovered_step,
            "metric": self.metric, "severity": self.severity.value, "summary": self.summary,
        }


@dataclass(frozen=True)
class Check:
    """The outcome of one rule on one run."""

    mode: str
    status: Status
    summary: str
    onset_step: int | None = None
    first_alert_step: int | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    remedies: tuple[str, ...] = ()
    reason: str | None = None
    key_metric: str | None = None  # what a sparkline or chart of this check shows
    incidents: tuple[Incident, ...] = ()
    #: When an earlier episode raised the finding first (``first_alert_step`` before the
    #: onset): where a monitor raised it again for the episode the summary describes.
    episode_alert_step: int | None = None

    @property
    def fired(self) -> bool:
        return self.status in (Status.WARNING, Status.CRITICAL)

    @property
    def _alert_of_earlier_episode(self) -> bool:
        return (self.first_alert_step is not None and self.onset_step is not None
                and self.first_alert_step < self.onset_step)

    @property
    def shown_alert_step(self) -> int | None:
        """The first alert a report shows beside the onset: this episode's own when an
        earlier episode, which cleared, raised the finding first (the earlier one is an
        incident, shown with its step). Every report shows this one (the Markdown table had
        shown 40 where the terminal showed 150 for one finding; nu33)."""
        if self._alert_of_earlier_episode and self.episode_alert_step is not None:
            return self.episode_alert_step
        return self.first_alert_step

    @property
    def first_alert_words(self) -> str:
        """'first alert M', said to belong to an earlier episode when it came before the
        onset (the onset is that of the episode the sentence describes)."""
        step = self.shown_alert_step
        shown = "–" if step is None else f"{step:,}"
        earlier = self._alert_of_earlier_episode and self.episode_alert_step is None
        if earlier:
            return f"first alert {shown} (an earlier episode)"
        if step is not None and self.onset_step is not None and step < self.onset_step:
            # Raised again after the earlier episode cleared, and held while this one built
            # up to the step its sentence dates: "onset 121 · first alert 27" had read
            # backwards (h119).
            return f"first alert {shown} (raised as it built up)"
        return f"first alert {shown}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "status": self.status.value,
            "onset_step": self.onset_step,
            "first_alert_step": self.first_alert_step,
            "episode_alert_step": self.episode_alert_step,
            "summary": self.summary,
            "evidence": self.evidence,
            "remedies": list(self.remedies),
            "reason": self.reason,
            "incidents": [i.to_dict() for i in self.incidents],
        }


#: Steps between logged points from which a short log is a sparse one.
_SPARSE_EVERY = 5


@dataclass(frozen=True)
class RunInfo:
    name: str
    source: str
    format: str
    first_step: int | None
    last_step: int | None
    n_steps: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "source": self.source, "format": self.format,
            "first_step": self.first_step, "last_step": self.last_step, "n_steps": self.n_steps,
        }


@dataclass(frozen=True)
class RootCause:
    """The earliest finding that explains the others, and the one thing to do first.

    ``knob`` is the setting outside the recipe that caused it, when the config names one:
    {"name", "value", "recipe", "source"}. ``setup`` is True when the run was wrong from its
    first logged step (a setup problem, not a training dynamic). ``cause`` names what broke
    when it is no failure mode of the list but an event the finding ``mode`` saw
    (``weights_reset`` seen as an entropy blow-up), None when the finding is the cause."""

    mode: str
    step: int | None
    summary: str
    first_action: str
    knob: dict[str, Any] | None = None
    setup: bool = False
    cause: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "step": self.step, "summary": self.summary,
                "first_action": self.first_action, "knob": self.knob,
                "setup_problem": self.setup, "cause": self.cause}


#: What a plan item treats: the root cause, a finding the root cause explains (fixing the
#: cause should clear it), or a finding of its own.
TREATS = ("root_cause", "consequence", "finding")


@dataclass(frozen=True)
class PlanItem:
    """One action of the merged plan, the findings it answers and what it treats."""

    action: str
    modes: tuple[str, ...]
    treats: str = "root_cause"
    knob: str | None = None  # the setting it changes (the recipe's name), if any
    rollback_step: int | None = None  # the step it rolls back to before, if it does

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "for": list(self.modes), "treats": self.treats,
                "knob": self.knob, "rollback_step": self.rollback_step}


@dataclass(frozen=True)
class Diagnosis:
    run: RunInfo
    metrics: dict[str, str]
    checks: tuple[Check, ...]
    notes: tuple[str, ...] = ()
    root_cause: RootCause | None = None
    plan: tuple[PlanItem, ...] = ()
    hints: tuple[str, ...] = ()  # unmapped columns that look like a metric a check needs
    #: The configuration applied ({"file", "ignored", "overrides"}; see DoctorConfig.applied),
    #: None when the caller did not record it.
    config: dict[str, Any] | None = None
    #: The run's settings read from its config, each with its verdict against the chapter's
    #: recipe (``recipe.Reading.to_dict``): knobs the config does not set are left out.
    setup: tuple[dict[str, Any], ...] = ()
    #: On a log too short to judge: what every logged step shows at an extreme (every
    #: completion cut, a gradient of 0), said beside the inconclusive verdict (``signs``).
    signs: tuple[str, ...] = ()

    @property
    def judged(self) -> tuple[Check, ...]:
        """The checks that could judge the run (ran, and are not the NaN check)."""
        return tuple(c for c in self.checks
                     if c.status is not Status.SKIPPED and c.mode != NAN_CHECK)

    @property
    def status(self) -> str:
        """critical | warning | healthy | inconclusive: healthy needs evidence, not silence."""
        worst = max((c.status.rank for c in self.checks), default=0)
        if worst == 2:
            return "critical"
        if worst == 1:
            return "warning"
        if self.root_cause is not None and self.root_cause.mode == RUN_STOPPED:
            return "warning"  # training looked sound, but the run died: something to fix
        if self.run.n_steps < MIN_STEPS_FOR_HEALTHY:
            return "inconclusive"
        if len(self.judged) < MIN_CHECKS_FOR_HEALTHY and not self.selected_all_judged:
            return "inconclusive"
        if self._learning_unproven is not None:
            return "inconclusive"  # too short to judge progress, and it did not improve
        return "healthy"

    @property
    def _learning_unproven(self) -> Check | None:
        """The progress check, when it says nothing shows the run learns: too short to judge
        and not improving, or judged and "not improving, but not going backwards"."""
        return next((c for c in self.checks if c.evidence.get("learning_unproven")
                     or c.evidence.get("unsettled")), None)

    @property
    def selected_all_judged(self) -> bool:
        """The user chose the checks (``--select``) and every one of them judged the run:
        healthy then means healthy for those checks (a note says so), not "too few checks"."""
        chosen = (self.config or {}).get("selected")
        return bool(chosen) and bool(self.checks) and all(
            c.status is not Status.SKIPPED for c in self.checks)

    @property
    def status_reason(self) -> str | None:
        """Why a run is inconclusive (None otherwise)."""
        if self.status != "inconclusive":
            return None
        judged = [c.mode for c in self.judged]
        unproven = self._learning_unproven
        if unproven is not None and len(judged) >= MIN_CHECKS_FOR_HEALTHY:
            shown = unproven.evidence.get("learning_unproven") or unproven.summary
            return f"no failure mode fired, but nothing shows it learns: {shown}"
        skipped = [c for c in self.checks if c.status is Status.SKIPPED]
        short = sum(1 for c in skipped if "at least" in (c.reason or ""))
        if self.run.n_steps < MIN_STEPS_FOR_HEALTHY and len(judged) >= MIN_CHECKS_FOR_HEALTHY:
            first, last, n = self.run.first_step, self.run.last_step, self.run.n_steps
            every = (last - first) / (n - 1) if first is not None and last is not None and (
                n > 1) else 0
            # A whole run logged sparsely (logging_steps 25: 8 points over 200 steps) is not a
            # short run: what to change is how often it logs (trial 54).
            sparse = (f"; it logged once every {every:g} steps over steps {first}-{last}: log "
                      "every step or few (TRL's logging_steps 1-5) to judge a run this long"
                      if every >= _SPARSE_EVERY and float(every).is_integer() else "")
            return (f"{plural(self.run.n_steps, 'logged step')} "
                    f"{'is' if self.run.n_steps == 1 else 'are'} too few to call it healthy "
                    f"(at least {MIN_STEPS_FOR_HEALTHY} needed){sparse}")
        ran = (f"only {plural(len(judged), 'check')} could judge it ({', '.join(judged)})" if judged
               else "no check could judge it")
        if not RL_METRICS & set(self.metrics) and not any(
                is_reward_component(m) for m in self.metrics):
            # A supervised log: its reason first (trial 65: an SFT stage's loss read as a GRPO
            # run whose metrics were missing).
            ran = f"no RL metric logged (a supervised log?): {ran}"
        why = []
        if len(skipped) - short:
            unlogged = len(skipped) - short
            why.append(f"{unlogged} {agree(unlogged, 'needs', 'need')} metrics that are not "
                       "logged")
        if short:
            why.append(f"{short} need a longer log ({plural(self.run.n_steps, 'logged step')})")
        if not self.checks:
            why.append("every check was ignored")
        return ran + (f": {', '.join(why)}" if why else "")

    @property
    def findings(self) -> tuple[Check, ...]:
        """The checks that fired, in the order they began (the reports' order; ``checks``
        keeps the rules' order)."""
        fired = [c for c in self.checks if c.fired]
        return tuple(sorted(fired, key=lambda c: c.onset_step if c.onset_step is not None
                            else float("inf")))

    def __repr__(self) -> str:
        # Short: a notebook cell showing a Diagnosis prints this, not kilobytes of evidence.
        found = ", ".join(f"{c.mode}:{c.status.value}@{c.onset_step}" for c in self.findings)
        return f"Diagnosis(run={self.run.name!r}, status={self.status!r}, findings=[{found}])"

    def _repr_markdown_(self) -> str | None:
        """The Markdown report, which Jupyter shows for a Diagnosis at the end of a cell (the
        reporter is registered from the package's top: see ``grpo_doctor.display``)."""
        return display.markdown(self)

    def check(self, mode: str) -> Check:
        for c in self.checks:
            if c.mode == mode:
                return c
        raise KeyError(mode)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "run": self.run.to_dict(),
            "metrics": dict(self.metrics),
            "checks": [c.to_dict() for c in self.checks],
            "status": self.status,
            "status_reason": self.status_reason,
            "notes": list(self.notes),
            "root_cause": self.root_cause.to_dict() if self.root_cause else None,
            "plan": [p.to_dict() for p in self.plan],
            "hints": list(self.hints),
            "config": self.config,
            "setup": list(self.setup),
            "signs": list(self.signs),
        }
