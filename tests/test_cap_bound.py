"""The sustained bound at the power cap (tensorforge.bound.cap_bound) and how a run predicts it from the
calibration's sustained matmul probe (capture/energy_prediction.cap_calibration_of), asserted as
behaviour: a probe-sized call gets the probe's own time whatever the power figures, the lowest
size's energy per FLOP (less the margin) binds, a short call gets its flush's credit, and what the
bound needs but lacks turns it off instead of guessing."""

from types import SimpleNamespace

import attrs
import pytest

from tensorforge.bound.cap_bound import CAP_MARGIN, cap_bound_s, cap_calibration, cap_joules_per_flop
from tensorforge.energy.model import flops_by_mode
from tensorforge_measure.run.energy_prediction import CAP_LABEL, cap_calibration_of, cap_record, sustained_bound

# an H200 calibration's bf16 sustained probe (2026-12-01) (n, FLOP/s at the fastest call)
BF16 = [(4096, 720.27e12), (8192, 686.52e12), (16384, 681.05e12)]
FLUSH_S, FLUSH_J = 59.2e-6, 27.1e-3


def _flops(n):
    return 2.0 * n**3


@pytest.mark.parametrize("power_w,static_w", [(700.0, 125.9), (736.5, 82.2), (650.0, 150.0)])
def test_a_probe_sized_call_gets_the_probes_own_time_whatever_the_power_figures(power_w, static_w):
    cap = cap_calibration({"bf16": BF16}, power_w, static_w, FLUSH_S, FLUSH_J, margin=0.0)
    for n, rate in BF16:
        e = dict(cap.per_size["bf16"])[n]
        one = attrs.evolve(cap, joules_per_flop={"bf16": e})
        assert cap_bound_s({"bf16": _flops(n)}, one) == pytest.approx(_flops(n) / rate, rel=1e-9)


def test_the_lowest_size_binds_less_the_margin_and_no_probe_size_is_beaten():
    cap = cap_calibration({"bf16": BF16}, 700.0, 125.9, FLUSH_S, FLUSH_J)
    sizes = dict(cap.per_size["bf16"])
    assert cap.joules_per_flop["bf16"] == pytest.approx(min(sizes.values()) * (1 - CAP_MARGIN))
    for n, rate in BF16:  # a bound: no probe call comes in under it
        assert cap_bound_s({"bf16": _flops(n)}, cap) < _flops(n) / rate


def test_a_short_call_gets_its_flushs_credit_a_long_one_none():
    cap = cap_calibration({"bf16": BF16}, 700.0, 125.9, FLUSH_S, FLUSH_J)
    e, headroom = cap.joules_per_flop["bf16"], cap.headroom_w
    long_f, short_f = _flops(16384), 1e10
    # per FLOP, the long call's bound is the power-limited rate itself (the flush is a rounding
    # error against a 13 ms call); the short call's is faster: the flush's time draws less than the cap
    assert cap_bound_s({"bf16": long_f}, cap) / long_f == pytest.approx(e / headroom, rel=1e-3)
    assert cap_bound_s({"bf16": short_f}, cap) / short_f < 0.9 * e / headroom
    # never negative: a call whose energy fits in the flush's credit is bounded by 0 here (the burst
    # bound binds it in sustained_bound)
    assert cap_bound_s({"bf16": 1e3}, cap) == 0.0


def test_energy_per_flop_at_the_cap_per_size():
    ((n, e),) = cap_joules_per_flop([(8192, 686.52e12)], 700.0, 125.9, FLUSH_S, FLUSH_J)
    assert n == 8192
    assert e == pytest.approx(((700.0 - 125.9) * (_flops(8192) / 686.52e12 + FLUSH_S) - FLUSH_J) / _flops(8192))
    assert cap_joules_per_flop([(8192, 0.0)], 700.0, 125.9, FLUSH_S, FLUSH_J) == []


def test_no_power_figure_or_no_headroom_no_cap_bound():
    assert cap_calibration({"bf16": BF16}, None, 125.9, FLUSH_S, FLUSH_J) is None
    assert cap_calibration({"bf16": BF16}, 120.0, 125.9, FLUSH_S, FLUSH_J) is None
    assert cap_calibration({"bf16": []}, 700.0, 125.9, FLUSH_S, FLUSH_J) is None


def test_every_operators_flops_in_a_calibrated_mode_count_memory_bound_ones_too():
    """An H200 calibration (2026-12-01) called the tf32 4096^3 GEMM memory-bound (its tile's traffic):
    its math still costs energy at the cap, so it is bounded there too."""
    ops = (
        SimpleNamespace(bottleneck="compute", math_mode="bf16", flops=1e12),
        SimpleNamespace(bottleneck="memory", math_mode="bf16", flops=5e11),
        SimpleNamespace(bottleneck="compute", math_mode="fp32", flops=1e11),
    )
    w = SimpleNamespace(operators=ops)
    assert flops_by_mode(w) == {"bf16": 1.5e12, "fp32": 1e11}
    cap = cap_calibration({"bf16": BF16}, 700.0, 125.9, FLUSH_S, FLUSH_J)
    assert cap_bound_s(flops_by_mode(w), cap) == pytest.approx(cap_bound_s({"bf16": 1.5e12}, cap))
    assert cap_bound_s({"fp32": 1e11}, cap) is None  # nothing calibrated to bound it with


def _burst(latency_s):
    return SimpleNamespace(latency_s=latency_s, operators=(SimpleNamespace(math_mode="bf16", flops=1e12),))


def test_with_the_cap_bound_the_sustained_bound_is_the_largest_of_burst_cap_and_power_limited():
    burst = _burst(1.0e-3)
    assert sustained_bound(burst, _burst(1.3e-3), None, {}, 1.2e-3) == (1.2e-3, CAP_LABEL)
    assert sustained_bound(burst, _burst(1.3e-3), 1.25e-3, {}, 1.2e-3) == (1.25e-3, "power-limited")
    # a short call: the cap bound below the burst bound, so the burst bound holds
    assert sustained_bound(burst, _burst(1.3e-3), None, {}, 0.8e-3) == (1.0e-3, "burst calibrated")
    # the sustained-probe calibrated bound is not a candidate any more (the cap bound refines it)
    assert sustained_bound(burst, _burst(9.9), None, {}, 1.2e-3)[1] == CAP_LABEL


def _calibration(details, copy=4.25e12, as_json=False):
    probe = {"details": details} if as_json else SimpleNamespace(details=details)
    regimes = {"sustained": {"dram_bytes_per_s": copy} if as_json else SimpleNamespace(dram_bytes_per_s=copy)}
    if as_json:
        return {"probes": {"matmul-ceiling-sustained": probe}, "ceilings_by_regime": regimes}
    return SimpleNamespace(probes={"matmul-ceiling-sustained": probe}, ceilings_by_regime=regimes, ceilings=None)


COEFFICIENTS = SimpleNamespace(
    power_limit_w=700.0, peak_power_w=736.5, static_w=125.9, static_w_low=82.2, joules_per_dram_byte_low=1.078e-10
)


@pytest.mark.parametrize("as_json", [False, True])
def test_a_run_reads_the_probes_points_and_flush_from_the_calibration(as_json):
    recorded = {"bf16": {"best_n": 4096, "points": [list(p) for p in BF16], "flush_bytes": 251658240}}
    cap = cap_calibration_of(_calibration(recorded, as_json=as_json), COEFFICIENTS)
    assert cap.power_w == 700.0 and cap.static_w == 125.9
    assert cap.flush_s == pytest.approx(251658240 / 4.25e12)
    assert cap.flush_j == pytest.approx(251658240 * 1.078e-10)
    # calibrations from before the field: the flush size from the probe's method line
    older = {"bf16": {"points": [list(p) for p in BF16], "method": "... an int32 L2 flush of 251658240 B, as ..."}}
    assert cap_calibration_of(_calibration(older, as_json=as_json), COEFFICIENTS).flush_s == cap.flush_s
    record = cap_record(cap)
    assert set(record.per_size["bf16"]) == {"4096", "8192", "16384"} and record.margin == CAP_MARGIN


def test_without_points_flush_size_or_bandwidth_there_is_no_cap_bound():
    no_flush = {"bf16": {"points": [list(p) for p in BF16], "method": "no flush named"}}
    assert cap_calibration_of(_calibration(no_flush), COEFFICIENTS) is None
    two = {
        "bf16": {"points": [list(p) for p in BF16], "flush_bytes": 1},
        "fp16": {"points": [list(p) for p in BF16], "flush_bytes": 2},
    }
    assert cap_calibration_of(_calibration(two), COEFFICIENTS) is None  # which flush? none guessed
    assert cap_calibration_of(_calibration({"bf16": {"points": []}}), COEFFICIENTS) is None
    assert cap_calibration_of(SimpleNamespace(probes={}), COEFFICIENTS) is None
    with_flush = {"bf16": {"points": [list(p) for p in BF16], "flush_bytes": 251658240}}
    assert cap_calibration_of(_calibration(with_flush, copy=None), COEFFICIENTS) is None
