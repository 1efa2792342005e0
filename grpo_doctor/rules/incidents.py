"""Incidents: episodes in a run's history that are findings even when the run came back.

A KL of 10,833 at step 10 is a finding whatever KL does by step 150: it is usually the reason
for what came next. Rules call these helpers to turn the episodes the trend statistics find
(``trends.episodes``) into :class:`~grpo_doctor.findings.Incident` records, worded the same
way in every rule, and to say what followed an incident (``aftermath``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from grpo_doctor.findings import Incident, Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules.points import series
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, plural, step_text
from grpo_doctor.trends.binning import rolling_median
from grpo_doctor.trends.episodes import Episode, falls, stretches_above
from grpo_doctor.trends.noise import step_noise

REWARD = Metric.REWARD_MEAN.value
ZSF = Metric.ZERO_STD_FRACTION.value
GRAD = Metric.GRAD_NORM.value
KL = Metric.KL.value
#: The top of the chapter's "normal" KL band: a KL that leaves it, at twice its level or more,
#: right after an incident moved the policy (kl_drift's ``drift_kl`` default).
NORMAL_KL = 0.5
#: The bottom of the chapter's "dangerous" KL band (5-20; kl_drift's ``adapt_kl`` default).
DANGEROUS_KL = 5.0


def aftermath(run: Run, step: int, *, skip: Sequence[str] = ()) -> list[str]:
    """What followed ``step``: signs the run did not simply shrug the incident off (the
    reward falling or freezing, most groups losing their reward variance, KL leaving the
    normal band, the gradient vanishing, NaN). ``skip`` leaves out signals the caller
    reports itself."""
    out: list[str] = []
    s, r = series(run, REWARD)
    before, after = r[s < step][-10:], r[s > step][:10]
    if REWARD not in skip and len(before) >= 3 and len(after) >= 3:
        # The reward's range as its 5-point median runs: one noisy batch at either end of a
        # noisy reward would otherwise make a fall from 0.6 to 0.2 look small.
        span = float(np.ptp(rolling_median(r, 5) if len(r) >= 10 else r)) or 1.0
        b, a = float(np.median(before)), float(np.median(after))
        # "Froze" only where it had been moving: a reward at 0 on 96% of steps before (a
        # task it never solved) did not freeze at 0 after a burst.
        if np.ptp(r[s > step]) == 0 and len(r[s > step]) >= 5 and np.ptp(before) > 0 and (
                float(np.mean(r[s < step] == a)) < 0.5):
            out.append(f"the reward froze at {fmt(a)}")
        elif b - a >= 0.5 * span and not _back_to_floor(r[s < step], a, b - a):
            out.append(reward_fall(run, step, float(s[s > step][:10][-1]))
                       or f"the reward fell from {fmt(b)} to {fmt(a)}")
    s, z = series(run, ZSF)
    z_before, z_after = z[s < step][-10:], z[s > step][:10]
    if ZSF not in skip and len(z_after) >= 3 and float(np.median(z_after)) >= 0.8 and (
            not len(z_before) or float(np.median(z_before)) < 0.5):
        out.append(f"{float(np.median(z_after)):.0%} of groups then had equal rewards")
    s, k = series(run, KL)
    k_before, k_after = k[s < step][-10:], k[s > step][:10]
    if KL not in skip and len(k_before) >= 3 and len(k_after) >= 3:
        kb, ka = float(np.median(k_before)), float(np.median(k_after))
        if kb < NORMAL_KL < ka and ka >= 2 * kb:
            out.append(f"KL rose from {fmt(kb)} to {fmt(ka)}")
    s, g = series(run, GRAD)
    g_before, g_after = g[s < step], g[s > step][:10]
    # "Went to 0" only where the gradient flowed before: a norm already 0 on most logs
    # before it (all-equal groups) did not go anywhere.
    if GRAD not in skip and len(g_after) >= 5 and np.all(g_after == 0) and len(
            g_before) and float(np.mean(g_before[-10:] > 0)) >= 0.5:
        out.append("the gradient norm went to 0")
    nan_after = [int(v[v > step][0]) for m, v in run.nan_steps.items()
                 if m in (Metric.LOSS.value, GRAD, Metric.KL.value) and np.any(v > step)]
    if nan_after:
        out.append(f"NaN followed at step {step_text(min(nan_after))}")
    return out


def reward_fall(run: Run, lo: float, hi: float) -> str | None:
    """The reward's fall of half its range or more that overlaps steps ``lo``..``hi``, in the
    words and numbers a reward crash uses: the values logged where it left its level and
    where it bottomed ("the reward fell from 0.875 at step 35 to 0 at step 45"). Every
    finding that quotes one fall quotes the same two numbers (None: no such fall)."""
    s, r = series(run, REWARD)
    if len(r) < 8:
        return None
    smooth = _smooth(r)
    span = float(np.ptp(rolling_median(r, 5) if len(r) >= 10 else r))
    amount, within = 0.5 * span, 5
    for ep in falls(r, amount, within) if span > 0 else []:
        # Dated where it took its plunge, as a crash is (not where a slow slide began).
        ep = replace(ep, start=_plunge(r, smooth, ep, within, amount / 2, relative=False))
        if s[ep.start] <= hi and s[ep.peak] >= lo:
            return (f"the reward fell from {fmt(float(r[ep.start]))} at step "
                    f"{step_text(int(s[ep.start]))} to {fmt(float(r[ep.peak]))} at step "
                    f"{step_text(int(s[ep.peak]))}")
    return None


def alongside(run: Run, step: int) -> list[str]:
    """What the run showed at ``step`` itself that one bad batch does not: KL in the chapter's
    dangerous band (``DANGEROUS_KL`` or more) and at least twice its level just before. A
    gradient spike logged with it is an update on a batch the policy had already left its
    reference on, not a noisy batch; it is known the moment it is logged."""
    s, k = series(run, KL)
    at, before = k[s == step], k[s < step][-10:]
    if not len(at) or len(before) < 2:
        return []
    level = float(np.median(before))
    if float(at[0]) >= DANGEROUS_KL and float(at[0]) >= 2 * level:
        return [f"KL {fmt(float(at[0]))} at the same step (its level before {fmt(level)})"]
    return []


def _span(steps: np.ndarray, ep: Episode) -> str:
    if ep.length == 1:
        return f"at step {step_text(int(steps[ep.start]))}"
    return (f"from step {step_text(int(steps[ep.start]))} to {step_text(int(steps[ep.end]))} "
            f"({ep.length} logged points)")


#: What an incident still going on at the end of the log says of itself ("as seen then" by a
#: monitor, it is false once the run came back).
NEVER_BACK = "it never came back"
#: A fall at the very end of a log, down for fewer points than a crash takes: not yet told
#: from a bad stretch ("it never came back" on a live log whose next point was back up).
NOT_BACK_YET = "not back yet ({} so far)"
STILL_ABOVE = "still above {} at the last logged step"
_ONGOING = re.compile(rf"; (?:{NEVER_BACK}|not back yet \([^;)]*\)|still above [^;]+? at "
                      r"the last logged step)(?=;|$)")


def without_ongoing(text: str) -> str:
    """``text`` without the clauses that say an incident was still going on (true when it was
    written, at a first alert; not once the episode cleared)."""
    return _ONGOING.sub("", text)


def _back(steps: np.ndarray, ep: Episode, threshold: str) -> str:
    if ep.recovered is None:
        return STILL_ABOVE.format(threshold)
    return f"back below {threshold} at step {step_text(int(steps[ep.recovered]))}"


def _past(x: float, threshold: float) -> str:
    """``x`` with the digits it takes to read as beyond ``threshold`` (a peak of 10.02 over
    a line at 10 is "10.02", not "10")."""
    for digits in range(3, 7):
        if fmt(x, digits) != fmt(threshold, digits):
            return fmt(x, digits)
    return fmt(x, 7)


def above(run: Run, metric: str, name: str, threshold: float, *, sustained: int,
          far: float, harm_escalates: bool = True,
          episodes: Sequence[Episode] | None = None,
          points: tuple[np.ndarray, np.ndarray] | None = None) -> list[Incident]:
    """Stretches of ``metric`` above ``threshold``: each an incident, critical when it lasted
    ``sustained`` logged points, reached ``far`` x the threshold, or was followed by harm
    (``aftermath``); a warning otherwise. ``points`` (steps, values) and ``episodes`` replace
    the series and its stretches when the caller has chosen them itself."""
    steps, v = points if points is not None else series(run, metric, reduce="max")
    out = []
    for ep in (stretches_above(v, threshold) if episodes is None else episodes):
        peak = float(v[ep.peak])
        start = int(steps[ep.start])
        harm = aftermath(run, int(steps[ep.end]), skip=(metric,)) if harm_escalates else []
        severe = ep.length >= sustained or peak >= far * threshold or bool(harm)
        text = (f"{name} above {fmt(threshold)} {_span(steps, ep)}, peak {_past(peak, threshold)} "
                f"at step {step_text(int(steps[ep.peak]))}; {_back(steps, ep, fmt(threshold))}")
        if harm:
            text += f"; then {', '.join(harm)}"
        out.append(Incident(
            metric=metric, step=start, peak_step=int(steps[ep.peak]), peak=peak,
            threshold=float(threshold),
            recovered_step=None if ep.recovered is None else int(steps[ep.recovered]),
            summary=text, severity=Status.CRITICAL if severe else Status.WARNING))
    return out


def _back_to_floor(before: np.ndarray, bottom: float, amount: float) -> bool:
    """Whether ``bottom`` is the level the series held on most of its points ``before`` a
    fall of ``amount``, and it rose above that only briefly (fewer than 10 points, and a
    tenth of those before): a return to its floor after a blip, not a fall from a level it
    had reached and held (0 for 70 steps, 0.8 for 40, then 0 is a crash; h103)."""
    if len(before) < 10 or float(np.mean(np.abs(before - bottom) <= 0.25 * amount)) < 0.6:
        return False
    risen = int(np.sum(before - bottom > 0.5 * amount))
    return risen < max(10, 0.1 * len(before))


def crashes(run: Run, metric: str, name: str, *, share: float, within: int,
            min_drop: float = 0.0, noise_units: float = 4.0,
            of_level: float | None = None, held: bool = True,
            brief: list[Incident] | None = None) -> list[Incident]:
    """Fast falls of ``metric``: at least ``share`` of its smoothed range (and ``min_drop``,
    and ``noise_units`` times its noise) lost within ``within`` logged points, from a level
    ``held`` for the 5 points before (within half the fall). A fall seen for fewer than
    ``within`` points at the end of the log must also be ``noise_units`` times the swings of
    the ``4 * within`` points before it: a reward that began quiet and now swings 0.1 <-> 2.7
    by chance has no crash at its last two points. Critical when it never came back; a
    warning when it did after staying down at least ``2 * within`` points (a dip that is back
    within a few points is a bad batch, however deep: such dips are appended to ``brief``
    when given, so a caller can say it saw them)."""
    steps, v = series(run, metric)
    if len(v) < 8:  # fewer points than that cannot tell a crash from a noisy batch
        return []
    smooth = _smooth(v)
    # Noise: the typical step-to-step change (robust), so a reward scored on one group per
    # step, which swings between its extremes by chance, has no "crashes".
    noise = step_noise(v)
    # ``of_level``: a fall measured against the series' typical level (a length collapsing to
    # a few tokens), not against its range.
    scale = float(np.median(smooth)) if of_level is not None else float(np.ptp(smooth))
    amount = max((of_level if of_level is not None else share) * scale, min_drop,
                 noise_units * noise)
    out = []
    for ep in falls(v, amount, within):
        if ep.recovered is None and len(v) - 1 - ep.peak < 2 and not (
                len(v) - 1 - ep.start >= 2
                and np.all(v[-2:] <= float(smooth[ep.start]) - amount)):
            continue  # one low point at the very end: a bad batch, or not yet a crash
        if held and not _held(v[max(0, ep.start - 4):ep.start + 1], float(smooth[ep.start]),
                              amount / 2):
            continue  # no level to fall from: a series swinging between its extremes
        if held:
            ep = replace(ep, start=_plunge(v, smooth, ep, within, amount / 2,
                                           relative=of_level is not None))
        start_level, bottom = float(smooth[ep.start]), float(smooth[ep.peak])
        if _back_to_floor(v[:ep.start], bottom, amount):
            # Back to the level it held on most of the log before its rise (a reward at 0 on
            # 96% of steps, 0.06 for a few): an excursion up that ended, not a crash (trial
            # 73: "reward crash 0.0625 -> 0", and a roll-back to a step before it).
            continue
        local = v[max(0, ep.start - 4 * within):ep.start + 1]
        if (ep.recovered is None and len(v) - 1 - ep.peak < within and len(local) >= 5
                and start_level - bottom < noise_units * step_noise(local)):
            # Only a few points down at the end of the log, within the swings the series had
            # just before the fall: not yet told from a noisy stretch (more points will).
            continue
        if ep.recovered is not None and ep.recovered - ep.start < 2 * within:
            if brief is not None:  # back within a few points: a bad batch, not an incident
                low = ep.start + int(np.argmin(v[ep.start:ep.recovered + 1]))
                brief.append(Incident(
                    metric=metric, step=int(steps[min(ep.start + 1, ep.peak)]),
                    peak_step=int(steps[low]), peak=float(v[low]),
                    threshold=start_level - amount, recovered_step=int(steps[ep.recovered]),
                    summary=f"{name} dipped to {fmt(float(v[low]))} at step "
                            f"{step_text(int(steps[low]))}, back by step "
                            f"{step_text(int(steps[ep.recovered]))}"))
            continue
        back = None
        if ep.recovered is not None:
            # The first logged value back above half-way and staying there: the smoothed
            # series crosses a point or two after the values themselves (84 at step 140,
            # "back above 56 at step 150" read as if 140 were still down).
            half = (start_level + bottom) / 2
            back = next((j for j in range(ep.peak + 1, ep.recovered + 1)
                         if np.all(v[j:ep.recovered + 1] >= half)), ep.recovered)
        # Where it got there: its first logged point within 5% of the fall of the bottom,
        # not the bottom of a slow drift after it (a length at 4 tokens by step 45 read
        # "crashed ... between steps 35 and 95", where the smoothed series bottomed out).
        near = np.nonzero(v[ep.start + 1:ep.peak + 1]
                          <= bottom + 0.05 * (start_level - bottom))[0]
        reached = ep.start + 1 + int(near[0]) if len(near) else ep.peak
        # Dated at its first point clearly down (15% of the fall below the level it left):
        # points still at that level are not the crash yet.
        left = max(start_level, float(v[ep.start]))
        down = np.nonzero(v[ep.start + 1:ep.peak + 1] <= left - 0.15 * (left - bottom))[0]
        first = ep.start + 1 + int(down[0]) if len(down) else min(ep.start + 1, ep.peak)
        # Down on the last two logged points only: a warning until a third tells it from two
        # bad batches (SCU's live 0.5 -> 0.36 at 200-205 was back at 0.5 at the next log;
        # rho1.00's 0.9 -> 0.375 -> 0.25 -> 0.1 over three logs is a crash).
        down_for = len(v) - first
        fresh = back is None and down_for < _DOWN_FOR_A_CRASH
        # The values logged at the two steps named: the smoothed levels read as the log's
        # own ("from 0.775 at step 125" where it logged 0.8; "to 2.65 by step 45" where it
        # logged 4.25 and reached 2.65 only at step 100, helper-50).
        text = (f"{name} crashed from {fmt(float(v[ep.start]))} to {fmt(float(v[reached]))} "
                f"between steps {fmt(int(steps[ep.start]))} and "
                f"{step_text(int(steps[reached]))}; "
                + (NOT_BACK_YET.format(plural(down_for, "logged point")) if fresh else
                   NEVER_BACK if back is None else
                   f"back above {fmt((start_level + bottom) / 2)} at step "
                   f"{fmt(int(steps[back]))}"))
        out.append(Incident(
            metric=metric, step=int(steps[first]),
            peak_step=int(steps[ep.peak]), peak=bottom, threshold=start_level - amount,
            recovered_step=None if back is None else int(steps[back]),
            summary=text,
            severity=Status.CRITICAL if ep.recovered is None and not fresh else Status.WARNING))
    return out


#: Logged points a fall at the end of a log must have stayed down on to be a crash it never
#: came back from (fewer: "not back yet", a warning).
_DOWN_FOR_A_CRASH = 3


def _plunge(v: np.ndarray, smooth: np.ndarray, ep: Episode, within: int, tolerance: float,
            relative: bool) -> int:
    """Where a fall in stages took its steepest plunge: of the points from the episode's
    start to its bottom that hold a level, the one with the largest fall within ``within``
    points after it (as a ratio for a series judged against its level, a length of 230 ->
    110 tokens being less than 110 -> 4). A length that halved at step 15 and plunged to
    4 tokens after an update at 35 crashed at 35."""
    best, score = ep.start, -np.inf
    for j in range(ep.start, ep.peak):
        ahead = smooth[j + 1:min(j + 1 + within, ep.peak + 1)]
        if not len(ahead) or (j > ep.start and not _held(v[max(0, j - 4):j + 1],
                                                         float(smooth[j]), tolerance)):
            continue
        low = float(ahead.min())
        drop = (np.log(max(smooth[j], 1e-12) / max(low, 1e-12)) if relative
                else float(smooth[j]) - low)
        if drop > score:
            best, score = j, drop
    return best


def _held(v: np.ndarray, level: float, tolerance: float) -> bool:
    """Whether the points ``v`` before a fall hold a ``level`` (the smoothed value it fell
    from) within ``tolerance``, the one most extreme point each way set aside when there are
    5: a level with one odd batch in it is still a level; a series flipping between its
    extremes is not, nor is a "level" two odd batches made."""
    rest = np.sort(v)[1:-1] if len(v) >= 5 else v
    return float(np.ptp(rest)) <= tolerance and abs(level - float(np.median(v))) <= tolerance


def _smooth(v: np.ndarray) -> np.ndarray:
    return rolling_median(v, 3)


def worst(incidents: Sequence[Incident]) -> Status:
    """The most severe status among ``incidents`` (OK when there are none)."""
    return max((i.severity for i in incidents), key=lambda s: s.rank, default=Status.OK)


def merge_status(*statuses: Status) -> Status:
    return max(statuses, key=lambda s: s.rank)


def describe(incidents: Sequence[Incident], limit: int = 2) -> str:
    """The incidents as one clause, the first ``limit`` in full."""
    shown = "; ".join(i.summary for i in incidents[:limit])
    more = len(incidents) - limit
    return shown + (f" (and {more} more)" if more > 0 else "")
