"""Advantage collapse: groups whose rewards are all equal teach nothing.

What it detects
    The share of prompt groups with zero reward variance (all-correct or all-wrong) staying
    above ``warn_fraction`` (the standard alarm: effective group ratio below 50%), read from
    the zero-std fraction when logged (TRL frac_reward_zero_std, NeMo-RL pct_mixed, ROLL
    mixed_groups_ratio, as 1 - effective ratio), else from the steps whose reward std is zero.
    Also the multi-reward form: a reward component that never moves (always wrong, say) gives
    no signal however the total varies; critical when it is the correctness term (the task's
    own reward never fired) over ``task_patience`` (100) logged steps or with most groups
    equal, a warning for another term or a shorter log.

Why it matters
    GRPO's advantage is (r - mean)/std within a group: a group of equal rewards contributes
    zero gradient. When most groups are like that the batch is effectively tiny, the gradient
    is noise, and training stalls or drifts.

How it is detected
    The late level (median of the last 20% of logged points, at most 50) of the zero-std
    fraction, or the share of zero-reward-std steps over the same window, against
    ``warn_fraction`` and ``critical_fraction``. Corroboration (reward not improving, entropy
    falling) raises a warning to critical on a log of 40 points or more; the correctness term
    never moving does so on any log. The onset is a mean-shift change point on the signal, where
    the high-collapse regime began.

False positives
    Small groups (G = 4) leave many groups equal by chance, and a policy solving its prompts
    makes them all-correct: while the reward still rises (and the share is below
    ``critical_fraction``) this is reported as convergence (ok). Where the log can prove groups
    all-correct (the all-correct fraction when logged, else a 0/1 correctness reward: with a
    mean r and an equal share z, at least r - (1 - z) of the groups are all-correct), only the
    equal groups not proven solved count: a solved task is ok, and the onset is where the
    unsolved ones took over.

Remedies
    Dynamic sampling (DAPO: drop all-0/all-1 groups and refill the batch); larger G (8 -> 16 ->
    32); curriculum from easier prompts / filter solved ones; normalise each reward component
    separately before weighting; check reward sparsity; raise the rollout temperature.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric, is_reward_component
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import ONSET, Outcome, Param, Rule, Skip
from grpo_doctor.rules.plot import ZERO_SHARE, Plot, Threshold, ZeroShare, ladder
from grpo_doctor.rules.points import (
    aligned,
    head_tail,
    late_points,
    series,
    snap_to_logged,
)
from grpo_doctor.rules.signals import (
    SOLVED_HELDOUT,
    component_role,
    components,
    heldout_solved,
    learning,
    level_now,
    pinned_terms,
    reward_at_best,
    reward_progress,
    scored_run,
    scorer_stopped,
    unsolved_equal_share,
    zero_one_score,
)
from grpo_doctor.store import SFT_BEFORE, Run
from grpo_doctor.text import agree, fmt, step_text
from grpo_doctor.trends import level_shift_onset, mann_kendall, rolling_median

ZSF = Metric.ZERO_STD_FRACTION.value
RSTD = Metric.REWARD_STD.value
GSTD = Metric.GROUP_REWARD_STD.value
REWARD = Metric.REWARD_MEAN.value
RMAX = Metric.REWARD_MAX.value
RMIN = Metric.REWARD_MIN.value
#: The signal read from the batch's reward max and min (verl logs no reward std): a lower bound
#: of the equal groups' share, 1 only where every sample of the step scored the same.
ALL_ALIKE = "share of steps where every sample scored the same (reward max = min)"

RULE = Rule(
    "advantage_collapse", "Advantage collapse (zero-variance groups)",
    requires_any=((ZSF,), (GSTD,), (RSTD,), (RMAX, RMIN)),
    plot=Plot(zero_share=ZeroShare(of=(RSTD, GSTD), eps="zero_std_eps",
                                   window="late_fraction")),
    params=(
        Param("warn_fraction", 0.5, "zero-std share of groups (or steps) that warns"),
        Param("critical_fraction", 0.8, "zero-std share that is critical on its own"),
        Param("late_fraction", 0.2, "share of the log, at its end, the level is read over"),
        Param("zero_std_eps", 1e-6, "a reward std at or below this counts as zero"),
        Param("min_component_steps", 10, "logged steps before a never-moving component counts"),
        Param("task_patience", 100, "logged steps the task's own reward may take to first fire "
              "while other terms carry the signal (sparse task rewards often take ~100): "
              "a warning before, critical after"),
    ),
)


def _signal(run: Run, p: Mapping[str, float]) -> tuple[str, np.ndarray, np.ndarray, str]:
    """(metric, steps, per-step zero-std share, description) from the best signal logged."""
    steps, z = series(run, ZSF)
    if len(z) >= 3:
        return ZSF, steps, np.clip(z, 0, 1), "zero-std group fraction"
    for metric in (GSTD, RSTD):
        steps, s = series(run, metric)
        if len(s) >= 4:
            return metric, steps, (np.abs(s) <= p["zero_std_eps"]).astype(float), (
                f"share of steps with {metric} = 0")
    steps, top, low = aligned(run, RMAX, RMIN)
    if len(steps) >= 3:
        return RMAX, steps, (np.abs(top - low) <= p["zero_std_eps"]).astype(float), ALL_ALIKE
    raise Skip("needs zero_std_fraction or reward_std with at least 10 logged values")


def _out_of_reach(run: Run) -> tuple[float, str, float] | None:
    """The level now of a score bounded in [0, 1] (the held-out score, else a correctness
    component, else the reward) when it sits at 0.1 or below: with most groups equal, they are
    all-wrong groups (an all-right group scores near 1): (that mean, the score's name, its
    best smoothed level over the run). None otherwise."""
    held = ([("the held-out score", Metric.HELDOUT_SCORE.value)]
            if run.has(Metric.HELDOUT_SCORE.value) else [])
    cols = held + ([(name, col) for name, col in components(run).items()
                    if component_role(run, name) == "correctness"] or [("the reward", REWARD)])
    for name, col in cols:
        _, v = series(run, col)
        if len(v) < 5 or v.min() < 0 or v.max() > 1:
            continue
        late = level_now(v)  # the reward "now" as the other findings quote it
        if late <= 0.1:
            return late, name, float(np.max(rolling_median(v, 5)))
    return None


#: The late score (of 1) at which a share of all-correct groups reads as a (nearly) solved task.
_NEARLY_SOLVED = 0.8

#: What the share is when the log tells all-correct groups apart: the rest.
UNSOLVED = "share of groups with equal rewards not proven solved"


def _solved_ceiling(run: Run) -> tuple[str, float, float] | None:
    """(name, late mean, best smoothed level) of the task's 0-1 correctness term: no more
    groups than that mean can be all-correct. None without one."""
    for name, col in components(run).items():
        if component_role(run, name) != "correctness":
            continue
        _, v = series(run, col)
        if len(v) < 10 or v.min() < 0 or v.max() > 1:
            continue
        k = max(5, len(v) // 5)
        return name, float(np.mean(v[-k:])), float(np.max(rolling_median(v, 5)))
    return None


def _stuck_reward(run: Run, share: float = 0.5) -> tuple[float, float] | None:
    """(value, share of logged steps) when the mean reward is exactly one value on at least
    ``share`` of the logged steps: every sample scored the same (all wrong, or a reward that
    cannot tell samples apart), step after step."""
    _, r = series(run, Metric.REWARD_MEAN.value)
    # Three steps suffice where the batch's max and min say every sample scored the same.
    _, highest, lowest = aligned(run, RMAX, RMIN)
    alike = len(highest) >= 3 and bool(np.all(highest == lowest))
    if len(r) < (3 if alike else 5):
        return None
    values, counts = np.unique(r, return_counts=True)
    top = int(np.argmax(counts))
    at = counts[top] / len(r)
    return (float(values[top]), float(at)) if at >= share else None


def _at_its_top(run: Run, value: float) -> bool:
    """Whether ``value`` is the highest mean reward logged, above its lowest, with no reward
    term logged to say what it pays."""
    if components(run):
        return False
    _, r = series(run, Metric.REWARD_MEAN.value)
    return len(r) > 0 and value >= float(r.max()) and value > float(r.min())


def _rarely_scoring(run: Run, share: float = 0.8) -> tuple[str, int, int] | None:
    """(name, steps it scored on, logged steps) of the first correctness-like component at
    its floor on at least ``share`` of the logged steps but not on all (a term that never
    moved is said apart): the task's own check almost never passes."""
    for name, col in components(run).items():
        if component_role(run, name) != "correctness":
            continue
        _, v = series(run, col)
        if len(v) < 5:
            continue
        scored = int(np.sum(v > v.min()))
        if 0 < scored <= (1 - share) * len(v):
            return name, scored, len(v)
    return None


def _parts_when(run: Run, value: float) -> str:
    """What each reward component paid on the steps the mean reward was exactly ``value``
    ("formatting_reward_func 2, correctness_reward_func 0"): which term the stuck value is."""
    reward = run.frame[REWARD] if REWARD in run.frame.columns else None
    if reward is None:
        return ""
    at = reward == value
    parts = []
    for name, col in components(run).items():
        v = run.frame.loc[at, col].dropna()
        if len(v):
            parts.append(f"{name} {fmt(float(v.median()))}")
    return ", ".join(parts)


def _never_scored(run: Run, p: Mapping[str, float]) -> list[str]:
    """Reward terms logged on enough steps, never with a number (TRL's None for a reward
    function that returned None for every completion): they never scored a completion."""
    return [c.split("/", 1)[1] for c in run.frame.columns if is_reward_component(c)
            and not run.frame[c].notna().any()
            and len(run.nan_steps.get(c, ())) >= p["min_component_steps"]]


#: The fewest logged steps, and the most groups a step, for a term's means on the groups'
#: grid to show a score per prompt: with G completions a group, a per-completion score lands
#: on it by chance about once in G steps.
_PER_PROMPT_STEPS = 20
_PER_PROMPT_GROUPS = 8


def _scored_per_prompt(run: Run) -> tuple[str, int, int] | None:
    """(term, groups a step, logged steps) for a reward term whose mean on every logged step
    is a whole number of groups out of the step's groups (read off the equal-group share's
    own grid) while groups were not all equal in total reward: the term gave every completion
    of a group the same score, though the completions differed (trial 73: correctness copied
    from each group's first completion read "look at a few equal-reward groups ... harder
    prompts"). Only a term that moved, never at the top or bottom throughout."""
    _, alike = run.finite_series(Metric.ZERO_STD_FRACTION.value)
    if len(alike) < _PER_PROMPT_STEPS or float(np.min(alike)) >= 1:
        return None
    groups = next((g for g in range(1, _PER_PROMPT_GROUPS + 1)
                   if np.allclose(alike * g, np.round(alike * g), atol=1e-6)), None)
    if groups is None or groups < 3 or _pairs(run) is not None:
        return None  # (groups of 2 agree by chance half the time: no grid tells then)
    means = {name: run.finite_series(col)[1] for name, col in components(run).items()}
    graded = {name: _on_group_grid(v, groups) for name, v in means.items()}
    # Another term told the completions of a group apart (its means finer than the grid).
    if not any(on is False for on in graded.values()):
        return None
    name = next((n for n, on in graded.items() if on), None)
    return None if name is None else (name, groups, len(means[name]))


def _scored_per_step(run: Run) -> tuple[str, int] | None:
    """(term, steps its spread was logged on) for a reward term whose own logged spread over
    each step's completions (TRL's ``rewards/<name>/std``) was 0 on every logged step, 20 or
    more, while its mean took 3 values or more: every completion of a step got one score
    (trial 78: each completion given the batch's total, read "look at a few equal-reward
    groups")."""
    for name, col in components(run).items():
        spread = _spread_column(run, name, col)
        if spread is None:
            continue
        _, sd = run.finite_series(spread)
        _, v = run.finite_series(col)
        if len(sd) >= _PER_PROMPT_STEPS and float(np.max(np.abs(sd))) == 0 and len(
                np.unique(np.round(v, 6))) >= 3:
            return name, len(sd)
    return None


def _spread_column(run: Run, name: str, col: str) -> str | None:
    """The column logging ``name``'s spread over a step's completions, where the log has one."""
    for candidate in (f"rewards/{name}/std", f"{col}/std", f"{col}_std"):
        if candidate in run.frame.columns:
            return candidate
    return None


def _on_group_grid(v: np.ndarray, groups: int) -> bool | None:
    """Whether a term's step means all sit on a grid of at most one level per whole number
    of groups (0..groups), evenly spaced, over 20+ steps and 4 levels or more: a score per
    completion (a step's mean a multiple of 1/(groups x G)) shows finer levels than that.
    None when too few steps or levels tell."""
    levels = np.unique(np.round(v, 6))
    if len(v) < _PER_PROMPT_STEPS or len(levels) < 4:
        return None
    if len(levels) > groups + 1:
        return False
    gap = float(np.min(np.diff(levels)))
    spaced = (v - levels[0]) / gap
    return bool(np.allclose(spaced, np.round(spaced), atol=1e-3)
                and (levels[-1] - levels[0]) / gap <= groups + 1e-6)


def _pairs(run: Run) -> int | None:
    """The group size when the run's config samples groups of 2 (or 1), else None."""
    group, _ = knobs.current(run, knobs.GROUP_SIZE)
    return int(group) if group is not None and 0 < group <= 2 else None


def _lower_bound(share: float, n: int, z: float = 1.645) -> float:
    """Wilson's one-sided 95% lower bound of a proportion ``share`` seen over ``n`` trials."""
    if n <= 0:
        return 0.0
    centre = share + z * z / (2 * n)
    spread = z * np.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return float((centre - spread) / (1 + z * z / n))


@RULE.draws
def lines(p: Mapping[str, float], evidence: Mapping[str, object]
          ) -> dict[str, tuple[Threshold, ...]]:
    zero = ladder([(p["warn_fraction"], f"warning {p['warn_fraction']:.0%}", "warning"),
                   (p["critical_fraction"], f"critical {p['critical_fraction']:.0%}",
                    "critical")], True)
    return {ZSF: zero, ZERO_SHARE: zero}


def _scorer_passes(run: Run) -> Outcome | None:
    """A reward term whose scorer began passing every completion (``scorer_stopped``, jumped
    up): from then on its groups are all "right", alike, and teach nothing; what looks like a
    solved task is the scorer (trial 55: correctness 0.85 -> exactly 1 from step 121, zero-std
    groups 25% -> 91%, read "at least 100% of them all-correct: the task is (nearly) solved").
    None otherwise."""
    stop = scorer_stopped(run)
    if stop is None or not stop.passes:
        return None
    s, z = series(run, ZSF)
    after = z[s >= stop.step]
    alike = (f"{float(np.mean(after)):.0%} of groups had equal rewards from step "
             f"{step_text(stop.step)}: " if len(after) else "")
    return Outcome(Status.CRITICAL, f"advantage collapse: {alike}{stop.words()}",
                   onset_step=stop.step,
                   evidence={"scorer_stopped": stop.evidence(),
                             "threshold": "a 0-1 term held exactly at a value its level before "
                                          "could not hold by chance, completions unchanged"},
                   remedies=(stop.fix(), knobs.rollback(
                       stop.step, f"resume from the checkpoint before step "
                       f"{step_text(stop.step)} once the scorer works: the steps since trained "
                       "on no signal")),
                   key_metric=ZSF)


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    passing = _scorer_passes(run)
    if passing is not None:
        return passing
    # The policy's own record: not the steps a failed or stopped scorer logged.
    run = scored_run(run)
    metric, steps, z, what = _signal(run, p)
    # The zero-std fraction is itself a share over many groups: a few logged points (each an
    # average over logging_steps) suffice. A 0/1 per-step indicator needs more of them.
    # A step's reward std is one batch: zero by chance with small G, so the 0/1 indicator
    # needs 20 points and a late window of 10.
    # A whole batch scoring alike is no chance of small groups: a few points suffice too.
    short_ok = metric == ZSF or what == ALL_ALIKE
    if len(z) < (3 if short_ok else 20):
        raise Skip(f"needs at least {3 if short_ok else 20} logged points of the zero-std "
                   f"signal")
    k = late_points(len(z), p["late_fraction"], min_n=(3 if len(z) < 10 else 5) if short_ok
                    else 10)
    late = float(np.mean(z[-k:]))
    overall = float(np.mean(z))
    evidence: dict[str, object] = {
        "signal": what, "late_share": round(late, 4), "overall_share": round(overall, 4),
        "late_points": k, "effective_group_ratio_late": round(1 - late, 4),
    }
    # Equal rewards because groups are solved are the goal of training, not a collapse: judge
    # the share the log cannot prove all-correct, where it can tell them apart.
    pinned = pinned_terms(run, int(p["min_component_steps"]))
    # A correctness-like term that never moved means the task itself was never rewarded:
    # whatever the other terms teach, nothing teaches the task. At a constant 1 it proves no
    # group all-correct either: it cannot tell completions apart (trial 45, a check that
    # always passed, had read "the task is (nearly) solved").
    dead = [(n, v, c) for n, v, c in pinned if component_role(run, n) == "correctness"]
    unpaid = _never_positive(run, pinned)
    unsolved = unsolved_equal_share(run, steps, z) if metric == ZSF and not dead else None
    if unsolved is not None and np.isfinite(unsolved).sum() >= 3:
        keep = np.isfinite(unsolved)
        steps_u, u = steps[keep], unsolved[keep]
        k_u = late_points(len(u), p["late_fraction"], min_n=2 if len(u) < 10 else 5)
        late_u = float(np.mean(u[-k_u:]))
        solved = 1.0 - late_u / late if late > 0 else 0.0
        evidence["all_correct_share_of_equal_groups"] = round(solved, 3)
        # (Not where the groups were equal from the first steps: near-greedy sampling from the
        # start is a setup problem root_cause names as such.)
        cut = knobs.sampling_cut(run) if late >= p["warn_fraction"] else None
        if cut is not None and late_u < p["warn_fraction"]:
            # All-correct under a cut sampler is the cut's score: the policy's own spread is
            # hidden (trial 51: top_p 0.5, 99% of groups equal and all-correct, entropy 0.24
            # where the control's was 0.065; 0.53 sampled at top_p 1).
            name, value, fix = cut
            evidence["sampling_cut"] = f"{name} {fmt(value)}"
            return Outcome(
                Status.WARNING, f"{late:.0%} of groups had equal rewards over the last {k} "
                f"logged points, at least {solved:.0%} of them all-correct, sampled at {name} "
                f"{fmt(value)}: the cut hides the answers the policy still gets wrong, so no "
                "group teaches it more (the task looks solved to the cut sampler only)",
                onset_step=int(steps[max(0, len(steps) - k)]), evidence=evidence,
                remedies=(fix, "then look at the groups sampled from the whole distribution"),
                key_metric=metric)
        score = zero_one_score(run)
        score_now = float(np.mean(score[1][-late_points(len(score[1]), p["late_fraction"],
                                                          2):])) if score is not None else None
        # Groups of 2 agree by chance at least half the time: unless the task is nearly
        # solved, their equal share is the group size's doing, not solved prompts (trial 70:
        # num_generations 2 at 0.68 read "solved groups" and healthy).
        chance = _pairs(run) is not None and (score_now is None or score_now < _NEARLY_SOLVED)
        if late >= p["warn_fraction"] and late_u < p["warn_fraction"] and not chance:
            # A score well short of its top is no solved task: small groups of a policy right
            # half the time agree by chance (trial 67: groups of 2 at 0.56 read "the task is
            # (nearly) solved").
            why = ("the task is (nearly) solved and little signal is left; harder prompts "
                   "would teach more" if score_now is None or score_now >= _NEARLY_SOLVED else
                   f"solved groups, not a collapse, though the score is {fmt(score_now)} of 1 "
                   "(a small group agrees by chance)")
            return Outcome(Status.OK, f"{late:.0%} of groups had equal rewards over the last "
                           f"{k} logged points, at least {solved:.0%} of them all-correct: "
                           f"{why}", evidence=evidence, key_metric=metric)
        if not chance:
            steps, z, k, late = steps_u, u, k_u, late_u
            what = UNSOLVED
    if pinned:
        evidence["pinned_components"] = {n: {"value": v, "steps": c} for n, v, c in pinned}
    fired = late >= p["warn_fraction"]
    if pinned and not fired:
        progress = reward_progress(run, float(run.steps[0]))
        # A term every sample meets at a positive value, not the task's own, is inert under the
        # group's mean: no finding of its own (trial 76: a prompt-length term at 0.4 on every
        # step had raised a warning from step 1 beside a broken sampler). One that never paid,
        # or the task's own check, is.
        inert = all(v > 0 and component_role(run, n) != "correctness" for n, v, _ in pinned)
        if not progress.logged or progress.improving or inert:
            names = ", ".join(n for n, _, _ in pinned)
            return Outcome(Status.OK, f"{what}: {late:.0%} over the last {k} logged points; "
                           f"note: reward {agree(len(pinned), 'component', 'components')} "
                           f"{names} never moved, the others carry the signal",
                           evidence=evidence, key_metric=metric)
    if not fired and not pinned and what == ALL_ALIKE:
        # Max and min apart says nothing of the groups within the batch: not a pass.
        raise Skip("log zero_std_fraction: no batch scored all alike")
    if not fired and not pinned:
        return Outcome(Status.OK, f"{what}: {late:.0%} over the last {k} logged points "
                       f"(effective groups {1 - late:.0%})", evidence=evidence, key_metric=metric)

    early = float(np.mean(z[:k]))
    shift = (level_shift_onset(steps, z)[0]
             if fired and early < p["warn_fraction"] and late - early > 0.2 and len(z) >= 8
             else None)
    # Whether the reward rose while groups turned equal (solved ones) is judged from the step
    # up; but one that lands below the line (a share that rose to ~45% early, then flickers
    # about 50% late) is not the collapse's onset: its level is not the one the summary reads.
    below_line = shift is not None and np.mean(z[steps >= shift]) < p["warn_fraction"]
    if fired:
        if shift is not None and not below_line:
            onset = snap_to_logged(run, metric, shift)
        elif z[0] < p["warn_fraction"]:
            # No step up to date: the first of the points at the line or above that run to
            # the end (a first point below it is not the collapse yet). A share that flickers
            # about the line (a per-step 0/1 flag) has such a run only at its last points:
            # then the episode is the window the summary reads, from its first step.
            below = np.nonzero(z < p["warn_fraction"])[0]
            i = min(int(below[-1]) + 1, len(z) - 1)
            if len(z) >= 8 and len(z) - i < k:
                i = len(z) - k
                # Unless its rolling median crossed the line long before and held above it:
                # a share at 60-70% from step 3 that dips under 50% on single steps is one
                # episode from step 3 (trial 55 read "from step 161" beside "87% over the
                # run", the window's first step).
                above = rolling_median(z, 9) >= p["warn_fraction"]
                if above[-1] and not above.all():
                    i = min(i, len(above) - int(np.argmax(~above[::-1])))
                elif above.all():
                    i = 0
            onset = int(steps[i])
        else:
            onset = int(steps[0])
    else:
        onset = int(run.steps[0])
    progress = learning(run, float(shift if shift is not None and below_line else onset))
    corroboration = []
    if progress.logged and not progress.improving:
        corroboration.append(progress.stalled_words())
    h_steps, h = series(run, Metric.ENTROPY.value)
    if len(h) >= 8 and mann_kendall(h_steps, h).decreasing(0.01):
        h0, hc = head_tail(h)
        if h0 > 0 and hc / h0 < 0.5:
            corroboration.append(f"entropy down {1 - hc / h0:.0%}")
    evidence["corroboration"] = corroboration

    # Groups of 2 are equal by chance at least half the time (p^2 + (1-p)^2 >= 1/2): their
    # equal share says nothing of groups being solved, and the group size is the fault.
    pairs = _pairs(run)
    # A 0-1 task score of p caps the all-correct groups at p: equal groups beyond it, over the
    # warning line, are not solved ones whatever the reward does (a format term saturating
    # beside a correctness term at 0.12 had read "groups are being solved", trial 49's mod97).
    ceiling = _solved_ceiling(run) if fired and metric == ZSF and what != UNSOLVED else None
    unsolved_floor = late - ceiling[1] if ceiling is not None else 0.0
    if ceiling is not None and unsolved_floor >= p["warn_fraction"]:
        evidence["all_correct_at_most"] = round(ceiling[1], 4)
    else:
        ceiling = None
    solving = progress.logged and progress.improving and not dead and not pairs and (
        ceiling is None)
    converged = False
    if fired and not solving and not dead and not pairs and progress.logged and not (
            progress.declining):
        # Groups that turned equal as the reward climbed to the plateau it holds at its best
        # may well be solved ones: not critical below the critical share. Judged from the onset
        # alone, a share that crossed the line on that plateau read "reward up only within its
        # noise" and went critical on a healthy run.
        whole = learning(run, float(run.steps[0]))
        # Not with the task's own score below half: most of its equal groups are all-wrong
        # ones ("many may be solved ones" read beside a held-out score of 0, helper-35).
        # Nor with the task's own 0-1 score at its floor all run (a format term that climbed
        # to its plateau beside a correctness term at 0.01: cb_hard_task, helper-57).
        floor = _out_of_reach(run)
        converged = whole.logged and whole.improving and reward_at_best(run) and not (
            _task_low(run)) and unpaid is None and not (floor is not None and floor[2] < 0.5
                                                       ) and ceiling is None
        if converged and progress.logged and not progress.improving:
            corroboration.remove(progress.stalled_words())  # it converged; it did not stall
            evidence["corroboration"] = corroboration
    if fired and solving and late < p["critical_fraction"]:
        # Equal-reward groups while the reward still rises are mostly all-correct ones: the
        # policy is solving its prompts. Convergence, not a collapse; say so and move on.
        return Outcome(Status.OK, f"{what}: {late:.0%} over the last {k} logged points, but "
                       f"the reward is still rising: groups are being solved (convergence); "
                       f"feed harder prompts as they saturate", evidence=evidence,
                       key_metric=metric)
    if fired and not dead and (held := heldout_solved(run)) is not None:
        # The held-out prompts say the task is nearly solved, but the train log cannot prove
        # these groups all-correct (other prompts, another scale): a warning, never critical.
        evidence["heldout_late"] = round(held, 4)
        evidence["threshold"] = (f"zero-std share >= {p['warn_fraction']:.0%}; held-out score "
                                 f">= {fmt(SOLVED_HELDOUT)}: a warning")
        return Outcome(Status.WARNING, f"{late:.0%} of groups had equal rewards over the last "
                       f"{k} logged points, from step {step_text(onset)}, with the held-out "
                       f"score at {fmt(held)}: most are likely solved ones, so little signal "
                       "is left", onset_step=onset, evidence=evidence,
                       remedies=("harder prompts: filter the ones the policy always solves, or "
                                 "a curriculum that moves on",
                                 "dynamic sampling: drop all-0/all-1 groups and refill the "
                                 "batch (DAPO)"),
                       key_metric=metric)
    if fired:
        # Corroboration only escalates on a log long enough to judge a trend in the reward
        # (a live monitor would otherwise go critical on the noisy first few dozen steps);
        # the task's own reward never moving needs no trend.
        # A share of steps (one group each, 0 or 1) over a late window of 10-20 is a coin
        # count: 5 of 10 is as likely 30% as 70%. Corroboration escalates it only when the
        # share, late or over the whole log, is over the warning line with 95% confidence
        # (Wilson's lower bound).
        sure = metric == ZSF or max(_lower_bound(late, k), _lower_bound(overall, len(z))
                                    ) >= p["warn_fraction"]
        critical = (late >= p["critical_fraction"] or bool(dead)
                    or (bool(corroboration) and len(z) >= 40 and sure and not converged
                        and not (pairs and learning(run, float(run.steps[0])).improving)))
        status = Status.CRITICAL if critical else Status.WARNING
        evidence["threshold"] = (f"zero-std share >= {p['critical_fraction']:.0%}" if late >=
                                 p["critical_fraction"] else
                                 f"zero-std share >= {p['warn_fraction']:.0%}"
                                 + (" and the task's reward never moving" if dead else ""))
        why = f" with {', '.join(corroboration)}" if corroboration else ""
        share = (f"every sample scored the same (reward max = min) on {late:.0%} of steps"
                 if what == ALL_ALIKE else
                 f"the reward std was 0 on {late:.0%} of steps" if metric != ZSF else
                 f"{late:.0%} of groups had equal rewards without being solved (all-wrong or "
                 "stuck)" if what == UNSOLVED else
                 f"{late:.0%} of groups had equal rewards (zero reward variance)")
        overall_text = (f"{overall:.0%} over the run" if metric == ZSF
                        else f"{overall:.0%} of all steps")
        summary = (f"advantage collapse: {share} over the last {k} logged points "
                   f"({overall_text}), from step {ONSET}{why}")
        if ceiling is not None:
            summary += (f"; {ceiling[0]} at {fmt(ceiling[1])} of 1 allows at most "
                        f"{ceiling[1]:.0%} of groups all-correct, so most equal groups are "
                        "all-wrong ones" if ceiling[1] >= 0.005 else
                        f"; {ceiling[0]} at {fmt(ceiling[1])}: no group is all-correct, the "
                        "equal groups are all-wrong ones")
        if converged:
            summary += ("; the reward climbed to its best level and holds there: many may be "
                        "solved ones")
        if pairs:
            summary += (f"; groups of {pairs} are equal by chance at least half "
                        "the time, whatever the policy learns")
        if dead:
            summary += f"; the task's own reward {_never_told(dead)}: " + ", ".join(
                f"{n} always {fmt(v)} over {c:,} steps" for n, v, c in dead)
    else:
        # Most groups still differ on the other terms: the policy learns them (the format
        # first, as it usually does) and the task's reward may fire later.
        task_dead = bool(dead) and max(c for _, _, c in dead) >= p["task_patience"]
        status = Status.CRITICAL if task_dead else Status.WARNING
        names = ", ".join(f"{n} (always {fmt(v)} over {c:,} steps)" for n, v, c in pinned)
        summary = (f"reward {agree(len(pinned), 'component', 'components')} never moved, "
                   f"giving no signal: {names}"
                   + (f"; the task's own reward {_never_told(dead)}" if task_dead else
                      "; the task's own reward has not fired yet (a sparse one often takes "
                      f"~{int(p['task_patience'])} steps)" if dead else ""))
        evidence["threshold"] = "a reward component constant over the whole run" + (
            f" (the task's own: over {int(p['task_patience'])}+ logged steps)" if dead else "")
    stuck = _stuck_reward(run) if fired else None
    rare = _rarely_scoring(run) if fired else None
    dynamic = "dynamic sampling: drop all-0/all-1 groups and refill the batch (DAPO)"
    if rare is not None and stuck is None:
        # The task's own check passes on a few steps only: the equal groups are all-wrong
        # ones, which dynamic sampling would drop; the reward (or the task's reach) is first.
        dynamic += "; here it would drop most of the batch, so fix the reward first"
    if stuck is not None:
        value, on = stuck
        evidence["reward_stuck_at"] = {"value": value, "share_of_steps": round(on, 3)}
        summary += f"; the reward was exactly {fmt(value)} on {on:.0%} of logged steps"
        # Groups that all score the same value are not a sampling problem: dynamic sampling
        # would drop nearly the whole batch. The reward (or the task's reach) is.
        dynamic += "; here it would drop most of the batch, so fix the reward first"
    remedies = [
        dynamic,
        knobs.scale(run, knobs.GROUP_SIZE, 2.0, why="more chances of a mixed group")
        if knobs.current(run, knobs.GROUP_SIZE)[0] else
        "raise the group size G (e.g. to 16-32: more chances of a mixed group)",
        "curriculum: start from easier prompts, filter prompts the policy always solves",
        "normalise each reward component separately before weighting",
    ]
    reach = _out_of_reach(run) if fired else None
    most = reach is None and ceiling is not None  # above the floor: most prompts, not all
    if most and ceiling is not None:
        reach = (ceiling[1], ceiling[0], ceiling[2])
    if reach is not None and stuck is None and not pinned and (
            late >= p["critical_fraction"] or reach[2] < 0.5):
        # Nearly every group equal and the 0/1 score at its floor: the prompts are beyond the
        # policy. Dynamic sampling would drop most of the batch; the prompts are the fix.
        # Below the critical share too when the score never left its floor: the equal groups
        # are all-wrong ones (a live check at step 10 had said "all right or all wrong" beside
        # a correctness term at 0.01: helper-57).
        evidence["score_late"] = round(reach[0], 4)
        remedies.remove(dynamic)
        if late < p["critical_fraction"]:
            # Its best is a 5-step median: single steps go higher (0.625 once beside "never
            # above 0.25" read as a contradiction, helper-60).
            level = (f"at most {fmt(reach[2])} of 1 over any 5 logged steps" if reach[0] >= reach[2]
                     else f"{fmt(reach[0])} of 1, at best {fmt(reach[2])} over 5 logged steps")
            remedies.insert(0, f"{'most' if most else 'the'} prompts are out of reach "
                            f"({reach[1]} is {level}: the equal groups are all-wrong ones): "
                            "easier prompts or a lower curriculum level, partial credit, or an "
                            "SFT warm-up")
        elif reach[2] >= 0.5:
            # It solved these prompts before: the policy broke, the prompts did not get harder.
            remedies.insert(0, f"nearly every group all wrong since the policy broke ({reach[1]} "
                            f"{fmt(reach[0])} of 1 late in the run, {fmt(reach[2])} at its best "
                            "over 5 logged steps): "
                            "fix what broke it (the root cause) and go back to a checkpoint "
                            "from before; dynamic sampling would drop most of the batch")
        else:
            remedies.insert(0, f"the prompts are out of reach ({reach[1]} is {fmt(reach[0])} of "
                            "1 late in the run: nearly every group all wrong): easier prompts "
                            "or a lower curriculum level, partial credit, or an SFT warm-up; "
                            "dynamic sampling would drop most of the batch")
    if stuck is not None or rare is not None:
        parts = _parts_when(run, stuck[0]) if stuck is not None else ""
        on_those = f" ({parts} on those steps)" if parts else ""
        exactly = (f"exactly {fmt(stuck[0])} on {stuck[1]:.0%} of logged steps{on_those}"
                   if stuck is not None else "")
        if rare is not None:
            what = (f"the task's reward function, {rare[0]}, on a few completions (parsing, a "
                    f"wrong field): it scored on only {rare[1]} of {rare[2]} logged steps, so "
                    f"almost no answer is judged right"
                    + (f"; the reward was {exactly}" if exactly else ""))
        else:
            what = (f"the reward function on a few completions (parsing, a wrong field): it "
                    f"gave {exactly}")
        then = "then make the reward reachable"
        if stuck is not None and rare is None and _at_its_top(run, stuck[0]):
            # The log's highest reward with no term to say what it pays: full marks (prompts
            # the policy solves: verl's 1.2 = correct + format) or a format-only score that
            # the task's own reward never adds to (a real run's 0.5). Both are said.
            what += ("; it is the log's highest reward: if that is full marks, these prompts "
                     "are solved (filter them out, or harder prompts), else the task's own "
                     "reward never fires")
            then = "then, if it is not full marks, make the reward reachable"
        # (Not an SFT warm-up the log shows the run already had: SFT printed before it.)
        warm = "" if run.config.get(SFT_BEFORE) else ", an SFT warm-up on the output format"
        remedies.insert(0, f"check {what}; {then}: easier prompts or "
                        f"a lower curriculum level, partial credit{warm}")
    if fired and unpaid is not None and remedies[0] == dynamic:
        # The task's own term never paid above 0 (trial 45: a correctness function that
        # returned -1 for a right answer went -0.28 -> -0.04 as the policy unlearned the task):
        # no group is proven solved by it, and its sign is the first thing to look at.
        name, start, end = unpaid
        evidence["task_term_never_positive"] = name
        remedies.insert(0, f"check {name} on a few completions: it paid nothing above 0 on "
                        f"any logged step ({fmt(start)} -> {fmt(end)}), so a right answer "
                        "must score above a wrong one: a flipped sign pays the policy to be "
                        "wrong; if no answer was ever right, easier prompts")
    if remedies[0] == dynamic and fired and not solving:
        # Nothing in the log says which way the groups are equal: an expert looks before
        # dropping them (dynamic sampling first is the wrong step where the reward never
        # fires, ADVICE.md's SCU; three logs in, the log cannot tell that yet).
        # (Or different answers scored alike: a reward that does not score each completion,
        # a cache keyed on the prompt, trial 55, which equal groups at a middling score look
        # like in the log as much as prompts all solved or all failed do.)
        # (Each branch's fix outside parentheses: audit's one line drops them, and had left
        # "all right, all wrong, or different answers scored alike; then dynamic sampling",
        # trial 63.)
        remedies.insert(0, "look at a few equal-reward groups: if all right, harder prompts "
                        "(these are solved); if all wrong, check the reward pays a right "
                        "answer, then easier prompts; if different answers scored alike, fix "
                        "the reward to score each completion (not a cache or lookup keyed on "
                        "the prompt); then dynamic sampling")
    if pinned:
        which = ", ".join(f"{n} always {fmt(v)}" for n, v, _ in pinned)
        # A term that pays every sample the same, at a positive value, is one every sample
        # meets (trial 40's format_reward at 1.0 on every step), not one that never fires.
        met = all(v > 0 for _, v, _ in pinned)
        remedies.insert(0, f"check the reward {agree(len(pinned), 'function', 'functions')} "
                        f"that never changed ({which}) on a few completions: "
                        + ("it paid every completion the same from the first step, so the "
                           "task is not trained: a check that always passes (a parse that "
                           "always matches) or prompts the initial model already solves; fix "
                           "it or use harder prompts" if met and dead else
                           "every sample meets it, so it teaches nothing: drop it or make it "
                           "stricter" if met else
                           "broken parsing, a wrong field, or a task too hard for "
                           f"{agree(len(pinned), 'it', 'them')} to ever fire"))
    per_step = _scored_per_step(run)
    if per_step is not None:
        term, logged = per_step
        evidence["scored_per_step"] = {"term": term, "steps": logged}
        remedies.insert(0, f"fix the reward function {term}: its spread over the step's "
                        f"completions was 0 on all {logged} logged steps while its mean moved "
                        "from step to step, so it gave every completion of a step one score "
                        "(a batch total or mean returned to each, a score of the prompts not "
                        "the completions): it tells no completion from another")
    per_prompt = _scored_per_prompt(run) if per_step is None else None
    if per_prompt is not None:
        term, groups, logged = per_prompt
        evidence["scored_per_prompt"] = {"term": term, "groups_per_step": groups,
                                         "steps": logged}
        # (Prompts this model always or never solves give the same grid honestly: said as
        # the other branch; h103.)
        remedies.insert(0, f"check the reward function {term} on a few groups: it never split "
                        f"one (its mean a whole number of groups out of {groups} on all "
                        f"{logged} logged steps) while the other terms told the group's "
                        f"completions apart; if their answers differ within a group, it scores "
                        f"each prompt, not each completion (a score copied across the group, a "
                        f"lookup keyed on the prompt): fix it; if they agree, the prompts are "
                        f"all-or-nothing for this model: mix in ones it solves sometimes")
    silent = _never_scored(run, p)
    if silent:
        # Before any other term's reading: a term that never returned a value is a bug in
        # its function, and the reward the groups were equal on is the others alone.
        evidence["never_scored"] = silent
        others = [n for n in components(run) if n not in silent]
        alone = f"; the reward is {', '.join(others)} alone" if others else ""
        remedies.insert(0, f"fix the reward {agree(len(silent), 'function', 'functions')} "
                        f"{', '.join(silent)}: {agree(len(silent), 'it', 'they')} returned no "
                        f"value (None) on every logged step, so never scored a completion (a "
                        f"dataset column it reads that is missing, an exception turned into "
                        f"None){alone}")
    return Outcome(status, summary, onset_step=onset, evidence=evidence,
                   remedies=tuple(remedies), key_metric=metric)


def _never_positive(run: Run, pinned: list[tuple[str, float, int]]
                    ) -> tuple[str, float, float] | None:
    """(name, start, end) of a correctness-like reward term that moved but never paid above
    0 over at least 20 logged steps: its groups are never all-correct ones."""
    still = {n for n, _, _ in pinned}
    for name, col in components(run).items():
        if name in still or component_role(run, name) != "correctness":
            continue
        v = series(run, col)[1]
        if len(v) >= 20 and float(v.max()) <= 0 and float(np.ptp(v)) > 0:
            start, end = head_tail(v)
            return name, start, end
    return None


def _never_told(dead: list[tuple[str, float, int]]) -> str:
    """How a task term that never moved failed: never fired (at 0 or below), or paid every
    completion alike (at a positive value: no group is proven solved by it)."""
    return ("paid every completion the same (it never told them apart)"
            if all(v > 0 for _, v, _ in dead) else "never fired")


def _task_low(run: Run) -> bool:
    """A 0-1 held-out score logged (2+ points) whose late mean is below 0.5: most prompts
    are not solved, whatever the training reward's plateau."""
    _, held = series(run, Metric.HELDOUT_SCORE.value)
    if len(held) < 2 or held.min() < 0 or held.max() > 1:
        return False
    return float(np.mean(held[-max(2, len(held) // 5):])) < 0.5
