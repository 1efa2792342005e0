"""What a log too short to judge already shows.

Two or three pasted lines (an issue's excerpt, the first steps of a run) are too few for any
check's trend or level, and the run is inconclusive. Some values say a setup problem on the
first step all the same, where every logged step sits at an extreme: every completion cut at
the length cap, every sample scoring the same, a gradient of exactly 0. Said beside the
verdict, as what the steps show, never as a finding: the verdict stays inconclusive.

A sign is data plus a pure reading of the metric store, as a rule is.
"""

from __future__ import annotations

import re

from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules.points import aligned, series
from grpo_doctor.store import Run
from grpo_doctor.text import fmt

#: A share this close to 1 on every logged step is "every one".
_ALL = 0.95


#: A share of completions cut at the cap on every logged step that is worth a line: half
#: (trial 62: verl's response_length/clip_ratio 0.521 on its one step went unsaid).
_MOST_CUT = 0.5


def _all_cut(run: Run) -> str | None:
    _, cut = series(run, Metric.TRUNCATION_RATIO.value)
    if not len(cut) or cut.min() < _MOST_CUT:
        return None
    _, length = series(run, Metric.RESPONSE_LENGTH_MEAN.value)
    # The mean length is the cap only where (nearly) every completion reached it.
    cap = (f" ({fmt(float(length.max()))} tokens)" if len(length) and cut.min() >= _ALL
           else "")
    return (f"{_share(float(cut.min()), 'completion')} cut at the length cap{cap}: a budget "
            "too small for the answers (max_completion_length), if it goes on")


def _share(low: float, what: str) -> str:
    """'every completion' for a share of 1 at every step, else '95% or more of completions'."""
    # Rounded down: 0.996 is "99% or more", never "100% or more" (trial 65).
    return f"every {what}" if low >= 0.999 else f"{int(low * 100)}% or more of {what}s"


def _all_alike(run: Run) -> str | None:
    _, top, low = aligned(run, Metric.REWARD_MAX.value, Metric.REWARD_MIN.value)
    if not len(top) or not np.all(top == low):
        return None
    values = np.unique(top)
    at = f" ({fmt(float(values[0]))})" if len(values) == 1 else ""
    return (f"every sample of every step scored the same{at}, reward max = min: no group can "
            "teach anything; check the reward function on a few completions")


def _all_equal_groups(run: Run) -> str | None:
    _, z = series(run, Metric.ZERO_STD_FRACTION.value)
    if not len(z):
        # A reward std of exactly 0 on every step: every group alike (TRL logs the mean of
        # the groups' stds; trial 65's log had no zero-std share beside it).
        _, spread = series(run, Metric.REWARD_STD.value)
        if len(spread) and np.all(spread == 0):
            z = np.ones(len(spread))
    if not len(z) or z.min() < _ALL:
        return None
    return (f"{_share(float(z.min()), 'group')} with equal rewards (zero reward std): no "
            "learning signal; check the reward function on a few completions")


def policy_moved(run: Run) -> str | None:
    """How the log shows the policy changed (its completions' length or entropy to under half
    or over twice their first value), or None."""
    for label, metric, unit in (("length", Metric.RESPONSE_LENGTH_MEAN.value, " tokens"),
                                ("entropy", Metric.ENTROPY.value, "")):
        _, v = series(run, metric)
        if len(v) >= 2 and v[0] > 0 and not 0.5 <= v[-1] / v[0] <= 2:
            return f"{label} {fmt(float(v[0]))} -> {fmt(float(v[-1]))}{unit}"
    return None


def _no_gradient(run: Run) -> str | None:
    _, g = series(run, Metric.GRAD_NORM.value)
    if not len(g) or np.any(g != 0):
        return None
    moved = policy_moved(run)
    if moved is not None:
        # A policy with no gradient writes what it wrote: one whose completions changed was
        # updated, whatever the logged norm (a 4-log run whose completions fell 15 -> 2
        # tokens read "the update is lost" beside "the policy learned to answer in 2").
        return (f"a gradient norm logged as exactly 0, yet the policy changed ({moved}): the "
                "updates went through, and the logged norm is not the one applied (some "
                "distributed setups, DeepSpeed ZeRO among them, log 0)")
    _, z = series(run, Metric.ZERO_STD_FRACTION.value)
    _, spread = series(run, Metric.REWARD_STD.value)
    if (len(z) and z.max() < _ALL) or (not len(z) and len(spread) and spread.min() > 0):
        # Groups whose rewards differ have advantages that are not 0: the gradient is lost
        # after them (ms-swift#5890: DeepSpeed across nodes), not in the reward.
        return ("a gradient norm of exactly 0 while rewards within groups differ: the "
                "advantages are not 0, so the update is lost after them (the distributed or "
                "optimizer setup: DeepSpeed ZeRO across nodes, a frozen or detached model), "
                "not in the reward")
    return "a gradient norm of exactly 0: no update moved the policy"


def _no_advantage(run: Run) -> str | None:
    _, top, low = aligned(run, Metric.ADVANTAGE_MAX.value, Metric.ADVANTAGE_MIN.value)
    _, r_top, r_low = aligned(run, Metric.REWARD_MAX.value, Metric.REWARD_MIN.value)
    if not len(top) or np.any(top != 0) or np.any(low != 0) or not len(r_top) or np.all(
            r_top == r_low):
        return None
    # Rewards that differ within the batch but no advantage: every group held one sample, or
    # the estimator zeroed them (Awesome-ML-SYS-Tutorial#106's verl step: score 0 to 1,
    # advantages max = min = 0).
    return ("every advantage was exactly 0 while the rewards differed (from "
            f"{fmt(float(r_low.min()))} to {fmt(float(r_top.max()))}): no policy gradient; "
            "check the group size (rollout.n / num_generations: a group of 1 sample has no "
            "baseline to beat) and the advantage estimator")


#: A KL at the first update at or above this is no policy that starts as its reference.
_KL_AT_START = 0.1


def _kl_at_first_update(run: Run) -> str | None:
    """A KL far from 0 at step 0 or 1, where the policy still is its reference (SkyRL#1864:
    kl_loss 0.63 at step 1, unsaid; trial 62)."""
    from grpo_doctor.importers.console import LOG_LINE_STEPS

    steps, kl = series(run, Metric.KL.value)
    if not len(kl) or int(steps[0]) > 1 or int(run.steps[0]) != int(steps[0]) or (
            kl[0] < _KL_AT_START):
        return None
    if LOG_LINE_STEPS in run.notes:
        return None  # its first line, not its first update (an excerpt at epoch 0.4: trial 66)
    return (f"a KL of {fmt(float(kl[0]))} at step {int(steps[0])}, the first update, where "
            "the policy still is its reference (KL near 0): check the reference model "
            "against the policy's starting checkpoint (the same weights, dtype and "
            "quantization), and that the KL is logged per token, not summed over a response")


#: Mean token entropy (nats) at or above which sampling is near-random tokens: no healthy
#: start of the real runs, corpus or trials logs above 1.54 (root_cause reads it too).
NEAR_RANDOM_ENTROPY = 2.5


def _near_random(run: Run) -> str | None:
    """Entropy at or above ``_NEAR_RANDOM`` on every logged step (trial 65: 9.49 nats on both
    steps of a verl LoRA run whose weights never reached the rollout engine, unsaid)."""
    _, h = series(run, Metric.ENTROPY.value)
    if not len(h) or float(h.min()) < NEAR_RANDOM_ENTROPY:
        return None
    return (f"an entropy of {fmt(float(h.min()))} nats per token or more: sampling is "
            "near-random (a healthy start is under 1.5): check the sampling (temperature, "
            "top_p) and that the rollout engine runs the trained weights (a LoRA adapter or a "
            "weight sync that never reached it), before the reward")


#: Mean token entropy (nats) at or below which a step samples near-greedily: half the
#: entropy_collapse rule's floor (0.02).
NEAR_GREEDY_ENTROPY = 0.01


def _near_greedy(run: Run) -> str | None:
    """Entropy at or below ``NEAR_GREEDY_ENTROPY`` on every logged step (verl#1224: 0.001 at
    step 1049, unsaid on its one-step excerpt; trial 66)."""
    _, h = series(run, Metric.ENTROPY.value)
    # An entropy of exactly 0 is a placeholder or a value not computed, not a sampler (a
    # notebook table's "0" at step 1, "No Log" after, beside a reward std of 21.8; trial 69);
    # and one value among many logged steps is not "every logged step".
    if not len(h) or float(h.max()) > NEAR_GREEDY_ENTROPY or float(h.min()) < 0 or (
            float(h.max()) == 0) or 2 * len(h) < run.n_steps:
        return None
    return (f"an entropy of {fmt(float(h.max()))} nats per token or less: sampling is "
            "near-greedy, each group's samples alike (an entropy collapse, if the run's "
            "start was higher; a temperature far below 1 if it never was)")


_VALUE_MODEL = re.compile(r"(?:^|[/_])(?:vf|vpred|values?)(?:[/_]|$)")


def nan_beside(run: Run) -> str | None:
    """NaN logged in a column no check watches (verl#498: a PPO critic's vf_loss, value and
    grad norm NaN at step 1, the report silent on it; trial 66). The checks' own metrics
    going NaN are the numerical_failure rule's; on a long log this is a note."""
    from grpo_doctor.rules.numerical_failure import WATCHED, other_models

    ruled = other_models(run)
    bad = {name: steps for name, steps in run.nan_steps.items()
           if name not in WATCHED and name not in ruled and len(steps)}
    if not bad:
        return None
    names = sorted(bad)
    first = int(min(int(steps.min()) for steps in bad.values()))
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    # A value model's own numbers (verl logs critic/returns and critic/advantages for GRPO,
    # which has no critic; helper-88).
    critic = all(_VALUE_MODEL.search(name) for name in names)
    why = ("the value model (critic) went NaN: check its setup (its learning rate and "
           "warm-up, its dtype, the value head's initialisation) before the policy's; its "
           "values feed the advantages" if critic else
           "check what computes them before anything else is judged")
    return f"NaN logged in {shown} (from step {first}): {why}"


def _kl_never_computed(run: Run) -> str | None:
    from grpo_doctor.rules.numerical_failure import kl_never_computed

    return kl_never_computed(run)


SIGNS = (nan_beside, _near_random, _near_greedy, _all_cut, _all_alike, _all_equal_groups,
         _no_gradient, _no_advantage, _kl_at_first_update, _kl_never_computed)


def signs(run: Run) -> tuple[str, ...]:
    """What every logged step of ``run`` shows at an extreme, in words (empty for none)."""
    return tuple(s for sign in SIGNS if (s := sign(run)) is not None)
