"""The two statistics the regression gate combines: Mann-Whitney U (checked against a brute-force
count of pairs) and the bootstrap interval of the ratio of medians."""

import itertools
import math

import numpy as np
import pytest

from tensorforge_measure.policy.statistics import bootstrap_ratio_ci, mann_whitney


def brute_force_u(x, y) -> float:
    """U of x: pairs with x_i > y_j, ties counting one half."""
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(x, y))


def normal_two_sided_p(u, n1, n2, values) -> float:
    """The textbook normal approximation with tie and continuity corrections, written out
    independently of the module under test."""
    n = n1 + n2
    _, counts = np.unique(values, return_counts=True)
    tie_term = sum(t**3 - t for t in counts) / (n * (n - 1))
    sigma = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term))
    z = max(abs(u - n1 * n2 / 2.0) - 0.5, 0.0) / sigma
    return min(1.0, math.erfc(z / math.sqrt(2.0)))


@pytest.mark.parametrize("seed", range(12))
def test_u_is_the_count_of_pairs_for_random_inputs(seed):
    rng = np.random.default_rng(seed)
    n1, n2 = rng.integers(1, 40, size=2)
    # rounded, so some seeds produce ties within and across the samples
    x = np.round(rng.normal(1.0, 0.2, n1), int(rng.integers(1, 4)))
    y = np.round(rng.normal(1.05, 0.2, n2), int(rng.integers(1, 4)))
    u, p = mann_whitney(x, y)
    assert u == pytest.approx(brute_force_u(x, y), abs=1e-9)
    assert 0.0 <= p <= 1.0
    if n1 + n2 > 2 and len(set(np.concatenate([x, y]))) > 1:
        assert p == pytest.approx(normal_two_sided_p(u, n1, n2, np.concatenate([x, y])), rel=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_p_is_symmetric_and_u_complementary_under_swapping(seed):
    rng = np.random.default_rng(100 + seed)
    x = rng.lognormal(0.0, 0.1, int(rng.integers(10, 60)))
    y = rng.lognormal(0.03, 0.1, int(rng.integers(10, 60)))
    u_xy, p_xy = mann_whitney(x, y)
    u_yx, p_yx = mann_whitney(y, x)
    assert p_xy == pytest.approx(p_yx, rel=1e-12)
    assert u_xy + u_yx == pytest.approx(len(x) * len(y))


def test_identical_samples_give_p_one():
    x = np.random.default_rng(7).normal(1e-3, 1e-5, 50)
    u, p = mann_whitney(x, x.copy())
    assert u == pytest.approx(len(x) ** 2 / 2.0)
    assert p == pytest.approx(1.0)


def test_fully_separated_samples_of_twenty_each():
    rng = np.random.default_rng(3)
    low = rng.uniform(1.0, 2.0, 20)
    high = rng.uniform(3.0, 4.0, 20)
    u, p = mann_whitney(high, low)
    assert u == 400.0
    assert p < 1e-6
    u_rev, p_rev = mann_whitney(low, high)
    assert u_rev == 0.0 and p_rev == p
    # and the value is the normal approximation's (no ties): z = (200 - 0.5) / sqrt(400 * 41 / 12)
    assert p == pytest.approx(math.erfc((200 - 0.5) / math.sqrt(400 * 41 / 12) / math.sqrt(2)), rel=1e-9)


def test_ties_get_average_ranks():
    x = [1.0, 2.0, 2.0, 3.0]
    y = [2.0, 2.0, 4.0]
    u, p = mann_whitney(x, y)
    # pairs: 1 beats none; each 2 ties two 2s (0.5 each) -> 1 each; 3 beats the two 2s
    assert u == brute_force_u(x, y) == 0 + 1 + 1 + 2
    assert 0.0 < p <= 1.0


def test_all_values_tied_is_p_one_not_a_division_by_zero():
    u, p = mann_whitney([5e-6] * 12, [5e-6] * 15)
    assert u == pytest.approx(12 * 15 / 2)
    assert p == 1.0


def test_a_timer_quantised_shift_is_detected_despite_ties():
    """Real GPU samples are quantised (CUDA event ticks): many ties, yet a shift must show."""
    tick = 32e-9
    rng = np.random.default_rng(11)
    base = np.round(rng.normal(20e-6, 0.2e-6, 200) / tick) * tick
    cand = np.round(rng.normal(20.6e-6, 0.2e-6, 200) / tick) * tick
    assert len(np.unique(base)) < 100  # heavy ties
    u, p = mann_whitney(base, cand)
    assert u == pytest.approx(brute_force_u(base, cand))
    assert p < 1e-10


def _ci(a, b, seed=1234, resamples=2000, confidence=0.99):
    return bootstrap_ratio_ci(a, b, resamples=resamples, confidence=confidence, seed=seed)


def test_bootstrap_is_deterministic_for_a_seed():
    rng = np.random.default_rng(5)
    a, b = rng.normal(1.0, 0.02, 40), rng.normal(1.03, 0.02, 40)
    assert _ci(a, b, seed=42) == _ci(a, b, seed=42)
    assert _ci(a, b, seed=42) != _ci(a, b, seed=43)


@pytest.mark.parametrize("seed", range(6))
def test_bootstrap_interval_contains_the_point_ratio(seed):
    rng = np.random.default_rng(200 + seed)
    a = rng.normal(1.0, 0.03, 35)
    b = rng.normal(1.0 + 0.02 * seed, 0.03, 45)
    low, high = _ci(a, b, seed=seed)
    point = np.median(b) / np.median(a)
    assert low <= point <= high
    assert low < high


def test_bootstrap_narrows_with_less_noise():
    rng = np.random.default_rng(9)
    noise_a, noise_b = rng.standard_normal(60), rng.standard_normal(60)
    widths = []
    for sigma in (0.10, 0.03, 0.01):
        low, high = _ci(1.0 + sigma * noise_a, 1.1 + sigma * noise_b, seed=77)
        point = np.median(1.1 + sigma * noise_b) / np.median(1.0 + sigma * noise_a)
        assert low <= point <= high
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2] > 0


def test_bootstrap_wider_at_higher_confidence_and_exact_for_constant_samples():
    rng = np.random.default_rng(21)
    a, b = rng.normal(1.0, 0.05, 30), rng.normal(1.0, 0.05, 30)
    lo95, hi95 = _ci(a, b, confidence=0.95)
    lo99, hi99 = _ci(a, b, confidence=0.99)
    assert lo99 <= lo95 and hi99 >= hi95
    assert _ci([2.0] * 10, [3.0] * 12) == (pytest.approx(1.5), pytest.approx(1.5))
