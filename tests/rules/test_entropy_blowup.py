"""entropy_blowup: where a blow-up began, whatever the shape of its climb."""

import numpy as np
import pytest

from grpo_doctor.engine import diagnose
from tests.helpers import make_run


@pytest.mark.parametrize("shape", ["ramp", "exponential"])
def test_a_blow_up_is_dated_where_its_climb_began_whatever_its_shape(shape):
    """A fit in nats dates a climb by factors late (where it turned visibly steep: rho1.00's
    0.058, 0.12, 0.21, 0.95 read 140, not 130); a fit in log space dates a linear ramp late
    (0.5 -> 1.5 from step 150 read 179). The earlier of the two is the start."""
    rng = np.random.default_rng(1)
    n = 300
    s = np.arange(n)
    rise = np.clip((s - 150) / 100, 0, 1)
    h = (0.5 + rise if shape == "ramp" else 0.3 * np.exp(4 * np.clip((s - 150) / 80, 0, 1)))
    h = h + rng.normal(0, 0.008, n)
    r = 0.6 - 0.4 * rise + rng.normal(0, 0.02, n)
    check = diagnose(make_run(entropy=h, reward=r)).check("entropy_blowup")
    assert check.status.value == "critical"
    assert 145 <= check.onset_step <= 158, check.summary
