"""Vector and special-function rates per precision: targets declare them (with sources, in
plugins and TOML files), the bound charges elementwise work at the fastest rate that may
legitimately process the elements' precision, transcendentals may use special-function units or
the vector units, and the shipped GPU targets and the A100 example carry NVIDIA's figures."""

import itertools
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from tensorforge.bound.mappings.base import SPECIAL_EMULATION_FLOPS, Machine, Residency
from tensorforge.bound.mappings.matmul import VectorMatmul
from tensorforge.bound.mappings.streaming import Streaming
from tensorforge.bound.model import machine_for, predict
from tensorforge.errors import TensorForgeError
from tensorforge.hardware.target import Ceilings, datasheet_ceilings, merge_ceilings
from tensorforge.hardware.target_dump import dump_target
from tensorforge.hardware.target_file import load_target_file, target_from_toml
from tensorforge.workloads.problems import AttentionProblem, MatmulProblem, StreamProblem, Tensor
from tensorforge.workloads.suite import resolve_spec

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

A100 = Path(__file__).resolve().parent.parent / "examples" / "targets" / "a100-sxm4-80gb.toml"


def machine(vector=None, special=None, fp32=1e12) -> Machine:
    return Machine(
        units=4,
        unit_sram_bytes=64 * 1024,
        unit_sram_bytes_per_s=None,
        cache_bytes=0,
        cache_bytes_per_s=None,
        dram_bytes_per_s=1e15,
        compute={"fp32": fp32, "bf16": 100 * fp32},
        vector=dict(vector or {}),
        special=dict(special or {}),
    )


def stream(flops, special=0.0, dtype="bf16", nbytes=1024):
    return StreamProblem(
        flops=flops,
        read_tensors=(Tensor("x", nbytes),),
        write_tensors=(Tensor("y", nbytes),),
        math_mode=dtype,
        special_ops=special,
    )


# -- which rate may process which precision ----------------------------------------------------


def test_the_fastest_legitimate_vector_rate_per_element_type():
    m = machine(vector={"fp32": 1e12, "fp16": 4e12, "bf16": 2e12})
    assert m.vector_rate("fp32") == 1e12  # fp32 elements never run at a half-precision rate
    assert m.vector_rate("bf16") == 2e12  # bf16 cannot go to fp16 exactly
    assert m.vector_rate("fp16") == 4e12
    assert m.vector_rate("fp8") == m.vector_rate("int8") == 4e12  # exact in fp16
    slow_half = machine(vector={"fp32": 3e12, "fp16": 1e12})
    assert slow_half.vector_rate("fp16") == 3e12  # upcasting to fp32 is always legitimate
    assert slow_half.vector_rate("bf16") == 3e12  # no bf16 rate declared: fp32
    assert machine(fp32=7e11).vector_rate("bf16") == 7e11  # no vector table: the fp32 math mode's rate


def test_special_function_rates_follow_the_same_rule():
    m = machine(vector={"fp32": 1e12}, special={"fp32": 1e10, "fp16": 2e10})
    assert (m.special_rate("fp32"), m.special_rate("fp16"), m.special_rate("bf16")) == (1e10, 2e10, 1e10)
    assert machine().special_rate("fp32") == 0.0


def test_vector_time_hand_worked():
    c = SPECIAL_EMULATION_FLOPS
    m = machine(vector={"fp32": 1e12}, special={"fp32": 1e10})
    # no transcendentals: plain FLOPs over the vector rate
    assert m.vector_time(5e9, 0, "fp32") == 5e9 / 1e12
    # 1e9 exps, 4e9 other FLOPs: the special units alone would need 0.1 s; sharing with the
    # vector units (c FLOPs per exp) gives (4e9 + c*1e9) / (1e12 + c*1e10)
    assert m.vector_time(5e9, 1e9, "fp32") == pytest.approx((4e9 + c * 1e9) / (1e12 + c * 1e10), rel=1e-12)
    # without special-function units every exp costs c vector FLOPs
    assert machine(vector={"fp32": 1e12}).vector_time(5e9, 1e9, "fp32") == pytest.approx((4e9 + c * 1e9) / 1e12)


@pytest.mark.parametrize(
    "flops, exps, v, s", list(itertools.product((0.0, 1e6, 5e8), (0.0, 1e5, 3e8), (1e11, 2e12), (0.0, 1e9, 5e11)))
)
def test_vector_time_is_a_lower_bound_on_every_split_of_the_work(flops, exps, v, s):
    """Whatever share of the exponentials a schedule sends to the special-function units, it
    takes at least vector_time; the best share reaches it."""
    m = machine(vector={"fp32": v}, special={"fp32": s} if s else {})
    flops = flops + exps  # `flops` counts each exponential once
    bound = m.vector_time(flops, exps, "fp32")
    plain = flops - exps
    times = []
    for share in [i / 100 for i in range(101)]:
        on_sfu = exps * share if s else 0.0
        vector_s = (plain + SPECIAL_EMULATION_FLOPS * (exps - on_sfu)) / v
        sfu_s = on_sfu / s if s else 0.0
        times.append(max(vector_s, sfu_s))
    assert bound <= min(times) * (1 + 1e-12)
    assert bound >= min(times) * (1 - 0.02) or bound == 0.0  # the 1%-step grid gets within 2%


# -- the mappings use them ---------------------------------------------------------------------


def test_a_half_precision_stream_is_charged_at_the_half_precision_rate():
    m = machine(vector={"fp32": 1e12, "bf16": 2e12})
    assert Streaming().explore(stream(4e9, dtype="bf16"), m, Residency()).compute_s == 4e9 / 2e12
    assert Streaming().explore(stream(4e9, dtype="fp32"), m, Residency()).compute_s == 4e9 / 1e12


def test_vector_matmul_uses_the_operand_precision():
    p = MatmulProblem(
        batch=1,
        m=129,
        n=1,
        k=9,
        math_mode="fp16",
        a_elem_bytes=2,
        b_elem_bytes=2,
        c_elem_bytes=2,
        a=Tensor("A", 129 * 9 * 2),
        b=Tensor("B", 18),
        c=Tensor("C", 258),
    )
    m = machine(vector={"fp32": 1e12, "fp16": 4e12, "bf16": 2e12})
    assert VectorMatmul().explore(p, m, Residency()).compute_s == p.flops / 4e12
    tf32 = attrs.evolve(p, math_mode="tf32", a_elem_bytes=4, b_elem_bytes=4, c_elem_bytes=4)
    assert VectorMatmul().explore(tf32, m, Residency()).compute_s == p.flops / 1e12


def _attention(d, q=2048, s_rate=None, v_rate=1e18):
    p = AttentionProblem(
        batch=1,
        heads=8,
        kv_heads=8,
        q_len=q,
        kv_len=q,
        head_dim=d,
        causal=False,
        math_mode="bf16",
        elem_bytes=2,
        q=Tensor("q", 1),
        k=Tensor("k", 1),
        v=Tensor("v", 1),
        o=Tensor("o", 1),
    )
    m = Machine(
        units=4,
        unit_sram_bytes=228 * 1024,
        unit_sram_bytes_per_s=None,
        cache_bytes=0,
        cache_bytes_per_s=None,
        dram_bytes_per_s=1e18,
        compute={"fp32": 1e12, "bf16": 1e15},
        vector={"fp32": v_rate},
        special={"fp32": s_rate} if s_rate else {},
    )
    return p, m


def test_softmax_exponentials_can_bind_attention():
    from tensorforge.bound.mappings.attention import FlashAttention

    # 8 heads x 2048^2 scores = 33.6 M exps. Matrix work 4*d FLOPs per score at 1 PFLOP/s.
    p, m = _attention(d=64, v_rate=1e12, s_rate=1e10)
    choice = FlashAttention().explore(p, m, Residency())
    softmax = m.vector_time(p.softmax_flops, p.softmax_exps, "bf16")
    assert choice.compute_s == pytest.approx(softmax) and softmax > p.flops / 1e15
    assert "the softmax's exponentials bind the compute time, not the matrix units" in choice.notes
    # with ample vector units the matrix units bind again
    p, m = _attention(d=64, v_rate=1e18, s_rate=1e10)
    assert (
        "the softmax's exponentials bind the compute time, not the matrix units"
        not in FlashAttention().explore(p, m, Residency()).notes
    )


def test_attention_counts_one_exponential_per_visible_score():
    p, _ = _attention(d=128, q=100)
    assert p.softmax_exps == 8 * 100 * 100 and p.softmax_flops == 2 * p.softmax_exps
    causal = attrs.evolve(p, causal=True)
    assert causal.softmax_exps == 8 * 100 * 101 / 2


# -- the targets carry NVIDIA's figures --------------------------------------------------------


@pytest.mark.parametrize(
    "target, point, published",
    [
        # H100 whitepaper, H100 SXM5 at 1980 MHz: FP32 66.9, FP16 / BF16 non-Tensor 133.8 TFLOPS
        ("h200", "max-boost", {"fp32": 66.9e12, "fp16": 133.8e12, "bf16": 133.8e12}),
        # GA102 whitepaper, RTX 3080: 29.8 TFLOPS FP32 and non-Tensor FP16 / BF16 -> 1:1 on GA10x
        ("rtx3050-laptop", "80w", {"fp32": 16 * 256 * 1740e6, "fp16": 16 * 256 * 1740e6, "bf16": 16 * 256 * 1740e6}),
        # A100 whitepaper Table 1: FP32 19.5, FP16 non-Tensor 78, BF16 non-Tensor 39 TFLOPS
        (str(A100), "boost", {"fp32": 19.5e12, "fp16": 78e12, "bf16": 39e12}),
    ],
)
def test_gpu_targets_carry_the_published_vector_rates(host, target, point, published):
    t = host.target(target)
    c = datasheet_ceilings(t, point)
    assert set(c.vector) == set(published)
    for precision, rate in published.items():
        assert c.vector[precision] == pytest.approx(rate, rel=2e-3), precision
    assert c.special["fp32"] == t.pe_array.units * 16 * t.operating_point(point).clock_mhz * 1e6
    for key in ("pe_array.vector_flops_per_clock", "pe_array.special_per_clock"):
        assert t.sources[key]


def test_the_a100_example_carries_the_published_peaks(host):
    t = load_target_file(A100)
    c = datasheet_ceilings(t)
    published = {"fp32": 19.5e12, "tf32": 156e12, "fp16": 312e12, "fp16_acc16": 312e12, "bf16": 312e12, "int8": 624e12}
    assert set(c.compute) == set(published)
    for mode, rate in published.items():
        assert c.compute[mode] == pytest.approx(rate, rel=2e-3), mode
    assert c.dram_bytes_per_s == 2039e9
    assert t.device_names == ("NVIDIA A100-SXM4-80GB",)
    assert all(
        t.sources[key]
        for key in (
            "pe_array.units",
            "pe_array.flops_per_clock",
            "sram.shared_memory",
            "sram.l2",
            "dram_capacity_bytes",
            "operating_points",
        )
    )


def test_the_a100_example_predicts_the_default_suite(cli, host):
    result = CliRunner().invoke(cli, ["predict", "-t", str(A100)])
    assert result.exit_code == 0, result.output
    pred = predict([resolve_spec(host, s) for s in host.default_suite()], host.target(str(A100)), host.mappings())
    assert [w.name for w in pred.workloads] == host.default_suite()
    large = pred.workload("gemm_large_square")
    # the 8192^3 bf16 GEMM cannot beat 312 TFLOP/s, and a divisible shape needs no padding
    assert large.latency_s == pytest.approx(2 * 8192**3 / 312e12, rel=2e-3)
    fp16_batched = pred.workload("gemm_batched_fp16")
    assert fp16_batched.compute_s >= fp16_batched.flops / 312e12 * (1 - 1e-3)


def test_a_compute_bound_half_precision_stream_is_not_charged_the_fp32_rate(host):
    """The regression the issue names: bf16 elementwise work charged at the fp32 vector rate
    could let a measurement beat the bound by 2x on an H200."""
    t = host.target("h200")
    sheet = datasheet_ceilings(t)
    m = machine_for(t, sheet)
    big = stream(1e12, dtype="bf16", nbytes=1)  # compute-bound by construction
    compute = Streaming().explore(big, m, Residency()).compute_s
    assert compute == pytest.approx(1e12 / 133.8e12, rel=2e-3)
    assert compute == pytest.approx(
        Streaming().explore(attrs.evolve(big, math_mode="fp32"), m, Residency()).compute_s / 2
    )


# -- TOML and calibration ----------------------------------------------------------------------


def test_vector_rates_round_trip_through_toml(host):
    for name in ("h200", "rtx3050-laptop", str(A100)):
        t = host.target(name)
        again = target_from_toml(dump_target(t), "round trip")
        assert again.pe_array == t.pe_array


MINIMAL = """
name = "npu"
dram_capacity_bytes = 1073741824
[pe_array]
units = 4
unit_name = "PE"
[pe_array.flops_per_clock]
fp32 = 2
bf16 = 16
{extra}
[[sram]]
name = "spad"
capacity_bytes = 65536
scope = "per_unit"
[[operating_points]]
name = "base"
clock_mhz = 800
dram_bandwidth_bytes_per_s = 25.6e9
"""


def test_a_hand_written_file_declares_vector_and_special_rates():
    t = target_from_toml(
        MINIMAL.format(extra="[pe_array.vector_flops_per_clock]\nbf16 = 8\n[pe_array.special_per_clock]\nfp32 = 1\n"),
        "npu.toml",
    )
    c = datasheet_ceilings(t)
    assert c.vector == {"fp32": 4 * 2 * 800e6, "bf16": 4 * 8 * 800e6}  # fp32 from flops_per_clock
    assert c.special == {"fp32": 4 * 800e6}


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            "[pe_array.vector_flops_per_clock]\nfp64 = 64",
            "unknown field 'pe_array.vector_flops_per_clock.fp64' (did you mean 'fp16'?); known here: fp32, fp16, bf16",
        ),
        (
            "[pe_array.vector_flops_per_clock]\nbf16 = 0",
            "field 'pe_array.vector_flops_per_clock.bf16' = 0: expected a number > 0 (vector FLOPs per clock per unit)",
        ),
        (
            '[pe_array.special_per_clock]\nfp32 = "fast"',
            "field 'pe_array.special_per_clock.fp32' = \"fast\": expected a number > 0 (transcendental results",
        ),
        (
            "[pe_array.vector_flop_per_clock]\nbf16 = 8",
            "unknown field 'pe_array.vector_flop_per_clock' (did you mean 'vector_flops_per_clock'?)",
        ),
    ],
)
def test_bad_vector_tables_are_one_line(extra, message):
    with pytest.raises(TensorForgeError) as info:
        target_from_toml(MINIMAL.format(extra=extra), "npu.toml")
    assert str(info.value).startswith("npu.toml: ") and message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_target_without_vector_tables_uses_its_fp32_rate(host):
    t = host.target("rtx3050-laptop")
    bare = attrs.evolve(t, pe_array=attrs.evolve(t.pe_array, vector_flops_per_clock={}, special_per_clock={}))
    c = datasheet_ceilings(bare)
    assert c.vector == {"fp32": c.compute["fp32"]} and c.special == {}


def test_calibrated_fp32_scales_the_vector_rates(host):
    sheet = datasheet_ceilings(host.target("h200"))
    no_fp32 = Ceilings(origin="calibrated", compute={"bf16": 8e14}, dram_bytes_per_s=4.2e12)
    merged = merge_ceilings(no_fp32, sheet)
    assert merged.vector == sheet.vector and merged.special == sheet.special
    assert merged.origin_of_vector() == "datasheet"
    # the H200 capture: fp32 calibrated at 51.4 of 66.9 TFLOP/s. Vector work runs at that
    # measured share of every datasheet vector rate; nothing measured the special units.
    slower = attrs.evolve(no_fp32, compute={"bf16": 8e14, "fp32": 5.14e13})
    merged = merge_ceilings(slower, sheet)
    share = 5.14e13 / sheet.vector["fp32"]
    assert merged.vector == {p: pytest.approx(share * r) for p, r in sheet.vector.items()}
    assert merged.vector["fp32"] == pytest.approx(5.14e13)
    assert merged.special == sheet.special
    assert merged.origin_of_vector() == "calibrated"
    # a CPU whose reported clock is below its boost: calibrated fp32 beat the datasheet, and
    # the special-function rates rise with the clock too
    faster = attrs.evolve(no_fp32, compute={"fp32": 1.5 * sheet.vector["fp32"]})
    merged = merge_ceilings(faster, sheet)
    assert merged.vector == {p: pytest.approx(1.5 * r) for p, r in sheet.vector.items()}
    assert merged.special == {p: pytest.approx(1.5 * r) for p, r in sheet.special.items()}
    pred = predict([resolve_spec(host, "transformer_decode")], host.target("h200"), host.mappings(), ceilings=faster)
    assert any("special-function rates raised by the same factor" in n for n in pred.notes)


def test_the_report_names_the_vector_rate_for_elementwise_operators():
    from types import SimpleNamespace as ns

    from tensorforge.hardware.target import Ceilings
    from tensorforge_measure.report.facts import _compute_rate

    ceilings = Ceilings(
        origin="datasheet",
        compute={"bf16": 1e15, "fp32": 6e13},
        dram_bytes_per_s=1e12,
        vector={"fp32": 6e13, "bf16": 1.2e14},
    )
    assert _compute_rate(ceilings, ns(problem_type="StreamProblem", math_mode="bf16")) == 1.2e14
    assert _compute_rate(ceilings, ns(problem_type="MatmulProblem", math_mode="bf16")) == 1e15
    # a capture written before vector rates existed reads them as the default: none
    old_capture = Ceilings(origin="datasheet", compute={"bf16": 1e15, "fp32": 6e13}, dram_bytes_per_s=1e12)
    assert _compute_rate(old_capture, ns(problem_type="StreamProblem", math_mode="fp32")) == 6e13
