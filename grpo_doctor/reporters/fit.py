"""Fitting names into a terminal's room: shortened, told apart, never wrapped mid-word.

Run names and paths that come from logs are long (``gpt_oss_(20B)_Reinforcement_Learning_2048_
Game_BF16__2025-10-17_c2f44ed1_46a6a6``) and often alike. A name too long for its room is cut
with ``…``, at its end (its start kept) or at its start (its end kept: a file name, a seed);
names that would then look alike are told apart by the stretch where they differ.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Sequence

ELLIPSIS = "…"
#: Where separators split a name into words (a middle cut starts at a word).
_SEPARATORS = "_-./ :"


def cut(text: str, width: int) -> str:
    """``text`` in ``width`` characters: its start, then ``…``."""
    return text if len(text) <= width else text[: max(1, width - 1)] + ELLIPSIS


def _tail(text: str, width: int) -> str:
    return text if len(text) <= width else ELLIPSIS + text[-max(1, width - 1):]


def shorten_left(text: str, width: int) -> str:
    """``text`` if it fits in ``width`` terminal cells (a CJK character takes two), else an
    ellipsis and as much of its end as fits (a path keeps its file name)."""
    from rich.cells import cell_len

    if cell_len(text) <= width:
        return text
    out, used = [], 1
    for char in reversed(text):
        used += cell_len(char)
        if used > width:
            break
        out.append(char)
    return ELLIPSIS + "".join(reversed(out)) if width >= 1 else ""


def shorten_right(text: str, width: int) -> str:
    """``text`` if it fits in ``width`` terminal cells, else as much of its start as fits and
    an ellipsis (a run name keeps the words it starts with)."""
    return shorten_left(text[::-1], width)[::-1]


def _told_apart(names: Sequence[str], labels: Sequence[str]) -> bool:
    """Different names get different labels."""
    return len(set(zip(names, labels))) == len(set(labels))


def _differs_at(name: str, names: Sequence[str]) -> int:
    """The first position where ``name`` differs from the most alike other name."""
    return max((len(os.path.commonprefix([name, other]))  # noqa: RUF071 (names, not paths)
                for other in names if other != name), default=0)


def _around(name: str, at: int, room: int) -> str:
    """``name`` in ``room`` characters: its head, ``…``, then from the word holding ``at``."""
    start = at
    while start > 0 and name[start - 1] not in _SEPARATORS:
        start -= 1
    if start > 0 and at - start < 2:  # the difference starts a word: keep the word before
        start -= 1
        while start > 0 and name[start - 1] not in _SEPARATORS:
            start -= 1
    head = max(1, room // 3)
    body = room - head - 1
    if at - start > body - 2:  # a long word: keep the difference itself in view
        start = at - body // 2
    start = min(start, len(name) - body)  # what is left fills the room
    if start <= head:
        return cut(name, room)
    rest = name[start:]
    return name[:head] + ELLIPSIS + (rest if len(rest) <= body else rest[:body - 1] + ELLIPSIS)


def run_labels(names: Sequence[str], room: int, *, keep_end: bool = False) -> list[str]:
    """Each name in at most ``room`` characters, told apart where the full names differ.

    Names that fit stay whole. Longer ones are cut at the end (``keep_end``: at the start,
    keeping the end that tells runs apart, ``…rho0.50_seed43``); names that this makes look
    alike (``gpt_oss_(20B)_Reinforcement_Learn…`` twice) keep their head, then ``…``, then the
    words from where they differ from the names they would be taken for
    (``gpt_oss_(20B…Game_BF16__2025-10-1…``); failing that, the other end. Names told apart
    by the first cut keep it."""
    room = max(2, room)

    def middle(name: str) -> str:
        return name if len(name) <= room else _around(name, _differs_at(name, names), room)

    ways: list[Callable[[str], str]] = [lambda n: _tail(n, room), middle,
                                        lambda n: cut(n, room)] if keep_end else [
        lambda n: cut(n, room), middle, lambda n: _tail(n, room)]
    labels = [ways[0](name) for name in names]
    for way in ways[1:]:
        alike: dict[str, set[str]] = defaultdict(set)
        for name, label in zip(names, labels):
            alike[label].add(name)
        for i, name in enumerate(names):
            if len(alike[labels[i]]) > 1 and len(name) > room:
                labels[i] = way(name)
    if _told_apart(names, labels):
        return labels
    first = [ways[0](name) for name in names]
    for way in ways[1:]:  # as a whole, each way in turn
        every = [way(name) for name in names]
        if _told_apart(names, every):
            return every
    return first
