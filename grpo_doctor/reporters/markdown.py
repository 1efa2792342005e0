"""Markdown for pull requests and $GITHUB_STEP_SUMMARY, verdict first (as the terminal report):
status, root cause and first action, the findings in the order they began, the merged plan,
the checks that passed and those skipped; every check's row in a collapsed table.

Text is escaped only where Markdown would read it as syntax (:func:`escape`), so a raw PR
comment still reads as prose: ``0.5-5``, ``(DAPO)`` and ``kl_drift`` stay as they are.
"""

from __future__ import annotations

from grpo_doctor.escape import markdown as escape
from grpo_doctor.findings import Check, Diagnosis
from grpo_doctor.reporters import config_line, evidence
from grpo_doctor.reporters.outline import (
    by_onset,
    cause_after_mode,
    cause_label,
    cause_name,
    cause_text,
    critical_apart,
    extra_hints,
    next_run,
    passed,
    sentence,
    skipped,
    skipped_line,
    status_words,
    unsettled,
)

_ICON = {"ok": "✅ ok", "warning": "⚠️ warning", "critical": "🛑 critical", "skipped": "➖ skipped"}
_RUN_ICON = {"healthy": "✅", "warning": "⚠️", "critical": "🛑", "inconclusive": "❔"}


def _step(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


def _finding(check: Check, said: str | None) -> list[str]:
    status = check.status.value
    text = sentence(check)
    what = "the root cause, above" if text == said else escape(text)
    line = (f"- {_ICON[status].split()[0]} **{escape(check.mode)}** ({status}) · onset "
            f"{_step(check.onset_step)} · {check.first_alert_words}: {what}")
    fired = evidence.threshold(check)
    if fired:
        line += f" · threshold: {escape(fired)}"
    out = [line]
    out += [f"  - incident: {escape(i.summary)}" for i in check.incidents
            if i.summary not in check.summary]
    return out


def render_markdown(diagnosis: Diagnosis, heading_level: int = 2) -> str:
    h = "#" * heading_level
    run = diagnosis.run
    status = diagnosis.status
    lines = [
        f"{h} {_RUN_ICON.get(status, '')} grpo-doctor: {escape(run.name)} — "
        f"{status_words(diagnosis)}",
        "",
        f"steps {_step(run.first_step)}–{_step(run.last_step)} ({run.n_steps:,} logged) · "
        f"{escape(run.format)} · {escape(run.source)}",
        "",
        *([escape(config), ""] if (config := config_line(diagnosis.config)) else []),
    ]
    cause = diagnosis.root_cause
    said = cause_text(diagnosis)
    if cause is not None:
        name, seen = cause_name(cause)
        lines += [f"**{cause_label(diagnosis).capitalize()}**: {escape(name)}"
                  f"{escape(seen + cause_after_mode(diagnosis, _step))}  ",
                  f"**Do this first**: {escape(cause.first_action)}", ""]
        if (apart := critical_apart(diagnosis)) is not None:
            lines += [f"**Also critical**: {escape(apart)}", ""]
        lines += _signs(diagnosis)
    elif diagnosis.status_reason:
        lines += [f"**Inconclusive**: {escape(diagnosis.status_reason)}.", ""]
        lines += _signs(diagnosis)
        if (settings := next_run(diagnosis)) is not None:
            lines += [f"**For the next run**: {escape(settings[1])}", ""]
    elif status == "healthy":
        lines += ["No failure mode found.", ""]
        if (settings := next_run(diagnosis)) is not None:
            lines += [f"**For the next run**: {escape(settings[1])}", ""]
    findings = by_onset(diagnosis)
    if findings:
        lines += [f"{h}# Findings, in the order they began", ""]
        for check in findings:
            lines += _finding(check, said if cause is not None and cause.mode == check.mode
                              else None)
            if not diagnosis.plan:
                lines += [f"  - {escape(r)}" for r in check.remedies]
        lines.append("")
    if diagnosis.plan:
        several = len(findings) > 1
        lines += [f"{h}# What to change, first things first", ""]
        # Tagged as the terminal tags them: a consequence's item said to follow from the
        # root cause (a PR comment had read it as an independent action, helper-70).
        lines += [f"{k}. {escape(item.action)}"
                  + (f" ({escape(', '.join(item.modes))}"
                     + ("; follows from the root cause" if item.treats == "consequence"
                        else "") + ")" if several and item.modes else "")
                  for k, item in enumerate(diagnosis.plan, 1)]
        lines.append("")
    if ok := passed(diagnosis):
        lines.append(f"**Passed**: {escape(', '.join(ok))}  ")
    if open_ := unsettled(diagnosis):
        said = "; ".join(f"{c.mode} ({c.summary})" for c in open_)
        lines.append(f"**No call**: {escape(said)}  ")
    if skipped(diagnosis):
        lines.append(f"**Skipped**: {escape(skipped_line(diagnosis.checks))}")
    lines += ["", *[f"> hint: {escape(hint)}" for hint in extra_hints(diagnosis)]]
    lines += ["<details><summary>Every check</summary>", "",
              "| check | status | onset step | first alert | summary |",
              "|---|---|---|---|---|"]
    for c in diagnosis.checks:
        lines.append(
            f"| {escape(c.mode)} | {_ICON[c.status.value]} | {_step(c.onset_step)} | "
            f"{_step(c.shown_alert_step)} | {escape(c.summary)} |"
        )
    lines += ["", "</details>"]
    lifted = next_run(diagnosis)
    for note in diagnosis.notes:
        if lifted is None or note != lifted[0]:
            lines += ["", f"> note: {escape(note)}"]
    return "\n".join(lines) + "\n"


def _signs(diagnosis: Diagnosis) -> list[str]:
    """What every step of a log too short to judge shows at an extreme, as a list."""
    if not diagnosis.signs:
        return []
    return ["The logged steps show:", "", *[f"- {escape(sign)}" for sign in diagnosis.signs],
            ""]
