"""Lazy likelihood displacement (LLD): the death spiral that reward does not show.

What it detects
    The token-level mean log-probability of sampled tokens (best: of positive-advantage or
    correct responses) falling steadily: by more than ``decline_fraction`` (30%) of its
    magnitude within ``window_steps`` (500) with a significant monotone trend (arXiv
    2512.04220; the LLD-risk alarm). And every crash in its history: the mean log-prob
    falling by ``crash_nats`` or more (and half its range) within ``crash_points`` logged
    points, the mark of a catastrophic update, whether or not it came back.

Why it matters
    Likelihood leads, reward lags. In tool-integrated GRPO the likelihood of even correct
    responses is displaced downward while the reward still rises; at a tipping point entropy
    surges, gradients explode and the run collapses within a few steps. This is the one
    warning that comes early enough to act on.

How it is detected
    Largest relative fall within the window on a rolling median; a Mann-Kendall trend test with
    the Hamed-Rao correction, over the log or over its last two late windows (a decline late in
    a long flat log is diluted in the whole); onset from a two-piece linear fit (where the
    decline began). Phase-3 signs (grad norm or entropy rising) make it critical. When only a
    proxy is logged (minus NeMo-RL's approx_entropy, minus verl's training_log_ppl) the finding
    says so. A crash is judged on a 3-point rolling median: critical when the log-prob never
    came back, a warning when it did.

False positives
    A slight, slow decline of log pi is normal as the policy sharpens on some tokens and
    spreads on others; 30% within 500 steps is not. With almost every group zero-variance the
    signal means little (no gradient): check advantage collapse first.

Remedies
    Halve the learning rate (x0.3 once the spiral shows); double the KL coefficient; likelihood
    regularisation (LLDS, a -lambda*E[log pi] term on preserved tokens, lambda ~0.001-0.2);
    selective updates that skip tokens whose likelihood moved too far (NTHR).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import incidents as inc
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import Outcome, Param, Rule, onset_text
from grpo_doctor.rules.plot import Plot, Threshold, number
from grpo_doctor.rules.points import head_tail, late_points, series, snap_to_logged
from grpo_doctor.rules.signals import reward_progress, rising
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, step_text
from grpo_doctor.trends import (
    largest_relative_drop,
    mann_kendall,
    rolling_median,
    step_noise,
    trend_onset,
)

LOGP = Metric.LOG_PROB_MEAN.value
GRAD = Metric.GRAD_NORM.value

RULE = Rule(
    "likelihood_displacement", "Lazy likelihood displacement (LLD)",
    requires=(LOGP,), min_points=8, points="log-prob values", plot=Plot(metrics=(LOGP, GRAD)),
    params=(
        Param("decline_fraction", 0.3, "share of log pi's magnitude lost within window_steps"),
        Param("window_steps", 500, "span of steps the decline is measured over"),
        Param("alpha", 0.01, "significance of the monotone decline (Mann-Kendall, Hamed-Rao)"),
        Param("crash_nats", 1.0, "a fall of the mean log-prob this large (nats) within "
              "crash_points is a crash"),
        Param("crash_points", 5, "logged points a crash happens within"),
    ),
)


@RULE.draws
def lines(p: Mapping[str, float], evidence: Mapping[str, object]
          ) -> dict[str, tuple[Threshold, ...]]:
    """The starting level, and the warning line ``decline_fraction`` of |log pi| below it."""
    start = number(evidence, "log_prob_start")
    if start is None:
        return {}
    line = start - p["decline_fraction"] * abs(start)
    return {LOGP: (Threshold(start, f"start {fmt(start)}", "info"),
                   Threshold(line, f"|log π| +{p['decline_fraction']:.0%} ({fmt(line)})",
                             "warning", (-math.inf, line)))}


@RULE.reads_short_logs
def short_log(run: Run, p: Mapping[str, float]) -> Outcome | None:
    """Too short for a trend, not for a crash of a whole nat."""
    crashes = _crashes(run, p)
    return _crash_outcome(run, crashes, {}, p) if crashes else None


def _crashes(run: Run, p: Mapping[str, float]) -> list:
    # A fall of a whole nat is no noise: no steady level before it is asked for.
    return inc.crashes(run, LOGP, "mean log-prob", share=0.5, within=int(p["crash_points"]),
                       min_drop=p["crash_nats"], held=False)


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, lp = series(run, LOGP)
    crashes = _crashes(run, p)
    l0, lc = head_tail(lp)
    trend = mann_kendall(steps, lp)
    drop = largest_relative_drop(steps, lp, p["window_steps"])
    frac = drop.fraction if drop else 0.0
    evidence: dict[str, object] = {
        "log_prob_start": round(l0, 6), "log_prob_now": round(lc, 6),
        "largest_decline_in_window": round(frac, 4), "window_steps": p["window_steps"],
        "trend_p": float(f"{trend.p:.3g}"), "trend_tau": round(trend.tau, 3),
    }
    # A decline late in a long flat log is diluted in a whole-log trend test: it is also
    # tested over the last two late windows, as KL's rise is, when the fall is no wobble of a
    # near-deterministic policy (-0.02 -> -0.05 nats is "|log pi| up 166%"): twice the step
    # noise (its step-to-step swing was 0.03 there).
    # A fall that ended just before those windows is tested from where it began (the largest
    # drop's start) to the end. Either way the fall must be one on the run's own scale, its
    # level down a tenth of its starting magnitude or more (levels, not the drop's two points:
    # -0.0029 -> -0.075 at one noisy log, on a policy sharpened from -0.56 to -0.025, is
    # "|log pi| up 2521%" and nothing).
    recent = min(len(lp), 2 * late_points(len(lp), 0.2, 3))
    since_drop = int(np.searchsorted(steps, drop.start_step)) if drop is not None else 0
    level_fell = float(np.median(lp[since_drop:since_drop + 5])) - lc if len(lp) else 0.0
    real_drop = (drop is not None and drop.start_value - drop.end_value >= 2 * step_noise(lp)
                 and level_fell >= 0.1 * abs(l0))
    falling = trend.decreasing(p["alpha"]) or (real_drop and any(
        8 <= len(lp) - i < len(lp) and mann_kendall(steps[i:], lp[i:]).decreasing(p["alpha"])
        for i in (len(lp) - recent, since_drop)))
    if not (falling and frac >= p["decline_fraction"]):
        if not crashes:
            return Outcome(Status.OK, f"mean log-prob {fmt(l0)} -> {fmt(lc)}: no sustained "
                           f"decline", evidence=evidence, key_metric=LOGP)
        return _crash_outcome(run, crashes, evidence, p)
    # A log-prob that first rose (the policy sharpening as it learned) fell from its top, not
    # from where it started: the decline is dated, and said, from the level it fell from.
    since, top = 0, l0
    if drop is not None and drop.start_value > l0 and drop.start_step > steps[0]:
        since = int(np.searchsorted(steps, drop.start_step))
        top = float(np.median(lp[since:since + 3]))
    knot = trend_onset(steps[since:], lp[since:], top, lc) if len(lp) - since >= 2 else float(
        steps[since])
    if since:
        # From a top, the fall is under way once a tenth of it is done (a hinge fit puts its
        # knot where a slow fall speeds up).
        smooth = rolling_median(lp[since:], 5)
        begun = np.nonzero(smooth <= top - 0.1 * (top - lc))[0]
        if len(begun):
            knot = min(knot, float(steps[since + int(begun[0])]))
    onset = snap_to_logged(run, LOGP, knot)

    phase3 = []
    if rising(run, Metric.GRAD_NORM.value, 0.01):
        phase3.append("grad norm rising")
    same_source = run.mapping.get(Metric.ENTROPY.value) == run.mapping.get(LOGP)
    if not same_source and rising(run, Metric.ENTROPY.value, 0.01):
        phase3.append("entropy rising")
    progress = reward_progress(run, float(onset))
    if progress.logged and progress.declining:
        phase3.append("reward now falling")
    evidence["phase3_signs"] = phase3
    evidence["threshold"] = (f"decline > {p['decline_fraction']:.0%} of |log pi| within "
                             f"{fmt(p['window_steps'])} steps")
    status = Status.CRITICAL if phase3 else Status.WARNING
    reward_note = ""
    _, r = series(run, Metric.REWARD_MEAN.value)
    if progress.logged and progress.improving and not (
            len(r) >= 6 and float(r[:3].max()) > float(np.median(r[-3:])) + 3 * step_noise(r)):
        # Rising, and above where the log began: not a climb back from a crash just before
        # the onset (0.76 -> 0.05 at step 2, 0.2 by the end, read "reward still rising").
        reward_note = "; reward still rising, so the reward curve hides it"
    why = f", with {', '.join(phase3)}" if phase3 else ""
    earliest = min(onset, crashes[0].step) if crashes else onset  # an earlier crash is the onset
    top_at = f" (its top, at step {step_text(int(steps[since]))})" if since else ""
    # The share is the largest fall within the window, between its own two levels: said with
    # them where they are not the ends just quoted (-1.14 -> -1.38 beside "up 216%", which was
    # -0.44 -> -1.4 over steps 1-3).
    span = (f"{fmt(drop.start_value)} -> {fmt(drop.end_value)}, " if drop is not None and (
        abs(drop.start_value - top) > 0.05 * abs(top) or abs(drop.end_value - lc)
        > 0.05 * abs(lc)) else "")
    summary = (f"likelihood displacement: mean log-prob fell from {fmt(top)}{top_at} to "
               f"{fmt(lc)} ({span}|log pi| up {frac:.0%} within {fmt(p['window_steps'])} "
               f"steps) from step {onset_text(onset, earliest)}{why}{reward_note}")
    remedies = (
        knobs.scale(run, knobs.LEARNING_RATE, 0.3 if phase3 else 0.5),
        knobs.scale(run, knobs.KL_COEF, 2.0),
        "likelihood regularisation (LLDS: penalise log pi decreases on preserved tokens, "
        "lambda ~0.001-0.2)",
        "selective update: skip tokens whose likelihood moved too far (NTHR)",
    )
    if crashes:
        status = inc.merge_status(status, inc.worst(crashes))
        onset = earliest
        summary += f"; {inc.describe(crashes, 1)}"
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=remedies,
                   key_metric=LOGP, incidents=tuple(crashes))


def _crash_outcome(run: Run, crashes: list, evidence: dict[str, object],
                   p: Mapping[str, float]) -> Outcome:
    evidence = {**evidence, "threshold": f"a fall of {fmt(p['crash_nats'])} nats or more "
                f"within {int(p['crash_points'])} logged points"}
    return Outcome(inc.worst(crashes), f"log-prob crash (a catastrophic update): "
                   f"{inc.describe(crashes)}", onset_step=crashes[0].step, evidence=evidence,
                   remedies=_remedies(run, crashes[0].step), key_metric=LOGP,
                   incidents=tuple(crashes))


def _remedies(run: Run, step: int) -> tuple[str | None, ...]:
    return (
        knobs.rollback(step, f"roll back to a checkpoint from before step {step_text(step)}: one "
                       "update moved the policy far from everything it had learned"),
        knobs.scale(run, knobs.LEARNING_RATE, 0.1, why="a single update did this"),
        knobs.scale(run, knobs.KL_COEF, 2.0, fallback="a KL coefficient above 0"),
        knobs.clip_gradients(run),
    )
