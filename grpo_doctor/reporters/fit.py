"""Fitting names into a terminal column: shortened from the left, never wrapped mid-word.

Run names and paths are told apart by their end (``..._rho0.50_seed43``, the file name), so
a name too long for its room keeps its end behind an ellipsis. Widths are terminal cells
(a CJK character takes two), measured as rich measures them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

ELLIPSIS = "…"


def _cells(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _tail(text: str, room: int) -> str:
    """The longest end of ``text`` that fits in ``room`` cells."""
    out, used = [], 0
    for char in reversed(text):
        used += _cells(char)
        if used > room:
            break
        out.append(char)
    return "".join(reversed(out))


def shorten_left(text: str, width: int) -> str:
    """``text`` if it fits in ``width`` cells, else an ellipsis and as much of its end as fits."""
    if _cells(text) <= width:
        return text
    if width < 1:
        return ""
    return ELLIPSIS + _tail(text, width - 1)


def _head(text: str, room: int) -> str:
    """The longest start of ``text`` that fits in ``room`` cells."""
    out, used = [], 0
    for char in text:
        used += _cells(char)
        if used > room:
            break
        out.append(char)
    return "".join(out)


def _common_prefix(texts: Sequence[str]) -> int:
    first = texts[0]
    n = 0
    while n < len(first) and all(len(t) > n and t[n] == first[n] for t in texts):
        n += 1
    return n


def _ways(text: str, width: int, same_start: int) -> list[str]:
    """Shortenings of ``text`` to ``width`` cells, in the order they are tried: its end, its
    start, then the stretch where it parts from names sharing its first ``same_start``
    characters."""
    if _cells(text) <= width:
        return [text] * 3
    start = max(0, same_start - (width - 2) // 2)
    middle = _head(text[start:], width - 2 if start else width - 1)
    return [ELLIPSIS + _tail(text, width - 1), _head(text, width - 1) + ELLIPSIS,
            (ELLIPSIS if start else "") + middle + ELLIPSIS]


def shorten_apart(texts: Sequence[str], width: int) -> list[str]:
    """Each text shortened to ``width`` cells, keeping texts that differ apart: from the left
    (``…rho0.50_seed43``); names that share their end then keep their start
    (``20251022_1202…`` and ``20251022_1814…`` for two ``..._run_terminal``), and names that
    share both show the stretch where they part."""
    short = [shorten_left(t, width) for t in texts]
    if width < 3:
        return short
    groups: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(short):
        groups[s].append(i)
    for members in groups.values():
        distinct = sorted({texts[i] for i in members})
        if len(distinct) < 2:
            continue
        same_start = _common_prefix(distinct)
        ways = {t: _ways(t, width, same_start) for t in distinct}
        way = next((k for k in (1, 2) if len({w[k] for w in ways.values()}) == len(ways)), 2)
        for i in members:
            short[i] = ways[texts[i]][way]
    return short
