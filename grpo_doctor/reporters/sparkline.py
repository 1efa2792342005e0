"""Unicode sparklines of a metric, with a step marked (the onset)."""

from __future__ import annotations

import numpy as np

from grpo_doctor.store import Run
from grpo_doctor.trends import bin_series, finite

BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(run: Run, metric: str | None, width: int = 24,
              mark_step: int | None = None) -> tuple[str, int | None]:
    """The sparkline of ``metric`` over the run and the character position of ``mark_step``."""
    if not metric or metric not in run.frame.columns:
        return "", None
    steps, values = finite(run.frame.index.to_numpy(), run.frame[metric].to_numpy())
    if len(values) == 0:
        return "", None
    s, v = bin_series(steps, values, width)
    lo, hi = float(v.min()), float(v.max())
    if hi - lo <= 1e-12 * max(1.0, abs(hi)):
        idx = np.full(len(v), 3)
    else:
        idx = np.clip(((v - lo) / (hi - lo) * (len(BLOCKS) - 1)).round().astype(int), 0, 7)
    text = "".join(BLOCKS[i] for i in idx)
    pos = None
    if mark_step is not None and len(s):
        pos = int(np.argmin(np.abs(s - mark_step)))
    return text, pos
