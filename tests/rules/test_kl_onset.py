"""kl_drift: where a drift began, whatever the shape of its rise."""

import numpy as np
import pytest

from grpo_doctor.engine import diagnose
from tests.helpers import make_run


@pytest.mark.parametrize("shape", ["ramp", "factors"])
def test_a_kl_drift_is_dated_where_it_left_its_starting_level(shape):
    """The bundled example's KL sits at 0.09 until about step 310, then ramps to 9; the hinge
    fit dated it 374, where the ramp turned steep. A rise by factors (0.0005 -> 1.5) is dated
    late by a hinge in the same way."""
    rng = np.random.default_rng(3)
    n = 400
    s = np.arange(n)
    rise = np.clip((s - 200) / 150, 0, 1)
    kl = (0.09 + 8 * rise ** 2 if shape == "ramp" else 0.0005 * np.exp(8 * rise))
    kl = np.abs(kl * (1 + 0.1 * rng.normal(0, 1, n)))
    run = make_run(kl=kl, reward=0.5 + 0.01 * rng.normal(0, 1, n),
                   entropy=0.5 + rng.normal(0, 0.01, n))
    check = diagnose(run).check("kl_drift")
    assert check.fired, check.summary
    assert 195 <= check.onset_step <= 250, check.summary


def test_a_kl_near_0_at_step_1_that_jumped_within_a_few_steps_moved_there():
    """KL 0.001 at step 1, 0.8 from step 10 on and flat: the policy moved there in its first
    updates (a length reward gamed at once), not "already 0.00136 at step 1 ... differed from
    the start (a reference of other weights)" (helper-31). A KL high at its first logs is."""
    rng = np.random.default_rng(7)
    n = 200
    s = np.arange(n)
    kl = (np.minimum(0.001 * np.exp(s * 0.7), 0.8) - 0.05 * s / n) * (
        1 + 0.05 * rng.normal(0, 1, n))
    check = diagnose(make_run(kl=np.abs(kl), reward=0.5 + 0.01 * rng.normal(0, 1, n))
                     ).check("kl_drift")
    assert not check.evidence.get("offset_from_start"), check.summary
    assert "already" not in check.summary and check.onset_step > 1, check.summary
    offset = np.abs(0.6 * (1 + 0.05 * rng.normal(0, 1, n)))
    check = diagnose(make_run(kl=offset, reward=0.5 + 0.01 * rng.normal(0, 1, n))
                     ).check("kl_drift")
    assert check.evidence.get("offset_from_start"), check.summary
