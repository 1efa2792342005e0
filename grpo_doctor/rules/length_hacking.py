"""Length hacking: completion length running away, pinned at the cap, or collapsing.

What it detects
    Three shapes of the completion length. Pinned: more than ``truncation`` (50%) of
    completions truncated at the length cap over recent steps (or the mean length sitting at the
    largest length logged). Drift: a steady significant rise of more than ``growth`` (x1.5)
    that the held-out score or the reward does not pay for. Collapse: the length falling to
    under ``collapse_ratio`` (30%) of its start, towards a few tokens (the cost hack).

Why it matters
    Truncated completions get no final answer and a noisy reward; a reward model that prefers
    longer answers is exploited by padding; a token-cost reward is exploited by saying nothing.
    All three look like learning on the reward curve.

How it is detected
    Late-window medians (the last 20% of logged points) against the first; a Mann-Kendall
    trend (Hamed-Rao corrected) for drift. A collapse is a level: the late median (last 10%)
    at or below ``collapse_ratio`` of the first, no trend test asked. Critical when pinned for
    most steps (``truncation_critical``), when the length collapsed to 5 tokens or fewer, or
    when a pile-up or a collapse comes with a reward that is not improving (over 30 or more
    logged lengths).

False positives
    Longer reasoning is what RL on reasoning tasks is supposed to produce: growth alone, with
    the reward or held-out score rising with it and nothing truncated, is not reported.

Remedies
    Overlong shaping (DAPO: soft penalty over the last part of the budget, or filter truncated
    samples); a larger max response length if the task needs it; length-normalised rewards;
    for the cost hack, a floor on the length reward or a correctness gate before it.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import incidents as inc
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import Outcome, Param, Rule, onset_text
from grpo_doctor.rules.plot import Plot, Threshold, ladder
from grpo_doctor.rules.points import aligned, head_tail, late_points, series, snap_to_logged
from grpo_doctor.rules.signals import (
    component_role,
    components,
    configured_weight,
    flipped_terms,
    length_term,
    mean_gain,
    rank_correlation,
    reward_progress,
    rising,
    task_progress,
)
from grpo_doctor.store import Run
from grpo_doctor.text import fmt
from grpo_doctor.trends import (
    decisive_short_fall,
    level_shift_onset,
    mann_kendall,
    step_noise,
    trend_onset,
)

LEN = Metric.RESPONSE_LENGTH_MEAN.value
LEN_MAX = Metric.RESPONSE_LENGTH_MAX.value
TRUNC = Metric.TRUNCATION_RATIO.value
HELDOUT = Metric.HELDOUT_SCORE.value
REWARD = Metric.REWARD_MEAN.value

#: Share of completions cut at the cap over the first logs from which the answers' length is
#: unknown: the budget is raised 4x, not 2x (a budget of 2 tokens doubled still cut 5-token
#: answers).
ALL_CUT = 0.95


def budget_factor(early_share: float) -> float:
    """How many times to raise a budget that cut ``early_share`` of the first logs' completions:
    said from the first logs, which a growing log does not move (a live watch had said "7 ->
    28", then "7 -> 14", then "7 -> 28" again as the late share crossed 95%; trial 77)."""
    return 4.0 if early_share >= ALL_CUT else 2.0


RULE = Rule(
    "length_hacking", "Length hacking (runaway, pinned or collapsing length)",
    requires_any=((LEN,), (TRUNC,)), min_points=3,
    points="response lengths or truncation shares",
    plot=Plot(metrics=(LEN, TRUNC, REWARD)),
    params=(
        Param("truncation", 0.5, "share of completions truncated that counts as pinned"),
        Param("truncation_critical", 0.8, "share truncated that is critical"),
        Param("budget_share", 0.3, "mean share truncated over the whole run that, with the "
              "cut steps scoring lower, says the budget is too small"),
        Param("growth", 1.5, "late/early length ratio that counts as drift"),
        Param("collapse_ratio", 0.3, "late/early length ratio that counts as collapse"),
    ),
)


#: Share truncated from which the mean length is the cap itself.
_ALL_CUT = 0.95


def _pinned(run: Run, p) -> dict | None:
    steps, t = series(run, TRUNC)
    if len(t) >= 3:  # a share per logged step: meaningful even in short logs
        k = late_points(len(t), min_n=2 if len(t) < 10 else 5)
        late = float(np.median(t[-k:]))
        if late >= p["truncation"] and _short_of_budget(run, steps[t >= p["truncation"]]):
            # "Truncated" completions far shorter than the budget were not cut by it: the
            # trainer counts a completion that ended without the end-of-sequence token (a
            # stop string, an end token it does not mark) as clipped (trial 75: 95% "truncated
            # at the cap" on 4-token completions under a 12-token budget; "raise the cap").
            return None
        if late >= p["truncation"]:
            # Already piled up at the start, the onset is the first step at the line (not
            # the first logged one when that one was still below it).
            early = float(np.median(t[:k]))
            start = level_shift_onset(steps, t)[0] if early < p["truncation"] \
                else steps[int(np.argmax(t >= p["truncation"]))]
            # Cut at the cap from the first logs on: the budget, not the training, is wrong.
            from_start = early >= p["truncation"] and t[0] >= p["truncation"] and (
                steps[0] <= 20)
            cap = float(series(run, LEN_MAX)[1].max()) if run.has(LEN_MAX) else None
            if cap is None and min(early, late) >= _ALL_CUT and run.has(LEN):
                # Every completion cut: the mean length is the cap.
                cap = float(series(run, LEN)[1].max())
            # Said with both shares when it began there ("58% ... from the first logged
            # step" read as 58% at the start, where 96% were cut).
            return {"shape": (f"{early:.0%} of completions truncated at the cap from the first "
                              f"logs, {late:.0%} late in the run") if from_start else
                             f"{late:.0%} of completions truncated at the cap",
                    "share": late, "onset": snap_to_logged(run, TRUNC, start), "metric": TRUNC,
                    "from_start": from_start, "early_share": early, "cap": cap,
                    "cut": f"{early:.0%} of completions were cut at the cap over the first "
                           f"logs ({late:.0%} late in the run)"}
        return None
    # No truncation metric: the mean length sitting at the largest length ever logged.
    steps, m = series(run, LEN)
    if len(m) < 20:  # a cap inferred from the lengths themselves needs some history
        return None
    cap = max(float(m.max()), float(series(run, LEN_MAX)[1].max()) if run.has(LEN_MAX) else 0)
    # Every completion truncated makes the mean equal the cap: the same value, repeated.
    at_cap = m >= 0.999 * cap
    k = late_points(len(m))
    share = float(at_cap[-k:].mean())
    if share >= p["truncation"] and at_cap.sum() >= 3:
        # Every completion cut at the first logged step already: the budget is too small.
        from_start = bool(at_cap[0]) and steps[0] <= 20
        # (from the first logged step: the summary's "from step N" names it)
        return {"shape": f"mean length at the cap ({fmt(cap)} tokens) on {share:.0%} of recent "
                         "steps",
                "share": share, "onset": int(steps[np.argmax(at_cap)]), "metric": LEN,
                "from_start": from_start, "early_share": float(at_cap.mean()), "cap": cap,
                "per_step": True,
                "cut": f"every completion was cut at the cap on {at_cap.mean():.0%} of logged "
                       "steps, the first one among them"}
    return None


def _short_of_budget(run: Run, cut_steps: np.ndarray) -> bool:
    """Whether the configured completion budget is known and, on the steps that logged most
    completions "truncated", the longest completion stayed under half of it and varied (a
    hard cap the config does not name, vLLM's max_tokens, cuts every step at one length:
    that is truncation all the same; h105). Needs the longest completion logged."""
    budget, _ = knobs.current(run, knobs.MAX_LENGTH)
    if not run.has(LEN_MAX) or budget is None or budget <= 0:
        return False
    s, every = series(run, LEN_MAX)
    longest = every[np.isin(s, cut_steps)]
    # A cap cuts at one length, the longest the run ever logged; completions that end
    # without the end token end where they end (3 tokens here, 6 on another step).
    return len(longest) >= 3 and float(np.max(longest)) < 0.5 * budget and (
        float(np.max(longest)) >= 1.2 * float(np.min(longest))
        or float(np.max(longest)) < float(np.max(every)))


def _grew_into_cap(run: Run, pinned: dict) -> bool:
    """Whether the completions grew into the cap just before their pile-up there: a length
    under 60% of the cap within the 10 logged points before its onset. A whole-run trend
    misses it where the pile-up ends a log whose length was steady (rho1.00: 267 tokens at
    step 130, the 512 cap at 160, read "completions reach the cap without having grown
    there")."""
    cap, onset = pinned.get("cap"), pinned.get("onset")
    if not cap or onset is None:
        return False
    s, m = series(run, LEN)
    before = m[s < float(onset)][-10:]
    return len(before) >= 3 and float(np.min(before)) < 0.6 * float(cap)


def _jump_to_cap(run: Run) -> tuple[float, float, int] | None:
    """(length before, length after, step) when the mean completion length went from a quarter
    of the cap or less to 90% of it or more between two consecutive logged points: one update
    sent every completion to the cap (a broken generation), not a slow pile-up."""
    steps, m = series(run, LEN)
    cap = float(series(run, LEN_MAX)[1].max()) if run.has(LEN_MAX) else float(m.max(initial=0))
    if len(m) < 2 or cap <= 0:
        return None
    for i in range(1, len(m)):
        if m[i - 1] <= 0.25 * cap and m[i] >= 0.9 * cap:
            return float(m[i - 1]), float(m[i]), int(steps[i])
    return None


def _budget_cut(run: Run, p) -> dict | None:
    """Not pinned, but the budget cuts answers off all along: over the whole log at least
    ``budget_share`` of completions truncated on average, half or more on a third of the logged
    steps, and the steps with more truncated scored lower (rank correlation of the truncated
    share with the reward at most -0.5): the cut costs reward, so the budget is too small."""
    steps, t = series(run, TRUNC)
    if len(t) < 10 or float(t.mean()) < p["budget_share"]:
        return None
    heavy = t >= p["truncation"]
    if heavy.sum() < max(3, len(t) / 3):
        return None
    _, t_at, r_at = aligned(run, TRUNC, REWARD)
    if len(t_at) < 10:
        return None
    rho = rank_correlation(t_at, r_at)  # None when either is flat
    if rho is None or rho > -0.5:
        return None
    low = t_at <= np.quantile(t_at, 0.25)
    cut_reward = float(r_at[t_at >= p["truncation"]].mean())
    whole_reward = float(r_at[low].mean())
    cap = float(series(run, LEN_MAX)[1].max()) if run.has(LEN_MAX) else None
    return {"shape": f"{t.mean():.0%} of completions truncated at the cap over the run (half "
                     f"or more on {int(heavy.sum())} of {len(t)} logged steps), and the steps "
                     f"with more cut scored lower (reward {fmt(cut_reward)} against "
                     f"{fmt(whole_reward)})",
            "share": float(t.mean()), "onset": int(steps[int(np.argmax(heavy))]),
            "metric": TRUNC, "budget": True, "cap": cap, "rank_correlation": round(rho, 2),
            "cut": f"{t.mean():.0%} of completions were cut at the cap over the run, and "
                   "cut steps scored lower"}


@RULE.draws
def lines(p: Mapping[str, float], evidence: Mapping[str, object]
          ) -> dict[str, tuple[Threshold, ...]]:
    return {TRUNC: ladder([(p["truncation"], f"pinned {p['truncation']:.0%}", "warning"),
                           (p["truncation_critical"], f"critical {p['truncation_critical']:.0%}",
                            "critical")], True)}


@RULE.reads_short_logs
def short_log(run: Run, p: Mapping[str, float]) -> Outcome | None:
    """One or two truncation shares can show the pile-up; they show no health."""
    out = detect(run, p) if run.has(TRUNC) else None
    return out if out is not None and out.fired else None


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, m = series(run, LEN)
    shapes: list[dict] = []
    pinned = _pinned(run, p)
    budget = None if pinned else _budget_cut(run, p)
    if pinned is not None:
        shapes.append(pinned)
    elif budget is not None:
        shapes.append(budget)
    if len(m) >= 3:
        long_enough = len(m) >= 8
        # A short log's start is its first point (a median would mix in the fall itself).
        l0, lc = head_tail(m) if long_enough else (float(m[0]), float(np.median(m[-2:])))
        trend = mann_kendall(steps, m)
        # A length that ran to the cap in the first few steps has no rise left against the
        # first tenth of the log ("9.44 -> 9.89" where it went 6 -> 10 by step 12): the
        # drift is measured from its first points too.
        # A rise done in a dozen steps and held since is no trend over the whole log, but a
        # level shift: one many times the step-to-step noise, already done within the first
        # tenth of the log and held to its end, counts too (a late rise after a dip does not).
        g0 = min(l0, head_tail(m, head_frac=0.02)[0]) if long_enough else l0
        shift = 6 * step_noise(m) if long_enough else float("inf")
        rose = trend.increasing(0.01) or (l0 - g0 >= shift and lc - g0 >= shift)
        if long_enough and g0 > 0 and lc / g0 >= p["growth"] and rose:
            l0 = g0
            knot = trend_onset(steps, m, l0, lc)
            progress = task_progress(run, knot)
            if progress.logged and not progress.improving:
                shapes.append({"shape": f"length drifted x{lc / l0:.1f} ({fmt(l0)} -> "
                                        f"{fmt(lc)} tokens) without "
                                        + _task_signal(run) + " to show for it",
                               "onset": snap_to_logged(run, LEN, knot), "metric": LEN})
        # A level against the start, with no trend test: a length that stepped down to a
        # few tokens right after the first logs is no less collapsed for having no trend.
        collapsed = (l0 > 0 and lc / l0 <= p["collapse_ratio"]
                     if long_enough else decisive_short_fall(m, p["collapse_ratio"]))
        if collapsed:
            knot = trend_onset(steps, m, l0, lc) if long_enough else float(steps[0])
            shapes.append({"shape": f"length collapsed to {lc / l0:.0%} of its start "
                                    f"({fmt(l0)} -> {fmt(lc)} tokens)",
                           "onset": snap_to_logged(run, LEN, knot), "metric": LEN,
                           "collapse": True})
    collapses = [i for i in inc.crashes(run, LEN, "mean completion length", share=0.0,
                                        within=5, of_level=1 - p["collapse_ratio"])
                 if i.recovered_step is not None]  # one that stayed down is a shape above
    if not shapes and not collapses:
        text = (f"length {fmt(head_tail(m)[0])} -> {fmt(head_tail(m)[1])} tokens"
                if len(m) >= 2 else "length steady")
        _, cut = series(run, TRUNC)
        # Said as the log has it: "no pile-up" beside a share that rose to 0.3 (and past half
        # on many steps) reads as none cut.
        pile = (f", truncated share {fmt(head_tail(cut)[0])} -> {fmt(head_tail(cut)[1])} "
                f"(a pile-up is {p['truncation']:.0%} or more held late)"
                if len(cut) >= 2 and float(np.max(cut)) >= 0.1 else ", no truncation pile-up")
        return Outcome(Status.OK, text + pile, key_metric=LEN if len(m) else TRUNC)
    if not shapes:
        first = collapses[0]
        summary = f"length collapse the run came back from: {inc.describe(collapses)}"
        return Outcome(Status.WARNING, summary, onset_step=first.step,
                       evidence={"threshold": f"length below {p['collapse_ratio']:.0%} of its "
                                              "usual level within a few logged points"},
                       remedies=_collapse_remedies(), key_metric=LEN,
                       incidents=tuple(collapses))
    onset = min(int(s["onset"]) for s in shapes)
    progress = reward_progress(run, float(onset))
    stalled = progress.logged and not progress.improving and len(m) >= 30
    severe = (pinned is not None and pinned["share"] >= p["truncation_critical"]) or any(
        s.get("collapse") and m[-1] <= 5 for s in shapes)
    status = Status.CRITICAL if severe or (stalled and len(shapes) >= 1 and pinned) or (
        stalled and any(s.get("collapse") for s in shapes)) else Status.WARNING
    evidence: dict[str, object] = {"shapes": [{k: v for k, v in s.items()
                            if k in ("shape", "share", "onset", "metric")} for s in shapes],
                "threshold": "; ".join(_threshold(s, p) for s in shapes),
                "reward_improving": progress.improving if progress.logged else None}
    why = f", {progress.stalled_words()}" if stalled else ""
    earliest = min(onset, collapses[0].step) if collapses else onset  # an earlier collapse
    summary = (f"length hacking: {'; '.join(s['shape'] for s in shapes)}, from step "
               f"{onset_text(onset, earliest)}{why}")
    term: str | None = None  # a reward term paying for the length, when a remedy names it
    if pinned and pinned.get("from_start"):
        share = max(float(pinned["share"]), float(pinned["early_share"]))
        # (As the evidence holds it, which the first action reads: both say one factor.)
        early = round(float(pinned["early_share"]), 3)
        evidence.update({"truncated_from_start": True, "truncated_share": round(share, 3),
                         "truncated_early": early,
                         "cap": pinned["cap"], "truncated_text": pinned["cut"]})
        remedies: tuple[str, ...] = (
            knobs.scale(run, knobs.MAX_LENGTH, budget_factor(early),
                        why=f"{pinned['cut']}: the budget is too small for the task"),
            "once answers fit: overlong shaping (a soft penalty near the budget); dropping "
            "truncated samples now would drop " + (
                f"the whole batch on {float(pinned['early_share']):.0%} of logged steps"
                if pinned.get("per_step") else
                f"{share:.0%} of the batch"),
            # (No "check the reward for a length preference": at the cap from the first log,
            # no length was learned; it read beside a 6-token budget, trial 63.)
        )
    elif budget:
        evidence.update({"truncated_share": round(float(budget["share"]), 3),
                         "cap": budget["cap"], "truncated_text": budget["cut"],
                         "rank_correlation": budget["rank_correlation"]})
        remedies = (
            knobs.scale(run, knobs.MAX_LENGTH, 2.0,
                        why=f"{budget['cut']}: the budget cuts answers off"),
            "then overlong shaping (a soft penalty near the budget) so length grows only when "
            "it pays",
            "check the reward for a length preference (correlate reward with length)",
        )
    elif pinned and (jump := _jump_to_cap(run)) is not None:
        before, after, at = jump
        evidence["jump_to_cap"] = {"from": before, "to": after, "step": at}
        remedies = (
            f"look at the completions of step {at:,}: they went from {fmt(before)} tokens to "
            f"the cap ({fmt(after)}) in one logged step, a broken generation (repetition, "
            "no stop token) more than a budget or a length reward; then check that update's "
            "gradient norm and lower the learning rate if it spiked",
            "overlong shaping or a larger budget only once completions end on their own",
        )
    elif pinned and not rising(run, LEN) and not _grew_into_cap(run, pinned):
        # At the cap without having grown there (OpenEnv's 2048-game code at 432-586 of a
        # 586-token budget from its first log): answers that do not fit, not a length the
        # policy learned to pad; shaping would penalise the answers themselves.
        remedies = (
            knobs.scale(run, knobs.MAX_LENGTH, 2.0,
                        why="completions reach the cap without having grown there: the "
                            "answers may not fit"),
            "overlong shaping (a soft penalty near the budget) once answers fit",
        )
    elif pinned and (term := _length_term_paid(run, shorter=False)) is not None:
        # Grown to the cap with a reward term paying for length: the term is the hack, and a
        # larger budget would only feed it (trial 44, a bonus per character).
        remedies = (
            f"cap or drop the {term}: it pays for length itself (completions {fmt(l0)} -> "
            f"{fmt(lc)} tokens, now at the cap); gate it on correctness",
            "then overlong shaping: soft penalty near the length budget, or drop truncated "
            "samples (DAPO)",
        )
    elif pinned and flipped_terms(run):
        # Grown to the cap while the config charges a format or correctness term (its sign is
        # the root cause's fix): running on past the answer escapes the charge, and a larger
        # budget would give it more room (trial 45, format_reward weighed -0.5).
        remedies = (
            "overlong shaping: soft penalty near the length budget, or drop truncated samples "
            "(DAPO)",
            "check the reward for a length preference (correlate reward with length)",
        )
    elif pinned:
        remedies = (
            "overlong shaping: soft penalty near the length budget, or drop truncated samples "
            "(DAPO)",
            knobs.scale(run, knobs.MAX_LENGTH, 2.0, why="if the task needs longer answers"),
            "check the reward for a length preference (correlate reward with length)",
        )
    elif any(s.get("collapse") for s in shapes):
        term = _length_term_paid(run, shorter=True)
        remedies = _collapse_remedies() if term is None else (
            f"cut the {term}: the policy shortens its answers to escape it (completions "
            f"{fmt(l0)} -> {fmt(lc)} tokens); gate it on correctness, so that a short wrong "
            "answer earns nothing", *_collapse_remedies()[1:])
    else:
        term = _length_term_paid(run, shorter=False)
        remedies = (
            "length-normalise the reward; gate any length/cost reward on correctness",
            "check the reward for a length preference (correlate reward with length)",
        ) if term is None else (
            f"cap or drop the {term}: it pays for length itself (completions "
            f"{fmt(l0)} -> {fmt(lc)} tokens); gate it on correctness",
            "check the reward for a length preference (correlate reward with length)")
    if collapses:
        onset = earliest
        summary += f"; earlier: {inc.describe(collapses, 1)}"
    if term is not None:
        # The reward pays for the length: what the root cause reads (a gradient spike amid the
        # hack is its consequence, not its cause; trial 49).
        evidence["length_term_paid"] = True
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=remedies,
                   key_metric=str(shapes[0]["metric"]), incidents=tuple(collapses))


def _length_term_paid(run: Run, *, shorter: bool) -> str | None:
    """'length_reward term (weight -8 in the config; 0.51 -> 0.13)': the logged reward term
    named for length whose weighted mean rose as the completions moved (``shorter``: fell):
    the policy is paid by it for the length it took. A term logged as its raw value (TRL logs
    each function's output before its weight) counts with the weight's sign the config gives
    it. None when there is none."""
    for name, col in components(run).items():
        if not (length_term(name) or _tracks_length(run, name, col)):
            continue
        weight = configured_weight(run, name)
        _, v = series(run, col)
        sign = -1.0 if weight is not None and weight < 0 else 1.0
        if sign * mean_gain(run, col) <= 0.1 * (float(np.ptp(v)) or 1.0):
            continue
        start, end = head_tail(v)
        said = f"weight {fmt(weight)} in the config; " if weight is not None else ""
        return f"{name} term ({said}it went {fmt(start)} -> {fmt(end)})"
    return None


#: A reward term whose logged values rank with the completion length this closely pays for
#: length whatever its name (trial 49: a "thoroughness" bonus per character, weight 20).
_TRACKS_LENGTH = 0.9


def _tracks_length(run: Run, name: str, col: str) -> bool:
    """Whether a term that is neither the task's check nor the format's moves with the
    completion length, step by step, over 20 or more logged points."""
    if component_role(run, name) != "other":
        return False
    _, v, length = aligned(run, col, LEN)
    if len(v) < 20:
        return False
    # Over the whole log, or over its last quarter where the term began to pay (trial 75: a
    # "completeness" bonus for any completion over 12 characters, 0 for 250 steps, then
    # rising with the length: 0.80 over the log, 0.99 over its end).
    k = max(20, len(v) // 4)
    # (The last quarter only for a term that had not paid before it: a task term improving
    # all along with longer answers is no length payer; h105.)
    late = float(np.ptp(v[:-k])) <= 0.1 * float(np.ptp(v)) if len(v) > k else False
    for a, b in ((v, length), *(((v[-k:], length[-k:]),) if late else ())):
        if float(np.ptp(a)) > 0:
            rho = rank_correlation(a, b)
            if rho is not None and rho >= _TRACKS_LENGTH:
                return True
    return False


def _task_signal(run: Run) -> str:
    """What ``task_progress`` judged: the held-out score, the correctness-like reward terms,
    else the reward."""
    if len(series(run, HELDOUT)[1]) >= 10:  # as many as a progress test needs
        return "held-out gains"
    if any(component_role(run, n) == "correctness" and len(series(run, col)[1]) >= 10
           for n, col in components(run).items()):
        return "correctness gains"
    return "reward"


def _threshold(shape: dict, p: Mapping[str, float]) -> str:
    """The threshold a shape crossed (not what was observed: the summary says that)."""
    if shape.get("collapse"):
        return f"length <= {p['collapse_ratio']:.0%} of its start"
    if shape.get("budget"):
        return (f"mean truncated share >= {p['budget_share']:.0%} over the run, the cut steps "
                "scoring lower")
    if "share" in shape:
        return f"truncated share >= {p['truncation']:.0%}"
    return f"length >= x{p['growth']:g} its start without gains"


def _collapse_remedies() -> tuple[str, ...]:
    return (
        # The fix is said outside parentheses: the audit's one-line action drops asides.
        "look at the short completions: if they are the bare answer, the reward pays it "
        "without the reasoning: make the format/think term count, gate the answer reward on "
        "it; else a length or cost reward the policy learned to game, or an early stop token",
        "gate any length/cost reward on correctness; length-normalise the reward",
        "check the reward for a length preference (correlate reward with length)",
    )
