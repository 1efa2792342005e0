"""Robust spike detection: distance from a trailing median in units of trailing MAD."""

from __future__ import annotations

from dataclasses import dataclass

from grpo_doctor.lazy import numpy as np


@dataclass(frozen=True)
class Spikes:
    index: np.ndarray  # positions of the spikes in the input
    ratio: np.ndarray  # value / trailing median at each spike
    z: np.ndarray  # robust z at each spike
    baseline: np.ndarray  # trailing median at every position (NaN where too early)


def robust_spikes(
    values: np.ndarray,
    *,
    window: int = 20,
    min_history: int = 5,
    z_threshold: float = 6.0,
    ratio_threshold: float = 5.0,
    log: bool = True,
) -> Spikes:
    """Points far above their trailing window: robust z (median/MAD, on log scale for
    heavy-tailed positives such as grad norm) above ``z_threshold`` *and* at least
    ``ratio_threshold`` times the trailing median. Only past values are used, so a point is a
    spike the moment it is logged (what a live monitor would see)."""
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    base = np.full(n, np.nan)
    z = np.zeros(n)
    ratio = np.zeros(n)
    if n <= min_history:
        return Spikes(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), base)
    t = np.log(np.maximum(v, 1e-12)) if log else v
    # Trailing windows: for position i the history is t[max(0, i-window):i]. Positions before
    # a full window use a shorter history; compute those few directly, the rest vectorised.
    full_from = max(min_history, window)
    for i in range(min_history, min(full_from, n)):
        z[i], base[i] = _score(t, v, 0, i, log)
    if n > full_from:
        tw = np.lib.stride_tricks.sliding_window_view(t[:-1], window)[full_from - window :]
        vw = np.lib.stride_tricks.sliding_window_view(v[:-1], window)[full_from - window :]
        med = np.median(tw, axis=1)
        mad = np.median(np.abs(tw - med[:, None]), axis=1) * 1.4826
        floor = 0.05 if log else 0.05 * np.abs(med) + 1e-12
        mad = np.maximum(mad, floor)
        z[full_from:] = (t[full_from:] - med) / mad
        base[full_from:] = np.median(vw, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(base > 0, v / base, np.inf)
    ratio[:min_history] = 0.0
    hit = (z > z_threshold) & (ratio >= ratio_threshold)
    idx = np.nonzero(hit)[0]
    return Spikes(idx, ratio[idx], z[idx], base)


def _score(t: np.ndarray, v: np.ndarray, lo: int, i: int, log: bool) -> tuple[float, float]:
    hist = t[lo:i]
    med = float(np.median(hist))
    mad = float(np.median(np.abs(hist - med))) * 1.4826
    mad = max(mad, 0.05 if log else 1e-12 + 0.05 * abs(med))
    return (t[i] - med) / mad, float(np.median(v[lo:i]))
