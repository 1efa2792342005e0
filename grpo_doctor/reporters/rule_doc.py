"""A rule's documentation for a person (``grpo-doctor explain``) and the list of rules with
what each needs logged (``grpo-doctor rules``), as plain text wrapped to a width.

A rule's docstring is reStructuredText-light: paragraphs indented under section titles, and
``names`` in double backquotes; on a terminal they read as plain ``names`` without the marks.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Iterator

from grpo_doctor.glossary import Term
from grpo_doctor.rules.base import Rule

_LITERAL = re.compile(r"``(.+?)``")
#: Narrower than this, wrapping helps no one; the text is wrapped as if this wide.
MIN_WIDTH = 40


def plain(text: str) -> str:
    """RST inline literals as plain text: ````window_steps```` -> ``window_steps``."""
    return _LITERAL.sub(r"\1", text)


def needs(rule: Rule) -> str:
    """What a rule needs logged, in words: its required metrics, its alternatives, and what
    it says only when it skips (``Rule.needs``); what ``diagnose`` would skip it for."""
    parts = []
    if rule.requires:
        parts.append(" and ".join(rule.requires))
    groups = ["+".join(g) for g in rule.requires_any]
    if len(groups) > 2 and not any("+" in g for g in groups):
        parts.append("one of " + ", ".join(groups))
    elif groups:
        parts.append(" or ".join(groups))
    if rule.needs:
        parts.append(rule.needs)
    return " and ".join(parts)


def _fill(text: str, width: int, first: str, rest: str) -> str:
    return textwrap.fill(text, max(width, MIN_WIDTH), initial_indent=first,
                         subsequent_indent=rest, break_on_hyphens=False,
                         break_long_words=False)


def _paragraphs(doc: str) -> Iterator[tuple[str, str]]:
    """(indent, text) of each paragraph of a docstring (lines of one indent, run together);
    ("", "") for a blank line."""
    indent, lines = "", list[str]()
    for line in textwrap.dedent(doc).strip("\n").splitlines():
        here = line[:len(line) - len(line.lstrip())]
        if not line.strip() or here != indent:
            if lines:
                yield indent, _join(lines)
            lines = []
            if not line.strip():
                yield "", ""
                continue
            indent = here
        lines.append(line.strip())
    if lines:
        yield indent, _join(lines)


def _join(lines: list[str]) -> str:
    """Lines run together; a word hyphenated across a line break ("near-" / "deterministic")
    stays one word."""
    out = ""
    for line in lines:
        out += line if not out or re.search(r"[A-Za-z]-$", out) else " " + line
    return out


def render_explain(rule: Rule, width: int) -> str:
    """``grpo-doctor explain``: the docstring, its parameters and needs, wrapped to ``width``."""
    out = [_fill(f"{rule.id} — {rule.title}", width, "", "    "), ""]
    out += [_fill(plain(text), width, indent, indent) if text else ""
            for indent, text in _paragraphs(rule.doc)]
    out += ["", "Parameters (defaults):"]
    heads = [f"{p.name} = {p.default:g}" for p in rule.params]
    # The helps start in one column and their wrapped lines hang under it; a name too long
    # for that to leave room keeps its own column.
    column = max(map(len, heads), default=0) + 4
    for head, p in zip(heads, rule.params):
        at = column if column <= max(width, MIN_WIDTH) // 2 else len(head) + 4
        out.append(_fill(f"{head:<{at - 4}}    {plain(p.help)}", width, "    ",
                         " " * (4 + at)))
    what = needs(rule)
    out += ["", _fill(f"Needs: {what or 'no metric declared'}", width, "", " " * 7)]
    return "\n".join(out) + "\n"


def render_rules(rules: Iterable[Rule], width: int) -> str:
    """``grpo-doctor rules``: one entry per rule, its title and what it needs."""
    rules = list(rules)
    column = max(len(r.id) for r in rules) + 2
    lines = []
    for r in rules:
        what = needs(r)
        line = f"{r.id:<{column}}{r.title}" + (f"; needs {what}" if what else "")
        lines.append(_fill(line, width, "", " " * column))
    return "\n".join(lines) + "\n"


def render_term(term: Term, width: int) -> str:
    """``grpo-doctor explain TERM`` for a word of the glossary: its meaning, other spellings,
    and what to read next."""
    out = [_fill(f"{term.name} — {term.meaning}", width, "", "    ")]
    if term.aliases:
        out.append(_fill(f"also written: {', '.join(term.aliases)}", width, "    ", "    "))
    if term.see:
        named = [f"'{s}'" if " " in s else s for s in term.see]
        out.append(_fill(f"see: {', '.join(f'grpo-doctor explain {s}' for s in named)}",
                         width, "    ", "         "))
    return "\n".join(out) + "\n"


def render_index(modes: Iterable[str], terms: Iterable[str], width: int) -> str:
    """``grpo-doctor explain`` alone: what it can explain."""
    return "\n".join([
        _fill("failure modes: " + ", ".join(modes), width, "", "    "),
        _fill("words the reports use: " + ", ".join(terms), width, "", "    "),
        "grpo-doctor explain NAME prints one (case, spaces, - and _ do not matter).",
    ]) + "\n"
