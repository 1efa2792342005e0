"""The onset of an entropy collapse: where the entropy fell, not where its log bottoms out."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_doctor.engine import diagnose
from tests.helpers import ar1, make_run


@settings(max_examples=25, deadline=None)
@given(st.integers(20, 60), st.integers(0, 10_000))
def test_a_collapse_that_goes_on_far_below_the_floor_is_dated_where_it_fell(fall_at, seed):
    # Entropy 0.7 nats falls within 10 steps at ``fall_at`` to a few thousandths, below the
    # 0.02-nat floor, wanders there by orders of magnitude, and ends at 1e-14 (a
    # near-deterministic policy going on to a deterministic one, as the corpus' lr warm-up
    # runs do). In log space most of the fall is the last one: a fit on the raw log dated the
    # collapse after step 100.
    n = 200
    steps = np.arange(1, n + 1)
    frac = np.clip((steps - fall_at) / 10, 0, 1)
    h = 0.7 * (0.003 / 0.7) ** frac
    h = h * np.exp(np.where(frac > 0, 1.2, 0.05) * ar1(seed, n, 0.8))
    h = np.where(steps > 170, 1e-14, h)
    run = make_run(entropy=h, train__reward=0.5 + 0.02 * ar1(seed + 1, n, 1.0))
    check = diagnose(run).check("entropy_collapse")
    assert check.status.value == "critical"
    assert fall_at - 10 <= check.onset_step <= fall_at + 12, check.summary
    assert f"beginning at step {check.onset_step}" in check.summary


def test_completions_cut_only_after_the_entropy_was_spent_are_no_sign_of_its_collapse():
    """Trial 82b: a length bonus ramping with the step ran completions to the cap from step
    228, after the entropy had done its falling by step 180: the truncation had made the
    sharpening critical and the root ("beta 0; the task is solved") over the length hack."""
    from grpo_doctor.rules.entropy_collapse import _cut_once_spent

    steps = np.arange(1, 321)
    entropy = np.maximum(0.3 * np.exp(-steps / 40), 0.05)
    late = np.where(steps >= 228, 1.0, 0.0)
    early = np.where(steps >= 60, 1.0, 0.0)
    for cut, once_spent in ((late, True), (early, False)):
        run = make_run(entropy=entropy, response_clip_ratio=cut)
        h0, hc = float(entropy[:60].mean()), float(entropy[-60:].mean())
        assert _cut_once_spent(run, steps, entropy, h0, hc) is once_spent
