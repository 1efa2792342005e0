"""What a rule's chart draws, as data the rule carries: the metrics plotted under its key
metric and its threshold lines, computed from its parameters and a check's evidence. The
HTML/PNG reporter reads these and knows no rule by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grpo_doctor.metrics import Metric

#: The derived series of a rule's ``ZeroShare``: the share of recent steps with a zero std.
ZERO_SHARE = "zero_std_share"


@dataclass(frozen=True)
class Threshold:
    """A rule's threshold on a metric: a line, and optionally the band it opens (lo, hi)."""

    value: float
    label: str
    level: str  # info | warning | danger | critical
    band: tuple[float, float] | None = None


#: A rule's threshold lines per metric, from its parameters (the user's overrides applied)
#: and its check's evidence (empty when the rule did not run).
Lines = Callable[[Mapping[str, float], Mapping[str, Any]], Mapping[str, tuple[Threshold, ...]]]


@dataclass(frozen=True)
class ZeroShare:
    """Draw, above the key metric ``of`` (a reward std), the share of the trailing window of
    logged steps at which it was zero: what the rule reads. ``eps`` and ``window`` name the
    rule's parameters for "zero" and for the window's share of the log."""

    of: tuple[str, ...]
    eps: str
    window: str


@dataclass(frozen=True)
class Plot:
    """What a finding's chart shows besides its key metric.

    ``metrics``: drawn under the key metric (those logged). ``metrics_in``: an evidence key
    whose mapping names more metrics, drawn right after the key metric. ``spikes``: an evidence
    key listing steps marked as spikes on the key metric's panel. ``zero_share``: see
    ``ZeroShare``.
    """

    metrics: tuple[str, ...] = (Metric.REWARD_MEAN.value,)
    metrics_in: str = ""
    spikes: str = ""
    zero_share: ZeroShare | None = None


def ladder(lines: Sequence[tuple[float, str, str]], upward: bool) -> tuple[Threshold, ...]:
    """Thresholds whose bands run from each line to the next (upward) or down to the next."""
    out = []
    for i, (value, label, level) in enumerate(lines):
        nxt = lines[i + 1][0] if i + 1 < len(lines) else (math.inf if upward else -math.inf)
        out.append(Threshold(value, label, level, (value, nxt) if upward else (nxt, value)))
    return tuple(out)


def number(evidence: Mapping[str, Any], key: str) -> float | None:
    """A finite number of the evidence, or None."""
    value = evidence.get(key)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None
