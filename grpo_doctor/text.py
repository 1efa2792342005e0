"""Numbers and steps as a person reads them, shared by rules, reporters and the live monitor."""

from __future__ import annotations

import re

from grpo_doctor.lazy import numpy as np


def fmt(x: float | int | None, digits: int = 3) -> str:
    """A number as a person reads it: 0.31, 2e-06, 1,400."""
    if x is None:
        return "n/a"
    if isinstance(x, (int, np.integer)) or (float(x).is_integer() and 100 <= abs(x) < 1e15):
        return f"{int(x):,}"
    x = float(x)
    if x == 0:
        return "0"
    if 1000 <= abs(x) < 1e6:
        return f"{x:,.0f}"
    if abs(x) < 1e-3 or abs(x) >= 1e5:
        return f"{x:.{max(1, digits - 2)}g}" if abs(x) < 1e-3 else f"{x:.3g}"
    return f"{x:.{digits}g}"


def fmt_apart(a: float, b: float) -> tuple[str, str]:
    """Two numbers as ``fmt`` writes them, with as many more digits as it takes for two
    different ones to read different (a compare's "A 0.0001, B 0.0001" for two lr schedules
    apart; trial 81)."""
    said = fmt(a), fmt(b)
    for digits in range(4, 11):
        if a == b or said[0] != said[1]:
            break
        said = fmt(a, digits), fmt(b, digits)
    return said


def knob_value(x: float) -> str:
    """A setting's value as a config file writes it: 1e-4, 2.5e-6, 0.04, 1024, 1e9."""
    x = float(x)
    if x == 0 or not np.isfinite(x):
        return f"{x:g}"
    if abs(x) < 1e-3 or abs(x) >= 1e7:
        mantissa, _, exponent = f"{x:.1e}".partition("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    if float(x).is_integer() or abs(x) >= 1e3:  # 99999.99 is 100000, not 1e+05
        return str(int(round(x)))
    return f"{x:.4g}"


def step_text(step: float | int) -> str:
    """A step as the log writes it (no thousands separator: a user greps for it)."""
    return str(int(step))


#: "step N", "steps N and M", "N steps": a step word next to a number, in a rule's text.
_STEP_WORD = re.compile(r"\bstep(s?)\b(?=\s+\d)|(?<=\d\s)step(s?)\b")


def in_log_lines(text: str) -> str:
    """A rule's text about a run whose steps are its log lines (a console log with no step in
    it, read live): each "step N" says "log line N", so no number is called a trainer step."""
    return _STEP_WORD.sub(lambda m: "log line" + (m.group(1) or m.group(2) or ""), text)


def change(start: float, end: float) -> str:
    """How far a positive quantity moved, as a person says it: "up 40%", "down 90%", "x93"."""
    if start <= 0 or end < 0:
        return f"{fmt(start)} -> {fmt(end)}"
    ratio = end / start
    if ratio >= 2:
        return f"x{ratio:.0f}" if ratio >= 10 else f"x{ratio:.1f}"
    return f"up {ratio - 1:.0%}" if ratio >= 1 else f"down {1 - ratio:.0%}"


def plural(n: int, word: str, words: str | None = None) -> str:
    """``n`` and the noun in its number: "1 value", "2 values", "3 runs" (``words``: an
    irregular plural, "1 entry" / "2 entries")."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def agree(n: int, one: str, many: str) -> str:
    """The word that agrees with a count of ``n``: ``agree(n, "was", "were")``."""
    return one if n == 1 else many


def without_asides(text: str, keep_words: int = 3) -> str:
    """``text`` without its explaining asides, for a one-line summary: "roll back to step 6
    (the last logged step before ...), with lr 3e-4 -> 1e-6 (60x the ...)" -> "roll back to
    step 6, with lr 3e-4 -> 1e-6". A short aside (``keep_words`` words or fewer) is kept: it
    is a setting or a name ("clip gradients (max_grad_norm 1.0)", "(DAPO)"). Unbalanced
    brackets are left as they are."""
    out: list[str] = []
    aside: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        if depth:
            aside.append(ch)
        else:
            out.append(ch)
        if ch == ")" and depth:
            depth -= 1
            if not depth:
                if len("".join(aside).split()) <= keep_words:
                    out.extend(aside)
                aside = []
    if depth:  # an aside never closed: not ours to cut
        return " ".join(text.split())
    short = " ".join("".join(out).split())
    for mark in (",", ";", ":", "."):
        short = short.replace(f" {mark}", mark)
    return short.strip(" ,;:")


def headline(text: str, limit: int = 120) -> str:
    """``text`` up to its first semicolon outside brackets, cut back to its last comma
    outside brackets when longer than ``limit`` characters: a finding's headline beside
    another sentence ("KL rose from 0.09 to 9.3 (band 5-10, dangerous) from step 374, reward
    up only within its noise (...); then ..." -> "KL rose from 0.09 to 9.3 (band 5-10,
    dangerous) from step 374")."""
    depth, commas = 0, []
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")" and depth > 0)
        if depth == 0 and ch == ";":
            text = text[:i]
            break
        if depth == 0 and ch == ",":
            commas.append(i)
    if len(text) <= limit:
        return text
    cut = [i for i in commas if i <= limit]
    return text[:cut[-1]] if cut else text


def without_mode_name(summary: str, mode: str) -> str:
    """``summary`` without a leading clause that only repeats the mode's name ("advantage
    collapse: 98% of groups ..." under the heading advantage_collapse)."""
    head, sep, rest = summary.partition(": ")
    if sep and re.sub(r"[^a-z]", "", head.lower()) == re.sub(r"[^a-z]", "", mode.lower()):
        return rest
    return summary
