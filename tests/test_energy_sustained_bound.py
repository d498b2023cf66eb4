"""The sustained regime's bound with the power limit (capture/energy_prediction.sustained_bound)
and its check against the sustained p50 (capture/compare_energy.energy_row), asserted as
behaviour: which bound binds, the cache-resident exception, and the no-tolerance verdict."""

from types import SimpleNamespace

import pytest

from tensorforge_measure.compare.energy import BOUND_ABOVE, energy_row
from tensorforge_measure.run.energy_prediction import sustained_bound

CALLS = {"fp16": 196e-6, "bf16": 186e-6}  # the sustained probe's call at its best size (H200, 2026-12-01)


def _op(mode, flops=1e12):
    return SimpleNamespace(math_mode=mode, flops=flops)


def _w(latency_s, *modes):
    return SimpleNamespace(latency_s=latency_s, operators=tuple(_op(m) for m in modes or ("bf16",)))


def test_long_calls_take_the_sustained_probe_bound_or_the_power_limited_one():
    burst, sustained = _w(1.0e-3), _w(1.2e-3)
    assert sustained_bound(burst, sustained, 1.1e-3, CALLS) == (1.2e-3, "sustained-probe calibrated")
    assert sustained_bound(burst, sustained, 1.3e-3, CALLS) == (1.3e-3, "power-limited")
    assert sustained_bound(burst, None, 1.1e-3, CALLS) == (1.1e-3, "power-limited")
    assert sustained_bound(burst, None, None, CALLS) == (None, None)


def test_calls_shorter_than_the_probes_are_not_bounded_by_its_rate():
    """The H200's conv_fp16_3x3_64x512x14 (83 us a call, the fp16 probe's 196 us): its sustained
    p50 came in under the sustained-probe bound; after each call's L2 flush a short call runs at
    a lower duty cycle and a higher clock under the cap, so the burst bound is what holds."""
    burst, sustained = _w(7.49e-5, "fp16"), _w(8.46e-5, "fp16")
    assert sustained_bound(burst, sustained, 5.74e-5, CALLS) == (7.49e-5, "burst calibrated")
    assert sustained_bound(burst, sustained, 8.0e-5, CALLS) == (8.0e-5, "power-limited")
    # the longest probe call among the work's modes decides (conservative for mixed work)
    mixed_burst, mixed = _w(1.5e-4, "bf16", "fp16"), _w(1.9e-4, "bf16", "fp16")
    assert sustained_bound(mixed_burst, mixed, None, CALLS) == (1.5e-4, "burst calibrated")
    # the calibration does not say how long the probe's calls were: the sustained-probe bound stands
    assert sustained_bound(burst, sustained, 5.74e-5, {}) == (8.46e-5, "sustained-probe calibrated")
    # a mode with no FLOPs does not count
    zero_burst = SimpleNamespace(latency_s=7.49e-5, operators=(_op("fp16", 0.0), _op("tf32")))
    assert sustained_bound(zero_burst, sustained, None, CALLS) == (8.46e-5, "sustained-probe calibrated")


def test_probe_call_comes_from_the_calibrations_sustained_matmul_probe():
    from tensorforge_measure.run.energy_prediction import probe_call_s

    probe = SimpleNamespace(
        details={"bf16": {"best_n": 4096, "points": [[4096, 740e12], [8192, 693e12]]}, "note": "x"},
        compute={"bf16": 740e12},
    )
    cal = SimpleNamespace(probes={"matmul-ceiling-sustained": probe})
    assert probe_call_s(cal) == {"bf16": pytest.approx(2 * 4096**3 / 740e12)}
    assert probe_call_s(SimpleNamespace(probes={})) == {}
    assert probe_call_s(None) == {}


def _measured(p50):
    timing = SimpleNamespace(regime="sustained", stats=SimpleNamespace(p50=p50))
    return SimpleNamespace(energy=None, modes=(timing,))


@pytest.mark.parametrize("p50,verdict", [(8.29e-5, BOUND_ABOVE), (8.47e-5, "within bound"), (8.46e-5, "within bound")])
def test_a_bound_above_the_sustained_p50_is_said_with_no_tolerance(p50, verdict):
    pred = SimpleNamespace(floor_j=None, estimate_j=None, sustained_bound_s=8.46e-5)
    row = energy_row(pred, _measured(p50))
    assert row.sustained_verdict == verdict
    assert row.sustained_over_bound == pytest.approx(p50 / 8.46e-5)


def test_no_sustained_timing_no_verdict():
    pred = SimpleNamespace(floor_j=None, estimate_j=None, sustained_bound_s=8.46e-5)
    row = energy_row(pred, SimpleNamespace(energy=None, modes=()))
    assert row.sustained_verdict is None and row.sustained_over_bound is None
