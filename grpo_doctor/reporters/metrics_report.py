"""`grpo-doctor metrics`: what was read from a source and how it mapped."""

from __future__ import annotations

import textwrap

from grpo_doctor.hints import unmapped_hints
from grpo_doctor.reporters.escape import terminal as t
from grpo_doctor.reporters.fit import shorten_left
from grpo_doctor.store import Run
from grpo_doctor.text import plural


def _step_source(run: Run) -> str:
    """Where the steps came from, in words: the importer's own step field, a column, or row
    order."""
    if run.step_source == "given":
        return f"steps as the {t(run.format)} importer read them"
    if run.step_source == "row order":
        return "steps: row order, no step column"
    return f"step column: {t(run.step_source)}"


def render_metrics(runs: list[Run], width: int | None = None) -> str:
    """The report; ``width``: wrap to it (a continuation hangs under its line's text), a
    source path shortened from the left; None: one line per item (for a pipe)."""
    out: list[str] = []
    for run in runs:
        head = f"run {t(run.name)} ({t(run.format)}) from "
        source = t(run.source)
        if width is not None:
            source = shorten_left(source, max(20, width - len(head)))
        out.append(head + source)
        out.append(f"  steps: {run.n_steps:,} logged, {run.first_step}..{run.last_step} "
                   f"({_step_source(run)}); duplicate steps: {run.duplicate_steps}; "
                   f"restarts: {run.restarts}")
        for note in run.notes:
            out.append(f"  note: {t(note)}")
        out.append("  canonical metric -> source column")
        name_w = max((len(k) for k in run.mapping), default=0)
        for canonical, source in run.mapping.items():
            extra = []
            if canonical in run.conversions:
                extra.append(t(run.conversions[canonical]))
            if canonical in run.proxies:
                extra.append("proxy: " + t(run.proxies[canonical]))
            n = int(run.frame[canonical].notna().sum()) if canonical in run.frame else 0
            tail = f"  [{'; '.join(extra)}]" if extra else ""
            count = plural(n, "value")
            out.append(f"    {t(canonical):<{name_w}} <- {t(source)}  ({count}){tail}")
        if run.unmapped:
            out.append(f"  unmapped ({len(run.unmapped)}): {t(', '.join(run.unmapped))}")
        for hint in unmapped_hints(run):
            out.append(f"  hint: {t(hint)}")
        if run.nan_steps:
            bad = ", ".join(f"{t(k)} ({len(v)})" for k, v in run.nan_steps.items())
            out.append(f"  logged NaN: {bad}")
        out.append("")
    if width is None:
        return "\n".join(out)
    return "\n".join(_wrapped(line, width) for line in out)


def _wrapped(line: str, width: int) -> str:
    """``line`` wrapped to ``width``, continuations under the text after its label
    ("  unmapped (12): ", "  note: ", "    entropy <- ")."""
    if len(line) <= width:
        return line
    body = len(line) - len(line.lstrip())
    for mark in (": ", "<- "):
        at = line.find(mark, body)
        if 0 <= at < width // 2:
            body = at + len(mark)
            break
    return textwrap.fill(line, width, subsequent_indent=" " * body, break_on_hyphens=False)
