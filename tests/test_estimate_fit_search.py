"""The estimate fit's searches survive a loss that overflows where they explore (tensorforge/estimate/fit.py)."""

import math

import numpy as np
import pytest

from tensorforge.estimate import fit


def test_nelder_mead_treats_an_overflowing_step_as_infinitely_bad():
    """On a loaded CI machine a Nelder-Mead expansion in log space stepped past exp's range and the
    host-CPU fit failed with OverflowError (the run then fell back to shipped coefficients)."""

    def loss(x):
        return (math.exp(x[0]) - 2.0) ** 2 + (x[1] - 1.0) ** 2  # overflows for x[0] > ~709

    best = fit._nelder_mead(loss, np.array([0.0, 0.0]), np.array([800.0, 0.5]), iterations=300)
    assert math.exp(best[0]) == pytest.approx(2.0, rel=1e-3)
    assert best[1] == pytest.approx(1.0, abs=1e-3)
