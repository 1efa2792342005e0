"""Reward over-fitting: the reward median rises, then falls.

What it detects
    The smoothed (rolling-median) reward reaching a peak well before the end of the log and
    then giving back more than ``giveback`` (half) of what it had gained, with a significant
    decline after the peak.

Why it matters
    The chapter's dashboard: a healthy reward median rises steadily; one that rises then falls
    means the policy over-fits the training prompts, forgets, or has started to collapse (the
    reward is the lagging indicator: something else went first).

How it is detected
    Rolling median over ~5% of the points (so spikes do not make peaks); the peak must be
    followed by at least ``min_after`` of the log; Mann-Kendall (Hamed-Rao corrected) must find
    a significant rise up to the peak and a significant decline after it. Onset = the peak
    (where it turned). Critical when more than ``giveback_critical`` of the gain is gone.

False positives
    Noisy plateaus: a few points below the peak are not a decline. Reward schedules that change
    the reward on purpose (curriculum stages) look like this too; read the onset against them.

Remedies
    Stop at (or roll back to) the peak checkpoint; lower the learning rate; more diverse prompts
    or a larger prompt pool; check what moved first (entropy, KL, log-prob) with the other checks.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from grpo_doctor.findings import Status
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import Outcome, Param, Rule, Skip, fmt, series, snap_to_logged
from grpo_doctor.store import Run
from grpo_doctor.trends import mann_kendall, rolling_median

REWARD = Metric.REWARD_MEAN.value

PARAMS = (
    Param("giveback", 0.5, "share of the reward gain lost after the peak that warns"),
    Param("giveback_critical", 0.8, "share lost that is critical"),
    Param("min_after", 0.2, "share of the log that must follow the peak"),
    Param("alpha", 0.01, "significance of the post-peak decline"),
)


def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, r = series(run, REWARD)
    if len(r) < 30:
        raise Skip("needs at least 30 logged rewards")
    w = max(5, len(r) // 20) | 1
    smooth = rolling_median(r, w)
    peak = int(np.argmax(smooth))
    start = float(np.median(smooth[: max(3, len(r) // 10)]))
    now = float(np.median(r[-max(3, len(r) // 10):]))
    gain = smooth[peak] - start
    lost = (smooth[peak] - now) / gain if gain > 0 else 0.0
    evidence: dict[str, object] = {"reward_start": round(start, 4),
                                   "reward_peak": round(float(smooth[peak]), 4),
                                   "reward_now": round(now, 4), "peak_step": int(steps[peak]),
                                   "share_of_gain_lost": round(lost, 3)}
    after = len(r) - 1 - peak
    declining = after >= 4 and mann_kendall(steps[peak:], r[peak:]).decreasing(p["alpha"])
    # The rise must be real too: a noisy flat reward has peaks and falls but no climb (a live
    # monitor would otherwise call every early wobble).
    rose = peak >= 4 and mann_kendall(steps[: peak + 1], r[: peak + 1]).increasing(p["alpha"])
    if not (after >= p["min_after"] * len(r) and lost >= p["giveback"] and declining and rose):
        return Outcome(Status.OK, f"reward {fmt(start)} -> {fmt(now)} (peak "
                       f"{fmt(float(smooth[peak]))})", evidence=evidence, key_metric=REWARD)
    onset = snap_to_logged(run, REWARD, steps[peak])
    status = Status.CRITICAL if lost >= p["giveback_critical"] else Status.WARNING
    evidence["threshold"] = f"gave back >= {p['giveback']:.0%} of the gain after the peak"
    summary = (f"reward over-fitting: reward rose {fmt(start)} -> {fmt(float(smooth[peak]))} "
               f"then fell to {fmt(now)} ({lost:.0%} of the gain lost) from step {fmt(onset)}")
    remedies = (
        f"roll back to the checkpoint nearest step {fmt(onset)} (the peak)",
        knobs.scale(run, knobs.LEARNING_RATE, 0.5),
        "more diverse prompts / a larger prompt pool; check which signal moved first",
    )
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=remedies,
                   key_metric=REWARD)


RULE = Rule(
    id="reward_overfit",
    title="Reward over-fitting (rises, then falls)",
    detect=detect,
    params=PARAMS,
    doc=__doc__ or "",
    requires=(REWARD,),
)
