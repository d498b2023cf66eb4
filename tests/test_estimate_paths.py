"""The estimate's implementation paths added from the graph-timed H200 sweep (2026-11-30)
and its kernel traces: each test states what the trace or probe showed and checks the model
follows it."""

import attrs
import pytest

from tensorforge.bound.model import predict
from tensorforge.estimate.basis import coefficients_for
from tensorforge.estimate.implementation import implementation_of
from tensorforge.estimate.menus import menu_for
from tensorforge.estimate.operators import _gemm_shape, gemm_factors
from tensorforge.hardware.target import Ceilings
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve_spec
from tensorforge_measure.run.calibrate import sustained_estimate

CEILINGS = Ceilings(
    origin="calibrated",
    compute={"bf16": 8.3e14, "fp16": 8.0e14, "tf32": 4.1e14, "fp32": 5.1e13},
    dram_bytes_per_s=4.26e12,
)


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def _one(host, spec, ceilings=CEILINGS, estimate=True):
    chosen = [resolve_spec(host, spec)]
    return predict(chosen, host.target("h200"), host.mappings(), None, ceilings, estimate=estimate).workloads[0]


def test_small_unaligned_convolutions_run_the_direct_engine_and_7x7_the_padded_path(host):
    # traces: C=3 3x3 -> convolve_common_engine_float_NHWC alone; C=3 7x7 stride 2 -> two
    # nhwcAddPaddingKernel, two memsets and the cutlass s16816fprop kernel
    small = _one(host, "conv2d:n=16,c=3,h=160,w=160,k=32,r=3,s=3,padding=1")
    large = _one(host, "conv2d:n=8,c=3,h=256,w=256,k=64,r=7,s=7,stride=2,padding=3")
    assert small.estimate.kernels == 1 and "direct" in small.estimate.operators[0].mapping
    assert large.estimate.kernels == 5 and large.estimate.operators[0].mapping.startswith("nvidia-sm90")
    assert large.estimate.terms["alignment_padding"] > 0


def test_decode_splits_the_kv_below_two_waves_of_blocks(host):
    # traces: lean_reduction_kernel after 224 (batch x head) blocks, none after 512
    few = _one(host, "sdpa:batch=8,heads=28,kv_heads=4,q_len=1,kv_len=4096,head_dim=128")
    many = _one(host, "sdpa:batch=16,heads=32,kv_heads=8,q_len=1,kv_len=1536,head_dim=128")
    assert few.estimate.kernels == 2 and "split-KV" in few.estimate.operators[0].mapping
    assert many.estimate.kernels == 1


def test_rope_and_the_gated_activation_run_at_the_strided_rate(host):
    w = _one(host, "transformer:hidden=2048,layers=1,heads=16,kv_heads=4,intermediate=5632,batch=4,seq=2048")
    ops = {o.name: o for o in w.estimate.operators}
    assert "strided" in ops["rope"].mapping and "strided" in ops["mlp_act"].mapping
    assert "elementwise" in ops["residual_attn"].mapping
    c = coefficients_for(host.target("h200"))
    slow = c.stream.bandwidth_efficiency["copy"] < c.stream.bandwidth_efficiency["elementwise"]
    # the strided kernels move the same bytes slower than a residual add of the same tensor size
    assert slow


def test_graph_timed_coefficients_charge_no_event_pair_in_device_time(host):
    c = coefficients_for(host.target("h200"))
    eager_like = attrs.evolve(c, kernel=attrs.evolve(c.kernel, graph_timed=False))
    graph = attrs.evolve(c, kernel=attrs.evolve(c.kernel, graph_timed=True, graph_harness_s=0.0))
    a = _one(host, "gemm:m=128,n=128,k=192", estimate=eager_like).estimate
    b = _one(host, "gemm:m=128,n=128,k=192", estimate=graph).estimate
    assert b.terms["timing_harness"] == 0.0 and a.terms["timing_harness"] == c.kernel.harness_s
    assert a.eager_s == pytest.approx(b.eager_s)  # the eager regime keeps its event pair


def test_the_sustained_estimate_scales_rates_by_the_ceiling_ratio_and_says_so(host):
    c = coefficients_for(host.target("h200"))
    sustained = Ceilings(
        origin="calibrated",
        compute={k: v * 0.85 for k, v in CEILINGS.compute.items()},
        dram_bytes_per_s=CEILINGS.dram_bytes_per_s,
    )
    s = sustained_estimate(c)
    assert "sustained" in s.basis and s.basis.startswith(c.basis) and s.gemm == c.gemm
    burst = _one(host, "gemm:m=8192,n=8192,k=8192", estimate=c).estimate
    hot = _one(host, "gemm:m=8192,n=8192,k=8192", ceilings=sustained, estimate=s).estimate
    # a compute-bound GEMM: its body scales by 1/0.85, its fixed costs do not
    assert hot.device_s / burst.device_s == pytest.approx(1 / 0.85, rel=0.02)


def test_16bit_rows_aligned_to_4_bytes_run_amperes_kernels_between_align1_and_tma(host):
    # tails study set traces: K or N % 8 in 2, 4, 6 -> cutlass_80 s16816gemm (~250 TFLOP/s), an
    # odd K -> cutlass_75 align1 (~125), K % 8 == 0 -> nvjet (~800)
    times = {
        k: _one(host, f"gemm:m=2048,n=2048,k={k},dtype=fp16").estimate for k in (10002, 10004, 10006, 10007, 10008)
    }
    assert times[10002].device_s == pytest.approx(times[10006].device_s, rel=0.01)
    assert times[10008].device_s < times[10004].device_s < times[10007].device_s
    assert times[10004].operators[0].mapping.startswith("nvidia-sm80")
    assert times[10007].operators[0].mapping.startswith("nvidia-sm75")
    # where the family has no fitted rate for them (0), the align1 rate serves
    c = coefficients_for(host.target("h200"))
    assert c.gemm.partial_aligned_efficiency > c.gemm.unaligned_efficiency > 0
    unfitted = attrs.evolve(c, gemm=attrs.evolve(c.gemm, partial_aligned_efficiency=0.0))
    w, kind = resolve_spec(host, "gemm:m=2048,n=2048,k=10004,dtype=fp16")
    (op,) = kind.operators(w.params)
    s = _gemm_shape(op.problem, implementation_of(kind, w.params, op.name), menu_for("nvidia-sm90"))
    assert s.partial_aligned and not s.aligned
    assert gemm_factors(s, unfitted)[1] == unfitted.gemm.unaligned_efficiency
    assert gemm_factors(s, c)[1] == c.gemm.partial_aligned_efficiency


def test_unaligned_hopper_gemms_split_k_only_below_one_wave(host):
    # traces: splitKreduce after the align1 kernel at 79 and 32 output tiles on 132 SMs, never at
    # 256 and more
    few = _one(host, "gemm:m=64,n=10007,k=1024,dtype=fp16").estimate
    many = _one(host, "gemm:m=512,n=10007,k=1024,dtype=fp16").estimate
    assert "split-K" not in many.operators[0].mapping and many.kernels == 1
    assert few.operators[0].mapping.startswith("nvidia-sm75")


def test_a_strided_1x1_convolution_is_an_implicit_gemm_not_a_plain_one(host):
    # traces: every strided 1x1 ran cuDNN's implicit-GEMM fprop (or worse), never nvjet
    shapes = {}
    for stride in (1, 2):
        w, kind = resolve_spec(host, f"conv2d:n=32,c=512,h=28,w=28,k=1024,r=1,s=1,stride={stride}")
        (op,) = kind.operators(w.params)
        s = _gemm_shape(op.problem, implementation_of(kind, w.params, op.name), menu_for("nvidia-sm90"))
        shapes[stride] = s.conv
    assert shapes == {1: "pointwise", 2: "kxk"}


def test_a_stream_rate_is_the_median_over_every_row_length_of_the_larger_sizes():
    from tensorforge.estimate.fit import stream_efficiency

    # three row lengths of one op at one size, and a small size the fixed cost dominates
    items = [(2e8, 1, 2e8 / 3.2e12), (2e8, 1, 2e8 / 2.0e12), (2e8, 1, 2e8 / 1.8e12), (1e7, 1, 1e7 / 1e12)]
    assert stream_efficiency(items, lambda kernels: 0.0, 4e12) == pytest.approx(2.0e12 / 4e12)
