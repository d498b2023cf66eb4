"""The Core's energy model (tensorforge/energy/model.py): the floor is sound against any device that
obeys the model with coefficients at or above the floor's and a time at or above the bound; the
estimate sits above the floor; the power limit stretches the time of work that would exceed
it; a math mode without a coefficient adds nothing to the floor and is named."""

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorforge.api import predict
from tensorforge.energy.model import (
    EnergyCoefficients,
    PowerFigures,
    dram_bytes_floor,
    power_limited_ceilings,
    power_limited_time,
    workload_energy,
)
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve


@pytest.fixture(scope="module")
def predicted():
    host = PluginHost()
    workloads = resolve(
        host, ("gemm_large_square", "gemm_tiny", "transformer_decode", "gemm_square_fp32", "conv_resnet50_3x3")
    )
    return predict(workloads, host.target("h200"), host.mappings(), estimate=True)


COEFF = EnergyCoefficients(
    static_w=150.0,
    static_w_low=100.0,
    idle_w=100.0,
    joules_per_flop={"bf16": 6e-13, "tf32": 1.2e-12},
    joules_per_flop_low={"bf16": 5e-13, "tf32": 1e-12},
    joules_per_dram_byte=5e-11,
    joules_per_dram_byte_low=4e-11,
    power_limit_w=700.0,
)
L2 = 60 * 2**20


def test_floor_terms_add_up_and_use_the_bound_time(predicted):
    w = predicted.workload("gemm_large_square")
    e = workload_energy(w, COEFF, L2, w.estimate.eager_s)
    t = e.floor_terms
    assert e.floor_j == pytest.approx(t.static_j + t.compute_j + t.dram_j)
    assert t.compute_j == pytest.approx(5e-13 * w.flops)
    assert t.time_s >= w.latency_s
    assert t.dram_bytes == pytest.approx(max(0, w.compulsory_bytes - L2))
    assert e.estimate_j > e.floor_j
    assert e.operators and e.operators[0].floor_j > 0


def test_power_limit_stretches_the_estimate_and_bounds_the_time(predicted):
    w = predicted.workload("gemm_large_square")
    capped = attrs.evolve(COEFF, power_limit_w=300.0)
    e = workload_energy(w, capped, L2, w.estimate.eager_s)
    assert e.power_limited
    dynamic = e.estimate_terms.compute_j + e.estimate_terms.dram_j
    assert e.estimate_terms.time_s == pytest.approx(dynamic / (300.0 - 150.0))
    # mean power of the estimate is the limit
    assert e.estimate_j / e.estimate_terms.time_s == pytest.approx(300.0)
    low_dynamic = e.floor_terms.compute_j + e.floor_terms.dram_j
    assert e.power_limited_bound_s == pytest.approx(low_dynamic / (300.0 - 100.0))
    assert e.floor_terms.time_s == pytest.approx(max(w.latency_s, e.power_limited_bound_s))


def test_capped_rates_are_context_and_bound_nothing(predicted):
    """The H200 session: rates measured at the cap after seconds of load were slower than the
    workloads' sustained timings, so they must not move the power-limited bound or the ceilings."""
    w = predicted.workload("gemm_large_square")
    capped = attrs.evolve(COEFF, capped_rate_flop_s={"bf16": 1e13}, capped_power_w=690.0)
    assert power_limited_ceilings(capped) == power_limited_ceilings(COEFF)
    a = workload_energy(w, capped, L2, w.estimate.eager_s)
    b = workload_energy(w, COEFF, L2, w.estimate.eager_s)
    assert a.power_limited_bound_s == b.power_limited_bound_s and a.estimate_j == b.estimate_j


def test_no_limit_or_no_estimate():
    assert power_limited_time(1.0, 100.0, None) is None
    assert power_limited_time(1.0, 100.0, 90.0) is None
    assert power_limited_ceilings(attrs.evolve(COEFF, power_limit_w=None)) == {}
    assert power_limited_ceilings(COEFF)["bf16"] == pytest.approx(600.0 / 5e-13)


def test_uncalibrated_mode_adds_nothing_to_the_floor_and_is_named(predicted):
    w = predicted.workload("gemm_square_fp32")
    e = workload_energy(w, COEFF, L2, w.estimate.eager_s)
    assert e.uncalibrated_modes == ("fp32",)
    assert e.floor_terms.compute_j == 0.0
    assert "borrowed" in e.estimate_note
    assert e.estimate_terms.compute_j == pytest.approx(1.2e-12 * w.flops)


def test_no_estimate_time_no_estimate(predicted):
    e = workload_energy(predicted.workload("gemm_tiny"), COEFF, L2, None)
    assert e.estimate_j is None and e.estimate_note == "no estimate of the time"


def test_dram_floor_subtracts_the_cache():
    assert dram_bytes_floor(100.0, 60.0) == 40.0
    assert dram_bytes_floor(10.0, 60.0) == 0.0
    assert dram_bytes_floor(10.0, None) == 10.0


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(["gemm_large_square", "gemm_tiny", "transformer_decode", "conv_resnet50_3x3"]),
    static_up=st.floats(1.0, 3.0),
    flop_up=st.floats(1.0, 3.0),
    byte_up=st.floats(1.0, 3.0),
    slower=st.floats(1.0, 50.0),
    cached=st.floats(0.0, 1.0),
)
def test_floor_is_sound_against_any_device_obeying_the_model(
    predicted, name, static_up, flop_up, byte_up, slower, cached
):
    """A device with coefficients at or above the floor's, running no faster than the bound and
    within its power limit, moving at least the bytes no cache holds, never spends less."""
    w = predicted.workload(name)
    e = workload_energy(w, COEFF, L2, None)
    dyn = sum(COEFF.joules_per_flop_low.get(op.math_mode, 0) * op.flops for op in w.operators) * flop_up
    dram = dram_bytes_floor(w.compulsory_bytes, L2) + cached * L2
    dyn += COEFF.joules_per_dram_byte_low * byte_up * dram
    static = COEFF.static_w_low * static_up
    t = w.latency_s * slower
    t = max(t, dyn / (COEFF.power_limit_w - static)) if COEFF.power_limit_w > static else t
    assert static * t + dyn >= e.floor_j * (1 - 1e-12)


def test_power_figures_validate():
    from tensorforge.energy.model import validate_power

    validate_power(PowerFigures(tdp_w=700.0), "t")
    with pytest.raises(ValueError, match="power.tdp_w"):
        validate_power(PowerFigures(tdp_w=-1.0), "t")
    with pytest.raises(ValueError, match="power_limit_min_w"):
        validate_power(PowerFigures(tdp_w=80.0, power_limit_min_w=90.0, power_limit_max_w=80.0), "t")
    assert PowerFigures(tdp_w=80.0).limit_w == 80.0
    assert PowerFigures(tdp_w=80.0, power_limit_w=60.0).limit_w == 60.0


def test_busy_power_over_the_kernel_time_is_the_least_dynamic_energy_of_the_estimate(predicted):
    """A short kernel's FLOP and DRAM terms are small; the device still draws its busy power while
    it runs, so the estimate's dynamic energy is at least busy_w x kernel time. A large GEMM's
    math already exceeds it (no busy term); the floor never has one."""
    busy = attrs.evolve(COEFF, busy_w=400.0)
    conv = predicted.workload("conv_resnet50_3x3")
    plain = workload_energy(conv, COEFF, L2, conv.estimate.eager_s, conv.estimate.device_s)
    e = workload_energy(conv, busy, L2, conv.estimate.eager_s, conv.estimate.device_s)
    t = e.estimate_terms
    assert t.busy_j == pytest.approx(400.0 * conv.estimate.device_s - t.compute_j - t.dram_j)
    assert t.busy_j > 0 and e.estimate_j == pytest.approx(plain.estimate_j + t.busy_j)
    assert e.floor_j == plain.floor_j and e.floor_terms.busy_j == 0
    gemm = predicted.workload("gemm_large_square")
    g = workload_energy(gemm, busy, L2, gemm.estimate.eager_s, gemm.estimate.device_s)
    assert g.estimate_terms.busy_j == 0  # 5e-13 J/FLOP at the GEMM's rate is far above 400 W
    # no kernel time, no busy term
    assert workload_energy(conv, busy, L2, conv.estimate.eager_s).estimate_terms.busy_j == 0


def test_the_bound_lets_the_device_draw_what_the_probes_saw_it_draw(predicted):
    """The cap regulates a ~1 s average: in 0.3 s probe windows the H200 drew up to 709 W at an
    enforced 700 W, and a bound on the limit alone came out above a sustained measurement. The
    power-limited bound and ceilings use the higher of the two, so they only get longer-lived
    rates (shorter times); a peak below the limit changes nothing."""
    from tensorforge.energy.model import bound_power_w

    w = predicted.workload("gemm_large_square")
    capped = attrs.evolve(COEFF, power_limit_w=300.0)
    seen = attrs.evolve(capped, peak_power_w=350.0)
    assert bound_power_w(capped) == 300.0 and bound_power_w(seen) == 350.0
    assert bound_power_w(attrs.evolve(capped, peak_power_w=250.0)) == 300.0
    assert bound_power_w(attrs.evolve(capped, power_limit_w=None, peak_power_w=None)) is None
    a, b = workload_energy(w, capped, L2, w.estimate.eager_s), workload_energy(w, seen, L2, w.estimate.eager_s)
    low_dynamic = b.floor_terms.compute_j + b.floor_terms.dram_j
    assert b.power_limited_bound_s == pytest.approx(low_dynamic / (350.0 - 100.0))
    assert b.power_limited_bound_s < a.power_limited_bound_s
    assert power_limited_ceilings(seen)["bf16"] == pytest.approx(250.0 / 5e-13)
    # the estimate's stretch stays on the enforced limit (what the device averages to)
    assert b.estimate_terms.time_s == a.estimate_terms.time_s


def test_busy_term_is_counted_per_operator_so_gemm_surplus_hides_no_small_kernels(predicted):
    """In a transformer the GEMMs' math exceeds busy_w x their time; that surplus must not hide
    the norm, rope and elementwise kernels between them, each of which draws the busy power while
    it runs. So the per-operator busy term is the sum over operators of what busy_w x the
    operator's share of the kernel time adds beyond its own FLOP and DRAM terms, and it is at
    least the workload-level figure."""
    from tensorforge.energy.model import busy_energy

    busy = attrs.evolve(COEFF, busy_w=450.0)
    w = predicted.workload("transformer_decode")
    device_s = w.estimate.device_s
    got = busy_energy(w, busy, busy.joules_per_flop, L2, device_s)
    total = sum(o.estimate_s for o in w.estimate.operators)
    stream = max(0.0, w.compulsory_bytes - L2) / sum(op.compulsory_bytes for op in w.operators)
    expected = 0.0
    for op in w.operators:
        share = next(o.estimate_s for o in w.estimate.operators if o.name == op.name) / total
        own = (
            busy.joules_per_flop.get(op.math_mode, 0.0) * op.flops
            + busy.joules_per_dram_byte * op.compulsory_bytes * stream
        )
        expected += max(0.0, 450.0 * device_s * share - own)
    assert got == pytest.approx(expected)
    compute = sum(busy.joules_per_flop.get(op.math_mode, 0.0) * op.flops for op in w.operators)
    whole = max(0.0, 450.0 * device_s - compute - busy.joules_per_dram_byte * dram_bytes_floor(w.compulsory_bytes, L2))
    assert got >= whole * (1 - 1e-12)
    # the estimate carries it, and the floor never does
    e = workload_energy(w, busy, L2, w.estimate.eager_s, device_s)
    assert e.estimate_terms.busy_j == pytest.approx(got) and e.floor_terms.busy_j == 0
    assert busy_energy(w, COEFF, COEFF.joules_per_flop, L2, device_s) == 0.0  # no busy power measured


def test_busy_window_gemm_fits_in_half_of_l2():
    from tf_cuda.energy_probes import busy_matmul_n

    assert busy_matmul_n(50 * 2**20) == 2048  # H100/H200: 24 MiB of operands in 50 MiB of L2
    n = busy_matmul_n(4 * 2**20)  # a laptop GPU's L2
    assert 6 * n * n <= 2 * 2**20 and n >= 256


def test_read_stream_window_reads_its_buffer_once_a_call_and_writes_nothing_of_size():
    """The read-stream window's load (run here on the CPU, the same tensor calls): one sum over the
    whole bf16 buffer into one fp32 scalar; its bytes are the buffer's, all reads."""
    torch = pytest.importorskip("torch")
    from tf_cuda.energy_probes import read_stream_load

    call, moved = read_stream_load(torch, 1 << 12, "cpu")
    assert moved == 1 << 12  # 2048 bf16 elements, read once
    first = call()
    assert first.dtype == torch.float32 and first.dim() == 0 and first.numel() == 1
    assert float(call()) == float(first)  # the same buffer every call: a fixed load, no new data
    assert -2048.0 <= float(first) <= 2048.0  # uniform in [-1, 1): random values, not zeros


def test_depthwise_window_gives_the_vector_energy_per_flop():
    """The vector units' energy per FLOP: the depthwise window's joules less static power over its
    seconds and its DRAM bytes at e_b, per FLOP; never below 0."""
    from tf_cuda.energy_probes import DEPTHWISE, depthwise_call, vector_flop_j

    from tensorforge_measure.capture.sections.energy import EnergyPoint

    flops, moved = depthwise_call(2, 8, 4, 4)
    assert flops == 2 * 9 * 2 * 8 * 16 and moved == 2 * (2 * 2 * 8 * 16 + 9 * 8)
    _, big = depthwise_call(*DEPTHWISE)
    assert big > 4 * 60 * 2**20 / 2  # input and output each beyond twice an H200's L2: everything streams
    point = EnergyPoint(name="depthwise", seconds=0.3, joules=0.3 * 640.0, flops={"bf16": 1e12}, dram_bytes=6e11)
    # 192 J = 130 W x 0.3 s (39 J) + 6e11 B x 1.25e-10 J/B (75 J) + 1e12 FLOP x e_vec -> 7.8e-11
    assert vector_flop_j(point, 130.0, 1.25e-10) == pytest.approx(7.8e-11)
    assert vector_flop_j(point, 700.0, 1.25e-10) == 0.0  # never negative
    assert vector_flop_j(attrs.evolve(point, flops={}), 130.0, 1.25e-10) is None
