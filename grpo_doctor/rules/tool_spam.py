"""Tool spam: the tool-call rate surging.

What it detects
    Tool calls per sample rising to at least ``surge`` (3x) their early level with a
    significant upward trend, or a level shift to that height. Where only turns are logged
    (NeMo-RL, VerlTool, Search-R1), the turns above the floor every episode has (the whole
    number at or below their lowest mean) stand for the calls: 1.39 -> 3.34 turns is 0.39 ->
    2.34 calls, a 6x surge, not 2.4x. A logged reward term named for tool use that rose is
    named as what the calls farm.

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

import re
from collections.abc import Mapping

from grpo_doctor.findings import Status
from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules.base import ONSET, Outcome, Param, Rule
from grpo_doctor.rules.points import head_tail, series, snap_to_logged
from grpo_doctor.rules.signals import (
    component_role,
    components,
    configured_terms,
    configured_weight,
    reward_progress,
)
from grpo_doctor.store import Run
from grpo_doctor.text import fmt
from grpo_doctor.trends import level_shift_onset, mann_kendall

TOOLS = Metric.TOOL_CALLS.value
TURNS = Metric.TURNS.value

RULE = Rule(
    "tool_spam", "Tool-call spam",
    requires_any=((TOOLS,), (TURNS,)), min_points=8, points="tool-call rates",
    params=(
        Param("surge", 3.0, "late/early tool-call rate that counts as a surge"),
        Param("min_calls", 1.0, "absolute rise in calls per sample needed as well"),
    ),
)

#: A reward term that pays for using tools, by its name.
_TOOL_TERM = re.compile(r"tool|call|search|retriev|query", re.IGNORECASE)


def _calls(run: Run) -> tuple[np.ndarray, np.ndarray, str, str]:
    """(steps, calls per sample, the metric, how the calls were read). Turns where no call
    count is logged, less the turns every episode has: the floor, the whole number at or below
    their lowest logged mean (an episode with no call still answers)."""
    if run.has(TOOLS):
        steps, c = series(run, TOOLS)
        return steps, c, TOOLS, "tool calls per sample"
    steps, t = series(run, TURNS)
    floor = float(np.floor(t.min())) if len(t) else 0.0
    return steps, t - floor, TURNS, (f"tool calls per sample (turns less the {fmt(floor)} "
                                     "every episode has)")


def _tool_term(run: Run) -> tuple[str, float | None, float | None] | None:
    """(name, first, last) of a logged reward term that pays for tool use and rose: the
    reward the calls farm; else (name, None, None) of a term the config weighs above 0 and
    names for tool use (verl logs no term per step)."""
    for name, col in components(run).items():
        if not _TOOL_TERM.search(name) or component_role(run, name) == "correctness":
            continue
        _, v = series(run, col)
        if len(v) >= 4:
            first, last = head_tail(v)
            if last > first:
                return name, first, last
    for name in configured_terms(run):
        weight = configured_weight(run, name)
        if _TOOL_TERM.search(name) and weight is not None and weight > 0:
            return name, None, None
    return None


@RULE.detects
def detect(run: Run, p: Mapping[str, float]) -> Outcome:
    steps, c, metric, what = _calls(run)
    c0, cc = head_tail(c)
    trend = mann_kendall(steps, c)
    ratio = cc / c0 if c0 > 0 else float("inf") if cc > 0 else 1.0
    evidence: dict[str, object] = {"tool_calls_start": c0, "tool_calls_now": cc,
                                   "trend_p": float(f"{trend.p:.3g}")}
    if metric == TURNS:
        evidence["read_from"] = what
    if not (ratio >= p["surge"] and cc - c0 >= p["min_calls"] and trend.increasing(0.01)):
        return Outcome(Status.OK, f"{what}: {fmt(c0)} -> {fmt(cc)}", evidence=evidence,
                       key_metric=metric)
    onset = snap_to_logged(run, metric, level_shift_onset(steps, c)[0])
    progress = reward_progress(run, float(onset))
    status = Status.CRITICAL if progress.logged and not progress.improving else Status.WARNING
    evidence["threshold"] = f"tool calls >= {p['surge']:g}x their start"
    term = _tool_term(run)
    paid = ""
    remedies: tuple[str, ...] = (
        "cap tool calls / turns per episode",
        "pay for tool use only through a correct final answer, or give each call a cost",
        "look for a loophole in the tool-call reward",
    )
    if term is not None:
        name, first, last = term
        weight = configured_weight(run, name)
        weighed = f" (weight {fmt(weight)} in the config)" if weight is not None else ""
        moved = f" ({fmt(first)} -> {fmt(last)})" if first is not None else ""
        paid = (f"; the {name} term it farms rose {fmt(first)} -> {fmt(last)}"
                if first is not None else
                f"; the config pays a {name} term{weighed}")
        evidence["tool_term"] = {"name": name, "start": first, "now": last, "weight": weight}
        remedies = (
            f"stop paying for calls: the {name} term{weighed} pays each one{moved}; drop it "
            "(weight 0) or pay it only with a correct final answer",
            "cap tool calls / turns per episode",
            "give each call a cost",
        )
    summary = (f"tool spam: {what} rose {fmt(c0)} -> {fmt(cc)} from step {ONSET}{paid}"
               + (", reward not improving" if status == Status.CRITICAL else ""))
    return Outcome(status, summary, onset_step=onset, evidence=evidence, remedies=remedies,
                   key_metric=metric)
