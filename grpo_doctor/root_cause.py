"""The probable root cause of a failing run, and one plan of action.

Findings and the incidents in their history go on a timeline by step. The probable root cause
is the earliest event that can explain every critical finding after it (``CAN_CAUSE``, the
domain's causal chains: a blown-up update explains everything after it; entropy collapse
explains equal-reward groups; reward lags everything). A critical finding before it that it
cannot explain is a problem of its own (its remedies are in the plan); but a warning is never
named over a critical finding that began before or with it and that it cannot explain. When no
event explains them all, the earliest of the worst findings is named. Its "do this first"
action uses the log itself where it can: the learning rate when the reward peaked, the step to
roll back to.

The plan merges the remedies of every finding: one change per knob (the strongest asked for),
each saying which findings it answers, root cause first. Pure functions of the checks and the
run's metric store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from grpo_doctor.findings import Check, PlanItem, RootCause, Status
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.rules.points import series
from grpo_doctor.store import Run
from grpo_doctor.text import step_text
from grpo_doctor.trends import rolling_median

_ALL = frozenset({
    "numerical_failure", "entropy_collapse", "advantage_collapse", "kl_drift",
    "likelihood_displacement", "grad_explosion", "ratio_instability", "reward_hacking",
    "length_hacking", "format_gaming", "tool_spam", "reward_overfit", "entropy_blowup",
    "no_learning_signal",
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
        "advantage_collapse"}),
    "entropy_blowup": frozenset({
        "length_hacking", "reward_overfit", "no_learning_signal", "advantage_collapse",
        "grad_explosion", "numerical_failure", "kl_drift", "likelihood_displacement",
        "ratio_instability"}),
    "entropy_collapse": frozenset({
        "advantage_collapse", "length_hacking", "no_learning_signal", "reward_overfit",
        "format_gaming", "likelihood_displacement", "grad_explosion", "ratio_instability"}),
    "reward_hacking": frozenset({
        "kl_drift", "length_hacking", "format_gaming", "reward_overfit", "tool_spam",
        "entropy_collapse", "advantage_collapse"}),
    "format_gaming": frozenset({"reward_hacking", "reward_overfit", "length_hacking",
                                "advantage_collapse", "entropy_collapse"}),
    # Completions cut at the cap or collapsed to a few tokens hold no answer: every group
    # scores alike (zero advantage), the reward falls, and nothing is left to learn from.
    "length_hacking": frozenset({"advantage_collapse", "reward_overfit", "reward_hacking",
                                 "no_learning_signal"}),
    "advantage_collapse": frozenset({"no_learning_signal", "reward_overfit"}),
    "no_learning_signal": frozenset({"advantage_collapse", "reward_overfit", "length_hacking",
                                     "entropy_collapse"}),
    "tool_spam": frozenset({"reward_hacking", "length_hacking", "reward_overfit"}),
    "reward_overfit": frozenset(),
}
#: At one step, the more upstream mode is the cause.
_ORDER = ("grad_explosion", "kl_drift", "ratio_instability", "likelihood_displacement",
          "numerical_failure", "entropy_blowup", "entropy_collapse", "no_learning_signal",
          "reward_hacking", "format_gaming", "tool_spam", "length_hacking",
          "advantage_collapse", "reward_overfit")
_RANK = {m: i for i, m in enumerate(_ORDER)}
#: What a policy destroyed by one update shows; their remedies cannot revive it.
_SYMPTOMS_OF_A_DEAD_RUN = frozenset({
    "advantage_collapse", "length_hacking", "reward_overfit", "entropy_collapse",
    "entropy_blowup", "format_gaming", "reward_hacking", "tool_spam"})
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


def timeline(checks: Sequence[Check]) -> list[Event]:
    """Findings and their incidents in order of the step each began (upstream first at a
    tie)."""
    events = []
    for c in checks:
        if not c.fired:
            continue
        steps = set()
        for i in c.incidents:
            events.append(Event(i.step, c, i.summary, i.severity is Status.CRITICAL))
            steps.add(i.step)
        if c.onset_step is not None and c.onset_step not in steps:
            events.append(Event(c.onset_step, c, c.summary, c.status is Status.CRITICAL))
    return sorted(events, key=lambda e: (e.step, _RANK.get(e.check.mode, 99)))


def root_cause_and_plan(run: Run, checks: Sequence[Check]
                        ) -> tuple[RootCause | None, tuple[PlanItem, ...]]:
    """The probable root cause (None when nothing fired) and the merged plan."""
    events = timeline(checks)
    if not events:
        return None, ()
    findings = [c for c in checks if c.fired]
    worst = [c for c in findings if c.status is Status.CRITICAL] or findings
    root = next((e for e in events if _explains(e, worst)), None)
    if root is None:  # nothing explains everything: the earliest of the worst findings
        root = next(e for e in events if e.check in worst)
    overshoot = _lr_overshoot(run) if root.check.mode in _LR_MODES else None
    lead = first_action(run, root, overshoot)
    summary = root.summary
    if overshoot is not None:
        peak_step, lr_peak, lr_max = overshoot
        summary = (f"the learning rate: the reward peaked at step {step_text(peak_step)}, where "
                   f"the lr was {_lr(lr_peak)}, and fell as the lr rose to {_lr(lr_max)}; "
                   f"first sign: {root.check.mode} ({root.summary})")
    cause = RootCause(root.check.mode, root.step, summary, str(lead))
    return cause, _plan(events, checks, root, lead)


def _explains(event: Event, worst: Sequence[Check]) -> bool:
    """``event`` can have brought about every one of ``worst`` that began at or after it
    (its own finding aside); a warning must also explain those that began before or with it
    (a warning is not named over a critical finding it cannot explain)."""
    causes = CAN_CAUSE.get(event.check.mode, frozenset())
    if event.check.mode == "no_learning_signal" and event.check.evidence.get("cause"):
        causes = _ALL  # a dead run names the catastrophic update that explains the rest
    if event.check.evidence.get("offset_from_start"):
        causes = frozenset()  # a KL offset present from the first step moved nothing
    warning = event.check.status is not Status.CRITICAL and any(
        c.status is Status.CRITICAL for c in worst)
    return all(c.mode == event.check.mode or c.mode in causes for c in worst
               if warning or (c.onset_step if c.onset_step is not None else 0) >= event.step)


def first_action(run: Run, root: Event,
                 overshoot: tuple[int, float, float] | None = None) -> knobs.Remedy:
    """The one thing to do first, from the log where it can: the lr when the reward peaked
    (a warm-up that overshot: ``overshoot``), the step to roll back to (an incident), else the
    root finding's own first remedy."""
    check = root.check
    if overshoot is not None:
        peak_step, lr_peak, lr_max = overshoot
        return knobs.Remedy(
            f"learning_rate {_lr(lr_max)} -> {_lr(lr_peak)} (its value when the reward peaked), "
            f"restarting from the checkpoint nearest step {step_text(peak_step)}",
            knob=knobs.LEARNING_RATE, factor=lr_peak / lr_max, rollback_step=peak_step)
    remedies = [r for r in check.remedies if not str(r).startswith("nothing urgent")]
    lr = next((r for r in remedies if isinstance(r, knobs.Remedy)
               and r.knob is knobs.LEARNING_RATE), None)
    if root.critical and check.mode in ("kl_drift", "grad_explosion") and (
            0 < len(check.incidents) < 3):
        then = f", then {lr}" if lr is not None else ""
        where = (f"roll back to a checkpoint from before step {step_text(root.step)}"
                 if root.step > (run.first_step or 0) else
                 "restart from the initial checkpoint (the blow-up came with the first logged "
                 "updates)")
        return knobs.Remedy(f"{where}{then}", knob=lr.knob if lr is not None else None,
                            factor=lr.factor if lr is not None else None,
                            rollback_step=root.step)
    if remedies:
        top = remedies[0]
        return top if isinstance(top, knobs.Remedy) else knobs.Remedy(str(top))
    return knobs.Remedy(f"look at the run's samples around step {step_text(root.step)}")


def _lr(x: float) -> str:
    return f"{x:.2g}"


def _lr_overshoot(run: Run) -> tuple[int, float, float] | None:
    """(step of the reward peak, lr there, the lr's maximum) when a learning-rate warm-up
    carried the lr well past where the reward peaked and the reward then fell: the lr rose
    several-fold from its start, its maximum came after the peak, and the reward gave back
    half its gain (a gain many times its noise). A schedule that decays is never an overshoot.
    """
    ls, lr = series(run, Metric.LEARNING_RATE.value)
    rs, r = series(run, Metric.REWARD_MEAN.value)
    if len(lr) < 10 or len(r) < 20 or lr[0] <= 0:
        return None
    smooth = rolling_median(r, max(5, len(r) // 20) | 1)
    peak = int(np.argmax(smooth))
    start, now = float(np.median(r[:max(3, len(r) // 20)])), float(np.median(r[-5:]))
    gain = float(smooth[peak]) - start
    noise = 1.4826 * float(np.median(np.abs(np.diff(r)))) / np.sqrt(2)
    if gain <= max(0.0, 6 * noise) or (smooth[peak] - now) / gain < 0.5 or peak > 0.9 * len(r):
        return None
    peak_step = int(rs[peak])
    lr_peak = float(np.interp(peak_step, ls, lr))
    top = int(np.argmax(lr))
    lr_max = float(lr[top])
    if (lr_max < 3 * float(lr[0]) or lr_max < 1.5 * lr_peak or lr_peak <= 0
            or int(ls[top]) <= peak_step):
        return None
    return peak_step, lr_peak, lr_max


# --- the plan -----------------------------------------------------------------------------------


def _plan(events: Sequence[Event], checks: Sequence[Check], root: Event,
          lead: knobs.Remedy) -> tuple[PlanItem, ...]:
    """Every finding's remedies, merged, the root cause's first action first and the rest in
    timeline order: one item per knob (the strongest change asked for), one roll-back (to the
    earliest step asked for), identical advice once."""
    mode = root.check.mode
    order = [mode] + [m for m in dict.fromkeys(e.check.mode for e in events) if m != mode]
    if mode == "no_learning_signal" and root.check.evidence.get("cause"):
        # A destroyed policy: what its symptoms would ask for (dynamic sampling, a larger
        # group, a curriculum) cannot revive it. Only preventing the update counts.
        order = [m for m in order if m not in _SYMPTOMS_OF_A_DEAD_RUN]
    by_mode = {c.mode: c for c in checks if c.fired}
    items: list[_Item] = [_Item(lead, [mode])]
    for m in order:
        for remedy in by_mode[m].remedies:
            r = remedy if isinstance(remedy, knobs.Remedy) else knobs.Remedy(str(remedy))
            if str(r) == str(lead) or str(r).startswith("nothing urgent"):
                continue
            twin = next((it for it in items if it.same_kind(r)), None)
            if twin is None:
                items.append(_Item(r, [m]))
            else:
                twin.absorb(r, m)
    return tuple(PlanItem(str(it.remedy), tuple(it.modes)) for it in items)


@dataclass
class _Item:
    """A plan item while remedies are merged into it."""

    remedy: knobs.Remedy
    modes: list[str]

    def same_kind(self, r: knobs.Remedy) -> bool:
        mine = self.remedy
        if str(mine) == str(r):
            return True
        if r.rollback_step is not None and mine.rollback_step is not None:
            return True
        return r.knob is not None and mine.knob is r.knob

    def absorb(self, r: knobs.Remedy, mode: str) -> None:
        if mode not in self.modes:
            self.modes.append(mode)
        mine = self.remedy
        if (mine.rollback_step is not None and r.rollback_step is not None
                and r.knob is None and mine.knob is None
                and r.rollback_step < mine.rollback_step):
            self.remedy = r  # the earlier checkpoint is the safer one
        elif (mine.factor is not None and r.factor is not None and mine.rollback_step is None
              and (r.factor < mine.factor if r.factor < 1 else r.factor > mine.factor)):
            self.remedy = r  # the stronger change
