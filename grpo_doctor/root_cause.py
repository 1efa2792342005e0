"""The probable root cause of a failing run, and one plan of action.

Findings and the incidents in their history go on a timeline by step. The probable root cause
is the earliest event that can explain every critical finding after it (``CAN_CAUSE``, the
domain's causal chains: a blown-up update explains everything after it; entropy collapse
explains equal-reward groups; reward lags everything). A critical finding before it that it
cannot explain is a problem of its own (its remedies are in the plan); but a warning is never
named over a critical finding that began before or with it and that it cannot explain. When no
event explains them all, the earliest of the worst findings is named. When no setting outside
the recipe explains that root and it left the policy usable (a collapse, not a blow-up), a
critical finding that a setting far outside the recipe primarily causes is named instead: the
config is evidence (a group of 2 behind equal-reward groups, beside an entropy fall).

What to do first answers that cause, in this order of evidence:

1. a learning-rate warm-up that carried the lr past where the reward peaked (the lr then);
2. a setup problem, the run wrong from its first logged step: completions cut at the cap from
   the start (raise the budget), NaN from the first update or a policy that never moved (dtype,
   loss scaling, optimizer epsilon; never clipping), KL high at the first step (the
   reference); or most completions cut at the cap over the first logs while the task's own
   reward term never fired (the budget, even after the policy learned to stop early);
3. the run's config: a knob outside the chapter's recipe (``recipe``) that the chapter links to
   the root cause's mode, with its value, the recipe's and why, after a roll-back to a logged
   step before the cause (or a restart from the initial model when the run was wrong from its
   first logged step; neither for a warning on a run that learns all the same);
4. a blow-up at one step: roll back before it, then smaller updates;
5. the root finding's own first remedy.

The plan: that first action, the other settings outside the recipe that the chapter links to
the cause, the root cause's remedies, then findings of their own, then the remedies of the
findings the root cause explains (marked ``consequence``: fixing the cause should clear them).
One change per knob (the strongest asked for), one roll-back, nothing that sets a knob to the
value it already has. Pure functions of the checks, the run's metric store and its config.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from grpo_doctor import recipe
from grpo_doctor.findings import (
    BUDGET_CUT,
    BUDGET_TOO_SMALL,
    DATA_ORDER,
    LR_JUMP,
    NEVER_STOPS,
    REWARD_REWEIGHTED,
    RUN_STOPPED,
    SAMPLER_CHANGED,
    SCORER_FAILING,
    SCORER_STOPPED,
    SCORES_MISSING,
    STOP_CHANGED,
    STOPS_EARLY,
    TERM_ADDED,
    WEIGHTS_RESET,
    Check,
    PlanItem,
    RootCause,
    Status,
)
from grpo_doctor.metrics import Metric
from grpo_doctor.resumed import span_of
from grpo_doctor.rules import knobs
from grpo_doctor.rules.entropy_collapse import RULE as ENTROPY_RULE
from grpo_doctor.rules.incidents import aftermath
from grpo_doctor.rules.length_hacking import budget_factor
from grpo_doctor.rules.numerical_failure import other_model, other_models
from grpo_doctor.rules.points import end_size, head_tail, late_points, series
from grpo_doctor.rules.signals import (
    LrBurst,
    Reweighting,
    back_to_start,
    component_role,
    components,
    configured_terms,
    configured_weight,
    flipped_terms,
    learning,
    lr_burst,
    reward_at_best,
    reward_progress,
    reweighting,
    scores_missing,
    task_solved,
    term_switched_on,
    unpaid_terms,
    unshuffled,
)
from grpo_doctor.signs import NEAR_RANDOM_ENTROPY, policy_moved
from grpo_doctor.store import SAVED_CHECKPOINTS, Run
from grpo_doctor.text import fmt, headline, knob_value, plural, step_text, without_mode_name
from grpo_doctor.trends import rolling_median, step_noise

_ALL = frozenset({
    "numerical_failure", "entropy_collapse", "advantage_collapse", "kl_drift",
    "likelihood_displacement", "grad_explosion", "ratio_instability", "reward_hacking",
    "length_hacking", "format_gaming", "tool_spam", "tool_failure", "reward_overfit",
    "entropy_blowup", "no_learning_signal", "no_progress",
})
#: What each mode can bring about later in a run (besides itself).
CAN_CAUSE: dict[str, frozenset[str]] = {
    # A blown-up update moves the policy anywhere: everything can follow.
    "grad_explosion": _ALL,
    "kl_drift": _ALL,
    "numerical_failure": _ALL,
    "ratio_instability": _ALL,
    "likelihood_displacement": frozenset({
        "entropy_blowup", "grad_explosion", "numerical_failure", "reward_overfit",
        "no_learning_signal", "ratio_instability", "length_hacking", "kl_drift",
        "advantage_collapse", "no_progress"}),
    "entropy_blowup": frozenset({
        "length_hacking", "reward_overfit", "no_learning_signal", "advantage_collapse",
        "grad_explosion", "numerical_failure", "kl_drift", "likelihood_displacement",
        "ratio_instability", "no_progress"}),
    "entropy_collapse": frozenset({
        "advantage_collapse", "length_hacking", "no_learning_signal", "reward_overfit",
        "format_gaming", "likelihood_displacement", "grad_explosion", "ratio_instability",
        "no_progress"}),
    "reward_hacking": frozenset({
        "kl_drift", "length_hacking", "format_gaming", "reward_overfit", "tool_spam",
        "entropy_collapse", "advantage_collapse", "no_progress"}),
    "format_gaming": frozenset({"reward_hacking", "reward_overfit", "length_hacking",
                                "advantage_collapse", "entropy_collapse", "kl_drift",
                                "no_progress"}),
    # Completions cut at the cap or collapsed to a few tokens hold no answer: every group
    # scores alike (zero advantage), the reward falls, and nothing is left to learn from.
    "length_hacking": frozenset({"advantage_collapse", "reward_overfit", "reward_hacking",
                                 "no_learning_signal", "no_progress"}),
    # Most groups equal: the grad norm sits near 0 and jumps on the few batches with signal,
    # so spikes over that near-zero level follow from the collapse.
    "advantage_collapse": frozenset({"no_learning_signal", "reward_overfit", "no_progress",
                                     "grad_explosion"}),
    "no_learning_signal": frozenset({"advantage_collapse", "reward_overfit", "length_hacking",
                                     "entropy_collapse", "no_progress"}),
    # A call-rate reward farmed moves the policy as any gamed reward does; tool output's
    # long-tail tokens are where the chapter's likelihood displacement starts.
    "tool_spam": frozenset({"reward_hacking", "length_hacking", "reward_overfit", "kl_drift",
                            "entropy_collapse", "advantage_collapse", "format_gaming",
                            "likelihood_displacement", "ratio_instability", "no_progress"}),
    # A tool that never answers: the agent answers without it or farms the calls a reward
    # pays for, and nothing of the task is learned.
    "tool_failure": frozenset({"tool_spam", "format_gaming", "advantage_collapse",
                               "entropy_collapse", "no_progress", "reward_hacking",
                               "length_hacking", "reward_overfit", "no_learning_signal"}),
    "reward_overfit": frozenset(),
    "no_progress": frozenset(),
}
#: At one step, the more upstream mode is the cause. Reward design (hacking, format gaming)
#: comes before the KL drift it drives.
_ORDER = ("grad_explosion", "numerical_failure", "tool_failure", "reward_hacking",
          "format_gaming", "kl_drift", "ratio_instability", "likelihood_displacement",
          "entropy_blowup", "entropy_collapse", "no_learning_signal", "tool_spam", "length_hacking",
          "advantage_collapse", "reward_overfit", "no_progress")
_RANK = {m: i for i, m in enumerate(_ORDER)}
#: Instead of a roll-back, for a run that broke and came back to solve its task.
_SOLVED_ANYWAY = "no roll-back: the run came through it and solved its task; for the next run"
#: How a finding's remedies say the run is fine as it goes (a convergence, not a failure).
_CALM = "nothing urgent"
_MORE_PROMPTS = "more, and more varied, training prompts, drawn as the evaluation's are"
#: What a policy destroyed by one update shows; their remedies cannot revive it.
_SYMPTOMS_OF_A_DEAD_RUN = frozenset({
    "advantage_collapse", "length_hacking", "reward_overfit", "entropy_collapse",
    "entropy_blowup", "format_gaming", "reward_hacking", "tool_spam", "no_progress"})
#: Modes that leave the policy damaged from their onset on: the checkpoints after it are
#: not worth continuing from (a collapse or a stall leaves them usable).
_DESTRUCTIVE = frozenset({
    "entropy_blowup", "grad_explosion", "kl_drift", "numerical_failure", "ratio_instability",
    "likelihood_displacement", "no_learning_signal"})
#: Modes a learning rate too high for the run can bring about.
_LR_MODES = frozenset({
    "entropy_collapse", "kl_drift", "grad_explosion", "ratio_instability", "numerical_failure",
    "likelihood_displacement", "entropy_blowup", "reward_overfit", "no_learning_signal",
    "advantage_collapse"})


@dataclass(frozen=True)
class Event:
    """A finding, or an incident in a finding's history, at the step it began."""

    step: int
    check: Check
    summary: str
    critical: bool
    incident: bool = False  # an episode in the finding's history (a blow-up at one step ...)
    recovered: bool = False  # an episode the run came back from (within the log)


def timeline(checks: Sequence[Check]) -> list[Event]:
    """Findings and their incidents in order of the step each began (upstream first at a
    tie)."""
    events = []
    for c in checks:
        if not c.fired:
            continue
        steps = set()
        for i in c.incidents:
            events.append(Event(i.step, c, i.summary, i.severity is Status.CRITICAL, True,
                                i.recovered_step is not None))
            if i.recovered_step is None:
                steps.add(i.step)  # an episode the run came back from is not the finding
        if c.onset_step is not None and c.onset_step not in steps:
            events.append(Event(c.onset_step, c, c.summary, c.status is Status.CRITICAL,
                                recovered=_cleared(c)))
    return sorted(events, key=lambda e: (e.step, _rank(e.check)))


def _rank(check: Check) -> int:
    """Upstream first at one step: a training set learned by heart before what it does to the
    policy."""
    if check.mode == "no_progress" and check.evidence.get("memorised"):
        return -1
    if check.mode in ("length_hacking", "tool_failure") and check.evidence.get(
            "truncated_from_start" if check.mode == "length_hacking" else "from_start"):
        return -1  # a setup problem from the first logs, before what was learned under it
    return _RANK.get(check.mode, 99)


def _converging(check: Check) -> bool:
    """A finding that says the run is converging (an entropy spent as the task is solved):
    it explains nothing that broke, and nothing about it is urgent."""
    return _calm(check) is not None


def _calm(check: Check) -> str | None:
    """The finding's "nothing urgent" remedy, when it has one."""
    return next((str(r) for r in check.remedies if str(r).startswith(_CALM)), None)


def _came_back(check: Check) -> bool:
    """A finding made only of episodes the run came back from, its level normal between
    them (KL spikes to 197 at one log and 0.4 at the next), that does not itself ask for a
    roll-back (a burst that held for several logs does)."""
    first = check.remedies[0] if check.remedies else None
    return (bool(check.evidence.get("episodes_only")) and bool(check.incidents)
            and all(i.recovered_step is not None for i in check.incidents)
            and not (isinstance(first, knobs.Remedy) and first.rollback_step is not None))


def _cleared(check: Check) -> bool:
    """A warning that says only that the run came back: its onset is that of an episode
    that ended within the log (a KL spike at step 71, back below the threshold at 72)."""
    return (check.status is Status.WARNING and bool(check.incidents)
            and all(i.recovered_step is not None for i in check.incidents)
            and check.onset_step in {i.step for i in check.incidents})


def root_cause_and_plan(run: Run, checks: Sequence[Check], setup: recipe.Setup | None = None
                        ) -> tuple[RootCause | None, tuple[PlanItem, ...]]:
    """The probable root cause (None when nothing fired) and the merged plan. ``setup``: the
    run's settings against the recipe (read from ``run.config`` when not given)."""
    if any(c.fired and c.mode != "no_progress" and not _cleared(c) for c in checks) and not any(
            c.fired and c.mode == "no_progress" and c.evidence.get("memorised") for c in checks):
        # "Not learning" is the verdict of last resort: beside a finding that names what
        # broke it says nothing more, and its remedies would only crowd the plan. (A one-step
        # spike the run came back from names nothing that stalled it.)
        checks = [c for c in checks if c.mode != "no_progress"]
    events = timeline(checks)
    if not events:
        return None, ()
    setup = setup if setup is not None else recipe.read_run(run)
    findings = [c for c in checks if c.fired]
    worst = [c for c in findings if c.status is Status.CRITICAL] or findings
    # An episode the run came back from is not the cause of what broke after it.
    # A convergence explains no critical finding (a ratio burst in a run that then solved its
    # task is that burst, not the entropy it spent solving it).
    critical = any(c.status is Status.CRITICAL for c in worst)
    root = next((e for e in events if _explains(e, worst) and not e.recovered
                 and not (critical and _converging(e.check))), None)
    if root is None:  # nothing explains everything: the earliest of the worst findings
        root = next(e for e in events if e.check in worst)
    unlearned = next((e for e in events if e.check.mode == "format_gaming" and not e.incident
                      and e.check in worst and _reward_never_fired(e.check)), None)
    if unlearned is not None and not root.critical:
        # The format learned while the task's own check never left its level: a warning
        # before it (an entropy fall of 27%) does not explain a task never learned, and its
        # knob would be advice about the wrong problem (trial 48: a prompt missing a number).
        root = unlearned
    root = _knob_explained(events, worst, setup, root)
    redefined = _redefined_near(run, events)
    if redefined is not None:
        # The reward's make-up changed where a finding began: what the reward did from there
        # is its definition's, so a finding that read it as the policy's (an entropy
        # "collapse" made critical by the reward's fall) is no root (h120: a penalty ramped
        # in over 40 steps read "beta 0 -> 0.01, the task is solved").
        root = redefined
    cheating = (_cheat_attempts(run, events) or _farmed_tools(events, worst)
                or _reward_exploited(events, worst))
    if cheating is not None and root.check.mode not in ("numerical_failure",):
        # The anti-cheat check caught the policy trying: whatever else is wrong, that is
        # what to look at first (a larger budget or a smaller step will not stop it).
        root = cheating
    stopped = next((e for e in events if e.check.evidence.get("scorer_stopped")
                    and e.check in worst), None)
    if stopped is not None and _at_resume(run, int(stopped.check.evidence["scorer_stopped"][
            "step"])) and run.changed_at_resume:
        stopped = None  # a change made at the resume moved the scores, not the scorer
    if stopped is not None and root.check.mode != "numerical_failure":
        # A reward term's scorer went down while the completions held: what broke is the
        # scorer, and what followed (equal groups, an entropy "collapse" the reward's fall made
        # critical) is its echo; an lr cut would be advice about a policy that was fine
        # (trial 53: "restart from the initial model, lr" beside a good checkpoint-100).
        # Dated at the drop it names, not where the crash's smoothed reward left its level.
        root = replace(stopped, step=int(stopped.check.evidence["scorer_stopped"]["step"]))
    jumped = _after_jump(run, events, worst) if cheating is None and stopped is None else None
    if jumped is not None:
        root, jump = jumped
        # What broke after the jump is dated from it: an entropy fall dated from step 1 (the
        # run sharpening as it learned) that the jump turned into a collapse read "a jump at
        # step 101; then entropy_collapse at step 1".
        root = replace(root, step=max(root.step, jump.step))
        lead = _jump_action(run, root, setup, jump)
    else:
        lead = _first_action(run, root, setup, checks)
    if lead.setup and root.step > events[0].step:
        # A setup problem was there from the first logs: it is dated there, with the length
        # finding that shows the budget when there is one. Not under another finding's name:
        # "advantage_collapse at step 5" headed a format-gaming sentence "from step 7" (and
        # audit's root was no finding it listed; helper-43).
        root = next((e for e in events if e.check.mode == "length_hacking"),
                    events[0] if events[0].check.mode == root.check.mode else root)
    if lead.dated is not None:
        root = replace(root, step=lead.dated)
    said = lead.summary or root.summary
    resumed = _knob_set_at_resume(run, lead)
    if resumed is not None and root.step < resumed[0]:
        # The setting named as the cause was in force from a resume only: what it caused
        # began there (trial 81: beta 0 -> 1 at a resume at step 161 read "no_progress at
        # step 1", beside a note saying the resume changed it).
        root = replace(root, step=resumed[0])
        said += f" (in force from the resume at step {step_text(resumed[0])}: {resumed[1]})"
        # What the run learned before the resume is good: go back to it (nu35).
        lead = replace(lead, remedy=knobs.Remedy(
            f"{lead.remedy}; then {_rollback_words(run, resumed[0], best=False)}: the run "
            f"trained with {resumed[1].rsplit(' -> ', 1)[0]} until the resume",
            knob=lead.remedy.knob, factor=lead.remedy.factor, rollback_step=resumed[0]))
    if lead.setup and root.incident and root.check.onset_step is not None and (
            root.step < root.check.onset_step):
        # Dated by an earlier episode of the finding whose sentence says "from step 8": both
        # steps said ("at step 3" beside "from step 8" read as a contradiction, helper-57).
        said += f" (first seen at step {step_text(root.step)}, in an earlier episode)"
    cause = RootCause(root.check.mode, root.step, said,
                      str(lead.remedy), knob=lead.knob.to_cause() if lead.knob else None,
                      setup=lead.setup, cause=lead.cause)
    return cause, _plan(run, events, checks, root, lead, setup)


def _knob_set_at_resume(run: Run, lead: _Lead) -> tuple[int, str] | None:
    """The step a resume set the setting the first action names, and its change ("beta 0.0
    -> 1.0"), from the checkpoints' saved settings; None when a resume did not change it."""
    key = lead.knob.reading.source if lead.knob is not None else None
    change = run.changed_at_resume.get(key) if key else None
    if change is None or not run.resumed_at:
        return None
    before, after, checkpoint = change
    step = max((s for s in run.resumed_at if s <= checkpoint), default=run.resumed_at[0])
    return step, f"{key} {before} -> {after}"


def _solved_words(run: Run) -> str:
    """'the task is solved', or, when the reward sat at its top from the first logged steps,
    that nothing was learned there (temperature 0.05: near-greedy samples of what the policy
    already knew scored 1.5 from step 1, and "the task is solved" read as an achievement)."""
    _, r = series(run, Metric.REWARD_MEAN.value)
    if len(r) >= 10 and float(np.median(r[:5])) >= float(np.max(r)) - 0.1 * (
            float(np.ptp(r)) or 1.0):
        return "the reward was at its top from the first logged steps (nothing to learn there)"
    return "the task is solved"


def _reward_exploited(events: Sequence[Event], worst: Sequence[Check]) -> Event | None:
    """A reward term exploited: a length finding among the worst whose reward term pays for
    the length itself, or a term farmed while the task's own fell that began before the worst
    findings did. A gradient spike or an lr outside the recipe beside it is no cause of that
    (trial 49: a bonus per character at weight 20 had read "learning_rate first" from a spike
    three steps before the hack; trial 51: a repetition bonus at 20, "roll back, lr")."""
    paid = next((e for e in events if e.check.mode == "length_hacking" and e.check in worst
                 and not e.incident and e.check.evidence.get("length_term_paid")), None)
    if paid is not None:
        return paid
    # Before anything that breaks a policy (a gradient blow-up at step 5 could be what the
    # task lost to); a sharpening entropy from step 1 is no such thing.
    first = min((e.step for e in events if e.check.status is Status.CRITICAL
                 and e.check.mode in _DESTRUCTIVE and not e.incident), default=None)
    return next((e for e in events if e.check.mode == "format_gaming" and not e.incident
                 and e.check.evidence.get("farmed_while_task_fell")
                 and (first is None or e.step <= first)), None)


def _knob_explained(events: Sequence[Event], worst: Sequence[Check], setup: recipe.Setup,
                    root: Event) -> Event:
    """The config is evidence: when no setting outside the recipe explains ``root``, and the
    root left the policy usable (a collapse, a stall, not a blow-up to roll back from), a
    critical finding that a setting *far* outside the recipe primarily causes is the cause to
    fix first (a group of 2 behind equal-reward groups, beside an entropy fall that is the run
    sharpening as it learns). ``root`` otherwise, and always when ``root`` is a completion
    budget that cut most answers from the first logs: that setup problem comes first (a
    group of 2 beside it is a co-cause, its groups all-wrong anyway while answers are cut)."""
    if root.check.mode in _DESTRUCTIVE or setup.causes(_linked_modes(root),
                                                       critical=root.critical):
        return root
    if root.check.mode == "length_hacking" and root.check.evidence.get("truncated_from_start"):
        return root
    for e in events:
        c = e.check
        if (c is root.check or c not in worst or c.status is not Status.CRITICAL
                or e.recovered or _reward_never_fired(c)):
            continue
        if any(r.far and any(lk.primary and lk.mode == c.mode for lk in r.links)
               for r in setup.causes({c.mode})):
            return e
    return root


def _cheat_attempts(run: Run, events: Sequence[Event]) -> Event | None:
    """The reward-hacking finding when an anti-cheat reward term caught attempts, or the
    held-out score turned over while the train reward rose: the reward is being gamed, and
    what follows (KL drift, length) is its consequence. (A held-out score that fell while the
    train reward never rose is training doing harm, not a reward being gamed.)"""
    rose: bool | None = None
    for e in events:
        if e.check.mode != "reward_hacking" or e.incident:
            continue
        for form in e.check.evidence.get("forms", ()):
            if not isinstance(form, dict):
                continue
            if form.get("component"):
                return e
            if "held-out" in str(form.get("form", "")):
                if rose is None:
                    steps = run.steps
                    rose = bool(len(steps)) and reward_progress(run, float(steps[0])).improving
                if rose:
                    return e
    return None


def _farmed_tools(events: Sequence[Event], worst: Sequence[Check]) -> Event | None:
    """The tool-spam finding when it explains every other worst finding: the calls surged on
    a reward that pays for them, and the KL drift or the entropy fall that a level-shift
    onset dates a few steps earlier are what farming them did (a tighter leash would not stop
    it)."""
    spam = next((e for e in events if e.check.mode == "tool_spam" and not e.incident), None)
    if spam is None:
        return None
    causes = CAN_CAUSE["tool_spam"] | {"tool_spam"}
    return spam if all(c.mode in causes for c in worst) else None


#: What a policy that learned its training prompts, not the task, shows: near-deterministic
#: answers to prompts it knows (entropy down, every group all-correct, no gradient left).
_MEMORISED_CAUSES = frozenset({"entropy_collapse", "advantage_collapse", "no_learning_signal",
                               "length_hacking", "format_gaming", "reward_overfit"})


def _can_cause(check: Check) -> frozenset[str]:
    """What ``check``'s finding can have brought about, as its evidence says it began."""
    if check.mode == "no_learning_signal" and check.evidence.get("cause"):
        return _ALL  # a dead run names the catastrophic update that explains the rest
    if check.mode == "no_progress" and check.evidence.get("memorised"):
        return _MEMORISED_CAUSES
    if check.mode == "length_hacking" and check.evidence.get("truncated_from_start"):
        # A budget that cut most answers from the first logs is the setup every later
        # finding was learned under: a policy squeezed into it sharpens (entropy down) and
        # earns what fits (the format) (trial 41: 5 tokens, "lr 3e-4 -> 1.5e-4" first).
        return CAN_CAUSE["length_hacking"] | {"entropy_collapse", "format_gaming"}
    return CAN_CAUSE.get(check.mode, frozenset())


def _explains(event: Event, worst: Sequence[Check]) -> bool:
    """``event`` can have brought about every one of ``worst`` that began at or after it
    (its own finding aside); a warning must also explain those that began before or with it
    (a warning is not named over a critical finding it cannot explain)."""
    causes = _can_cause(event.check)
    if event.check.evidence.get("offset_from_start"):
        causes = frozenset()  # a KL offset present from the first step moved nothing
    warning = not event.critical and any(c.status is Status.CRITICAL for c in worst)
    if warning and any(c.mode != event.check.mode and c.onset_step is not None
                       and c.onset_step < event.step for c in worst):
        return False  # nothing explains what began before it
    return all(c.mode == event.check.mode or c.mode in causes for c in worst
               if warning or (c.onset_step if c.onset_step is not None else 0) >= event.step)


# --- the first action ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Knob:
    """A setting named as the cause: its reading and why it is one."""

    reading: recipe.Reading

    def to_cause(self) -> dict:
        r = self.reading
        return {"name": r.id, "value": recipe._jsonable(r.value), "recipe": r.recipe_text,
                "source": r.source}


@dataclass(frozen=True)
class _Lead:
    """The first action and what it rests on."""

    remedy: knobs.Remedy
    summary: str = ""  # the root cause's summary when the action changes what it says
    knob: _Knob | None = None
    setup: bool = False  # a setup problem: wrong from the first logged step
    extra_knobs: tuple[recipe.Reading, ...] = ()  # other settings outside the recipe it names
    #: The cause changed what was sampled, not the policy (a budget cut, a stop that changed):
    #: no step size is to blame for what followed.
    sampling_changed: bool = False
    #: What the first action names is no training dynamics (the reward's definition changed
    #: with every term holding its level, the weights reset): the root finding's own remedies
    #: and any other roll-back are moot.
    not_dynamics: bool = False
    #: What broke, when it is no failure mode but an event the root finding saw (a reset of
    #: the weights seen as an entropy blow-up): the name a fleet's table shows beside the
    #: finding's ("entropy_blowup@161" alone had read as a policy blowing up; nu34).
    cause: str | None = None
    #: The step the root cause began at, where the first action dates it otherwise than the
    #: root finding's onset (groups alike at once from a resume, the finding dated later).
    dated: int | None = None


def _first_action(run: Run, root: Event, setup: recipe.Setup, checks: Sequence[Check]) -> _Lead:
    check = root.check
    gaps = check.evidence.get("scorer_gaps")
    if isinstance(gaps, dict):
        # A scorer that failed on some calls: the crashes are those calls, the policy fine.
        return _Lead(knobs.Remedy(str(gaps["fix"])), summary=str(gaps["said"]),
                     cause=SCORER_FAILING)
    # Evenly spaced falls first: the last slice's alone (a stop at 151) is part of them.
    slices = _data_slices(run, root)
    if slices is not None:
        return slices
    stopped = check.evidence.get("scorer_stopped")
    if isinstance(stopped, dict) and stopped.get("data_order"):
        # Prompts served in the dataset's order, a harder slice from the drop: the policy
        # is fine and nothing needs undoing (a roll-back read as a policy collapse).
        return _Lead(knobs.Remedy(str(stopped["fix"])), summary=str(stopped.get("said") or ""),
                     cause=DATA_ORDER)
    if isinstance(stopped, dict):
        step = int(stopped["step"])
        return _Lead(knobs.Remedy(
            f"{stopped['fix']}; then "
            f"{_rollback_words(run, step, best=False)}: the completions did not change "
            "there, so the policy was fine", rollback_step=step),
            summary=str(stopped.get("said") or ""), cause=SCORER_STOPPED)
    overshoot = _lr_overshoot(run) if check.mode in _LR_MODES else None
    if overshoot is not None:
        lr = setup.get("learning_rate")
        floor = _floor_above_peak(run, lr, overshoot.lr_max)
        if floor is not None:
            key, value, peak, fix = floor
            return _Lead(
                knobs.Remedy(
                    f"{fix} (below learning_rate {_lr(peak)}: a schedule's floor above its "
                    f"peak climbs to it; keep learning_rate {_lr(peak)}); "
                    f"{_rollback_words(run, overshoot.peak_step, best=False)}",
                    rollback_step=overshoot.peak_step),
                summary=f"the schedule's floor: {key} puts it at {_lr(value)}, above "
                        f"learning_rate {_lr(peak)}, so the lr rose to it: "
                        f"{overshoot.words()}; first sign: "
                        f"{check.mode} ({root.summary})")
        return _Lead(
            knobs.Remedy(
                # From a checkpoint saved by the peak, as every roll-back names one: "the
                # checkpoint nearest step 25" was checkpoint-50, already below the initial
                # model (trial 56).
                f"learning_rate {_lr(overshoot.lr_max)} -> {_lr(overshoot.lr_peak)} (its value "
                f"when the reward peaked at step {step_text(overshoot.peak_step)}); "
                f"{_rollback_words(run, overshoot.peak_step, best=False)}",
                knob=knobs.LEARNING_RATE, factor=overshoot.lr_peak / overshoot.lr_max,
                rollback_step=overshoot.peak_step),
            summary=f"the learning rate: {overshoot.words()}; first sign: {check.mode} "
                    f"({root.summary})",
            knob=_Knob(lr) if lr is not None and lr.outside else None)
    burst = lr_burst(run, root.step)
    if burst is not None:
        return _burst_action(run, root, setup, burst)
    from_start = _from_first_step(run, root)
    still = _no_step_at_all(run, setup, root, from_start)
    if still is not None:
        return still
    # Every sample was drawn with a rollout setting far outside the recipe (a temperature of
    # 2.5): what the policy made of those samples (a format term gamed while the held-out
    # score fell) follows from it, and the setting comes before that finding's own fix.
    # (Near-greedy from the first step is the setup problem it is, before what the policy
    # made of such samples: trial 68's temperature 0.3, its groups alike from step 1.)
    sharp = _sampled_sharp(run, setup, root)
    if sharp is not None:
        return sharp
    linked = setup.causes(_linked_modes(root), critical=root.critical)
    # A rollout setting that only contributes to the finding (a temperature of 2 behind an
    # entropy sharpening) yields to a setting far outside the recipe that causes it outright
    # (an lr of 3e-3, 600x the ceiling).
    primary = any(r.far and r.id not in _ROLLOUT_SETTINGS and _primary_for(r, root)
                  for r in linked)
    drawn = [r for r in linked if r.far and r.id in _ROLLOUT_SETTINGS
             and (_primary_for(r, root) or not primary)]
    if drawn:
        return _knob_action(run, root, drawn, from_start)
    raised = _raised_by_controller(setup, root)
    if raised is not None:
        # Said as what it is: the chapter links an entropy bonus to entropy, not to every
        # finding it can bring about.
        first_sign = headline(without_mode_name(root.summary, root.check.mode))
        return replace(_knob_action(run, root, [raised], from_start), summary=(
            f"the entropy bonus: {raised.sentence()}, raised step by step by "
            f"use_adaptive_entropy toward an entropy_target the entropy never reached; first "
            f"sign: {root.check.mode.replace('_', ' ')} ({first_sign})"))
    sharp = _sampled_noisy(run, setup, root)
    if sharp is not None:
        return sharp
    at_once = _ends_at_once(run, setup) if from_start else None
    if at_once is not None:
        return at_once
    silent = _never_scored(root, checks)
    if silent is not None:
        return silent
    shrunk = _budget_cut_at(run, root, setup)
    if shrunk is not None:
        return shrunk
    # What changed at the root's step outside the policy: the scores, the sampler, the
    # reward's make-up, the weights trained.
    for changed_at in (_scores_missing_at, _sampler_changed_at, _reward_redefined_at,
                       _weights_reset_at):
        changed = changed_at(run, root)
        if changed is not None:
            return changed
    flipped = _flipped_term(run, root, checks)
    if flipped is not None:
        return flipped
    gamed = _gamed_through(run, root, checks)
    if gamed is not None:
        return gamed
    problem = _setup_problem(run, root, setup, checks) if from_start else None
    if problem is None and check.mode != "numerical_failure":
        # Whatever broke later, nothing could be learned while no answer fit the budget.
        problem = _answers_cut_short(run, setup, checks)
    if problem is not None:
        return problem
    elsewhere = _other_model_nan(run, root)
    if elsewhere is not None:
        return elsewhere
    causes = setup.causes(_linked_modes(root, run), critical=root.critical,
                          prefer=_own_knobs(check))
    if _reward_never_moved(run):
        causes = [r for r in causes if r.id != "num_generations"]
    small = _small_groups(run, root, setup, causes, from_start)
    if small is not None:
        return small
    resumed = _broke_at_resume(run, root, causes)
    if resumed is not None:
        return resumed
    if not causes and not root.critical:
        causes = _linked_knobs(setup, root, checks)
    if not causes and root.critical and not _never_updated(run):
        # A setting far outside the recipe that makes single updates huge (an lr 30x the
        # ceiling, no clipping, fp16 weights) can have brought about any critical finding;
        # one clearly outside it, any sudden one (a crash, a blow-up: an incident). Not where
        # no update moved the weights at all.
        causes = [r for r in setup.causes({recipe.CATASTROPHIC_UPDATE}, critical=root.incident)
                  if not _clip_never_reached(run, r)]
    causes = [r for r in causes if not _lr_already_lower(run, r, root.step)]
    step_size = next((r for r in causes if r.id == "learning_rate" and r.far), None)
    if causes and causes[0].id == "max_grad_norm" and step_size is not None:
        # Clipping off and an lr far above the recipe: the lr sets the step, the clip only
        # bounds it (an lr 60x the ceiling broke a run with clipping on all the same).
        causes = [step_size, *(r for r in causes if r is not step_size)]
    began = _break_began(run, root, checks)
    # A warning at the head of a break: critical findings followed within a few logged
    # points (the reward 0.72 -> 0.04, entropy x11, grad norm x25).
    headed = began if began is not None and not root.critical and check.mode in _DESTRUCTIVE \
        else None
    if causes and not _reward_never_fired(check):
        return _knob_action(run, root, causes, from_start, headed)
    calm = _calm(check)
    if calm is not None and not any(c.status is Status.CRITICAL for c in checks):
        # A run still learning its task (an entropy spent as it converges): its checkpoints
        # are good and nothing needs stopping; the knob is for the next run. (A setting outside
        # the recipe behind it is named above, as the fix for the next run.)
        after = next((r for r in check.remedies if isinstance(r, knobs.Remedy) and r.knob
                      and not str(r).startswith(_CALM)), None)
        # A setting clearly outside the recipe behind another finding of the run (a clip
        # range of 0.6 behind its unstable ratios) is the change for the next run.
        troubled = {c.mode for c in checks if c.fired and not _converging(c)}
        suspect = next((r for r in setup.causes(troubled, critical=True)
                        if any(lk.primary and lk.mode in troubled for lk in r.links)), None)
        lr = setup.get("learning_rate")
        if suspect is None and after is not None and after.knob is knobs.LEARNING_RATE \
                and lr is not None and lr.verdict == recipe.HIGH:
            # The finding's generic halving of an lr above the recipe's ceiling: the recipe's
            # own fix says by how much, and never lands on the ceiling (1e-3 -> 5e-4).
            suspect = lr
        if suspect is not None:
            after = knobs.Remedy(f"{suspect.fix()} ({suspect.sentence()})",
                                 knob=_knob_of(suspect))
        if check.evidence.get("heldout_gap"):
            # Converging on its training prompts, not on the task: what to change is what it
            # trains on (a one-prompt pool was told to halve its lr); a setting outside the
            # recipe comes with it.
            after = knobs.Remedy(_MORE_PROMPTS + (f"; and {after}" if suspect is not None
                                                  else ""),
                                 knob=after.knob if suspect is not None and after else None)
        return _Lead(knobs.Remedy(
            calm + (f"; for the next run: {after}" if after is not None else ""),
            knob=after.knob if after is not None else None,
            factor=after.factor if after is not None else None))
    remedies = [r for r in check.remedies if not str(r).startswith(_CALM)]
    lr_remedy = next((r for r in remedies if isinstance(r, knobs.Remedy)
               and r.knob is knobs.LEARNING_RATE), None)
    # What comes with a roll-back (going back alone reruns what broke it): the smaller
    # updates, else the finding's own first knob (a tighter KL leash).
    if lr_remedy is not None and _lr_moved(run, root.step):
        # The log shows a higher lr in force there than the config's (a jump): that is the
        # one to change.
        lr_remedy = _smaller_updates(run, root.step)
    then = lr_remedy or next((r for r in remedies if isinstance(r, knobs.Remedy)
                              and r.knob is not None and r.rollback_step is None), None)
    if root.critical and check.mode in ("kl_drift", "grad_explosion") and (
            0 < len(check.incidents) < 3):
        return _rolled_back(run, root.step, then)
    if headed is not None:
        # Go back to before the break, with smaller updates; a tighter leash alone trains on
        # from the broken policy.
        return _rolled_back(run, headed, _smaller_updates(run, root.step))
    if remedies:
        top = remedies[0]
        if root.critical and isinstance(top, knobs.Remedy):
            if (check.mode in _DESTRUCTIVE and top.knob is not None
                    and top.rollback_step is None):
                # The run broke: a smaller lr from here trains on from the broken policy.
                return _rolled_back(run, began if began is not None else root.step, top)
            if top.rollback_step is not None and top.knob is None:
                # The roll-back names a checkpoint the log saved, with ``then``.
                return _rolled_back(run, top.rollback_step, then)
        return _Lead(top if isinstance(top, knobs.Remedy) else knobs.Remedy(str(top)))
    return _Lead(knobs.Remedy(f"look at the run's samples around step {step_text(root.step)}"))


def _raised_by_controller(setup: recipe.Setup, root: Event) -> recipe.Reading | None:
    """An entropy bonus a controller raised far outside the recipe during the run (its
    target above any entropy the policy held): the bonus was in force from its first steps,
    climbing, before whatever broke; the target is what to change first (trial 60: "learning
    rate first" on a run whose twin at the same lr learned cleanly). Not behind a numerical
    failure or an entropy collapse, which a bonus does not bring about."""
    coef = setup.get("entropy_coef")
    if (coef is None or not coef.far or not str(coef.source).startswith(recipe.ADAPTIVE_ENTROPY)
            or root.check.mode in ("numerical_failure", "entropy_collapse")):
        return None
    return coef


def idle_settings(run: Run, setup: recipe.Setup) -> list[str]:
    """The settings outside the recipe that the log shows did not act (see
    ``_clip_never_reached``): a note, never a cause."""
    return [r.id for r in setup.outside if _clip_never_reached(run, r)]


#: Share of logged steps, and the median's multiple of the clip, at which every update was
#: clipped: the clip bounds every batch, not the rare spike it is for.
_ALWAYS_CLIPPED, _CLIPPED_BY = 0.9, 2.0


def always_clipped_note(run: Run, setup: recipe.Setup) -> str | None:
    """A note when the logged (pre-clip) gradient norm was above the configured clip on
    nearly every logged step, by a median of twice it or more: each update was scaled down
    to the clip (rewards on a large scale, unnormalised advantages, or an lr far too high).
    Adam's step follows the learning rate whatever the gradient's scale; what the clip on
    every update changes is that a spike can no longer be told from a normal batch. None
    otherwise."""
    clip = setup.get("max_grad_norm")
    x = recipe.as_number(clip.value) if clip is not None else None
    _, g = series(run, Metric.GRAD_NORM.value)
    if x is None or x <= 0 or clip is None or clip.verdict == recipe.OFF or len(g) < 20:
        return None
    share = float(np.mean(g > x))
    median = float(np.median(g))
    if share < _ALWAYS_CLIPPED or median < _CLIPPED_BY * x:
        return None
    flat = recipe.flat_config(run.config or {})
    scaled, key = recipe.lookup(flat, ("scale_rewards", "norm_adv_by_std_in_grpo"))
    estimator, _ = recipe.lookup(flat, ("adv_estimator",))
    # Only a group-relative advantage is scaled by its group's std (verl's flag does nothing
    # under GAE); a key the config does not hold says nothing.
    why = (f" (the rewards' scale left in the advantages: {key} {str(scaled).lower()})"
           if key is not None and recipe.as_flag(scaled) is False
           and str(estimator or "grpo").lower() in ("grpo", "grpo_passk", "dr_grpo") else "")
    return (f"the gradient norm was above {clip.name} {knob_value(x)} on {share:.0%} of logged "
            f"steps (median {fmt(median)}, {median / x:.0f}x the clip): every update was "
            f"clipped, so the clip bounds every batch, not the rare spike it is for{why}")


def _clip_never_reached(run: Run, reading: recipe.Reading) -> bool:
    """No gradient clipping, on a run whose logged grad norms never reached the clip the
    recipe sets: clipping would have changed no update, so it caused nothing here (a note,
    not the cause)."""
    if _knob_of(reading) is not knobs.GRAD_CLIP:
        return False
    clip = recipe.as_number(reading.target)
    _, g = series(run, Metric.GRAD_NORM.value)
    return clip is not None and len(g) >= 3 and float(np.max(g)) <= clip


#: How many logged points after a warning critical findings may begin and still be the
#: break it heads.
_BREAK_REACH = 10


def _break_began(run: Run, root: Event, checks: Sequence[Check]) -> int | None:
    """When critical findings of a blow-up (destructive ones, or the reward crashing) began
    within ``_BREAK_REACH`` logged points of ``root`` (and, for a warning, some at or after
    it), the step the break began: the earliest onset among them and the root (what began a
    step before the root belongs to the break, and the roll-back goes back before it)."""
    near = run.steps[(run.steps >= root.step)][:_BREAK_REACH + 1]
    before = run.steps[run.steps < root.step][-_BREAK_REACH:]
    if not len(near):
        return None
    lo, hi = int(before[0]) if len(before) else root.step, int(near[-1])
    broke = [c for c in checks if c.fired and c.status is Status.CRITICAL
             and (c.mode in _DESTRUCTIVE or c.mode == "reward_overfit")
             and c.onset_step is not None and lo <= c.onset_step <= hi]
    if not root.critical and not any(c.onset_step is not None and c.onset_step >= root.step
                                     for c in broke):
        return None
    return min([root.step] + [int(c.onset_step) for c in broke if c.onset_step is not None])


def _held_out_kept_rising(run: Run, step: int) -> str | None:
    """'0.2 -> 0.86' when the held-out score (5+ points after ``step``) rose from ``step`` to
    the end, significantly, with the run still learning; None otherwise."""
    held = reward_progress(run, float(step), metric=Metric.HELDOUT_SCORE.value)
    if not (held.logged and held.improving) or held.start is None or held.end is None:
        return None
    if len(series(run, Metric.HELDOUT_SCORE.value)[1]) < 5 or not learning(
            run, float(step)).improving:
        return None
    return f"{fmt(held.start)} -> {fmt(held.end)}"


def _lr_in_force(run: Run, step: int) -> tuple[float, np.ndarray] | None:
    """The logged lr at ``step`` (its last logged value at or before it) and the logged lr
    up to there; None when the log has no lr by then."""
    ls, lr = series(run, Metric.LEARNING_RATE.value)
    if not len(lr) or step < ls[0]:
        return None
    i = int(np.searchsorted(ls, step, side="right")) - 1
    return float(lr[i]), lr[:i + 1]


def _lr_moved(run: Run, step: int) -> bool:
    """The lr the log shows in force at ``step`` is 1.5x the configured one or more (a jump);
    a schedule that decayed below it keeps its peak as the knob to halve."""
    logged = _lr_in_force(run, step)
    value, _ = knobs.current(run, knobs.LEARNING_RATE)
    return logged is not None and bool(value) and logged[0] >= 1.5 * float(value or 0)


def _smaller_updates(run: Run, step: int) -> knobs.Remedy:
    """Half the lr the log shows in force at ``step`` (a schedule's peak, halved, would raise
    the 1e-6 a run stepped down to before it broke), else half the configured one. After a
    jump of the logged lr, the level it held before the jump."""
    jump = _lr_jump(run)
    logged = _lr_in_force(run, step)
    if jump is not None and jump.step <= step and logged is not None and (
            logged[0] >= 0.9 * jump.after):
        return knobs.Remedy(jump.back("learning_rate", f"; step {step_text(step)} was at the "
                                                       "new level"),
                            knob=knobs.LEARNING_RATE, factor=jump.before / logged[0])
    if logged is not None and logged[0] > 0:
        now = logged[0]
        return knobs.Remedy(f"learning_rate {_lr(now)} -> {_lr(now * 0.5)} (smaller updates; "
                            f"the lr in force at step {step_text(step)})",
                            knob=knobs.LEARNING_RATE, factor=0.5)
    return knobs.scale(run, knobs.LEARNING_RATE, 0.5, why="smaller updates")


def _rolled_back(run: Run, step: int, then: knobs.Remedy | None) -> _Lead:
    """Go back to before ``step`` (a saved checkpoint where the log names them), then ``then``
    (the knob that makes the next attempt smaller), as one first action; no going back from
    a run that solved its task all the same."""
    if task_solved(run):
        text = _SOLVED_ANYWAY + (f", {then}" if then is not None else "")
        return _Lead(knobs.Remedy(text, knob=then.knob if then is not None else None,
                                  factor=then.factor if then is not None else None))
    text = _rollback_words(run, step) + (f", then {then}" if then is not None else "")
    return _Lead(knobs.Remedy(text, knob=then.knob if then is not None else None,
                              factor=then.factor if then is not None else None,
                              rollback_step=step))


def _lr_already_lower(run: Run, reading: recipe.Reading, step: int) -> bool:
    """The lr the log shows in force where the finding began was at or below what the recipe
    would set it to, and the value named was not in force then: a schedule stepped down to
    1e-6 before a break at 1e-6, or a run that held 1e-6 until it broke and rose to 1e-5
    later. "learning_rate 1e-5 -> 2.5e-6" would raise the lr the run broke at. (A warm-up
    still climbing is not: lowering its peak lowers every step of it.)"""
    if reading.id != "learning_rate":
        return False
    target = recipe.as_number(reading.target)
    logged = _lr_in_force(run, step)
    if target is None or logged is None:
        return False
    now, so_far = logged
    if now > target:
        return False
    ls, lr = series(run, Metric.LEARNING_RATE.value)
    after = lr[ls > step][:5]
    if len(after) >= 2 and bool(np.all(np.diff(np.r_[now, after]) > 0)):
        # A warm-up still climbing where the finding began (trial 48: lr 0 at step 1 of a
        # warm-up to 2e-3 read as "already lower", and beta took the blame).
        return False
    peak = float(lr.max())
    held = float(np.ptp(so_far)) <= 0.25 * now and now < 0.5 * peak
    return now < float(so_far.max()) or held


def _linked_knobs(setup: recipe.Setup, root: Event, checks: Sequence[Check]
                  ) -> list[recipe.Reading]:
    """Warnings only: a knob clearly outside the recipe (not far) is the cause when the
    chapter names it a primary cause of the root finding, which fired: the config is evidence
    (a PPO clip of 0.6 behind ratio instability, an lr 2x the ceiling behind KL drift). A knob
    outside with no symptom it links to is never named here (it is at most a note)."""
    fired = {c.mode for c in checks if c.fired}
    return [r for r in setup.causes(_linked_modes(root), critical=True)
            if any(lk.primary and lk.mode in fired for lk in r.links)]


def _reward_never_fired(check: Check) -> bool:
    """Equal-reward groups because a reward term never moved (or the reward sat at one value),
    or a gain on format alone beside a correctness term that never moved: whatever the
    setting, the reward comes first: no group size teaches a task that is never rewarded."""
    if check.mode == "format_gaming":
        # A correctness term that never moved: no answer was ever judged right, whatever the
        # step size; the check on completions comes first (the setting is said after it).
        return bool(check.evidence.get("correctness_never_moved")
                    or check.evidence.get("correctness_flat"))
    return check.mode in ("advantage_collapse", "no_learning_signal") and bool(
        check.evidence.get("pinned_components") or check.evidence.get("reward_stuck_at"))


#: The settings every rollout sample is drawn with.
_ROLLOUT_SETTINGS = frozenset({"temperature", "top_p", "top_k", "min_p", "epsilon_cutoff",
                               "eta_cutoff", "typical_p"})

#: Findings that read a run sampled near-greedily as learned out: every group samples one
#: answer, all right or all wrong, so nothing varies to learn from.
_SHARP_READS = frozenset({"no_learning_signal", "advantage_collapse", "entropy_collapse",
                          "no_progress"})
#: Mean token entropy (nats) below which sampling is near-deterministic (entropy_collapse's
#: floor), and the share of equal-reward groups that says the groups sample one answer.
_SHARP_ENTROPY = next(p.default for p in ENTROPY_RULE.params if p.name == "floor")
_SHARP_EQUAL = 0.5


def _sampled_noisy(run: Run, setup: recipe.Setup, root: Event) -> _Lead | None:
    """Sampling near-random from the first logged step (entropy at or above
    ``NEAR_RANDOM_ENTROPY``) on a run that never learned: the rollout temperature far above the
    recipe when the config says so, else the sampling and the prompt format to check. Trial
    64's temperature 3.0 (entropy 3.07 from step 1, every reward 0) read "check the reward
    function", the temperature a note. None otherwise."""
    if root.check.mode not in _SHARP_READS:
        return None
    _, h = series(run, Metric.ENTROPY.value)
    head = h[: min(3, len(h))]
    if not len(head) or float(np.median(head)) < NEAR_RANDOM_ENTROPY or root.step > int(
            run.steps[min(2, len(run.steps) - 1)]):
        return None
    said = (f"entropy {fmt(float(np.median(head)))} nats per token from the first logged "
            "step, where a healthy start is under 1.5")
    hot = setup.get("temperature")
    if hot is not None and hot.far and hot.verdict == recipe.HIGH:
        text = (f"{hot.fix()} ({hot.sentence()}): sampling is near-random, {said}, so no "
                "completion holds an answer to score and the reward function is not at "
                "fault; a setup problem: no roll-back")
        return _Lead(knobs.Remedy(text, knob=knobs.TEMPERATURE),
                     summary=f"a setup problem, sampling near-random from the first step "
                             f"(temperature {hot.value_text}): {root.summary}",
                     knob=_Knob(hot), setup=True)
    text = (f"check the sampling first: {said}: the rollout temperature (or top_p, top_k) set "
            "far above the usual, a rollout engine not running the trained weights (a LoRA "
            "adapter or weight sync that never reached it), or prompts in a chat template or "
            "tokenizer the model was not trained with; the reward can only score what is "
            "written, so check it after")
    return _Lead(knobs.Remedy(text), summary=f"a setup problem, sampling near-random from "
                 f"the first step: {root.summary}", setup=True)


def _no_step_at_all(run: Run, setup: recipe.Setup, root: Event, from_start: bool
                    ) -> _Lead | None:
    """A learning rate of 0 that the config sets and the log never contradicts: no update
    moved the weights, so whatever fired (groups alike, a flat reward) is what the initial
    model does, and the lr comes first (h99: lr 0 in the config and the log, 60% of groups
    alike, read "harder prompts", or "num_generations 2 -> 16"). None otherwise."""
    lr = setup.get("learning_rate")
    if lr is None or str(lr.source or "").startswith("logged") or (
            recipe.as_number(lr.value) != 0):
        return None
    _, logged = run.finite_series(Metric.LEARNING_RATE.value)
    if len(logged) and float(np.max(logged)) > 0:
        return None  # the schedule moved off 0 (a warm-up from 0): it did step
    if policy_moved(run) is not None or learning(run, float(run.steps[0])).improving:
        return None  # the log shows it learned: the config is not the run's (h103)
    lead = _knob_action(run, root, [lr], from_start)
    said = headline(without_mode_name(root.summary, root.check.mode))
    return replace(lead, summary=(
        f"the learning rate: {lr.name} {lr.value_text} is no step at all, so the weights never "
        f"moved; first sign: {root.check.mode.replace('_', ' ')} ({said})"))


def _sampled_sharp(run: Run, setup: recipe.Setup, root: Event) -> _Lead | None:
    """A rollout temperature (or top_p, top_k) far below the recipe, with sampling
    near-deterministic from the first logged step (entropy below the floor, or most groups
    equal before any update could have sharpened them): the groups sample one answer each, so
    the reward (often "solved") measures near-greedy decoding and GRPO gets no signal.
    Trial 43's temperature 0.2 read "stop here, the task is solved" with the temperature in a
    note, on a policy right 30% of the time at temperature 1."""
    if root.check.mode not in _SHARP_READS:
        return None
    # Temperature, or the distribution cut by nucleus or top-k sampling: any of them far below
    # the recipe samples one answer per group.
    sharpeners = (setup.get(name) for name in ("do_sample", "temperature", "top_p", "top_k",
                                               "min_p", "epsilon_cutoff", "eta_cutoff",
                                               "typical_p"))
    knob = next((r for r in sharpeners if r is not None and r.far and r.verdict == (
        recipe.HIGH if r.id in ("min_p", "epsilon_cutoff", "eta_cutoff")
        else recipe.OFF if r.id == "do_sample" else recipe.LOW)), None)
    if knob is None:
        return None
    head = slice(0, min(3, len(run.steps)))
    said = []
    if Metric.ENTROPY.value in run.frame:
        h = series(run, Metric.ENTROPY.value)[1][head]
        if len(h) and float(np.median(h)) < _SHARP_ENTROPY:
            said.append(f"entropy {fmt(float(np.median(h)))} nats, below the "
                        f"{fmt(_SHARP_ENTROPY)}-nat floor")
    if Metric.ZERO_STD_FRACTION.value in run.frame:
        z = series(run, Metric.ZERO_STD_FRACTION.value)[1][head]
        if len(z) and float(np.median(z)) >= _SHARP_EQUAL:
            said.append(f"{float(np.median(z)):.0%} of groups equal")
    setting = f"{knob.name} {knob.value_text}"
    if not said:
        return _sharp_from(run, root, knob, setting)
    # No roll-back: every checkpoint learned from near-greedy samples, none is worth going
    # back to.
    text = (f"{knob.fix()} ({knob.sentence()}): sampling is near-greedy from the first step "
            f"({'; '.join(said)}), so each group samples one answer, the reward measures "
            "near-greedy decoding and GRPO has nothing to compare; no roll-back: no checkpoint "
            "learned from the policy's own samples")
    # "(the task is solved)" holds at this setting only.
    summary = root.summary.replace("(the task is solved)", f"(at {setting})")
    return _Lead(knobs.Remedy(text, knob=knobs.TEMPERATURE if knob.id == "temperature" else None),
                 summary=f"a setup problem, sampling near-greedy from the first step "
                         f"({setting}): {summary}", knob=_Knob(knob), setup=True)


#: Logged points of ordinary sampling before groups alike at once read as a change of it.
_SHARP_LATE = 30


def _sharp_from(run: Run, root: Event, knob: recipe.Reading, setting: str) -> _Lead | None:
    """The groups all alike at once from a step of the run (25% -> 100% in one logged step,
    held) under a sampling setting far outside the recipe: set from there (a resume with
    another generation config), sampling near-greedy since (trial 82b: min_p 0.5 from a resume
    at step 41, the reward at its top and the gradient 0 from there, read "the task is
    solved: stop here", dated at 138). None otherwise."""
    zs, z = series(run, Metric.ZERO_STD_FRACTION.value)
    at = next((k for k in range(5, len(z) - 4) if z[k] >= _SHARP_EQUAL
               and float(np.median(z[k - 5:k])) <= 0.5 and float(np.median(z[k:])) >= _SHARP_EQUAL),
              None)
    if at is None:
        return None
    step = int(zs[at])
    if not (_at_resume(run, step) or at >= max(_SHARP_LATE, len(z) // 5)):
        # Within the first updates, a sampler in force from the first step shows as the
        # policy sharpens under it (top_p 0.5 from step 1, the groups alike from step 12):
        # the cut's own reading, not a change of it.
        return None
    before = float(np.median(z[at - 5:at]))
    text = (f"{knob.fix()} ({knob.sentence()}): sampling near-greedy from step "
            f"{step_text(step)} (groups alike {before:.0%} -> {float(np.median(z[at:])):.0%} in "
            "one logged step, and held: set at a resume or by another generation config?), so "
            "each group samples one answer and the reward measures near-greedy decoding, not a "
            f"solved task; then {_rollback_words(run, step, best=False)}")
    summary = root.summary.replace("(the task is solved)", f"(at {setting})")
    return _Lead(knobs.Remedy(text, knob=knobs.TEMPERATURE if knob.id == "temperature" else None,
                              rollback_step=step),
                 summary=f"sampling near-greedy from step {step_text(step)} ({setting}): "
                         f"{summary}", knob=_Knob(knob), sampling_changed=True,
                 not_dynamics=True, cause=SAMPLER_CHANGED, dated=step)


#: Findings a reward that pays the policy to avoid its own format or answers brings about.
_REWARD_SIDE = frozenset({"reward_hacking", "format_gaming", "no_progress", "reward_overfit",
                          "advantage_collapse"})


def _never_scored(root: Event, checks: Sequence[Check]) -> _Lead | None:
    """A reward function that returned no value on every logged step (TRL's None, kept as
    advantage_collapse's evidence): a setup problem from the first step, whatever finding it
    brought about, and its fix the first action (trial 44's nan_reward had read as equal
    groups from step 8)."""
    equal = next((c for c in checks if c.fired and c.mode == "advantage_collapse"
                  and c.evidence.get("never_scored")), None)
    fix = next((str(r) for r in equal.remedies if str(r).startswith("fix the reward")),
               None) if equal is not None else None
    if equal is None or fix is None:
        return None
    names = ", ".join(equal.evidence["never_scored"])
    return _Lead(knobs.Remedy(fix), summary=f"a setup problem, a reward function that never "
                 f"returned a value ({names}: None on every logged step): {root.summary}",
                 setup=True)


def _paid_away(run: Run, name: str) -> bool:
    """Whether reward term ``name`` fell over the log by more than its noise and by a quarter
    of its start at least: what a negative weight paid the policy to do, done."""
    col = components(run).get(name)
    if col is None:
        return False
    v = series(run, col)[1]
    if len(v) < 10:
        return False
    start, end = head_tail(v)
    fall = start - end
    return fall > 0.25 * abs(start) and fall > 2 * step_noise(v)


def _flipped_term(run: Run, root: Event, checks: Sequence[Check]) -> _Lead | None:
    """A format or correctness term the config weighs below 0 (``reward_weights [1, -1]``),
    behind a reward-side finding: the reward pays the policy to avoid what the term checks,
    from the first update; its sign is the first fix, from the initial model."""
    flipped = flipped_terms(run)
    unpaid = unpaid_terms(run)
    behind = any(c.fired and c.mode in _REWARD_SIDE for c in checks)
    # Or the charged term itself fell, whatever finding its escape brought about (trial 45: a
    # format term weighed -0.5 fell 0.48 -> 0 as completions ran on to the cap, and only
    # length_hacking fired).
    if not (flipped or unpaid) or not (behind or (flipped and _paid_away(run, flipped[0][0]))):
        return None
    if not flipped:
        # Weighed at 0: nothing pays a right answer, the reward is the other terms alone. Not
        # a sign that taught the policy to avoid anything: its checkpoints are usable.
        name = unpaid[0]
        hacked = next((c for c in checks if c.fired and c.mode == "reward_hacking"), None)
        still = next((f for f in (hacked.evidence.get("forms") or []) if f.get("unpaid")),
                     None) if hacked is not None else None
        if hacked is not None and still is not None and hacked.remedies:
            # A paid term rose while the unpaid check did not: what it pays is the fix.
            return _Lead(knobs.Remedy(str(hacked.remedies[0])), summary=(
                f"a setup problem, the task's check weighed at 0 ({still['unpaid']} 0 in the "
                f"config's reward weights): {root.summary}"))
        others = [n for n in configured_terms(run) if n != name and configured_weight(run, n)]
        alone = f"{', '.join(others)} alone" if others else "the other terms alone"
        text = (f"{name}'s weight 0 -> 1 in the config's reward weights (a correctness term "
                f"weighed at 0 pays nothing for a right answer: the reward is {alone})")
        return _Lead(knobs.Remedy(text), summary=f"a setup problem, the correctness term "
                     f"weighed at 0 ({name} 0 in the config's reward weights): {root.summary}",
                     setup=True)
    name, weight = flipped[0]
    role = component_role(run, name)
    col = components(run).get(name)
    moved = ""
    if col is not None:
        start, end = head_tail(series(run, col)[1])
        moved = f"; {name} went {fmt(start)} -> {fmt(end)}"
    what = f"{name} {knob_value(weight)} in the config's reward weights"
    text = (f"{_restart(run, int(run.steps[0]))}, with {name}'s weight {knob_value(weight)} "
            f"-> {knob_value(abs(weight))} (a negative weight on a {role} term pays the "
            f"policy to avoid what it checks{moved})")
    return _Lead(knobs.Remedy(text), summary=f"a setup problem, a reward term with its sign "
                 f"flipped ({what}): {root.summary}", setup=True)


#: The most logged points after the held-out score turned over at which the finding that
#: shows the exploit may begin: the policy games the reward from the turnover on.
_EXPLOIT_REACH = 20


def _began_after(run: Run, check: Check, step: int) -> int:
    """How many logged points after ``step`` ``check`` began (0 when it began first)."""
    if check.onset_step is None:
        return 0
    return int(((run.steps > step) & (run.steps < check.onset_step)).sum())


#: The finding that shows how a gamed reward is gamed, and what that is in words.
_EXPLOITS = (("format_gaming", "a format term"), ("length_hacking", "completion length"),
             ("tool_spam", "tool calls"))


def _gamed_through(run: Run, root: Event, checks: Sequence[Check]) -> _Lead | None:
    """A held-out score that fell while the train reward rose: a reward that pays nothing the
    task checks gets its missing term first; else a finding that shows what the policy
    exploits (a format term, length, tool calls) from the turnover on gets its fix first,
    then the audit of the highest-reward samples. (A length drift that
    began 45 logged points after the held-out score turned over is a consequence, not what a
    lenient verifier was gamed through.)"""
    if root.check.mode != "reward_hacking" or not any(
            "held-out" in str(f.get("form", "")) for f in root.check.evidence.get("forms", ())
            if isinstance(f, dict)):
        return None
    by_mode = {c.mode: c for c in checks if c.fired}
    # The log (or the config) shows the reward pays nothing the task checks (its only term
    # a length reward): the reward's design is the cause, and what the policy games it
    # through (the length) follows from it; an audit or a length fix would leave it.
    stuck = by_mode.get("no_progress")
    if stuck is not None and stuck.remedies and (
            stuck.evidence.get("memorised") or {}).get("kind") == "reward":
        text = (f"{stuck.remedies[0]} (the held-out score fell while the train reward rose); "
                "then audit the highest-reward samples by hand")
        return _Lead(knobs.Remedy(text), summary=f"a reward that pays something the task does "
                     f"not: {root.summary}; {stuck.summary}")
    for mode, what in _EXPLOITS:
        check = by_mode.get(mode)
        if check is None or not check.remedies or _setup_finding(check):
            continue
        if _began_after(run, check, root.step) > _EXPLOIT_REACH:
            continue
        fix = str(check.remedies[0])
        text = (f"the train reward rose while the held-out score fell: the policy games the "
                f"reward through {what} ({mode}); {fix}; then audit the highest-reward "
                "samples by hand")
        return _Lead(knobs.Remedy(text), summary=f"reward hacking through {what}: "
                     f"{root.summary}; {check.summary}")
    return None


#: Findings of a run that stopped learning: where a group too small to tell its completions
#: apart is the chapter's "training stalls" (groups alike, advantage 0).
_STALLS = ("entropy_collapse", "no_progress", "advantage_collapse", "no_learning_signal")
#: The share of groups with equal rewards, late in the log, at which groups that small are
#: what stalls the run: the chapter's alarm is an effective share under half.
_SMALL_GROUPS_ALIKE = 0.4


def _small_groups(run: Run, root: Event, setup: recipe.Setup, causes: list[recipe.Reading],
                  from_start: bool) -> _Lead | None:
    """The group size first, where it is far below the recipe and the run stalled with
    equal-reward groups at the chapter's alarm: a group of 2 is all-alike whenever both
    completions agree, whatever the lr (trial 67: num_generations 2 with a batch of 4 read
    "learning_rate 1e-4 -> 2.5e-6", the group size a note, on a run that learned at that
    lr, only slowly). None otherwise."""
    group = setup.get("num_generations")
    if group is None or group.verdict != recipe.LOW or not group.far or (
            root.check.mode not in _STALLS or _converging(root.check)):
        return None
    if _reward_never_moved(run):
        return None
    _, alike = series(run, Metric.ZERO_STD_FRACTION.value)
    k = late_points(len(alike), 0.2, 3)
    share = float(np.mean(alike[-k:])) if len(alike) >= 5 else 0.0
    if share < _SMALL_GROUPS_ALIKE:
        return None
    lead = _knob_action(run, root, [group, *(r for r in causes if r is not group)], from_start)
    said = headline(without_mode_name(root.summary, root.check.mode))
    return replace(lead, summary=(
        f"the group size: {group.name} {group.value_text} ({group.how_far()}): {share:.0%} of "
        f"groups had equal rewards over the last {k} logged points (the chapter's alarm is "
        f"half), and an equal group teaches nothing; first sign: "
        f"{root.check.mode.replace('_', ' ')} ({said})"))


def _reward_never_moved(run: Run) -> bool:
    """A reward that never left one value (0 on every logged step): it paid nothing to agree
    on, so no group size explains its equal groups (h99: "num_generations 2 -> 16" first where
    the reward had never paid; the reward and its format are what to check)."""
    _, reward = run.finite_series(Metric.REWARD_MEAN.value)
    return len(reward) >= 5 and float(np.ptp(reward)) == 0


def _primary_for(reading: recipe.Reading, root: Event) -> bool:
    """Whether ``reading`` is a primary cause of the root finding's mode."""
    return any(lk.primary and lk.mode in _linked_modes(root) for lk in reading.links)


def _linked_modes(root: Event, run: Run | None = None) -> set[str]:
    """The modes a knob must be linked to, to have caused ``root``: its own, and a
    catastrophic update when it is one (a blow-up at a step, a run destroyed by one update)."""
    modes = {root.check.mode}
    check = root.check
    one_update = (check.mode == "no_learning_signal" and bool(check.evidence.get("cause"))) or (
        root.incident and check.mode in ("kl_drift", "grad_explosion", "likelihood_displacement"))
    if one_update and not (run is not None and _never_updated(run)):
        modes.add(recipe.CATASTROPHIC_UPDATE)
    return modes


def _never_updated(run: Run) -> bool:
    """A gradient norm of exactly 0 on every logged step, and completions that never changed
    (``signs.policy_moved``: a norm some distributed setups log as 0 beside real updates): no
    update moved the weights, so none can have moved them too far (trial 72: rewards weighted
    0, grad norm 0 from step 1, read "learning_rate 2e-4 -> 1e-6")."""
    _, g = series(run, Metric.GRAD_NORM.value)
    return len(g) >= 3 and bool(np.all(g == 0)) and policy_moved(run) is None


#: A log whose first step is past this starts mid-run (an excerpt, a resumed job's log).
_LOG_STARTS_LATE = 20


def _from_first_step(run: Run, root: Event) -> bool:
    """The root cause was there at the first logged step (or the first few of a log that
    starts with training): nothing before it to roll back to."""
    from grpo_doctor.importers.console import summary_only

    steps = run.steps
    if not len(steps) or summary_only(run):  # (a summary's one point is the run's last)
        return False
    first_few = steps[: min(len(steps), 2)]
    return root.step <= int(first_few[-1]) and int(steps[0]) <= _LOG_STARTS_LATE


def _restart(run: Run, step: int) -> str:
    """A restart, for a problem that began with the log: no logged step before it to go back
    to. (Its first values may have been normal: an entropy of 1.03 at the first log, falling
    from there, began there all the same.)"""
    logged = run.steps[run.steps <= step]
    if len(logged) <= 1:
        return (f"restart from the initial model (it began at step {step_text(step)}, the "
                "first logged step: there is no earlier checkpoint to go back to)")
    # Steps were logged before it, but too few for a checkpoint worth going back to.
    return (f"restart from the initial model (it began at step {step_text(step)}, logged step "
            f"{len(logged)} of the run: too early for a checkpoint worth going back to)")


def _rollback_words(run: Run, step: int, best: bool = True) -> str:
    """Where to go back to before ``step``: a logged step that exists before it, or the
    initial model when the run was wrong from its first logged step. ``best``: the best
    reward of the last few steps before it, where the damage may have begun a point or two
    early; not where the policy is known to have held to ``step`` (a scorer that stopped)."""
    before = run.steps[run.steps < step]
    if not len(before) and len(run.steps) and int(run.steps[0]) > _LOG_STARTS_LATE:
        # An excerpt that starts mid-run (a bug report's one line at step 59): the steps
        # before it ran, and their checkpoints may be good.
        return (f"roll back to a checkpoint from before step {step_text(step)} (the log starts "
                "there; the run's earlier steps are not in it)")
    if not len(before):
        return _restart(run, step)
    good = _last_good_step(run, step) if best else None
    saved = _saved_checkpoints(run)
    off = _saving_off(run)
    if off is not None and not saved:
        return (f"restart from the initial model ({off}: no checkpoint was saved to go back "
                f"to; save some for the next run), as it broke at step {step_text(step)}")
    # The checkpoints the log names, else those its config's saving schedule left.
    every = None if saved else _save_interval(run, int(run.steps[-1]))
    checkpoints = every[0] if every is not None else saved
    if checkpoints or every is not None:
        last_ok = good[0][0] if good is not None else int(before[-1])
        usable = [c for c in checkpoints if c <= last_ok]
        which = (f"the last one {every[1]} {every[2]} saved" if every is not None
                 else "the last saved checkpoint")
        if usable:
            # Why that step: the best reward just before the cause, or the last logged step
            # before it ("at or before step 115; the cause is dated 130" left 115 unexplained).
            why = ("where the reward was best just before" if good is not None
                   else "the last logged step before")
            return (f"roll back to checkpoint-{usable[-1]} ({which} at or before step "
                    f"{step_text(last_ok)}, {why} the cause at step {step_text(step)})")
        if every is not None:
            if checkpoints and checkpoints[0] > every[2]:
                # save_total_limit deleted the early ones (trial 75: "saved no checkpoint
                # before step 82: the first is checkpoint-50" read against itself).
                kept = ", ".join(f"checkpoint-{c}" for c in checkpoints)
                return (f"restart from the initial model (save_total_limit {len(checkpoints)} "
                        f"kept only {kept}: none from before step {step_text(step)} is left)")
            return (f"restart from the initial model ({every[1]} {every[2]} saved no "
                    f"checkpoint before step {step_text(step)}: the first is "
                    f"checkpoint-{every[2]})")
        more = ", ..." if len(saved) > 3 else ""  # the first three, not all of them
        return (f"restart from the initial model (no saved checkpoint from before step "
                f"{step_text(step)}: {', '.join(f'checkpoint-{c}' for c in saved[:3])}{more} "
                f"{'come' if len(saved) > 1 else 'comes'} after it)")
    # The saving schedule unknown: a checkpoint that early may not exist (TRL saves every
    # 500 steps by default; trial 64's console read alone named step 35 of a run that saved
    # from step 50 on, with no way back said).
    unless = ", or restart from the initial model if none was saved by then"
    if good is not None:
        top, last = good
        return (f"roll back to a checkpoint from step {step_text(top[0])} or before (the "
                f"best reward of the last logged steps before step {step_text(step)}: "
                f"{fmt(top[1])}, against {fmt(last[1])} at step {step_text(last[0])})"
                f"{unless}")
    return (f"roll back to a checkpoint from before step {step_text(step)} (the last logged "
            f"step before it is {step_text(int(before[-1]))}){unless}")


def _saving_off(run: Run) -> str | None:
    """The setting that saves no checkpoint (the Trainer's ``save_strategy "no"``, verl's
    ``trainer.save_freq -1``), as "save_strategy no"; None when the config saves some or does
    not say."""
    flat = recipe.flat_config(run.config or {})
    for key, value in flat.items():
        last = key.rsplit(".", 1)[-1]
        text = str(getattr(value, "value", value)).strip().lower()
        if last == "save_strategy" and text in ("no", "intervalstrategy.no", "savestrategy.no"):
            return f"{key} no"
        if last == "save_freq" and recipe.as_number(value) is not None and (
                recipe.as_number(value) or 0) <= 0:
            return f"{key} {value}"
    return None


def _save_interval(run: Run, last: int) -> tuple[list[int], str, int] | None:
    """The checkpoints a config's saving schedule left by step ``last`` (the Trainer's
    ``save_steps`` under ``save_strategy steps``, verl's ``trainer.save_freq``), the key and
    its interval; the last ``save_total_limit`` of them where one is set. None when the
    config does not say (a ``save_steps`` below 1 is a share of the run: not said here)."""
    flat = recipe.flat_config(run.config or {})
    strategy, _ = recipe.lookup(flat, ("save_strategy",))
    if strategy is not None and str(getattr(strategy, "value", strategy)).strip().lower() \
            not in ("steps", "intervalstrategy.steps", "savestrategy.steps"):
        return None
    value, key = recipe.lookup(flat, ("save_steps", "trainer.save_freq", "save_freq"))
    n = recipe.as_number(value)
    if key is None or n is None or n < 1 or n != int(n):
        return None
    saved = list(range(int(n), last + 1, int(n)))
    limit = recipe.as_number(recipe.lookup(flat, ("save_total_limit",))[0])
    if limit is not None and limit >= 1:
        saved = saved[-int(limit):]
    return saved, key, int(n)


def resume_words(run: Run) -> str:
    """Where a run that stopped after its last logged step goes on from: "resume from
    checkpoint-100, the last it saved" (the checkpoints the log or its folder names, else its
    config's saving schedule)."""
    last = run.last_step if run.last_step is not None else 0
    saved = [c for c in _saved_checkpoints(run) if c <= last]
    every = None if saved else _save_interval(run, last)
    if saved:
        return f"resume from checkpoint-{saved[-1]}, the last it saved"
    if every is not None and every[0]:
        return (f"resume from checkpoint-{every[0][-1]} (the last one {every[1]} {every[2]} "
                "saved)")
    # Nothing to resume from (trial 61: "resume from the last checkpoint it saved" of a run
    # that saved none): the steps trained are lost.
    lost = f"relaunch from the start: no checkpoint was saved by step {step_text(last)}"
    off = _saving_off(run)
    if off is not None:
        return (f"{lost} ({off}), so its training is lost; save checkpoints this time "
                "(save_strategy steps, save_steps a tenth of the run or so)")
    if every is not None:
        _, key, interval = every
        return (f"{lost} ({key} {interval}), so its training is lost; save more often this "
                f"time ({key} under {step_text(last)})")
    return "resume from the last checkpoint it saved"


def stopped_cause(run: Run, checks_ran: int) -> RootCause | None:
    """The root cause of a run whose process stopped on an error after its last logged step
    (``Run.ending``), for a run no finding explains: the error to fix, then where to resume
    (a reward function's ``KeyError`` at step 120 of 200 had read HEALTHY, unsaid). None for a
    run that ended otherwise, or that the user stopped."""
    ending = run.ending
    if ending is None or not ending.needs_fix or run.last_step is None:
        return None
    resume = resume_words(run)
    summary = f"the run stopped on an error after its last logged step: {ending.words()}"
    if checks_ran:
        summary += (f"; its training up to then showed no failure mode "
                    f"({plural(checks_ran, 'check')} ran)")
    if ending.kind == "killed" and "preempted" in ending.error:
        fix = "nothing to fix in the run: the scheduler stopped it"
    elif ending.kind == "killed" and "time limit" in ending.error:
        fix = "give the job more time (or save checkpoints more often)"
    elif ending.kind == "killed":
        fix = ("find what killed the process (the host's memory: fewer rollout workers, a "
               "smaller batch or generation budget)")
    elif "out of memory" in ending.error.lower() or "OutOfMemory" in ending.error:
        fix = (f"make the step fit in memory ({ending.error}): a smaller per-device batch or "
               "num_generations, a shorter max completion length, or gradient checkpointing")
    else:
        fix = f"fix the error that stopped the run: {ending.words()}"
    return RootCause(RUN_STOPPED, run.last_step, summary, f"{fix}; then {resume}")


def _saved_checkpoints(run: Run) -> list[int]:
    """The steps of the checkpoints the log says it saved, or the output folder holds
    (``checkpoint-N``), in order."""
    saved = run.config.get(SAVED_CHECKPOINTS)
    if not isinstance(saved, list):
        return []
    return sorted({int(c) for c in saved if isinstance(c, int | float)})


#: Logged points before an onset a roll-back may reach back over.
_ROLLBACK_REACH = 3


def _last_good_step(run: Run, step: int
                    ) -> tuple[tuple[int, float], tuple[int, float]] | None:
    """The logged step, of the last ``_ROLLBACK_REACH`` before ``step``, where the reward was
    best, with the reward there and at the last one, when it is better by a tenth of the
    reward's range or more: an onset is dated where a signal left its line, and the damage
    often began a point or two before (the reward already falling, the entropy already
    climbing), so the checkpoint to go back to is the best of them, not merely the one just
    before the onset."""
    rs, r = series(run, Metric.REWARD_MEAN.value)
    i = int(np.searchsorted(rs, step))  # the points before ``step``: r[:i]
    if i < _ROLLBACK_REACH + 1:
        return None
    near = r[i - _ROLLBACK_REACH:i]
    j = i - _ROLLBACK_REACH + int(np.argmax(near))
    if j == i - 1 or r[j] - r[i - 1] < 0.1 * float(np.ptp(r)):
        return None  # no better by more than a tenth of the reward's range: noise
    return (int(rs[j]), float(r[j])), (int(rs[i - 1]), float(r[i - 1]))


def _knob_action(run: Run, root: Event, causes: Sequence[recipe.Reading], from_start: bool,
                 broke_at: int | None = None) -> _Lead:
    """The knob outside the recipe as the first action: its value, the recipe's and why,
    after going back to before the cause (before ``broke_at``, where a break began that a
    warning heads)."""
    top = causes[0]
    if from_start and not root.critical and learning(run, float(run.steps[0])).improving:
        # A warning from the first step on a run that learns all the same: its checkpoints
        # are good; the setting is for the runs after it, not a restart.
        from_start = False
    where = _restart(run, root.step) if from_start else _rollback_words(
        run, broke_at if broke_at is not None else root.step) if (
        root.incident or broke_at is not None
        or (root.critical and root.check.mode in _DESTRUCTIVE)) else ""
    solved_anyway = bool(where) and task_solved(run)
    # Spikes the run came back from each time (KL 197 at one log, 0.4 at the next): its
    # checkpoints are as good as its last; the setting is for the run from here, with the
    # finding's own first look (those batches).
    came_back = not solved_anyway and _came_back(root.check) and not any(
        aftermath(run, i.peak_step) for i in root.check.incidents)  # harm followed: it did not
    # The task's own held-out score kept rising through it (0.20 -> 0.86 under 8 PPO epochs
    # with ratios to 77): its last checkpoint is the best there is, and a roll-back to the
    # first logs would throw that away (helper-43); the setting is for the run from there.
    kept = _held_out_kept_rising(run, root.step) if (
        where and not solved_anyway and not root.incident and broke_at is None) else None
    if solved_anyway or came_back or kept:
        # (Solved: the run came through it; its last checkpoint is the one to keep, and the
        # setting is for the next run.)
        where = ""
    if (top.id == "learning_rate" and top.value == 0) or _never_updated(run):
        # An lr of 0 never moved the weights: every checkpoint is the initial model, and a
        # restart is no step to take (trial 56: "restart from the initial model ... with
        # learning_rate 0 -> 1e-6"). Nor where no update moved them (a sampler that ended
        # every completion before its answer, grad norm 0 on every step; trial 77).
        where = ""
    fix = f"{top.fix()} ({top.sentence()}; {top.why}"
    fix = fix.rstrip("; ") + ")"
    if where and top.id == "learning_rate" and not top.far and learned_before(run, root.step):
        # The run learned at this lr until it broke: halve it from the checkpoint, as after any
        # late break, rather than drop it to the recipe's (which may be a full fine-tune's,
        # 10x below a LoRA adapter's); the recipe is said beside it.
        # The lr the log shows in force at the break: a warm-up still climbing towards the
        # configured peak broke below it ("learned at 0.005 until step 75" where the log
        # showed 3.75e-3 there).
        lr = float(top.value)
        logged = _lr_in_force(run, root.step)
        # (Only a climb that never went higher: a decayed schedule broke below a peak it had
        # trained at, and its peak halved is the knob.)
        now = logged[0] if logged is not None and 0 < logged[0] < 0.9 * lr and float(
            logged[1].max()) <= 1.01 * logged[0] else lr
        half = now * 0.5
        again = f": if it breaks again, {top.fix().split(' -> ', 1)[1]}"
        if top.setting.recipe.endswith(recipe.USER_RECIPE) and top.setting.high and (
                half > top.setting.high * 0.5):
            # A ceiling the user set for this model is its own: never left above it (the
            # chapter's default may be a full fine-tune's, 10x below a LoRA adapter's).
            half, again = top.setting.high * 0.5, ""
        decayed = logged is not None and now == lr and 0 < logged[0] < 0.9 * lr
        # A schedule that had decayed by the break: its peak is the knob, said as a peak
        # ("learned at 9.8e-5 until step 150" where 2.7e-5 was in force there).
        learned = (f"the run learned at a peak of {_lr(lr)}, decayed to {_lr(logged[0])} by "
                   f"step {step_text(root.step)} where it broke" if decayed and logged else
                   f"the run learned at {_lr(now) if now == lr else 'up to ' + _lr(now)} "
                   f"until step {step_text(root.step)}")
        fix = (f"learning_rate {_lr(lr)} -> {_lr(half)} ({learned}; {_lr(lr)} is "
               f"{top.how_far()}{again})")
    # A setting at fault from the first step of a run solved all the same came through
    # nothing: the setting leads (a live check at step 10 had opened "no roll-back: the run
    # came through it" at temperature 0.2, trial 43's cb_temp_low).
    text = f"{where}, with {fix}" if where else (
        f"for the next run, {fix}; no roll-back: {_solved_words(run)}" if from_start
        else f"{_SOLVED_ANYWAY}, {fix}") if solved_anyway \
        else (f"no roll-back: the held-out score kept rising through it ({kept}); from the "
              f"last checkpoint, {fix}") if kept else fix
    look = next((str(r) for r in root.check.remedies if (isinstance(r, str) or not (
        r.knob or r.rollback_step is not None)) and top.name not in str(r)), None)
    if came_back and look is not None:
        text = f"{text}; then {look}"
    calm = _calm(root.check)
    # A convergence: its checkpoints are good. (A setting far outside the recipe, a penalty
    # on entropy or top_p 0.5, is said first all the same; but not a step size that took the
    # run to a solved task: its twin 20x the ceiling read "nothing urgent" beside it.)
    calm_first = calm is not None and not where and (
        not top.far or (top.id == "learning_rate" and task_solved(run)))
    if calm_first and top.id == "learning_rate" and task_solved(run) and isinstance(
            top.value, (int, float)) and top.value > 0 and not top.setting.recipe.endswith(
                recipe.USER_RECIPE):
        # (A ceiling the user set for this model stands: its target is the model's own.)
        # Solved at this rate: the chapter's own remedy for a sharpening, halved, not the
        # recipe's start (a tiny model solving its task at 3e-4 had read "-> 1e-6", a rate
        # that learns nothing there; trial 52).
        value = float(top.value)
        text = (f"learning_rate {_lr(value)} -> {_lr(value * 0.5)} (slows the sharpening; the "
                f"run solved its task at {_lr(value)}, so the recipe's "
                f"{top.fix().split(' -> ', 1)[1].split(',', 1)[0]} is a larger model's)")
    if calm_first:
        # Converging on its training prompts only: the prompts come with the setting.
        prompts = f"{_MORE_PROMPTS}; and " if root.check.evidence.get("heldout_gap") else ""
        text = f"{calm}; for the next run: {prompts}{text}"
    _, sep, after = root.summary.partition("; after a catastrophic update")
    # A sign other than the root finding itself (named just before: "first sign:
    # entropy_blowup at step 140" after "entropy_blowup at step 140" said nothing).
    sign = (f"a catastrophic update{after.split(':', 1)[0]}" if sep else
            root.summary.split("; then")[0] if root.incident else None)
    # The symptom beside the setting: a cause with nothing it caused quoted is a guess.
    said = headline(without_mode_name(root.summary, root.check.mode))
    shown = f"; first sign: {sign}" if sign else f": {said}"
    summary = (f"the setting {top.name} {top.value_text} ({top.how_far()}), a known cause of "
               f"{_mode_words(root.check.mode, top)}{shown}")
    if calm_first:
        # Not the cause of a failure: the run converged; the setting is what to change next.
        summary = (f"{said}; the setting {top.name} {top.value_text} ({top.how_far()}) is a "
                   f"known cause of {_mode_words(root.check.mode, top)}")
    knob = next((k for k in knobs.KNOBS if k.names[:1] == top.setting.names[:1]), None)
    # A step size or a loss weight wrong from the start shapes the run as it trains: a
    # gradual fall from step 1 is a dynamic (audit had said "a setup problem" of an lr behind
    # an entropy sharpening; trial 67), a run it killed at its first update is no run to
    # roll back. A budget, a sampler or a dtype is wrong before any update.
    setup = from_start and (top.id not in _TRAINING_SETTINGS or root.incident
                            or "catastrophic update" in root.summary)
    return _Lead(knobs.Remedy(text, knob=knob, rollback_step=root.step if where else None),
                 summary=summary, knob=_Knob(top), setup=setup,
                 extra_knobs=tuple(causes[1:]))


#: Settings that shape the updates as the run trains, not what it samples or computes in:
#: wrong from the start, what they break is a training dynamic, not a setup problem.
_TRAINING_SETTINGS = frozenset({
    "learning_rate", "beta", "entropy_coef", "epsilon", "epsilon_high", "max_grad_norm",
    "num_iterations", "adam_beta2", "adaptive_kl", "ref_model_sync_steps", "loss_type",
    "top_entropy_quantile", "num_generations"})


def learned_before(run: Run, step: int) -> bool:
    """The reward rose, beyond its noise and by a quarter of its range, over the logged
    points before ``step``: the run learned at its settings before it broke."""
    rs, r = series(run, Metric.REWARD_MEAN.value)
    before = r[rs < step]
    if len(before) < 10:
        return False
    k = end_size(len(before), 0.1)
    gain = float(np.median(before[-k:]) - np.median(before[:k]))
    return gain >= max(3.0 * step_noise(before), 0.25 * float(np.ptp(r)))


def _mode_words(mode: str, reading: recipe.Reading) -> str:
    link = reading.risks(mode)
    if link is None and reading.risks(recipe.CATASTROPHIC_UPDATE):
        return "updates that move the policy too far at once"
    return mode.replace("_", " ")


def _setup_problem(run: Run, root: Event, setup: recipe.Setup, checks: Sequence[Check]
                   ) -> _Lead | None:
    """A run wrong from its first logged step: the setup, not the training, is the cause."""
    check = root.check
    by_mode = {c.mode: c for c in checks if c.fired}
    numeric = by_mode.get("numerical_failure")
    if numeric is not None and numeric.status is not Status.CRITICAL:
        # Only a logged statistic (KL, entropy) went non-finite, the loss and the gradient
        # stayed finite: how it is computed broke, not the dtype; its own checks lead.
        numeric = None
    if numeric is not None and (check is numeric or _policy_never_moved(run, setup)):
        return _numerical_setup(run, setup, numeric)
    if check.mode == "length_hacking" and check.evidence.get("truncated_from_start"):
        share = float(check.evidence.get("truncated_early",
                                         check.evidence.get("truncated_share", 0.0)))
        length = setup.get("max_completion_length")
        short_of_budget = _stops_before_budget(run, length)
        if short_of_budget is not None:
            return short_of_budget
        cap = check.evidence.get("cap")
        target = _budget_target(length, float(cap) if cap else None, share)
        cut = str(check.evidence.get("truncated_text")
                  or f"{share:.0%} of completions were cut at the cap from the first log")
        masked = _masked_out(run, setup)
        stops = _stop_never_comes(run)
        # Tokens the sampler may never write (the answer's tag or stop among them), or a
        # floor on the length no completion may end before: every completion runs to the
        # cap, whatever its length (trial 68: "/" banned read "max_completion_length 12 ->
        # 24"; trial 71: min_new_tokens 12 at a budget of 12 read "check the stop").
        for held, what in (("banned_tokens", "banned tokens"),
                           ("min_new_tokens", "a minimum length")):
            reading = setup.get(held)
            if reading is not None and reading.outside:
                text = (f"{reading.fix()} ({reading.sentence()}): {cut}; {reading.why}; only "
                        f"then, if answers need room, {target}")
                return _Lead(knobs.Remedy(text), summary=f"a setup problem, {what}: {cut}",
                             knob=_Knob(reading), setup=True)
        if stops is not None and stops[1] is not None:
            share_steps, (term, a, b) = stops[0], stops[1]
            # Answers judged right inside completions that never once ended: they fit, and
            # what is cut is what follows them (trial 53: an eos the model never writes,
            # correctness 0.35 -> 0.80 with every completion at the 24-token cap; "24 -> 96"
            # would buy 4x the text after the answer).
            text = (f"check the stop first: {cut}, not one ending on its own on "
                    f"{share_steps:.0%} of logged steps, though {term} rose {fmt(a)} -> {fmt(b)} "
                    f"inside them: the answers fit, the stop never comes; make generation stop "
                    f"on the token the model ends with "
                    f"({_STOP_TOKEN}){masked}; only then, if answers need room, {target}")
            summary = f"a setup problem, generation never stops: {cut}"
            event = NEVER_STOPS
        else:
            # Not in parentheses: the audit's line drops them, and this is an either-or.
            stop = (f", or generation never stops (with short answers, check the stop token: "
                    f"{_STOP_TOKEN})" if stops is not None else "")
            text = (f"{target}: {cut}, so the budget is too small for the task's answers{stop} "
                    f"(a setup problem){masked}; raise it before any overlong shaping, which "
                    "would drop or penalise most of the batch")
            summary = f"a setup problem, the completion budget: {cut}"
            event = BUDGET_TOO_SMALL
        reading = length if length is not None and length.value is not None else None
        return _Lead(knobs.Remedy(text, knob=knobs.MAX_LENGTH), summary=summary,
                     knob=_Knob(recipe.replace_verdict(reading, recipe.LOW))
                     if reading is not None else None, setup=True, cause=event)
    first_update = _exploded_before_updates(run, setup, check)
    if first_update is not None:
        return first_update
    burst = _kl_burst_at_start(run, setup, check)
    if burst is not None:
        return burst
    if check.mode == "kl_drift" and check.evidence.get("offset_from_start"):
        return _Lead(knobs.Remedy(
            "check the reference model against the policy at step 0: the same checkpoint, "
            "dtype and quantization (KL should start near 0; it was already "
            f"{_kl_at_start(run)} at the first logged step)"),
            summary=f"a setup problem: the policy and the reference differ from the first "
                    f"logged step ({root.summary})", setup=True)
    return None


def _broke_at_resume(run: Run, root: Event, causes: Sequence[recipe.Reading]
                     ) -> _Lead | None:
    """A finding that begins where a launch resumed from a checkpoint begins: what changed at
    the resume caused it. The settings the checkpoints show it changed are put back; with
    none known, it leads under no setting of the config (the latest launch's) far outside the
    recipe but a learning rate the log shows unchanged across the resume (trial 67:
    temperature 1.0 -> 2.5 at a resume, entropy x25 in one step there, read from the console
    alone as "learning_rate 1e-4 -> 5e-5", the lr it was already at). A warning too: a reward
    at its top from the very step a resume began is no task solved (trial 68: top_p 0.05 set
    at a resume read "the task is solved: stop here"). None otherwise."""
    onset = root.check.onset_step
    start = _at_resume(run, onset) if onset is not None else None
    if start is None:
        return None
    saved = start - _log_interval(run)
    # Not solved: at its best from the very step the resume began.
    said = root.summary.replace("(the task is solved)", "(from the resume on)")
    if run.changed_at_resume:
        # The checkpoints' saved settings say what the resume changed: put it back.
        back = ", ".join(f"{k} {after} -> {before}"
                         for k, (before, after, _) in run.changed_at_resume.items())
        return _Lead(knobs.Remedy(
            f"resume from checkpoint-{saved} (the one it resumed from) with {back}: the run "
            f"broke at step {step_text(start)}, where it was resumed with "
            f"{'it' if len(run.changed_at_resume) == 1 else 'them'} changed"),
            summary=f"a change at the resume (step {step_text(start)}): {said}")
    if any(r.far and (r.id != "learning_rate" or _lr_moved_at(run, start)) for r in causes):
        return None  # the latest launch's config names it
    return _Lead(knobs.Remedy(
        f"check what changed when the run was resumed at step {step_text(start)}, where it "
        f"broke: the resumed launch's settings against the first's (sampling: temperature, "
        f"top_p; the learning rate and its schedule) and the checkpoint it loaded; then resume "
        f"from checkpoint-{saved} (the one it resumed from) with the first launch's settings"),
        summary=f"a change at the resume (step {step_text(start)}): {said}")


def _other_model_nan(run: Run, root: Event) -> _Lead | None:
    """A NaN only in another model's update (a PPO critic's value loss, an online reward
    model's), the policy's numbers finite: back to before it, then that model's settings, not
    the policy's lr (helper-88: "learning_rate 1e-4 -> 2.5e-6" for a critic's NaN at 100)."""
    if root.check.mode != "numerical_failure":
        return None
    bad = set(root.check.evidence.get("non_finite", {}))
    others = other_models(run)
    if not bad or not bad <= set(others):
        return None
    model, check = other_model(sorted(others))
    return _Lead(knobs.Remedy(
        f"{_rollback_words(run, root.step)}, then check {model}, not the policy, whose "
        f"numbers stayed finite: {check}", rollback_step=root.step),
        summary=f"another model's update went NaN: {root.summary}")


def _at_resume(run: Run, step: int) -> int | None:
    """The first step of the resumed launch ``step`` falls at (within a logging interval
    after it), or None. A break before it was the first launch's: its checkpoint holds it
    (helper-88)."""
    interval = _log_interval(run)
    return next((s for s in run.resumed_at if s <= step <= s + interval), None)


def _log_interval(run: Run) -> int:
    """The run's steps between logs (1 when it logs one step)."""
    span = span_of(run)
    return max(1, int(round(span.gap))) if span is not None else 1


def _lr_moved_at(run: Run, step: int) -> bool:
    """Whether the logged learning rate changed by more than half across ``step``."""
    steps, lr = series(run, Metric.LEARNING_RATE.value)
    before, after = lr[steps < step], lr[steps >= step]
    if not len(before) or not len(after) or before[-1] <= 0:
        return bool(not len(lr))  # no lr logged: it may have
    return not 2 / 3 <= after[0] / before[-1] <= 1.5


def _kl_burst_at_start(run: Run, setup: recipe.Setup, check: Check) -> _Lead | None:
    """A KL incident at the log's first step, far above the stop line, under no setting far
    outside the recipe that could have driven it: the policy and its reference differed from
    the start, or the sampler reshaped the logits the reference scores (trial 65: KL 10,833 at
    a grammar-constrained run's first log, lr 1.1e-6, read "learning_rate first"). None
    otherwise."""
    from grpo_doctor.importers.console import LOG_LINE_STEPS

    if check.mode != "kl_drift" or not len(run.steps) or LOG_LINE_STEPS in run.notes:
        return None  # (a log's first line is no first update: an excerpt, trial 66)
    first = next((i for i in check.incidents if i.step == int(run.steps[0])), None)
    if first is None or first.threshold is None or first.peak < 10 * first.threshold:
        return None
    if any(r.far for r in setup.causes({check.mode}, critical=True)):
        return None
    return _Lead(knobs.Remedy(
        f"check the reference model against the policy, and the sampler against both: the KL "
        f"was {fmt(first.peak)} at the log's first step, step {step_text(first.step)}, where the "
        "policy had barely moved from its reference: the same checkpoint, dtype and "
        "quantization for both, and no logits processing (constrained decoding, a grammar, "
        "a logit bias) in the rollout that the reference does not see"),
        summary=f"a setup problem: the policy and its reference far apart from the first "
                f"logged step ({check.summary})", setup=True)


def _exploded_before_updates(run: Run, setup: recipe.Setup, check: Check) -> _Lead | None:
    """A gradient norm above the explosion line at step 0 or 1, the first logged step: the
    gradient of the initial model, before any update a learning rate sized, so no lr cut
    explains it (trial 62: 2.96e9 at slime's step 1 with the loss and KL normal had read
    "restart, then learning_rate 1e-7 -> 5e-8"). None otherwise, and None under a setting far
    outside the recipe that sizes updates: a step can hold several optimizer updates
    (mini-batches, iterations), and an lr of 2e-2 without clipping made its first step's
    norm 181 (trial 36)."""
    if check.mode != "grad_explosion" or not len(run.steps) or int(run.steps[0]) > 1:
        return None
    if any(r.far for r in setup.causes({check.mode}, critical=True)):
        return None
    first = next((i for i in check.incidents if i.step == int(run.steps[0])), None)
    if first is None:
        return None
    _, norms = series(run, Metric.GRAD_NORM.value)
    at_first = float(norms[0]) if len(norms) else float(first.peak)
    clip = knobs.clip_gradients(run, "the first gradient is already huge")
    clip_text = f"{clip}; then " if clip else "clipping bounds the step, but "
    text = (f"the gradient norm was {fmt(at_first)} at step {step_text(first.step)}, the "
            "first update's, taken on the initial model before any step the learning rate "
            f"sized: a setup problem, not an instability (a smaller lr cannot lower it); "
            f"{clip_text}check what the norm is taken over: a loss summed over tokens instead "
            "of averaged, rewards or advantages far from unit scale, an fp16 loss scale not "
            "unscaled before the norm is read")
    return _Lead(knobs.Remedy(text, knob=clip.knob if clip else None),
                 summary=f"a setup problem, the gradient of the initial model: "
                         f"{check.summary}", setup=True)


_STOP_TOKEN = ("tokenizer.eos_token / generation_config.eos_token_id, the chat template's "
               "end-of-turn token")


#: Mean completion length, in tokens, at or under which a completion ended at once, and the
#: share of logged steps it must hold on.
_AT_ONCE_TOKENS = 2.0
_AT_ONCE_SHARE = 0.9


def _ends_at_once(run: Run, setup: recipe.Setup) -> _Lead | None:
    """Generation that stops at once: completions of 2 tokens or fewer on average on 90%+ of
    5+ logged steps from the first, none cut at a cap, a budget above that if one is set, and
    a reward that never varied: nothing was written to score (trial 56: the eos token set to
    "<", the answer's first character; 1.3 tokens, read "check the reward function"). A task
    answered in one token pays some of them. None otherwise."""
    _, length = series(run, Metric.RESPONSE_LENGTH_MEAN.value)
    _, reward = series(run, Metric.REWARD_MEAN.value)
    if len(length) < 5 or len(reward) < 5 or float(np.ptp(reward)) > 1e-9:
        return None
    share = float(np.mean(length <= _AT_ONCE_TOKENS))
    if share < _AT_ONCE_SHARE or length[0] > _AT_ONCE_TOKENS:
        return None
    _, cut = series(run, Metric.TRUNCATION_RATIO.value)
    budget = setup.get("max_completion_length")
    if (len(cut) and float(np.median(cut)) > 0.05) or (
            budget is not None and isinstance(budget.value, (int, float))
            and budget.value <= 2 * _AT_ONCE_TOKENS):
        return None  # cut at a cap that small: the budget, said by the length finding
    said = (f"completions {fmt(float(np.median(length)))} tokens long on average from the "
            f"first logged step ({share:.0%} of logged steps at {fmt(_AT_ONCE_TOKENS)} or "
            f"fewer), none cut at a cap, and the reward {fmt(float(reward[0]))} on every step")
    return _Lead(knobs.Remedy(
        f"check the stop first: {said}: generation stops at once, before any answer, so there "
        f"is nothing to score; check the stop token ({_STOP_TOKEN}) and any stop strings "
        "against the start of a right answer"),
        summary=f"a setup problem, generation stops at once: {said}", setup=True)

#: The share of logged steps on which every completion was cut (``_EVERY_ONE_CUT`` or more of
#: them) for "not one completion ended on its own": a budget one token short still lets a
#: malformed short answer end on a quarter of the steps (trial 45); a stop token the model
#: never writes, none (trial 53: 199 of 200 steps).
_NEVER_ENDS = 0.95
_EVERY_ONE_CUT = 0.99


def _stop_never_comes(run: Run) -> tuple[float, tuple[str, float, float] | None] | None:
    """(share of steps all cut, (task term, first-fifth mean, last-fifth mean) when a
    correctness-like 0-1 term rose 0.15 or more meanwhile) when not one completion ended on
    its own on ``_NEVER_ENDS`` of 20+ logged steps; None otherwise."""
    _, t = series(run, Metric.TRUNCATION_RATIO.value)
    if len(t) < 20:
        return None
    share = float(np.mean(t >= _EVERY_ONE_CUT))
    if share < _NEVER_ENDS:
        return None
    for name, col in components(run).items():
        if component_role(run, name) != "correctness":
            continue
        v = series(run, col)[1]
        k = max(3, len(v) // 5)
        if len(v) >= 20 and v.min() >= 0 and v.max() <= 1 and (
                float(np.mean(v[-k:])) - float(np.mean(v[:k])) >= 0.15):
            return share, (name, float(np.mean(v[:k])), float(np.mean(v[-k:])))
    return share, None


def _masked_out(run: Run, setup: recipe.Setup) -> str:
    """'; with truncated completions masked out, ...' when the config masks them and the
    gradient was 0 on most logged steps: every completion cut, so none was trained on (trial
    53: grad norm 0 on 197 of 200 steps). '' otherwise."""
    shaping = setup.get("overlong_shaping")
    if shaping is None or shaping.value is not True:
        return ""
    _, g = series(run, Metric.GRAD_NORM.value)
    zero = int(np.sum(g == 0))
    if len(g) < 10 or zero < 0.8 * len(g):
        return ""
    return (f"; with truncated completions masked out ({shaping.source or 'the config'}), "
            f"none was trained on: grad norm 0 on {zero:,} of {len(g):,} logged steps")


def _never_fired_terms(run: Run, checks: Sequence[Check]) -> list[str]:
    """The task's correctness-like reward terms that never moved over the log, as the findings
    found them (format gaming's, or the pinned components of an advantage collapse)."""
    names: list[str] = []
    for c in checks:
        if not c.fired:
            continue
        names += [str(n) for n in c.evidence.get("correctness_never_moved") or ()]
        names += [str(n) for n in c.evidence.get("pinned_components") or ()
                  if component_role(run, str(n)) == "correctness"]
    _, held = series(run, Metric.HELDOUT_SCORE.value)
    if len(held) >= 3 and not np.any(held):  # not one held-out prompt ever right
        names.append(_HELDOUT_NEVER)
    return list(dict.fromkeys(names))


#: The longest completion at most this share of the configured budget: what cuts them is not
#: the budget.
_UNDER_BUDGET = 0.75


def _stops_before_budget(run: Run, length: recipe.Reading | None) -> _Lead | None:
    """Completions counted as cut (no end-of-sequence token) from the first logs, the longest
    of the run far under the configured budget: generation stops before it (a wall-clock
    ``max_time``, a stop string), and a larger budget would change nothing (trial 82b:
    generation_kwargs max_time 0.015, every completion stopped at 3-8 tokens of 12, read
    "max_completion_length 12 -> 48"). None otherwise."""
    budget = recipe.as_number(length.value) if length is not None else None
    _, top = series(run, Metric.RESPONSE_LENGTH_MAX.value)
    if budget is None or budget <= 0 or len(top) < 5:
        return None
    longest = float(np.max(top))
    if longest > _UNDER_BUDGET * budget:
        return None
    flat = recipe.flat_config(run.config) if run.config else {}
    timed = next(((k, v) for k, v in flat.items() if k.rsplit(".", 1)[-1] == "max_time"
                  and v is not None), None)
    said = (f"every completion ended without the end-of-sequence token at {fmt(longest)} "
            f"tokens or fewer, under the budget of {fmt(budget)}")
    if timed is not None:
        text = (f"remove {timed[0]} {timed[1]} (a wall-clock limit on generation): {said}: "
                "generation stops when the time is up, mid-answer; a larger budget would "
                "change nothing (a setup problem)")
    else:
        text = (f"check what stops generation before the budget: {said} (a max_time, a "
                "stop string or a max_new_tokens in the generation config); a larger "
                "max_completion_length would change nothing (a setup problem)")
    return _Lead(knobs.Remedy(text), summary=f"a setup problem, generation stops before its "
                 f"budget: {said}", setup=True, cause=STOPS_EARLY)


def _answers_cut_short(run: Run, setup: recipe.Setup, checks: Sequence[Check]
                       ) -> _Lead | None:
    """Most completions cut at the length cap over the first logs, and the task's own reward
    term never fired: an answer that does not fit is never judged right. The policy may since
    have learned to end before the cap (the truncated share falls, the reward rises on format
    alone), but the answers still do not fit: the budget is the setup problem to fix first."""
    never = _never_fired_terms(run, checks)
    steps, t = series(run, Metric.TRUNCATION_RATIO.value)
    if not never or len(t) < 3 or int(steps[0]) > 20:
        return None
    # The first few logs only: a policy squeezed by the budget soon learns to stop early.
    early = float(np.median(t[:end_size(len(t), 0.05)]))
    if early < _CUT_AT_START or float(t[0]) < _CUT_AT_START:
        return None
    late = float(np.median(t[-late_points(len(t), min_n=2 if len(t) < 10 else 5):]))
    length = setup.get("max_completion_length")
    short_of_budget = _stops_before_budget(run, length)
    if short_of_budget is not None:
        return short_of_budget
    _, top = series(run, Metric.RESPONSE_LENGTH_MAX.value)
    target = _budget_target(length, float(top.max()) if len(top) else None, early)
    said = " and ".join("the held-out score stayed at 0" if n == _HELDOUT_NEVER else
                        f"{n} never fired" for n in never)
    cut = (f"{early:.0%} of completions were cut at the cap over the first logs "
           f"({late:.0%} late in the run) and {said}")
    text = (f"{target}: {cut}; an answer cut off is never judged right, so the budget is too "
            "small for the task's answers (a setup problem): raise it first, then check "
            + ("a few completions against the task's answers" if never[0] == _HELDOUT_NEVER
               else f"{never[0]} on a few completions"))
    reading = length if length is not None and length.value is not None else None
    return _Lead(knobs.Remedy(text, knob=knobs.MAX_LENGTH),
                 summary=f"a setup problem, the completion budget: {cut}",
                 knob=_Knob(recipe.replace_verdict(reading, recipe.LOW))
                 if reading is not None else None, setup=True, cause=BUDGET_TOO_SMALL)


def _budget_cut_at(run: Run, root: Event, setup: recipe.Setup) -> _Lead | None:
    """The budget in force cut at a step of the run (or the completions' stop changed there):
    from a step within a few logged points of the root's, every completion is cut (90% or
    more, against 10% or less before) and all are one length, shorter than the longest logged
    before (lengths that vary, at half the budget or less, are a stop that changed). The
    sampler's budget changed there (a relaunch or a generation setting), not the policy:
    restore it and go back to before it (trial 78: cut to 7 tokens at step 201 under a
    configured 12 read "learning_rate 1e-4 -> 5e-5"). None otherwise."""
    ts, t = series(run, Metric.TRUNCATION_RATIO.value)
    ls, top = series(run, Metric.RESPONSE_LENGTH_MAX.value)
    ms, mean = series(run, Metric.RESPONSE_LENGTH_MEAN.value)
    # On the steps both lengths hold a value (a few NaN lengths had dropped the check; h117).
    both = np.intersect1d(ls, ms)
    top, mean, ls = top[np.isin(ls, both)], mean[np.isin(ms, both)], both
    if len(t) < 10 or len(top) < 10:
        return None
    i = int(np.searchsorted(ts, root.step))
    window = range(max(1, i - 3), min(len(t), i + 4))
    at = next((j for j in window if t[j] >= 0.9 and float(np.median(t[max(0, j - 5):j])) <= 0.1
               and len(t[j:]) >= 5 and float(np.median(t[j:])) >= 0.9), None)
    if at is None:
        return None
    step = int(ts[at])
    k = int(np.searchsorted(ls, step))
    after_top, after_mean = top[k:], mean[k:]
    length = setup.get("max_completion_length")
    configured = recipe.as_number(length.value) if length is not None else None
    one_length = len(after_top) >= 5 and float(np.ptp(after_top)) == 0 and float(
        np.max(np.abs(after_mean - after_top))) <= 0.5
    if not one_length and len(after_top) >= 5 and k and float(np.median(after_top)) <= 0.5 * min(
            configured or float("inf"), float(np.max(top[:k]))):
        # Counted as cut (no end-of-sequence token) at half the budget or less, shorter than
        # before: the generation's stop changed, not its budget (trial 79: eos_token_id set to
        # ">" from step 181, every completion "<a>" at 3 tokens under a budget of 12, read
        # "roll back, then learning_rate 1e-4 -> 5e-5").
        said = fmt(float(np.median(after_top)))
        under = (f"far under the budget of {fmt(configured)}" if configured else
                 f"shorter than the {fmt(float(np.max(top[:k])))} they had reached")
        text = (f"restore how completions stop: from step {step_text(step)} "
                f"{float(np.median(t[at:])):.0%} of completions ended without the end-of-"
                f"sequence token at about {said} tokens, {under} (an eos_token_id, a stop "
                f"string or a relaunch changed there); then "
                f"{_rollback_words(run, step, best=False)}: the policy did not change there")
        return _Lead(knobs.Remedy(text, rollback_step=step),
                     summary=f"completions stopped at about {said} tokens without the "
                             f"end-of-sequence token from step {step_text(step)}: "
                             f"{root.summary}", sampling_changed=True,
                     cause=STOP_CHANGED)
    if not one_length:
        return None  # not one length for every completion: no budget of its own
    cap, longest = float(after_top[0]), float(np.max(top[:k])) if k else 0.0
    if not k or cap >= longest:
        return None
    if configured is not None and cap >= configured:
        return None  # cut at the config's own budget: no cut of it (h114)
    said = f", the config's {fmt(configured)}" if configured else ""
    text = (f"restore the completion budget: from step {step_text(step)} every completion was "
            f"cut at {fmt(cap)} tokens, where completions had reached {fmt(longest)} before "
            f"(a relaunch or a generation setting cut it{said}); then "
            f"{_rollback_words(run, step, best=False)}: the policy did not change there")
    return _Lead(knobs.Remedy(text, rollback_step=step),
                 summary=f"the completion budget cut to {fmt(cap)} tokens at step "
                         f"{step_text(step)}: {root.summary}", sampling_changed=True,
                 cause=BUDGET_CUT)


#: Logged points between a change of the reward's make-up and the root's onset for the one to
#: explain the other.
_REDEFINED_NEAR = 3


def _reward_redefined_at(run: Run, root: Event) -> _Lead | None:
    """The reward's make-up changed where the root began: its weights (a resume with other
    ``reward_weights``) or a term that began paying there. The reward's fall or jump is its
    definition's, not the policy's (trial 80: correctness weighted 0 from step 161, and a
    length penalty paying -2.4 from step 161, each read as a reward crash, "learning_rate
    1e-4 -> 5e-5", "the run came through it and solved its task"). None otherwise."""
    changed = reweighting(run)
    if changed is not None and _near(run, changed.step, root.step) and (
            not _config_weights_either_side(run, changed)):
        held = _terms_across(run, changed.step, ())
        if not held:
            return None
        # Neither sum is the config's: what each term scores changed, not the weights (a mix
        # of prompts whose terms score only their own; h120: "restore the reward's weights").
        text = (f"read the terms, not the reward, across step {step_text(changed.step)}: "
                f"the reward is {changed.said(changed.after)} from there, "
                f"{changed.said(changed.before)} before, neither the config's weights: the "
                "share of completions each term scores changed there (a curriculum stage or a "
                f"data mix){held}; judge the run on its terms")
        return _Lead(knobs.Remedy(text), summary=(
            f"the reward's make-up changed at step {step_text(changed.step)}: {root.summary}"),
            sampling_changed=True, not_dynamics=True, cause=REWARD_REWEIGHTED)
    if changed is not None and _near(run, changed.step, root.step):
        held = _terms_across(run, changed.step, ())
        dropped = changed.dropped()
        lost = (f"; {', '.join(dropped)} weighted 0 no longer trains the policy" if dropped
                else "")
        text = (f"restore the reward's weights: {changed.from_words()} the reward "
                f"is {changed.said(changed.after)}, where before it was "
                f"{changed.said(changed.before)} (a resume or a config with other "
                f"reward_weights?){lost}; the reward's change there is its definition's, "
                f"not the policy's{held}")
        return _Lead(knobs.Remedy(text), summary=(
            f"the reward's weights changed at step {step_text(changed.step)}: {root.summary}"),
            sampling_changed=True, not_dynamics=bool(held), cause=REWARD_REWEIGHTED)
    switched = term_switched_on(run)
    if switched is not None and _near(run, switched.step, root.step):
        held = _terms_across(run, switched.step, (switched.name,))
        text = (f"check the {switched.name} term, which began paying at step "
                f"{step_text(switched.step)} ({fmt(switched.before)} before, "
                f"{switched.since()}): the reward's change there "
                f"({fmt(switched.reward_before)} -> {fmt(switched.reward_after)}) is that term's"
                f"{held}; if it is meant, weigh it so that "
                "it shapes the task's reward rather than swamps it, and judge the run on the "
                "other terms; if not, remove it")
        return _Lead(knobs.Remedy(text), summary=(
            f"the {switched.name} term began paying {fmt(switched.after)} at step "
            f"{step_text(switched.step)}: {root.summary}"), sampling_changed=True,
            not_dynamics=bool(held), cause=TERM_ADDED)
    return None


#: A change of the completions at one logged step: the truncated share up by this much (from
#: at most a third of it before), or the mean length by this share of its level.
_CUT_JUMP, _LENGTH_JUMP = 0.2, 0.15
#: Logged points before a step whose grad norms were an ordinary update's: none above this
#: multiple of their median over the stretch before.
_ORDINARY_GRAD = 3.0


def _sampler_changed_at(run: Run, root: Event) -> _Lead | None:
    """A reward crash in one logged step at which the completions changed at once (many more
    cut at the length cap, or a mean length far off its level), after an ordinary update (the
    grad norms of the steps before at their level, the lr unchanged): one update does not move
    the policy that far, so what made or scored the completions changed there (trial 82:
    temperature 2.0 from step 181, 50% of completions at the cap from 0%, read "roll back,
    then learning_rate 1e-4 -> 5e-5"). None otherwise."""
    if root.check.mode != "reward_overfit":
        return None
    step = root.step
    ts, t = series(run, Metric.TRUNCATION_RATIO.value)
    ls, length = series(run, Metric.RESPONSE_LENGTH_MEAN.value)
    gs, g = series(run, Metric.GRAD_NORM.value)
    rs, r = series(run, Metric.REWARD_MEAN.value)
    k, j, i = (int(np.searchsorted(x, step)) for x in (ts, gs, rs))
    if k < 10 or j < 10 or i < 10 or len(t) - k < 5 or _lr_moved_at(run, step):
        return None
    # The reward's fall happened at the step itself, not over several.
    if i >= len(r) or float(np.median(r[i - 5:i])) - float(r[i]) < 0.5 * (
            float(np.median(r[i - 5:i])) - float(np.median(r[i:i + 5]))):
        return None
    quiet = g[max(0, j - 3):j]
    if not len(quiet) or float(np.max(quiet)) > _ORDINARY_GRAD * float(np.median(g[:j])):
        return None  # an update out of scale came first: the policy's own doing
    cut_before, cut_after = float(np.median(t[k - 10:k])), float(np.median(t[k:k + 5]))
    changed = []
    if cut_after - cut_before >= _CUT_JUMP and float(t[k]) - cut_before >= _CUT_JUMP:
        changed.append(f"{cut_after:.0%} of completions cut at the length cap, "
                       f"{cut_before:.0%} before")
    m = int(np.searchsorted(ls, step))
    if 10 <= m < len(length) - 4:
        was, now = float(np.median(length[m - 10:m])), float(np.median(length[m:m + 5]))
        if was > 0 and abs(now - was) >= _LENGTH_JUMP * was and abs(
                float(length[m]) - was) >= _LENGTH_JUMP * was:
            changed.append(f"the mean length {fmt(was)} -> {fmt(now)} tokens")
    if not changed:
        return None
    said = "; ".join(changed)
    text = (f"check what generated or posed the completions from step {step_text(step)}: in "
            f"one logged step {said}, and the reward fell {fmt(float(np.median(r[i - 5:i])))} "
            f"-> {fmt(float(r[i]))}, after an ordinary update (grad norm "
            f"{fmt(float(quiet[-1]))}, the lr unchanged), which cannot move the policy that "
            "far: a sampling setting (temperature, top_p/top_k, a repetition penalty, a "
            "generation config set at a resume) or the prompts changed there; restore it, "
            f"then {_rollback_words(run, step, best=False)}")
    return _Lead(knobs.Remedy(text, rollback_step=step), summary=(
        f"the completions changed at once at step {step_text(step)} ({said}): "
        f"{root.summary}"), sampling_changed=True, not_dynamics=True, cause=SAMPLER_CHANGED)


def _scores_missing_at(run: Run, root: Event) -> _Lead | None:
    """Scores missing from a reward term where the root began: the reward fell short of its
    terms' weighted sum, the sum it had held (a reward function returning None, a checker
    timing out), the terms' own levels unchanged: the scorer to fix, not the policy (trial 81:
    read "reward crash: roll back, then learning_rate 1e-4 -> 5e-5"). None otherwise."""
    found = scores_missing(run)
    if found is None or not _near(run, found.step, root.step):
        return None
    which = " or ".join(found.names)
    text = (f"check {which} on completions from step {step_text(found.step)} on: "
            f"{found.words()} (a reward function returning None, or a checker that timed out "
            "or failed, for part of the batch: an unscored completion is paid by the other "
            "terms only, so its group's advantages are noise); fix it, then "
            f"{_rollback_words(run, found.step, best=False)}: the updates since were made on "
            "the scores that were there")
    return _Lead(knobs.Remedy(text, rollback_step=found.step), summary=(
        f"{found.words()}: {root.summary}"),
        sampling_changed=True, not_dynamics=True, cause=SCORES_MISSING)


def _redefined_near(run: Run, events: Sequence[Event]) -> Event | None:
    """The first finding that began where the reward's make-up changed (its weights, or a
    term switched or ramped on) and whose lead says so; None otherwise."""
    changed, switched, missing = reweighting(run), term_switched_on(run), scores_missing(run)
    steps = {found.step for found in (changed, switched, missing) if found is not None}
    if not steps:
        return None  # (the fits once, not once per finding)
    for event in events:
        if event.check.fired and any(_near(run, s, event.step) for s in steps) and (
                _reward_redefined_at(run, event) is not None
                or _scores_missing_at(run, event) is not None):
            return event
    return None


def _near(run: Run, step: int, other: int) -> bool:
    """Whether two steps are within ``_REDEFINED_NEAR`` logged points, counted on the
    reward's terms where it has them (terms logged every 10th step beside a reward logged at
    every one: a change seen at 170 is near a crash at 161; h121)."""
    terms = components(run)
    steps = (series(run, next(iter(terms.values())))[0] if terms else run.steps)
    if not len(steps):
        steps = run.steps
    return abs(int(np.searchsorted(steps, step)) - int(np.searchsorted(steps, other))) <= (
        _REDEFINED_NEAR)


def _config_weights_either_side(run: Run, changed: Reweighting) -> bool:
    """Whether the config's weights (1 for each term it names without ``reward_weights``) are
    those of one side of the change, or the config names no terms (nothing to hold it to). A
    change between two sums neither of which is the config's is no resume with other weights:
    a mix of prompts whose terms score only their own changed (h120: a curriculum's 80/20 ->
    20/80 read "restore the reward's weights")."""
    if not configured_terms(run):
        return True
    config = [configured_weight(run, name) for name in changed.names]
    if any(w is None for w in config) and any(w is not None for w in config):
        return True  # weights for some terms only: not enough to hold it to
    weights = np.array([1.0 if w is None else w for w in config])
    top = max(float(np.max(np.abs(weights))), 1e-9)
    return any(float(np.max(np.abs(np.array(side) - weights))) <= 0.05 * top
               for side in (changed.before, changed.after))


def _weights_reset_at(run: Run, root: Event) -> _Lead | None:
    """The policy's signals back at their starting levels in one step where the root began:
    the weights reset (a resume that loaded the base model, not the checkpoint), no step
    size's doing (trial 80: read as an entropy blow-up, "roll back, then lr 1e-4 -> 5e-5").
    None otherwise."""
    i = int(np.searchsorted(run.steps, root.step))
    for step in run.steps[max(0, i - 1):i + 2]:
        found = back_to_start(run, int(step))
        if found is None:
            continue
        text = (f"check which weights the run trained from step {step_text(found.step)}: its "
                f"signals went back to their starting levels in one step ({found.words()}), "
                "as if the weights were reset (a resume that loaded the base model instead of "
                "the checkpoint, or a relaunch logging into the same run); then "
                f"{_rollback_words(run, found.step, best=False)}")
        return _Lead(knobs.Remedy(text, rollback_step=found.step), summary=(
            f"back to the starting point at step {step_text(found.step)} ({found.words()}): "
            f"{root.summary}"), sampling_changed=True, not_dynamics=True, cause=WEIGHTS_RESET)
    return None


def _terms_across(run: Run, step: int, leave: Sequence[str]) -> str:
    """", the other terms held (correctness_reward 0.97 -> 0.94): the policy did not change
    there" when each logged term (but ``leave``) kept its level across ``step``; "" when one
    moved."""
    said = []
    for name, col in components(run).items():
        if name in leave:
            continue
        steps, values = series(run, col)
        k = int(np.searchsorted(steps, step))
        if k < 5 or len(values) - k < 5:
            return ""
        before, after = float(np.median(values[k - 10:k] if k >= 10 else values[:k])), float(
            np.median(values[k:k + 10]))
        noise = step_noise(values[max(0, k - 30):k]) if k >= 8 else 0.0
        if abs(after - before) > max(2 * noise, 0.1 * max(abs(before), 1e-9)):
            return ""
        said.append(f"{name} {fmt(before)} -> {fmt(after)}")
    if not said:
        return ""
    return f", the terms held ({', '.join(said)}): the policy did not change there"


def _budget_target(length: recipe.Reading | None, cap: float | None, share: float) -> str:
    """The completion budget raised, as the config names it: 2x, or 4x when nearly every
    completion was cut (how much longer the answers are is then unknown: a budget of 2 tokens
    doubled still cut 5-token answers)."""
    factor = int(budget_factor(share))
    now = recipe.as_number(length.value) if length is not None else None
    name = length.name if length is not None and now is not None else "max_completion_length"
    if now:
        return f"{name} {fmt(now)} -> {fmt(factor * now)}"
    return f"raise {name}{f' (now about {fmt(cap)} tokens)' if cap else ''} {factor}x"


_HELDOUT_NEVER = "the held-out score"
#: Share of completions cut at the cap over the first logs that makes the budget a suspect
#: (length_hacking's "pinned" line).
_CUT_AT_START = 0.5


def _policy_never_moved(run: Run, setup: recipe.Setup) -> bool:
    """KL exactly 0 on every logged step: no update ever changed the policy. Not with beta
    0 in the config: a trainer that skips the KL term may log 0 for it all the same."""
    beta = setup.get("beta")
    if beta is not None and beta.verdict == recipe.OFF:
        return False
    _, kl = series(run, Metric.KL.value)
    return len(kl) >= 3 and bool(np.all(kl == 0))


def _kl_at_start(run: Run) -> str:
    _, kl = series(run, Metric.KL.value)
    return fmt(float(kl[0])) if len(kl) else "high"


def _numerical_setup(run: Run, setup: recipe.Setup, check: Check) -> _Lead:
    dtype = setup.get("dtype")
    still = _policy_never_moved(run, setup)
    moved = ("; KL was exactly 0 on every logged step: the policy never moved, no update "
             "was applied" if still else "")
    if dtype is not None and dtype.outside:
        text = (f"restart from the initial model with {dtype.fix()} ({dtype.sentence()}: "
                f"{dtype.why}); clipping cannot fix a NaN")
        summary = (f"a numerical setup problem: {dtype.id} {dtype.value_text} "
                   f"({check.summary}){moved}")
        return _Lead(knobs.Remedy(text), summary=summary, knob=_Knob(dtype), setup=True)
    bad = {m for m, v in run.nan_steps.items() if len(v)}
    model = {Metric.LOSS.value, Metric.GRAD_NORM.value, Metric.KL.value,
             Metric.ENTROPY.value, Metric.LOG_PROB_MEAN.value}
    if bad and bad <= {Metric.REWARD_MEAN.value, Metric.REWARD_STD.value} | {
            m for m in bad if m.startswith("reward_component/")} and not bad & model:
        # Only the reward is NaN; loss, KL and grad norm are finite: the model is fine, the
        # reward function returns NaN (a division by zero, an empty parse, a NaN score).
        finite = [m for m in (Metric.LOSS.value, Metric.KL.value, Metric.GRAD_NORM.value)
                  if run.has(m)]
        while_ = f" while {' and '.join(finite)} stay finite" if finite else ""
        text = ("check the reward function on a few completions: it returns NaN (a division "
                f"by zero, an empty or failed parse, a NaN score from a verifier){while_}; "
                "guard it (return 0 on a failed parse) and restart")
        return _Lead(knobs.Remedy(text), summary=f"a setup problem, the reward function: "
                     f"{check.summary}", setup=True)
    others = other_models(run)
    if bad and bad <= set(others):
        # Only another model's update is NaN (a PPO critic's value loss): the policy's own
        # numbers are finite, its dtype and lr are not the first suspects (verl#498).
        name, what = other_model(sorted(others))
        text = (f"check {name} first, not the policy, whose numbers are finite: {what}; "
                "then restart")
        return _Lead(knobs.Remedy(text), summary=f"a numerical setup problem of another "
                     f"model: {check.summary}", setup=True)
    # What the log and the config point at first: a division the first NaN step shows the
    # zero of, before a dtype the config rules out (fp16 false led with "fp16 weights").
    first = min(int(v[0]) for v in run.nan_steps.values() if len(v)) if bad else None
    alone = _std_of_one(run, setup, first) if first is not None else None
    if alone is not None:
        return _Lead(knobs.Remedy(
            f"a setup problem from the first update, not an instability: {alone}",
            knob=knobs.GROUP_SIZE), summary=f"a setup problem, groups of one sample: "
            f"{check.summary}", setup=True)
    zeros = _divisions_by_zero(run, first) if first is not None else []
    no_fp16 = _fp16_ruled_out(run, dtype)
    dtypes = ("a 4-bit adapter's compute dtype" if no_fp16 else
              "the model and optimizer dtype (fp16 weights without an fp32 master copy or "
              "loss scaling overflow: train in bf16), the loss scaler, the optimizer epsilon "
              "(1e-8 underflows in fp16), a 4-bit adapter's compute dtype")
    rest = f"{dtypes}, and a loss or reward that divides by zero"
    if zeros and no_fp16:
        # The dtype cleared by the config: the zero the log shows is the first suspect.
        rest = (f"{zeros[0]}; then {', '.join(zeros[1:])}{', ' if zeros[1:] else ''}{dtypes}, "
                "and a loss or reward that divides by zero")
    elif zeros:
        # The frameworks' own divisions carry an epsilon: the dtype stays the likelier cause.
        rest = f"{dtypes}; then {'; '.join(zeros)}; and a loss or reward that divides by zero"
    ruled = " (the config rules out fp16)" if no_fp16 else ""
    # (A first logged step that was finite, the NaN at the next: "its first updates", not
    # "the first update", trial 69.)
    when = ("the first update" if first is None or not len(run.steps)
            or first <= int(run.steps[0]) else f"its first updates (step {step_text(first)})")
    text = (f"a numerical setup problem from {when}, not an instability (clipping "
            f"cannot fix a NaN): check {rest}{ruled}")
    return _Lead(knobs.Remedy(text), summary=f"a numerical setup problem: {check.summary}"
                 f"{moved}", setup=True)


def _fp16_ruled_out(run: Run, dtype: recipe.Reading | None) -> bool:
    """The config says the run trains in bf16 or fp32, or turns fp16 off (TRL's fp16
    false), and nothing in it says fp16."""
    if dtype is not None and dtype.verdict == recipe.OK:
        return True
    if dtype is not None and dtype.verdict not in (recipe.NOT_SET, recipe.UNKNOWN):
        return False
    fp16, key = recipe.lookup(recipe.flat_config(run.config or {}), ("fp16",))
    return key is not None and fp16 is not None and recipe.as_flag(fp16) is False


def _std_of_one(run: Run, setup: recipe.Setup, step: int) -> str | None:
    """The fix when the reward std was NaN at the first non-finite step while the reward was
    finite there: a standard deviation over one sample (torch's unbiased std of one value is
    NaN, "degrees of freedom is <= 0"), so every group held one completion and every
    advantage was NaN (trial 62: a fork's GRPO with groups of one; it had read "check the
    dtype"). None otherwise."""
    stds = run.nan_steps.get(Metric.REWARD_STD.value)
    if stds is None or not len(stds) or int(stds[0]) != step:
        return None
    at, rewards = run.finite_series(Metric.REWARD_MEAN.value)
    finite_there = np.flatnonzero(at == step)
    if not len(finite_there):
        return None
    reward = float(rewards[finite_there[0]])
    group = setup.get("num_generations")
    size = (f" (num_generations {group.value_text})" if group is not None
            and group.value is not None else "")
    return (f"the reward std was NaN at step {step_text(step)} while the reward was finite "
            f"({fmt(reward)}): a standard deviation over one sample (torch's unbiased std of "
            f"one value is NaN), so each group held one completion{size} and every advantage "
            "was NaN; sample 2 or more completions per prompt (num_generations 8-16), and "
            "check that the batch splits into whole groups of num_generations")


def _divisions_by_zero(run: Run, step: int) -> list[str]:
    """Zeros the log shows at the first non-finite step that a GRPO loss divides by: groups
    of equal rewards (std 0) under std scaling, empty completions under a per-token mean."""
    said = []
    zs = _at_or_before(run, Metric.ZERO_STD_FRACTION.value, step)
    flat = recipe.flat_config(run.config or {})
    scaled, key = recipe.lookup(flat, ("scale_rewards", "norm_adv_by_std_in_grpo"))
    # Std scaling is the frameworks' default; off as TRL's scale_rewards false or "none".
    if zs is not None and zs > 0 and (key is None or recipe.as_flag(scaled) is not False):
        on = f", with {key} {str(scaled).lower()}" if key else ""
        said.append(f"the advantage's division by its group's reward std: {zs:.0%} of groups "
                    f"had equal rewards at step {step_text(step)} (std 0{on}), and 0/0 is NaN "
                    "without an epsilon in the denominator (TRL's has 1e-4, verl's 1e-6; "
                    "custom advantage code may have none): add one, or turn the std scaling "
                    "off")
    shortest = next((c for c in run.frame.columns if str(c).endswith(("min_length",
                                                                      "length/min"))), None)
    if shortest is not None and _at_or_before(run, str(shortest), step) == 0:
        said.append(f"a per-token mean over empty completions ({shortest} 0 at step "
                    f"{step_text(step)}: 0 tokens, 0/0)")
    return said


def _at_or_before(run: Run, metric: str, step: int) -> float | None:
    """The metric's last finite value at or before ``step``."""
    if metric not in run.frame:
        return None
    col = run.frame[metric]
    col = col[(col.index <= step) & np.isfinite(col.to_numpy())]
    return float(col.iloc[-1]) if len(col) else None


def _lr(x: float) -> str:
    return knob_value(x)


@dataclass(frozen=True)
class _Overshoot:
    """A warm-up (or a stepped schedule) that carried the lr past where the reward peaked."""

    peak_step: int  # the reward's peak
    lr_peak: float  # the lr there
    lr_max: float  # the lr's maximum, after the peak
    fall_step: int  # where half the gain was gone
    lr_fall: float  # the lr in force there

    def words(self) -> str:
        """What happened, with the lr the run fell at: a schedule that stepped 1e-6 -> 3e-6,
        broke, then stepped to 1e-5 fell at 3e-6, not "as the lr rose to 1e-5"."""
        text = (f"the reward peaked at step {step_text(self.peak_step)}, where the lr was "
                f"{_lr(self.lr_peak)}, and fell as the lr rose to ")
        if self.lr_fall < self.lr_max / 1.5:
            return (text + f"{_lr(self.lr_fall)} (half its gain gone by step "
                    f"{step_text(self.fall_step)}; the lr reached {_lr(self.lr_max)} after)")
        return text + _lr(self.lr_max)


#: The reward's gain, in step noises, under a warm-up whose run then fell below its start.
_OVERSHOOT_NOISE = 2.5


def _data_slices(run: Run, root: Event) -> _Lead | None:
    """Reward crashes at evenly spaced steps (three or more), on a run whose config serves
    the prompts in the dataset's own order: each drop is where a slice of the data
    began (a sorted or concatenated dataset), not the policy breaking (trial 75: a dataset
    sorted by answer, each answer 50 steps, crashes at 51, 101, 151 read "roll back to
    checkpoint-50, then learning_rate 1e-4 -> 5e-5"). None otherwise."""
    order = unshuffled(run)
    if order is None or root.check.mode != "reward_overfit":
        return None
    onset = root.check.onset_step
    drops: list[int] = []
    for d in sorted({i.step for i in root.check.incidents} | (
            {int(onset)} if onset is not None else set())):
        if not drops or d - drops[-1] > 3 * _log_interval(run):
            drops.append(d)  # (one fall dated twice, 51 and 52, is one)
    if len(drops) < 3:
        return None
    gaps = np.diff(drops)
    if float(np.min(gaps)) < 0.8 * float(np.median(gaps)) or (
            float(np.max(gaps)) > 1.2 * float(np.median(gaps))):
        return None  # not a period: crashes of the policy's own
    at = ", ".join(step_text(d) for d in drops)
    return _Lead(knobs.Remedy(
        f"shuffle the training prompts ({order} -> True): the reward fell at steps {at}, "
        f"every {step_text(int(np.median(gaps)))} steps, where each slice of a dataset served "
        "in its own order began (sorted or concatenated); check those rows' answers where a "
        "slice's reward stays down; no roll-back: the policy did not break"),
        summary=f"the data's order: {order}, and the reward fell at each slice (steps {at}): "
                f"{root.summary}", cause=DATA_ORDER)


def _floor_above_peak(run: Run, lr: recipe.Reading | None, lr_max: float
                      ) -> tuple[str, float, float, str] | None:
    """``recipe.schedule_floor_above`` of the run's config, when the logged lr climbed past
    the configured one (trial 73: cosine_with_min_lr's min_lr 3e-3 above an lr of 1e-4 read
    "learning_rate 0.003 -> 3.4e-4"). None otherwise."""
    if lr is None or not lr.source or str(lr.source).startswith("logged"):
        return None
    floor = recipe.schedule_floor_above(recipe.flat_config(run.config) if run.config else {})
    return floor if floor is not None and lr_max >= 1.5 * floor[2] else None


def _lr_overshoot(run: Run) -> _Overshoot | None:
    """The overshoot when a learning-rate warm-up
    carried the lr well past where the reward peaked and the reward then fell: the lr rose
    several-fold from its start, its maximum came after the peak, and the reward gave back
    half its gain (a gain many times its noise). A schedule that decays is never an overshoot.
    """
    ls, lr = series(run, Metric.LEARNING_RATE.value)
    rs, r = series(run, Metric.REWARD_MEAN.value)
    # A warm-up from 0 (TRL's and transformers' schedules log 0 at the first step) starts at
    # its first step above it (trial 56: 0 -> 5e-3 over 100 steps read no overshoot at all).
    positive = lr[lr > 0]
    if len(lr) < 10 or len(r) < 20 or not len(positive):
        return None
    lr0 = float(positive[0])
    smooth = rolling_median(r, max(5, len(r) // 20) | 1)
    peak = int(np.argmax(smooth))
    if float(smooth[peak]) <= float(r[0]):
        # Best at the first logged value: the reward never rose under the warm-up (trial 65:
        # 0.024 at the first log, 0 after, read "peaked at step 10, fell as the lr rose").
        return None
    start, now = float(np.median(r[:max(3, len(r) // 20)])), float(np.median(r[-5:]))
    gain = float(smooth[peak]) - start
    # The calmer of the climb's noise and the whole log's: the broken stretch after an
    # overshoot can swing far more than the run did while it learned (or, flat at 0, far less).
    noise = min(step_noise(r), step_noise(r[:peak + 1])) if peak >= 10 else step_noise(r)
    # A gain many times its noise; or a smaller one the run then lost and more, ending below
    # where it began (trial 72: 0.78 -> 1.2 under a warm-up to 3e-3, 3x its noise, then 0;
    # read "learning_rate 0.003 -> 1e-6", 500x below the 5e-4 it learned at).
    clear = gain > 6 * noise or (gain > _OVERSHOOT_NOISE * noise and now <= start - gain)
    if gain <= 0 or not clear or (smooth[peak] - now) / gain < 0.5 or peak > 0.9 * len(r):
        return None
    peak_step = int(rs[peak])
    lr_peak = float(np.interp(peak_step, ls, lr))
    top = int(np.argmax(lr))
    lr_max = float(lr[top])
    if (lr_max < 3 * lr0 or lr_max < 1.5 * lr_peak or lr_peak <= 0
            or int(ls[top]) <= peak_step):
        return None
    # The fall came as the lr rose: by the time half the gain was gone the lr had risen from
    # its value at the peak (a run that broke at 1e-6, 100 steps before the lr rose to 1e-5,
    # was not broken by the rise).
    lost = np.flatnonzero(smooth[peak:] <= smooth[peak] - 0.5 * gain)
    fall_step = int(rs[peak + int(lost[0])]) if len(lost) else int(rs[-1])
    lr_fall = float(np.interp(fall_step, ls, lr))
    if len(lost) and lr_fall <= 1.01 * lr_peak:
        return None
    return _Overshoot(peak_step, lr_peak, lr_max, fall_step, lr_fall)




#: How many times its steady level the logged lr must rise to, from one logged point to the
#: next, to be a jump; the logged points it must have held before (a warm-up never does);
#: and how far after it (a share of the log's points, at least a number of them) what broke
#: may begin and still be the jump's doing.
_JUMP_FACTOR = 3.0
_JUMP_STEADY = 8
_JUMP_REACH = (0.1, 50)


@dataclass(frozen=True)
class _Jump:
    """The logged lr stepping up mid-run from a level it held to several times it, and
    staying there: a scheduler restarted, a resumed run's lr set wrongly. Not in any config:
    only the log shows it."""

    step: int  # the first logged step at the new lr
    last_before: int  # the last step the lr was logged at its old level
    before: float
    after: float

    def words(self) -> str:
        """'the logged learning rate jumped 1e-4 -> 0.003 at step 1001, 30x the level it
        held' (between two steps when the lr was logged sparsely)."""
        when = (f"at step {step_text(self.step)}" if self.last_before >= self.step - 1 else
                f"between steps {step_text(self.last_before)} and {step_text(self.step)}")
        return (f"the logged learning rate jumped {_lr(self.before)} -> {_lr(self.after)} "
                f"{when}, {self.after / self.before:.0f}x the level it held")

    def back(self, name: str, why: str) -> str:
        """'learning_rate back at 1e-4 (the logged learning rate jumped ...; why)'."""
        return f"{name} back at {_lr(self.before)} ({self.words()}{why})"


def _lr_jump(run: Run) -> _Jump | None:
    """The jump of the logged lr: ``_JUMP_FACTOR``x or more the median of the
    ``_JUMP_STEADY`` logged points before it, which held within a quarter of their median
    (a warm-up or a cosine's tail does not), kept for the next logged points. Only one: a
    schedule whose lr jumps again and again (warm restarts) restarts by design."""
    ls, lr = series(run, Metric.LEARNING_RATE.value)
    n = _JUMP_STEADY
    if len(lr) < n + 4:
        return None
    rise = np.flatnonzero(lr[1:] >= _JUMP_FACTOR * np.maximum(lr[:-1], 1e-300)) + 1
    if len(rise) != 1 or rise[0] < n:
        return None
    i = int(rise[0])
    held = lr[i - n:i]
    before = float(np.median(held))
    after = float(np.median(lr[i:i + 5]))
    if (before > 0 and np.ptp(held) <= 0.25 * before and len(lr) - i >= 3
            and after >= _JUMP_FACTOR * before):
        return _Jump(int(ls[i]), int(ls[i - 1]), before, after)
    return None


def lr_jump_note(run: Run, said: str) -> str | None:
    """A note of a jump of the logged lr the advice does not already name (nothing broke
    right after it): a step up no config shows is worth a look all the same."""
    jump = _lr_jump(run)
    if jump is None or "learning rate jumped" in said:
        return None
    if f"learning_rate {_lr(jump.after)} " in said:
        # The advice names the lr it jumped to as a cause: a finding did follow it.
        return (f"{jump.words()}: the learning_rate {_lr(jump.after)} named above is the "
                f"level it jumped to, the run held {_lr(jump.before)} before; was the jump "
                "meant (a scheduler restarted, a resumed run's lr set otherwise)?")
    return (f"{jump.words()}, and no finding followed it here: was it meant (a scheduler "
            "restarted, a resumed run's lr set otherwise)?")


def lr_restarts_note(run: Run) -> str | None:
    """A note when the logged lr came back to its peak after decaying: a schedule with
    restarts (``cosine_with_restarts``) takes full-size steps again at each (trial 55: lr 1e-3
    restarted every 50 steps, and the advice had named the lr without the restarts). None
    when it never did."""
    steps, lr = series(run, Metric.LEARNING_RATE.value)
    if len(lr) < 10 or float(np.max(lr)) <= 0:
        return None
    peak = float(np.max(lr))
    back: list[int] = []
    topped = low = False  # reached its peak once; decayed from it since (a warm-up is not)
    for step, value in zip(steps, lr):
        if value >= 0.9 * peak:
            if low:
                back.append(int(step))
            topped, low = True, False
        elif topped and value <= 0.2 * peak:
            low = True
    if not back:
        return None
    at = ", ".join(step_text(b) for b in back[:4]) + (", ..." if len(back) > 4 else "")
    return (f"the logged learning rate came back to its peak ({_lr(peak)}) after decaying, at "
            f"step{'s' if len(back) > 1 else ''} {at}: a schedule with restarts takes "
            "full-size steps again at each, so a learning_rate too high hits the run again "
            "there")


def _after_jump(run: Run, events: Sequence[Event], worst: Sequence[Check]) -> tuple[
        Event, _Jump] | None:
    """The first finding that began at or soon after a jump of the logged lr, when nothing
    but a convergence was raised before it (a finding dated earlier but first called after
    the jump began with it): the jump is what broke the run."""
    jump = _lr_jump(run)
    if jump is None:
        return None
    broke = [e for e in events if e.check.fired and not _converging(e.check)]

    def raised(e: Event) -> int:
        alert = e.check.first_alert_step
        return e.step if alert is None else max(e.step, alert)

    if not reward_at_best(run, jump.step) and any(
            raised(e) < jump.step and e.check in worst and not e.recovered for e in broke):
        return None
    root = next((e for e in broke if raised(e) >= jump.step), None)
    if root is None:
        return None
    share, least = _JUMP_REACH
    between = int(((run.steps >= jump.step) & (run.steps < root.step)).sum())
    if between > max(least, share * len(run.steps)):
        return None  # a long healthy stretch at the new lr: the break is its own
    return root, jump


def _jump_action(run: Run, root: Event, setup: recipe.Setup, jump: _Jump) -> _Lead:
    """Go back to before the jump, with the lr the run held until it."""
    lr = setup.get("learning_rate")
    name = lr.name if lr is not None and lr.value is not None else "learning_rate"
    what = jump.words()
    back = jump.back(name, ": a scheduler restarted, or a resumed run's lr set wrongly")
    summary = (f"a learning-rate jump: {what}; then {root.check.mode}"
               + (f" at step {step_text(root.step)}" if root.step > jump.step else "")
               + f" ({root.summary.split('; ')[0]})")
    if task_solved(run):
        # It solved its task at the new lr all the same: its last checkpoint is the one to
        # keep, and the scheduler is for the next run.
        return _Lead(knobs.Remedy(f"{_SOLVED_ANYWAY}, {back}", knob=knobs.LEARNING_RATE),
                     summary=summary, cause=LR_JUMP)
    # Back to the last step logged at the old lr: a sparse lr log leaves the steps between
    # that one and the first logged at the new lr unknown.
    text = f"{_rollback_words(run, jump.last_before + 1)}, with {back}"
    return _Lead(knobs.Remedy(text, knob=knobs.LEARNING_RATE, rollback_step=jump.last_before + 1),
                 summary=summary, cause=LR_JUMP)


def _burst_action(run: Run, root: Event, setup: recipe.Setup, burst: LrBurst) -> _Lead:
    """Start again from before the burst with the lr the run trained at after it from the
    first update, and whatever else outside the recipe let one update go that far."""
    span = (f"step {step_text(burst.first)}" if burst.first == burst.last else
            f"steps {step_text(burst.first)}-{step_text(burst.last)}")
    what = (f"the learning rate was {_lr(burst.peak)} at {span}, "
            f"{burst.peak / burst.after:.0f}x the {_lr(burst.after)} the run trained at after")
    # What else let one update go that far (no clipping, fp16) comes next in the plan.
    also = [r for r in setup.causes({recipe.CATASTROPHIC_UPDATE}, critical=True)
            if r.id != "learning_rate"]
    lr = setup.get("learning_rate")
    name = lr.name if lr is not None and lr.value is not None else "learning_rate"
    fix = (f"{name} at no more than {_lr(burst.after)} from the first update ({what}: a "
           "schedule or warm-up that starts at its peak)")
    summary = f"a learning-rate burst: {what}; then {root.summary.split('; ')[0]}"
    if task_solved(run):
        # It came through the burst and solved its task: a restart gains nothing (its twin
        # without the burst ended where it did); the schedule is for the next run.
        return _Lead(knobs.Remedy(f"{_SOLVED_ANYWAY}, {fix}", knob=knobs.LEARNING_RATE),
                     summary=summary, extra_knobs=tuple(also))
    text = f"{_rollback_words(run, burst.first)}, with {fix}"
    return _Lead(knobs.Remedy(text, knob=knobs.LEARNING_RATE, rollback_step=burst.first),
                 summary=summary, setup=burst.first <= (run.first_step or 0) + 1,
                 extra_knobs=tuple(also))


# --- the plan -----------------------------------------------------------------------------------


def _plan(run: Run, events: Sequence[Event], checks: Sequence[Check], root: Event,
          lead: _Lead, setup: recipe.Setup) -> tuple[PlanItem, ...]:
    """The first action, then the other settings outside the recipe linked to the cause, the
    root cause's remedies, the remedies of findings of their own, and last those of the
    findings the root cause explains. One item per knob (the strongest change asked for), one
    roll-back (to the earliest step asked for), identical advice once."""
    mode = root.check.mode
    explained = _can_cause(root.check)
    if root.incident and mode in ("kl_drift", "grad_explosion"):
        explained = _ALL
    by_mode = {c.mode: c for c in checks if c.fired}
    order = [m for m in dict.fromkeys(e.check.mode for e in events) if m != mode]

    # An onset is dated by a fit; what began within two logged points before the root's began
    # with it (the reward falls with the first points of the climb its knot is dated after).
    before_root = run.steps[run.steps < root.step]
    near_root = int(before_root[-2]) if len(before_root) >= 2 else root.step

    def treats(m: str) -> str:
        # When it began, its earlier episodes the run came back from aside: a collapse that
        # came and went before the cause, then came back after it, follows from the cause.
        began = [e.step for e in events if e.check.mode == m and not e.recovered]
        after = not began or min(began) >= near_root
        return "consequence" if m in explained and after else "finding"

    stopped = root.check.evidence.get("scorer_stopped")
    if isinstance(stopped, dict):
        # What began once the scorer stopped (every group all "wrong", the gradient gone) is
        # its echo: the policy did not break, and those findings' remedies would treat it.
        at = int(stopped["step"])
        order = [m for m in order if (by_mode[m].onset_step or 0) < at]
    dead = mode == "no_learning_signal" and root.check.evidence.get("cause")
    if dead:
        # A destroyed policy: what its symptoms would ask for (dynamic sampling, a larger
        # group, a curriculum) cannot revive it. Only preventing the update counts.
        order = [m for m in order if m not in _SYMPTOMS_OF_A_DEAD_RUN]
    items: list[_Item] = [_Item(lead.remedy, [mode], "root_cause",
                                lead.knob.reading.id if lead.knob else _setting_of(lead.remedy),
                                lead=True)]
    # Other settings outside the recipe that the chapter links to the cause. Not to a
    # scorer that stopped or failed on some calls: a crash the grader made is no lr's (trials
    # 53, 54).
    scorer = root.check.evidence.get("scorer_stopped") or root.check.evidence.get("scorer_gaps")
    linked = [] if scorer else list(lead.extra_knobs) + [
        r for r in setup.linked(_linked_modes(root)) if r not in lead.extra_knobs]
    for reading in linked:
        if lead.knob is not None and reading.id == lead.knob.reading.id:
            continue
        if lead.remedy.knob is not None and _knob_of(reading) is lead.remedy.knob:
            continue  # the first action already turns it
        if reading.fix().split(" (", 1)[0] in str(lead.remedy):
            # Said as the first action in its own words (a cut sampler's "top_p 0.8 -> 1.0"
            # had come again as "also outside the recipe: top_p 0.8 -> 1.0", trial 56).
            continue
        if lead.setup and not reading.far:
            continue  # a run broken by its setup: a setting merely outside is not the point
        if reading.verdict == recipe.OFF and not reading.far and not any(
                lk.primary for lk in reading.links if lk.mode in _linked_modes(root)):
            # A default switched off (TRL's beta 0) that can only have contributed: evidence
            # with a symptom of its own, not the second thing to do about a correctness
            # function that never paid (trial 63).
            continue
        if reading.setting.note_only and not reading.far:
            text = f"also: {reading.fix()} ({reading.sentence()})"
        else:
            text = _also_outside(reading)
        items.append(_Item(knobs.Remedy(text, knob=_knob_of(reading)), [mode], "root_cause",
                           reading.id))
    # A setting clearly outside the recipe that is a primary cause of another critical finding
    # (groups of 4 beside the equal-reward groups a low temperature also brings about) is
    # that finding's first fix, before the generic remedies of any finding.
    named = {it.setting for it in items}
    for m in order:
        if by_mode[m].status != Status.CRITICAL or (dead and m in _SYMPTOMS_OF_A_DEAD_RUN):
            continue
        for reading in setup.causes({m}, critical=True):
            if reading.id in named or (lead.remedy.knob is not None
                                       and _knob_of(reading) is lead.remedy.knob):
                continue
            named.add(reading.id)
            items.append(_Item(knobs.Remedy(_also_outside(reading), knob=_knob_of(reading)),
                               [m], "finding", reading.id))
    # A setup problem beside the cause (completions cut from the first log, a reference that
    # differs from the policy at step 0) is fixed before anything is tuned: its first remedy
    # comes right after the first action.
    setup_first = [(m, "finding") for m in order if _setup_finding(by_mode[m])]
    rest = sorted(((m, treats(m)) for m in order if (m, "finding") not in setup_first),
                  key=lambda t: t[1] == "consequence")
    sources = [*setup_first, (mode, "root_cause"), *rest]
    lr_reading = setup.get("learning_rate")
    lr_high = lr_reading is not None and lr_reading.verdict == recipe.HIGH
    # A sampling setting at fault from the first logged step: the finding's training remedies
    # (lr, entropy bonus, Clip-Higher, KL) treat a collapse the updates made, not one the
    # sampler made (temperature 0.05 had them as items 2-5, trial 49).
    sampled = lead.knob is not None and lead.knob.reading.id in _SAMPLING and (
        root.step <= (run.first_step or 0))
    for m, kind in sources:
        if sampled and kind == "root_cause":
            continue
        remedies = by_mode[m].remedies
        if (m, kind) in setup_first:
            remedies = remedies[:1]
            sources.append((m, "later"))
        elif kind == "later":
            remedies, kind = remedies[1:], "finding"
        for remedy in remedies:
            r = remedy if isinstance(remedy, knobs.Remedy) else knobs.Remedy(str(remedy))
            if str(r) == str(lead.remedy) or str(r).startswith(_CALM) or (
                    r.knob is None and r.rollback_step is None and (
                        str(r) in str(lead.remedy) or _same_look(r, lead.remedy))):
                continue  # said first (a look the first action ends with)
            if lead.setup and m == "numerical_failure" and r.knob is knobs.GRAD_CLIP:
                continue  # clipping cannot fix a NaN the setup produces
            if str(lead.remedy).startswith(_SOLVED_ANYWAY) and (
                    r.rollback_step is not None or str(r).startswith("roll back")):
                continue  # "no roll-back: it solved its task" is not followed by one
            if m == "no_progress" and r.knob is knobs.LEARNING_RATE and lr_high:
                continue  # "is it too low?" of a learning rate already above the recipe
            if lead.sampling_changed and r.knob is knobs.LEARNING_RATE:
                continue  # the sampler changed, not the policy: no step size to blame
            if lead.not_dynamics and (kind in ("root_cause", "consequence")
                                      or r.rollback_step is not None
                                      or str(r).startswith("roll back")):
                # No training dynamics: the finding's own remedies treat a policy the updates
                # changed, and the first action says what to go back to, if anything (trial 80).
                continue
            twin = next((it for it in items if it.same_kind(r)), None)
            if twin is None:
                items.append(_Item(r, [m], kind, _setting_of(r)))
            else:
                twin.absorb(r, m)
    return tuple(PlanItem(str(it.remedy), tuple(it.modes), it.treats, it.setting,
                          it.remedy.rollback_step) for it in items)


#: The recipe's sampling settings: a rollout drawn otherwise than the policy's distribution.
_SAMPLING = frozenset({"temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                       "epsilon_cutoff", "eta_cutoff", "typical_p"})


def _also_outside(reading: recipe.Reading) -> str:
    return f"also outside the recipe: {reading.fix()} ({reading.sentence()})"


def _setup_finding(check: Check) -> bool:
    """A finding whose evidence says the setup was wrong from the first logged step."""
    return bool(check.evidence.get("truncated_from_start")
                or check.evidence.get("offset_from_start"))


def _knob_of(reading: recipe.Reading) -> knobs.Knob | None:
    return next((k for k in knobs.KNOBS if set(k.names) & set(reading.setting.names)), None)


def _own_knobs(check: Check) -> list[str]:
    """The settings the finding's own remedies turn, in their order (its chapter's remedies)."""
    ids = [_setting_of(r) for r in check.remedies if isinstance(r, knobs.Remedy)]
    return list(dict.fromkeys(i for i in ids if i is not None))


def _setting_of(remedy: knobs.Remedy) -> str | None:
    """The recipe's name for the knob a remedy turns."""
    if remedy.knob is None:
        return None
    return next((s.id for s in recipe.SETTINGS if set(s.names) & set(remedy.knob.names)),
                None)


@dataclass
class _Item:
    """A plan item while remedies are merged into it."""

    remedy: knobs.Remedy
    modes: list[str]
    treats: str = "root_cause"
    setting: str | None = None
    lead: bool = False  # the first action's item

    def same_kind(self, r: knobs.Remedy) -> bool:
        mine = self.remedy
        if str(mine) == str(r):
            return True
        if r.rollback_step is not None and mine.rollback_step is not None:
            return True
        if self.setting is not None and self.setting == _setting_of(r):
            return True
        return r.knob is not None and mine.knob is r.knob

    def absorb(self, r: knobs.Remedy, mode: str) -> None:
        if mode not in self.modes:
            self.modes.append(mode)
        mine = self.remedy
        if self.lead and mine.rollback_step is not None and r.rollback_step is not None:
            # The first action's roll-back was chosen with its cause (before a budget cut or a
            # stop that changed): a finding's own earlier roll-back had replaced it whole, so
            # the plan's first item lost "restore how completions stop" (trial 79).
            return
        if self.setting is not None and self.treats == "root_cause" and mine.factor is None:
            return  # the recipe's own value for a setting named as the cause stands
        if (mine.rollback_step is not None and r.rollback_step is not None
                and r.knob is None and mine.knob is None
                and r.rollback_step < mine.rollback_step):
            self.remedy = r  # the earlier checkpoint is the safer one
        elif (mine.factor is not None and r.factor is not None and mine.rollback_step is None
              and (r.factor < mine.factor if r.factor < 1 else r.factor > mine.factor)):
            self.remedy = r  # the stronger change


#: Looks a first action and a finding's remedy say in their own words.
_LOOKS = ("check the reference model",)


def _same_look(remedy: knobs.Remedy, first: knobs.Remedy) -> bool:
    """Whether ``remedy`` asks for the look ``first`` already asks for ("check the reference
    model" said twice, items 1 and 2; trial 81)."""
    return any(str(remedy).startswith(look) and str(first).startswith(look) for look in _LOOKS)
