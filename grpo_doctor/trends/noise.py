"""A series' step-to-step noise, robustly: what a change must stand out of to be one."""

from __future__ import annotations

from grpo_doctor.lazy import numpy as np


def step_noise(values: np.ndarray) -> float:
    """The typical change between neighbouring points of ``values`` as a standard deviation
    of one point: 1.4826 x the median absolute difference (robust to outliers), over sqrt(2)
    (a difference carries the noise of two points). A slow trend barely moves it. 0 for
    fewer than two points."""
    if len(values) < 2:
        return 0.0
    return 1.4826 * float(np.median(np.abs(np.diff(values)))) / float(np.sqrt(2))


def shift_stands_out(change: float, noise: float, points: int) -> bool:
    """Whether a change between two medians of ``points`` points each stands out of a
    series whose ``step_noise`` is ``noise``: twice the noise of their difference, the
    median's spread taken as 1.25x the mean's."""
    return abs(change) >= 2 * 1.25 * noise * float(np.sqrt(2 / points))
