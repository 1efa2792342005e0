"""Episodes in a series' history: stretches beyond a threshold, and fast falls.

A run that came back from an incident still had it: these find the incidents wherever they
are in the log (positions in the input, not steps), so a rule can report them even when the
end of the log looks fine.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpo_doctor.lazy import numpy as np
from grpo_doctor.trends.binning import rolling_median


@dataclass(frozen=True)
class Episode:
    start: int  # first point of the episode
    end: int  # last point of it (inclusive)
    peak: int  # the most extreme point
    recovered: int | None  # first point back on the safe side; None: it lasted to the end

    @property
    def length(self) -> int:
        return self.end - self.start + 1


def stretches_above(values: np.ndarray, threshold: float) -> list[Episode]:
    """Maximal runs of consecutive points above ``threshold``, in order."""
    v = np.asarray(values, dtype=np.float64)
    above = v > threshold
    if not above.any():
        return []
    edges = np.diff(np.concatenate(([0], above.astype(np.int8), [0])))
    starts = np.nonzero(edges == 1)[0]
    ends = np.nonzero(edges == -1)[0] - 1
    out = []
    for s, e in zip(starts, ends):
        peak = int(s + np.argmax(v[s:e + 1]))
        out.append(Episode(int(s), int(e), peak, int(e + 1) if e + 1 < len(v) else None))
    return out


def falls(values: np.ndarray, amount: float, within: int, hold: int = 3) -> list[Episode]:
    """Falls of at least ``amount`` within ``within`` points, on a centred rolling median of
    ``hold`` points (so one low point is not a fall: it must hold). ``start`` is the last
    point at the level before the fall, ``peak`` the bottom, ``recovered`` the first point
    whose rolling median is back above half-way (None: it never came back).
    """
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    if n < hold + 1 or not np.isfinite(amount) or amount <= 0:
        return []
    m = rolling_median(v, hold)
    out: list[Episode] = []
    i = 0
    while i < n - 1:
        ahead = m[i + 1:min(n, i + 1 + within)]
        hit = np.nonzero(m[i] - ahead >= amount)[0]
        if not len(hit):
            i += 1
            continue
        j = i + 1 + int(hit[0])
        half = m[i] - amount / 2
        # The bottom: the lowest smoothed point until the series climbs back half-way.
        back = np.nonzero(m[j:] >= half)[0]
        recovered = j + int(back[0]) if len(back) else None
        stop = recovered if recovered is not None else n
        bottom = j + int(np.argmin(m[j:stop]))
        # The fall begins where the smoothed series last stood at its level.
        start = i + int(np.argmax(m[i:j + 1] < m[i] - 1e-12 * max(1.0, abs(m[i])))) - 1
        out.append(Episode(max(i, start), bottom, bottom, recovered))
        if recovered is None:
            break
        i = recovered
    return out
