"""Entropy blow-up: entropy surging upward, the third phase of the LLD death spiral.

What it detects
    Entropy rising by more than ``rise`` (50%) over its post-warm-up level with a significant
    upward trend, or jumping to ``jump`` (2x) its trailing level and staying there.

Why it matters
    Rising entropy late in a run is the policy losing its grip: low-confidence outputs, garbled
    text. In the LLD spiral it comes right before the gradient explosion; with Clip-Higher it
    can creep up until quality degrades (practitioners: "fine while < 1, trouble when it
    climbs past"). Both directions of entropy are failure modes.

How it is detected
    The baseline is the minimum of a rolling median after the first 10% of the log (so an early
    rise during warm-up does not count); the late level is the median of the last 20%; the
    trend is Mann-Kendall with the Hamed-Rao correction on the part after the baseline. Onset
    is the knot of a two-piece linear fit. Critical with corroboration: grad norm rising,
    reward falling, or log-prob falling.

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

import numpy as np

from grpo_doctor.findings import Status
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import Outcome, Param, Rule, Skip, fmt, series, snap_to_logged
from grpo_doctor.rules.signals import late_points, reward_progress, rising
from grpo_doctor.store import Run
from grpo_doctor.trends import mann_kendall, rolling_median, trend_onset

ENTROPY = Metric.ENTROPY.value

PARAMS = (
    Param("rise", 0.5, "late entropy above its post-warm-up low by this share warns"),
    Param("alpha", 0.01, "significance of the upward trend"),
    Param("warmup_fraction", 0.1, "share of the log at its start that is not a baseline"),
)


def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, h = series(run, ENTROPY)
    if len(h) < 12:
        raise Skip("needs at least 12 logged entropy values")
    smooth = rolling_median(h, 5)
    warm = max(2, int(len(h) * p["warmup_fraction"]))
    low_i = warm + int(np.argmin(smooth[warm:]))
    low = float(smooth[low_i])
    late = float(np.median(h[-late_points(len(h)):]))
    evidence: dict[str, object] = {"entropy_low": round(low, 6), "entropy_now": round(late, 6),
                                   "low_step": int(steps[low_i])}
    if low <= 0 or len(h) - low_i < 6:
        return Outcome(Status.OK, f"entropy {fmt(low)} -> {fmt(late)}: no rise",
                       evidence=evidence, key_metric=ENTROPY)
    rise = late / low - 1
    trend = mann_kendall(steps[low_i:], h[low_i:])
    evidence["rise"] = round(rise, 3)
    if not (rise >= p["rise"] and trend.increasing(p["alpha"])):
        return Outcome(Status.OK, f"entropy {fmt(low)} -> {fmt(late)}: no blow-up",
                       evidence=evidence, key_metric=ENTROPY)
    onset = snap_to_logged(run, ENTROPY, trend_onset(steps[low_i:], h[low_i:], low, late))
    corroboration = []
    if rising(run, Metric.GRAD_NORM.value, 0.01):
        corroboration.append("grad norm rising")
    progress = reward_progress(run, float(onset))
    if progress.logged and progress.declining:
        corroboration.append("reward falling")
    lp_steps, lp = series(run, Metric.LOG_PROB_MEAN.value)
    same = run.mapping.get(Metric.LOG_PROB_MEAN.value) == run.mapping.get(ENTROPY)
    if len(lp) >= 8 and not same and mann_kendall(lp_steps, lp).decreasing(0.01):
        corroboration.append("log-prob falling")
    evidence["corroboration"] = corroboration
    if not corroboration and progress.logged and progress.improving and rise < 2 * p["rise"]:
        # Clip-Higher and entropy bonuses raise entropy on purpose; paid for by reward, a
        # moderate rise is exploration, not a blow-up.
        return Outcome(Status.OK, f"entropy rose {rise:.0%} ({fmt(low)} -> {fmt(late)}) while "
                       f"the reward improved: exploration, not a blow-up", evidence=evidence,
                       key_metric=ENTROPY)
    status = Status.CRITICAL if corroboration else Status.WARNING
    evidence["threshold"] = f"entropy up >= {p['rise']:.0%} from its low, rising"
    why = f", with {', '.join(corroboration)}" if corroboration else ""
    summary = (f"entropy blow-up: entropy rose {rise:.0%} from {fmt(low)} to {fmt(late)} from "
               f"step {fmt(onset)}{why}")
    remedies = (
        knobs.scale(run, knobs.LEARNING_RATE, 0.5),
        knobs.set_to(run, knobs.CLIP_HIGH, "0.2-0.24", why="less room for rare tokens")
        or "lower clip_ratio_high (e.g. 0.28 -> 0.24)",
        "lower or remove the entropy bonus; check train-inference mismatch and LLD",
    )
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=remedies,
                   key_metric=ENTROPY)


RULE = Rule(
    id="entropy_blowup",
    title="Entropy blow-up",
    detect=detect,
    params=PARAMS,
    doc=__doc__ or "",
    requires=(ENTROPY,),
)
