"""No learning signal: a dead run.

What it detects
    A stretch at the end of the log (at least ``min_points`` logged points and ``min_fraction``
    of the log) in which the reward stays flat (within ``reward_band`` of its range over the
    run) and no gradient flows: the gradient norm at or below ``zero_grad`` on every logged
    step or, where it is not logged, a loss of exactly zero. And what the log
    shows of its cause: a catastrophic update right before (the reward falling into the
    constant, the mean log-prob crashing, KL or the gradient norm blowing up), or a reward that
    never varied at all.

Why it matters
    GRPO learns from differences between the rewards of a group: when every completion earns
    the same reward, every advantage is zero and nothing is learned, however long the run goes
    on. A policy destroyed by one update (a learning rate far too high, no KL leash) emits
    garbage that always scores the same and cannot recover on its own; the remedies of
    advantage collapse (dynamic sampling, a larger group, a curriculum) cannot revive it.

How it is detected
    From the end of the log backwards, the longest stretch where every logged gradient norm is
    at most ``zero_grad`` (or every logged loss is exactly 0) and the reward moves by at most
    ``reward_band`` of its range over the run. The ``cause_window`` logged points before the
    stretch are searched for the cause. Critical: the run is not learning; a warning when the
    reward is flat at the best it ever reached with the task's own score (held-out, or the
    correctness terms) at its best too (the task is solved: nothing left to learn); without
    that evidence a flat best is not called solved.

False positives
    Small groups on an easy task give stretches of zero gradient while the reward still moves:
    the reward must be flat too. A reward logged as a constant by a logging bug, or a reward
    model that returns a constant by design, look the same: the finding names the constant so
    that either is easy to see.

Remedies
    After a catastrophic update: restore the last checkpoint from before it; lower the learning
    rate 10-100x; a KL coefficient above 0 (0.01-0.04) keeps one bad update from walking the
    policy away; clip gradients. When the reward never varied: check the reward function on a
    few completions; an easier curriculum.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import incidents as inc
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import Outcome, Param, Rule, Skip
from grpo_doctor.rules.knobs import Remedy
from grpo_doctor.rules.points import head_tail, series
from grpo_doctor.rules.signals import (
    component_role,
    components,
    pinned_terms,
    scorer_stopped,
    task_solved,
)
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, step_text

REWARD = Metric.REWARD_MEAN.value
GRAD = Metric.GRAD_NORM.value
LOSS = Metric.LOSS.value

RULE = Rule(
    "no_learning_signal", "No learning signal (a dead run)",
    requires_any=((REWARD, GRAD), (REWARD, LOSS)), min_points="min_points", points_of=REWARD,
    points="rewards",
    params=(
        Param("min_points", 5, "logged points the dead stretch must last"),
        Param("min_fraction", 0.1, "share of the log the dead stretch must cover"),
        Param("zero_grad", 1e-8, "a gradient norm at or below this is no gradient"),
        Param("reward_band", 0.05, "share of the reward's range over the run it may move and "
              "still be flat"),
        Param("cause_window", 5, "logged points before the stretch searched for its cause"),
        Param("stop_kl", 10.0, "a KL above this right before the stretch is a blown-up update"),
    ),
)


def _flat_suffix(r: np.ndarray, band: float) -> int:
    """Index where the longest stretch at the end of ``r`` moving by at most ``band`` begins."""
    hi = np.maximum.accumulate(r[::-1])[::-1]
    lo = np.minimum.accumulate(r[::-1])[::-1]
    flat = (hi - lo) <= band
    return int(np.argmax(flat)) if flat[-1] else len(r)


#: A dead stretch may hold this share of live points (a step whose group differed), once it
#: is at least ``_BLIPS_FROM`` logged points long: shorter ones must be dead throughout.
_BLIP_SHARE = 0.05
_BLIPS_FROM = 20


def _dead_with_blips(run: Run, steps: np.ndarray, r: np.ndarray, band: float) -> int | None:
    """The start (an index of ``r``) of the longest stretch at the end, ``_BLIPS_FROM``
    points or more, in which at most ``_BLIP_SHARE`` of the points are live (a grad norm above
    0, or the reward off its last level by more than ``band``), beginning and ending on a
    dead point. None when there is none, or the log has no grad norm."""
    gs, g = series(run, GRAD)
    if len(g) < _BLIPS_FROM or len(g) != len(r) or not np.array_equal(gs, steps):
        return None
    level = float(np.median(r[-5:]))
    dead = (g <= 1e-8) & (np.abs(r - level) <= band)
    if not dead[-1]:
        return None
    live = np.cumsum((~dead)[::-1])  # live points among the last k+1
    k = np.arange(1, len(r) + 1)
    ok = (live <= _BLIP_SHARE * k) & (k >= _BLIPS_FROM) & dead[::-1]
    if not ok.any():
        return None
    return len(r) - int(np.flatnonzero(ok)[-1]) - 1


def _gradless_since(run: Run, p: Mapping[str, float]) -> tuple[int, str] | None:
    """The step from which no gradient flowed to the end, and how the log shows it."""
    gs, g = series(run, GRAD)
    if len(g) >= 3:
        zero = g <= p["zero_grad"]
        if not zero[-1]:
            return None
        k = len(zero) - int(np.argmax(~zero[::-1])) if not zero.all() else 0
        return int(gs[k]), "grad norm 0"
    ls, loss = series(run, LOSS)
    if len(loss) >= 3 and loss[-1] == 0:
        nonzero = np.nonzero(loss != 0)[0]
        k = int(nonzero[-1]) + 1 if len(nonzero) else 0
        return int(ls[k]), "loss 0"
    return None


def _update_step(run: Run, steps: np.ndarray, i: int, p: Mapping[str, float]) -> int:
    """The step of the catastrophic update before the stretch starting at point ``i``: where
    the gradient norm (else the KL) peaked in the ``cause_window`` points before it, else the
    last logged step before it."""
    w = int(p["cause_window"])
    lo, hi = int(steps[max(0, i - w)]), int(steps[i])
    for metric in (GRAD, Metric.KL.value):
        s, v = series(run, metric, reduce="max")
        near = (s >= lo) & (s < hi)
        if np.any(near):
            return int(s[near][int(np.argmax(v[near]))])
    return int(steps[i - 1])


def _cause(run: Run, steps: np.ndarray, r: np.ndarray, i: int, p: Mapping[str, float]
           ) -> list[str]:
    """Signs of a catastrophic update in the ``cause_window`` points before the stretch."""
    w = int(p["cause_window"])
    lo, hi = int(steps[max(0, i - w)]), int(steps[i])
    found = []
    before = r[max(0, i - w):i]
    span = float(np.ptp(r)) or 1.0
    if len(before) and abs(float(before.max()) - float(r[i])) >= 0.5 * span:
        top = max(0, i - w) + int(np.argmax(before))
        found.append(inc.reward_fall(run, lo, hi) or
                     f"the reward fell from {fmt(float(r[top]))} at step "
                     f"{step_text(int(steps[top]))} to {fmt(float(r[i]))} at step "
                     f"{step_text(int(steps[i]))}")
    es, h = series(run, Metric.ENTROPY.value)
    if len(h) >= 2:
        h_before, h_near = h[es < lo], h[(es >= lo) & (es <= hi + (hi - lo))]
        start = float(np.median(h_before[-3:])) if len(h_before) else float(h[0])
        # From above the near-deterministic floor: 3e-6 -> 0 at temperature 0.05 is no
        # update's doing (trial 49's "catastrophic update at step 2").
        if len(h_near) and start >= 0.02 and h_near.min() <= 0.1 * start and h_near.min() < 0.02:
            found.append(f"entropy fell from {fmt(start)} to {fmt(float(h_near.min()))} "
                         "(a deterministic policy)")
    ls, lp = series(run, Metric.LOG_PROB_MEAN.value)
    if len(lp) >= 2:
        early = lp[ls < lo] if np.any(ls < lo) else lp[:1]
        near = lp[(ls >= lo) & (ls <= hi + (hi - lo))]
        if len(near) and len(early):
            start, bottom = float(np.median(early[-3:])), float(near.min())
            if bottom < start - max(1.0, 0.5 * abs(start)):
                found.append(f"the mean log-prob crashed from {fmt(start)} to {fmt(bottom)}")
    ks, k = series(run, Metric.KL.value, reduce="max")
    near_k = k[(ks >= lo) & (ks <= hi)]
    if len(near_k) and near_k.max() > p["stop_kl"]:
        found.append(f"KL reached {fmt(float(near_k.max()))}")
    gs, g = series(run, GRAD, reduce="max")
    near_g, rest = g[(gs >= lo) & (gs <= hi)], g[(gs < lo) | (gs > hi)]
    base = float(np.median(rest[rest > 0])) if np.any(rest > 0) else 0.0
    if len(near_g) and base > 0 and near_g.max() >= 10 * base:
        found.append(f"the gradient norm reached {fmt(float(near_g.max()))} "
                     f"({near_g.max() / base:.0f}x its usual level)")
    return found


#: A logged learning rate at or below this share of its peak is no step at all.
_LR_ZERO = 1e-3


def _lr_stopped(run: Run, p: Mapping[str, float]) -> Outcome | None:
    """A warning when the logged learning rate sat at 0 (``_LR_ZERO`` of its peak or less)
    over the end of the log (10+ logged points and ``min_fraction`` of it) while the task was
    not solved: gradients flow and nothing moves the weights (a schedule whose horizon is
    shorter than the run, a cosine decayed to 0 at step 50 of 200). A schedule that reaches 0
    at its last step or two is none. None otherwise."""
    steps, lr = series(run, Metric.LEARNING_RATE.value)
    if len(lr) < 10 or float(np.max(lr)) <= 0 or task_solved(run):
        return None
    # (A hair of tolerance: a schedule's floor of 1e-7 under a peak of 1e-4 is logged as
    # 1.0000001e-07 by one log and 1e-07 by another; trial 70 read them apart.)
    zero = lr <= _LR_ZERO * float(np.max(lr)) * 1.001
    if not zero[-1]:
        return None
    i = len(zero) - int(np.argmin(zero[::-1])) if not zero.all() else 0
    n = len(lr) - i
    if n < max(10, p["min_points"], p["min_fraction"] * len(lr)) or i == 0:
        return None
    since = int(steps[i])
    last = int(steps[-1])
    evidence = {"lr_zero_since": since, "lr_peak": float(np.max(lr)),
                "share_of_log": round(n / len(lr), 3),
                "threshold": f"a logged learning rate at {_LR_ZERO:g} of its peak or less over "
                             f"the last {p['min_fraction']:.0%}+ of the log (10+ points)"}
    peak = knobs.knob_value(float(np.max(lr)))
    at = "0" if float(np.max(lr[i:])) == 0 else f"{knobs.knob_value(float(np.max(lr[i:])))} or less"
    summary = (f"learning stopped at step {step_text(since)}: the logged learning rate is {at} "
               f"from there to the end ({n} logged points, {n / len(lr):.0%} of the log; it "
               f"peaked at {peak}), and the task is not solved")
    power = _steep_power(run)
    why = (f"a polynomial decay of power {fmt(power)} spends the lr in the run's first "
           "steps: lr_scheduler_kwargs power -> 1 (linear), or a cosine" if power is not None
           else "a scheduler whose horizon is shorter than the run: set its total steps to "
           "the run's, or a floor such as a minimum lr ratio of 0.1")
    remedies = (
        Remedy(f"fix the learning-rate schedule: it reached "
               f"{'0' if at == '0' else 'nearly 0'} at step {step_text(since)} of "
               f"{step_text(last)} ({why}); then resume from the last checkpoint: the weights "
               f"have not changed since step {step_text(since)}", knob=knobs.LEARNING_RATE),
    )
    return Outcome(Status.WARNING, summary, onset_step=since, evidence=evidence,
                   remedies=remedies, key_metric=Metric.LEARNING_RATE.value)


def _steep_power(run: Run) -> float | None:
    """The power of a polynomial lr decay above 1 (transformers' ``lr_scheduler_kwargs``),
    or None."""
    flat = knobs.flatten(run.config) if run.config else {}
    kind = knobs.keyed(flat, "lr_scheduler_type")
    if kind is not None and "polynomial" not in str(kind).lower():
        return None  # (another schedule's kwargs hold no power it applies; helper-93)
    value = next((v for k, v in flat.items() if k.endswith("lr_scheduler_kwargs.power")), None)
    try:
        power = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return power if power > 1 else None


def _stuck_end(r: np.ndarray, p: Mapping[str, float], run: Run
               ) -> tuple[int, float, float] | None:
    """(points, level, share) when the reward sat at one level (within ``reward_band`` of its
    range) on 90%+ of the last half of the log, below its best, with the task not at its
    best: a sparse reward at 0 but for a few lucky batches is stuck, not moving. None
    otherwise (a converged run sits at its best)."""
    n = max(int(p["min_points"]), len(r) // 2)
    if len(r) < 2 * p["min_points"]:
        return None
    tail = r[-n:]
    level = float(np.median(tail))
    band = p["reward_band"] * float(np.ptp(r))
    share = float(np.mean(np.abs(tail - level) <= band))
    if share < 0.9 or level >= float(np.max(r)) - band or _task_at_best(run):
        return None
    return n, level, share


def _task_at_best(run: Run) -> bool:
    """Correctness evidence that a flat reward is a solved task: the log proves it solved
    (``task_solved``), or the held-out score, else every correctness-like component, ends
    within 10% of its range of its best and is not a term that never moved."""
    if task_solved(run):
        return True
    held = series(run, Metric.HELDOUT_SCORE.value)[1]
    cols = [held] if len(held) >= 3 else [
        series(run, col)[1] for name, col in components(run).items()
        if component_role(run, name) == "correctness"]
    cols = [v for v in cols if len(v) >= 3]
    if not cols:
        return False
    return all(np.ptp(v) > 0 and head_tail(v, frac=0.2)[1] >= v.max() - 0.1 * np.ptp(v)
               for v in cols)


def _head_points(r: np.ndarray) -> int:
    """The first logged points that say where a run started: a tenth of them, 3 at least."""
    return max(3, len(r) // 10)


def _at_top_from_start(r: np.ndarray, level: float, span: float, p: Mapping[str, float]
                       ) -> bool:
    """Whether the reward was already at ``level`` (its final, best one) over its first
    points: within the rule's band of its range, or 2% of the level."""
    head = r[:_head_points(r)]
    return float(np.median(head)) >= level - max(p["reward_band"] * span, 0.02 * abs(level))


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    never_finite = GRAD in run.nan_steps and (
        GRAD not in run.frame.columns or not run.frame[GRAD].notna().any())
    if never_finite:
        # Not one update applied: "no dead stretch, the reward still moves" would read as a
        # pass beside "the policy never moved" (the reward moves by sampling alone).
        raise Skip("the grad norm was non-finite on every logged step, so no update was "
                   "applied: numerical_failure's finding")
    steps, r = series(run, REWARD)
    span = float(np.ptp(r))
    i = _flat_suffix(r, p["reward_band"] * span)
    gradless = _gradless_since(run, p)
    evidence: dict[str, object] = {"flat_reward_points": len(r) - i}
    if gradless is not None:
        i = max(i, int(np.searchsorted(steps, gradless[0])))
    n_dead = len(r) - i
    needed = max(p["min_points"], p["min_fraction"] * len(r))
    if gradless is not None and n_dead < needed:
        # A dead run with a lucky group now and then is still dead: a gradient of 0 on 186
        # of 190 steps had cleared a live alert at its last blip (temperature 0.05, trial 49).
        loose = _dead_with_blips(run, steps, r, p["reward_band"] * span)
        if loose is not None and len(r) - loose >= needed:
            i, n_dead = loose, len(r) - loose
            evidence["blips_tolerated"] = True
    if gradless is None or n_dead < needed:
        stopped = _lr_stopped(run, p)
        if stopped is not None:
            return stopped
        # Say only what the log shows: the end of the log is not a dead stretch.
        how = ("the grad norm" if run.has(GRAD) else "the loss") + " is not 0 at the end"
        text = (f"no dead stretch at the end of the log ({how})" if gradless is None else
                "no dead stretch at the end of the log (the reward still moves)")
        _, g = series(run, GRAD)
        idle = int(np.sum(g <= p["zero_grad"])) if len(g) else 0
        if gradless is not None and len(g) >= p["min_points"] and idle >= 0.5 * len(g):
            # Said as the log shows it: "the reward still moves" alone read as a live run
            # beside a gradient of 0 on 196 of 200 steps (trial 49, temperature 0.05).
            text = (f"the grad norm was 0 on {idle:,} of {len(g):,} logged steps, but no "
                    "stretch at the end is dead: the reward still moves now and then")
        stuck = _stuck_end(r, p, run) if gradless is None else None
        if stuck is not None:
            # A reward at one unsolved level to the end while a KL or entropy term still
            # moves the weights: no pass ("passed: no_learning_signal" beside 99% of groups
            # equal read as "the run has a signal"), not a dead run either (``unsettled``).
            n, level, share = stuck
            evidence["unsettled"] = True
            text = (f"the reward sat at {fmt(level)} on {share:.0%} of the last {n} logged "
                    f"points, but {how}: not dead by its gradient")
        return Outcome(Status.OK, text, evidence=evidence, key_metric=REWARD)
    how = gradless[1]
    start = int(steps[i])
    level = float(np.median(r[i:]))
    flat = "constant" if np.ptp(r[i:]) == 0 else "flat"
    cause = _cause(run, steps, r, i, p) if i > 0 else []
    at = int(steps[max(0, i - 1)])  # where the stretch's cause is dated
    solved = i > 0 and not cause and level >= float(np.max(r[:i])) and span > 0
    evidence.update({"since_step": start, "reward_level": level,
                     "share_of_log": round(n_dead / len(r), 3), "no_gradient": how,
                     "cause": cause, "threshold": f"{how} and the reward within "
                     f"{p['reward_band']:.0%} of its range over at least {int(p['min_points'])} "
                     f"points and {p['min_fraction']:.0%} of the log"})
    if evidence.get("blips_tolerated"):
        _, g = series(run, GRAD)
        how = f"{how} on {int(np.sum(g[i:] <= p['zero_grad'])):,} of them"
        evidence["threshold"] = (f"{evidence['threshold']}; over {_BLIPS_FROM}+ points, up to "
                                 f"{_BLIP_SHARE:.0%} of them live")
    dead = f"reward {flat} at {fmt(level)} over the last {n_dead} logged points, {how}"
    status = Status.CRITICAL
    blips = int(np.sum(np.abs(r - level) > p["reward_band"] * span)) if evidence.get(
        "blips_tolerated") else 0
    if i == 0 and blips and level >= float(np.max(r)) - p["reward_band"] * span and (
            _task_at_best(run)):
        # At the top of what it pays from the first step, a lucky group now and then: the
        # prompts were solved before training began (or are sampled near-greedily).
        status = Status.WARNING
        summary = (f"nothing to learn from the first logged step: {dead} (it moved on {blips} "
                   f"of {len(r)} logged points), the best it ever reached, with the task's own "
                   "score at its best: solved before training began")
        remedies: tuple[str | None, ...] = (
            "harder prompts (these are solved from the start), or check the rollout "
            "temperature: near-greedy samples score what the policy already knew",
            "dynamic sampling / filter prompts every group already solves")
    elif i == 0:
        moved = (f"it moved on {blips} of {len(r)} logged points only" if blips
                 else "it never varied")
        summary = f"no learning signal from the first logged step: {dead} ({moved})"
        terms = components(run)
        still = [n for n, v, _ in pinned_terms(run, 10) if v == level or v == 0]
        formats = [n for n in still if component_role(run, n) == "format"]
        # The total fixed while its terms pay: the terms' weights (trial 72: reward_weights
        # [0, 0], the reward 0 beside correctness 0.31 and format 0.42, read as a reward
        # function returning 0).
        paying = {n: float(np.nanmean(run.frame[c].to_numpy(dtype=np.float64)[i:]))
                  for n, c in terms.items() if n not in still and c in run.frame}
        paying = {n: v for n, v in paying.items() if np.isfinite(v) and v != 0}
        first = (
            Remedy(f"check the reward's weights: the reward was {fmt(level)} on every logged "
                   f"step while its terms paid ("
                   + ", ".join(f"{n} {fmt(v)}" for n, v in paying.items())
                   + "), so they are weighted to nothing (TRL's reward_weights) or the reward "
                   "is not their sum")
            if level == 0 and flat == "constant" and len(paying) == len(terms) and terms else
            # Every term silent, the format check's too: no completion took the form they all
            # parse (trial 57: both rewards read a tag the model never wrote).
            Remedy(f"check a few completions against the format the rewards parse: every "
                   f"reward term was 0 on every logged step, the format term "
                   f"({', '.join(formats)}) included, so no completion ever took the form "
                   "they read (a tag, a template, a stop before it)")
            if formats and len(terms) >= 2 and len(still) == len(terms) else
            Remedy(f"check the reward function on a few completions: it returned "
                   f"{fmt(level)} for (nearly) every one (broken parsing, a wrong field, or a "
                   "task it can never or always reward)"))
        remedies = (
            first,
            "an easier curriculum (or filter prompts) so that some completions differ",
            "dynamic sampling: drop groups whose rewards are all equal and refill the batch",
        )
    elif solved and _task_at_best(run) and (cut := knobs.sampling_cut(run)) is not None:
        # Solved for a cut sampler only: its groups hide what the policy still gets wrong
        # (trial 51: top_p 0.5, "stop here" where 0.53 was right sampled at top_p 1).
        status = Status.WARNING
        name, value, fix = cut
        summary = (f"nothing left to learn since step {step_text(start)}: {dead}, the best it "
                   f"ever reached, sampled at {name} {fmt(value)}: solved for the cut sampler, "
                   "which hides the answers the policy still gets wrong")
        remedies = (fix, "then look at groups sampled from the whole distribution")
    elif solved and _task_at_best(run) and _at_top_from_start(r, level, span, p):
        # Where it began too: nothing was learned, whatever came to a stop later (trial 63:
        # min_p 0.8, 1.49 of 1.5 from step 1, had read "the task is solved, stop here").
        status = Status.WARNING
        head = r[:_head_points(r)]
        summary = (f"nothing left to learn since step {step_text(start)}: {dead}, where it "
                   f"already was at the start ({fmt(float(np.median(head)))} over the first "
                   f"{len(head)} logged points): nothing was learned, the prompts solved before "
                   "training began, or sampled near-greedily")
        remedies = ("check the rollout sampling (temperature, top_p, top_k, min_p): "
                    "near-greedy samples score what the policy already knew; if it samples "
                    "the whole distribution, harder prompts (these were solved from the start)",
                    "dynamic sampling / filter prompts every group already solves")
    elif solved and _task_at_best(run) and (jump := _jumped_to_pass(run, start)) is not None:
        # The score jumped to its maximum in one step and held it exactly while the completions
        # did not change: a scorer passing everything, or groups sampled alike, not a solved
        # task (trial 80: the temperature 0.25 from step 161 read "the task is solved" below a
        # root cause saying the policy did not improve).
        status = Status.WARNING
        summary = (f"nothing left to learn since step {step_text(start)}: {dead}, where "
                   f"{jump.term} jumped to exactly {fmt(jump.value)} at step "
                   f"{step_text(jump.step)} while the completions did not change: a scorer "
                   "passing everything or groups sampled alike, not a solved task")
        remedies = (jump.fix(), "dynamic sampling / filter prompts every group already solves")
    elif solved and _task_at_best(run):
        status = Status.WARNING
        summary = (f"nothing left to learn since step {step_text(start)}: {dead}, the best it ever "
                   "reached, with the task's own score at its best (the task is solved)")
        remedies = ("stop here, or continue on harder prompts",
                    "dynamic sampling / filter prompts every group already solves")
    elif solved:
        # Flat at its best, but nothing in the log says the answers are right: a format term
        # at its maximum looks the same as a solved task.
        status = Status.WARNING
        summary = (f"no learning signal since step {step_text(start)}: {dead}, the best it "
                   "ever reached; the log does not show the task solved (no correctness or "
                   "held-out signal at its best)")
        remedies = ("check a few completions against the task: solved (continue on harder "
                    "prompts) or stuck on what the reward pays without solving it (fix the "
                    "reward)",
                    "dynamic sampling / filter prompts every group already solves")
    else:
        blown = any(not c.startswith("the reward") for c in cause)
        if blown:
            at = _update_step(run, steps, i, p)
        why = (f"; after a catastrophic update at step {step_text(at)}: {', '.join(cause)}" if blown
               else f"; after {cause[0]}" if cause else "")
        summary = f"no learning signal since step {step_text(start)}: {dead}{why}"
        beta, _ = knobs.current(run, knobs.KL_COEF)
        if not blown:
            lo = max(0, i - int(p["cause_window"]))
            top = lo + int(np.argmax(r[lo:i]))  # the last level the reward fell from
            remedies = (
                knobs.rollback(int(steps[top + 1]), f"roll back to a checkpoint from step "
                               f"{step_text(int(steps[top]))} or before, where the reward was "
                               f"still {fmt(float(r[top]))}"),
                "find what moved first (entropy, KL, length, grad norm): the reward lags",
                knobs.scale(run, knobs.LEARNING_RATE, 0.5),
            )
            # The dead stretch begins where the summary says; the fall before it is its
            # cause, dated in the summary (and by reward_overfit when it fired).
            return Outcome(status, summary, onset_step=start, evidence=evidence,
                           remedies=remedies, key_metric=REWARD)
        remedies = (
            knobs.rollback(at, f"restore the last checkpoint from before the update at step "
                           f"{fmt(at)}: training on cannot revive this policy"),
            knobs.scale(run, knobs.LEARNING_RATE, 0.1, why="one update destroyed the policy"),
            Remedy(f"{knobs.KL_COEF.label} 0 -> 0.01-0.04: a KL leash keeps one bad update "
                   "from walking the policy away" if beta == 0 else
                   "keep a KL coefficient above 0 (0.01-0.04)", knobs.KL_COEF),
            knobs.clip_gradients(run),
        )
    onset = at if cause else start
    return Outcome(status, summary, onset_step=onset, evidence=evidence,
                   remedies=remedies, key_metric=REWARD)


#: Logged steps between a score's jump to its maximum and the dead stretch for the one to be
#: the other's start.
_JUMP_NEAR = 5


def _jumped_to_pass(run: Run, start: int):  # -> ScorerStopped | None
    """The score that jumped to exactly its held maximum at (or just before) ``start`` with
    the completions unchanged (``scorer_stopped``, upward), or None."""
    stop = scorer_stopped(run)
    if stop is None or not stop.passes or not stop.exact:
        return None
    steps = run.steps
    i, j = int(np.searchsorted(steps, stop.step)), int(np.searchsorted(steps, start))
    return stop if abs(j - i) <= _JUMP_NEAR else None
