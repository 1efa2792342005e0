"""Entropy blow-up: entropy surging upward, the third phase of the LLD death spiral.

What it detects
    Entropy climbing, and staying up for at least a few logged points, to more than ``rise``
    (50%) above its baseline with a significant upward trend.

Why it matters
    Rising entropy late in a run is the policy losing its grip: low-confidence outputs, garbled
    text. In the LLD spiral it comes right before the gradient explosion; with Clip-Higher it
    can creep up until quality degrades (practitioners: "fine while < 1, trouble when it
    climbs past"). Both directions of entropy are failure modes.

How it is detected
    The baseline is the entropy at the start, or the lower level it settled to after warm-up
    (the first 10% of the log) before it climbed; the peak is the highest rolling median (5
    points, so no single point makes it). The climb from baseline to peak must be significant
    (Mann-Kendall with the Hamed-Rao correction), or the entropy must stay above the threshold
    for at least 5 logged points (an abrupt jump), or be climbing where the log ends (each of
    its last two points ``min_rise`` above the one before, above the line and every level it
    held before), and be at least ``min_rise`` nats. A blow-up that later collapses still
    counts. Onset is the knot of a two-piece linear fit of the climb.
    Critical with corroboration: grad norm rising, reward falling, or log-prob falling.

False positives
    Entropy bonuses, Clip-Higher and temperature schedules raise entropy on purpose: a rise of
    less than twice ``rise`` that the reward pays for, with no other sign, is reported as
    exploration (ok).

Remedies
    Lower the learning rate; lower clip_ratio_high / the entropy coefficient; check
    train-inference mismatch and LLD (likelihood regularisation).
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import ONSET, Outcome, Param, Rule, Skip
from grpo_doctor.rules.plot import Threshold, ladder, number
from grpo_doctor.rules.points import late_points, series, snap_to_logged
from grpo_doctor.rules.signals import reward_progress, rising
from grpo_doctor.store import Run
from grpo_doctor.text import change, fmt
from grpo_doctor.trends import mann_kendall, rolling_median, trend_onset

ENTROPY = Metric.ENTROPY.value

RULE = Rule(
    "entropy_blowup", "Entropy blow-up",
    requires=(ENTROPY,), min_points=12, points="entropy values",
    params=(
        Param("rise", 0.5, "sustained entropy above its baseline by this share warns"),
        Param("min_rise", 0.2, "and by at least this many nats (a rise from ~0 is noise)"),
        Param("alpha", 0.01, "significance of the upward trend up to the peak"),
        Param("warmup_fraction", 0.1, "share of the log at its start that is not a baseline"),
    ),
)


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    if _no_update(run):
        # Every group alike and a gradient of exactly 0 on every logged step: no update
        # moved the policy, so its entropy moved with what it sampled (trial 75: "entropy
        # x8.1 ... learning_rate x0.5" on a run whose gradient was 0 on all 200 steps).
        raise Skip("no update moved the policy (grad norm 0 and every group alike on every "
                   "logged step): its entropy moved with what it sampled")
    steps, h = series(run, ENTROPY)
    smooth = rolling_median(h, 5)
    head = float(np.median(h[: max(3, len(h) // 20)]))
    peak_i = int(np.argmax(smooth))
    peak = float(smooth[peak_i])
    # Baseline: the start, or a lower level the entropy had settled to (after warm-up) before
    # it climbed to its peak; a transient blow-up that later collapses still counts.
    warm = max(2, int(len(h) * p["warmup_fraction"]))
    low_i = warm + int(np.argmin(smooth[warm:peak_i])) if peak_i > warm else 0
    base_i, base = (low_i, float(smooth[low_i])) if peak_i > warm and smooth[low_i] < head \
        else (0, head)
    late_n = late_points(len(h))
    late = float(np.median(h[-late_n:]))  # "now": the late median, not the last value
    evidence: dict[str, object] = {"entropy_baseline": round(base, 6),
                                   "entropy_peak_sustained": round(peak, 6),
                                   "entropy_now": round(late, 6),
                                   "now_means": f"median entropy over the last {late_n} logged "
                                                 "points",
                                   "peak_step": int(steps[peak_i])}
    rise = peak / base - 1 if base > 0 else 0.0
    evidence["rise"] = round(rise, 3)
    climb = mann_kendall(steps[base_i:peak_i + 1], h[base_i:peak_i + 1]) \
        if peak_i - base_i >= 4 else None
    # Either a significant climb, or a jump that stays up: an abrupt blow-up has too few points
    # on its way up for a trend test, but many at the top.
    high = smooth[base_i:] >= base * (1 + p["rise"])
    held = int(high.sum()) >= max(5, round(0.05 * len(h))) or _climbing_at_end(
        h, max(base * (1 + p["rise"]), base + p["min_rise"]), p["min_rise"])
    if not (rise >= p["rise"] and peak - base >= p["min_rise"]
            and ((climb is not None and climb.increasing(p["alpha"])) or held)):
        return Outcome(Status.OK, f"entropy {fmt(base)} -> peak {fmt(peak)}, now {fmt(late)}: "
                       f"no blow-up", evidence=evidence, key_metric=ENTROPY)
    line = max(base * (1 + p["rise"]), base + p["min_rise"])
    start_i = _final_climb(h, smooth, base_i, peak_i, line)
    # A blow-up that grows by factors (x93 from 0.054) is dated late by a fit in nats (where
    # the curve turned visibly steep); one that ramps linearly, late by a fit in log space.
    # Each fit over-dates the shape it does not fit: the earlier knot is the start.
    if peak_i - start_i >= 3:
        xs, ys = steps[start_i:peak_i + 1], h[start_i:peak_i + 1]
        cut = max(base, 1e-6) * 0.1
        knot = min(trend_onset(xs, ys, base, peak),
                   trend_onset(xs, np.log(np.maximum(ys, cut)), np.log(max(base, cut)),
                               np.log(max(peak, cut))))
    else:
        knot = float(steps[min(start_i + 1, peak_i)])
    onset = snap_to_logged(run, ENTROPY, knot)
    at = int(np.searchsorted(steps, onset))
    if at + 1 < len(h) and h[at] <= line and h[at + 1] >= base + 0.5 * (peak - base):
        # A jump, half the move in one logged step: a hinge puts its knot on the last point
        # before it (trial 67: dated 100 for a jump at 101, the resume's first step).
        onset = int(steps[at + 1])
    corroboration = []
    if rising(run, Metric.GRAD_NORM.value, 0.01):
        corroboration.append("grad norm rising")
    progress = reward_progress(run, float(steps[base_i]))
    if progress.logged and progress.declining:
        corroboration.append("reward falling")
    elif progress.logged and (low := _reward_at_new_low(run, float(steps[base_i]))):
        corroboration.append(low)
    elif progress.logged and (fell := _reward_fell_at(run, _crossing(steps, h, base_i, line))):
        corroboration.append(fell)
    lp_steps, lp = series(run, Metric.LOG_PROB_MEAN.value)
    same = run.mapping.get(Metric.LOG_PROB_MEAN.value) == run.mapping.get(ENTROPY)
    if len(lp) >= 8 and not same and mann_kendall(lp_steps, lp).decreasing(0.01):
        corroboration.append("log-prob falling")
    evidence["corroboration"] = corroboration
    if not corroboration and progress.logged and progress.improving and rise < 2 * p["rise"]:
        # Clip-Higher and entropy bonuses raise entropy on purpose; paid for by reward, a
        # moderate rise is exploration, not a blow-up.
        return Outcome(Status.OK, f"entropy {change(base, peak)} ({fmt(base)} -> {fmt(peak)}) "
                       "while the reward improved: exploration, not a blow-up", evidence=evidence,
                       key_metric=ENTROPY)
    status = Status.CRITICAL if corroboration else Status.WARNING
    evidence["threshold"] = (f"sustained entropy >= {1 + p['rise']:g} x its baseline and "
                             f"+{p['min_rise']:g} nats, significant climb")
    why = f", with {', '.join(corroboration)}" if corroboration else ""
    # "Since down" only when the last point is down too: a median over the last points lags
    # a climb still going on at the end of the log.
    after = (f"; entropy since down to a median {fmt(late)} nats over the last {late_n} logged "
             "points" if late < 0.8 * peak and h[-1] < 0.8 * peak else "")
    summary = (f"entropy blow-up: entropy {change(base, peak)}, from {fmt(base)} to {fmt(peak)}, "
               f"from step {ONSET}{why}{after}")
    # Only moves that lower what drives entropy up: an upper clip already at 0.24 or below is
    # not "set to 0.2-0.24", and a run known to have no entropy bonus has none to lower.
    clip = knobs.set_to(run, knobs.CLIP_HIGH, "0.2-0.24", why="less room for rare tokens",
                        unless_at_most=0.24)
    bonus, _ = knobs.current(run, knobs.ENTROPY_COEF)
    remedies = (
        knobs.scale(run, knobs.LEARNING_RATE, 0.5),
        *([clip] if clip is not None else []),
        ("lower or remove the entropy bonus; check " if bonus is None or bonus > 0 else
         "check ") + "train-inference mismatch and likelihood displacement (LLD)",
    )
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=remedies,
                   key_metric=ENTROPY)


def _reward_fell_at(run: Run, since: int) -> str | None:
    """The reward crashing as the entropy crossed the blow-up line (at ``since``) and staying
    down: from the start of the log the fall is lost in the medians (0.78 at step 1, 0 from
    step 14 to 200 read "0 -> 0" beside entropy x7 from an entropy bonus of 0.5, trial 60)."""
    at = reward_progress(run, float(since))
    if not at.logged or at.before is None or at.start is None or at.end is None or not at.span:
        return None
    if at.before - max(at.start, at.end) < 0.25 * at.span:
        return None
    return f"reward falling {fmt(at.before)} -> {fmt(at.end)} as it began"


def _crossing(steps: np.ndarray, h: np.ndarray, base_i: int, line: float) -> int:
    """The step where the entropy first crossed the blow-up line after its baseline."""
    above = np.flatnonzero(h[base_i:] >= line)
    return int(steps[base_i + int(above[0])]) if len(above) else int(steps[base_i])


def _reward_at_new_low(run: Run, since: float) -> str | None:
    """The last logged reward below every reward logged since ``since`` and under half their
    median: a crash the trend over the whole stretch is too slow to call yet (0.975 -> 0.025
    in its last two points)."""
    steps, r = series(run, Metric.REWARD_MEAN.value)
    before = r[(steps >= since)][:-1]
    if len(before) < 5:
        return None
    last, level = float(r[-1]), float(np.median(before))
    if last < float(before.min()) and last < 0.5 * level:
        return (f"reward down to {fmt(last)} (its lowest since step {fmt(int(since))}, "
                f"median {fmt(level)})")
    return None


def _climbing_at_end(h: np.ndarray, line: float, step: float) -> bool:
    """A blow-up still climbing where the log ends: each of its last two points ``step``
    (``min_rise``) nats or more above the one before, both above the blow-up line and above
    every level (5-point rolling median) the run held before them. A monitor cannot wait for
    five points at the top of a climb that takes the run from 0.5 to 6 nats in four."""
    if len(h) < 8:
        return False
    before = rolling_median(h[:-2], 5)
    return bool(h[-3] + step <= h[-2] and h[-2] + step <= h[-1] and h[-2] >= line
                and h[-2] > float(np.max(before)))


def _final_climb(h: np.ndarray, smooth: np.ndarray, base_i: int, peak_i: int, line: float
                 ) -> int:
    """Where the climb to the peak starts: the last point below the blow-up line before the
    peak, walked back down the slope that leads to it. An earlier bump that receded below
    the line is not the blow-up's start (the climb the user must roll back before is)."""
    below = np.flatnonzero(h[base_i:peak_i] < line)
    if not len(below):
        return base_i
    k = base_i + int(below[-1])
    while k > base_i and smooth[k - 1] < smooth[k]:
        k -= 1
    return k


@RULE.draws
def lines(p: Mapping[str, float], evidence: Mapping[str, object]
          ) -> dict[str, tuple[Threshold, ...]]:
    """The blow-up line: the baseline raised by ``rise`` and by ``min_rise`` nats (the
    baseline is the check's evidence: none when it did not run)."""
    base = number(evidence, "entropy_baseline")
    if base is None:
        return {}
    line = max(base * (1 + p["rise"]), base + p["min_rise"])
    return {ENTROPY: ladder([(line, f"blow-up ({fmt(line)}: baseline {fmt(base)} x"
                              f"{1 + p['rise']:g} and +{fmt(p['min_rise'])})", "warning")],
                            True)}


def _no_update(run: Run) -> bool:
    """A gradient norm of exactly 0 and every group's rewards equal on every logged step (10
    at least): the loss had nothing to follow."""
    _, g = series(run, Metric.GRAD_NORM.value)
    _, z = series(run, Metric.ZERO_STD_FRACTION.value)
    _, kl = series(run, Metric.KL.value)
    bonus, _ = knobs.current(run, knobs.ENTROPY_COEF)
    # (A KL to the reference that moved, or an entropy bonus, moved the policy whatever the
    # logged norm: DeepSpeed logs 0 beside real updates; h105.)
    return len(g) >= 10 and len(z) >= 10 and not np.any(g != 0) and bool(np.all(z >= 1.0)) \
        and not (len(kl) and float(np.max(np.abs(kl))) > 0) and not (bonus and bonus > 0)
