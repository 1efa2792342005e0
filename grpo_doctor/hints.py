"""Hints for signals a run logged under names nobody maps.

A column called ``probe/answer_logprob`` is a mean log-prob to anyone who reads it, and a
check that says "skipped: needs log_prob_mean" beside it helps no one. These guesses look at
an unmapped column's name and its values and suggest the ``--map`` that would use it. They
are only suggestions: nothing is mapped without the user saying so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grpo_doctor.errors import InputError
from grpo_doctor.files import is_remote
from grpo_doctor.importers.launch import launch_error, silent_stop
from grpo_doctor.metrics import Metric
from grpo_doctor.store import TEXT_VALUES_NOTE, Run


@dataclass(frozen=True)
class Hint:
    metric: str  # the canonical metric it could be
    column: str  # the unmapped column
    what: str  # the metric in words

    @property
    def option(self) -> str:
        return f"--map {self.metric}={self.column}"

    def __str__(self) -> str:
        return f"{self.column} looks like {self.what}: {self.option}"


def _tokens(name: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", name.lower()) if t}


Values = Callable[[np.ndarray], bool]


@dataclass(frozen=True)
class _Guess:
    metric: Metric
    what: str
    name: Callable[[str, set[str]], bool]
    values: Values


def _share(pred: np.ndarray) -> float:
    return float(pred.mean()) if len(pred) else 0.0


_GUESSES = (
    _Guess(Metric.LOG_PROB_MEAN, "a mean log-prob",
           lambda n, t: any(k in n for k in ("logprob", "log_prob", "logp", "log_pi", "loglik")),
           lambda v: _share((v <= 0) & (v > -100)) >= 0.95),
    _Guess(Metric.ENTROPY, "an entropy",
           lambda n, t: "entropy" in n or "ent" in t,
           lambda v: _share((v >= 0) & (v < 20)) >= 0.95),
    # Not the KLs between the policy and the one that sampled (verl's ppo_kl, PPO's
    # approx_kl, a rollout mismatch KL) nor a KL's coefficient or target: none is the drift
    # from the reference (verl's actor/ppo_kl had been offered for kl_drift). Nor TRL PPO's
    # objective/kl, a sum over each response's tokens (metrics.py leaves it unmapped).
    _Guess(Metric.KL, "a KL to the reference",
           lambda n, t: ("kl" in t or any(x.startswith("kl") for x in t)) and not t & {
               "ppo", "approx", "mismatch", "coef", "coeff", "ctl", "ctrl", "target",
               "rollout", "old", "objective"},
           lambda v: _share(v >= -0.01) >= 0.95),
    _Guess(Metric.ZERO_STD_FRACTION, "the share of groups with equal rewards",
           lambda n, t: any(k in n for k in ("zero_std", "zerostd", "all_same", "same_reward",
                                             "no_variance", "degenerate", "zero_var")),
           lambda v: _share((v >= 0) & (v <= 1)) == 1.0),
    _Guess(Metric.REWARD_MEAN, "the mean reward",
           lambda n, t: bool(t & {"reward", "rewards", "score", "return"})
           and not t & {"std", "min", "max", "var"},
           lambda v: True),
    _Guess(Metric.GRAD_NORM, "the gradient norm",
           lambda n, t: "grad" in n and "norm" in n,
           lambda v: _share(v >= 0) == 1.0),
    _Guess(Metric.RESPONSE_LENGTH_MEAN, "the mean completion length",
           lambda n, t: bool(t & {"length", "len", "tokens"})
           and bool(t & {"response", "completion", "completions", "gen", "output"})
           and not t & {"max", "min", "std"},
           lambda v: _share(v >= 0) == 1.0),
)


#: Columns named like a metric the checks read that are left unread on purpose, and why: said
#: once, so "kl_drift: log kl" beside a logged objective/kl is not read as an oversight.
_UNREAD = {
    "objective/kl": (Metric.KL, "TRL's PPO and RLOO sum it over each response's tokens; the KL "
                                "lines are per token, so it is not read as the KL"),
}


def unread_notes(run: Run) -> list[str]:
    """Notes on columns left unread on purpose (``_UNREAD``) where their metric is missing."""
    return [f"{column}: {why}" for column, (metric, why) in _UNREAD.items()
            if column in run.unmapped and not run.has(metric.value)]


def unmapped_hints(run: Run) -> list[Hint]:
    """For each canonical metric the run lacks, the first unmapped column whose name and values
    look like it (at most one suggestion per metric and per column)."""
    hints: list[Hint] = []
    used: set[str] = set()
    for guess in _GUESSES:
        if run.has(guess.metric.value):
            continue
        for column in run.unmapped:
            key = column if column in run.frame.columns else f"raw/{column}"
            if column in used or key not in run.frame.columns:
                continue
            if not guess.name(column.lower(), _tokens(column)):
                continue
            v = run.frame[key].to_numpy(dtype=np.float64)
            v = v[np.isfinite(v)]
            if len(v) >= 3 and guess.values(v):
                hints.append(Hint(guess.metric.value, column, guess.what))
                used.add(column)
                break
    return hints


#: Columns a trainer or tracker logs about itself, never a training metric to map: TRL's
#: ``profiling/Time taken: ...``, trackers' ``system/...``, runtimes and timestamps.
_BOOKKEEPING = re.compile(r"^(?:profiling|system|sys|perf|timing)/|time|runtime|timestamp|"
                          r"memory|^_", re.IGNORECASE)


def require_metrics(run: Run) -> None:
    """Refuse a run in which not one column is a metric grpo-doctor knows: nothing could be
    checked, and a report would only say so at length. Names the columns and how to map."""
    if run.mapping:
        return
    if not run.source.startswith("wandb://") and not is_remote(run.source):
        # No training metric, and a console capture beside the log ending in a traceback: the
        # launch failed before its first step (an MLflow run holding only profiling timings).
        failed = launch_error(Path(run.source)) or silent_stop(Path(run.source))
        if failed is not None:
            raise failed
    shown = ", ".join(run.unmapped[:8]) + (", ..." if len(run.unmapped) > 8 else "")
    hints = unmapped_hints(run)
    metrics = [c for c in run.unmapped if not _BOOKKEEPING.search(c)]
    if run.unmapped and not metrics:
        raise InputError(f"{run.source}: no training metric logged, only timings and system "
                         f"values ({shown}): did the run stop before its first logged step?")
    example = metrics[0] if metrics else "COLUMN"
    how = (" ".join(h.option for h in hints) if hints else
           f"--map CANONICAL=COLUMN, e.g. --map reward_mean={example} (the metrics each check "
           "needs: grpo-doctor rules)")
    columns = f"columns: {shown}" if shown else "no columns"
    text = next((n for n in run.notes if n.startswith(TEXT_VALUES_NOTE)), None)
    if text is not None:
        # Its keys hold numbers written as text ("52.5|37.8"): no --map reads those.
        raise InputError(f"{run.source}: no metric grpo-doctor knows ({columns}); "
                         f"{text[len(TEXT_VALUES_NOTE):]} hold numbers written "
                         "as text, not one number each: write each as its own key (a mean "
                         "and a std apart)")
    raise InputError(f"{run.source}: no metric grpo-doctor knows ({columns}); map yours with "
                     f"{how}")
