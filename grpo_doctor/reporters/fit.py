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



#: Where a head or a tail may end between words (a dot is inside ``Qwen2.5`` or ``rho0.50``).
_WORD_BREAKS = "_-/ :#"


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _at_word(name: str, cut: int) -> bool:
    """A cut at ``cut`` falls between words (next to a separator, or at an end)."""
    return cut in (0, len(name)) or name[cut - 1] in _WORD_BREAKS or name[cut] in _WORD_BREAKS


def _both_ends(name: str, room: int, others: Sequence[str]) -> str:
    """``name[:h] + "…" + name[-t:]`` told apart from ``others``, or "" when none is."""
    alike = [(len(os.path.commonprefix([name, o])), _common_suffix(name, o))  # noqa: RUF071
             for o in others]
    same_start = max((p for p, _ in alike), default=0)
    same_end = max((s for _, s in alike), default=0)
    best: tuple[tuple[bool, int, int, int, int], str] | None = None
    for head in range(room):
        # the tail must tell the name apart from those its head does not
        least = max((s + 1 for p, s in alike if head <= p), default=0)
        for tail in range(least, room - head):
            if not (head or tail):
                continue
            aligned = _at_word(name, head) + _at_word(name, len(name) - tail)
            start = name[:head].rstrip(_WORD_BREAKS)
            end = name[len(name) - tail:].lstrip(_WORD_BREAKS)
            telling = max(0, len(start) - same_start) + max(0, len(end) - same_end)
            key = (head >= room // 4, aligned, telling, len(start) + len(end), len(start))
            if best is None or key > best[0]:
                best = (key, start + ELLIPSIS + end)
    return "" if best is None else best[1]


def both_ends(names: Sequence[str], room: int) -> list[str]:
    """Each name in at most ``room`` characters, its start and end kept and its middle cut
    (``ppo_formal_1p5b…20260720T020928Z``), told apart from the other names.

    A name that fits is kept whole. A longer one becomes ``head…tail``: ``head`` a start and
    ``tail`` an end of the name (either may be empty, not both), separators next to ``…``
    dropped. For every other name, the head is longer than their common start or the tail
    longer than their common end, so no two labels are equal. Among such cuts it takes, in
    order: cuts between words (next to ``_ - / : #`` or a space), the most characters beyond
    what the name shares with the most alike other (its start and its end), the most
    characters kept, the longer head (a run's name usually says first what it is). When no
    cut tells the names apart (a tiny room) it falls back to :func:`run_labels`."""
    room = max(2, room)
    labels = [name if len(name) <= room else
              _both_ends(name, room, [o for o in names if o != name]) for name in names]
    if all(labels) and _told_apart(names, labels):
        return labels
    return run_labels(names, room, keep_end=True)


def _dotted_cut(key: str, room: int, others: Sequence[str]) -> str:
    """``start…end`` of a dotted ``key`` in ``room`` characters, its end from a dot on (the
    last component whole), told apart from ``others``; "" when no such cut fits."""
    alike = [(len(os.path.commonprefix([key, o])), _common_suffix(key, o))  # noqa: RUF071
             for o in others]
    best: tuple[tuple[bool, bool, int, int], str] | None = None
    for dot in (i for i, char in enumerate(key) if char == "."):
        tail = key[dot + 1:]
        for head in range(room - len(tail)):
            start = key[:head].rstrip("._-")
            if not all(len(start) > p or len(tail) > s for p, s in alike):
                continue
            between_words = not head or key[head] in "._-" or key[head - 1] in "._-"
            score = (bool(start), between_words, tail.count(".") + 1, len(start))
            if best is None or score > best[0]:
                best = (score, start + ELLIPSIS + tail)
    return "" if best is None else best[1]


def key_labels(keys: Sequence[str], room: int) -> list[str]:
    """Each dotted config key in at most ``room`` characters, told apart from the others.

    A key that fits is kept whole. A longer one keeps its start and, from a dot on, its end:
    as many of its last components as fit, the last one whole (the knob a user looks for:
    ``actor…rollout.response_length``); where the last component alone leaves no room, its
    start and end as :func:`both_ends` cuts them."""
    room = max(2, room)
    labels = []
    for key in keys:
        others = [o for o in keys if o != key]
        labels.append(key if len(key) <= room else
                      _dotted_cut(key, room, others) or _both_ends(key, room, others))
    if all(labels) and _told_apart(keys, labels):
        return labels
    return both_ends(keys, room)


def pack(cells: Sequence[str], room: int, sep: str = "  ") -> list[str]:
    """``cells`` joined by ``sep`` into lines of at most ``room`` characters, each cell whole
    on one line (a cell longer than ``room`` gets a line of its own)."""
    lines: list[str] = []
    for cell in cells:
        if lines and len(lines[-1]) + len(sep) + len(cell) <= room:
            lines[-1] += sep + cell
        else:
            lines.append(cell)
    return lines


def fit_words(text: str, room: int) -> str:
    """``text`` with every word longer than ``room`` shortened from the left (a path keeps
    its file name), so that wrapping it at spaces never breaks a word."""
    return " ".join(shorten_left(word, room) for word in text.split(" "))
