"""Trend statistics: pure numpy functions over (steps, values), no I/O.

All accept irregular step spacing; callers drop gaps first (``finite``). Long series are
binned (``bin_series``) before the O(n^2) statistics so cost stays near linear in the log.
"""

from grpo_doctor.trends.binning import bin_series, finite, rolling_median
from grpo_doctor.trends.changepoint import hinge_onset, level_shift_onset, trend_onset
from grpo_doctor.trends.monotonic import TrendTest, mann_kendall, theil_sen
from grpo_doctor.trends.noise import shift_stands_out, step_noise
from grpo_doctor.trends.spikes import robust_spikes
from grpo_doctor.trends.windows import (
    decisive_short_fall,
    largest_relative_drop,
    largest_relative_rise,
)

__all__ = [
    "TrendTest",
    "bin_series",
    "decisive_short_fall",
    "finite",
    "hinge_onset",
    "largest_relative_drop",
    "largest_relative_rise",
    "level_shift_onset",
    "mann_kendall",
    "robust_spikes",
    "rolling_median",
    "shift_stands_out",
    "step_noise",
    "theil_sen",
    "trend_onset",
]
