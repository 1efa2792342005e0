"""The first-alert contract: for every finding, the log truncated at first_alert_step raises
it, and truncated at the logged step before does not."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor.engine import diagnose
from tests.helpers import ar1, make_run


def _prefix_fires(run, mode, step):
    return diagnose(run.truncated(step), with_first_alert=False).check(mode).fired


@st.composite
def collapsing_runs(draw):
    n = draw(st.integers(40, 400))
    every = draw(st.sampled_from([1, 1, 5, 10]))
    onset = draw(st.integers(5, n - 10))
    depth = draw(st.floats(1.0, 6.0))
    seed = draw(st.integers(0, 10_000))
    noise = draw(st.floats(0.0, 0.05))
    steps = np.arange(1, n + 1) * every
    t = np.arange(n)
    ent = np.exp(-depth * np.clip((t - onset) / max(5, n // 5), 0, None)) + np.abs(
        ar1(seed, n, noise))
    kl = 0.01 + draw(st.floats(0, 15)) * np.clip((t - onset) / n, 0, None) + np.abs(
        ar1(seed + 1, n, 0.01))
    reward = 0.5 + ar1(seed + 2, n, 0.02)
    g = 0.4 + 0.05 * np.abs(ar1(seed + 3, n, 0.5))
    if draw(st.booleans()):
        g[onset:] *= draw(st.floats(1, 20))
    return make_run(steps=steps, train__entropy=ent, train__kl=kl, train__reward=reward,
                    train__grad_norm=g)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collapsing_runs())
def test_first_alert_is_the_first_prefix_that_raises(run):
    diagnosis = diagnose(run)
    steps = list(run.steps)
    for check in diagnosis.findings:
        s = check.first_alert_step
        assert s is not None and s in steps
        assert _prefix_fires(run, check.mode, s)
        i = steps.index(s)
        if i > 0:
            assert not _prefix_fires(run, check.mode, steps[i - 1])
        # The onset is at or before the first alert, unless what raised it first was an
        # earlier episode that went back (an incident from the first alert).
        assert check.onset_step is not None and (
            check.onset_step <= s or any(i.step == s for i in check.incidents))
