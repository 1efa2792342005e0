"""The hand-written statistics of ``grpo_doctor.trends`` against references: scipy.stats for the
normal tail, Kendall's S and tau, the Mann-Kendall p and the Theil-Sen slope, and the
Hamed-Rao correction written out here as Hamed and Rao (1998) give it (the form pymannkendall
implements). The package keeps its own code (scipy is not a dependency: importing it would
cost every command) and these tests keep it honest."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from grpo_doctor.trends import mann_kendall, theil_sen
from grpo_doctor.trends.binning import MAX_POINTS
from grpo_doctor.trends.monotonic import _normal_sf, _s_and_var, variance_inflation
from tests.helpers import ar1


@pytest.mark.parametrize("z", [0.0, 0.3, 1.0, 1.959964, 2.575829, 4.0, 8.0, 20.0, 38.0])
def test_normal_tail(z):
    assert _normal_sf(z) == pytest.approx(stats.norm.sf(z), rel=1e-12, abs=1e-300)
    assert _normal_sf(-z) == pytest.approx(stats.norm.sf(-z), rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_kendall_s_tau_and_p_are_scipys(seed):
    """Without ties S, tau and the asymptotic p (no continuity correction, as scipy) are
    scipy's; with ties in the values, S and the tie-corrected Var(S) give scipy's p."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 200))
    x = np.arange(n, dtype=float)
    y = 0.01 * x * rng.choice([-1, 0, 1]) + rng.normal(0, 1, n)
    ref = stats.kendalltau(x, y, method="asymptotic")
    s, var = _s_and_var(y)
    assert mann_kendall(x, y, lag=0).tau == pytest.approx(ref.statistic, rel=1e-12, abs=1e-15)
    assert 2 * _normal_sf(abs(s) / math.sqrt(var)) == pytest.approx(ref.pvalue, rel=1e-9)

    tied = np.round(y * 2) / 2  # a handful of distinct values: many ties
    ref = stats.kendalltau(x, tied, method="asymptotic")
    s, var = _s_and_var(tied)
    assert 2 * _normal_sf(abs(s) / math.sqrt(var)) == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_mann_kendall_p_is_the_continuity_corrected_normal_test(seed):
    """With the autocorrelation correction off (``lag=0``) the p is the classic
    Mann-Kendall's: z = (S - sign S) / sd(S), two-sided; S from scipy's tau."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(10, MAX_POINTS + 1))
    x = np.arange(n, dtype=float)
    y = 0.003 * x * rng.choice([-1, 1]) + rng.normal(0, 0.3, n)
    s = stats.kendalltau(x, y).statistic * n * (n - 1) / 2  # tau-b is tau-a without ties
    z = (s - np.sign(s)) / math.sqrt(n * (n - 1) * (2 * n + 5) / 18)
    test = mann_kendall(x, y, lag=0)
    assert test.s == pytest.approx(s, abs=1e-6) and test.variance_inflation == 1.0
    assert test.p == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_theil_sen_slope_is_scipys(seed):
    """On irregular steps, repeated steps included (their pairs have no slope)."""
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(3, 120))
    x = np.sort(rng.choice(np.arange(3 * n), n))
    y = rng.normal(0, 1, n) + rng.normal(0, 0.1) * x
    slope, _ = theil_sen(x, y)
    assert slope == pytest.approx(stats.theilslopes(y, x).slope, rel=1e-12, abs=1e-15)


def _hamed_rao(y: np.ndarray, lags: int) -> float:
    """n/n* as Hamed and Rao (1998) define it, written out: detrend by Sen's slope, rank the
    residuals, take their autocorrelation at lags 1..``lags`` (pymannkendall's ``__acf``),
    keep the lags outside the 95% band, and sum (n-i)(n-i-1)(n-i-2) rho_i."""
    n = len(y)
    slope = stats.theilslopes(y, np.arange(n)).slope
    ranks = stats.rankdata(y - slope * np.arange(n))
    d = ranks - ranks.mean()
    acov = np.correlate(d, d, "full")[n - 1:] / n
    rho = acov / acov[0]
    bound = stats.norm.ppf(0.975) / math.sqrt(n)
    total = sum((n - i) * (n - i - 1) * (n - i - 2) * rho[i]
                for i in range(1, lags + 1) if abs(rho[i]) > bound)
    return 1 + 2 / (n * (n - 1) * (n - 2)) * total


@pytest.mark.parametrize("seed", range(8))
def test_hamed_rao_on_autocorrelated_noise_is_the_papers(seed):
    """AR(1) noise, as training curves are between their trends (rho 0.3-0.9), with and
    without a trend: the inflation, and the p it gives, are the paper's (lags 1-3)."""
    n = 40 + 30 * seed  # at most MAX_POINTS: a longer series is binned before the test
    x = np.arange(n, dtype=float)
    y = ar1(seed, n, 0.5, rho=0.3 + 0.08 * seed) + (seed % 2) * 0.004 * x
    expected = _hamed_rao(y, lags=3)
    test = mann_kendall(x, y)
    # Within 0.1%: Sen's line passes through two points, whose residuals then tie; the package
    # ranks a tie by position, the reference by the average rank.
    assert test.variance_inflation == pytest.approx(expected, rel=1e-3)
    s = stats.kendalltau(x, y).statistic * n * (n - 1) / 2
    var = n * (n - 1) * (2 * n + 5) / 18 * expected
    z = (s - np.sign(s)) / math.sqrt(var)
    assert test.p == pytest.approx(min(1.0, 2 * stats.norm.sf(abs(z))), rel=1e-3, abs=1e-12)


def test_hamed_rao_where_the_code_departs_from_the_paper():
    """Where the significant autocorrelations sum below zero (residuals that alternate), the
    paper's n/n* is below 1: Var(S) shrinks and a trend is called more readily. The package
    never shrinks it: it inflates by the sum's size instead (abs). Pinned here so that
    changing it is a decision, not an accident."""
    n = 200
    rng = np.random.default_rng(7)
    y = np.where(np.arange(n) % 2, 1.0, -1.0) + rng.normal(0, 0.3, n)
    paper = _hamed_rao(y, lags=3)
    assert paper < 1
    assert variance_inflation(y - theil_sen(np.arange(n), y)[0] * np.arange(n)) == (
        pytest.approx(2 - paper, rel=1e-3))
