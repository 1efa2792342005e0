"""`grpo-doctor metrics`: what was read from a source and how it mapped."""

from __future__ import annotations

from grpo_doctor.hints import unmapped_hints
from grpo_doctor.reporters.escape import terminal as t
from grpo_doctor.store import Run


def _step_source(run: Run) -> str:
    """Where the steps came from, in words: the importer's own step field, a column, or row
    order."""
    if run.step_source == "given":
        return f"steps as the {t(run.format)} importer read them"
    if run.step_source == "row order":
        return "steps: row order, no step column"
    return f"step column: {t(run.step_source)}"


def render_metrics(runs: list[Run]) -> str:
    out = []
    for run in runs:
        out.append(f"run {t(run.name)} ({t(run.format)}) from {t(run.source)}")
        out.append(f"  steps: {run.n_steps:,} logged, {run.first_step}..{run.last_step} "
                   f"({_step_source(run)}); duplicate steps: {run.duplicate_steps}; "
                   f"restarts: {run.restarts}")
        for note in run.notes:
            out.append(f"  note: {t(note)}")
        out.append("  canonical metric -> source column")
        width = max((len(k) for k in run.mapping), default=0)
        for canonical, source in run.mapping.items():
            extra = []
            if canonical in run.conversions:
                extra.append(t(run.conversions[canonical]))
            if canonical in run.proxies:
                extra.append("proxy: " + t(run.proxies[canonical]))
            n = int(run.frame[canonical].notna().sum()) if canonical in run.frame else 0
            tail = f"  [{'; '.join(extra)}]" if extra else ""
            out.append(f"    {t(canonical):<{width}} <- {t(source)}  ({n:,} values){tail}")
        if run.unmapped:
            out.append(f"  unmapped ({len(run.unmapped)}): {t(', '.join(run.unmapped))}")
        for hint in unmapped_hints(run):
            out.append(f"  hint: {t(hint)}")
        if run.nan_steps:
            bad = ", ".join(f"{t(k)} ({len(v)})" for k, v in run.nan_steps.items())
            out.append(f"  logged NaN: {bad}")
        out.append("")
    return "\n".join(out)
