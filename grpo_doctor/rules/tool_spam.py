"""Tool spam: the tool-call rate surging.

What it detects
    Tool calls (or turns) per sample rising to at least ``surge`` (3x) their early level with
    a significant upward trend, or a level shift to that height.

Why it matters
    A reward that pays for calling tools (or for the information they return) is farmed by
    calling them over and over: the search tool is hit a hundred times, latency and cost
    explode, and answers do not improve.

How it is detected
    Late-window median (last 20% of logged points) over the early median; Mann-Kendall trend
    (Hamed-Rao corrected); onset at the mean-shift change point. Critical when the reward or
    held-out score does not improve meanwhile.

False positives
    Agents do learn to use tools more: a rise that comes with a rising reward stays a warning;
    a rate near zero growing to a handful of calls is judged on the absolute rise too
    (``min_calls``).

Remedies
    Cap tool calls per episode (max turns); give tool use a cost or make its reward
    conditional on a correct final answer; check the tool-call reward for loopholes.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.metrics import Metric
from grpo_doctor.rules.base import ONSET, Outcome, Param, Rule
from grpo_doctor.rules.points import head_tail, series, snap_to_logged
from grpo_doctor.rules.signals import reward_progress
from grpo_doctor.store import Run
from grpo_doctor.text import fmt
from grpo_doctor.trends import level_shift_onset, mann_kendall

TOOLS = Metric.TOOL_CALLS.value

RULE = Rule(
    "tool_spam", "Tool-call spam",
    requires=(TOOLS,), min_points=8, points="tool-call rates",
    params=(
        Param("surge", 3.0, "late/early tool-call rate that counts as a surge"),
        Param("min_calls", 1.0, "absolute rise in calls per sample needed as well"),
    ),
)


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, c = series(run, TOOLS)
    c0, cc = head_tail(c)
    trend = mann_kendall(steps, c)
    ratio = cc / c0 if c0 > 0 else float("inf") if cc > 0 else 1.0
    evidence: dict[str, object] = {"tool_calls_start": c0, "tool_calls_now": cc,
                                   "trend_p": float(f"{trend.p:.3g}")}
    if not (ratio >= p["surge"] and cc - c0 >= p["min_calls"] and trend.increasing(0.01)):
        return Outcome(Status.OK, f"tool calls {fmt(c0)} -> {fmt(cc)} per sample",
                       evidence=evidence, key_metric=TOOLS)
    onset = snap_to_logged(run, TOOLS, level_shift_onset(steps, c)[0])
    progress = reward_progress(run, float(onset))
    status = Status.CRITICAL if progress.logged and not progress.improving else Status.WARNING
    evidence["threshold"] = f"tool calls >= {p['surge']:g}x their start"
    summary = (f"tool spam: tool calls per sample rose {fmt(c0)} -> {fmt(cc)} from step "
               f"{ONSET}" + (", reward not improving" if status == Status.CRITICAL else ""))
    remedies = (
        "cap tool calls / turns per episode",
        "pay for tool use only through a correct final answer, or give each call a cost",
        "look for a loophole in the tool-call reward",
    )
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=remedies,
                   key_metric=TOOLS)
