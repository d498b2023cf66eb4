"""benchmarks/bench_graph_isolated.py's paired verdict: a ratio of medians near 1 is not agreement
when the rounds disagree (the host-bound eager decode step on the H200, 16:56 UTC)."""

import pytest
from script_module import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/bench_graph_isolated.py")


def test_medians_agree_by_chance_but_rounds_disagree(bench):
    ours, ref = [1945.3e-6, 1223.5e-6], [1411.5e-6, 1766.0e-6]  # H200 16:56, eager decode
    assert bench.ratio(ours, ref) == pytest.approx(0.997, abs=1e-3)
    v = bench.paired_verdict(ours, ref)
    assert v["verdict"].startswith("undecided")
    assert v["pair_ratios"] == [pytest.approx(1.378, abs=1e-3), pytest.approx(0.693, abs=1e-3)]
    assert v["ours_spread"] == pytest.approx(0.590, abs=1e-3)


def test_within_and_outside(bench):
    assert bench.paired_verdict([1.00, 1.01], [1.0, 1.0])["verdict"] == "within"
    assert bench.paired_verdict([0.908, 0.909], [1.0, 1.0])["verdict"] == "outside"
    assert bench.paired_verdict([1.0], [1.0])["verdict"].startswith("undecided")
