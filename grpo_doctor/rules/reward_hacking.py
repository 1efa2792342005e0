"""Reward hacking: the reward rises for the wrong reasons.

What it detects
    Four forms that scalars show. (1) A held-out or true score (validation accuracy, a gold
    reward) turning over while the train reward keeps rising. (2) Reward that no longer pays for
    the KL it costs: reward gained per sqrt(KL) (Gao et al.'s overoptimisation law) collapsing
    to under ``efficiency_drop`` of its early value while KL climbs past ``min_kl``; the
    rule of thumb "reward +0.1 while KL +5". (3) An anti-cheat reward component (a name with
    cheat / hack / violation / forbidden) turning negative on ``cheat_share`` of recent steps:
    the policy is trying the exploit the component exists to catch. (4) The reward rising on a
    term it pays while the task's own check, logged at weight 0 in the config (watched, not
    paid), stays flat or falls: the paid term is not the task (a lenient verifier).

Why it matters
    A verifier exploit looks like success on the reward curve. The true task degrades, KL races,
    and the longer it trains the more it learns the exploit.

How it is detected
    (1) Rolling-median held-out score: its peak is not at the end, it has since lost
    ``heldout_drop`` of the peak's size and 3x its step-to-step noise (the best of a few
    dozen noisy evaluations sits above their level by chance), while the train reward after
    the peak has not fallen.
    (2) Efficiency (delta reward / delta sqrt(KL)) over the first and the second half of the KL
    rise. (3) Share of late steps where the anti-cheat component is negative (not when it is
    negative only on steps whose completions were all cut at the cap: cut before writing
    anything is not cheating). Critical when the
    held-out score turns over, or when two forms agree.

False positives
    A held-out score logged rarely (a few evaluations) is noisy: at least 5 evaluations are
    needed. Reward efficiency naturally falls as a run matures; only a collapse while KL is
    large counts.

Remedies
    Fix the reward: several verifiers, a process reward, an adversarial check on high-reward
    samples; keep a KL anchor (a larger beta, a hard KL cap); stop at the held-out peak; spot-
    check the highest-reward trajectories by hand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import ONSET, Outcome, Param, Rule, Skip
from grpo_doctor.rules.plot import Plot
from grpo_doctor.rules.points import aligned, head_tail, late_points, series, snap_to_logged
from grpo_doctor.rules.signals import (
    component_role,
    components,
    configured_weight,
    reward_progress,
    sparse_improving,
    unpaid_among_twins,
    unpaid_terms,
)
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, step_text
from grpo_doctor.trends import mann_kendall, rolling_median, step_noise

REWARD = Metric.REWARD_MEAN.value
KL = Metric.KL.value
HELDOUT = Metric.HELDOUT_SCORE.value
TRUNC = Metric.TRUNCATION_RATIO.value

RULE = Rule(
    "reward_hacking", "Reward hacking",
    # the least any of its signals needs (a held-out turnover: 5 points)
    requires=(REWARD,), min_points=5, points="rewards", plot=Plot(metrics=(REWARD, KL, HELDOUT)),
    needs="one of heldout_score, kl or an anti-cheat reward component (cheat, hack, "
    "violation... in its name)",
    params=(
        Param("heldout_drop", 0.3, "share of the held-out peak lost since"),
        Param("efficiency_drop", 0.25, "late reward-per-sqrt(KL) below this share of the early"),
        Param("min_kl", 1.0, "KL the efficiency test needs to have reached"),
        Param("cheat_share", 0.1, "share of recent steps with the anti-cheat component negative"),
    ),
)


def _heldout_turnover(run: Run, p) -> dict | None:
    steps, h = series(run, HELDOUT)
    if len(h) < 5:
        return None
    smooth = rolling_median(h, 3)
    peak = int(np.argmax(smooth))
    if peak >= len(h) - 2:
        return None
    now = float(np.median(h[-max(2, len(h) // 5):]))
    # Lost: from the peak, relative to the peak's size (a score that only ever falls from its
    # first evaluation turned over too), e.g. accuracy 0.45 -> 0.
    scale = max(abs(float(smooth[peak])), float(smooth[peak] - smooth.min()), 1e-12)
    if (smooth[peak] - now) / scale < p["heldout_drop"]:
        return None
    if smooth[peak] - now < 3 * step_noise(h):
        # The best of a few dozen noisy evaluations sits well above their level by chance: an
        # accuracy of 8% +- 2% whose best three read 11% has not turned over.
        return None
    r_steps, r = series(run, REWARD)
    after = r_steps >= steps[peak]
    if after.sum() < 4:
        return None
    train_trend = mann_kendall(r_steps[after], r[after])
    if train_trend.decreasing(0.05):
        return None  # both falling: that is reward over-fitting or collapse, not hacking
    late_train = float(np.median(r[after][-max(2, int(after.sum()) // 3):]))
    if late_train <= float(r.min()) + 0.25 * float(np.ptp(r)):
        return None  # a train reward at its floor pays for nothing: nothing is being gamed
    if _fell_with_it(steps, smooth, peak, now, r_steps, r):
        return None  # one crash took both (an lr burst): not a reward paying for the wrong thing
    return {"form": "held-out score turned over while train reward held or rose",
            "heldout_peak": float(smooth[peak]), "heldout_now": now,
            "peak_step": int(steps[peak]), "onset": snap_to_logged(run, HELDOUT, steps[peak])}


def _fell_with_it(steps: np.ndarray, smooth: np.ndarray, peak: int, now: float,
                  r_steps: np.ndarray, r: np.ndarray) -> bool:
    """The train reward fell with the held-out score: over the held-out's fall (its peak to
    where it had lost half the drop) the reward lost a quarter of its range or more. Hacking
    is the reward holding while the task falls; an lr burst that crashed both at step 121,
    the reward recovering later, read "held-out score turned over while train reward held"."""
    half = np.nonzero(smooth[peak:] <= now + 0.5 * (smooth[peak] - now))[0]
    if not len(half):
        return False
    start, end = float(steps[peak]), float(steps[peak + int(half[0])])
    width = max(3, len(r) // 40)
    before = r[r_steps <= start][-width:]
    at = r[r_steps >= end][:width]
    if len(before) < width or len(at) < width:
        return False  # a peak at the log's first points: no level before it to fall from
    fall = float(np.median(before)) - float(np.median(at))
    return fall >= max(0.25 * float(np.ptp(r)), 3 * step_noise(r))


def _efficiency_collapse(run: Run, p) -> dict | None:
    steps, reward, kl = aligned(run, REWARD, KL)
    if len(steps) < 16:
        return None
    r = rolling_median(reward, 5)
    k = np.sqrt(np.maximum(rolling_median(kl, 5), 0))
    # Where KL and the reward are now: their late levels, not the last 5-point median, which a
    # burst of KL spikes at a live monitor's last logs lifts past min_kl on a run whose KL
    # sits at 0.2 (a healthy 1,500-step run warned and cleared seven times).
    late = late_points(len(k), 0.1, 5)
    kl_now = float(np.median(kl[-late:]))
    k_end, r_end = math.sqrt(max(kl_now, 0.0)), float(np.median(reward[-late:]))
    if kl_now < p["min_kl"] or not mann_kendall(steps, k).increasing(0.01):
        return None
    # the first logged point past half of the rise (a noisy KL is not monotone: the middle of
    # the log would date a rise that came late in it to half-way through the run)
    mid = int(np.argmax(k >= (k[0] + k_end) / 2))
    mid = min(max(mid, 4), len(k) - 4)
    dk1, dk2 = k[mid] - k[0], k_end - k[mid]
    if dk1 <= 0 or dk2 <= 0:
        return None
    e1, e2 = (r[mid] - r[0]) / dk1, (r_end - r[mid]) / dk2
    if e1 <= 0 or e2 >= p["efficiency_drop"] * e1:
        return None
    return {"form": "reward no longer pays for KL",
            "efficiency_early": round(float(e1), 4), "efficiency_late": round(float(e2), 4),
            "kl_now": round(kl_now, 4), "onset": int(steps[mid])}


def _cheat_attempts(run: Run, p) -> dict | None:
    for name, col in components(run).items():
        if component_role(run, name) != "cheat":
            continue
        steps, v = series(run, col)
        if len(v) < 8:
            continue
        neg = v < 0
        if _truncation_explains(run, steps, neg):
            continue
        k = late_points(len(v), 0.5)
        share = float(neg[-k:].mean())
        if share >= p["cheat_share"] or neg.mean() >= 2 * p["cheat_share"]:
            return {"form": f"anti-cheat reward {name!r} negative on {share:.0%} of recent "
                            f"steps ({int(neg.sum())} of {len(v)} overall)",
                    "component": name, "onset": int(steps[np.argmax(neg)])}
    return None


def _unpaid_check_still(run: Run) -> dict | None:
    """The reward rose on a term it pays while the task's own check, logged but weighed 0 in
    the config (watched, not paid), did not: what the reward pays is not the task (a lenient
    verifier paying any digit of the answer, trial 44: reward 0.69 -> 0.86 while the exact
    check stayed at 0.02). A gain on a format term is format_gaming's, not this."""
    cols = components(run)
    first = float(run.first_step or 0)
    if not reward_progress(run, first).improving:
        return _paid_at_top(run, cols, first)
    for name, col, check in _unpaid_still(run, cols, first):
        gainer = next((n for n, c in cols.items() if n != name
                       and (configured_weight(run, n) or 0.0) > 0
                       and component_role(run, n) != "format"
                       and reward_progress(run, first, metric=c).improving), None)
        if gainer is None:
            continue
        steps, g = series(run, cols[gainer])
        g0, g1 = head_tail(g)
        smooth = rolling_median(g, 5)
        onset = int(steps[int(np.argmax(smooth >= g0 + 0.25 * (g1 - g0)))])
        # Means, not medians: a check right on a few samples a step has a median of 0.
        c = series(run, col)[1]
        k = max(1, len(c) // 5)
        c0, c1 = float(np.mean(c[:k])), float(np.mean(c[-k:]))
        r0, r1 = head_tail(series(run, REWARD)[1])
        return {"form": f"the reward rose ({fmt(r0)} -> {fmt(r1)}) on {gainer} ({fmt(g0)} -> "
                        f"{fmt(g1)}) while {name}, the task's check the config weighs at 0, "
                        f"{'fell' if check.declining else 'stayed'} ({fmt(c0)} -> {fmt(c1)})",
                "paid": gainer, "unpaid": name, "unpaid_falling": check.declining,
                "onset": snap_to_logged(run, REWARD, onset)}
    return _paid_at_top(run, cols, first)


#: How far below a paid check at its top the task's own unpaid check must sit for the paid
#: one to be lenient (a third of a 0-1 score).
_LENIENT_GAP = 0.3


def _unpaid_still(run: Run, cols: dict[str, str], first: float):
    """(name, column, its progress) of each task check the config weighs at 0 that did not
    improve over the log."""
    for name in unpaid_terms(run):
        col = cols.get(name)
        if col is None:
            continue
        check = reward_progress(run, first, metric=col)
        if check.logged and not check.improving and not sparse_improving(run, col):
            yield name, col, check


def _paid_at_top(run: Run, cols: dict[str, str], first: float) -> dict | None:
    """A paid correctness term at its top (0.9 of 1 or more, late in the run) while the
    task's own check, logged but weighed 0, sat far below it and never rose: the paid check
    passes what the task's does not (trial 78: a check paying any digit at 1.0 from step 15,
    the exact check at 0.33 throughout, read healthy since the reward, at its top early,
    never "rose"). None otherwise."""
    for name, col, check in _unpaid_still(run, cols, first):
        c = series(run, col)[1]
        if not len(c) or float(np.min(c)) < 0.0 or float(np.max(c)) > 1.0:
            continue  # (a 0-1 check's level only: -0.33 is no share of right answers; h114)
        k = max(1, len(c) // 5)
        c1 = float(np.mean(c[-k:]))
        for paid, pcol in cols.items():
            if paid == name or (configured_weight(run, paid) or 0.0) <= 0 or component_role(
                    run, paid) != "correctness":
                continue
            steps, g = series(run, pcol)
            if len(g) < 10 or float(np.max(g)) > 1.0 or float(np.min(g)) < 0.0:
                continue  # (a 0-1 score's top is 1)
            late = float(np.median(g[-k:]))
            if late < 0.9 or late - c1 < _LENIENT_GAP:
                continue
            top = int(steps[int(np.argmax(rolling_median(g, 5) >= 0.9))])
            c0 = float(np.mean(c[:k]))
            return {"form": f"{paid} paid {fmt(late)} of 1 (from step {step_text(top)}) while "
                            f"{name}, the task's check the config weighs at 0, stayed at "
                            f"{fmt(c0)} -> {fmt(c1)}: the paid check passes what the task's "
                            "does not",
                    "paid": paid, "unpaid": name, "unpaid_falling": check.declining,
                    "onset": snap_to_logged(run, REWARD, top)}
    return None


def _truncation_explains(run: Run, steps: np.ndarray, penalised: np.ndarray) -> bool:
    """The anti-cheat penalty fell only on steps where every completion was cut at the
    length cap: a completion cut before it wrote anything fails the check without cheating
    (a code task scores "no function" as a violation)."""
    if not run.has(TRUNC) or not penalised.any():
        return False
    t_steps, t = series(run, TRUNC)
    at = np.isin(steps, t_steps)
    if not at[penalised].all():
        return False
    cut = dict(zip(t_steps.tolist(), t.tolist()))
    return all(cut[int(s)] >= 0.99 for s in steps[penalised])


def _require_a_signal(run: Run) -> None:
    logged = components(run)
    if not (run.has(HELDOUT) or run.has(KL) or any(component_role(run, n) == "cheat"
                                                   for n in logged)
            or any(n in logged for n in unpaid_terms(run))):
        raise Skip("needs a held-out score, KL, an anti-cheat reward component or a "
                   "correctness term logged at weight 0")


@RULE.reads_short_logs
def short_log(run: Run, p: Mapping[str, float]) -> None:
    """Nothing to tell from a short log; but a missing signal is the first thing missing."""
    _require_a_signal(run)


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    twins = unpaid_among_twins(run)
    if twins and not (run.has(HELDOUT) or run.has(KL)):
        # The config's weight 0 is on one of terms that agreed on every step: whichever one
        # is paid, the check left unpaid agrees with it, which is the check this form makes
        # (trial 52: a lenient check and the exact one; "needs a correctness term logged at
        # weight 0" read as if there were none).
        return Outcome(Status.OK, f"no sign of reward hacking: the weight 0 of reward_weights "
                       f"is on one of {', '.join(twins)}, which logged the same value on "
                       "every step: the check left unpaid agrees with the one paid",
                       evidence={"identical_terms": list(twins)}, key_metric=REWARD)
    _require_a_signal(run)
    forms = [f for f in (_heldout_turnover(run, p), _efficiency_collapse(run, p),
                         _cheat_attempts(run, p), _unpaid_check_still(run)) if f]
    evidence: dict[str, object] = {}
    if not forms:
        r0, rc = head_tail(series(run, REWARD)[1]) if run.has(REWARD) else (None, None)
        return Outcome(Status.OK, "no sign of reward hacking" + (
            f" (reward {fmt(r0)} -> {fmt(rc)})" if r0 is not None else ""), evidence=evidence,
            key_metric=REWARD if run.has(REWARD) else None)
    turnover = any("held-out" in f["form"] for f in forms)
    status = Status.CRITICAL if turnover or len(forms) >= 2 or any(
        f.get("unpaid_falling") for f in forms) else Status.WARNING
    onset = min(int(f["onset"]) for f in forms)
    evidence["forms"] = forms
    evidence["threshold"] = "; ".join(f["form"] for f in forms)
    summary = f"reward hacking: {'; '.join(f['form'] for f in forms)}, from step {ONSET}"
    caught = next((f["component"] for f in forms if f.get("component")), None)
    still = next((f for f in forms if f.get("unpaid")), None)
    remedies = (
        f"check {still['paid']} on a few completions against {still['unpaid']}: it pays what "
        f"the task's own check does not (a lenient or exploitable verifier); pay "
        f"{still['unpaid']} (weight 0 -> 1) or fix {still['paid']}" if still else None,
        f"inspect the completions that {caught} penalised: what they tried (forbidden "
        "imports, tampering with the checker) is what the policy is learning; then make the "
        "check stricter and the penalty larger than any reward it could gain" if caught else
        "audit the highest-reward samples by hand; add a second verifier or a process reward",
        knobs.scale(run, knobs.KL_COEF, 2.0, why="keep a KL anchor",
                    fallback="hard KL cap"),
        "stop at the held-out peak and resume from that checkpoint" if turnover else
        None if caught else "make the exploited check stricter (the anti-cheat or verifier "
        "rule)",
    )
    key = HELDOUT if turnover else (KL if any("KL" in f["form"] for f in forms) else REWARD)
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=remedies,
                   key_metric=key if run.has(key) else None)
