"""The queued estimate (tensorforge.energy.model.queued_estimate): the energy window runs the
workload back to back with calls queued, so one execution takes the slower of the device's kernel
time and the host's launches; a working set larger than L2 streams all its bytes; compute-bound
operators that do real work draw at least the busy power (the L2-resident GEMM window); work that
would exceed the power limit, or whose operators outrun the capped probes' rate for most of its time,
runs at the capped windows' power for the capped time (the sustained estimate, compute-bound
operators slowed to the capped probes' rate). Every figure here is chosen by
the test (coefficients) or predicted by the Core (workloads), none measured."""

from types import SimpleNamespace

import attrs
import pytest

from tensorforge.api import predict
from tensorforge.energy.model import (
    BUSY_WORK_SHARE,
    EnergyCoefficients,
    cap_bound_share,
    capped_time,
    does_work,
    host_calls,
    on_vector_units,
    op_math_j,
    queued_time,
    streamed_fraction,
    workload_energy,
)
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve

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
    busy_w=560.0,  # P_s + busy_w 680 W: below the capped power (the busy floor stands)
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
    assert t.time_s == pytest.approx(max(w.estimate.device_s, w.estimate.calls * 20e-6))
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


def test_compute_bound_short_kernel_draws_the_busy_power_of_the_l2_resident_window(predicted):
    w = predicted.workload("conv_resnet50_3x3")
    e = _energy(w)
    t = e.estimate_terms
    assert all(op.bottleneck == "compute" for op in w.operators)
    assert all(does_work(op, o.estimate_s) for op, o in zip(w.operators, w.estimate.operators))
    dynamic = t.compute_j + t.dram_j + t.busy_j
    # busy_w (560 W, the L2-resident GEMM window), not the graph window's 450 W
    assert dynamic == pytest.approx(max(560.0 * w.estimate.device_s, t.compute_j + t.dram_j))
    # without busy_w the graph window's figure stands in
    e2 = _energy(w, attrs.evolve(COEFF, busy_w=None))
    dyn2 = e2.estimate_terms.compute_j + e2.estimate_terms.dram_j + e2.estimate_terms.busy_j
    assert dyn2 == pytest.approx(max(450.0 * w.estimate.device_s, t.compute_j + t.dram_j))
    assert e.floor_j == e2.floor_j and e.floor_terms.busy_j == 0  # the floor never has a busy term


def test_overhead_dominated_kernels_draw_no_busy_floor(predicted):
    """A decode's norms, rope and residual adds: compute-bound by the bound, but their bound's time
    is a sliver of their estimated (launch- and latency-dominated) time: activity terms only."""
    w = predicted.workload("transformer_decode")
    est = {o.name: o.estimate_s for o in w.estimate.operators}
    idle = [op for op in w.operators if op.bottleneck == "compute" and not does_work(op, est[op.name])]
    assert idle, "transformer_decode has compute-bound operators dominated by overhead"
    assert all(op.latency_s < BUSY_WORK_SHARE * est[op.name] for op in idle)
    t = _energy(w).estimate_terms
    working = [op for op in w.operators if does_work(op, est[op.name])]
    total = sum(est.values())
    most = sum(560.0 * w.estimate.device_s * est[op.name] / total for op in working)
    assert t.busy_j <= most + 1e-12  # only the working operators can add busy energy


def test_work_above_the_limit_runs_at_the_capped_power_for_the_capped_time(predicted):
    w = predicted.workload("gemm_large_square")
    low_limit = attrs.evolve(COEFF, power_limit_w=300.0, capped_power_w=310.0)
    sustained = 1.2 * w.estimate.device_s
    e = _energy(w, low_limit, sustained)
    assert e.power_limited
    assert e.estimate_terms.time_s == pytest.approx(sustained)  # no rates: the sustained estimate's time
    assert e.estimate_j == pytest.approx(310.0 * sustained)  # the cap's power, whatever the activity adds
    # with the sustained ceiling and the capped probes' rate, compute-bound operators slow by their ratio
    rates = attrs.evolve(low_limit, sustained_rate_flop_s={"bf16": 7.4e14}, capped_rate_flop_s={"bf16": 6.8e14})
    r = workload_energy(w, rates, L2, w.estimate.eager_s, w.estimate.device_s, sustained, w)
    assert all(op.bottleneck == "compute" for op in w.operators)
    assert r.estimate_terms.time_s == pytest.approx(sustained * 7.4 / 6.8)
    assert r.estimate_j == pytest.approx(310.0 * sustained * 7.4 / 6.8)
    # no sustained estimate: the stretch to the enforced limit
    s = _energy(w, low_limit)
    assert s.power_limited and s.estimate_terms.time_s >= w.estimate.device_s
    assert s.estimate_j >= 300.0 * s.estimate_terms.time_s - 1e-12


def test_capped_time_slows_only_compute_bound_operators():
    ops = (_Op("gemm", "compute", 1e12), _Op("norm", "memory", 1e6))
    sustained = _W(ops, {"gemm": 3e-3, "norm": 1e-3})
    c = attrs.evolve(COEFF, sustained_rate_flop_s={"bf16": 8e14}, capped_rate_flop_s={"bf16": 4e14})
    assert capped_time(sustained, c, 4e-3, sustained) == pytest.approx(3e-3 * 2 + 1e-3)
    assert capped_time(sustained, COEFF, 4e-3, sustained) == 4e-3  # no rates: unchanged
    # a faster capped rate never speeds an operator up
    fast = attrs.evolve(c, capped_rate_flop_s={"bf16": 9e14})
    assert capped_time(sustained, fast, 4e-3, sustained) == pytest.approx(4e-3)


def test_cap_bound_share_counts_operators_faster_than_the_capped_rate():
    ops = (_Op("gemm", "compute", 3e12), _Op("rope", "compute", 1e6), _Op("act", "memory", 1e6))
    w = _W(ops, {"gemm": 4e-3, "rope": 3e-3, "act": 3e-3})
    c = attrs.evolve(COEFF, capped_rate_flop_s={"bf16": 6e14})
    # device time 10 ms: the GEMM's 4 ms at 7.5e14 FLOP/s exceed 6e14: 40% of the time
    assert cap_bound_share(w, c, 10e-3) == pytest.approx(0.4)
    assert cap_bound_share(w, attrs.evolve(c, capped_rate_flop_s={"bf16": 8e14}), 10e-3) == 0.0
    assert cap_bound_share(w, COEFF, 10e-3) == 0.0  # no capped rates measured


@attrs.frozen
class _Op:
    name: str
    bottleneck: str
    flops: float
    math_mode: str = "bf16"
    latency_s: float = 1e-3
    compulsory_bytes: float = 1e6
    count: int = 1


@attrs.frozen
class _EstOp:
    name: str
    estimate_s: float


@attrs.frozen
class _Est:
    operators: tuple


class _W:
    """A workload prediction reduced to what the estimate's helpers read (chosen by the test)."""

    def __init__(self, ops, times):
        self.operators = ops
        self.estimate = _Est(tuple(_EstOp(n, t) for n, t in times.items()))


def test_without_the_host_figure_the_eager_time_model_stands(predicted):
    w = predicted.workload("transformer_decode")
    old = _energy(w, attrs.evolve(COEFF, host_s_per_kernel=None))
    assert old.estimate_terms.time_s == pytest.approx(w.estimate.eager_s)
    new = _energy(w)
    assert new.estimate_terms.time_s == pytest.approx(queued_time(w.estimate.device_s, w.estimate.calls, 20e-6))


def test_the_host_paces_the_window_by_framework_calls_not_kernels(predicted):
    """A library call that launches several kernels (a split-K GEMM's reduction, an attention's
    split-KV combine) costs the host one dispatch: the queued window counts calls. An estimate
    read back from an older capture, without the count, falls back to its kernels."""
    decode = predicted.workload("transformer_decode").estimate
    assert 0 < decode.calls < decode.kernels  # its split-KV combines are inside the attention calls
    skinny = predicted.workload("gemm_skinny_decode").estimate
    assert skinny.calls == 1 and skinny.kernels == 2  # split-K 2: one matmul call
    assert host_calls(skinny) == 1
    assert host_calls(SimpleNamespace(kernels=5)) == 5 and host_calls(None) is None
    e = _energy(predicted.workload("gemm_skinny_decode"))
    assert e.estimate_terms.time_s == pytest.approx(max(skinny.device_s, 20e-6))


def test_the_busy_floor_alone_never_puts_a_workload_at_the_cap(predicted):
    """P_s + busy_w above the limit (the L2-resident window read at the cap) must not make every
    working convolution 'capped': the cap test counts static and activity power only."""
    w = predicted.workload("conv_resnet50_3x3")
    hot = attrs.evolve(COEFF, busy_w=650.0, capped_power_w=710.0, capped_rate_flop_s={"bf16": 1e16})
    e = _energy(w, hot, 1.1 * w.estimate.device_s)
    t = e.estimate_terms
    assert 120.0 + (t.compute_j + t.dram_j) / t.time_s < 700.0
    assert not e.power_limited
    # the busy floor stands where it keeps the mean power within what the board draws at the cap,
    # and gives way where it would not (the time stays: nothing slowed the window in this model)
    floor = max(650.0 * w.estimate.device_s, t.compute_j + t.dram_j)
    assert t.static_j + t.compute_j + t.dram_j + t.busy_j == pytest.approx(min(t.static_j + floor, 710.0 * t.time_s))
    assert t.time_s == _time_with_a_cool_busy_floor(w, hot)


def _time_with_a_cool_busy_floor(w, c):
    """The same window's time with the busy floor far below the cap (nothing to give way)."""
    return _energy(w, attrs.evolve(c, busy_w=100.0), 1.1 * w.estimate.device_s).estimate_terms.time_s


def test_the_busy_floor_never_lifts_an_uncapped_estimate_above_the_caps_power(predicted):
    """H200, 2026-12-01: conv_resnet50_3x3's graph window of back-to-back small convolutions was
    estimated at 723 W (P_s + the busy floor over its kernel time) against 692 W measured and 689 W
    in the capped probe windows. The estimate draws at most the capped windows' power (the limit
    where they were not measured), the time unchanged."""
    w = predicted.workload("conv_resnet50_3x3")
    hot = attrs.evolve(COEFF, busy_w=640.0, capped_power_w=689.0)
    graph = _energy(w, hot).device_estimate_terms
    assert graph.time_s == pytest.approx(w.estimate.device_s)
    assert graph.total_j == pytest.approx(689.0 * graph.time_s)  # 120 + 640 W would be 760 W
    assert graph.busy_j >= 0
    limit_only = _energy(w, attrs.evolve(hot, capped_power_w=None)).device_estimate_terms
    assert limit_only.total_j == pytest.approx(700.0 * limit_only.time_s)
    cool = _energy(w, attrs.evolve(hot, busy_w=300.0)).device_estimate_terms  # 420 W: untouched
    assert cool.total_j == pytest.approx(cool.static_j + max(300.0 * w.estimate.device_s, cool.compute_j + cool.dram_j))


def test_vector_unit_operators_are_charged_the_vector_energy_per_flop():
    """A depthwise convolution (one channel per group: the bound maps it on the vector units) costs
    the depthwise probe window's energy per FLOP, not the bf16 tensor-core coefficient; tensor-core
    work keeps its mode's; without the probe figure every FLOP keeps its mode's (older captures)."""
    host = PluginHost()
    pred = predict(
        resolve(host, ("conv_depthwise_3x3", "conv_resnet50_3x3")), host.target("h200"), host.mappings(), estimate=True
    )
    dw, dense = pred.workload("conv_depthwise_3x3"), pred.workload("conv_resnet50_3x3")
    assert all(on_vector_units(op) for op in dw.operators)
    assert not any(on_vector_units(op) for op in dense.operators)
    vec = attrs.evolve(COEFF, joules_per_vector_flop=2.5e-11)
    flops = sum(op.flops for op in dw.operators)
    assert _energy(dw).estimate_terms.compute_j == pytest.approx(8e-13 * flops)
    with_vec = _energy(dw, vec)
    assert with_vec.estimate_terms.compute_j == pytest.approx(2.5e-11 * flops)
    assert with_vec.estimate_j - _energy(dw).estimate_j == pytest.approx((2.5e-11 - 8e-13) * flops)
    assert with_vec.floor_j == _energy(dw).floor_j  # the floor keeps the (lower) tensor-core low end: still sound
    assert _energy(dense, vec).estimate_j == _energy(dense).estimate_j


def test_on_vector_units_reads_the_mapping_strategy_and_the_problem_type():
    from types import SimpleNamespace as NS

    assert on_vector_units(NS(mapping=NS(strategy="vector-matmul"), problem_type="MatmulProblem"))
    assert on_vector_units(NS(mapping=NS(strategy="streaming"), problem_type="StreamProblem"))
    assert not on_vector_units(NS(mapping=NS(strategy="tiled-matmul"), problem_type="MatmulProblem"))
    assert not on_vector_units(NS(mapping=NS(strategy="flash-attention"), problem_type="AttentionProblem"))
    op = NS(mapping=NS(strategy="vector-matmul"), problem_type="MatmulProblem", math_mode="bf16", flops=1e9)
    assert op_math_j(op, {"bf16": 8e-13}, None) == pytest.approx(8e-4)  # not measured: the mode's
    assert op_math_j(op, {"bf16": 8e-13}, 3e-11) == pytest.approx(3e-2)


def test_the_graph_windows_estimate_is_the_device_time_alone(predicted):
    """A window of CUDA-graph replays runs at the device's pace: its estimate is the
    queued model with the estimate's device time and no host term. Host-bound (the tiny GEMM, the
    decode step): the two differ by the host's launches; device-bound: they are the same."""
    for name in ("gemm_tiny", "transformer_decode"):
        w = predicted.workload(name)
        e = _energy(w)
        host_s = w.estimate.calls * 20e-6
        assert host_s > w.estimate.device_s  # host-bound by the model
        assert e.estimate_terms.time_s == pytest.approx(host_s)
        assert e.device_estimate_terms.time_s == pytest.approx(w.estimate.device_s)
        assert e.device_estimate_j == pytest.approx(e.device_estimate_terms.total_j)
        # only the static term follows the time; activity is the same work
        assert e.estimate_j - e.device_estimate_j == pytest.approx(120.0 * (host_s - w.estimate.device_s))
        assert e.device_estimate_terms.compute_j == e.estimate_terms.compute_j
    big = _energy(predicted.workload("gemm_large_square"))
    assert big.device_estimate_j == pytest.approx(big.estimate_j)
    # no queued model (a calibration without the host figure): no device-time estimate either
    assert (
        _energy(predicted.workload("gemm_tiny"), attrs.evolve(COEFF, host_s_per_kernel=None)).device_estimate_j is None
    )
