"""Markdown for pull requests and $GITHUB_STEP_SUMMARY. Every name from a log is escaped."""

from __future__ import annotations

import re

from grpo_doctor.findings import Diagnosis

_ICON = {"ok": "✅ ok", "warning": "⚠️ warning", "critical": "🛑 critical", "skipped": "➖ skipped"}
_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def escape(text: object) -> str:
    """Text from a log rendered literally in Markdown (and in the HTML it becomes)."""
    s = str(text).replace("&", "&amp;").replace("\n", " ")
    return _SPECIAL.sub(r"\\\1", s)


def _step(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


def render_markdown(diagnosis: Diagnosis, heading_level: int = 2) -> str:
    h = "#" * heading_level
    run = diagnosis.run
    lines = [
        f"{h} grpo-doctor: {escape(run.name)} — {diagnosis.status}",
        "",
        f"{escape(run.format)} · steps {_step(run.first_step)}–{_step(run.last_step)} "
        f"({run.n_steps:,} logged) · {len(diagnosis.metrics)} canonical metrics",
        "",
    ]
    if diagnosis.status_reason:
        lines += [f"**Inconclusive**: {escape(diagnosis.status_reason)}.", ""]
    cause = diagnosis.root_cause
    if cause is not None:
        lines += [f"**Probable root cause**: {escape(cause.mode)} at step {_step(cause.step)}: "
                  f"{escape(cause.summary)}", "",
                  f"**Do this first**: {escape(cause.first_action)}", ""]
    lines += [f"> hint: {escape(hint)}" for hint in diagnosis.hints]
    if diagnosis.hints:
        lines.append("")
    lines += [
        "| check | status | onset step | first alert | summary |",
        "|---|---|---|---|---|",
    ]
    for c in diagnosis.checks:
        lines.append(
            f"| {escape(c.mode)} | {_ICON[c.status.value]} | {_step(c.onset_step)} | "
            f"{_step(c.first_alert_step)} | {escape(c.summary)} |"
        )
    for c in diagnosis.findings:
        lines += ["", f"{h}# {escape(c.mode)} ({c.status.value})", "", escape(c.summary), ""]
        if c.incidents:
            lines.append("Incidents:")
            lines += [f"- {escape(i.summary)}" for i in c.incidents]
            lines.append("")
        if c.remedies:
            lines.append("What to change:")
            lines += [f"- {escape(r)}" for r in c.remedies]
    if len(diagnosis.plan) > 1:
        lines += ["", f"{h}# Plan (every finding's remedies, merged)", ""]
        lines += [f"{k}. {escape(item.action)} ({escape(', '.join(item.modes))})"
                  for k, item in enumerate(diagnosis.plan, 1)]
    for note in diagnosis.notes:
        lines += ["", f"> note: {escape(note)}"]
    return "\n".join(lines) + "\n"
