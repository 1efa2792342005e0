"""No progress: a run that is not learning its task, though nothing listed broke.

What it detects
    Over at least ``min_points`` logged points, neither the train reward nor any signal of the
    task (the held-out score, else the correctness-like reward components) improved, the
    reward now sits clearly below the best level it reached, and the reward or a task signal
    declined (a significant downward trend, a late level a quarter of its range below its
    early one, or for a task term its mean down a tenth of its range: a correctness term
    right on a few samples a step has a median of 0 throughout): the run is going slowly
    backwards. Or, going nowhere: a task signal scored 0-1 (the held-out score, a correctness
    term) never improved over ``patience`` or more logged points, nor the reward by a quarter of
    its range, and the task signal ends below ``low_score`` (its late mean): a task mostly
    failed from the first step to the last is not being learned, flat or not (sparse task
    rewards often first fire late: the patience). Or, gaining where the task does not: the
    reward up a quarter of its range or more while a held-out score never improved over
    ``patience`` points and ends below ``low_score``, with no format and correctness terms
    logged for format_gaming to weigh. Or, held back: a 0-1 task score below ``low_score`` at
    the end while KL stayed under 0.05 with a beta of 1 or more (20x the recipe's top): the KL
    term holds the policy at the reference, however the score crawls.
    A 0-1 task score improved when the mean of
    its last fifth is 0.05 above its first fifth's or 1.25x it: a trend test over 250 points
    finds 0.40 -> 0.44 significant, and that is a crawl, not learning. Or, learning the wrong thing:
    the training reward at its top (a 0/1 training score at 0.9 or more, or most equal-reward
    groups all-correct) while a held-out score never rose by 0.1 and stays below 0.9: with a
    correctness term at its top, the policy learned its training set, not the task (too few
    or too alike prompts, or a held-out set unlike them); with no correctness term logged,
    the reward may pay for something the task does not. That form is named before what it
    brings about (the entropy falling on prompts it knows by heart, every group
    all-correct).

Why it matters
    "Healthy" must mean "learning", not merely "none of the listed modes fired". A run whose
    reward drifts from 0.80 to 0.68 while its correctness term falls from 0.10 to 0.02 burns
    GPU hours for nothing; no collapse detector sees it because nothing collapsed.

How it is detected
    Progress as every rule judges it (``reward_progress``: a significant Mann-Kendall trend or
    a late level a quarter of the reward's range above the early one) for the reward and for
    each task signal, over the whole log. "At its best" is the late median within
    ``best_margin`` of the reward's smoothed range below its best smoothed level, or a task
    the log proves nearly solved: a run that rose and then plateaued has progressed (its
    late level is above its early one) and a converged run sits at its best; neither fires.
    Nor does a reward that climbed a quarter of its range (and 6x its step-to-step noise)
    above its first points before it fell: it learned, then lost it (reward_overfit's fall).

False positives
    A run too short to learn anything yet (fewer than ``min_points`` logged points) is not
    judged. Curriculum stages that make the reward harder on purpose look like this: read the
    onset against them.

Remedies
    Check the reward on a few completions against the task (does it pay right answers?);
    check the learning rate is not too low for the setup (LoRA adapters need ~10x a full
    fine-tune's); easier prompts or a larger group if most groups score alike.
    The learning rate first when the policy barely moved (KL to the reference below 0.01 at
    the end) while most groups had mixed rewards to learn from. Learned by heart: more, and
    more varied, training prompts; check the held-out set is the same task; keep the
    checkpoint with the best held-out score. A reward at its top with no correctness term
    logged: check what the reward pays first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from grpo_doctor.findings import Check, Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import Outcome, Param, Rule
from grpo_doctor.rules.points import head_tail, logged, series
from grpo_doctor.rules.signals import (
    HELDOUT_GAIN,
    HELDOUT_GAP,
    SOLVED_HELDOUT,
    RewardProgress,
    component_role,
    components,
    late_start,
    reward_progress,
    scored_run,
    sparse_declining,
    sparse_improving,
    task_solved,
    train_set_memorised,
)
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, step_text
from grpo_doctor.trends import rolling_median, step_noise

REWARD = Metric.REWARD_MEAN.value
HELDOUT = Metric.HELDOUT_SCORE.value

RULE = Rule(
    "no_progress", "No progress (not learning the task)",
    requires=(REWARD,), min_points="min_points", points="rewards",
    params=(
        Param("min_points", 50, "logged reward points needed to judge progress"),
        Param("best_margin", 0.25, "late level this share of the reward's range below its best "
              "counts as not at its best"),
        Param("low_score", 0.5, "a 0-1 task score that never improved and ends below this "
              "(late mean) is not being learned"),
        Param("patience", 100, "logged reward points before a low task score that never "
              "improved counts"),
    ),
)


def _task_signals(run: Run) -> dict[str, str]:
    """Name -> column of what measures the task: the held-out score, else the correctness
    components."""
    if run.has(HELDOUT) and len(series(run, HELDOUT)[1]) >= 5:
        return {"held-out score": HELDOUT}
    return {name: col for name, col in components(run).items()
            if component_role(run, name) == "correctness"}


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    # The policy's own record: not the steps a failed or stopped scorer logged.
    run = scored_run(run)
    steps, r = series(run, REWARD)
    n_logged = logged(run, REWARD)  # r may be binned
    first_step = int(run.finite_series(REWARD)[0][0])  # and steps[0] the end of a bin
    since = float(steps[0])
    reward = reward_progress(run, since)
    task = {name: reward_progress(run, since, metric=col)
            for name, col in _task_signals(run).items()}
    task = {n: pr for n, pr in task.items() if pr.logged}
    smooth = rolling_median(r, max(5, len(r) // 20) | 1)
    best = float(smooth.max())
    start, now = head_tail(r, frac=0.2)
    span = float(np.ptp(smooth)) or 1e-12
    below_best = (best - now) / span
    evidence: dict[str, object] = {
        "reward_start": round(float(start), 6), "reward_now": round(float(now), 6),
        "reward_best": round(best, 6), "below_best_share_of_range": round(below_best, 3),
        "reward_improving": reward.improving,
        "task_improving": {n: pr.improving for n, pr in task.items()},
    }
    stalled = _stopped_short(run)
    _, entropy = series(run, Metric.ENTROPY.value)
    if stalled is not None and len(entropy) >= 10:
        e0, e1 = head_tail(entropy, frac=0.2)
        if e0 > 0 and e1 <= _SHARPENED * e0:
            # No gain over the log's second half with the policy sharpened: a ceiling it
            # settled at, not a slow climb (a policy barely moving, at a tiny lr, is that).
            evidence["task_stalled"] = {"signal": stalled[0], "since": stalled[3]}
    memorised = train_set_memorised(run)
    if memorised is not None:
        m = memorised
        if m.from_start and m.kind != "reward":
            # At its top from the first logs: the policy learned nothing there, by heart or
            # otherwise ("learned its training set" read beside a reward at 1.18 at step 1).
            m = replace(m, kind="start")
        evidence["memorised"] = {"kind": m.kind, "train": m.train,
                                 "held_start": round(m.held_start, 4),
                                 "held_end": round(m.held_end, 4),
                                 "held_best": round(m.held_best, 4)}
        evidence["threshold"] = (f"the training reward at its top while the held-out score "
                                 f"never rose by {fmt(HELDOUT_GAIN)} and stays below "
                                 f"{fmt(SOLVED_HELDOUT)}" if m.plateau_at is None else
                                 f"the training score at 0.9 or more and {fmt(HELDOUT_GAP)} "
                                 f"or more above the held-out score, which gained under "
                                 f"{fmt(HELDOUT_GAIN / 2)} over its last half while training "
                                 f"gained more")
        held = (f"the held-out score went {fmt(m.held_start)} -> {fmt(m.held_end)} (never "
                f"above {fmt(m.held_best)})" if m.plateau_at is None else
                f"the held-out score rose {fmt(m.held_start)} -> {fmt(m.held_end)} but gained "
                f"nothing from step {step_text(m.plateau_at)} on while training went on")
        named = ("logged reward term" if m.terms_from == "logged"
                 else "reward term the config names")
        why = {"prompts": "the policy learned its training set",
               "start": "nothing was learned: the rollouts score what the held-out set does "
                        "not (samples drawn colder than the evaluation's, or training prompts "
                        "easier than the held-out ones)",
               "reward": f"no {named} pays correct answers "
                         f"({', '.join(m.terms)} {'is' if len(m.terms) == 1 else 'are'} "
                         f"all the reward)",
               "either": "the reward pays for something the held-out task does not, or the "
                         "policy learned its training prompts"}[m.kind]
        at = "at its top from the first logs" if m.from_start else "at its top"
        summary = (f"the training reward is {at} ({m.train}; reward {fmt(start)} -> "
                   f"{fmt(now)}), the task is not: {held}: {why}")
        onset = m.plateau_at if m.plateau_at is not None else first_step
        return Outcome(Status.WARNING, summary, onset_step=onset, evidence=evidence,
                       remedies=_memorised_remedies(m.kind, run), key_metric=HELDOUT)
    signals = _task_signals(run)
    low = _stuck_low(run, signals, task, p, skip_improving=False)
    if low is not None and len(r) >= p["min_points"]:
        # Said even when the run learns: "healthy" means no failure mode fired, and a reader
        # takes it for "good" unless told the task's own score is still low.
        evidence["task_low"] = {"signal": low[0], "start": round(low[1], 4),
                                "end": round(low[2], 4)}
    improving = [n for n, pr in task.items() if (pr.improving
                 or sparse_improving(run, signals[n])) and _material(run, signals[n])]
    held_back = _held_back(run, evidence)
    if held_back is not None and len(r) >= p["patience"]:
        # Learning, but held at the reference by a KL term far above the recipe: the task's
        # score still low and the policy barely moved. Config and curves agree: a finding.
        score = (f"a 0-1 task score below {fmt(p['low_score'])} at the end" if "task_low" in
                 evidence else f"a 0-1 task score below {fmt(SOLVED_HELDOUT)} and flat over the "
                 "log's second half")
        evidence["threshold"] = (f"{score}, KL below {fmt(_HELD_KL)}, and beta "
                                 f"{fmt(_BETA_HOLDS)} or more")
        return Outcome(Status.WARNING, held_back, onset_step=first_step, evidence=evidence,
                       remedies=_remedies(run), key_metric=REWARD)
    if (reward.improving or sparse_improving(run, REWARD)) and (not task or improving):
        # Means where the medians tie: a sparse reward (0 on most steps) that pays more often
        # late than early had read "improved (0 -> 0)". With the task's own signals that
        # improved named: the reward's own ends may be within its noise.
        ends = {n: head_tail(series(run, signals[n])[1], frac=0.2) for n in improving}
        how = "".join(f", {n} {_ends(run, signals[n], *ends[n])}" for n in improving)
        return Outcome(Status.OK, f"the reward improved ({_ends(run, REWARD, start, now)}{how})",
                       evidence=evidence, key_metric=REWARD)
    if improving:
        return Outcome(Status.OK, f"the task improved ({', '.join(improving)})",
                       evidence=evidence, key_metric=REWARD)
    frozen = _never_moved(run) if len(r) >= p["patience"] else None
    if frozen is not None:
        # Nothing learned, and the log shows why: a policy that never left its reference
        # while its groups carried a signal took updates too small to move it (the learning
        # rate, a leash, or weights that do not train), whatever its reward's noise.
        kl_end, mixed = frozen
        evidence["threshold"] = (f"no improvement over {n_logged:,} logged points, KL below "
                                 f"{fmt(_FROZEN_KL)} to the end, most groups mixed")
        summary = (f"learning held back: over {n_logged:,} logged points the policy never "
                   f"left its reference (KL {fmt(kl_end)} at the end) while {mixed:.0%} of "
                   f"groups had mixed rewards to learn from, and the reward stayed where it "
                   f"was ({_ends(run, REWARD, start, now)}): the updates are too small to "
                   "move it")
        return Outcome(Status.WARNING, summary, onset_step=first_step, evidence=evidence,
                       remedies=_remedies(run), key_metric=REWARD)
    # A reward that climbed well above its first points before it fell has learned, then lost
    # it: reward_overfit's fall, not a run that is not learning (its "start", the first fifth,
    # can hold the whole climb of a long log).
    first = float(np.median(r[:max(3, len(r) // 20)]))
    learned = _learned_then_lost(r, p["best_margin"])
    # Going backwards, as every rule judges a decline: a flat run of noise is not evidence.
    # A task signal that climbed first, then fell, learned too.
    backwards = (reward.declining and not learned) or any(
        (pr.declining or sparse_declining(run, signals[n]))
        and not _learned_then_lost(series(run, signals[n])[1], p["best_margin"], task=True)
        for n, pr in task.items())
    if learned and not backwards and reward.declining:
        return Outcome(Status.OK, f"the reward rose from {fmt(first)}, then fell to "
                       f"{fmt(now)}: it learned, then lost it (a fall, not a stall)",
                       evidence=evidence, key_metric=REWARD)
    if not backwards:
        # A task score back where it began after a climb (the held-out score 0.49 -> 0.955 ->
        # 0.48 over an lr burst): a fall for the findings of the crash to date, never "not
        # learning" ("the held-out score stayed low (0.487 -> 0.48)" had read beside its peak).
        # The task's own signals only: a reward that rose and fell while the task never moved
        # learned nothing of the task.
        for name, column in ((n, signals[n]) for n in task):
            _, v = series(run, column)
            climb = _climb(v, p["best_margin"], task=True)
            if climb is None:
                continue
            head, peak = climb
            end = float(np.median(v[-max(3, len(v) // 10):]))
            if end - head <= 0.5 * (peak - head):  # half the climb or more given back
                return Outcome(Status.OK, f"the {name} rose from {fmt(head)} to {fmt(peak)}, "
                               f"then fell back to {fmt(end)}: it learned, then lost it (a "
                               "fall, not a stall)", evidence=evidence, key_metric=column)
    # The reward gaining while the task does not is format_gaming's to judge, not a stall; a
    # gain counts by its size (a quarter of the reward's range), as a trend test over 100+
    # points finds a rise of 0.078 -> 0.086 on a task stuck at 8%.
    reward_rose = (now - start) >= p["best_margin"] * span and _material(run, REWARD)
    stuck = None if (backwards or reward_rose or task_solved(run) or len(r) < p["patience"]
                     ) else _stuck_low(run, signals, task, p)
    held_stuck = _stuck_low(run, signals, task, p) if (
        reward_rose and not backwards and HELDOUT in signals.values()
        and not _format_gaming_judges(run) and len(r) >= p["patience"]) else None
    if held_stuck is not None:
        # The held-out score is the task itself; with no format and correctness terms for
        # format_gaming to weigh, a train reward that rose while it stayed low is no one
        # else's to call: the gain does not carry to the task.
        name, was, now_score = held_stuck
        evidence["threshold"] = (f"the reward up while a 0-1 task score never improved over "
                                 f"{n_logged:,} logged points and ends below "
                                 f"{fmt(p['low_score'])}")
        summary = (f"no progress on the task: over {n_logged:,} logged points the reward rose "
                   f"({fmt(start)} -> {fmt(now)}) but the {name} did not ({fmt(was)} -> "
                   f"{fmt(now_score)}, of 1): the gain does not carry to the task")
        return Outcome(Status.WARNING, summary, onset_step=first_step, evidence=evidence,
                       remedies=_unmatched_remedies(), key_metric=REWARD)
    if stuck is not None:
        name, was, now_score = stuck
        evidence["threshold"] = (f"no improvement over {n_logged:,} logged points and a 0-1 task "
                                 f"score below {fmt(p['low_score'])} at the end")
        summary = (f"no progress: over {n_logged:,} logged points the {name} stayed low "
                   f"({fmt(was)} -> {fmt(now_score)}, of 1) and the reward barely moved "
                   f"({fmt(start)} -> {fmt(now)}): the run is not learning its task")
        return Outcome(Status.WARNING, summary, onset_step=first_step, evidence=evidence,
                       remedies=_remedies(run, stuck), key_metric=REWARD)
    # Its best no better than where it began: a reward sitting at one value (0.5 on most
    # steps, its step-to-step noise 0) is "at its best" without having learned anything.
    never_moved = (best - float(start) <= max(2.0 * step_noise(r), 0.02 * max(
        abs(float(start)), abs(best), 1e-12))) and not task_solved(run)
    if (below_best < p["best_margin"] or task_solved(run)) and not never_moved:
        return Outcome(Status.OK, f"reward {fmt(start)} -> {fmt(now)}, at its best level "
                       f"({fmt(best)}): converged, not stalled", evidence=evidence,
                       key_metric=REWARD)
    late = late_start(run)
    if never_moved and not backwards and late is not None:
        # A later part of the run (a launch resumed from a checkpoint, read alone): the level
        # it holds was reached before the log began, not "never learned".
        return Outcome(Status.OK, f"the reward held its level ({_ends(run, REWARD, start, now)}) "
                       f"from step {step_text(late)}, where this log starts: what the run "
                       "learned before is not in it", evidence=evidence, key_metric=REWARD)
    moved_for_nothing = _moved_for_nothing(run) if (
        never_moved and not backwards and len(r) >= p["patience"]) else None
    if moved_for_nothing is not None:
        # The groups told completions apart on most steps and the policy moved, yet nothing it
        # learned changed the reward: what the reward pays is nothing the policy can learn (a
        # coin-flip check, trial 53: 0.50 on every 50-step block, groups mixed on 100% of
        # steps, entropy 0.29 -> 0.23, read inconclusive with an lr cut).
        evidence["threshold"] = (f"the reward within its noise over {n_logged:,} logged "
                                 "points while most groups had mixed rewards and the policy "
                                 "moved")
        summary = (f"no progress: over {n_logged:,} logged points the reward never left its "
                   f"level ({_ends(run, REWARD, start, now)}) while {moved_for_nothing}: "
                   "nothing the policy learned changed what the reward pays")
        return Outcome(Status.WARNING, summary, onset_step=first_step, evidence=evidence,
                       remedies=_unlearnable_remedies(run), key_metric=REWARD)
    if never_moved and not backwards:
        # A reward that never left its level (exactly 0.5 on most steps) has not converged:
        # nothing was learned to converge to. Not a pass (``unsettled``).
        evidence["unsettled"] = True
        return Outcome(Status.OK, f"{reward.stalled_words()}: it never left its level",
                       evidence=evidence, key_metric=REWARD)
    if not backwards:
        # Said as it is: far below its best ("at its best level" read -6 against -0.375).
        # Not a pass: the report lists it apart (``unsettled``), beside findings that say
        # "reward not improving".
        evidence["unsettled"] = True
        return Outcome(Status.OK, f"{reward.stalled_words()}, best {fmt(best)}; no significant "
                       "trend either way", evidence=evidence, key_metric=REWARD)
    evidence["threshold"] = (f"no improvement over {n_logged:,} logged points and the reward "
                             f"{p['best_margin']:.0%}+ of its range below its best")
    worse = [f"{n} {_ends(run, signals[n], pr.start, pr.end)}" for n, pr in task.items()
             if pr.start is not None and pr.end is not None]
    # Which levels: the means of a noisy 0-1 reward can move the other way (0.43 -> 0.49
    # where the medians went 0.625 -> 0.5, helper-39).
    summary = (f"no progress: over {n_logged:,} logged points the reward went "
               f"{fmt(start)} -> {fmt(now)} (medians of its first and last fifth; best "
               f"{fmt(best)} as a rolling median)"
               + (f", {', '.join(worse)}" if worse else "")
               + ": the run is not learning its task")
    return Outcome(Status.WARNING, summary, onset_step=first_step, evidence=evidence,
                   remedies=_remedies(run), key_metric=REWARD)


def _held_back(run: Run, evidence: Mapping[str, object]) -> str | None:
    """The summary when the task's 0-1 score ends low (``task_low``), the run's beta is
    ``_BETA_HOLDS`` or more and its KL stayed under ``_HELD_KL`` while most groups carried a
    signal: a leash that holds the policy at the reference, however the score crawls
    (0.41 -> 0.48 over 200 steps at beta 2, KL 0.01). None otherwise."""
    low = evidence.get("task_low")
    beta, _ = knobs.current(run, knobs.KL_COEF)
    still = _stillness(run)
    if beta is None or beta < _BETA_HOLDS or still is None:
        return None
    kl_end, mixed = still
    if kl_end >= _HELD_KL or (mixed is not None and mixed < 0.5) or _reference_is_policy(run):
        return None
    if isinstance(low, dict):
        return (f"learning held back: the {low['signal']} is still low ({fmt(low['start'])} -> "
                f"{fmt(low['end'])}, of 1) and the policy barely moved from the reference (KL "
                f"{fmt(kl_end)} at the end), with beta {fmt(beta)}: the KL term holds it there")
    stopped = _stopped_short(run)
    if stopped is None:
        return None
    name, was, now, since = stopped
    # Not low, but stopped well short of solved with the policy pinned (beta 1: the held-out
    # score flat at 0.6 for 150 steps, KL 0.03, where its twins reached 0.9).
    return (f"learning held back: the {name} stopped short of solved ({fmt(was)} -> "
            f"{fmt(now)}, of 1; no gain since step {step_text(since)}) and the policy barely "
            f"moved from the reference (KL {fmt(kl_end)} at the end), with beta {fmt(beta)}: "
            "the KL term holds it there")


def _reference_is_policy(run: Run) -> bool:
    """The KL term holds nothing: its KL exactly 0 on every logged step, or a reference
    synced to the policy every step or two at full weight (TRL's sync_ref_model with
    ref_model_mixup_alpha 1; trial 70's beta 8 at KL 0 had read "the KL term holds it
    there" on a run that learned as its controls did)."""
    _, kl = series(run, Metric.KL.value)
    if len(kl) >= 5 and bool(np.all(kl == 0)):
        return True
    flat = knobs.flatten(run.config) if run.config else {}
    alpha, every = knobs.keyed(flat, "ref_model_mixup_alpha"), knobs.keyed(
        flat, "ref_model_sync_steps")
    return knobs.keyed(flat, "sync_ref_model") is True and isinstance(alpha, (int, float)) and (
        alpha >= 0.9) and isinstance(every, (int, float)) and every <= 2


#: The entropy's late level at most this share of its early one: the policy has sharpened.
_SHARPENED = 0.6


def _stopped_short(run: Run) -> tuple[str, float, float, int] | None:
    """(name, first-fifth mean, last-fifth mean, the step its flat second half begins) of a
    0-1 task signal that ends below ``SOLVED_HELDOUT`` and gained nothing material over the
    second half of the log (the mean of its last quarter less than ``_MATERIAL_GAIN`` above
    its third's); None otherwise."""
    for name, column in _task_signals(run).items():
        steps, v = series(run, column)
        ends = _fifths(v)
        if ends is None:
            continue
        was, now = ends
        half = v[len(v) // 2:]
        q = max(2, len(half) // 2)
        gained = float(np.mean(half[-q:])) - float(np.mean(half[:q]))
        if now < SOLVED_HELDOUT and gained < _MATERIAL_GAIN:
            return name, was, now, int(steps[len(v) // 2])
    return None


def _stillness(run: Run) -> tuple[float, float | None] | None:
    """How far the policy got from its reference and what it had to learn from: the median KL
    of the log's last tenth, and the share of groups with mixed rewards over its last fifth
    (None when not logged). None when KL is not logged (10 points or more)."""
    _, kl = series(run, Metric.KL.value)
    if len(kl) < 10:
        return None
    _, z = series(run, Metric.ZERO_STD_FRACTION.value)
    kl_end = float(np.median(kl[-max(3, len(kl) // 10):]))
    mixed = 1.0 - float(np.mean(z[-max(3, len(z) // 5):])) if len(z) >= 10 else None
    return kl_end, mixed


def _never_moved(run: Run) -> tuple[float, float] | None:
    """(KL at the end, mixed share) when the policy never left its reference: KL below
    ``_FROZEN_KL`` at the end and on nine logged points in ten, while most groups had mixed
    rewards to learn from. A KL column of zeros counts only with a beta the config sets above
    0 (with beta 0 a framework may log 0 for a KL it never computed). None otherwise."""
    still = _stillness(run)
    if still is None or still[1] is None or still[1] < 0.5 or still[0] >= _FROZEN_KL:
        return None
    source = run.mapping.get(Metric.KL.value, Metric.KL.value).lower()
    if any(w in source for w in _SCALED_KL):
        return None  # beta x KL (a penalty logged as a reward): small whatever the policy did
    _, kl = series(run, Metric.KL.value)
    if float(np.quantile(np.abs(kl), 0.9)) >= _FROZEN_KL:
        return None
    beta, _ = knobs.current(run, knobs.KL_COEF)
    if float(np.max(np.abs(kl))) == 0.0 and not (beta is not None and beta > 0):
        return None
    return still[0], still[1]


#: Names of a logged KL already multiplied by its coefficient (verl's reward_kl_penalty, TRL
#: PPO's non-score reward): small by the factor beta, not by the policy's standing still.
_SCALED_KL = ("penalty", "non_score")


#: KL to the reference below which, at the end of 100+ logged points and on nearly all of
#: them, a policy never left it: the real runs' healthy ones are at 0.001-0.3 by then, a
#: learning rate 1000x too small at 1e-6, an Adam epsilon of 1 (updates scaled to nothing)
#: at 2e-4.
_FROZEN_KL = 5e-4


#: KL to the reference under which a policy with a beta of ``_BETA_HOLDS`` or more is held.
_HELD_KL = 0.05


def _format_gaming_judges(run: Run) -> bool:
    """A format-like and a correctness-like reward component are logged: format_gaming
    weighs a reward gain against the task."""
    roles = {component_role(run, n) for n in components(run)}
    return {"format", "correctness"} <= roles


def _unmatched_remedies() -> tuple[str, ...]:
    return ("check the reward on a few completions against the held-out task: does it pay "
            "right answers, and only them? (a reward that pays something else rises while "
            "the task stays put)",
            "check the rollout settings against the evaluation's (temperature, prompt "
            "template, answer format): gains made on samples unlike the evaluation's do not "
            "carry to it",
            "keep the checkpoint with the best held-out score")


def _learned_then_lost(v: np.ndarray, margin: float, *, task: bool = False) -> bool:
    """``v`` (smoothed) climbed ``margin`` of its range and 6x its step-to-step noise above
    its first points before it ended below its best: it learned, then lost it."""
    return _climb(v, margin, task=task) is not None


def _climb(v: np.ndarray, margin: float, *, task: bool = False) -> tuple[float, float] | None:
    """(its first points' median, its smoothed peak) when ``v`` climbed ``margin`` of its
    range and 6x its step-to-step noise above its first points (a task's own 0-1 score: or
    0.3 or more); None otherwise."""
    if len(v) < 10:
        return None
    smooth = rolling_median(v, max(5, len(v) // 20) | 1)
    first = float(np.median(v[:max(3, len(v) // 20)]))
    peak = float(smooth.max())
    gain = peak - first
    # On a 0-1 score the climb must be learning by its size too: a held-out score of 0 that
    # touched 0.005 once "learned, then lost it" on a run that never solved a prompt; nor
    # is a 5-step median of 0.094 (3 of 32 right) on a task out of reach (helper-60).
    zero_one = bool(v.min() >= 0 and v.max() <= 1)
    material = gain >= 2 * _MATERIAL_GAIN if zero_one else True
    # A 0-1 score up 0.3 or more is learning whatever its step noise (a task term at 0.41 ->
    # 0.875 -> 0, noisy from its own crash, had read "stayed low (0.47 -> 0.406)" beside
    # "the reward barely moved (0.961 -> 1.72)", trial 51 live).
    # (The task's own score only: a 0-1 reward on 8 samples a step, up 0.3 -> 0.7 in 20 steps
    # and sliding back, stays a stall by its noise.)
    big = task and zero_one and gain >= 0.3
    if gain >= margin * (float(np.ptp(smooth)) or 1e-12) and (
            gain >= 6 * step_noise(v) or big) and material:
        return first, peak
    return None


def _remedies(run: Run, stuck: tuple[str, float, float] | None = None) -> tuple[str, ...]:
    """The remedies, the likeliest first: the step size when the policy barely moved while
    the groups carried signal; the prompts when a task score stayed low (``stuck``) while the
    policy moved and the reward paid right answers now and then; else the reward itself."""
    check = ("check the reward on a few completions against the task: does it pay right "
             "answers, and only them?")
    groups = "easier prompts (or a larger group) if most groups score alike"
    still = _barely_moved(run) or _lr_far_below(run)
    beta, _ = knobs.current(run, knobs.KL_COEF)
    if still is not None and beta is not None and beta >= _BETA_HOLDS:
        # The policy did not move because the KL term pays it not to: the leash, not the step.
        leash = knobs.set_to(run, knobs.KL_COEF, "0.01-0.05",
                             why=f"{still}: a KL coefficient this large holds the policy at "
                                 "the reference")
        return tuple(r for r in (leash, check, groups) if r is not None)
    if still is not None:
        # The reward had something to teach and the policy did not move: the step size.
        return (_lr_remedy(run, still), check, groups)
    if stuck is not None and stuck[2] < _OUT_OF_REACH and _moved_and_paid(run):
        name, was, now = stuck
        if abs(now - was) < _FLAT_TASK:
            # Flat where it began, not learning slowly: answers misaligned with their prompts
            # score at chance from the first step to the last, as an unreachable task does
            # (trial 64: an answer column shuffled, 0.10 -> 0.106, read "out of its reach").
            return (f"check a few prompts' reference answers first: the {name} stayed at "
                    f"{fmt(now)} of 1 ({fmt(was)} at the start) while the policy moved and "
                    "the reward paid a right answer now and then, as a wrong or misaligned "
                    "answer key scores; if the answers are right, the task is out of reach: "
                    "easier prompts (a curriculum, or SFT first)", check, _lr_remedy(run))
        return (f"easier prompts (a curriculum, or SFT first): the {name} stayed at "
                f"{fmt(now)} of 1 ({fmt(was)} at the start) while the policy moved and the "
                "reward paid a right answer now and then: the task is out of its reach",
                check, _lr_remedy(run))
    return (check, _lr_remedy(run), groups)


#: A task score that moved less than this over the run is flat, not learning slowly.
_FLAT_TASK = 0.03

#: The relative change of the entropy (first fifth to last) over which a policy moved.
_ENTROPY_MOVED = 0.1


def _moved_for_nothing(run: Run) -> str | None:
    """Why a reward that never moved was learnable and learned from, when the log shows it:
    most groups had mixed rewards over the log's last fifth, and the policy moved (its KL to
    the reference at ``_STILL_KL`` or more at the end, or its entropy ``_ENTROPY_MOVED`` or
    more off its first points). None otherwise (too few signals, or a policy that barely moved:
    the step size's to answer)."""
    _, z = series(run, Metric.ZERO_STD_FRACTION.value)
    if len(z) < 10 or _barely_moved(run) is not None:
        return None
    mixed = 1.0 - float(np.mean(z[-max(3, len(z) // 5):]))
    if mixed < 0.5:
        return None
    still = _stillness(run)
    _, kl = series(run, Metric.KL.value)
    # Moved over the log: a KL that sat at one level from the first logs (an offset) is no
    # move the log saw.
    if still is not None and still[0] >= max(_STILL_KL, 2 * float(np.median(
            np.abs(kl[:max(5, len(kl) // 20)])))):
        return (f"{mixed:.0%} of groups had mixed rewards to learn from and the policy moved "
                f"(KL {fmt(still[0])} at the end)")
    _, h = series(run, Metric.ENTROPY.value)
    if len(h) < 10:
        return None
    a, b = _entropy_ends(h)
    if a <= 0 or abs(b - a) < _ENTROPY_MOVED * a:
        return None
    return (f"{mixed:.0%} of groups had mixed rewards to learn from and the policy moved "
            f"(entropy {fmt(a)} -> {fmt(b)})")


def _unlearnable_remedies(run: Run) -> tuple[str, ...]:
    return ("check the reward on a few completions against the task: does its score depend on "
            "the completion at all? (a check that ignores the answer, or pays at random; "
            "reference answers that do not match their prompts)",
            "log a held-out score to see whether the task moves while the reward does not",
            _lr_remedy(run))


#: A 0-1 task score this low at the end, never improved while the policy moved: the task is
#: out of the policy's reach (at 0.44 right, it is not: what the reward pays comes first).
_OUT_OF_REACH = 0.2


def _moved_and_paid(run: Run) -> bool:
    """The policy moved (KL to the reference at ``_STILL_KL`` or more at the end, when logged)
    and the reward varied (it paid some answers and not others)."""
    still = _stillness(run)
    _, r = series(run, REWARD)
    moved = still is None or still[0] >= _STILL_KL
    return moved and len(r) >= 10 and float(np.ptp(r)) > 0


#: KL to the reference below this at the end of a stalled run: the policy barely moved.
_STILL_KL = 0.01


def _barely_moved(run: Run) -> str | None:
    """Why the updates were too small, when the log shows it: the KL to the reference still
    below ``_STILL_KL`` at the end while most groups carried a signal (mixed rewards). None
    when KL is not logged or the groups were mostly equal (nothing to learn from)."""
    still = _stillness(run)
    if still is None:
        return _entropy_still(run)
    if still[1] is None or still[0] >= _STILL_KL or still[1] < 0.5:
        return None
    kl_end, mixed = still
    return (f"the policy barely moved from the reference (KL {fmt(kl_end)} at the end) "
            f"while {mixed:.0%} of groups had mixed rewards to learn from")


#: With no KL logged (beta 0), an entropy whose last fifth is within this share of its first
#: over 100+ logged steps, while most groups had mixed rewards: the policy barely moved (a
#: run that learns sharpens; trial 51: lr 1e-6 on a tiny model, 0.311 -> 0.310).
_STILL_ENTROPY = 0.05


def _entropy_still(run: Run) -> str | None:
    _, h = series(run, Metric.ENTROPY.value)
    _, z = series(run, Metric.ZERO_STD_FRACTION.value)
    if len(h) < 100 or len(z) < 10:
        return None
    mixed = 1.0 - float(np.mean(z[-max(3, len(z) // 5):]))
    start, end = _entropy_ends(h)
    if mixed < 0.5 or start <= 0 or abs(end - start) > _STILL_ENTROPY * start:
        return None
    return (f"the policy barely moved (entropy {fmt(start)} -> {fmt(end)} over {len(h)} "
            f"logged steps; {_NO_KL}) while {mixed:.0%} of groups had mixed rewards to "
            "learn from")


def _entropy_ends(h: np.ndarray) -> tuple[float, float]:
    """The entropy's medians over its first points (a twentieth of the log, 5 or more) and
    over its last fifth. From its first points: a policy that moved in its first steps and
    then held moved (trial 53: 0.284 over the first 10 steps, 0.25 over the first fifth,
    0.236 at the end, read as "barely moved")."""
    return (float(np.median(h[:max(5, len(h) // 20)])),
            float(np.median(h[-max(3, len(h) // 5):])))


_NO_KL = "no KL logged"


#: A KL coefficient this large (20x the top of the recipe's 0.01-0.05) holds a policy at its
#: reference: when the policy barely moved, the leash is what to loosen, not the step size.
_BETA_HOLDS = 1.0


#: The chapter's starting learning rate, and how many times below it a configured rate is
#: too small to move the policy in any run's length (the recipe's "far" factor).
_LR_START = 1e-6
_LR_FAR_BELOW = 30.0


def _lr_far_below(run: Run) -> str | None:
    """Why the updates were too small, when the config says it: a learning rate 30x or more
    below the chapter's 1e-6 start (1e-9: a typo, or a schedule's floor taken for its
    peak). None otherwise."""
    value, _ = knobs.current(run, knobs.LEARNING_RATE)
    if value is None or not 0 < value <= _LR_START / _LR_FAR_BELOW:
        return None
    return (f"a learning rate of {knobs.knob_value(value)} is {_LR_START / value:,.0f}x below "
            f"the chapter's {knobs.knob_value(_LR_START)} start: updates too small to move "
            "the policy")


def _memorised_remedies(kind: str, run: Run) -> tuple[str, ...]:
    if kind == "start":
        cold = knobs.current(run, knobs.TEMPERATURE)[0] is not None and knobs.set_to(
            run, knobs.TEMPERATURE, "1.0", why="near-greedy samples solve what the "
            "evaluation's do not", unless_at_least=1.0)
        return (cold or "check the rollout temperature against the evaluation's: near-greedy "
                "samples (a low temperature) solve prompts that temperature-1 samples do not",
                "check the training prompts against the held-out set (difficulty, format): "
                "the training side was solved before any update",
                "stop at the checkpoint with the best held-out score")
    prompts = ("train on more prompts, and more varied ones: the policy solved its training "
               "set without learning the task (a small or repetitive dataset, or one unlike "
               "the held-out set)")
    check = ("check the reward on a few completions against the task: does it pay right "
             "answers, and only them?")
    if kind == "reward":
        return ("add a reward term that pays correct answers (the task's own check): the "
                "reward is at its top on what it pays, and the task never improved", check,
                "stop at the checkpoint with the best held-out score")
    first = (check, prompts) if kind == "either" else (prompts, check)
    return (*first, "check the held-out set is the same task, format and difficulty as the "
            "training prompts", "stop at the checkpoint with the best held-out score")


def _stuck_low(run: Run, signals: Mapping[str, str], task: Mapping[str, RewardProgress],
               p: Mapping[str, float], *, skip_improving: bool = True
               ) -> tuple[str, float, float] | None:
    """(name, first-fifth mean, last-fifth mean) of a task signal scored 0-1 that ends below
    ``low_score``: means, as a correctness term right on a few samples a step has a median of
    0 throughout. None when there is none (a reward of unknown scale says nothing of how much
    of the task is solved)."""
    for name, progress in task.items():
        ends = _fifths(series(run, signals[name])[1])
        if ends is None or (skip_improving and progress.improving
                            and _material(run, signals[name])):
            continue
        was, now = ends
        if now < p["low_score"]:
            return name, was, now
    return None


def _fifths(v: np.ndarray) -> tuple[float, float] | None:
    """(first-fifth mean, last-fifth mean) of a 0-1 task signal of 10+ points; None for
    fewer, or for a signal on another scale."""
    if len(v) < 10 or v.min() < 0 or v.max() > 1:
        return None
    k = max(3, len(v) // 5)
    return float(np.mean(v[:k])), float(np.mean(v[-k:]))


#: A 0-1 task score improved when the mean of its last fifth is this much above its first
#: fifth's, or this many times it: 0.30 -> 0.36 on a hard benchmark is learning, 0.405 ->
#: 0.446 over 250 steps (significant by a trend test) is a crawl.
_MATERIAL_GAIN = 0.05
_MATERIAL_RATIO = 1.25


def _material(run: Run, column: str) -> bool:
    """A gain of a 0-1 task score that is learning, not a trend test's significance over
    many points (see ``_MATERIAL_GAIN``). A signal on another scale is not judged here
    (True)."""
    _, v = series(run, column)
    if len(v) < 10 or v.min() < 0 or v.max() > 1:
        return True
    k = max(2, len(v) // 5)
    early, late = float(np.mean(v[:k])), float(np.mean(v[-k:]))
    # The ratio only off the floor: 0.012 -> 0.034 of 1 on a task out of reach is 3x and no
    # learning (a live no_progress cleared on it, "the reward improved", helper-60).
    return late - early >= _MATERIAL_GAIN or (
        late >= _MATERIAL_RATIO * early + 0.01 and late >= _MATERIAL_GAIN)


def _ends(run: Run, column: str, start: float, end: float) -> str:
    """'a -> b' for a task signal: its medians, or, when they tie (a sparse term, 0 on most
    steps: "0 -> 0" while it fell 0.10 -> 0.02), the means of its first and last fifth."""
    if fmt(start) == fmt(end):
        _, v = series(run, column)
        k = max(3, len(v) // 5)
        if len(v) >= 2 * k:
            start, end = float(np.mean(v[:k])), float(np.mean(v[-k:]))
    return f"{fmt(start)} -> {fmt(end)}"


def _lr_remedy(run: Run, still: str | None = None) -> knobs.Remedy:
    # Knows its knob: a plan that already turns the learning rate (down, for a value outside
    # the recipe) merges this into that item rather than asking both ways.
    value, _ = knobs.configured_value(run, knobs.LEARNING_RATE)
    now = f" (now {knobs.knob_value(float(value))})" if isinstance(value, (int, float)) else ""
    if still is not None and isinstance(value, (int, float)) and 0 <= value < _LR_START:
        # Below the chapter's start while the policy stood still: raise it to the start (x3
        # from 1e-7 is still a step that moves nothing).
        return knobs.Remedy(f"learning_rate {knobs.knob_value(float(value))} -> "
                            f"{knobs.knob_value(_LR_START)} ({still}; a LoRA adapter takes "
                            "about 10x that)", knob=knobs.LEARNING_RATE)
    if still is not None:
        # The chapter's ceiling only beside a value below it: a recipe set for this model
        # (1e-4 for a tiny one) had read "x3 ... (the recipe keeps a full fine-tune below
        # 5e-6)", an advice that argues with itself.
        bound = (" (the recipe keeps a full fine-tune below 5e-6, a LoRA adapter about 10x "
                 "higher)") if not isinstance(value, (int, float)) or value < 5e-6 else ""
        # An entropy that did not move at all over 100+ steps: a frozen policy, which x3 of
        # the same step leaves frozen (trial 51: 1e-6 on a model that learns at 1e-4).
        factor = 10 if _NO_KL in still else 3
        return knobs.Remedy(f"raise the learning rate{now}, e.g. x{factor}: {still}{bound}",
                            knob=knobs.LEARNING_RATE, factor=float(factor))
    if isinstance(value, (int, float)) and value >= 10 * _LR_START:
        # Already a LoRA adapter's lr or more (1e-4 against the chapter's 1e-6): the words on
        # adapters say nothing to it.
        return knobs.Remedy(f"check the learning rate is not too low for the setup{now}",
                            knob=knobs.LEARNING_RATE)
    return knobs.Remedy(f"check the learning rate is not too low for the setup{now}: the "
                        "recipe's 1e-6 is for a full fine-tune, a LoRA adapter needs about 10x",
                        knob=knobs.LEARNING_RATE)


#: How the note of a run nothing fired on begins when its task's own score is still low.
LOW_TASK_NOTE = "no failure mode fired, but the task's own score is still low: "


def low_under_setting(run: Run, checks: Iterable[Check], setting: tuple[str, str] | None,
                      p: Mapping[str, float]) -> Check | None:
    """The no_progress check of a run nothing fired on whose task score stayed low (its
    ``task_low``: below ``low_score`` at the end) while every sample was drawn, or every
    update made, with a setting far outside the recipe (``setting``: its fix, and what it is,
    "every sample drawn with ..."), made a warning: the setting is the evidence the curves
    lacked, and "healthy" at 9% correct reads as "this run learns" (trial 68:
    repetition_penalty 5 in generation_kwargs, correctness 0.014 -> 0.091 where its controls
    reached 0.86; trial 82: optim adagrad, 0.38 -> 0.50 where they reached 0.87). None
    otherwise."""
    checks = list(checks)
    check = next((c for c in checks if c.mode == RULE.id), None)
    if setting is None or check is None or any(c.fired for c in checks):
        return None
    low = check.evidence.get("task_low")
    steps, r = series(run, REWARD)
    if not isinstance(low, dict) or len(r) < p["patience"]:
        return None
    fix, said = setting
    evidence = dict(check.evidence)
    evidence["threshold"] = (f"a 0-1 task score below {fmt(p['low_score'])} at the end over "
                             f"{int(p['patience'])}+ logged points, sampled or updated with a "
                             "setting far outside the recipe")
    summary = (f"the task's own score stayed low: {low['signal']} {fmt(low['start'])} -> "
               f"{fmt(low['end'])} (of 1) over {logged(run, REWARD):,} logged points, "
               f"{said}")
    return replace(check, status=Status.WARNING, summary=summary, onset_step=int(steps[0]),
                   first_alert_step=int(steps[int(p["patience"]) - 1]), evidence=evidence,
                   remedies=(fix, *_remedies(run)))


def low_task_note(checks: Iterable[Check], first: str | None = None) -> str | None:
    """For a run nothing fired on: the task's own 0-1 score still low at the end (below
    ``low_score``), as no_progress measured it, in one sentence. None otherwise. ``first``:
    a setting to change before anything else (a sampler far outside the recipe)."""
    checks = list(checks)
    if any(c.fired for c in checks):
        return None
    check = next((c for c in checks if c.mode == RULE.id), None)
    low = check.evidence.get("task_low") if check is not None else None
    if not isinstance(low, dict):
        return None
    said = (f"{LOW_TASK_NOTE}{low['signal']} "
            f"{fmt(low['start'])} -> {fmt(low['end'])} (of 1) over the run")
    improving = check.evidence.get("task_improving") if check is not None else None
    stalled = check.evidence.get("task_stalled") if check is not None else None
    check_key = ("check a few prompts' reference answers" + ("" if first else " first")
                 + " (a wrong answer key looks the same)")
    if isinstance(stalled, dict) and stalled.get("signal") == low["signal"]:
        # Rose, then no gain over the log's second half, low: a ceiling, not a slow climb
        # (trial 82: half the answer key off by one, correctness flat at 0.35 from step 100
        # where its controls reached 0.86, read "it is learning, slowly").
        said += (f"; it gained nothing since step {step_text(int(stalled['since']))}: "
                 f"{first + ' first, then ' if first else ''}{check_key}: answers that do not "
                 "match their prompts cap the score where the policy stops gaining; then a "
                 "task too hard for the policy (easier prompts, an SFT warm-up)")
    elif isinstance(improving, dict) and improving.get(low["signal"]) and (
            low["end"] >= 1.5 * low["start"]):
        # Learning, slowly: what speeds a task too hard for the policy (trial 51: (a*b)%10,
        # 0.105 -> 0.218, had the bare level with nothing to do about it).
        said += (f"; it is learning, slowly: {first + ' first, then ' if first else ''}"
                 f"{check_key}, then easier prompts (a curriculum) or an SFT warm-up on the "
                 "task would speed it, else more steps")
    elif first:
        said += f"; {first} first"
    return said


#: Logged rewards below which a short run's learning is not judged at all (a bug report's
#: few lines): too few even to say it did not improve.
MIN_UNPROVEN = 12


def learning_unproven(run: Run, checks: Iterable[Check]) -> Check | None:
    """The no_progress check of a run too short for it (fewer than ``min_points`` rewards)
    whose reward and task signals did not improve either, re-worded to say so and marked
    ``learning_unproven`` (with what it says of the reward): such a run is inconclusive,
    never healthy ("healthy" reads as "learning"). None when the check judged the run, or
    the short run did improve."""
    check = next((c for c in checks if c.mode == RULE.id), None)
    if check is None or check.status is not Status.SKIPPED or "at least" not in (
            check.reason or ""):
        return None
    steps, r = series(run, REWARD) if run.has(REWARD) else (np.array([]), np.array([]))
    if len(r) < MIN_UNPROVEN:
        return None
    since = float(steps[0])
    progress = reward_progress(run, since)
    if progress.improving or sparse_improving(run, REWARD):
        return None
    signals = _task_signals(run)
    if any(reward_progress(run, since, metric=col).improving or sparse_improving(run, col)
           for col in signals.values()):
        return None
    said = (f"over {logged(run, REWARD):,} logged rewards, {progress.stalled_words()}: too "
            "short to say whether the run learns")
    reason = f"{check.reason}; {said}"
    return replace(check, summary=reason, reason=reason,
                   evidence={**check.evidence, "learning_unproven": said})


def stalled_with_cause(run: Run, checks: Iterable[Check], causes: Iterable[str],
                       patience: float) -> Check | None:
    """The no_progress check of a run whose reward never left its level over ``patience`` or
    more logged points (``unsettled``: no call from the curves alone), made a warning when
    the run's config holds a setting far outside the recipe that is a known cause of not
    learning (``causes``: each said as a sentence, "learning_rate 1e-7 is 1000x below the
    recipe's start of 1e-4"): the setting is the evidence the curves lacked. None otherwise
    (an unsettled run with no such setting stays inconclusive)."""
    causes = list(causes)
    check = next((c for c in checks if c.mode == RULE.id), None)
    if not causes or check is None or check.fired or not check.evidence.get("unsettled"):
        return None
    steps, r = series(run, REWARD)
    if len(r) < patience:
        return None
    alert = int(steps[int(patience) - 1])
    evidence = {k: v for k, v in check.evidence.items() if k != "unsettled"}
    evidence["threshold"] = (f"a reward that never left its level over {int(patience)}+ logged "
                             "points, with a setting far outside the recipe that keeps a policy "
                             "from learning")
    summary = (f"not learning: {check.summary} (over {logged(run, REWARD):,} logged points); "
               f"and {'; '.join(causes)}")
    return replace(check, status=Status.WARNING, summary=summary,
                   onset_step=int(run.finite_series(REWARD)[0][0]), first_alert_step=alert,
                   evidence=evidence, remedies=_remedies(run))
