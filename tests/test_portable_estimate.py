"""The estimate off the calibrated device: fp32 GEMMs on the CUDA-core (SIMT) path with no
tensor-core alignment rule, the measurement protocols a prediction can be compared under, and the
power cap a board's declared energy per FLOP puts on its rates."""

from pathlib import Path

import pytest

from tensorforge.api import predict, resolve_spec
from tensorforge.energy.model import PowerFigures, power_capped
from tensorforge.errors import TensorForgeError
from tensorforge.estimate.power import CAP_FROM_S, CAP_FULL_S, blend, cap_weight
from tensorforge.estimate.results import PROTOCOLS

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ROOT / "examples" / "targets"


def _estimate(host, target, spec):
    chosen = [resolve_spec(host, spec)]
    return predict(chosen, host.target(str(target)), host.mappings(), estimate=True).workloads[0]


@pytest.mark.parametrize("target", ["h100-sxm5-80gb.toml", "a100-pcie-40gb.toml", "t4.toml", "v100-pcie-32gb.toml"])
def test_an_unaligned_fp32_gemm_runs_as_fast_as_its_aligned_neighbour(host, target):
    # GPT-2's lm_head (vocab 50,257): cuBLAS runs a SIMT sgemm, not a tensor-core align1 kernel
    odd = _estimate(host, TARGETS / target, "gemm:m=4096,n=50257,k=768,dtype=fp32,math_mode=fp32")
    even = _estimate(host, TARGETS / target, "gemm:m=4096,n=50256,k=768,dtype=fp32,math_mode=fp32")
    assert odd.estimate.device_s == pytest.approx(even.estimate.device_s, rel=0.02)
    assert "fallback" not in " ".join(odd.estimate.operators[0].notes)


def test_every_protocol_has_an_estimate_at_or_above_the_bound(host):
    w = _estimate(host, TARGETS / "h100-sxm5-80gb.toml", "gemm:m=512,n=512,k=512,dtype=fp32,math_mode=fp32")
    e = w.estimate
    for protocol in PROTOCOLS:
        assert e.for_protocol(protocol) >= w.latency_s
    # one eager call with the device idle waits for the host's whole dispatch
    assert e.for_protocol("eager-warm") > e.for_protocol("graph-flushed")
    assert e.for_protocol("graph-flushed") == e.device_s and e.for_protocol("eager-flushed") == e.eager_s


def test_a_power_limited_board_runs_below_its_clock_rate(host):
    target = host.target(str(TARGETS / "l4.toml"))
    power = target.power
    assert power.joules_per_flop["fp32"] > 0 and power.idle_w
    cap = (power.limit_w - power.idle_w) / power.joules_per_flop["fp32"]
    assert power_capped(1e15, "fp32", power) == pytest.approx(cap)
    assert power_capped(1e9, "fp32", power) == 1e9  # below the cap: untouched
    w = _estimate(host, TARGETS / "l4.toml", "gemm:m=8192,n=8192,k=8192,dtype=fp32,math_mode=fp32")
    assert w.estimate.device_s >= 2 * 8192**3 / cap
    assert w.estimate.terms["power_limit"] > 0
    assert w.latency_s < w.estimate.device_s  # the bound keeps the clock's rate: it stays a bound


def test_a_short_call_runs_at_the_boost_clock_and_a_long_one_at_the_cap(host):
    # the power controller acts on a running average (estimate/power.py): a GEMM of well under a
    # millisecond is not slowed; the same board's 8192^3 is, and a sustained job always is
    short = _estimate(host, TARGETS / "l4.toml", "gemm:m=512,n=512,k=512,dtype=fp32,math_mode=fp32")
    assert short.estimate.terms["power_limit"] == 0
    assert cap_weight(short.estimate.device_s) == 0 and cap_weight(short.estimate.device_s, "sustained") == 1
    assert cap_weight(CAP_FROM_S) == 0 and cap_weight(CAP_FULL_S) == 1
    assert 0 < cap_weight((CAP_FROM_S * CAP_FULL_S) ** 0.5) < 1
    assert blend(1.0, 2.0, 0.5) == pytest.approx(2**0.5) and blend(1.0, 0.5, 1.0) == 1.0


def test_a_board_that_its_limit_does_not_slow_has_no_power_term(host):
    w = _estimate(host, TARGETS / "a100-pcie-40gb.toml", "gemm:m=8192,n=8192,k=8192,dtype=fp32,math_mode=fp32")
    assert w.estimate.terms["power_limit"] == 0


def test_no_declared_energy_means_no_cap():
    assert power_capped(5e13, "fp32", PowerFigures(tdp_w=72.0)) == 5e13
    assert power_capped(5e13, "fp32", None) == 5e13


def test_a_bad_energy_per_flop_is_refused_in_one_line(host, tmp_path):
    text = (TARGETS / "l4.toml").read_text(encoding="utf-8").replace("fp32 = 5.39e-12", "fp32 = 5.0")
    bad = tmp_path / "l4-bad.toml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(TensorForgeError) as err:
        host.target(str(bad))
    assert "joules_per_flop.fp32" in str(err.value) and "\n" not in str(err.value)


def test_the_sustained_regime_slows_every_call_of_a_power_limited_board(host):
    from tensorforge.api import run_prediction

    spec = "gemm:m=1024,n=1024,k=1024,dtype=bf16"
    l4 = str(TARGETS / "l4.toml")
    burst = run_prediction(host, l4, [spec]).workloads[0]
    sustained = run_prediction(host, l4, [spec], regime="sustained")
    assert sustained.estimate_regime == "sustained"
    w = sustained.workloads[0]
    assert w.estimate.device_s > burst.estimate.device_s and w.estimate.terms["power_limit"] > 0
    assert w.latency_s == burst.latency_s  # the bound is the same in either regime
    # a target that declares no energy per FLOP is not slowed
    a100 = str(TARGETS / "a100-pcie-40gb.toml")
    assert (
        run_prediction(host, a100, [spec], regime="sustained").workloads[0].estimate.device_s
        == run_prediction(host, a100, [spec]).workloads[0].estimate.device_s
    )


def test_softmax_has_its_own_rate_where_fitted_else_the_norms():
    from tensorforge.estimate.implementation import rate_pattern
    from tensorforge.estimate.shipped import shipped

    families = shipped()
    for family in ("nvidia-sm70", "nvidia-sm75", "nvidia-sm80"):  # fitted on NeuSight's softmax rows
        rates = families[family].stream.bandwidth_efficiency
        assert rate_pattern("softmax_rows", rates) == "softmax_rows" and rates["softmax_rows"] != rates["norm"]
    h200 = families["nvidia-sm90"].stream.bandwidth_efficiency
    assert "softmax_rows" not in h200 and rate_pattern("softmax_rows", h200) == "norm"
    assert rate_pattern("strided") == "copy"


def test_hugging_face_gpt2_code_is_estimated_as_it_runs(host):
    import torch

    from tf_transformer import huggingface

    # gelu_new's eight eager ops compute the tanh GELU a fused kernel does
    x = torch.linspace(-4, 4, 101)
    assert torch.allclose(huggingface.gelu_new(torch, x), torch.nn.functional.gelu(x, approximate="tanh"), atol=1e-6)
    spec = "transformer:config=examples/configs/gpt2/config.json,batch=1,seq=128,dtype=fp32,attention=eager"
    ours = _estimate(host, "h200", spec)
    theirs = _estimate(host, "h200", spec + ",impl=huggingface")
    assert theirs.latency_s == ours.latency_s  # the same model: the bound does not move
    # per layer: gelu_new's 7 more kernels, a scalar fill for the scale and one for the mask
    assert theirs.estimate.kernels - ours.estimate.kernels == 12 * (7 + 2)
    assert theirs.estimate.for_protocol("eager-warm") > ours.estimate.for_protocol("eager-warm")


def test_a_board_averaging_its_power_over_a_second_runs_every_shorter_call_at_burst(host):
    from tensorforge.api import run_prediction

    spec = "gemm:m=8192,n=8192,k=8192,dtype=bf16"  # ~1.4 ms: far shorter than the H200's second
    burst = run_prediction(host, "h200", [spec]).workloads[0]
    sustained = run_prediction(host, "h200", [spec], regime="sustained").workloads[0]
    assert host.target("h200").power.limit_acts_s == 1.0
    assert burst.estimate.terms["power_limit"] == 0
    assert sustained.estimate.device_s > burst.estimate.device_s * 1.1
    power = host.target("h200").power
    cap = (power.limit_w - power.idle_w) / power.joules_per_flop["bf16"]
    assert 2 * 8192**3 / sustained.estimate.device_s <= cap * (1 + 1e-9)
