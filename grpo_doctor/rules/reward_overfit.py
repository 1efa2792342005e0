"""Reward over-fitting: the reward median rises, then falls (slowly, or in a crash).

What it detects
    The smoothed (rolling-median) reward reaching a peak well before the end of the log and
    then giving back more than ``giveback`` (half) of what it had gained, with a significant
    decline after the peak. And every crash in the run's history: the reward losing
    ``crash_share`` of its range within ``crash_points`` logged points, whether or not it came
    back.

Why it matters
    The usual dashboard reading: a healthy reward median rises steadily; one that rises then falls
    means the policy over-fits the training prompts, forgets, or has started to collapse (the
    reward is the lagging indicator: something else went first).

How it is detected
    Rolling median over ~5% of the points (so spikes do not make peaks), the peak's level no
    higher than the median of twice that window around it (a cluster of lucky batches in a
    sparse reward is no level the run held); the peak must be followed by at least ``min_after``
    of the log; the rise up to the peak must be significant (Mann-Kendall, Hamed-Rao corrected)
    or many times the reward's step-to-step noise, and the fall after it significant or a drop
    that stays down. Onset = where it turned: the peak, or the end of the peak's level where a
    two-piece fit from the peak on finds a flat stretch before the fall. Critical when more than
    ``giveback_critical`` of the gain is gone.

False positives
    Noisy plateaus: a few points below the peak are not a decline. A reward that fell while the
    held-out score kept rising past its level at the peak is not over-fitting: the task is
    still being learned. Reward schedules that change
    the reward on purpose (curriculum stages) look like this too; read the onset against them.

Remedies
    Stop at (or roll back to) the peak checkpoint, or one from before the crash; lower the
    learning rate; check what moved first (entropy, KL, log-prob, grad norm) with the other
    checks; more diverse prompts or a larger prompt pool.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import incidents as inc
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import Outcome, Param, Rule, onset_text
from grpo_doctor.rules.points import series, snap_to_logged
from grpo_doctor.rules.signals import HELDOUT_GAIN, ScorerGaps, scorer_gaps, scorer_stopped
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, step_text
from grpo_doctor.trends import (
    mann_kendall,
    rolling_median,
    shift_stands_out,
    step_noise,
    trend_onset,
)

REWARD = Metric.REWARD_MEAN.value
HELDOUT = Metric.HELDOUT_SCORE.value

RULE = Rule(
    "reward_overfit", "Reward over-fitting (rises, then falls)",
    requires=(REWARD,), min_points=8, points="rewards",
    params=(
        Param("giveback", 0.5, "share of the reward gain lost after the peak that warns"),
        Param("giveback_critical", 0.8, "share lost that is critical"),
        Param("min_after", 0.2, "share of the log that must follow the peak"),
        Param("alpha", 0.01, "significance of the post-peak decline"),
        Param("crash_share", 0.6, "share of the reward's range lost that makes a crash"),
        Param("crash_points", 5, "logged points a crash happens within"),
    ),
)


@RULE.reads_short_logs
def short_log(run: Run, p: Mapping[str, float]) -> Outcome | None:
    """Too short for a rise and a fall, not for a crash."""
    crashes = _crashes(run, p)
    return _crashes_only(run, crashes) if crashes else None


#: The least fall a crash is, as a share of the reward's magnitude (its largest absolute
#: logged value): a reward pinned at its top by a near-greedy sampler has a range of a few
#: hundredths, and 1.5 -> 1.47 had read as a crash of 60% of it (trial 59).
CRASH_OF_MAGNITUDE = 0.1


def _crashes(run: Run, p: Mapping[str, float], brief: list | None = None) -> list:
    _, r = series(run, REWARD)
    magnitude = float(np.max(np.abs(r))) if len(r) else 0.0
    return inc.crashes(run, REWARD, "reward", share=p["crash_share"],
                       within=int(p["crash_points"]), min_drop=CRASH_OF_MAGNITUDE * magnitude,
                       brief=brief)


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, r = series(run, REWARD)
    brief: list = []
    crashes = _crashes(run, p, brief)
    stopped = _scorer_crash(run, crashes, steps)
    if stopped is not None:
        return stopped
    if len(r) < 30:
        return _crashes_only(run, crashes, brief=brief)
    w = max(5, len(r) // 20) | 1
    smooth = rolling_median(r, w)
    peak = int(np.argmax(smooth))
    # A level the reward held, not a cluster of lucky batches: the highest point of a short
    # rolling median over a sparse reward (0.12 on most steps, 1-2 on a few) is three spikes
    # in a row. The peak's level is also the median of twice the window around it.
    smooth = smooth.copy()
    smooth[peak] = min(smooth[peak], float(np.median(r[max(0, peak - w):peak + w + 1])))
    # The start is the first few points: a fast rise would otherwise be part of the "start".
    start = float(np.median(r[: max(3, len(r) // 20)]))
    late = max(3, len(r) // 10)
    now = float(np.median(r[-late:]))
    gain = smooth[peak] - start
    lost = (smooth[peak] - now) / gain if gain > 0 else 0.0
    evidence: dict[str, object] = {"reward_start": round(start, 4),
                                   "reward_peak": round(float(smooth[peak]), 4),
                                   "reward_now": round(now, 4), "peak_step": int(steps[peak]),
                                   "share_of_gain_lost": round(lost, 3)}
    after = len(r) - 1 - peak
    # The fall: a significant downward trend, or a drop that stays down (a step down to a
    # low plateau has no monotone trend to test).
    stays_down = after > w and float(np.median(r[peak + w:])) <= smooth[peak] - p["giveback"] * gain
    declining = after >= 4 and (
        mann_kendall(steps[peak:], r[peak:]).decreasing(p["alpha"]) or stays_down)
    # The rise must be real too: a noisy flat reward has peaks and falls but no climb (a live
    # monitor would otherwise call every early wobble): a significant upward trend, or a
    # climb of many times the reward's step-to-step noise.
    noise = step_noise(r)
    rose = peak >= 4 and (
        mann_kendall(steps[: peak + 1], r[: peak + 1]).increasing(p["alpha"])
        or (gain > 0 and gain >= 6 * noise)
        or (gain > 0 and _held_out_rose_to(run, float(steps[peak]))))
    # The fall must stand out of the noise of the two medians it compares: 0.75 -> 0.72 on a
    # reward swinging +-0.05 per step is no fall (a live callback warned on it, trial 44).
    fell = smooth[peak] > now and shift_stands_out(smooth[peak] - now, noise, late)
    if not (after >= p["min_after"] * len(r) and lost >= p["giveback"] and declining and rose
            and fell):
        if not rose:  # no real gain: a share of it lost means nothing
            evidence.pop("share_of_gain_lost")
        if crashes:
            return _crashes_only(run, crashes, evidence)
        text = f"reward {fmt(start)} -> {fmt(now)}"
        if smooth[peak] > max(start, now) + 0.1 * (abs(smooth[peak]) or 1.0):
            text += f" (peak {fmt(float(smooth[peak]))} at step {step_text(int(steps[peak]))})"
        return Outcome(Status.OK, text, evidence=evidence, key_metric=REWARD)
    held = _held_out_rose_after(run, int(steps[peak]))
    if held is not None:
        # The task kept improving after the reward's peak: what fell is the training reward's
        # noise or a harder stretch of prompts, not a policy over-fitting (a slow learner at
        # lr 1e-5 was rolled back to a step 0.05 worse on the held-out score).
        evidence["held_out_after_peak"] = [round(held[0], 4), round(held[1], 4)]
        text = (f"reward {fmt(start)} -> {fmt(float(smooth[peak]))} (step "
                f"{step_text(int(steps[peak]))}) -> {fmt(now)}, but the held-out score kept "
                f"rising after it ({fmt(held[0])} -> {fmt(held[1])}): not over-fitting")
        if crashes:
            return _crashes_only(run, crashes, evidence)
        return Outcome(Status.OK, text, evidence=evidence, key_metric=REWARD)
    final = crashes[-1] if crashes and crashes[-1].recovered_step is None else None
    if final is not None:
        # The reward held near its peak until a crash it never came back from: the fall is
        # the crash, not a slow over-fitting from the peak (a later plateau a hair below an
        # early peak would otherwise date it at the peak, 100 steps before anything fell).
        i = max(0, int(np.searchsorted(steps, final.step)) - 1)
        if smooth[peak] - smooth[i] < p["giveback"] * gain:
            return _crashes_only(run, crashes, evidence)
    # Where it turned: where the fall from the peak's level began (a two-piece fit from the
    # peak on). On a long plateau the highest point is anywhere on it: the argmax had dated
    # a fall at step 1,500 to step 864.
    knot = trend_onset(steps[peak:], r[peak:], float(smooth[peak]), now, bend=0.5)
    turned = max(peak, int(np.searchsorted(steps, knot, side="right")) - 1)
    onset = snap_to_logged(run, REWARD, steps[turned])
    status = Status.CRITICAL if lost >= p["giveback_critical"] else Status.WARNING
    evidence["threshold"] = f"gave back >= {p['giveback']:.0%} of the gain after the peak"
    share = "all of the gain and more" if lost > 1 else f"{lost:.0%} of the gain"
    earliest = min(onset, crashes[0].step) if crashes else onset  # an earlier crash is the onset
    summary = (f"reward over-fitting: reward rose {fmt(start)} -> {fmt(float(smooth[peak]))} "
               f"then fell to {fmt(now)} ({share} lost) from step {onset_text(onset, earliest)}")
    if crashes:
        status = inc.merge_status(status, inc.worst(crashes))
        onset = earliest
        summary += f"; {inc.describe(crashes, 1)}"
    return Outcome(status, summary, onset_step=onset, evidence=evidence,
                   remedies=_remedies(run, int(steps[turned]), plateau=turned > peak),
                   key_metric=REWARD,
                   incidents=tuple(crashes))


def _held_out_rose_to(run: Run, peak_step: float) -> bool:
    """The held-out score (0-1, 3+ evaluations before the reward's peak) rose by
    ``HELDOUT_GAIN`` or more up to it: the reward's climb, noisy as its batches are, was
    learning (a climb 0.64 -> 0.96 swinging +-0.15 per batch, the held-out 0.40 -> 0.56,
    read "no real gain" and its fall to 0.2 went unsaid)."""
    hs, h = series(run, HELDOUT)
    before = h[hs <= peak_step]
    if len(before) < 3 or h.min() < 0 or h.max() > 1:
        return False
    k = min(3, len(before) // 2)  # its first and last evaluations, apart
    return float(np.mean(before[-k:])) - float(np.mean(before[:k])) >= HELDOUT_GAIN


def _held_out_rose_after(run: Run, peak_step: int) -> tuple[float, float] | None:
    """(held-out at the reward's peak, held-out late) when the held-out score, logged 3+
    times each side of the peak, ended above its level at the peak by a twentieth of its
    range (0.01 at least); None otherwise (not logged, or it fell or held)."""
    hs, h = series(run, HELDOUT)
    before, after = h[hs <= peak_step], h[hs > peak_step]
    if len(before) < 3 or len(after) < 3:
        return None
    at_peak = float(np.mean(before[-3:]))
    late = float(np.mean(after[-max(3, len(after) // 3):]))
    if late - at_peak < max(0.05 * float(np.ptp(h)), 0.01):
        return None
    return at_peak, late


def _scorer_crash(run: Run, crashes: list, steps: np.ndarray) -> Outcome | None:
    """The crash a reward term's scorer brought, when one stopped scoring there
    (``scorer_stopped``): what to fix is the scorer, and the checkpoints from before it are
    good. None otherwise."""
    stop = scorer_stopped(run)
    if stop is None:
        return None
    at = int(np.searchsorted(steps, stop.step))
    crash = next((c for c in crashes if abs(int(np.searchsorted(steps, c.step)) - at) <= 3),
                 None)
    if crash is None:
        return None
    summary = f"reward crash: {inc.describe([crash])}: {stop.words()}"
    evidence: dict[str, object] = {
        "threshold": f"reward below {fmt(crash.threshold)} within a few logged points",
        "scorer_stopped": stop.evidence()}
    # Dated at the drop, the first step the scorer scored so (a crash's own dating reaches
    # back to where the smoothed reward left its level: "at step 98" beside "at step 101").
    if stop.data_order:
        # Harder prompts served in order: nothing broke, the reward reads another task.
        # (Every crash kept: the earlier slices' falls are the same story, evenly spaced.)
        return Outcome(Status.WARNING, summary, onset_step=stop.step, evidence=evidence,
                       remedies=(stop.fix(),), key_metric=REWARD, incidents=tuple(crashes))
    return Outcome(
        inc.worst([crash]), summary, onset_step=stop.step, evidence=evidence,
        remedies=(stop.fix(),
                  knobs.rollback(stop.step, f"resume from the checkpoint before step "
                                 f"{step_text(stop.step)} once the scorer works: the policy "
                                 "was not what broke")),
        key_metric=REWARD, incidents=(crash,))


def _gaps_fix(gaps: ScorerGaps) -> str:
    """The first thing to do about a scorer that failed on some of its calls."""
    return (f"check {gaps.term}'s scorer: it scored every completion {fmt(gaps.value)} on "
            f"{len(gaps.steps)} of {gaps.logged:,} logged steps (timeouts, a reward server "
            "that drops calls, an exception caught and scored as a failure); those steps "
            "trained on a reward that said nothing, so retry or skip failed calls rather than "
            "score them")


def _crashes_only(run: Run, crashes: list, evidence: dict[str, object] | None = None,
                  brief: list | None = None) -> Outcome:
    evidence = dict(evidence or {})
    if not crashes:
        # A deep dip that was back within a few points is a bad batch, not a crash; it is
        # said, so "no crash" never reads as "the reward never fell".
        dips = f"; {inc.describe(brief, 1)}" if brief else ""
        return Outcome(Status.OK, f"no lasting reward crash{dips} (a rise then fall needs 30 "
                       "logged rewards to judge)", evidence=evidence, key_metric=REWARD)
    first = crashes[0]
    evidence["threshold"] = f"reward below {fmt(first.threshold)} within a few logged points"
    # The crash's own numbers, not the rise-then-fall's ("reward peak 0.887, peak step 5"
    # under "crashed from 0.8 between steps 125 and 150" read as a contradiction).
    evidence.pop("reward_peak", None)
    evidence.pop("peak_step", None)
    last = crashes[-1]
    evidence.update(crash_step=last.step, lowest=round(last.peak, 6),
                    lowest_step=last.peak_step)
    summary = f"reward crash: {inc.describe(crashes)}"
    remedies = _remedies(run, first.step, crash=True)
    gaps = scorer_gaps(run)
    if gaps is not None and any(abs(s - c.step) <= 3 for c in crashes for s in gaps.steps):
        # The crash is a call the scorer failed: what to fix is the scorer (trial 54).
        summary += f": {gaps.words()}"
        evidence["scorer_gaps"] = {"term": gaps.term, "value": gaps.value,
                                   "steps": len(gaps.steps), "logged": gaps.logged,
                                   "said": gaps.words(), "fix": _gaps_fix(gaps)}
        return Outcome(inc.worst(crashes), summary, onset_step=first.step, evidence=evidence,
                       remedies=(_gaps_fix(gaps),),
                       key_metric=REWARD, incidents=tuple(crashes))
    if all(c.recovered_step is not None for c in crashes):
        # The reward came back by itself: no policy to roll back from. What dropped it for a
        # few steps is what to look at (trial 54: a grader down on 30% of its calls read
        # "roll back to the checkpoint from before the crash (step 119)", a step no
        # checkpoint was saved at, from a crash back above its line 9 steps later).
        at = ", ".join(step_text(c.step) for c in crashes[:3]) + (
            ", ..." if len(crashes) > 3 else "")
        remedies = (f"look at the batches of the crash{'es' if len(crashes) > 1 else ''} "
                    f"(step {at}): the reward came back by itself, so a grader or data glitch "
                    "there (a reward term at 0 on those steps, a malformed batch) is likelier "
                    "than the policy; no roll-back needed", *remedies[1:])
    return Outcome(inc.worst(crashes), summary, onset_step=first.step, evidence=evidence,
                   remedies=remedies, key_metric=REWARD, incidents=tuple(crashes))


def _remedies(run: Run, step: int, crash: bool = False, plateau: bool = False
              ) -> tuple[str, ...]:
    # "a checkpoint from before step N": N is where the fall began, not a step a checkpoint
    # was saved at (the root cause names the saved one).
    where = (f"a checkpoint from before the crash at step {step_text(step)}" if crash else
             f"a checkpoint from the end of the peak's level, step {step_text(step)} or before"
             if plateau else f"the checkpoint nearest the peak at step {step_text(step)}")
    return (
        knobs.rollback(step, f"roll back to {where}"),
        knobs.scale(run, knobs.LEARNING_RATE, 0.5),
        "check which signal moved first (entropy, KL, log-prob, grad norm): the reward lags",
        "more diverse prompts / a larger prompt pool",
    )
