"""The sustained regime's bound with the power limit (capture/energy_prediction.sustained_bound)
and its check against the sustained p50 (capture/compare_energy.energy_row), asserted as
behaviour: which bound binds, the cache-resident exception, and the no-tolerance verdict."""

from types import SimpleNamespace

import pytest

from tensorforge_ops.capture.compare_energy import BOUND_ABOVE, energy_row
from tensorforge_ops.capture.energy_prediction import sustained_bound

L2 = 50e6


def _w(latency_s, compulsory_bytes):
    return SimpleNamespace(latency_s=latency_s, compulsory_bytes=compulsory_bytes)


def test_streaming_work_takes_the_sustained_probe_bound_or_the_power_limited_one():
    burst, sustained = _w(1.0e-3, 400e6), _w(1.2e-3, 400e6)
    assert sustained_bound(burst, sustained, 1.1e-3, L2) == (1.2e-3, "sustained-probe calibrated")
    assert sustained_bound(burst, sustained, 1.3e-3, L2) == (1.3e-3, "power-limited")
    assert sustained_bound(burst, None, 1.1e-3, L2) == (1.1e-3, "power-limited")
    assert sustained_bound(burst, None, None, L2) == (None, None)


def test_cache_resident_work_is_not_bounded_by_the_sustained_probes_rate():
    """The H200's conv_fp16_3x3_64x512x14 (30 MB): its sustained p50 came in under the
    sustained-probe bound (GEMMs streaming >= 100 MB at the cap); at the same cap it spends less
    energy per FLOP and clocks higher, so the burst bound (full clock) is what holds."""
    burst, sustained = _w(7.49e-5, 30.4e6), _w(8.46e-5, 30.4e6)
    assert sustained_bound(burst, sustained, 5.74e-5, L2) == (7.49e-5, "burst calibrated")
    assert sustained_bound(burst, sustained, 8.0e-5, L2) == (8.0e-5, "power-limited")
    # no cache size known: the rule cannot tell, the sustained-probe bound stands
    assert sustained_bound(burst, sustained, 5.74e-5, None) == (8.46e-5, "sustained-probe calibrated")


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
