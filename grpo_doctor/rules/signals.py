"""Shared judgements several rules lean on: is reward still improving, is a signal rising.

Kept here so that "reward still improving" means the same thing in every rule's wording.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import permutations

from grpo_doctor.lazy import numpy as np
from grpo_doctor.lazy import pandas as pd
from grpo_doctor.metrics import Metric, is_reward_component
from grpo_doctor.rules.knobs import CLIP_HIGH, GROUP_SIZE, current, flatten, keyed, knob_value
from grpo_doctor.rules.points import (
    aligned,
    end_size,
    finite_rows,
    head_tail,
    late_points,
    logged,
    series,
)
from grpo_doctor.store import Run
from grpo_doctor.text import fmt, step_text
from grpo_doctor.trends import mann_kendall, rolling_median, shift_stands_out, step_noise


@dataclass(frozen=True)
class RewardProgress:
    logged: bool
    improving: bool  # still rising after ``since``
    declining: bool  # falling after ``since``
    start: float | None = None  # reward (median) around ``since``
    end: float | None = None  # reward (median) at the end
    best: float | None = None  # best smoothed reward over the run
    #: Why a rising reward is not progress (``learning``): None when the reward itself is
    #: what did not improve.
    not_the_task: str | None = None
    since: int | None = None  # the first step of the stretch judged
    #: The reward now as every finding of a report says it: the run's last tenth (at least
    #: 3 points), whatever stretch was judged; ``end`` is the stretch's own last fifth.
    now: float | None = None
    #: The typical step-to-step change of the stretch judged, as a standard deviation.
    noise: float | None = None
    #: The reward just before the stretch (its 3 logged points before ``since``), and the
    #: run's smoothed range: a crash at the onset is said from where it fell.
    before: float | None = None
    span: float | None = None
    #: The stretch's own best (smoothed) and its step: a fall from a peak reached after the
    #: onset is said from there, not as a fall from the start.
    peak: float | None = None
    peak_step: int | None = None

    def stalled_words(self) -> str:
        """What did not improve since the finding's onset, as a report says it, with its
        numbers so that the words never read as contradicting a rise earlier in the run
        ("reward not improving (0.91 -> 0.90)"; "correctness not improving" when the reward
        rose on other terms)."""
        if self.not_the_task:
            return self.not_the_task
        end = self.end
        if self.now is not None and end is not None and self.start is not None and (
                (self.now > self.start) == (end > self.start)):
            end = self.now  # said alike across findings, where it says the same direction
        if (self.before is not None and self.span and end is not None and self.start is not None
                and self.before - max(self.start, end) >= 0.25 * self.span):
            # It crashed as the finding began: the stretch from the onset starts below the
            # fall ("not improving (0.0553 -> 0.0397)" where it fell 0.72 -> 0.04).
            return f"reward falling ({fmt(self.before)} -> {fmt(end)}) as it began"
        if (self.declining and self.peak is not None and self.peak_step is not None
                and self.span and end is not None and self.start is not None
                and self.peak - self.start >= 0.2 * self.span
                and self.since is not None and self.peak_step > self.since):
            # It rose after the onset and fell later: "reward falling (0.713 -> 0.00625) from
            # step 5" of a reward that rose 0.2 -> 0.93 by step 45 and crashed at 150.
            return (f"reward rose to {fmt(self.peak)} by step {step_text(self.peak_step)}, "
                    f"then fell to {fmt(end)}")
        words = "reward falling" if self.declining else "reward not improving"
        if not self.declining and self.start is not None and end is not None and (
                end > self.start):
            words = "reward up only within its noise"  # not a significant rise
        if self.start is not None and end is not None:
            swings = ""
            if (not self.declining and self.noise
                    and (abs(end - self.start) >= self.noise / 4
                         or self.noise >= 0.5 * max(abs(self.start), abs(end)))):
                # A change that looks large (-4.74 -> 0.425) on a reward swinging +-4.5 from
                # one step to the next: the swing is said, so the words can be checked; and
                # a flat "4 -> 4" on a reward swinging +-3.67, beside "0.5 -> 4" over the
                # whole log, read as a contradiction (nu33).
                swings = f"; it swings ±{fmt(self.noise)} from step to step"
            words += f" ({fmt(self.start)} -> {fmt(end)}{swings})"
        return words


def reward_progress(run: Run, since: float, alpha: float = 0.05,
                    metric: str = Metric.REWARD_MEAN.value, min_points: int = 10
                    ) -> RewardProgress:
    """Did the mean reward (or ``metric``) keep improving from step ``since`` to the end?

    Improving: a significant upward trend after ``since`` or a late level clearly above the
    level at ``since`` (by a quarter of the run's smoothed reward range, and by twice the
    noise of the two medians compared). Declining: the mirror image. With fewer than 10
    logged values (``min_points``) nothing can be judged (``logged`` False); a segment
    shorter than 8 points is widened backwards to 8.
    """
    steps, r = series(run, metric)
    if len(r) < min_points:
        return RewardProgress(False, False, False)
    smooth = rolling_median(r, 5)
    span = float(np.ptp(smooth)) or 1e-12
    after = steps >= since
    if after.sum() < 8:
        after = np.zeros(len(r), dtype=bool)
        after[-8:] = True
    seg_s, seg_r = steps[after], r[after]
    test = mann_kendall(seg_s, seg_r)
    start, end = head_tail(seg_r, frac=0.2)
    gain = (end - start) / span
    # A level shift must also stand out of the noise of the two medians it compares: a
    # reward flat at 0.9 that a few samples per step swing 0.8-1.0 has a tiny smoothed
    # range, and a fifth of its log at 0.85 is not a decline.
    shift = shift_stands_out(end - start, step_noise(seg_r), end_size(len(seg_r), 0.2))
    improving = (test.increasing(alpha) and gain > 0) or (gain > 0.25 and shift)
    declining = (test.decreasing(alpha) and gain < 0) or (gain < -0.25 and shift)
    now = level_now(r)
    prior = r[steps < seg_s[0]][-3:]
    top = int(np.argmax(smooth[after]))
    return RewardProgress(True, bool(improving), bool(declining), start, end,
                          float(smooth.max()), since=int(seg_s[0]), now=now,
                          noise=step_noise(seg_r),
                          before=float(np.median(prior)) if len(prior) else None, span=span,
                          peak=float(smooth[after][top]), peak_step=int(seg_s[top]))


def task_progress(run: Run, since: float) -> RewardProgress:
    """Progress on the task itself, not on whatever the reward pays for: the held-out score
    when logged; else the correctness-like reward components (a format term can lift the total
    while every answer stays wrong); else the train reward."""
    held = reward_progress(run, since, metric=Metric.HELDOUT_SCORE.value)
    if held.logged:
        return held
    parts = [reward_progress(run, since, metric=col) for name, col in components(run).items()
             if component_role(run, name) == "correctness"]
    parts = [pr for pr in parts if pr.logged]
    if parts:
        return RewardProgress(True, any(pr.improving for pr in parts),
                              all(pr.declining for pr in parts))
    return reward_progress(run, since)


def learning(run: Run, since: float, min_points: int = 10) -> RewardProgress:
    """Is the run still learning after ``since``? The train reward improving, unless the
    held-out score is falling or no correctness-like component improves (a format term alone
    can lift the reward while every answer stays wrong). ``min_points``: the fewest logged
    values judged (see ``reward_progress``)."""
    progress = reward_progress(run, since, min_points=min_points)
    if not (progress.logged and progress.improving):
        return progress
    held = reward_progress(run, since, metric=Metric.HELDOUT_SCORE.value,
                           min_points=min_points)
    parts = [reward_progress(run, since, metric=col, min_points=min_points)
             for name, col in components(run).items()
             if component_role(run, name) == "correctness"]
    parts = [pr for pr in parts if pr.logged]
    if (held.logged and held.declining) or (parts and not any(pr.improving for pr in parts)):
        why = ("held-out score falling" if held.logged and held.declining else
               "correctness not improving (the reward rose on other terms)")
        return RewardProgress(True, False, progress.declining, progress.start, progress.end,
                              progress.best, not_the_task=why, since=progress.since)
    return progress


def reward_at_best(run: Run, before: float | None = None) -> bool:
    """The reward at its best level (up to step ``before``): its last 5 logged points within a
    tenth of its range of its best 5-point median. A plateau there is where a run that learned
    sits (converged); what was raised on it had broken nothing yet."""
    rs, r = series(run, Metric.REWARD_MEAN.value)
    if before is not None:
        r = r[rs < before]
    if len(r) < 10:
        return False
    smooth = rolling_median(r, 5)
    span = float(np.ptp(smooth))
    # Within its own noise of the best too: a plateau of batches swinging +-0.05 sits a
    # tenth of its range below its luckiest 5-point median (0.89 against 0.96 on a cosine
    # run whose held-out score was at its best; its equal groups went critical).
    slack = max(0.1 * span, 2 * step_noise(r))
    return span > 0 and float(np.median(r[-5:])) >= float(smooth.max()) - slack


#: A log whose first step comes this many logging intervals (and 20 steps) or more after the
#: run's start holds a later part of the run: a launch resumed from a checkpoint, a paste of
#: its tail.
LATE_START_INTERVALS = 5
_LATE_START_STEPS = 20
_MAX_LATE_LOGS = 100


def late_start(run: Run) -> int | None:
    """The log's first step when it starts well after the run began (its earlier steps are in
    another log, or none), else None: a level held from there was reached before it, not
    "never learned" (the second launch of a resumed run read alone: "no progress", trial 59)."""
    steps = run.steps
    if len(steps) < 2:
        return None
    first = int(steps[0])
    every = float(np.median(np.diff(steps)))
    # Not an axis of other units (a timestamp, a sample count at 2**62): a start more than a
    # hundred logs' worth of intervals in is no run's later part.
    plausible = first <= _MAX_LATE_LOGS * len(steps) * every
    return first if plausible and first >= max(_LATE_START_STEPS, LATE_START_INTERVALS * every
                                                ) else None


def zero_one_score(run: Run) -> tuple[np.ndarray, np.ndarray] | None:
    """(steps, values) of a 0/1 correctness score: a correctness-like reward component, else
    the reward, that stays within [0, 1] and comes near its top (0.9 or more). None when no
    logged reward is provably one (a sum of terms on another scale, a reward never near 1)."""
    candidates = [col for name, col in components(run).items()
                  if component_role(run, name) == "correctness"] or [Metric.REWARD_MEAN.value]
    for col in candidates:
        steps, r = series(run, col)
        if len(r) >= 3 and r.min() >= 0 and r.max() <= 1 and r.max() >= 0.9:
            return steps, r
    return None


def unsolved_equal_share(run: Run, steps: np.ndarray, z: np.ndarray) -> np.ndarray | None:
    """Per logged step, the share of groups with equal rewards that the log cannot prove
    all-correct (all-wrong, or stuck), from the zero-std shares ``z`` at ``steps``.

    The all-correct fraction when logged; else from a 0/1 score (``zero_one_score``): with a
    mean score r and a share z of equal groups, the all-correct groups are at least r - (1 - z)
    of the batch (a mixed group scores below 1). None when neither is logged; NaN at steps
    the score was not logged at.
    """
    correct_steps, correct = series(run, Metric.ALL_CORRECT_FRACTION.value)
    if len(correct) < 3:
        score = zero_one_score(run)
        if score is None:
            return None
        correct_steps, r = score
        correct = np.maximum(0.0, r - (1 - np.interp(correct_steps, steps, z)))
    at = np.interp(steps, correct_steps, correct, left=np.nan, right=np.nan)
    known = np.isin(steps, correct_steps)
    return np.where(known, np.clip(z - at, 0.0, z), np.nan)


def solved_share(run: Run, frac: float = 0.2, first: bool = False) -> float | None:
    """The share of equal-reward groups proven all-correct over the last ``frac`` of the log
    (``first``: its first ``frac``); None when the log cannot tell (see
    ``unsolved_equal_share``)."""
    steps, z = series(run, Metric.ZERO_STD_FRACTION.value)
    if len(z) < 3:
        return None
    u = unsolved_equal_share(run, steps, z)
    if u is None:
        return None
    keep = np.isfinite(u)
    if keep.sum() < 3:
        return None
    k = late_points(int(keep.sum()), frac, 2)
    part = slice(None, k) if first else slice(-k, None)
    z_late, u_late = float(np.mean(z[keep][part])), float(np.mean(u[keep][part]))
    return 1.0 - u_late / z_late if z_late > 0 else None


@dataclass(frozen=True)
class Memorised:
    """The training reward at its top while the task, as the held-out score measures it,
    never improved. ``kind``: "prompts" when a correctness term is at its top (the policy
    learned its training prompts, not the task); "reward" when no logged term pays
    correctness (the reward pays for something else: a format term alone); "either" when
    the log has no terms to tell the two apart."""

    kind: str
    train: str  # how the log shows the training side solved
    held_start: float  # held-out score, mean of its first fifth
    held_end: float  # and of its last fifth
    held_best: float
    terms: tuple[str, ...] = ()  # the reward's terms, for "reward"
    terms_from: str = "logged"  # where they were read: "logged" or "the config"
    # The training side was already at its top over the log's first logs: nothing was
    # learned, the rollouts score what the held-out set does not (samples drawn colder than
    # the evaluation's, or training prompts easier than the held-out ones).
    from_start: bool = False
    # The held-out score rose, then stalled from this step while the training side went on.
    plateau_at: int | None = None


#: A held-out score (0-1) that never rose by this much never improved.
HELDOUT_GAIN = 0.1


#: The share of a log whose training side, at its top already, was solved before learning.
_FIRST_LOGS = 0.05


def heldout_task_score(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values) of the held-out score on a 0-1 scale: the logged held-out score when it
    is one, else the evaluation's own mean of a correctness term (TRL's
    ``eval_rewards/<name>/mean`` beside ``rewards/<name>/mean``: its ``eval_reward`` sums the
    terms, 0-1.5 with a format term, trial 58). Empty when there is none."""
    steps, held = series(run, Metric.HELDOUT_SCORE.value)
    if len(held) and held.min() >= 0 and held.max() <= 1:
        return steps, held
    for name, col in components(run).items():
        if component_role(run, name) != "correctness":
            continue
        source = run.mapping.get(col, "")
        for prefix in ("eval_", "eval/", "val_", "val/"):
            twin = prefix + source
            if source and twin in run.frame.columns:
                s, x = run.finite_series(twin)
                if len(x) >= 5 and x.min() >= 0 and x.max() <= 1:
                    return s, x
    return steps[:0], held[:0]


def _heldout_plateau(held: np.ndarray, train: tuple[np.ndarray, np.ndarray],
                     held_steps: np.ndarray) -> bool:
    """The held-out score gained nothing over its last half (under half of ``HELDOUT_GAIN``)
    while the training score gained over the same steps: the policy went on learning what
    it trains on, not the task (trial 58: 8 training prompts, held-out 0.70 -> 0.72 from step
    100, training 0.86 -> 0.94). A harder held-out set that plateaued with the training side
    is not this."""
    half = len(held) // 2
    if half < 2:
        return False
    mid = float(np.mean(held[max(0, half - 1):half + 1]))
    end = float(np.mean(held[-2:]))
    if end - mid >= HELDOUT_GAIN / 2:
        return False
    ts, tv = train
    at = int(np.searchsorted(ts, held_steps[half]))
    if at < 3 or len(tv) - at < 3:
        return False
    return float(np.mean(tv[-max(3, len(tv) // 5):])) - float(np.mean(tv[at - 3:at + 3])) \
        >= HELDOUT_GAIN / 2


def train_set_memorised(run: Run, frac: float = 0.2) -> Memorised | None:
    """The training side solved at the end (a 0/1 training score at 0.9 or more, or most
    equal-reward groups all-correct) while the held-out score (0-1, 5 or more points) stayed
    below ``SOLVED_HELDOUT``, never rose by ``HELDOUT_GAIN`` from its first fifth, and ends
    0.3 or more below the training score. None otherwise (no held-out score logged says
    nothing)."""
    held_steps, held = heldout_task_score(run)
    if len(held) < 5 or held.min() < 0 or held.max() > 1:
        return None
    k = max(2, len(held) // 5)
    start, end = float(np.mean(held[:k])), float(np.mean(held[-k:]))
    score = zero_one_score(run)
    # Rose, then stalled while training went on: the prompts learned, not the task.
    stalled = score is not None and _heldout_plateau(held, score, held_steps)
    if end >= SOLVED_HELDOUT or (end - start >= HELDOUT_GAIN and not stalled):
        return None
    logged_terms = components(run)
    # No term logged: the config may name them (open-r1's reward_funcs). A term the config
    # weighs at 0 pays nothing: a correctness term at 0 is no correctness term.
    terms = tuple(n for n in (tuple(logged_terms) or configured_terms(run))
                  if configured_weight(run, n) != 0)
    correct = [n for n in terms if component_role(run, n) == "correctness"]
    kind = "prompts" if correct else "reward" if terms else "either"
    train_end = head_tail(score[1], frac=frac)[1] if score is not None else None
    if stalled and end - start >= HELDOUT_GAIN:
        # Rose, then stalled: only a gap of the held-out's own is the prompts' (a correctness
        # term to say it with, and the training side well above it).
        if not correct or train_end is None or train_end < 0.9 or train_end - end < HELDOUT_GAP:
            return None
        plateau_at = int(held_steps[len(held) // 2])
        return Memorised(kind, f"{', '.join(correct)} at {fmt(train_end)}", start, end,
                         float(held.max()), (), "logged", False, plateau_at)
    share = solved_share(run, frac)
    if train_end is not None and train_end >= 0.9 and train_end - end >= 0.3:
        what = (f"{', '.join(correct)} at {fmt(train_end)}" if correct else
                f"the reward at {fmt(train_end)}, the top of its 0-1 scale")
        from_start = score is not None and head_tail(score[1], frac=_FIRST_LOGS)[0] >= 0.9
    elif share is not None and share >= 0.8 and train_end is None and end <= 0.6:
        what = f"{share:.0%} of equal-reward groups all-correct"
        first = solved_share(run, _FIRST_LOGS, first=True)
        from_start = first is not None and first >= 0.8
    else:
        return None
    return Memorised(kind, what, start, end, float(held.max()),
                     terms if kind == "reward" else (),
                     "logged" if logged_terms else "the config", from_start)


#: A held-out score this far below a solved training score (0.9+) has not followed it.
HELDOUT_GAP = 0.2


def heldout_gap(run: Run, frac: float = 0.2) -> tuple[float, float] | None:
    """(training score, held-out score) at the end, when the 0/1 training score is at 0.9 or
    more and a 0-1 held-out score (5+ points) ends ``HELDOUT_GAP`` or more below it and below
    ``SOLVED_HELDOUT``: the training prompts are solved, the task is not. None otherwise."""
    score = zero_one_score(run)
    _, held = series(run, Metric.HELDOUT_SCORE.value)
    if score is None or len(held) < 5 or held.min() < 0 or held.max() > 1:
        return None
    train = head_tail(score[1], frac=frac)[1]
    k = max(2, len(held) // 5)
    end = float(np.mean(held[-k:]))
    if train < 0.9 or train - end < HELDOUT_GAP or end >= SOLVED_HELDOUT:
        return None
    return train, end


def task_solved(run: Run, frac: float = 0.2) -> bool:
    """Whether the log proves the task (nearly) solved at its end: most equal-reward groups
    all-correct (``solved_share``), or a 0/1 correctness score at 0.9 or more; never when
    the held-out score says only the training prompts were (``train_set_memorised``)."""
    if train_set_memorised(run, frac) is not None:
        return False
    share = solved_share(run, frac)
    if share is not None:
        return share >= 0.8
    score = zero_one_score(run)
    if score is not None and head_tail(score[1], frac=frac)[1] >= 0.9:
        return True
    return heldout_solved(run, frac) is not None


def heldout_solved(run: Run, frac: float = 0.2) -> float | None:
    """The late held-out score when it is on a 0-1 scale and at 0.9 or more: the policy gets
    nearly every prompt right, so the equal-reward groups of its training batches are
    all-correct ones. None otherwise."""
    _, held = series(run, Metric.HELDOUT_SCORE.value)
    if len(held) < 3 or held.min() < 0 or held.max() > 1:
        return None
    late = head_tail(held, frac=frac)[1]
    return late if late >= SOLVED_HELDOUT else None


#: A held-out score (0-1) at or above this says the task is nearly solved.
SOLVED_HELDOUT = 0.9


def mean_gain(run: Run, col: str, frac: float = 0.2) -> float:
    """Late minus early mean of ``col`` (the first and last ``frac`` of its points): a sparse
    0/1 correctness term (right on a few samples a step) has a median of 0 at both ends
    however much it improved."""
    v = series(run, col)[1]
    k = max(1, int(len(v) * frac))
    return float(np.mean(v[-k:]) - np.mean(v[:k])) if len(v) >= 2 else 0.0


#: Steps off its floor a sparse term must gain, late against early, to have improved.
_SPARSE_HITS = 3


def sparse_improving(run: Run, col: str, share: float = 0.1) -> bool:
    """The mean of ``col`` rose by ``share`` of its range or more (see ``mean_gain``). A term
    at its floor on most steps must also leave it on ``_SPARSE_HITS`` more of its last
    points than of its first: 2 right steps of the last 12 after none of the first 12 (a
    group of 2, one prompt a step) is chance, and read "the task improved" beside a
    correctness term that paid on 5 of 60 steps."""
    v = series(run, col)[1]
    rng = float(np.ptp(v)) if len(v) else 0.0
    if not (rng > 0 and mean_gain(run, col) > share * rng):
        return False
    off = v > float(np.min(v))
    if float(np.mean(off)) >= 0.5:
        return True  # not sparse: the mean's rise is the signal
    k = max(1, int(len(v) * 0.2))
    return int(off[-k:].sum()) - int(off[:k].sum()) >= _SPARSE_HITS


def sparse_declining(run: Run, col: str, share: float = 0.1) -> bool:
    """The mean of ``col`` fell by ``share`` of its range or more (see ``mean_gain``)."""
    v = series(run, col)[1]
    rng = float(np.ptp(v)) if len(v) else 0.0
    return rng > 0 and mean_gain(run, col) < -share * rng


def rising(run: Run, metric: str, alpha: float = 0.05) -> bool:
    """A significant upward trend in ``metric`` (False when it is not logged)."""
    steps, v = series(run, metric)
    if len(v) < 6:
        return False
    return mann_kendall(steps, v).increasing(alpha)


def late_level(run: Run, metric: str, frac: float = 0.2) -> float | None:
    """Median of the last ``frac`` of a metric's points, or None when not logged."""
    _, v = series(run, metric)
    if len(v) < 3:
        return None
    return head_tail(v, frac=frac)[1]


#: Config keys that name the reward's terms: a list of names (open-r1's and many TRL
#: scripts' ``reward_funcs``), or a table of weights keyed by name (``reward.weights``).
_TERM_LISTS = ("reward_funcs", "reward_functions")
#: Tables of a weight per term: a config's own, and a verl custom reward function's keyword
#: arguments (``reward_model.reward_kwargs.weights``).
_TERM_TABLES = ("reward.weights", "reward_weights", "reward_kwargs.weights")


#: Longest list written as text read as a list (a tracker's params are all text).
_MAX_LIST_TEXT = 10_000


def _as_list(value: object) -> object:
    """``value``, or the list it writes as text: MLflow and other trackers keep every param as
    a string ("[0.0, 1.0]", "['format_reward', 'accuracy_reward']"), which had left a
    correctness weight of 0 unread. Read as a literal, never evaluated."""
    if isinstance(value, str) and len(value) <= _MAX_LIST_TEXT:
        text = value.strip()
        if text.startswith(("[", "(")) and text.endswith(("]", ")")):
            import ast

            try:
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return value
            if isinstance(parsed, (list, tuple)):
                return list(parsed)
    return value


def configured_terms(run: Run) -> tuple[str, ...]:
    """The reward's terms as the run's config names them, in its order; () when it names
    none. TRL's ``reward_weights`` is a bare list of numbers: its terms are the logged ones in
    the one order that makes their weighted sum the logged reward (``_terms_by_weights``)."""
    flat = flatten(run.config) if run.config else {}
    for key, value in flat.items():
        if key.rsplit(".", 1)[-1] in _TERM_LISTS:
            value = _as_list(value)
            names = value.split(",") if isinstance(value, str) else value
            if isinstance(names, (list, tuple)):
                listed = tuple(str(n).strip().rsplit(".", 1)[-1] for n in names
                               if isinstance(n, str) and str(n).strip())
                if listed:
                    return listed
    found: list[str] = []
    for key in flat:
        for table in _TERM_TABLES:
            marker = table + "."
            if key.startswith(marker) or "." + marker in key:
                rest = key.split(marker, 1)[1]
                if rest and "." not in rest:
                    found.append(rest)
    if found:
        return tuple(found)
    weights = keyed(flat, "reward_weights")
    return _terms_by_weights(run, _as_list(weights))


#: The most terms whose orders ``_terms_by_weights`` tries (6! = 720 orders).
_MAX_ORDERED_TERMS = 6


def _terms_by_weights(run: Run, weights: object) -> tuple[str, ...]:
    """The logged reward terms in the order of a bare weight list: TRL logs the reward as the
    weighted sum of its terms (``reward_weights``, in the order of the reward functions the
    trainer was given, which no config holds), so the one assignment of the weights to the
    logged terms whose sum is the logged reward, step by step, names them. () when no
    assignment fits, or two different ones fit alike."""
    if not isinstance(weights, (list, tuple)) or not all(
            isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights):
        return ()
    logged = components(run)
    k = len(weights)
    if not 2 <= k <= _MAX_ORDERED_TERMS or len(logged) != k or not run.has(
            Metric.REWARD_MEAN.value):
        return ()
    names = list(logged)
    rows = finite_rows(run, [Metric.REWARD_MEAN.value, *logged.values()])
    if len(rows) < 5:
        return ()
    total = rows[Metric.REWARD_MEAN.value].to_numpy(dtype=float)
    terms = rows[list(logged.values())].to_numpy(dtype=float)
    fits: dict[tuple[float, ...], tuple[float, tuple[int, ...]]] = {}
    for order in permutations(range(k)):  # names[j] is paid weights[order[j]]
        w = tuple(float(weights[i]) for i in order)
        if w not in fits:
            # The mean, not the median: two terms equal on most steps differ on the others.
            fits[w] = (float(np.mean(np.abs(total - terms @ np.array(w)))), order)
    ranked = sorted(fits.values())
    scale = max(float(np.ptp(total)), float(np.median(np.abs(total))), 1e-6)
    best, order = ranked[0]
    if best > 0.01 * scale or (len(ranked) > 1 and ranked[1][0] <= max(3 * best,
                                                                       0.002 * scale)):
        return ()
    return tuple(names[order.index(i)] for i in range(k))


def configured_weight(run: Run, name: str) -> float | None:
    """The weight the config gives the reward term ``name``: ``reward_weights`` (a list in
    the order of the names ``configured_terms`` reads) or a ``reward.weights`` table; None
    when it gives none."""
    flat = flatten(run.config) if run.config else {}
    terms = configured_terms(run)
    for key, value in flat.items():
        last = key.rsplit(".", 1)[-1]
        value = _as_list(value) if last in _TERM_TABLES else value
        if last in _TERM_TABLES and isinstance(value, (list, tuple)) and len(value) == len(
                terms) and name in terms:
            weight = value[terms.index(name)]
        elif any(key.endswith(f"{t}.{name}") for t in _TERM_TABLES):
            weight = value
        else:
            continue
        if isinstance(weight, (int, float)) and not isinstance(weight, bool):
            return float(weight)
    return None


def unpaid_terms(run: Run) -> list[str]:
    """Correctness-like reward terms (``component_role``) the config weighs at exactly 0:
    named, and paying nothing for a right answer."""
    return [name for name in configured_terms(run) if configured_weight(run, name) == 0
            and component_role(run, name) == "correctness"]


def format_outweighs(run: Run) -> tuple[str, float, str, float] | None:
    """(format term, its weight, correctness term, its weight) when the config weighs a
    format-like term above every correctness-like one, both paid (> 0): the reward pays the
    form more than a right answer, the setting format gaming grows from. None otherwise."""
    terms = configured_terms(run)
    weights = {n: w for n in terms if (w := configured_weight(run, n)) is not None}
    fmt_terms = [(n, w) for n, w in weights.items() if w > 0
                 and component_role(run, n) == "format"]
    right = [(n, w) for n, w in weights.items() if w > 0
             and component_role(run, n) == "correctness"]
    if not fmt_terms or not right:
        return None
    f_name, f_w = max(fmt_terms, key=lambda t: t[1])
    c_name, c_w = max(right, key=lambda t: t[1])
    return (f_name, f_w, c_name, c_w) if f_w > c_w else None


def flipped_terms(run: Run) -> list[tuple[str, float]]:
    """(name, weight) of each reward term the config weighs below 0 that is no cost: a
    format- or correctness-like term (``component_role``) charged rather than paid, so the
    policy is paid to avoid what it checks. A cost term (a length penalty) or an anti-cheat
    term is charged by design."""
    return [(name, weight) for name in configured_terms(run)
            if (weight := configured_weight(run, name)) is not None and weight < 0
            and component_role(run, name) in ("format", "correctness")]


#: Words that name a reward term paid (or charged) by completion length.
_LENGTH_TERM = re.compile(r"(length|(^|[_\W])len([_\W]|$)|cost|brev|concise|short|overlong|"
                          r"verbos)", re.IGNORECASE)


def length_term(name: str) -> bool:
    """A reward term whose name says it pays or charges for completion length."""
    return role_by_name(name) == "other" and bool(_LENGTH_TERM.search(name))


def components(run: Run) -> dict[str, str]:
    """Reward components logged with a value: short name -> canonical column. (A term
    logged on every step with no value, TRL's None, is advantage_collapse's evidence.)"""
    from grpo_doctor.metrics import REWARD_COMPONENT_PREFIX

    return {c[len(REWARD_COMPONENT_PREFIX):]: c for c in run.frame.columns
            if c.startswith(REWARD_COMPONENT_PREFIX) and run.holds_value(c)}


def pinned_terms(run: Run, min_steps: int) -> list[tuple[str, float, int]]:
    """(name, value, logged steps) of each reward term that held one value on every one of
    its ``min_steps``+ logged steps, when the run logs two or more terms: a term that never
    told two completions apart, so it adds nothing to any group's advantage."""
    comps = [c for c in run.frame.columns if is_reward_component(c)]
    if len(comps) < 2:
        return []
    out: list[tuple[str, float, int]] = []
    for c in comps:
        _, v = series(run, c)
        if len(v) >= min_steps and np.ptp(v) == 0:
            out.append((c.split("/", 1)[1], float(v[0]), logged(run, c)))
    return out


_FORMAT_WORDS = ("format", "xml", "tag", "think", "structure", "style", "syntax", "valid")
_CORRECT_WORDS = ("correct", "accura", "answer", "acc", "exact", "match_answer", "math",
                  "equation", "verif", "solve",
                  "solution", "pass", "success", "strategy", "numbers", "score", "check")
_CHEAT_WORDS = ("cheat", "hack", "violation", "forbidden", "exploit", "tamper", "integrity")


#: A component whose rank correlation with the held-out score is at least this, over at
#: least ``_MIN_SHARED`` shared steps, tracks it: correctness-like whatever its name.
_TRACKS_HELDOUT = 0.7
_MIN_SHARED = 8


def role_by_name(name: str) -> str:
    """'cheat' (an anti-cheat term), 'format', 'correctness' or 'other', from its name."""
    n = name.lower()
    if any(w in n for w in _CHEAT_WORDS):
        return "cheat"
    if any(w in n for w in _FORMAT_WORDS) and "answer" not in n:
        return "format"
    if any(w in n for w in _CORRECT_WORDS):
        return "correctness"
    return "other"


def role_and_reason(run: Run, name: str) -> tuple[str, str]:
    """A reward component's role and why: given by the user (``--reward-role``,
    ``[rewards]``), else read from its name, else from its values: a term that stays within
    [0, 1] and tracks the held-out score is correctness-like (``mc_idx_reward``), one at its
    maximum from early on, beside a correctness-like term, is format-like."""
    given = run.reward_roles.get(name)
    if given:
        return given, "given (--reward-role / [rewards])"
    by_name = role_by_name(name)
    if by_name != "other":
        return by_name, "from its name"
    col = components(run).get(name)
    if col is None:
        return "other", "not logged"
    tracks = _heldout_correlation(run, col)
    if tracks is not None and tracks >= _TRACKS_HELDOUT:
        return "correctness", f"it tracks the held-out score (rank correlation {tracks:.2f})"
    saturated = _saturated_from(run, col)
    lengthy = _length_correlation(run, col) if saturated is not None else None
    if lengthy is not None and lengthy >= _TRACKS_LENGTH:
        # At its maximum because the completions reached the cap: a term that pays length,
        # not a format met (trial 64's "effort_reward", 1.0 per character, had read format).
        return "other", (f"it tracks the completion length (rank correlation {lengthy:.2f}), "
                         f"at its maximum from step {saturated:,} on")
    if saturated is not None and any(role_by_name(n) == "correctness" or (
            n != name and (r := _heldout_correlation(run, c)) is not None
            and r >= _TRACKS_HELDOUT) for n, c in components(run).items()):
        return "format", f"at its maximum from step {saturated:,} on, beside the task's term"
    return "other", "neither its name nor its values say"


def component_role(run: Run, name: str) -> str:
    """A reward component's role (``role_and_reason`` without the why)."""
    return role_and_reason(run, name)[0]


def _heldout_correlation(run: Run, col: str) -> float | None:
    """Rank correlation of a [0, 1] component with the held-out score on the steps both
    logged, or None (no held-out score, too few shared steps, a term outside [0, 1] or flat)."""
    if not run.has(Metric.HELDOUT_SCORE.value):
        return None
    _, v = series(run, col)
    if len(v) < _MIN_SHARED or v.min() < 0 or v.max() > 1:
        return None
    _, v_at, h_at = aligned(run, col, Metric.HELDOUT_SCORE.value)
    if len(v_at) < _MIN_SHARED:
        return None
    return rank_correlation(v_at, h_at)  # None when either is flat


#: A term whose logged values rank with the completion length this closely moves with it.
_TRACKS_LENGTH = 0.9


def _length_correlation(run: Run, col: str) -> float | None:
    """Rank correlation of a reward term with the mean completion length over 20+ shared
    logged points, or None."""
    _, v, length = aligned(run, col, Metric.RESPONSE_LENGTH_MEAN.value)
    return rank_correlation(v, length) if len(v) >= 20 else None


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rho of two aligned series (ties share their average rank: a term pinned at 1
    ranks as one value), or None when either is constant. Computed here: pandas would need
    scipy for it, which is not a dependency."""
    ranks_a = pd.Series(a).rank().to_numpy()
    ranks_b = pd.Series(b).rank().to_numpy()
    if np.ptp(ranks_a) == 0 or np.ptp(ranks_b) == 0:
        return None
    return float(np.corrcoef(ranks_a, ranks_b)[0, 1])


def _saturated_from(run: Run, col: str) -> int | None:
    """The step from which a component that varied sits at its maximum (within 5% of its
    range on 90% of the points after), when that is within the first quarter of its log."""
    steps, v = series(run, col)
    if len(v) < 12 or np.ptp(v) == 0:
        return None
    top = v.max() - 0.05 * np.ptp(v)
    at_top = v >= top
    for i in range(len(v) // 4 + 1):
        if at_top[i] and at_top[i:].mean() >= 0.9:
            return int(steps[i])
    return None


def level_now(values: np.ndarray) -> float:
    """A series' level "now", as every finding of a report says it: the median of the run's
    last tenth (at least 3 points)."""
    return float(np.median(values[-max(3, len(values) // 10):]))


#: How many times the lr a run trained at a burst must exceed, and the most logged points
#: after the burst's last one at which the break may begin and still be the burst's doing.
_BURST_FACTOR = 10.0
_BURST_REACH = 3


@dataclass(frozen=True)
class LrBurst:
    """A stretch at the start of a schedule where the logged lr was many times what the run
    trained at after it, ending in one drop (a schedule starting at its peak, a warm-up set
    the wrong way round): the update that broke the run was taken at the burst's lr."""

    first: int
    last: int
    peak: float
    after: float


def lr_burst(run: Run, step: int) -> LrBurst | None:
    """The burst that the break at ``step`` followed, if any: the logged lr at or before
    ``step`` peaked at ``_BURST_FACTOR``x or more the median lr after it, fell below a tenth
    of that peak from one logged point to the next, and ``step`` is within
    ``_BURST_REACH`` logged points of that drop. A schedule that decays smoothly has no such
    drop, however far it falls."""
    ls, lr = series(run, Metric.LEARNING_RATE.value)
    upto = ls <= step
    if len(lr) < 8 or not upto.any():
        return None
    peak = float(lr[upto].max())
    high = np.flatnonzero(lr >= 0.5 * peak)
    drops = [i for i in high if i + 1 < len(lr) and lr[i + 1] <= peak / _BURST_FACTOR]
    if peak <= 0 or not drops:
        return None
    end = drops[0]
    if end - high[0] + 1 > max(3, len(lr) // 10):
        return None  # a long stretch at a higher lr is a stepped schedule, not a burst
    later = lr[end + 1:]
    later = later[later > 0]
    if len(later) < 5 or step > int(ls[min(end + _BURST_REACH, len(ls) - 1)]):
        return None
    after = float(np.median(later))
    if peak < _BURST_FACTOR * after:
        return None
    return LrBurst(int(ls[high[0]]), int(ls[end]), peak, after)


@dataclass(frozen=True)
class UnfinishedWarmup:
    """A learning-rate warm-up still climbing at the log's end, far below the configured
    peak: the run never trained at its learning rate."""

    first: float  # the first logged lr above 0
    last: float
    configured: float
    setting: str | None  # "warmup_steps 10000" or "warmup_ratio 2" when the config says
    run_steps: int  # the run's length: max_steps from the config, else the last logged step

    def fix(self) -> str:
        """The warm-up for the next run: about a tenth of its steps."""
        tenth = max(1, round(self.run_steps / 10))
        if self.setting is None:
            return (f"a warm-up of about {tenth:,} steps (a tenth of the run), so the lr "
                    f"reaches {knob_value(self.configured)}")
        name, value = self.setting.split(" ", 1)
        return f"{name} {value} -> {'0.1' if name == 'warmup_ratio' else f'{tenth:,}'}"

    def words(self) -> str:
        said = f" in a run of {self.run_steps:,} steps" if self.setting else ""
        return (f"the warm-up never ended{said}: the logged lr climbed "
                f"{knob_value(self.first)} -> {knob_value(self.last)}, "
                f"{self.last / self.configured:.0%} of the configured "
                f"{knob_value(self.configured)}, so the run never trained at its learning rate")


#: A warm-up whose lr at the log's end is at most this share of the configured peak.
_WARMUP_SHORT_OF = 0.25


def unfinished_warmup(run: Run) -> UnfinishedWarmup | None:
    """The warm-up that never ended, from the logged lr: 10+ logged values, never falling,
    ending at least 3x its first value above 0 and at most a quarter of the configured lr, on
    a run whose warm-up the config sets as long as the run itself (or, without that setting,
    a log that reaches its configured last step). None otherwise: a schedule that peaked, a
    log without lr or config lr, a run stopped or watched in its warm-up (normal there)."""
    flat = flatten(run.config) if run.config else {}
    configured = _config_number(flat, ("learning_rate", "lr", "actor_learning_rate"))
    _, lr = series(run, Metric.LEARNING_RATE.value)
    lr = lr[lr > 0]
    if configured is None or configured <= 0 or len(lr) < 10:
        return None
    falls = np.diff(lr) < -1e-3 * float(lr.max())
    if falls.any() or lr[-1] < 3 * lr[0] or lr[-1] > _WARMUP_SHORT_OF * configured:
        return None
    total = _config_number(flat, ("max_steps", "total_training_steps"))
    last = float(run.last_step or 0)
    setting, longer = None, False
    for key in ("warmup_steps", "num_warmup_steps", "lr_warmup_steps", "warmup_ratio",
                "lr_warmup_steps_ratio"):
        value = _config_number(flat, (key,))
        if value:
            setting = f"{key} {fmt(value)}"
            longer = value >= 1 if "ratio" in key else bool(total) and value >= (total or 0)
            break
    if not longer and not (total and last >= 0.9 * total):
        return None
    return UnfinishedWarmup(float(lr[0]), float(lr[-1]), configured, setting, int(total or last))


def _config_number(flat: dict[str, object], names: tuple[str, ...]) -> float | None:
    """The first of ``names`` (a key or a key's last part) the flat config holds as a number."""
    for name in names:
        for key, value in flat.items():
            if key == name or key.endswith("." + name):
                try:
                    x = float(value)  # type: ignore[arg-type]
                except (TypeError, ValueError):
                    continue
                if np.isfinite(x):
                    return x
    return None


@dataclass(frozen=True)
class UnscoredShare:
    """A logged reward below the sum of its terms: some completions were scored by no value
    (None) of a reward function (``unscored_share``)."""

    reward: float  # the reward's late mean
    terms: float  # the weighted sum of its terms' late means
    below: int  # logged steps where the reward fell short of the sum
    steps: int  # logged steps with the reward and every term
    term: str | None  # the term whose gaps track the shortfall, where one does
    share: float | None  # about what share of that term's completions went unscored

    def words(self) -> str:
        who = (f"{self.term} returns None (or NaN) on some completions (about "
               f"{self.share:.0%} of them), which TRL leaves out of its mean"
               if self.term and self.share else "a reward function returns None (or NaN) on "
               "some completions, which TRL leaves out of that term's mean")
        return (f"the logged reward ({fmt(self.reward)} late in the run) is below the sum of its "
                f"terms' means ({fmt(self.terms)}) on {self.below:,} of {self.steps:,} logged "
                f"steps: {who} and pays nothing for; fix the function (an exception or a parse "
                "that fails), not the training")


#: The shortfall, as a share of the reward's scale, on the typical step and on nearly every
#: step, that no rounding of the logged values reaches (exactly 0 on every step of a run
#: whose functions always return a number).
_UNSCORED_GAP = 0.03
_UNSCORED_STEPS = 0.9


def unscored_share(run: Run, min_steps: int = 20) -> UnscoredShare | None:
    """The shortfall of TRL's logged reward against its terms, when some completions went
    unscored. TRL sums the weighted terms per completion ignoring NaN (a function's None) and
    logs each term's mean over the completions it scored: with every function returning a
    number, the reward is the weighted sum of the terms' means on every step; a term that
    returned None on a third of completions leaves the reward a third of its mean short
    (trial 52). Read only where the config is TRL's (its ``reward_weights``, None for all 1)
    and its weights are one number; None otherwise."""
    flat = flatten(run.config) if run.config else {}
    if "reward_weights" not in flat:
        return None
    weights = _as_list(flat["reward_weights"])
    if weights is None or weights in ("None", "null", ""):  # a tracker's text of None
        weight = 1.0
    elif isinstance(weights, (list, tuple)) and weights and len({
            float(w) for w in weights if isinstance(w, (int, float))}) == 1 and all(
            isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights):
        weight = float(weights[0])
    else:
        return None
    terms = components(run)
    if len(terms) < 1 or weight <= 0 or not run.has(Metric.REWARD_MEAN.value):
        return None
    if isinstance(weights, (list, tuple)) and len(weights) != len(terms):
        return None
    rows = finite_rows(run, [Metric.REWARD_MEAN.value, *terms.values()])
    if len(rows) < min_steps:
        return None
    reward = rows[Metric.REWARD_MEAN.value].to_numpy(dtype=float)
    parts = rows[list(terms.values())].to_numpy(dtype=float)
    gap = weight * parts.sum(axis=1) - reward
    scale = max(float(np.ptp(reward)), float(np.median(np.abs(reward))), 1e-6)
    short = gap > 0.3 * _UNSCORED_GAP * scale
    if float(np.median(gap)) < _UNSCORED_GAP * scale or short.mean() < _UNSCORED_STEPS:
        return None
    k = max(3, len(rows) // 5)
    term, share = None, None
    fit = np.linalg.lstsq(weight * parts, gap, rcond=None)[0]
    top = int(np.argmax(fit))
    if 0.02 <= fit[top] <= 1.0 and all(f <= 0.25 * fit[top] for i, f in enumerate(fit)
                                       if i != top):
        term, share = list(terms)[top], float(fit[top])
    return UnscoredShare(float(np.mean(reward[-k:])), float(np.mean(weight * parts[-k:].sum(
        axis=1))), int(short.sum()), len(rows), term, share)


@dataclass(frozen=True)
class ScorerStopped:
    """A reward term that dropped at one step to a value it then held exactly on every
    logged step, while the completions it scored did not change (``scorer_stopped``)."""

    term: str
    step: int  # the first logged step at the held value
    value: float
    before: float  # the term's level over the logged points just before ``step``
    held: int  # logged steps at ``value`` from ``step`` on
    policy: tuple[tuple[str, float, float], ...]  # (signal, before, after) that held still
    exact: bool = True  # every one of them exactly ``value``; else near it
    after_range: tuple[float, float] | None = None  # (lowest, highest) from ``step`` on
    # The config's setting that serves the prompts in the dataset's own order ("shuffle_dataset
    # False"), when it says so: a fall onto a slice of other prompts, not a grader's.
    unshuffled: str | None = None

    @property
    def data_order(self) -> bool:
        """A fall onto a slice of other prompts that the config serves in order, not a
        grader's: scored about a level (not exactly), shuffling off."""
        return bool(self.unshuffled) and not self.exact and not self.passes

    @property
    def passes(self) -> bool:
        """Whether it jumped up to the held value (a scorer passing everything), not down."""
        return self.value > self.before

    def words(self) -> str:
        still = ", ".join(f"{n} {fmt(a)} -> {fmt(b)}" for n, a, b in self.policy)
        moved, what = (("jumped", "the scorer passes everything, or each group's completions "
                        "became alike (sampling gone near-greedy: the logged entropy is the "
                        "policy's, not the sampler's); the policy did not improve")
                       if self.passes else ("fell", "the scorer stopped, not the policy"))
        if self.exact:
            since = f"was exactly {fmt(self.value)} on all {self.held:,} logged steps since"
        else:
            low, high = self.after_range or (self.value, self.value)
            since = (f"stayed at {fmt(low)}-{fmt(high)} on all {self.held:,} logged steps "
                     "since" if high - low <= 0.5 * (self.before - self.value) else
                     f"held about {fmt(self.value)} (the median) over the {self.held:,} "
                     "logged steps since")
            what = (f"the prompts changed, not the policy ({self.unshuffled}: the dataset is "
                    "served in its own order)" if self.unshuffled else
                    "the prompts served, or the answers they are checked against, changed (a "
                    "new slice of the data, a key or data column), not the policy")
        return (f"{self.term} {moved} from {fmt(self.before)} to {fmt(self.value)} at step "
                f"{step_text(self.step)} and {since}, while the completions did not change "
                f"({still}): {what}")

    def evidence(self) -> dict[str, object]:
        """What a finding carries of it, for the root cause to lead with (``said``, ``fix``)."""
        return {"term": self.term, "step": self.step, "value": self.value,
                "said": self.words(), "fix": self.fix(), "before": round(self.before, 4),
                "data_order": self.data_order,
                "held_steps": self.held,
                "policy": {n: [round(a, 4), round(b, 4)] for n, a, b in self.policy}}

    def fix(self) -> str:
        """The first thing to do about it."""
        why = ("a check that passes everything: an exception caught and scored as a pass, an "
               "empty answer key, a fallback or cached score" if self.passes else
               f"a grader or reward server down, an exception caught and scored "
               f"{fmt(self.value)}, a changed answer key" if self.exact else
               "the answer key or data column those prompts are checked against, a changed "
               "grader")
        scored = (f"it scored every one {fmt(self.value)} from there" if self.exact else
                  f"it scored about {fmt(self.value)} from there, against "
                  f"{fmt(self.before)} before, on completions like the earlier ones")
        if self.data_order:
            # A sorted or concatenated dataset read in order: a harder slice from this step.
            return (f"look at the prompts served from step {step_text(self.step)} on: "
                    f"{self.term} scored about {fmt(self.value)} on them, against "
                    f"{fmt(self.before)} before, on completions like the earlier ones; "
                    f"{self.unshuffled} serves the dataset in its own order, so a slice of "
                    # (The answers first: shuffled, a bad key on those rows would be spread
                    # through the run and hidden; trial 73.)
                    "other or harder prompts reads as a fall: check those rows' answers "
                    "first; if they are right (a harder slice), shuffle it (shuffle_dataset "
                    "True, verl's data.shuffle True)")
        if not self.exact and not self.passes:
            why = ("the prompts served from there (a new slice of the data) or the answer key "
                   "or data column they are checked against, a changed grader")
        also = (f"; if each group's completions are the same, the sampler changed at step "
                f"{step_text(self.step)} instead (a temperature or generation setting): restore "
                "it" if self.passes and self.exact else "")
        # (trial 80: the sampling temperature set to 0.25 from step 161 read only as a scorer
        # passing everything; the scalars cannot tell the two apart)
        return (f"check {self.term} on completions from step {step_text(self.step)} on: "
                f"{scored} ({why}){also}")


#: Logged points on each side of the drop that the policy's signals are compared over, and
#: the relative change of their medians under which the completions "did not change".
_SCORER_WINDOW = 10
_POLICY_STILL = 0.15
#: How far an entropy (in nats) may rise across a drop and the policy still count as
#: unchanged, whatever 15% of its level is (a level shift's signals may move so either way,
#: ``_level_shift``).
_ENTROPY_STILL = 0.05


#: The share of a drop within which a term's values after it count as held near its end
#: level when they are not exactly one value; and, for a level shift (``_level_shift``), the
#: share of its window medians that may stray back above a third of the drop.
_NEAR_DROP = 0.2
_STRAYS = 0.1


def _trailing_holds(v: np.ndarray) -> list[tuple[int, float, bool]]:
    """The stretches at the end of ``v`` held at one level, as (points, level, exactly): the
    run of its last value; then the run of points within a fifth of the term's range of the
    median of its last ``_SCORER_WINDOW`` (a last run of exact 0s may be the latest part of a
    longer stretch at 0-1/32; the caller checks each against the drop itself)."""
    n = len(v)
    end = float(v[-1])
    off = v != end
    held = n - int(np.flatnonzero(off)[-1]) - 1 if off.any() else n
    level = float(np.median(v[-_SCORER_WINDOW:]))
    far = np.abs(v - level) > _NEAR_DROP * float(np.ptp(v))
    return [(held, end, True),
            ((n - int(np.flatnonzero(far)[-1]) - 1 if far.any() else n), level, False)]


def _level_shift(run: Run, name: str, v: np.ndarray, steps: np.ndarray
                 ) -> tuple[int, float, bool] | None:
    """The stretch after the sharpest fall of a correctness term's level between two windows
    of ``_SCORER_WINDOW`` points, as (points, its median, False), when the other reward terms
    held their level across it and three windows or more follow: a term scored on a few
    prompts a step swings by a third from step to step, so no fifth of a band holds it
    (trial 58: correctness 0.83, then 0-0.69 around 0.22 once a harder task was served from
    step 101, the format term 0.49 throughout). A format term that fell is the policy's
    doing (one a weight taught it to drop), so only the task's own term is read so."""
    n, w = len(v), _SCORER_WINDOW
    if n < 5 * w or component_role(run, name) != "correctness":
        return None
    total = np.concatenate([[0.0], np.cumsum(v)])
    split = np.arange(w, n - 3 * w + 1)
    fall = (total[split] - total[split - w]) / w - (total[split + w] - total[split]) / w
    at = int(split[int(np.argmax(fall))])
    others = [col for other, col in components(run).items() if other != name]
    for col in [*others, Metric.LEARNING_RATE.value]:
        s, x = series(run, col)
        a, b = x[s < steps[at]][-w:], x[s >= steps[at]][:w]
        if len(a) < 3 or len(b) < 3:
            continue
        before, after = float(np.median(a)), float(np.median(b))
        if col == Metric.LEARNING_RATE.value:
            if after > 1.2 * before:
                return None  # the step size grew into the fall (a warm-up overshooting)
        elif abs(after - before) > max(_POLICY_STILL * abs(before), _ENTROPY_STILL):
            return None
    return n - at, float(np.median(v[at:])), False


def _held_by_chance(v: np.ndarray, pre: np.ndarray, end: float, held: int) -> float:
    """The chance that a 0-1 term at the level ``pre`` shows (a mean of 0/1 scores over the
    completions its values' granularity gives, 16 or more) logs exactly ``end`` on ``held``
    steps in a row; 1.0 where the term is of another kind."""
    n = _completions_per_step(v)
    if n is None or n < _GAPS_MIN_COMPLETIONS or v.min() < 0 or v.max() > 1:
        return 1.0
    p = min(max(float(np.mean(pre)), 1e-9), 1 - 1e-9)
    k = int(round(end * n))
    log_pmf = (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
               + k * math.log(p) + (n - k) * math.log(1 - p))
    return math.exp(max(held * log_pmf, -700.0))


def _stop_at(run: Run, name: str, steps: np.ndarray, v: np.ndarray, held: int, end: float,
             exact: bool, smoothed: bool = False) -> ScorerStopped | None:
    """The scorer stop a term's last ``held`` points at ``end`` make, if they do."""
    n = len(v)
    if held < _SCORER_WINDOW or n - held < 2 * _SCORER_WINDOW:
        return None
    pre = v[n - held - _SCORER_WINDOW:n - held]
    level = float(np.median(pre))
    span = float(np.ptp(v[:n - held]))
    just_before = float(np.median(v[n - held - 3:n - held]))
    tail = v[n - held:]
    # Near its end level: exactly there, or (a policy still scoring a few by chance against a
    # changed answer key) within a fifth of the drop of it on every step.
    band = 0.0 if exact else _NEAR_DROP * (level - end)
    at_end = np.abs(pre - end) <= band
    # A drop to a floor the term seldom touched before, still up just before it: not a score
    # that wore down to 0, nor one that sat at 0 on most steps anyway. Or a jump to a value
    # its level before could not have held exactly (a scorer passing everything).
    # A level shift (``_level_shift``): its level, the median of a window around each point
    # (a noisy term's step values swing past any band), not back above a third of the drop
    # but on a few points, never above half of it (below the end level is no recovery).
    if not smoothed:
        held_near = bool(np.all(np.abs(tail - end) <= band))
    else:
        level_of = rolling_median(tail, _SCORER_WINDOW)
        held_near = (float(np.mean(level_of > end + (level - end) / 3)) <= _STRAYS
                     and bool(np.all(level_of < (level + end) / 2)))
    dropped = (span > 0 and level - end >= 0.5 * span and float(np.mean(at_end)) < 0.2
               and just_before - end >= 0.5 * (level - end) and held_near)
    if not (dropped or (exact and float(np.mean(pre == end)) < 0.2 and end - level >= 0.05
                        and end - just_before >= 0.5 * (end - level)
                        and _held_by_chance(v, pre, end, held) < 1e-6)):
        return None
    at = int(steps[n - held])
    policy: list[tuple[str, float, float]] = []
    for label, metric in (("length", Metric.RESPONSE_LENGTH_MEAN.value),
                          ("entropy", Metric.ENTROPY.value)):
        s, x = series(run, metric)
        a, b = x[s < at][-_SCORER_WINDOW:], x[s >= at][:_SCORER_WINDOW]
        if len(a) < 3 or len(b) < 3:
            continue
        before, after = float(np.median(a)), float(np.median(b))
        # (An entropy near its floor moves by more than 15% for a few hundredths of a nat: a
        # new slice of prompts at step 121 took 0.071 to 0.084 and read "the policy changed";
        # trial 77.)
        # (Up only: an entropy that fell at the drop, however little, is the policy's own
        # collapse, not new prompts; h111.)
        still = _ENTROPY_STILL if label == "entropy" and after > before else 0.0
        if abs(after - before) > max(_POLICY_STILL * max(abs(before), 1e-9), still):
            return None
        policy.append((label, before, after))
    if not policy:
        return None
    return ScorerStopped(name, at, end, level, held, tuple(policy), exact,
                         (float(tail.min()), float(tail.max())), unshuffled(run))


def unshuffled(run: Run) -> str | None:
    """The config's setting that turns shuffling of the training prompts off, as "KEY
    False" (TRL's ``shuffle_dataset``, verl's ``data.shuffle``); None when it shuffles or
    does not say."""
    flat = flatten(run.config) if run.config else {}
    for key, value in flat.items():
        if key.rsplit(".", 1)[-1] == "shuffle_dataset" or key == "data.shuffle" or (
                key.endswith(".data.shuffle")):
            text = str(value).strip().lower()
            if text in ("false", "0", "no", "off"):
                return f"{key} False"
    return None


def scorer_stopped(run: Run) -> ScorerStopped | None:
    """The reward term whose scorer stopped: it fell at one step from its level to a value it
    then held exactly on every logged step to the end (10+ of them, so that a live poll names
    it 10 steps after the drop), while the completions' length and entropy kept their level
    across the drop. A policy that breaks changes what it writes; a grader that goes down (an
    outage, an exception caught and scored 0, a changed answer key) does not (trial 53:
    correctness 0.75 -> 0.000 from step 101 to 200, length 9.0 -> 9.0, entropy 0.08 -> 0.08,
    read as an entropy collapse from step 1). Or a 0-1 term that jumped to a value its level
    before could not have held exactly on those steps by chance (``_held_by_chance`` under
    1e-6), the completions as still: a scorer passing everything (trial 55: correctness 0.85
    -> exactly 1 on 256 of 256 completions on all 80 steps from 121, read as a solved task).
    None when no term did, or no length or entropy is logged to show the completions held."""
    found: ScorerStopped | None = None
    for name, col in components(run).items():
        steps, v = series(run, col)
        if len(v) < 3 * _SCORER_WINDOW:
            continue
        shift = _level_shift(run, name, v, steps)
        holds = [(h, e, x, False) for h, e, x in _trailing_holds(v)]
        for held, end, exact, smoothed in holds + ([(*shift, True)] if shift else []):
            stop = _stop_at(run, name, steps, v, held, end, exact, smoothed)
            if stop is not None:
                if found is None or stop.step < found.step:
                    found = stop
                break
    return found


@dataclass(frozen=True)
class ScorerGaps:
    """A 0-1 reward term at its floor on many scattered steps whose neighbours score well
    above it, more often than all of a step's prompt groups failing together explains: the
    scorer failed on those calls (``scorer_gaps``)."""

    term: str
    value: float  # the floor it dropped to
    steps: tuple[int, ...]  # the logged steps at it
    logged: int  # the term's logged steps
    level: float  # the median of its other steps
    expected: float  # steps at the floor that all-failing groups would explain

    def words(self) -> str:
        first = ", ".join(step_text(s) for s in self.steps[:5]) + (
            ", ..." if len(self.steps) > 5 else "")
        return (f"{self.term} was exactly {fmt(self.value)} on {len(self.steps)} of "
                f"{self.logged:,} logged steps (steps {first}), scattered between steps at "
                f"{fmt(self.level)} (median), where all-failing groups would explain about "
                f"{self.expected:.0f}: its scorer failed on those calls")


#: Completions a step's term must average over (read from the granularity of its values)
#: for a step of all-failing groups to be rare, and the group size assumed when the config
#: does not name one.
_GAPS_MIN_COMPLETIONS = 16
_GAPS_GROUP = 8


def _completions_per_step(v: np.ndarray) -> int | None:
    """The fewest completions whose mean gives every value of ``v`` (a mean of 0/1 scores
    over N completions is a multiple of 1/N); None past 1024 or for values of another kind."""
    for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, *range(3, 1025)):
        x = v * n
        if np.all(np.abs(x - np.round(x)) < 1e-4):
            return n
    return None


def scorer_gaps(run: Run) -> ScorerGaps | None:
    """The reward term whose scorer failed on some calls: a 0-1 term exactly at its floor on
    5+ steps in 3+ stretches (5% of 30+ logged steps or more, under 60% of them) while its other
    steps score 0.25+ above it, three times as often as the steps of all-failing groups its
    neighbours' level explains, its completions per step 16 or more (trial 54: a grader down
    on 30% of its calls, correctness exactly 0 on 62 of 200 steps between steps at 0.3-0.9).
    None otherwise."""
    groups, _ = current(run, GROUP_SIZE)
    g = int(groups) if groups is not None and groups >= 1 else _GAPS_GROUP
    for name, col in components(run).items():
        steps, v = series(run, col)
        n = len(v)
        if n < 30 or v.min() < 0 or v.max() > 1:
            continue
        floor = float(v.min())
        at = v == floor
        k = int(at.sum())
        # Scattered: three stretches or more (one to the end is a scorer that stopped).
        stretches = int(at[0]) + int(np.sum(at[1:] & ~at[:-1]))
        if k < max(5, 0.05 * n) or k > 0.6 * n or stretches < 3:
            continue
        level = float(np.median(v[~at]))
        per_step = _completions_per_step(v)
        if level - floor < 0.25 or per_step is None or per_step < _GAPS_MIN_COMPLETIONS:
            continue
        units = max(1, per_step // g)
        # Each step's chance that every group fails, at its neighbours' level (the 3 steps
        # either side that were not at the floor).
        others = np.flatnonzero(~at)
        at_i = np.searchsorted(others, np.arange(n))
        near = np.array([float(np.median(v[others[max(0, j - 3):j + 3]])) for j in at_i])
        expected = float(np.sum((1 - np.clip(near - floor, 0, 1)) ** units))
        if k < 3 * expected + 3:
            continue
        return ScorerGaps(name, floor, tuple(int(s) for s in steps[at]), n, level, expected)
    return None


def scored_run(run: Run) -> Run:
    """The run as its policy was scored: cut before a scorer that stopped (``scorer_stopped``),
    without the steps a scorer failed on (``scorer_gaps``). What the rules judge of the policy
    (its reward falling, groups alike, the gradient gone) is not what a grader's outage made
    (trial 54: a grader down on 30% of its calls read live "entropy collapsing ... reward
    falling, zero-std groups at 75%", restart with the lr, then cleared 20 steps later)."""
    stop = scorer_stopped(run)
    if stop is not None:
        run = run.truncated(stop.step - 1)
    gaps = scorer_gaps(run)
    return run.without_steps(gaps.steps) if gaps is not None else run


def unpaid_among_twins(run: Run) -> tuple[str, ...]:
    """The logged reward terms among which the config's weight 0 is, when it cannot say
    which: a ``reward_weights`` list with a 0, as many weights as logged terms, and two or
    more terms that logged the same value on every step (a lenient check and the exact one
    that agree: trial 52; the weights' order names no term then). () otherwise."""
    flat = flatten(run.config) if run.config else {}
    weights = _as_list(flat.get("reward_weights"))
    terms = components(run)
    if not isinstance(weights, (list, tuple)) or len(weights) != len(terms) or not any(
            isinstance(w, (int, float)) and w == 0 for w in weights) or configured_terms(run):
        return ()
    columns = list(terms.items())
    for i, (a, col_a) in enumerate(columns):
        twins = [a]
        for b, col_b in columns[i + 1:]:
            pair = run.frame[[col_a, col_b]].dropna()
            if len(pair) >= 10 and bool((pair[col_a] == pair[col_b]).all()):
                twins.append(b)
        if len(twins) > 1 and _zero_on(run, [float(w) for w in weights], twins):
            return tuple(twins)
    return ()


def _zero_on(run: Run, weights: list[float], twins: list[str]) -> bool:
    """Every assignment of ``weights`` to the logged terms whose weighted sum is the logged
    reward (step by step, within 1% of its scale) puts a 0 on one of ``twins``."""
    terms = components(run)
    if len(weights) > _MAX_ORDERED_TERMS or not run.has(Metric.REWARD_MEAN.value):
        return False
    rows = finite_rows(run, [Metric.REWARD_MEAN.value, *terms.values()])
    if len(rows) < 5:
        return False
    total = rows[Metric.REWARD_MEAN.value].to_numpy(dtype=float)
    parts = rows[list(terms.values())].to_numpy(dtype=float)
    scale = max(float(np.ptp(total)), float(np.median(np.abs(total))), 1e-6)
    names = list(terms)
    fits = [order for order in set(permutations(weights))
            if float(np.mean(np.abs(total - parts @ np.array(order)))) <= 0.01 * scale]
    return bool(fits) and all(any(w == 0 and names[j] in twins for j, w in enumerate(order))
                              for order in fits)


#: TRL's GRPOConfig default for ``epsilon`` (and so for ``epsilon_high`` when unset).
_TRL_EPSILON = 0.2


def cispo_cap(run: Run) -> tuple[float, str] | None:
    """(the cap, where it was read) when the config's loss is CISPO and the importance
    weight's cap is below 1: TRL's CISPO clamps each weight at ``epsilon_high`` itself
    (``clamp(ratio, max=epsilon_high)``, not ``1 + epsilon_high``), and ``epsilon_high``
    defaults to ``epsilon`` (0.2), so every on-policy weight (1.0) is capped and
    ``cispo_clip_ratio`` counts every positive-advantage token by construction (trial 56:
    0.5 on every step, read as ratio instability with an lr cut). TRL recommends 5.0. None
    otherwise."""
    flat = flatten(run.config) if run.config else {}
    if str(keyed(flat, "loss_type") or "").lower() != "cispo":
        return None
    high, _ = current(run, CLIP_HIGH)
    if high is not None:
        return (high, "epsilon_high") if high < 1 else None
    epsilon = next((v for k, v in flat.items() if k.rsplit(".", 1)[-1] == "epsilon"
                    and isinstance(v, (int, float)) and not isinstance(v, bool)), None)
    if epsilon is not None:
        return (float(epsilon), "epsilon_high unset: epsilon's") if epsilon < 1 else None
    return _TRL_EPSILON, "TRL's default (epsilon 0.2)"


def two_sided_cap(run: Run) -> float | None:
    """TRL's ``delta`` (a top-level key of its config) when it caps even the on-policy
    ratio: below 1, the ratio of 1 of every token is capped, and TRL's clip metrics count
    every token the cap holds (trial 70: delta 0.5, a clip fraction of 0.6 from step 1 with
    one pass per batch). None otherwise: a ``delta`` nested elsewhere (a Huber loss's, a
    reward model's) is no clip (helper-93)."""
    delta = (run.config or {}).get("delta")
    if not isinstance(delta, (int, float)) or isinstance(delta, bool):
        return None
    return float(delta) if 0 < delta < 1 else None


#: The largest share of its logged steps a reward term may be NaN on for "a few steps" (more
#: is a term logged at another cadence, or one broken throughout: other notes' business).
_NAN_TERM_SHARE = 0.1


def nan_term_note(run: Run) -> str | None:
    """A note when a reward term was NaN on a few steps where the reward was finite: its
    function returned NaN (or None) for the whole batch there, and those steps trained on the
    other terms alone (trial 57: correctness NaN at step 78, the reward 0.48 there, format
    only; nothing said it). None otherwise."""
    if Metric.REWARD_MEAN.value not in run.frame.columns:
        return None
    finite_reward = np.isfinite(run.frame[Metric.REWARD_MEAN.value].to_numpy(dtype=float))
    for name, col in components(run).items():
        values = run.frame[col].to_numpy(dtype=float)
        scored = finite_reward & np.isfinite(values)
        holes = finite_reward & ~np.isfinite(values)
        if not holes.any() or scored.sum() < 10 or holes.sum() > _NAN_TERM_SHARE * (
                scored.sum() + holes.sum()):
            continue
        at = [int(s) for s in run.frame.index[holes]]
        where = ", ".join(step_text(s) for s in at[:5]) + (", ..." if len(at) > 5 else "")
        return (f"{name} was NaN on {len(at)} of {int(scored.sum() + holes.sum()):,} logged "
                f"steps (step{'s' if len(at) > 1 else ''} {where}) where the reward was "
                "finite: its function returned NaN (or None) for every completion there, and "
                "those steps trained on the other terms alone; check it on those steps' "
                "completions")
    return None


#: Logged points each side of a change of the reward's weights needs to fit them.
_REWEIGHT_POINTS = 8
#: Candidate split points tried at most (a long log's are spread over it), and rows read.
_REWEIGHT_SPLITS = 200
_REWEIGHT_ROWS = 4000
#: Logged points a change of the weights may be spread over (a schedule annealing them).
_REWEIGHT_GAPS = (0, 10, 20, 40, 60)


def _reward_and_terms(run: Run) -> tuple[dict[str, str], np.ndarray, np.ndarray, np.ndarray
                                         ] | None:
    """The reward's terms, and the steps, the reward and the terms on the rows all hold (every
    k-th row of a long log: they tell the same sums); None without terms or too few rows."""
    comps = components(run)
    if not comps or Metric.REWARD_MEAN.value not in run.frame.columns:
        return None
    frame = finite_rows(run, [Metric.REWARD_MEAN.value, *comps.values()])
    if len(frame) > _REWEIGHT_ROWS:
        frame = frame.iloc[::len(frame) // _REWEIGHT_ROWS + 1]
    if len(frame) < 2 * _REWEIGHT_POINTS:
        return None
    return (comps, frame.index.to_numpy(), frame[Metric.REWARD_MEAN.value].to_numpy(dtype=float),
            frame[list(comps.values())].to_numpy(dtype=float))


def _tight(reward: np.ndarray) -> float:
    """How near a fit must give the reward to give it exactly: 1% of its largest size."""
    return 0.01 * max(float(np.max(np.abs(reward))), 1e-9)


def _weights_fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """The terms' weights that best give the reward, and the fit's largest miss."""
    w, *_ = np.linalg.lstsq(x, y, rcond=None)
    return w, float(np.max(np.abs(x @ w - y))) if len(y) else 0.0


@dataclass(frozen=True)
class Reweighting:
    """The reward stopped being one weighted sum of its logged terms at ``step``: ``before``
    and ``after`` are each term's weight either side."""

    step: int
    names: tuple[str, ...]
    before: tuple[float, ...]
    after: tuple[float, ...]
    until: int | None = None  # where a change spread over a stretch ended (None: at once)

    def from_words(self) -> str:
        """"from step 161", or "from step 200 (changing over steps 160-200)"."""
        if self.until is None:
            return f"from step {step_text(self.step)}"
        return (f"from step {step_text(self.until)} (changing over steps "
                f"{step_text(self.step)}-{step_text(self.until)})")

    def said(self, weights: tuple[float, ...]) -> str:
        top = max((abs(w) for w in (*self.before, *self.after)), default=1.0) or 1.0
        # A fitted 0 is -3e-17 (trial 80): said as the 0 it is.
        return " + ".join(f"{fmt(w if abs(w) > 1e-6 * top else 0.0)} x {n}"
                          for w, n in zip(weights, self.names))

    def dropped(self) -> list[str]:
        """The terms whose weight went to 0 (the reward no longer trains on them)."""
        top = max((abs(w) for w in self.before), default=1.0) or 1.0
        return [n for n, b, a in zip(self.names, self.before, self.after)
                if abs(b) > 1e-3 * top and abs(a) <= 1e-6 * top]


def reweighting(run: Run) -> Reweighting | None:
    """Where the reward stopped being the same weighted sum of its logged terms: exactly one
    sum before, exactly another after (a run resumed with other ``reward_weights``: trial 59's
    reward jumped 1.3 -> 9.6 at step 101, its terms unchanged, and nothing said why). None when
    one set of weights gives it throughout, or the terms do not give it at all (a reward with
    terms it does not log)."""
    sums = _reward_and_terms(run)
    if sums is None:
        return None
    comps, steps, y, x = sums
    n, tight = len(y), _tight(y)
    if _weights_fit(x, y)[1] <= tight:
        return None  # one set of weights throughout
    every = max(1, (n - 2 * _REWEIGHT_POINTS) // _REWEIGHT_SPLITS)
    best: tuple[float, int, int, np.ndarray, np.ndarray] | None = None
    # At one step, or over a stretch (weights annealed by a schedule: the points between the
    # two sums are neither; h120 had read a 1 -> 0 over 40 steps as "reward over-fitting").
    for gap in _REWEIGHT_GAPS:
        for at in range(_REWEIGHT_POINTS, n - _REWEIGHT_POINTS - gap + 1, every):
            w1, miss1 = _weights_fit(x[:at], y[:at])
            w2, miss2 = _weights_fit(x[at + gap:], y[at + gap:])
            if best is None or max(miss1, miss2) < best[0]:
                best = (max(miss1, miss2), at, gap, w1, w2)
        if best is not None and best[0] <= tight:
            break  # the shortest stretch that holds two exact sums
    if best is None or best[0] > tight:
        return None
    _, at, gap, w1, w2 = best
    if np.max(np.abs(w2 - w1)) < 0.1 * max(float(np.max(np.abs(w1))), 1e-9):
        return None
    return Reweighting(int(steps[at]), tuple(comps), tuple(float(v) for v in w1),
                       tuple(float(v) for v in w2), int(steps[at + gap]) if gap else None)


@dataclass(frozen=True)
class ScoresMissing:
    """From ``step`` the reward fell short of its logged terms' weighted sum, the sum it had
    held exactly: part of a term's scores missing from it (a reward function returning None,
    a checker timing out: TRL sums the terms a completion was scored on, and logs each term's
    mean over the completions it scored). ``shares``: the shortfall as a share of each term
    in ``names`` that could be the one missing (at most its whole)."""

    step: int
    names: tuple[str, ...]
    shares: tuple[float, ...]
    reward_after: float
    sum_after: float  # the terms' weighted sum after, as the reward had been

    def words(self) -> str:
        which = " or ".join(f"about {share:.0%} of {name}'s" for name, share in
                            zip(self.names, self.shares))
        # Medians of a few points, said as such: "1.34 -> 0.672" beside a crash's "from 1.47
        # to 0.594" (its single points) had read as two accounts of one fall (nu35).
        return (f"from step {step_text(self.step)} the reward fell short of its terms' "
                f"weighted sum, which it had equalled (a median {fmt(self.reward_after)} "
                f"against {fmt(self.sum_after)} over the next {_MISSING_SAID} logged steps): "
                f"{which} scores are missing")


#: Share of the points after the change off the sum (and on one side of it), and before it.
_MISSING_AFTER, _MISSING_BEFORE = 0.8, 0.02
#: Logged points the levels either side are the medians of.
_MISSING_SAID = 5


def scores_missing(run: Run) -> ScoresMissing | None:
    """Where the reward stopped equalling one weighted sum of its logged terms and fell short
    of it from then on, not by another exact sum (a reweighting): scores missing from a term
    (trial 81: correctness returned None on 70% of completions from step 201; the reward fell
    1.47 -> 0.6, the terms' means held, read "reward crash: roll back, lr"). None otherwise,
    and when no one term's weighted mean could hold the shortfall. (A run scored so from its
    first step has no exact sum to leave: ``unscored_share`` says it, as a note.)"""
    sums = _reward_and_terms(run)
    if sums is None:
        return None
    comps, steps, y, x = sums
    n, tight = len(y), _tight(y)
    w, miss = _weights_fit(x[:_REWEIGHT_POINTS], y[:_REWEIGHT_POINTS])
    if miss > tight:
        return None  # the terms do not give the reward exactly, even at first
    r = y - x @ w
    off = np.abs(r) > 5 * tight
    at = next((i for i in range(_REWEIGHT_POINTS, n - 4) if off[i]
               and float(np.mean(off[i:])) >= _MISSING_AFTER), None)
    if at is None or float(np.mean(off[:at])) > _MISSING_BEFORE:
        return None
    after = r[at:]
    sign = float(np.sign(np.median(after)))
    if sign == 0 or float(np.mean(np.sign(after) == sign)) < _MISSING_AFTER:
        return None
    if _weights_fit(x[at:], y[at:])[1] <= tight or reweighting(run) is not None:
        return None  # another exact sum, at once or after a stretch: a reweighting
    short = -float(np.median(after))
    names, shares = [], []
    for name, weight, column in zip(comps, w, x[at:].T):
        part = float(weight) * float(np.median(column))
        if abs(part) > tight and 0.05 < short / part <= 1.05:
            names.append(name)
            shares.append(min(short / part, 1.0))
    if not names:
        return None
    return ScoresMissing(int(steps[at]), tuple(names), tuple(shares),
                         float(np.median(y[at:at + _MISSING_SAID])),
                         float(np.median((x @ w)[at:at + _MISSING_SAID])))


def reweighted_note(run: Run) -> str | None:
    """A note when the reward's weights changed mid-run (see ``reweighting``)."""
    found = reweighting(run)
    if found is None:
        return None
    return (f"{found.from_words()} the reward is {found.said(found.after)}, where "
            f"before it was {found.said(found.before)}: its weights changed mid-run (a resume "
            "with other reward_weights?); the reward before and after are on different scales, "
            "so read the terms, not the reward, across that step")


@dataclass(frozen=True)
class TermSwitchedOn:
    """A reward term constant (0: not paying) up to ``step`` that paid another level from
    there, its change the reward's own change at that step."""

    step: int
    name: str
    before: float
    after: float
    reward_before: float
    reward_after: float
    level_step: int | None = None  # where a term ramped in reached its level (None: at once)

    def since(self) -> str:
        """"-2.4 since", or "-2.4 from step 196" for a term ramped in."""
        return (f"{fmt(self.after)} since" if self.level_step is None else
                f"ramped to {fmt(self.after)} by step {step_text(self.level_step)}")


#: Logged points a term must hold one value for before it switched on, and pay after.
_SWITCH_BEFORE = 10
_SWITCH_AFTER = 5


def term_switched_on(run: Run) -> TermSwitchedOn | None:
    """The reward term that began paying at one step, constant before (a term added by a
    resume, or a curriculum switching a penalty on), whose step change is the reward's change
    there (trial 80: a length penalty from step 161 paid -2.4 on every completion, the reward
    1.38 -> -1.06 read as a crash, "learning_rate 1e-4 -> 5e-5"). None otherwise."""
    comps = components(run)
    if len(comps) < 2 or Metric.REWARD_MEAN.value not in run.frame.columns:
        return None
    frame = finite_rows(run, [Metric.REWARD_MEAN.value, *comps.values()])
    if len(frame) < _SWITCH_BEFORE + _SWITCH_AFTER:
        return None
    y = frame[Metric.REWARD_MEAN.value].to_numpy(dtype=float)
    spread = max(float(np.ptp(y)), 1e-9)
    for name, col in comps.items():
        v = frame[col].to_numpy(dtype=float)
        first = v[0]
        moved = np.flatnonzero(np.abs(v - first) > 1e-6 * max(abs(first), 1.0))
        if not len(moved):
            continue
        j = int(moved[0])
        if j < _SWITCH_BEFORE or len(v) - j < _SWITCH_AFTER:
            continue
        ramp = _ramp_to_hold(v, j, first)
        after = float(np.median(v[j + ramp:j + ramp + 20]))
        change = after - first
        if abs(change) < 0.25 * spread:
            continue  # a small shift is no reward's fall or jump
        if np.any(np.abs(v[j + ramp:j + ramp + _SWITCH_AFTER] - after) > 0.3 * abs(change)):
            continue  # not to a level it held: a term the policy learned to earn
        reward_before = float(np.median(y[max(0, j - 10):j]))
        reward_after = float(np.median(y[j + ramp:j + ramp + 20]))
        if abs((reward_after - reward_before) - change) > 0.25 * abs(change):
            continue  # the reward's change is not this term's
        return TermSwitchedOn(int(frame.index[j]), name, float(first), after, reward_before,
                              reward_after, int(frame.index[j + ramp]) if ramp else None)
    return None


#: Logged points a penalty may take to reach its level (a schedule ramping it in).
_RAMP_POINTS = 60


def _ramp_to_hold(v: np.ndarray, j: int, first: float) -> int:
    """Points from ``j`` until a term that left its constant ``first`` there reached the level
    it held: 0 when at once; a penalty ramped in by a schedule takes more (h120: -2.4 over 40
    steps read "reward over-fitting, lr"). Only a term that fell from its constant, the reward
    with it, may ramp: a policy does not learn to lose reward, while a term rising slowly
    from a constant is one it learned to earn (not at once: no switch)."""
    if len(v) - j < _SWITCH_AFTER:
        return 0
    if abs(float(np.median(v[j:j + _SWITCH_AFTER])) - float(np.median(v[j:j + 20]))) <= 0.3 * abs(
            float(np.median(v[j:j + 20])) - first):
        return 0  # at its level at once
    stretch = v[j:j + _RAMP_POINTS + 20]
    level = float(np.median(stretch[-20:]))
    if level >= first or len(stretch) < 25:
        return 0
    # Down to within a tenth of the fall, never back above the constant on the way.
    reached = np.flatnonzero(stretch <= level + 0.1 * (first - level))
    if not len(reached) or np.any(stretch[:reached[0]] > first):
        return 0
    return min(int(reached[0]), _RAMP_POINTS)


@dataclass(frozen=True)
class BackToStart:
    """The policy's signals went back to their first logged levels in one step at ``step``:
    (signal, level at the start, level just before, level just after)."""

    step: int
    moved: tuple[tuple[str, float, float, float], ...]

    def words(self) -> str:
        return "; ".join(f"{n} {fmt(b)} -> {fmt(a)}, {fmt(s)} at the start"
                         for n, s, b, a in self.moved)


#: Logged points a reward signal may lag the entropy by at a reset.
_RESET_LAG = 2
#: Logged points each level (the start's, before, after) is the median of.
_LEVEL_POINTS = 5


def back_to_start(run: Run, step: int) -> BackToStart | None:
    """Whether the policy's signals (entropy and the reward's terms, or the reward) went back
    at ``step``, in one logged step, to the levels they had at the run's start, having moved
    well away from them: the weights reset (trial 80: a resume that loaded the base model, not
    checkpoint-160, read as an entropy blow-up, "roll back, then lr 1e-4 -> 5e-5"). The entropy
    and at least one reward signal. None otherwise."""
    names = [Metric.ENTROPY.value]
    terms = components(run)
    names += list(terms.values()) if terms else [Metric.REWARD_MEAN.value]
    moved = []
    for name in [*names, Metric.RESPONSE_LENGTH_MEAN.value]:
        steps, v = series(run, name)
        k = int(np.searchsorted(steps, step))
        if k < 3 * _LEVEL_POINTS or len(v) - k < _LEVEL_POINTS:
            continue
        start = float(np.median(v[:_LEVEL_POINTS]))
        before = float(np.median(v[k - _LEVEL_POINTS:k]))
        away = abs(before - start)
        noise = step_noise(v[:k])
        level = max(abs(start), abs(before), 1e-9)
        if away < max(2 * noise, 0.1 * level):
            continue  # it had not moved from its start
        if name != Metric.ENTROPY.value:
            # Rewards logged a few steps behind the policy's own signals (rollouts scored
            # after the step that made them: async or off-policy trainers; h120).
            k = next((j for j in range(k, min(k + _RESET_LAG + 1, len(v) - _LEVEL_POINTS + 1))
                      if abs(float(v[j]) - start) <= 0.5 * away), k)
        after = float(np.median(v[k:k + _LEVEL_POINTS]))
        if abs(after - before) <= 0.3 * away:
            # What the run had learned, kept: no reset, which undoes all of it (h120: harder
            # prompts from step 161 sent correctness and entropy back near their start, the
            # format learned and the length held; read "as if the weights were reset").
            return None
        if name not in names or away < max(4 * noise, 0.2 * level):
            # Not far from its start: no sign of a reset (and the length only vetoes: its
            # level is the sampler's and the task's too).
            continue
        if abs(after - start) > 0.3 * away or abs(float(v[k]) - start) > 0.5 * away:
            continue  # not back to the start, or not at once
        label = next((t for t, c in terms.items() if c == name), name)
        moved.append((label, start, before, after))
    if len(moved) < 2 or moved[0][0] != Metric.ENTROPY.value:
        # The entropy first: reward terms that began at their best can come back to it by
        # chance (a notebook's 2048 run, its terms -0.5 -> 1 where they began at 1).
        return None
    return BackToStart(int(step), tuple(moved))
