"""Entropy collapse: the policy stops exploring.

What it detects
    Rollout entropy falling steeply and for good: more than half of it lost within
    ``window_steps`` (warning), or below ``critical_ratio`` of its starting value (critical),
    while the reward stops paying for it.

Why it matters
    With no entropy the G samples of a group are identical, their rewards equal, advantages
    zero: training stalls (advantage collapse follows). Entropy spent early is spent for good;
    Cui et al. (arXiv 2505.22617) show reward is bounded by R = -a*exp(H) + b, so a collapsed
    entropy caps what the run can still gain.

How it is detected
    A Mann-Kendall trend test with the Hamed-Rao autocorrelation correction must find a
    significant decline (p < ``alpha``); the largest relative drop within ``window_steps``
    (rolling median, so no single point decides) must exceed ``drop_fraction``; the level is the
    median of the last 10% of points against the median of the first 10%. The onset is the
    knot of a two-piece linear fit to log-entropy: where the decline began. When reward is
    logged, Cui's R = -a*exp(H) + b is fitted to report the predicted ceiling.

False positives
    Entropy normally falls while a policy sharpens; a fall that keeps buying reward (with the
    held-out score not falling and a correctness term, when logged, improving) is healthy
    convergence and is reported as ok, or as a warning once nearly all entropy is gone. A fast
    fall with the reward merely stalled is a warning; only independent corroboration (reward
    falling, zero-std groups rising, grad norm vanishing, completions pinned at the length cap)
    makes it critical.

Remedies
    Halve the learning rate; add an entropy bonus (entropy_coeff 0.001-0.01); rollout
    temperature 1.0-1.2; asymmetric clipping (Clip-Higher, clip_ratio_high 0.28); adaptive KL;
    Clip-Cov / KL-Cov on high-covariance tokens.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from grpo_doctor.findings import Status
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import (
    Outcome,
    Param,
    Rule,
    Skip,
    aligned,
    fmt,
    head_tail,
    series,
    snap_to_logged,
)
from grpo_doctor.rules.signals import late_level, learning, rising
from grpo_doctor.store import Run
from grpo_doctor.trends import (
    decisive_short_fall,
    largest_relative_drop,
    mann_kendall,
    rolling_median,
    trend_onset,
)

ENTROPY = Metric.ENTROPY.value

PARAMS = (
    Param("drop_fraction", 0.5, "share of entropy lost within window_steps that warns"),
    Param("window_steps", 1000, "span of steps the drop is measured over"),
    Param("critical_ratio", 0.1, "entropy below this fraction of its start is critical"),
    Param("alpha", 0.01, "significance of the monotone decline (Mann-Kendall, Hamed-Rao)"),
)


def cui_fit(run: Run) -> dict[str, float] | None:
    """Fit R = -a*exp(H) + b on steps where both are logged; ceiling at H=0 is b - a."""
    _, h, r = aligned(run, ENTROPY, Metric.REWARD_MEAN.value)
    if len(h) < 8 or np.ptp(h) == 0:
        return None
    x = np.exp(np.clip(h, -50, 50))
    slope, b = np.polyfit(x, r, 1)
    a = -slope
    if a <= 0:
        return None
    return {"a": float(a), "b": float(b), "ceiling": float(b - a)}


def _short_collapse(run: Run, steps: np.ndarray, h: np.ndarray, p: Mapping[str, float]
                    ) -> Outcome:
    """A log too short for a trend test but with entropy falling below ``critical_ratio`` of
    its start and not recovering (see ``decisive_short_fall``)."""
    onset = int(steps[0])
    summary = (f"entropy collapsed: fell {1 - h[-1] / h[0]:.0%} from {fmt(h[0])} to "
               f"{fmt(h[-1])} over {len(h)} logged points without recovering, from step "
               f"{fmt(onset)}")
    evidence = {"entropy": [round(float(x), 6) for x in h], "steps": [int(s) for s in steps],
                "threshold": f"fall below {p['critical_ratio']:g} x start "
                             f"(too few points for a trend test)"}
    return Outcome(Status.CRITICAL, summary, onset_step=onset, evidence=evidence,
                   remedies=_remedies(run), key_metric=ENTROPY)


def _remedies(run: Run) -> list[str]:
    return [
        knobs.scale(run, knobs.LEARNING_RATE, 0.5, why="slows the sharpening"),
        knobs.set_to(run, knobs.ENTROPY_COEF, "0.001-0.01", why="entropy bonus")
        or "raise the entropy coefficient (0.001-0.01)",
        knobs.set_to(run, knobs.TEMPERATURE, "1.0-1.2", unless_at_least=1.0)
        or "keep rollout temperature at 1.0-1.2",
        knobs.set_to(run, knobs.CLIP_HIGH, "0.28", why="Clip-Higher lets rare tokens grow",
                     unless_at_least=0.28) or "Clip-Cov / KL-Cov on high-covariance tokens",
        "adaptive KL (target ~1.0) instead of a fixed small beta",
    ]


def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, h = series(run, ENTROPY)
    if len(h) < 8 and not decisive_short_fall(h, p["critical_ratio"]):
        raise Skip("needs at least 8 logged entropy values (or a fall below "
                   f"{p['critical_ratio']:g} x its start)")
    if len(h) < 8:
        return _short_collapse(run, steps, h, p)
    h0, hc = head_tail(h, head_frac=0.02)  # bad runs collapse within the first 10%
    if h0 <= 0:
        raise Skip("entropy's starting level is not positive")
    ratio = hc / h0
    trend = mann_kendall(steps, h)
    drop = largest_relative_drop(steps, h, p["window_steps"])
    drop_frac = drop.fraction if drop else 0.0
    evidence: dict[str, object] = {
        "entropy_start": round(h0, 6), "entropy_now": round(hc, 6),
        "ratio_to_start": round(ratio, 4), "largest_drop_in_window": round(drop_frac, 4),
        "window_steps": p["window_steps"], "trend_p": float(f"{trend.p:.3g}"),
        "trend_tau": round(trend.tau, 3),
    }
    declining = trend.decreasing(p["alpha"])
    fast_drop = declining and drop_frac >= p["drop_fraction"]
    spent = declining and ratio <= p["critical_ratio"]
    if not (fast_drop or spent):
        lost = max(0.0, 1 - ratio)
        return Outcome(Status.OK, f"entropy {fmt(h0)} -> {fmt(hc)} ({lost:.0%} lost): no "
                       f"collapse", evidence=evidence, key_metric=ENTROPY)

    # Where the decline began: hinge fit on log-entropy up to where 90% of the fall is done.
    log_h = np.log(np.maximum(h, 1e-12))
    knot = trend_onset(steps, log_h, np.log(max(h0, 1e-12)), np.log(max(hc, 1e-12)))
    onset = snap_to_logged(run, ENTROPY, knot)
    # Is the entropy being spent buying reward? Judge the reward over the whole decline: from
    # where the first tenth of the fall was done (or the knot, if earlier) to the end.
    smooth = rolling_median(h, 5)
    begun = np.nonzero(smooth <= h0 - 0.1 * (h0 - hc))[0]
    since = min(float(onset), float(steps[begun[0]]) if len(begun) else float(onset))
    progress = learning(run, since)
    corroboration = []  # independent signs of the collapse cascade
    if progress.logged and progress.declining:
        corroboration.append("reward falling")
    zsf = Metric.ZERO_STD_FRACTION.value
    zsf_late = late_level(run, zsf)
    solving = progress.logged and progress.improving
    if rising(run, zsf) and zsf_late is not None and zsf_late >= 0.3 and not solving:
        # With the reward still rising, equal-reward groups are all-correct ones: the task is
        # being solved, which is convergence, not the collapse cascade.
        corroboration.append(f"zero-std groups rising to {zsf_late:.0%}")
    trunc = late_level(run, Metric.TRUNCATION_RATIO.value)
    if trunc is not None and trunc >= 0.5:
        corroboration.append(f"{trunc:.0%} of completions truncated at the length cap")
    _, g = series(run, Metric.GRAD_NORM.value)
    if len(g) >= 6:
        g0, gc = head_tail(g)
        if g0 > 0 and gc <= 0.01 * g0:
            corroboration.append(f"grad norm vanished ({fmt(g0)} -> {fmt(gc)})")
    evidence["corroboration"] = corroboration
    if progress.logged:
        evidence["reward_since_decline"] = [round(progress.start or 0, 4),
                                            round(progress.end or 0, 4)]
    fit = cui_fit(run)
    headroom = ""
    if fit is not None:
        evidence["cui_fit"] = {k: round(v, 4) for k, v in fit.items()}
        if progress.end is not None:
            headroom = (f"; predicted reward ceiling {fmt(fit['ceiling'])}, reward now "
                        f"{fmt(progress.end)}")

    stalled = progress.logged and not progress.improving and not progress.declining
    benign = progress.logged and progress.improving and not corroboration
    if benign:
        status = Status.WARNING if spent else Status.OK
        kind = ("entropy nearly spent while reward still rises" if spent
                else "entropy falling fast but still buying reward (healthy sharpening)")
    elif spent:
        status = Status.CRITICAL
        kind = "entropy collapsed"
    else:
        status = Status.CRITICAL if corroboration else Status.WARNING
        kind = "entropy collapsing" + (" while the reward has stopped improving" if stalled
                                       else "")
    evidence["threshold"] = (f"entropy < {p['critical_ratio']:g} x start" if spent else
                             f"drop > {p['drop_fraction']:.0%} within {fmt(p['window_steps'])} "
                             f"steps")
    why = f" with {', '.join(corroboration)}" if corroboration else ""
    summary = (f"{kind}: entropy fell {1 - ratio:.0%} from {fmt(h0)} to {fmt(hc)} from step "
               f"{fmt(onset)}{why}{headroom}")
    remedies = _remedies(run)
    if benign:
        remedies = [
            "nothing urgent: the run is converging; stop when the reward plateaus",
            *remedies[:2],
        ]
    return Outcome(status, summary, onset_step=onset, evidence=evidence,
                   remedies=tuple(remedies), key_metric=ENTROPY)


RULE = Rule(
    id="entropy_collapse",
    title="Entropy collapse",
    detect=detect,
    params=PARAMS,
    doc=__doc__ or "",
    requires=(ENTROPY,),
)
