"""The queued estimate (tensorforge.energy.queued_estimate, energy5e): the energy window runs the
workload back to back with calls queued, so one execution takes the slower of the device's kernel
time and the host's launches; a working set larger than L2 streams all its bytes; compute-bound
operators draw at least the busy power below the cap; work that would exceed the power limit runs
at the capped windows' power for the sustained estimate's time. Every figure here is chosen by
the test (coefficients) or predicted by the Core (workloads), none measured."""

import attrs
import pytest

from tensorforge.api import predict
from tensorforge.energy import EnergyCoefficients, queued_time, streamed_fraction, workload_energy
from tensorforge.plugins import PluginHost
from tensorforge.suite import resolve

L2 = 60 * 2**20
COEFF = EnergyCoefficients(
    static_w=120.0,
    static_w_low=100.0,
    idle_w=100.0,
    joules_per_flop={"bf16": 8e-13, "fp32": 2e-12},
    joules_per_flop_low={"bf16": 6e-13, "fp32": 1.5e-12},
    joules_per_dram_byte=1.1e-10,
    joules_per_dram_byte_low=9e-11,
    power_limit_w=700.0,
    capped_power_w=710.0,
    busy_w=600.0,
    busy_below_cap_w=450.0,
    host_s_per_kernel=20e-6,
)


@pytest.fixture(scope="module")
def predicted():
    host = PluginHost()
    names = ("gemm_large_square", "gemm_tiny", "transformer_decode", "gemm_skinny_decode", "conv_resnet50_3x3")
    workloads = resolve(host, names)
    target = host.target("h200")
    return predict(workloads, target, host.mappings(), estimate=True)


def _energy(w, c=COEFF, sustained_s=None):
    return workload_energy(w, c, L2, w.estimate.eager_s, w.estimate.device_s, sustained_s)


def test_queued_time_is_the_slower_of_device_and_host_launches():
    assert queued_time(1e-3, 10, 20e-6) == 1e-3  # device-bound: the host's 0.2 ms overlaps
    assert queued_time(1e-5, 97, 20e-6) == pytest.approx(97 * 20e-6)  # host-bound eager decode
    assert queued_time(1e-6, 0, 20e-6) == 20e-6  # a call launches at least once


def test_streamed_fraction_is_all_or_nothing_around_the_cache():
    assert streamed_fraction(L2 / 2, L2) == 0.0  # stays in L2 back to back
    assert streamed_fraction(2.2 * L2, L2) == 1.0  # swept in order: evicted before its reuse
    assert streamed_fraction(1.0, None) == 1.0  # no cache known: everything streams


def test_host_bound_workload_takes_the_host_launch_time(predicted):
    w = predicted.workload("gemm_tiny")
    e = _energy(w)
    t = e.estimate_terms
    assert t.time_s == pytest.approx(max(w.estimate.device_s, w.estimate.kernels * 20e-6))
    assert t.static_j == pytest.approx(120.0 * t.time_s)
    assert not e.power_limited
    slower_host = _energy(w, attrs.evolve(COEFF, host_s_per_kernel=40e-6))
    assert slower_host.estimate_j > e.estimate_j  # more static energy over a longer loop


def test_dram_bound_decode_streams_all_its_weights_and_draws_no_busy_floor(predicted):
    w = predicted.workload("gemm_skinny_decode")
    assert w.compulsory_bytes > L2
    t = _energy(w).estimate_terms
    assert t.dram_bytes == pytest.approx(sum(op.compulsory_bytes for op in w.operators))
    assert t.dram_j == pytest.approx(1.1e-10 * t.dram_bytes)
    if all(op.bottleneck == "memory" for op in w.operators):
        assert t.busy_j == 0.0


def test_compute_bound_short_kernel_draws_the_busy_power_below_the_cap(predicted):
    w = predicted.workload("conv_resnet50_3x3")
    e = _energy(w)
    t = e.estimate_terms
    assert all(op.bottleneck == "compute" for op in w.operators)
    dynamic = t.compute_j + t.dram_j + t.busy_j
    assert dynamic == pytest.approx(max(450.0 * w.estimate.device_s, t.compute_j + t.dram_j))
    # without the below-cap figure the capped busy_w stands in
    e2 = _energy(w, attrs.evolve(COEFF, busy_below_cap_w=None))
    assert e2.estimate_j >= e.estimate_j
    assert e.floor_j == e2.floor_j and e.floor_terms.busy_j == 0  # the floor never has a busy term


def test_work_above_the_limit_runs_at_the_capped_power_for_the_sustained_time(predicted):
    w = predicted.workload("gemm_large_square")
    low_limit = attrs.evolve(COEFF, power_limit_w=300.0, capped_power_w=310.0)
    sustained = 1.2 * w.estimate.device_s
    e = _energy(w, low_limit, sustained)
    assert e.power_limited
    assert e.estimate_terms.time_s == pytest.approx(sustained)
    assert e.estimate_j == pytest.approx(
        max(310.0 * sustained, e.estimate_terms.static_j + e.estimate_terms.compute_j + e.estimate_terms.dram_j)
    )
    # no sustained estimate: the stretch to the enforced limit
    s = _energy(w, low_limit)
    dyn = s.estimate_terms.compute_j + s.estimate_terms.dram_j + s.estimate_terms.busy_j
    assert s.power_limited and s.estimate_j == pytest.approx(120.0 * s.estimate_terms.time_s + dyn)
    assert s.estimate_terms.time_s >= w.estimate.device_s


def test_without_the_host_figure_the_eager_time_model_stands(predicted):
    w = predicted.workload("transformer_decode")
    old = _energy(w, attrs.evolve(COEFF, host_s_per_kernel=None))
    assert old.estimate_terms.time_s == pytest.approx(w.estimate.eager_s)
    new = _energy(w)
    assert new.estimate_terms.time_s == pytest.approx(queued_time(w.estimate.device_s, w.estimate.kernels, 20e-6))
