"""summarize() against values computed by hand (numpy's default linear percentiles)."""

import math
import random

import attrs
import pytest

from tensorforge_measure.measure.stats import SampleStats, summarize


def test_one_to_five():
    # Linear percentile: position q*(n-1) = 4q into the sorted samples.
    s = summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert s.n == 5
    assert s.p10 == pytest.approx(1.4)  # position 0.4
    assert s.p50 == pytest.approx(3.0)
    assert s.p90 == pytest.approx(4.6)  # position 3.6
    assert s.mean == pytest.approx(3.0)
    # Squared deviations 4+1+0+1+4 = 10, ddof=1 -> 10/4.
    assert s.stdev == pytest.approx(math.sqrt(2.5))
    assert s.cv == pytest.approx(math.sqrt(2.5) / 3.0)
    assert s.rel_iqr == pytest.approx((4.0 - 2.0) / 3.0)  # p25 = 2, p75 = 4
    assert (s.min, s.max) == (1.0, 5.0)


def test_skewed_four_samples_order_independent():
    samples = [10.0, 1.0, 3.0, 2.0]
    random.Random(0).shuffle(samples)
    s = summarize(samples)
    # sorted 1, 2, 3, 10; position q*3.
    assert s.p10 == pytest.approx(1.3)  # 0.3
    assert s.p50 == pytest.approx(2.5)  # 1.5
    assert s.p90 == pytest.approx(7.9)  # 2.7 -> 3 + 0.7*7
    assert s.mean == pytest.approx(4.0)
    # deviations -3, -2, -1, 6 -> 50 / 3
    assert s.stdev == pytest.approx(math.sqrt(50.0 / 3.0))
    assert s.cv == pytest.approx(math.sqrt(50.0 / 3.0) / 4.0)
    # p25 at 0.75 -> 1.75; p75 at 2.25 -> 3 + 0.25*7 = 4.75
    assert s.rel_iqr == pytest.approx((4.75 - 1.75) / 2.5)
    assert (s.min, s.max) == (1.0, 10.0)


def test_single_sample_has_no_spread():
    s = summarize([2e-3])
    assert s == SampleStats(
        n=1, p10=2e-3, p50=2e-3, p90=2e-3, mean=2e-3, stdev=0.0, cv=0.0, rel_iqr=0.0, min=2e-3, max=2e-3
    )


def test_zero_median():
    assert summarize([0.0, 0.0, 0.0]).rel_iqr == 0.0
    assert summarize([0.0, 0.0, 0.0]).cv == 0.0
    assert summarize([0.0, 0.0, 0.0, 1.0]).rel_iqr == math.inf  # p75 = 0.25 > p50 = 0


def test_accepts_generators_and_returns_plain_python_numbers():
    s = summarize(x * 1e-3 for x in range(1, 11))
    assert s.n == 10
    for field in attrs.fields(SampleStats):
        assert type(getattr(s, field.name)) is (int if field.name == "n" else float), field.name


@pytest.mark.parametrize(
    "bad, why",
    [
        ([], "no samples to summarize"),
        ([1.0, float("nan")], "NaN or infinity"),
        ([float("inf")], "NaN or infinity"),
        ([1.0, -1e-9], "negative durations"),
    ],
)
def test_rejects_bad_samples(bad, why):
    with pytest.raises(ValueError, match=why):
        summarize(bad)


def test_rejects_two_dimensional():
    with pytest.raises(ValueError, match="one-dimensional"):
        summarize([[1.0, 2.0], [3.0, 4.0]])
