"""Format gaming: the reward rises because of the format term, not the answers.

What it detects
    A format-like reward component (format, xml, tag, think, structure in its name) carrying
    at least ``format_share`` (80%) of the total reward gain, while no correctness-like
    component (correct, accuracy, answer, check, ...) improves: the answers are traded for
    the format, or were never learned.

Why it matters
    When everything moves into the tags that earn the format reward, the curve says the run is
    learning while the task is not. Monitoring dashboards call it a format-share surge.

How it is detected
    Gains are late-window medians minus early-window medians (first and last 20% of logged
    points; the first 5% when a correctness term fell, as a format term learned in 10 steps
    has no gain left against the first fifth) of each component and of the total reward;
    components are weighted as the total weighs them (recovered by least squares when the
    total is logged). A correctness component counts as improved when its gain is
    significant (Mann-Kendall, Hamed-Rao corrected) or exceeds 10% of its range, declined
    when it significantly falls. Critical when the held-out
    score falls too, or when a correctness term never moved at all over ``long_log`` logged
    steps.

False positives
    Format is usually learned first: over a short log a format-only gain is a warning, not
    critical. Runs with a single reward function cannot be judged (skipped).

Remedies
    Gate the format reward on correctness (or multiply instead of add); lower its weight once
    it saturates; normalise each component separately before weighting; check the format
    regex: a too-lenient pattern is easy to game.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules.base import ONSET, Outcome, Param, Rule, Skip
from grpo_doctor.rules.points import finite_rows, head_tail, series, snap_to_logged
from grpo_doctor.rules.signals import component_role, components, sparse_improving
from grpo_doctor.store import Run
from grpo_doctor.text import fmt
from grpo_doctor.trends import (
    TrendTest,
    mann_kendall,
    rolling_median,
    shift_stands_out,
    step_noise,
    trend_onset,
)

RULE = Rule(
    "format_gaming", "Format gaming",
    needs="a format-like and a correctness-like reward component (format, xml, tag... "
    "and correct, accuracy, answer... in their names)",
    min_points=8, points="steps",  # a gain and its share need a trend
    params=(
        Param("format_share", 0.8, "share of the total reward gain carried by format components"),
        Param("min_gain", 0.1, "total reward gain (in units of its range) needed to judge"),
        Param("long_log", 100, "logged steps over which a correctness term that never moved "
              "is critical"),
    ),
)


def _gain(run: Run, col: str, head: float = 0.2) -> tuple[float, float, TrendTest]:
    steps, v = series(run, col)
    keep = np.isfinite(v)  # (a term infinite on every step holds no gain; h114)
    steps, v = steps[keep], v[keep]
    if len(v) < 2:
        return 0.0, 1e-12, mann_kendall(np.arange(3.0), np.zeros(3))
    a, b = head_tail(v, frac=0.2, head_frac=head)
    return b - a, float(np.ptp(v)) or 1e-12, mann_kendall(steps, v)


def _fell_from_best(run: Run, col: str) -> bool:
    """A task term that climbed to 0.5 or more (its best 5-step median, before the log's last
    fifth) and now sits at 60% of that or less: it fell, however its first fifth compares (a
    live check at step 130 had read 0.97 -> 0.41 as "did not improve (0.484 first and last
    fifth)", trial 51)."""
    _, v = series(run, col)
    if len(v) < 20:
        return False
    smooth = rolling_median(v, 5)
    cut = len(v) - len(v) // 5
    best = float(smooth[:cut].max())
    return best >= 0.5 and float(np.mean(v[-5:])) <= 0.6 * best


#: The head a gain is measured from when a correctness term fell: the first 5% of the log (at
#: least 3 points). A format term that saturated within the first fifth (the tags learned in
#: 20 steps while the answers went 0.36 -> 0) has no gain left against that fifth's median.
_EARLY_HEAD = 0.05


def _level_words(run: Run, col: str) -> str:
    """Where a term stood at the start and end of the log, as it can be checked: medians of
    the first and last fifths, or, for a term that scores on a few steps only (medians 0),
    how many and its means there."""
    _, v = series(run, col)
    a, b = head_tail(v, frac=0.2)
    k = max(1, len(v) // 5)
    if a == b and np.any(v != a):
        at = int(np.sum(v == a))
        # "0.0938 on all but 164 of 200" meant 36 (trial 48): said as what it is.
        where = (f"on all but {len(v) - at} of {len(v)} logged steps" if 2 * at >= len(v)
                 else f"the median of the first and of the last fifth, exactly that on {at} of "
                      f"{len(v)} logged steps")
        return (f"{fmt(a)} {where}; mean {fmt(float(np.mean(v[:k])))} over the first fifth, "
                f"{fmt(float(np.mean(v[-k:])))} over the last")
    return f"{fmt(a)} -> {fmt(b)}"


def _flat(run: Run, col: str, long_log: int) -> bool:
    """Whether a term logged on ``long_log`` steps or more ended where it began: its last
    fifth's median within the noise of its first's, and no significant trend either way."""
    steps, v = series(run, col)
    if len(v) < long_log:
        return False
    a, b = head_tail(v, frac=0.2)
    if a == b == float(v.min()):
        # A term at its floor on most steps that scores on a few: its medians cannot move,
        # and its few hits are too noisy to call flat (a real 7B run's answer check went
        # 0.083 -> 0.167 in mean over 120 steps, learning); sparse_improving judges it.
        return False
    k = max(3, len(v) // 5)
    noise = step_noise(v)
    moved = float(np.mean(v[-k:]) - np.mean(v[:k]))
    trend = mann_kendall(steps, v)
    return not shift_stands_out(b - a, noise, k) and not shift_stands_out(moved, noise, k) \
        and not (trend.increasing(0.05) or trend.decreasing(0.05))


def _varies(run: Run, col: str) -> bool:
    v = series(run, col)[1]
    return bool(len(v)) and float(np.ptp(v)) > 0


def component_weights(run: Run, cols: dict[str, str]) -> dict[str, float]:
    """The weight of each component in the total reward, recovered by least squares where the
    total is logged and the components explain it (R^2 >= 0.9); else 1 each (unknown)."""
    total = Metric.REWARD_MEAN.value
    ones = {n: 1.0 for n in cols}
    if not run.has(total):
        return ones
    frame = finite_rows(run, [total, *cols.values()])
    if len(frame) < 10:
        return ones
    x = np.column_stack([frame[c].to_numpy() for c in cols.values()] + [np.ones(len(frame))])
    y = frame[total].to_numpy()
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ coef
    r2 = 1 - float(resid @ resid) / max(float(((y - y.mean()) ** 2).sum()), 1e-12)
    if r2 < 0.9:
        return ones
    return {n: float(w) for n, w in zip(cols, coef[:-1])}


def _format_and_correctness(run: Run) -> tuple[dict[str, str], dict[str, str]]:
    comps = components(run)
    fmt_cols = {n: c for n, c in comps.items() if component_role(run, n) == "format"}
    cor_cols = {n: c for n, c in comps.items() if component_role(run, n) == "correctness"}
    if not fmt_cols or not cor_cols:
        raise Skip("needs a format-like and a correctness-like reward component")
    return fmt_cols, cor_cols


@RULE.reads_short_logs
def short_log(run: Run, p: Mapping[str, float]) -> None:
    """Nothing to tell from a short log; but a missing component is the first thing missing."""
    _format_and_correctness(run)


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    comps = components(run)
    fmt_cols, cor_cols = _format_and_correctness(run)
    total = Metric.REWARD_MEAN.value
    cor = {n: _gain(run, c) for n, c in cor_cols.items()}
    fell = {n for n, c in cor_cols.items() if _fell_from_best(run, c)}
    improved = [n for n, (g, rng, t) in cor.items() if n not in fell and (
        (g > 0 and t.increasing(0.05)) or g > 0.1 * rng or sparse_improving(run, cor_cols[n]))]
    declined = [n for n, (g, rng, t) in cor.items() if (g < 0 and t.decreasing(0.01))
                or n in fell]
    head = _EARLY_HEAD if declined and not improved else 0.2
    if run.has(total):
        total_gain, total_range, _ = _gain(run, total, head)
    else:
        gains = [_gain(run, c, head) for c in comps.values()]
        total_gain, total_range = sum(g[0] for g in gains), sum(g[1] for g in gains)
    # Components are logged unweighted; the total weighs them (format x3, say).
    weights = component_weights(run, comps)
    fmt_gain = sum(weights[n] * _gain(run, c, head)[0] for n, c in fmt_cols.items())
    evidence: dict[str, object] = {
        "total_gain": round(total_gain, 4), "format_gain_weighted": round(fmt_gain, 4),
        # A term that never varies has no weight the total can reveal (least squares gives it 0).
        "component_weights": {n: round(w, 3) if _varies(run, comps[n])
                              else "unknown (it never varies)" for n, w in weights.items()},
        "correctness_gain": {n: round(g, 4) for n, (g, _, _) in cor.items()},
    }
    share = fmt_gain / total_gain if total_gain > 0 else 0.0
    evidence["format_share_of_gain"] = round(share, 4)  # shown as the summary rounds it
    # A correctness term that never moved (the same value on every logged step): not one
    # answer was ever judged differently, so the task was never learned.
    pinned = [n for n, c in cor_cols.items() if not _varies(run, c)]
    evidence["correctness_never_moved"] = pinned
    # Or one that moved within its noise only over a long log: no better at the end than at
    # the start (trial 48: the prompt lost its second number, and the answer check sat at
    # chance, 0.094, for 200 steps while the format was learned).
    flat = [n for n, c in cor_cols.items() if n not in pinned and n not in improved
            and n not in declined and _flat(run, c, int(p["long_log"]))]
    evidence["correctness_flat"] = flat
    # The format gain must be a trend, not noise on a flat start (a short log whose task term
    # never moved would otherwise fire on the first wiggle).
    trending = any(_gain(run, c)[2].increasing(0.05) for c in fmt_cols.values()) or (
        run.has(total) and _gain(run, total)[2].increasing(0.01))
    if (total_gain <= p["min_gain"] * total_range or share < p["format_share"] or improved
            or not (declined or trending)):
        return Outcome(Status.OK, f"reward gain {fmt(total_gain)}, {share:.0%} from format; "
                       f"correctness improving: {', '.join(improved) or 'no'}",
                       evidence=evidence, key_metric=next(iter(fmt_cols.values())))
    name, col = max(fmt_cols.items(), key=lambda kv: _gain(run, kv[1])[0])
    steps, v = series(run, col)
    onset = snap_to_logged(run, col, trend_onset(steps, v, *head_tail(v, frac=0.2)))
    h_steps, h = series(run, Metric.HELDOUT_SCORE.value)
    heldout_down = len(h) >= 5 and mann_kendall(h_steps, h).decreasing(0.05)
    long_dead = (bool(pinned) and len(run.steps) >= p["long_log"]) or bool(flat)
    status = Status.CRITICAL if heldout_down or long_dead else Status.WARNING
    evidence["threshold"] = (f"format share of the gain >= {p['format_share']:.0%} with no "
                             "correctness term improving")
    if declined:
        evidence["farmed_while_task_fell"] = name  # what root_cause reads: a reward exploited
    # Pinned above 0 it paid every answer alike, so none was ever judged wrong either (trial
    # 55: an empty answer key that every completion "contains" read "no answer was ever
    # judged right" beside a term at 1 on every step).
    held = float(series(run, cor_cols[pinned[0]])[1][0]) if pinned else 0.0
    # Steps the reward was logged on and the pinned term not (NaN, or a gap in an export): no
    # completion scored at all there (a function
    # returning None, a grader timing out; trial 82: 149 of 200 steps, read "no answer was
    # ever judged right (a parser that never matches)", the NaN only in a last note).
    scored = len(series(run, cor_cols[pinned[0]])[1]) if pinned else 0
    unscored = max(0, len(series(run, Metric.REWARD_MEAN.value)[1]) - scored) if pinned else 0
    if pinned and len(gaps := np.diff(series(run, cor_cols[pinned[0]])[0])) and float(
            np.ptp(gaps)) == 0:
        unscored = 0  # logged at a cadence of its own (every k-th step), not left unscored
    judged = ("every answer paid the same, right or wrong" if held > 0 else
              "no answer was ever judged right")
    if declined:
        task = f"while {', '.join(declined)} fell"
    elif pinned and unscored >= scored:
        task = (f"while {pinned[0]} scored nothing on {unscored:,} of {unscored + scored:,} "
                f"logged steps (NaN: no completion scored) and {fmt(held)} on the others")
    elif pinned:
        task = (f"while {', '.join(pinned)} never moved (the same value on all "
                f"{len(series(run, cor_cols[pinned[0]])[1])} logged steps: {judged})")
    elif flat:
        task = "while " + ", ".join(
            f"{n} never left its level ({_level_words(run, cor_cols[n])}, over "
            f"{len(series(run, cor_cols[n])[1])} logged steps: the task was not learned)"
            for n in flat)
    else:
        task = "while " + ", ".join(f"{n} did not improve ({_level_words(run, c)})"
                                    for n, c in cor_cols.items())
    # The terms that carried the gain: a format term that never moved (0, or a fixed
    # penalty, on every step) gained nothing and is not named as a source of it.
    gained = [n for n, c in fmt_cols.items() if _varies(run, c) and _gain(run, c)[0] > 0]
    # A format term weighed below 0 gains the total by falling: the reward pays the policy to
    # drop the format (a sign flipped), the opposite of gaming it.
    dropped = [n for n, c in fmt_cols.items() if _varies(run, c) and weights[n] < 0
               and _gain(run, c)[0] < 0]
    sources = gained + [f"{n} falling ({_level_words(run, fmt_cols[n])}) at a negative weight "
                        f"({fmt(weights[n])}): the reward pays the policy to drop it"
                        for n in dropped]
    # Over 100%: the format terms gained more than the total (another term fell).
    part = "all" if share >= 0.995 else f"{share:.0%}"
    against = "the first" if head == 0.2 else "its first points"
    summary = (f"format gaming: {part} of the reward gain (+{fmt(total_gain)}, the median of the "
               f"last fifth of the log against {against}) comes from "
               f"{', '.join(sources or fmt_cols)} {task}"
               + (" and the held-out score fell" if heldout_down else "")
               + f", from step {ONSET}")
    remedies = (
        f"check {pinned[0]} on a few completions: it returned no score (None, logged NaN) on "
        f"{unscored:,} of {unscored + scored:,} logged steps and {fmt(held)} on the others, so "
        "it judged next to nothing (a grader that times out or fails, a guard that skips "
        "completions of some length or form); the reward the run gained is format only"
        if pinned and unscored >= scored else
        f"inspect completions against {pinned[0]}: it scored every one {fmt(held)} on every "
        "step, so it judges nothing (an empty or wrong answer field, a match that always "
        "passes, an exception scored as a pass); the reward the run gained is format only"
        if pinned and held > 0 else
        f"inspect completions against {pinned[0]}: it never moved, so no answer was ever "
        "judged right (a parser that never matches, or a task too hard); the reward the run "
        "gained is format only" if pinned else
        f"inspect a few prompts and completions against {flat[0]}: it never left its level "
        "while the format was learned, so the task is not being learned (a prompt or dataset "
        "that does not carry what the answer needs, a checker that rejects right answers, or "
        "a task too hard)" if flat else None,
        f"make {dropped[0]}'s weight positive (it is {fmt(weights[dropped[0]])}): a "
        "negative weight pays the policy to avoid the format" if dropped else
        # Farmed while the task fell, at a weight the config gives it: the weight first
        # (trial 51: a repetition bonus at 20 read "lower its weight" as item 3).
        f"{name}'s weight {fmt(weights[name])} -> 0 (the policy farms it while "
        f"{', '.join(declined)} fell), or gate it on correctness (multiply instead of add)"
        if declined and isinstance(weights.get(name), (int, float)) and weights[name] > 0 else
        f"gate {name} on correctness (multiply instead of add), or lower its weight",
        "normalise each reward component separately before weighting",
        "check the format pattern: a lenient regex is easy to satisfy without solving",
    )
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=remedies,
                   key_metric=col)
