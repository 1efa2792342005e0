"""Tool failure: the tools an agent calls do not answer.

What it detects
    The share of tool calls that failed (an error, a timeout, an invalid call: TRL's
    ``tools/failure_frequency``, NeMo-Gym's ``invalid_tool_call_rate``, 1 minus VerlTool's
    ``tool_call_success``) at ``fail_share`` (50%) or more over the last 20% of the log
    (warning), or at ``broken_share`` (90%) or more there and over the first logs too: the
    tool never worked (critical, a setup problem).

Why it matters
    A tool that fails returns nothing the policy can use. The agent learns to answer without
    it, or, where a reward pays for well-formed calls, goes on calling a tool that never
    answers; neither learns the task the tool was for, and the curves read as training
    dynamics (entropy falling, equal-reward groups, a format term carrying the gain) while
    the cause is the tool's endpoint, sandbox or parser.

How it is detected
    Medians of the failure share over the last 20% of logged points and over the first 10%
    (3 points at least). The onset is the first logged step from which its 5-point rolling
    median stays at ``fail_share`` or more.

False positives
    An agent's first calls are often malformed and fail until it learns the call format: a
    share that starts high and falls below ``fail_share`` is learning, not a broken tool. A
    tool that fails on purpose for some inputs (a search with no hits counted as a failure)
    holds a steady share below one half.

Remedies
    Call the tool by hand with a call from the rollouts (the endpoint, the sandbox, its
    timeouts, the parser of the call syntax the chat template emits) and fix it before
    training on; pay no reward for a call that failed.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules.base import ONSET, Outcome, Param, Rule, Skip
from grpo_doctor.rules.points import late_points, series
from grpo_doctor.store import Run
from grpo_doctor.text import fmt
from grpo_doctor.trends import rolling_median

FAILURES = Metric.TOOL_FAILURE_RATE.value

RULE = Rule(
    "tool_failure", "Tool calls failing",
    requires=(FAILURES,), min_points=8, points="tool failure shares",
    params=(
        Param("fail_share", 0.5, "share of failed tool calls, late in the log, that warns"),
        Param("broken_share", 0.9, "share of failed tool calls, late and from the first logs, "
              "that is a tool that never worked"),
    ),
)


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, f = series(run, FAILURES)
    if float(np.min(f)) < 0 or float(np.max(f)) > 1 + 1e-9:
        # A share is 0-1: a percent (45 for 45%) would read "4500% of calls failed".
        raise Skip(f"the tool failure share must be 0-1 (logged {fmt(float(np.min(f)))} to "
                   f"{fmt(float(np.max(f)))}): map a 0-1 share")
    late = float(np.median(f[-late_points(len(f), 0.2, 3):]))
    early = float(np.median(f[:max(3, len(f) // 10)]))
    evidence: dict[str, object] = {"failure_share_start": round(early, 4),
                                   "failure_share_now": round(late, 4)}
    if late < p["fail_share"]:
        return Outcome(Status.OK, f"failed tool calls {early:.0%} -> {late:.0%}",
                       evidence=evidence, key_metric=FAILURES)
    smooth = rolling_median(f, 5)
    below = np.nonzero(smooth < p["fail_share"])[0]
    start = int(below[-1]) + 1 if len(below) else 0
    onset = int(steps[min(start, len(steps) - 1)])
    broken = late >= p["broken_share"] and early >= p["broken_share"]
    status = Status.CRITICAL if broken else Status.WARNING
    evidence["threshold"] = (f"{p['broken_share']:.0%}+ of calls failing from the first logs "
                             "to the end" if broken else
                             f"{p['fail_share']:.0%}+ of calls failing late in the log")
    evidence["from_start"] = start == 0
    summary = (f"the tool never worked: {early:.0%} of calls failed over the first logs, "
               f"{late:.0%} at the end" if broken else
               f"{late:.0%} of tool calls failed at the end (from step {ONSET}; "
               f"{early:.0%} at the start)")
    remedies = (
        "fix the tool before training on: call it by hand with a call from the rollouts "
        "(endpoint, sandbox, timeouts, the parser of the call syntax the chat template emits)"
        + ("" if broken else f"; {late:.0%} of calls fail now"),
        "pay no reward for a call that failed (a well-formed call to a broken tool earns "
        "nothing)",
    )
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=remedies,
                   key_metric=FAILURES)
