"""`grpo-doctor metrics`: what was read from a source and how it mapped."""

from __future__ import annotations

import textwrap

from grpo_doctor.escape import terminal as t
from grpo_doctor.hints import unmapped_hints
from grpo_doctor.reporters.fit import shorten_left, shorten_right
from grpo_doctor.rules.signals import components, role_and_reason
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


#: Joins the words of what must not be split across lines ("(39 values)"); log text never
#: holds it (``escape.terminal`` shows a NUL as ``\x00``).
_GLUE = "\x00"
#: "<- " glued to the source column it points at.
_ARROW = "<-" + _GLUE
#: A continuation hangs under a line's label when this much room is left beside it.
_MIN_HANGING_ROOM = 24


def _header(run: Run, width: int | None) -> list[str]:
    """"run NAME (FORMAT) from PATH" on one line where it fits, the path shortened from the
    left as long as its file name stays whole; else the path on a line of its own (shortened
    from the left only when too long for it), and the name shortened to fit its line."""
    name, rest = t(run.name), f" ({t(run.format)}) from"
    if width is not None:  # a name too long for the line keeps its start (the path its end)
        name = shorten_right(name, max(8, width - len("run ") - len(rest)))
    head = f"run {name}{rest}"
    source = t(run.source)
    if width is None or len(head) + 1 + len(source) <= width:
        return [f"{head} {source}"]
    room = width - len(head) - 1
    if len(source.rstrip("/").rsplit("/", 1)[-1]) < room:  # "…" and the whole file name fit
        return [f"{head} {shorten_left(source, room)}"]
    return [head, "  " + shorten_left(source, max(1, width - 2))]


def render_metrics(runs: list[Run], width: int | None = None) -> str:
    """The report; ``width``: wrap to it (a continuation hangs under its line's text, a count
    never split), a source path shortened from the left; None: one line per item (for a
    pipe)."""
    out: list[str] = []
    for run in runs:
        out += _header(run, width)
        out.append(f"  steps: {run.n_steps:,} logged, {run.first_step}..{run.last_step} "
                   f"({_step_source(run)}); duplicate steps: {run.duplicate_steps}; "
                   f"restarts: {run.restarts}")
        for note in run.notes:
            out.append(f"  note: {t(note)}")
        out.append("  canonical metric -> source column")
        name_w = max((len(t(k)) for k in run.mapping), default=0)
        if width is not None and width - name_w - 8 < _MIN_HANGING_ROOM:
            name_w = 0  # no room to align the source columns beside the names
        for canonical, source in run.mapping.items():
            extra = []
            if canonical in run.conversions:
                extra.append(t(run.conversions[canonical]))
            if canonical in run.proxies:
                extra.append("proxy: " + t(run.proxies[canonical]))
            n = int(run.frame[canonical].notna().sum()) if canonical in run.frame else 0
            tail = f"  [{'; '.join(extra)}]" if extra else ""
            count = plural(n, "value").replace(" ", _GLUE)
            out.append(f"    {t(canonical):<{name_w}} {_ARROW}{t(source)}  ({count}){tail}")
        if run.unmapped:
            out.append(f"  unmapped ({len(run.unmapped)}): {t(', '.join(run.unmapped))}")
        roles = [(name, *role_and_reason(run, name)) for name in components(run)]
        if roles:
            out.append("  reward terms, as the checks read them (--reward-role ROLE=NAME to "
                       "change one):")
            name_w = max(len(t(n)) for n, _, _ in roles)
            out += [f"    {t(n):<{name_w}} {role}: {t(why)}" for n, role, why in roles]
        for hint in unmapped_hints(run):
            out.append(f"  hint: {t(hint)}")
        if run.nan_steps:
            bad = ", ".join(f"{t(k)} ({len(v)})" for k, v in run.nan_steps.items())
            out.append(f"  logged NaN: {bad}")
        out.append("")
    if width is not None:
        out = [_wrapped(line, width) for line in out]
    return "\n".join(out).replace(_GLUE, " ")




def _wrapped(line: str, width: int) -> str:
    """``line`` wrapped to ``width``, continuations under the text after its label
    ("  unmapped (12): ", "  note: ", "    entropy <- "), or two columns in from the line's
    start when a label leaves too little room."""
    if len(line) <= width:
        return line
    start = len(line) - len(line.lstrip())
    body = start + 2
    for mark in (": ", _ARROW):
        at = line.find(mark, start)
        if at >= 0 and width - at - len(mark) >= _MIN_HANGING_ROOM:
            body = at + len(mark)
            break
    return textwrap.fill(line[start:], width, initial_indent=" " * start,
                         subsequent_indent=" " * body, break_on_hyphens=False,
                         break_long_words=False)  # a name or a path whole, even if too long
