"""Entropy collapse: the policy stops exploring.

What it detects
    Rollout entropy falling steeply and for good: more than half of it lost within
    ``window_steps`` (warning), or below ``critical_ratio`` of its starting value (critical),
    while the reward stops paying for it. And entropy below an absolute ``floor`` (near-
    deterministic sampling), critical whatever its start: a log that begins after the fall
    still shows it.

Why it matters
    With no entropy the G samples of a group are identical, their rewards equal, advantages
    zero: training stalls (advantage collapse follows). Entropy spent early is spent for good;
    Cui et al. (arXiv 2505.22617) show reward is bounded by R = -a*exp(H) + b, so a collapsed
    entropy caps what the run can still gain.

How it is detected
    For the warning, a Mann-Kendall trend test with the Hamed-Rao autocorrelation correction
    must find a significant decline (p < ``alpha``) and the largest relative drop within
    ``window_steps`` (rolling median, so no single point decides) must exceed
    ``drop_fraction``, with at least half that share still lost at the end (a dip that came
    back is none). The critical line is a level, with no trend test: the median of the
    last 10% of points at or below ``critical_ratio`` of the median of the first points (at
    least 3). The onset is the knot of a two-piece linear fit to log-entropy: where the
    decline began. When reward is logged, Cui's R = -a*exp(H) + b is fitted to report the
    reward the remaining entropy can still buy. The floor is read off the median of the last
    10% of points (at least 3).

False positives
    Entropy normally falls while a policy sharpens. Convergence is shown, not assumed: a fall
    is healthy sharpening (ok, or a warning once nearly all entropy is gone) only while the
    task keeps improving (the held-out score, else a correctness term, else the reward) or the
    log proves it solved (most equal-reward groups all-correct, or a 0/1 score at 0.9 or more),
    and only with none of the collapse cascade: the reward falling, zero-std groups at 80% or
    more (not proven all-correct), completions pinned at the length cap or shrunk to a few
    tokens, the grad norm vanishing, entropy below the floor. A fast fall with the reward
    merely stalled is a warning; corroboration makes it critical. The floor (0.02 nats) is one
    that healthy runs of every size seen (0.5B to 8B, PPO and GRPO) stay above: their lowest
    smoothed entropy was 0.05.

Remedies
    Halve the learning rate; add an entropy bonus (entropy_coeff 0.001-0.01); rollout
    temperature 1.0-1.2; asymmetric clipping (Clip-Higher, clip_ratio_high 0.28); adaptive KL;
    Clip-Cov / KL-Cov on high-covariance tokens.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import ONSET, Outcome, Param, Rule, Skip
from grpo_doctor.rules.plot import Plot, Threshold, ladder, number
from grpo_doctor.rules.points import aligned, head_tail, late_points, series, snap_to_logged
from grpo_doctor.rules.signals import (
    heldout_gap,
    late_level,
    learning,
    rising,
    scored_run,
    solved_share,
    task_solved,
)
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, step_text
from grpo_doctor.trends import (
    decisive_short_fall,
    largest_relative_drop,
    mann_kendall,
    rolling_median,
    trend_onset,
)

ENTROPY = Metric.ENTROPY.value
#: The fewest logged rewards whose significant climb shows a short log learning.
_SHORT_LEARNING = 6
REWARD = Metric.REWARD_MEAN.value

RULE = Rule(
    "entropy_collapse", "Entropy collapse",
    requires=(ENTROPY,), min_points=8, points="entropy values",
    plot=Plot(metrics=(ENTROPY, REWARD)),
    params=(
        Param("drop_fraction", 0.5, "share of entropy lost within window_steps that warns"),
        Param("window_steps", 1000, "span of steps the drop is measured over"),
        Param("critical_ratio", 0.1, "entropy below this fraction of its start is critical"),
        Param("alpha", 0.01, "significance of the monotone decline (Mann-Kendall, Hamed-Rao)"),
        Param("floor", 0.02, "mean token entropy (nats) below which sampling is near-"
              "deterministic: a collapse whatever the start (healthy runs of every size seen "
              "stay above 0.05)"),
    ),
)


def cui_fit(run: Run) -> dict[str, float] | None:
    """Fit R = -a*exp(H) + b on steps where both are logged; ceiling at H=0 is b - a."""
    _, h, r = aligned(run, ENTROPY, REWARD)
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
    # Dated where the fall began, the last point at the level (as the trend's knot dates it
    # on a longer log).
    onset = int(steps[0])
    floor = np.nonzero(h < p["floor"])[0]
    below = (f"; below the {fmt(p['floor'])}-nat floor of near-deterministic sampling from "
             f"step {step_text(int(steps[floor[0]]))}" if len(floor) else "")
    summary = (f"entropy collapsed: fell {1 - h[-1] / h[0]:.0%} from {fmt(h[0])} at step "
               f"{step_text(int(steps[0]))} to {fmt(h[-1])} at step {step_text(int(steps[-1]))} "
               f"without recovering, from step {ONSET}{below}")
    evidence = {"entropy": [round(float(x), 6) for x in h], "steps": [int(s) for s in steps],
                "threshold": f"fall below {p['critical_ratio']:g} x start "
                             f"(too few points for a trend test)"}
    return Outcome(Status.CRITICAL, summary, onset_step=onset, evidence=evidence,
                   remedies=tuple(_remedies(run)), key_metric=ENTROPY)


def _remedies(run: Run) -> list[str]:
    # An entropy bonus already on (0.03, above the range) is not lowered to the range: that
    # would weaken the one term pushing entropy up while it collapses.
    bonus = knobs.set_to(run, knobs.ENTROPY_COEF, "0.001-0.01", why="entropy bonus",
                         unless_at_least=0.001)
    return [
        knobs.scale(run, knobs.LEARNING_RATE, 0.5, why="slows the sharpening"),
        *([bonus] if bonus is not None else []),
        knobs.set_to(run, knobs.TEMPERATURE, "1.0-1.2", unless_at_least=1.0)
        or "keep rollout temperature at 1.0-1.2",
        knobs.set_to(run, knobs.CLIP_HIGH, "0.28",
                     why="Clip-Higher: a higher upper clip lets rare tokens grow",
                     unless_at_least=0.28) or "Clip-Cov / KL-Cov on high-covariance tokens",
        "adaptive KL (target ~1.0) instead of no KL term (beta 0)"
        if knobs.current(run, knobs.KL_COEF)[0] == 0 else
        "adaptive KL (target ~1.0) instead of a fixed small beta",
    ]


@RULE.draws
def lines(p: Mapping[str, float], evidence: Mapping[str, object]
          ) -> dict[str, tuple[Threshold, ...]]:
    """The warning line at what a ``drop_fraction`` loss leaves of the start, the critical one
    at ``critical_ratio`` of it (the start is the check's evidence: none when it did not run)."""
    start = number(evidence, "entropy_start")
    if start is None or start <= 0:
        return {}
    keep = 1 - p["drop_fraction"]
    return {ENTROPY: ladder([(keep * start, f"{keep:.0%} of start ({fmt(keep * start)})",
                              "warning"),
                             (p["critical_ratio"] * start, f"{p['critical_ratio']:.0%} of start "
                              f"({fmt(p['critical_ratio'] * start)})", "critical")], False)}


@RULE.reads_short_logs
def short_log(run: Run, p: Mapping[str, float]) -> Outcome:
    """Near-deterministic sampling is a collapse whatever the start was (a log that begins
    after the fall): a level needs a few points, not a trend. So is a decisive fall."""
    steps, h = series(run, ENTROPY)
    if decisive_short_fall(h, p["critical_ratio"]):  # the fall is in the log: say it
        return _short_collapse(run, steps, h, p)
    at_floor = len(h) >= 3 and float(np.median(h[-late_points(len(h), 0.1, 3):])) < p["floor"]
    if at_floor:
        return _floor_collapse(run, steps, h, p, {})
    if not decisive_short_fall(h, p["critical_ratio"]):
        raise Skip("needs at least 8 logged entropy values, or a fall below "
                   f"{p['critical_ratio']:g} x its start")
    return _short_collapse(run, steps, h, p)


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, h = series(run, ENTROPY)
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
    # An entropy that ends above its start has not collapsed, whatever its noise did in
    # between (a near-deterministic run swinging 0.003-0.09 nats read "fell -49%").
    # And for good: a window's fall that mostly came back (0.80 -> 0.36 within 100 steps of a
    # noisy entropy that ends 10% below its start) is a dip, not a collapse.
    fast_drop = declining and drop_frac >= p["drop_fraction"] and (
        ratio <= 1.0 - 0.5 * p["drop_fraction"])
    # Spent at the end, or at any sustained stretch of its history (a 9-point rolling median):
    # entropy that came back a little after falling below the line had still fallen below it.
    lowest = float(rolling_median(h, 9).min()) if len(h) >= 9 else hc
    # Ending below the critical line is a level, and the level is the evidence: no trend
    # test is asked of it (a 91% fall with p = 0.011, or a log that starts just before a
    # step down, which the autocorrelation correction calls no trend at all). Both ends are
    # medians of several points, so one odd point at the start does not make a collapse.
    spent = (declining and lowest / h0 <= p["critical_ratio"]) or ratio <= p["critical_ratio"]
    if hc < p["floor"] and not declining:
        return _floor_collapse(run, steps, h, p, evidence)
    if not (fast_drop or spent or hc < p["floor"]):
        lost = max(0.0, 1 - ratio)
        text = (f"entropy {fmt(h0)} -> {fmt(hc)} ({lost:.0%} lost): no collapse" if lost else
                f"entropy {fmt(h0)} -> {fmt(hc)}: not falling")
        return Outcome(Status.OK, text, evidence=evidence, key_metric=ENTROPY)

    # Where the decline began: hinge fit on log-entropy up to where 90% of the fall is done.
    # Below the floor sampling is already near-deterministic, so the log is cut there: a fall
    # on from 1e-3 to 1e-16 nats would otherwise hold most of the log-fall and date the
    # collapse long after it happened. A fit falling at least as steeply before its knot as
    # after it found a slowdown, not a start: the decline ran from the first step.
    cut = max(p["floor"], 1e-12)
    log_h = np.log(np.maximum(h, cut))
    knot = trend_onset(steps, log_h, np.log(max(h0, cut)), np.log(max(hc, cut)), bend=1.0)
    onset = snap_to_logged(run, ENTROPY, knot)
    # Is the entropy being spent buying reward? Judge the reward over the whole decline: from
    # where the first tenth of the fall was done (or the knot, if earlier) to the end.
    smooth = rolling_median(h, 5)
    begun = np.nonzero(smooth <= h0 - 0.1 * (h0 - hc))[0]
    since = min(float(onset), float(steps[begun[0]]) if len(begun) else float(onset))
    # The cascade's signs as the policy made them: where a reward term's scorer stopped or
    # failed (a grader down: every group scores alike, the gradient vanishes, the reward
    # falls) they are the scorer's, not the entropy's (trial 53: a fall the control's entropy
    # made too, read critical for "reward falling, zero-std groups at 100%, grad norm
    # vanished").
    seen = scored_run(run)
    progress = learning(seen, since)
    if not progress.logged:
        # A log of a few points (logging_steps 25: 8 of them) whose reward climbed steadily on
        # each is learning: said from those points, for the exemption only (trial 54: the
        # control's own run read critical "entropy collapsing ... zero-std groups at 40%"
        # while the reward rose 0.90 -> 1.37 on every logged step).
        short = learning(seen, since, min_points=_SHORT_LEARNING)
        if short.improving:
            progress = short
    solved = task_solved(seen)
    corroboration = []  # independent signs of the collapse cascade
    if progress.logged and progress.declining:
        corroboration.append("reward falling")
    zsf = Metric.ZERO_STD_FRACTION.value
    zsf_late = late_level(seen, zsf)
    # Only the equal-reward groups the log cannot prove all-correct are the cascade's: at a
    # 0/1 reward of 0.8-0.9, 80% zero-std groups are mostly all-correct ones (rho1.00 at step
    # 120 read critical "zero-std groups at 80%" where at least 79% of them were solved, and
    # "convergence" at the points either side of it).
    share = solved_share(seen)
    stuck = zsf_late * (1 - share) if zsf_late is not None and share is not None else zsf_late
    solving = (progress.logged and progress.improving) or solved
    if stuck is not None and not solved and (
            stuck >= 0.8 or (rising(seen, zsf) and stuck >= 0.3 and not solving)):
        # With the reward still rising, or the task proven solved, equal-reward groups are
        # all-correct ones: convergence, not the collapse cascade.
        corroboration.append(f"zero-std groups at {stuck:.0%}" if share is None or share < 0.05
                             else f"equal-reward groups not solved at {stuck:.0%}")
    trunc = late_level(seen, Metric.TRUNCATION_RATIO.value)
    # Completions cut from the first logs on (a budget too small) are no sign of the cascade
    # (degenerate text running on to the cap): they were cut before the entropy fell.
    if trunc is not None and trunc >= 0.5 and not _cut_from_start(seen) and not _cut_once_spent(
            seen, steps, h, h0, hc):
        corroboration.append(f"{trunc:.0%} of completions truncated at the length cap")
    _, g = series(seen, Metric.GRAD_NORM.value)
    # A task proven solved leaves all-correct groups: no advantage, no gradient, and a policy
    # deterministic because it is right. Those are convergence, not the cascade.
    if len(g) >= 6 and not solved:
        g0, gc = head_tail(g)
        if g0 > 0 and gc <= 0.01 * g0:
            corroboration.append(f"grad norm vanished ({fmt(g0)} -> {fmt(gc)})")
    shrunk = _length_collapse(seen)
    if shrunk:
        corroboration.append(shrunk)
    if hc < p["floor"] and not solved:
        corroboration.append(f"entropy below the {fmt(p['floor'])}-nat floor "
                             "(near-deterministic sampling)")
    after = _break_after_sharpening(run, steps, h, h0, since) if corroboration else None
    if after is not None:
        # Judged as it stood at the crash: spent or on the floor by then is its own collapse;
        # a level the crash itself knocked down is the crash's (trial 79).
        h_pre = float(np.median(h[steps <= after][-5:]))
        if h_pre / h0 <= p["critical_ratio"] or h_pre < p["floor"]:
            after = None
        else:
            spent, hc = False, h_pre
    if after is not None:
        # What broke at the crash is the crash's: the entropy had done its falling while the
        # reward still rose (trial 78: a budget cut at step 201 after a sharpening its control
        # made too read "entropy collapse at step 1 ... by the end, reward falling, 100% of
        # completions truncated", the lr first).
        corroboration = []
        seen = run.truncated(after)
        progress = learning(seen, since)
        solved = task_solved(seen)
        solving = (progress.logged and progress.improving) or solved
        evidence["break_after"] = after
    evidence["corroboration"] = corroboration
    if progress.logged:
        evidence["reward_since_decline"] = [round(progress.start or 0, 4),
                                            round(progress.end or 0, 4)]
    fit = cui_fit(run)
    headroom = ""
    if fit is not None:
        evidence["reward_ceiling_fit"] = {k: round(v, 4) for k, v in fit.items()}
        if progress.end is not None:
            # Said as what it is, a fit of the reward against the entropy so far (R = -a e^H +
            # b); a ceiling at or below the reward now is one already reached ("can reach
            # about 1.11 (now 1.18)" read as a contradiction).
            ceiling, now = float(fit["ceiling"]), float(progress.end)
            reached = ceiling <= now + 0.02 * max(abs(now), 1e-9)
            headroom = (f"; the reward's fit against the entropy puts its ceiling at about "
                        f"{fmt(ceiling)} (now {fmt(now)})"
                        + (": already there, little left to gain without more entropy"
                           if reached else ""))

    stalled = progress.logged and not progress.improving and not progress.declining
    # Convergence is shown, not assumed: the task must be improving (held-out, correctness
    # or the reward) or proven solved, and nothing of the collapse cascade may be present.
    benign = solving and not corroboration
    if benign:
        status = Status.WARNING if spent else Status.OK
        kind = ("entropy spent as the training prompts are solved (the held-out score is "
                "not)" if spent and solved and heldout_gap(run) else
                "entropy spent as the task is solved (convergence)" if spent and solved else
                "entropy nearly spent while the task still improves" if spent else
                "entropy falling fast but still buying reward (healthy sharpening)" if not solved
                else "entropy falling as the task is solved (convergence)")
    elif spent or hc < p["floor"]:
        status = Status.CRITICAL
        kind = "entropy collapsed"
    else:
        status = Status.CRITICAL if corroboration else Status.WARNING
        kind = "entropy collapsing" + (" while the reward has stopped improving" if stalled
                                       else "")
    # Every line the fall crossed: the floor alone read "entropy < 0.02 nats" beside a first
    # alert raised at 0.07, where the share of the start had crossed first.
    crossed = ([f"entropy < {p['critical_ratio']:g} x start"] if spent else []) + (
        [f"entropy < {fmt(p['floor'])} nats"] if hc < p["floor"] else [])
    evidence["threshold"] = "; ".join(crossed) or (
        f"drop > {p['drop_fraction']:.0%} within {fmt(p['window_steps'])} steps")
    # The corroboration is read at the end of the run, the fall dated from its onset: say
    # which is which, so "81% zero-std" is not read as the state at the onset.
    why = f"; by the end, {', '.join(corroboration)}" if corroboration else ""
    # The fall the threshold judged, where it is deeper than the fall from the start ("fell
    # 47%" beside "threshold: drop > 50%" read as under the line).
    steepest = (f" ({drop_frac:.0%} within {fmt(drop.end_step - drop.start_step)} steps at "
                f"its steepest)" if drop is not None and fast_drop and not spent
                and drop_frac > 1 - ratio + 0.005 else "")
    # Spent at its lowest stretch though the end came back just above the line ("fell 90%"
    # beside "threshold: entropy < 0.1 x start" at 0.1003 of it): the level that crossed.
    low_point = (f" (at its lowest {fmt(lowest)}, {lowest / h0:.1%} of its start)"
                 if spent and ratio > p["critical_ratio"] and not steepest else "")
    summary = (f"{kind}: entropy fell {1 - ratio:.0%} from {fmt(h0)} to {fmt(hc)}{steepest}"
               f"{low_point}, beginning at step {ONSET}{why}{headroom}")
    remedies = _remedies(run)
    if benign:
        rose = (f" (reward {fmt(progress.start)} -> {fmt(progress.end)})"
                if progress.start is not None and progress.end is not None
                and progress.end > progress.start else "")
        spent_words = ": with its entropy nearly spent, later steps explore little" if spent \
            else ""
        gap = heldout_gap(run)
        calm = (f"nothing urgent: the run is converging{rose}; stop when the reward plateaus"
                f"{spent_words}")
        if gap:
            # Its training prompts solved and the held-out score well below: converging on
            # them, not on the task; said first, so "converging" is never read as "the task is
            # learned". The advice's next-run change is then the prompts, not the pace.
            evidence["heldout_gap"] = {"train": round(gap[0], 4), "held_out": round(gap[1], 4)}
            calm = (f"nothing urgent: the run is converging on its training prompts{rose}, not "
                    f"on the task: the held-out score holds at {fmt(gap[1])} against "
                    f"{fmt(gap[0])} on them (too few or too alike prompts, or prompts sampled "
                    "unlike the evaluation's); keep the checkpoint with the best held-out "
                    f"score; stop when the reward plateaus{spent_words}")
        remedies = [calm, *remedies[:2]]
    return Outcome(status, summary, onset_step=onset, evidence=evidence,
                   remedies=tuple(remedies), key_metric=ENTROPY)


def _break_after_sharpening(run: Run, steps: np.ndarray, h: np.ndarray, h0: float,
                            since: float) -> int | None:
    """The last logged step before a reward crash that came after the entropy had done its
    falling (within a tenth of its fall of where it ends, neither falling on nor blown up
    after it) while the reward still rose over the decline up to it: the crash is another
    cause's, and the signs after it are not the entropy's. None when there is no such
    crash."""
    from grpo_doctor.rules import incidents as inc

    falls = [c for c in inc.crashes(run, REWARD, "reward", share=0.6, within=5)
             if c.recovered_step is None]
    if not falls:
        return None
    at = falls[0].step
    before = steps[steps < at]
    if len(before) < 10:
        return None
    cut = int(before[-1])
    h_into = h[steps < at]
    h_before = float(np.median(h_into[-5:]))
    hc = float(np.median(h[-5:]))
    fall = max(h0 - min(h_before, hc), 1e-12)
    if hc > h_before + 0.1 * fall:
        return None  # blown up after it: the cascade's
    if hc < h_before - 0.1 * fall:
        # Lower after the crash: the crash's own drop only where the entropy came into it
        # level (trial 79: a stop token changed at step 181, every completion 3 tokens, the
        # entropy 0.065 -> 0.016 in one step after a sharpening its control made too), not
        # still falling into it.
        earlier = h_into[-15:-5]
        if len(earlier) < 3 or float(np.median(earlier)) - h_before > 0.1 * max(
                h0 - h_before, 1e-12):
            return None
    pre = run.truncated(cut)
    if not (learning(pre, since).improving or task_solved(pre)):
        return None
    return cut


def _floor_collapse(run: Run, steps: np.ndarray, h: np.ndarray, p: Mapping[str, float],
                    evidence: dict[str, object]) -> Outcome:
    """Entropy below the floor with no decline to see: it collapsed before the log began (or
    sampling was near-deterministic from the start)."""
    smooth = rolling_median(h, 5)
    low = np.nonzero(smooth < p["floor"])[0]
    onset = int(steps[low[0]]) if len(low) else int(steps[0])
    late = float(np.median(h[-late_points(len(h), 0.1, 3):]))
    evidence = {**evidence, "entropy_now": round(late, 6), "floor": p["floor"],
                "threshold": f"entropy < {fmt(p['floor'])} nats"}
    when = ("on every logged step" if onset == int(steps[0]) and smooth.max() < p["floor"]
            else f"from step {ONSET}")
    summary = (f"entropy collapsed: {fmt(late)} nats, below the {fmt(p['floor'])}-nat floor "
               f"of near-deterministic sampling, {when} (the samples of a group are "
               "near-identical)")
    return Outcome(Status.CRITICAL, summary, onset_step=onset, evidence=evidence,
                   remedies=tuple(_remedies(run)), key_metric=ENTROPY)


def _length_collapse(run: Run) -> str | None:
    """Completions collapsed to a few tokens (a 2-token policy is not healthy sharpening)."""
    _, m = series(run, Metric.RESPONSE_LENGTH_MEAN.value)
    if len(m) < 6:
        return None
    l0, lc = head_tail(m)
    if l0 > 0 and lc <= 0.3 * l0 and lc <= 10:
        return f"completions shrank to {fmt(lc)} tokens (from {fmt(l0)})"
    return None


def _cut_from_start(run: Run) -> bool:
    """Half of the completions or more cut at the length cap over the first logs already."""
    t = series(run, Metric.TRUNCATION_RATIO.value)[1]
    return len(t) >= 3 and head_tail(t)[0] >= 0.5


def _cut_once_spent(run: Run, steps: np.ndarray, h: np.ndarray, h0: float, hc: float) -> bool:
    """Completions reached the cap only after the entropy had done its falling (within a
    tenth of its fall from its late level, the truncated share under a quarter there): what
    ran them to the cap came later (a length bonus the policy farmed), not the collapse's
    degenerate text (trial 82b: a length bonus ramping with the step, truncation from step
    228 after the entropy fell by step 180, read "entropy collapse, critical: beta 0; the task
    is solved" over the length hack)."""
    if not len(h) or h0 <= hc:
        return False
    spent = np.flatnonzero(h <= hc + 0.1 * (h0 - hc))
    if not len(spent):
        return False
    ts, t = series(run, Metric.TRUNCATION_RATIO.value)
    before = t[ts <= steps[spent[0]]]
    return len(before) >= 5 and float(np.median(before[-5:])) < 0.25
