"""A finding's evidence as a person reads it: three significant digits, units, lists as text.

Rules put whatever they measured into ``Check.evidence`` (numbers, numpy scalars and arrays,
lists, nested dicts). The JSON report keeps it at full precision; the terminal, Markdown and
HTML reports show it through :func:`items` and :func:`value`. Units come from the vocabulary
of evidence keys (``*_step``, ``*share*``, ``entropy_*``, ``*length*`` ...), so no reporter
needs to know a rule by name. Every function here accepts any value and never raises: a report
must not fail on evidence it did not expect.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from grpo_doctor.findings import Check
from grpo_doctor.text import fmt

#: Keys a report shows elsewhere (the threshold beside the summary) or never (internals).
SHOWN_APART = frozenset({"threshold"})
#: Keys whose value is a share of something: shown as a percentage.
_SHARE = re.compile(r"share|fraction|frac\b|ratio_late|(^|_)rise$|drop|decline|lost")
#: Keys whose value is a level of a metric measured in nats (entropy, KL, log-prob).
_NATS = re.compile(r"^(entropy|kl|log_prob)_(start|now|baseline|peak\w*|max\w*|floor)$|^floor$")
_TOKENS = re.compile(r"length")
#: Keys whose value is a multiple of a baseline.
_TIMES = re.compile(r"inflation|ratio_to_start|spike_ratios")
#: Long dict values: the keys that name what an entry is (a "shape", a "form", a "signal").
_NAMING_KEYS = ("shape", "form", "signal", "summary")


def as_plain(v: Any) -> Any:
    """numpy scalars and arrays as the Python values they hold (anything else unchanged)."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def blank(v: Any) -> bool:
    """Nothing worth a line: None, or an empty string, list, dict or array."""
    v = as_plain(v)
    return v is None or (isinstance(v, (str, list, tuple, dict, set, frozenset)) and not v)


def number(x: float | int, *, percent: bool = False, unit: str = "") -> str:
    """A number with three significant digits (thousands separated), NaN and inf spelled."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    try:
        f = float(x)
    except (TypeError, ValueError, OverflowError):
        return str(x)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if percent:
        pct = f * 100
        return f"{pct:,.0f}%" if abs(pct) >= 10 or pct == 0 else f"{pct:.2g}%"
    text = fmt(int(f) if isinstance(x, (int, np.integer)) else f)
    text = re.sub(r"e([+-])0*(\d)", r"e\1\2", text).replace("e+", "e")
    return f"{text}{unit}"


def _unit_of(key: str) -> tuple[bool, str]:
    """(shown as a percentage, unit suffix) for an evidence key."""
    k = key.lower()
    if _SHARE.search(k):
        return True, ""
    if _TIMES.search(k):
        return False, "x"
    if _NATS.search(k):
        return False, " nats"
    if _TOKENS.search(k):
        return False, " tokens"
    return False, ""


def value(key: str, v: Any, *, depth: int = 0) -> str:
    """One evidence value as text: numbers with their unit, lists joined, dicts as
    ``name value`` pairs; a long nested structure is cut short rather than dumped."""
    v = as_plain(v)
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        percent, unit = _unit_of(key)
        return number(v, percent=percent, unit=unit)
    if depth > 2:
        return "…"
    if isinstance(v, Mapping):
        name = next((v[k] for k in _NAMING_KEYS if isinstance(v.get(k), str)), None)
        rest = [(str(k), x) for k, x in v.items()
                if not blank(x) and not (name is not None and x is name)]
        pairs = [f"{label(k)} {value(k, x, depth=depth + 1)}" for k, x in rest[:6]]
        more = f", +{len(rest) - 6} more" if len(rest) > 6 else ""
        inner = ", ".join(pairs) + more
        if name is not None:
            return f"{name} ({inner})" if inner else name
        return inner
    if isinstance(v, (list, tuple, set, frozenset)):
        seq = list(v)
        if not seq:
            return "none"
        sep = "; " if any(isinstance(as_plain(x), (Mapping, list, tuple)) for x in seq) else ", "
        shown = [value(key, x, depth=depth + 1) for x in seq[:8]]
        more = f"{sep}+{len(seq) - 8} more" if len(seq) > 8 else ""
        return sep.join(shown) + more
    return str(v)


def label(key: str) -> str:
    """An evidence key as words: ``late_share`` -> ``late share``."""
    return str(key).replace("_", " ")


def items(evidence: Mapping[str, Any] | None, *, span: int | None = None
          ) -> list[tuple[str, str]]:
    """The evidence as (label, text) pairs, in the rule's order, blanks and the threshold left
    out (reports show the threshold beside the summary). A window of steps longer than the
    run's ``span`` (its last step minus its first) says it covered the whole run."""
    if not isinstance(evidence, Mapping):
        return []
    out = []
    for k, v in evidence.items():
        if str(k) in SHOWN_APART or blank(v):
            continue
        text = value(str(k), v)
        if span is not None and str(k).endswith("window_steps") and \
                isinstance(as_plain(v), (int, float)) and as_plain(v) > span:
            # The window that applied is the run; the setting is said beside it.
            text = f"the whole run, {span:,} (set to {text})"
        out.append((label(k), text))
    return out


def threshold(check: Check) -> str | None:
    """The threshold that fired, when the summary does not already say it."""
    t = check.evidence.get("threshold") if isinstance(check.evidence, Mapping) else None
    if blank(t):
        return None
    text = value("threshold", t)
    return None if text in check.summary else text
