"""A 16-bit 1x1 convolution's own stream rate (conv.pointwise_stream_efficiency,
docs/estimate.md): 0 is the older model (the GEMM's rate), it moves only 16-bit 1x1 convolutions whose
memory side is their time, and stage conv-pointwise recovers it from probe times the model made."""

import math

import pytest
from estimate_points import H200_CEILINGS, before_new_terms, device_times, generated_points, with_section

from tensorforge.estimate.fit import _pointwise_streams, fit_coefficients
from tensorforge.host.plugin_host import PluginHost

# the default suite's conv_resnet50_1x1: 51 MB read, 13 MB written, memory-bound on the H200
CONV_1X1 = "conv2d:n=32,c=256,h=56,w=56,k=64,r=1,s=1,stride=1,padding=0,groups=1,dtype=bf16"
CONV_1X1_FP32 = "conv2d:n=16,c=256,h=28,w=28,k=128,r=1,s=1,stride=1,padding=0,groups=1,dtype=fp32"
CONV_3X3 = "conv2d:n=32,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,padding=1,groups=1,dtype=bf16"
GEMM_STREAM = "gemm:m=8192,n=8192,k=128,dtype=bf16"  # a memory-bound GEMM, not a convolution
DRAM = 4.8e12  # the h200 datasheet's: device_times predicts on datasheet ceilings


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def test_the_gemm_s_rate_is_the_older_model(host):
    """0 (the coefficients of before the term, older calibrations) and the GEMM's own rate predict alike."""
    base = before_new_terms()
    assert base.conv.pointwise_stream_efficiency == 0.0
    same = with_section(base, "conv", pointwise_stream_efficiency=base.gemm.stream_efficiency)
    assert device_times(host, same, [CONV_1X1]) == device_times(host, base, [CONV_1X1])


def test_a_faster_pointwise_stream_moves_only_16_bit_1x1_convolutions(host):
    base = before_new_terms()
    rate = base.gemm.stream_efficiency * 1.25
    fast = with_section(base, "conv", pointwise_stream_efficiency=rate)
    specs = [CONV_1X1, CONV_1X1_FP32, CONV_3X3, GEMM_STREAM]
    before, after = device_times(host, base, specs), device_times(host, fast, specs)
    # the 64 MB convolution's stream, 1/1.25 as long (the datasheet DRAM; dram_fraction scales it)
    moved = 64.26e6 / (DRAM * base.dram_fraction) * (1 / base.gemm.stream_efficiency - 1 / rate)
    assert math.isclose(before[0] - after[0], moved, rel_tol=0.02)
    assert after[1:] == before[1:]  # fp32 (sm80 NCHW kernels), 3x3 and GEMMs keep the GEMM's rate


def test_the_pointwise_stage_recovers_the_stream_rate_it_generated(host):
    base = before_new_terms()
    truth = with_section(base, "conv", pointwise_efficiency=0.8, pointwise_stream_efficiency=0.85)
    bound, points = generated_points(host, ("conv-pointwise",), H200_CEILINGS, truth)
    streams = _pointwise_streams(points)
    # the write-heavy 64 x 64 x 56^2 probe and the read-heavy one: the memory-bound two
    assert sorted(p.name.split(":", 2)[2].split(",")[0] for p in streams) == ["n=48", "n=64"]
    fitted, report = fit_coefficients(base, host.target("h200"), bound.ceilings, [], points, "test")
    assert math.isclose(fitted.conv.pointwise_stream_efficiency, 0.85, rel_tol=1e-2)
    assert math.isclose(fitted.conv.pointwise_efficiency, 0.8, rel_tol=2e-2)
    assert report["stages"]["conv-pointwise"]["max_ape"] < 5e-3


def test_without_a_memory_bound_16_bit_probe_the_stage_keeps_the_gemm_s_rate(host):
    """The host CPU's one pointwise probe is fp32: the multiplier alone is fitted, as before."""
    base = before_new_terms()
    truth = with_section(base, "conv", pointwise_efficiency=0.7)
    bound, points = generated_points(host, ("conv-pointwise",), H200_CEILINGS, truth)
    compute_bound = [p for p in points if p not in _pointwise_streams(points)]
    fitted, report = fit_coefficients(base, host.target("h200"), bound.ceilings, [], compute_bound, "test")
    assert fitted.conv.pointwise_stream_efficiency == 0.0
    assert math.isclose(fitted.conv.pointwise_efficiency, 0.7, rel_tol=1e-2)
    assert set(report["stages"]["conv-pointwise"]["fitted"]) == {"conv.pointwise_efficiency"}
