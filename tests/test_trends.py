import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_doctor.trends import (
    bin_series,
    hinge_onset,
    largest_relative_drop,
    level_shift_onset,
    mann_kendall,
    robust_spikes,
    theil_sen,
)
from tests.helpers import ar1


def test_theil_sen_recovers_a_line_on_irregular_steps():
    x = np.array([0, 1, 5, 6, 20, 21, 50], dtype=float)
    slope, intercept = theil_sen(x, 2 * x + 3)
    assert abs(slope - 2) < 1e-12 and abs(intercept - 3) < 1e-9


def test_mann_kendall_finds_a_noisy_trend():
    x = np.arange(1000)
    t = mann_kendall(x, -0.001 * x + ar1(0, 1000, 0.1))
    assert t.decreasing(0.01) and t.slope < 0


def test_hamed_rao_keeps_false_alarms_near_alpha_on_autocorrelated_noise():
    # AR(1) noise with rho 0.8 and no trend: uncorrected MK calls far more than 5% of these.
    hits = sum(mann_kendall(np.arange(300), ar1(seed, 300, 1.0, rho=0.8)).p < 0.05
               for seed in range(60))
    assert hits <= 9  # ~5% expected; allow sampling slack


def test_binning_caps_points_and_keeps_spikes_out():
    x = np.arange(100_000)
    y = np.ones(100_000)
    y[5000] = 1e6
    bx, by = bin_series(x, y, 400)
    assert len(bx) <= 401 and by.max() == 1.0


def test_hinge_onset_locates_the_bend_on_long_noisy_series():
    x = np.arange(5000)
    y = np.where(x < 3000, 2.0, 2.0 - (x - 3000) / 1000) + ar1(1, 5000, 0.05)
    knot, before, after = hinge_onset(x, y)
    assert abs(knot - 3000) <= 150
    assert abs(before) < abs(after) and after < 0


def test_level_shift_onset():
    x = np.arange(200)
    y = np.where(x < 120, 0.2, 0.9) + ar1(2, 200, 0.03)
    step, lo, hi = level_shift_onset(x, y)
    assert abs(step - 120) <= 3 and lo < 0.3 and hi > 0.8


def test_largest_relative_drop_respects_the_window():
    x = np.arange(3000)
    y = 0.5 ** (x / 1000)  # loses 50% per 1000 steps
    assert abs(largest_relative_drop(x, y, 1000).fraction - 0.5) < 0.1
    assert largest_relative_drop(x, y, 100).fraction < 0.2


def test_robust_spikes_uses_only_the_past():
    g = np.abs(1 + ar1(3, 300, 0.05))
    g[200] = 20.0
    s = robust_spikes(g)
    assert list(s.index) == [200] and s.ratio[0] > 15


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=300))
def test_statistics_are_finite_and_deterministic(values):
    y = np.array(values)
    x = np.arange(len(y), dtype=float)
    a, b = mann_kendall(x, y), mann_kendall(x, y)
    assert a == b
    assert all(np.isfinite([a.s, a.z, a.p, a.tau, a.slope, a.variance_inflation]))
    assert 0.0 <= a.p <= 1.0
    knot, s1, s2 = hinge_onset(x, y)
    assert np.isfinite([knot, s1, s2]).all() and x[0] <= knot <= x[-1]
    step, m1, m2 = level_shift_onset(x, y)
    assert np.isfinite([step, m1, m2]).all()
