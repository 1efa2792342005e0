"""Numerical failure: NaN or inf where a number should be.

What it detects
    NaN or inf logged for the loss, KL, grad norm, entropy, reward or mean log-prob. Gaps
    (a metric simply not logged at a step) are not NaN and do not count.

Why it matters
    One NaN in the loss or gradient poisons the weights: everything after it is noise, and
    optimizers with NaN-skipping hide it until the run is dead. Always critical.

How it is detected
    The importers keep a logged NaN apart from a gap; the rule reports the first non-finite
    step of each metric. Onset and first alert are that step.

False positives
    None by construction; a framework that logs NaN for "not computed this step" (rare) can be
    told apart by the metric named in the evidence.

Remedies
    Lower the learning rate; clip gradients (max_grad_norm 1.0); keep the lm_head and the loss
    in fp32 under bf16/fp16; guard log(0) in the KL estimator (k3 on near-zero probabilities);
    check the reward function for division by zero; resume from the last finite checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from grpo_doctor.findings import Status
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import Outcome, Param, Rule, fmt
from grpo_doctor.store import Run

WATCHED = (
    Metric.LOSS.value, Metric.KL.value, Metric.GRAD_NORM.value, Metric.ENTROPY.value,
    Metric.REWARD_MEAN.value, Metric.LOG_PROB_MEAN.value,
)

PARAMS = (Param("min_bad_values", 1, "non-finite values needed to fire"),)


def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    bad: dict[str, dict[str, object]] = {}
    first: int | None = None
    for metric in WATCHED:
        if metric not in run.frame.columns:
            continue
        col = run.frame[metric].to_numpy()
        inf_steps = run.steps[np.isinf(col)]
        nan_steps = run.nan_steps.get(metric, np.zeros(0, dtype=np.int64))
        all_bad = np.union1d(inf_steps, nan_steps)
        if len(all_bad):
            s = int(all_bad[0])
            bad[metric] = {"first_step": s, "count": len(all_bad),
                           "nan": len(nan_steps), "inf": len(inf_steps)}
            first = s if first is None else min(first, s)
    total = sum(int(v["count"]) for v in bad.values())  # type: ignore[call-overload]
    if total < p["min_bad_values"] or first is None:
        return Outcome(Status.OK, "no NaN or inf in " + ", ".join(
            m for m in WATCHED if m in run.frame.columns), key_metric=_key(run))
    names = ", ".join(f"{m} ({v['count']}x from step {fmt(v['first_step'])})"
                      for m, v in bad.items())
    summary = f"non-finite values first at step {fmt(first)}: {names}"
    remedies = (
        knobs.scale(run, knobs.LEARNING_RATE, 0.5),
        knobs.set_to(run, knobs.GRAD_CLIP, "1.0", why="clip gradients")
        or "clip gradients (max_grad_norm 1.0)",
        "keep lm_head and loss in fp32 under bf16/fp16; guard log(0) in the KL estimator",
        knobs.rollback(first, f"resume from the last checkpoint before step {fmt(first)}"),
    )
    key = next(iter(bad))
    return Outcome(Status.CRITICAL, summary, onset_step=first,
                   evidence={"non_finite": bad, "threshold": "any NaN or inf"},
                   remedies=remedies, key_metric=key)


def _key(run: Run) -> str | None:
    return next((m for m in WATCHED if m in run.frame.columns), None)


RULE = Rule(
    id="numerical_failure",
    title="Numerical failure (NaN/inf)",
    detect=detect,
    params=PARAMS,
    doc=__doc__ or "",
    requires_any=tuple((m,) for m in WATCHED),
)
