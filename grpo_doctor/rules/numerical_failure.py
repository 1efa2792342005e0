"""Numerical failure: NaN or inf where a number should be.

What it detects
    NaN or inf logged for the loss, KL, grad norm, entropy, reward or mean log-prob. Gaps
    (a metric simply not logged at a step) are not NaN and do not count.

Why it matters
    One NaN in the loss or gradient poisons the weights: everything after it is noise, and
    optimizers with NaN-skipping hide it until the run is dead. Critical when the NaN is in the
    loss, the gradient, the reward or the log-prob (or the loss and gradient were not logged
    finite at those steps); a warning when only a logged statistic (KL, entropy) went NaN while
    the loss and gradient stayed finite.

How it is detected
    The importers keep a logged NaN apart from a gap; the rule reports the first non-finite
    step of each metric. Onset and first alert are that step.

False positives
    None by construction; a framework that logs NaN for "not computed this step" (rare) can be
    told apart by the metric named in the evidence.

Remedies
    Lower the learning rate; clip gradients (max_grad_norm 1.0); keep the lm_head and the loss
    in fp32 under bf16/fp16; guard log(0) in the KL estimator (k3 on near-zero probabilities);
    check the reward function for division by zero; resume from the last finite checkpoint. A
    NaN from the first logged step is a setup problem (precision, the estimator, the reward
    function), not an instability a smaller learning rate would fix. When only a logged
    statistic went non-finite (the loss and gradient stayed finite), nothing is rolled back
    and the learning rate is left alone: the remedies are about how the statistic is computed
    (log(0) in the KL estimator, padded tokens not masked, log-probs in low precision).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.rules.base import Outcome, Param, Rule
from grpo_doctor.rules.plot import Plot
from grpo_doctor.store import Run
from grpo_doctor.text import plural, step_text

WATCHED = (
    Metric.LOSS.value, Metric.KL.value, Metric.GRAD_NORM.value, Metric.ENTROPY.value,
    Metric.REWARD_MEAN.value, Metric.LOG_PROB_MEAN.value,
    # NaN beside a finite reward: the std of a group of one sample, every advantage NaN
    Metric.REWARD_STD.value,
)

RULE = Rule(
    "numerical_failure", "Numerical failure (NaN/inf)",
    # One NaN is decisive at once (the short-log reader); no NaN in one or two steps is not
    # evidence of health.
    requires_any=tuple((m,) for m in WATCHED), min_points=3,
    points="loss, KL, grad-norm, entropy, reward or log-prob values",
    plot=Plot(metrics=(Metric.LOSS.value, Metric.GRAD_NORM.value), metrics_in="non_finite"),
    params=(Param("min_bad_values", 1, "non-finite values needed to fire"),),
)


#: A NaN here means the update itself was NaN (or computed from NaN): the weights are poisoned.
UPDATE = (Metric.LOSS.value, Metric.GRAD_NORM.value, Metric.REWARD_MEAN.value,
          Metric.LOG_PROB_MEAN.value)


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    bad, first = _non_finite(run)
    other = other_models(run)
    total = sum(v["count"] for v in bad.values())
    if total < p["min_bad_values"] or first is None:
        return Outcome(Status.OK, "no NaN or inf in " + ", ".join(
            m for m in WATCHED if m in run.frame.columns), key_metric=_key(run))
    names = ", ".join(f"{m} ({plural(v['count'], 'value')} from step "
                      f"{step_text(v['first_step'])})"
                      for m, v in bad.items())
    summary = f"non-finite values first at step {step_text(first)}: {names}"
    reached = _reached_the_weights(run, bad, other)
    status = Status.CRITICAL if reached else Status.WARNING
    unused = _kl_not_computed(run, bad) if not reached else None
    if unused is not None:
        return Outcome(Status.OK, unused, evidence={"not_computed": sorted(bad)},
                       key_metric=_key(run))
    if not reached:
        updates = [u for u in (Metric.LOSS.value, Metric.GRAD_NORM.value) if run.has(u)]
        summary += f"; {' and '.join(updates)} stayed finite: the NaN did not reach the weights"
    from grpo_doctor.importers.console import summary_only

    if summary_only(run):
        # One point, each metric's last value: the run ended non-finite, and nothing in a
        # summary says when that began (h99: "a numerical setup problem from the first
        # update" read off a summary with no step, "roll back before 500" off one at 500).
        summary = (f"non-finite among the run's last logged values (wandb's Run summary, one "
                   f"value per metric): {', '.join(bad)}; when they began is not in a summary")
        history = ("find the step they began in the run's history (its wandb/run-*/ folder, "
                   "or grpo-doctor fetch ENTITY/PROJECT/RUN), then roll back to a checkpoint "
                   "before it")
        return Outcome(status, summary, onset_step=first,
                       evidence={"non_finite": bad, "threshold": "any NaN or inf",
                                 "summary_only": True},
                       remedies=(history, knobs.clip_gradients(run)) if reached else (
                           history, *_measurement_remedies(sorted(bad))),
                       key_metric=next(iter(bad)))
    # The first logged step of a log that starts with training (not an excerpt from later).
    at_start = first <= (run.first_step or 0) and (run.first_step or 0) <= 20
    setup = ("keep lm_head and the loss in fp32 under bf16/fp16; guard log(0) in the KL "
             "estimator; check the reward function for division by zero")
    if at_start:
        summary += "; from the first logged step: a setup problem, not an instability"
    if not reached:
        # Nothing to roll back and no step size to blame: the statistic's computation broke.
        remedies: tuple[str | None, ...] = _measurement_remedies(sorted(bad))
    elif other and set(bad) <= set(other):
        # Another model's update (a PPO critic, an online reward model): its own settings,
        # not the policy's learning rate.
        remedies = (
            None if at_start else knobs.rollback(
                first, f"resume from the last checkpoint before step {step_text(first)}"),
            "check {}: {}".format(*other_model(sorted(other))),
        )
    elif at_start:
        # Wrong from the first update: clipping cannot fix a NaN the setup produces.
        remedies = (setup,)
    else:
        remedies = (
            knobs.rollback(first, f"resume from the last checkpoint before step "
                                  f"{step_text(first)}"),
            knobs.scale(run, knobs.LEARNING_RATE, 0.5),
            knobs.clip_gradients(run),
            setup,
        )
    key = next(iter(bad))
    return Outcome(status, summary, onset_step=first,
                   evidence={"non_finite": bad, "threshold": "any NaN or inf"},
                   remedies=remedies, key_metric=key)


#: The update of another model trained beside the policy: a PPO critic's value loss and grad
#: norm, an online reward model's loss (verl#498: critic/vf_loss NaN at step 1, unsaid; trial
#: 66). Its NaN poisons that model, whose values or scores the policy learns from.
_OTHER_UPDATE = re.compile(r"(?:^|/)(?:\w*loss|grad_norm|vpred_mean)$")
_OTHER_MODEL = re.compile(r"^(critic|value|reward_model|rm|prm)(?:[/_]|$)", re.IGNORECASE)


def _non_finite(run: Run) -> tuple[dict[str, dict[str, int]], int | None]:
    """Each watched metric (and another model's) with non-finite values: its first step and
    counts; and the first such step of all (None: none)."""
    bad: dict[str, dict[str, int]] = {}
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
    for name, steps in other_models(run).items():
        nan = len(run.nan_steps.get(name, ()))
        bad[name] = {"first_step": int(steps[0]), "count": len(steps), "nan": nan,
                     "inf": len(steps) - nan}
        first = int(steps[0]) if first is None else min(first, int(steps[0]))
    return bad, first


def _reached_the_weights(run: Run, bad: Mapping[str, object],
                         other: Mapping[str, object]) -> bool:
    """Whether the non-finite values reached an update. A NaN only in a logged statistic (KL,
    entropy) while the loss and the gradient stayed finite at those steps did not reach the
    weights: the estimator, not the training, broke."""
    updates = [u for u in (Metric.LOSS.value, Metric.GRAD_NORM.value) if run.has(u)]
    return any(m in UPDATE or m in other for m in bad) or not updates or any(
        not _finite_at(run, u, _bad_steps(run, m)) for m in bad for u in updates)


def kl_never_computed(run: Run) -> str | None:
    """The words for a KL NaN at every logged step while the loss stayed finite (no KL
    computed: a coefficient of 0), or None; what a short log's steps show (open-r1#704: the
    answer to "why kl = nan" had been only in ``-v``, under "passed"; nu33)."""
    bad, _ = _non_finite(run)
    if set(bad) != {Metric.KL.value} or _reached_the_weights(run, bad, {}):
        return None
    return _kl_not_computed(run, bad)


def other_models(run: Run) -> dict[str, np.ndarray]:
    """The logged NaN or inf steps of other models' updates (critic, reward model), by
    column (DeepSpeed-Chat's cri_loss inf beside its actor's had gone unsaid; helper-104)."""
    out = {}
    for name in {*run.nan_steps, *run.frame.columns}:
        if name in WATCHED or not (_OTHER_MODEL.match(name) and _OTHER_UPDATE.search(name)):
            continue
        bad = run.nan_steps.get(name, np.zeros(0, dtype=np.int64))
        if name in run.frame.columns:
            col = run.frame[name].to_numpy(dtype=np.float64)
            bad = np.union1d(bad, run.steps[np.isinf(col)])
        if len(bad):
            out[name] = bad
    return dict(sorted(out.items()))


def other_model(columns: list[str]) -> tuple[str, str]:
    """The other model whose update ``columns`` are, and what of it to check."""
    prefixes = {re.split(r"[/_]", c, maxsplit=1)[0].lower() for c in columns}
    if prefixes <= {"critic", "value"}:
        return ("the value model (critic)", "its learning rate and warm-up (critic.optim.lr "
                "in verl), its dtype (fp32 for a value head), its initialisation; its NaN "
                "reaches the advantages next")
    return ("the reward model", "its learning rate and warm-up, its dtype, its "
            "initialisation; its NaN reaches the rewards next")


#: Logged steps a KL must be NaN on, and never a number, to be one not computed.
_NEVER_COMPUTED = 3


def _kl_not_computed(run: Run, bad: Mapping[str, object]) -> str | None:
    """Why a KL that is NaN at every logged step, never once a number, while the loss stayed
    finite is no failure: a trainer that computes no KL (a coefficient of 0: TRL's default
    beta, which loads no reference model) logs it as NaN or not at all (open-r1#704: "kl nan"
    beside a finite loss read "check the KL estimator for log(0)"; trial 69). None when the
    config puts a KL term in force, or the KL was a number at some step."""
    kl = Metric.KL.value
    values = run.frame[kl].to_numpy(dtype=np.float64)
    # (An infinite KL was computed, and overflowed: no "not computed"; helper-93.)
    if set(bad) != {kl} or np.isfinite(values).any() or np.isinf(values).any() or (
            len(_bad_steps(run, kl)) < _NEVER_COMPUTED):
        # (One NaN step is no "never": ms-swift#4465's KL NaN "now and then".)
        return None
    beta, _ = knobs.current(run, knobs.KL_COEF)
    off = knobs.kl_switched_off(run)  # (verl's kl_loss_coef 0.001 beside use_kl_loss False)
    if beta is not None and beta != 0 and not off:
        return None
    why = ("use_kl_loss False in its config" if off else "beta 0 in its config" if beta == 0
           else "most likely a KL coefficient of 0, TRL's default")
    steps = plural(len(_bad_steps(run, kl)), "logged step")
    return (f"kl NaN at all {steps}, never a number, while the loss stayed finite: no KL "
            f"computed ({why}; no reference model is loaded), not a failure; set beta above 0 "
            "for a KL term")


def _measurement_remedies(metrics: list[str]) -> tuple[str, ...]:
    """What to check when only logged statistics (KL, entropy) went non-finite while the loss
    and gradient stayed finite: how they are computed, not the training."""
    out = []
    if Metric.KL.value in metrics:
        out.append("check the KL estimator for log(0): a -inf log-prob from the policy or the "
                   "reference model (clamp the log-ratio before exp in the k3 KL estimator)")
    if Metric.ENTROPY.value in metrics:
        out.append("check the entropy computation: log-softmax of the logits, not log of "
                   "softmax probabilities")
    out += [f"mask padded tokens out of the {' and '.join(metrics)} average (an all-padding "
            "or empty sequence gives 0/0)",
            "compute the reference and policy log-probs in fp32 (bf16 log-softmax underflows)"]
    return tuple(out)


def _bad_steps(run: Run, metric: str) -> np.ndarray:
    col = run.frame[metric].to_numpy()
    return np.union1d(run.steps[np.isinf(col)],
                      run.nan_steps.get(metric, np.zeros(0, dtype=np.int64)))


def _finite_at(run: Run, metric: str, steps: np.ndarray) -> bool:
    """Whether ``metric`` was logged as a finite number at every one of ``steps``."""
    if metric not in run.frame.columns:
        return False
    values = run.frame[metric].reindex(steps).to_numpy(dtype=np.float64)
    return bool(len(values)) and bool(np.all(np.isfinite(values)))


def _key(run: Run) -> str | None:
    return next((m for m in WATCHED if m in run.frame.columns), None)


@RULE.reads_short_logs
def short_log(run: Run, p: Mapping[str, float]) -> Outcome | None:
    """One NaN is a failure however short the log; one or two finite steps show no health."""
    out = detect(run, p)
    return out if out.fired else None
