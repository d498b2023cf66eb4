"""The implicit-GEMM convolution's own terms (a fixed cost per kernel, the exposed share of the
per-wave tile overhead, its operand feed) and the read-dominated GEMM stream (its own rate and
fixed time): each moves only the operators it names, the defaults are the older model, and the
fit recovers the read stream from probe times the model made (docs/estimate.md)."""

import math

import pytest
from estimate_points import H200_CEILINGS, before_new_terms, generated_points
from estimate_points import device_times as _device_times
from estimate_points import with_section as _with

from tensorforge.estimate.gemm import READ_DOMINATED
from tensorforge.host.plugin_host import PluginHost

CONV_MANY_WAVES = "conv2d:n=96,c=64,h=96,w=96,k=64,r=3,s=3,stride=1,padding=1,groups=1,dtype=bf16"
CONV_1X1 = "conv2d:n=32,c=256,h=56,w=56,k=64,r=1,s=1,stride=1,padding=0,groups=1,dtype=bf16"
GEMM_SQUARE = "gemm:m=4096,n=4096,k=4096,dtype=bf16"
GEMV = "gemm:m=1,n=8192,k=8192,dtype=bf16"
GEMV_TINY = "gemm:m=1,n=64,k=64,dtype=bf16"
BATCHED_SMALL = "gemm:m=128,n=128,k=128,dtype=bf16,batch=128"


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def test_the_new_terms_default_to_the_older_model():
    c = before_new_terms()
    assert (c.conv.kxk_fixed_s, c.conv.kxk_wave_exposed, c.conv.kxk_feed_scale) == (0.0, 1.0, 1.0)
    assert c.gemm.read_stream_efficiency == 0.0  # not fitted: stage gemm's pair serves every GEMM


def test_a_kxk_fixed_cost_is_paid_once_per_convolution_kernel_only(host):
    base = before_new_terms()
    fixed = _with(base, "conv", kxk_fixed_s=5e-6)
    specs = [CONV_MANY_WAVES, CONV_1X1, GEMM_SQUARE]
    before, after = _device_times(host, base, specs), _device_times(host, fixed, specs)
    assert math.isclose(after[0] - before[0], 5e-6, rel_tol=1e-6)  # one kernel, one fixed cost
    assert after[1:] == before[1:]  # a 1x1 convolution is a GEMM; a GEMM is not touched


def test_hiding_the_wave_overhead_speeds_a_many_wave_convolution_by_its_waves(host):
    base = before_new_terms()
    hidden = _with(base, "conv", kxk_wave_exposed=0.001)
    specs = [CONV_MANY_WAVES, GEMM_SQUARE]
    before, after = _device_times(host, base, specs), _device_times(host, hidden, specs)
    per_wave = base.gemm.tile_overhead_s * (1 - 0.001)
    saved = before[0] - after[0]
    assert saved > 20 * per_wave  # the 96 x 64 x 96^2 convolution runs 27 waves of 256x64 tiles
    assert after[1] == before[1]


def test_a_faster_convolution_feed_never_slows_a_convolution_and_leaves_gemms(host):
    base = before_new_terms()
    fed = _with(base, "conv", kxk_feed_scale=2.5)
    specs = [CONV_MANY_WAVES, GEMM_SQUARE, CONV_1X1]
    before, after = _device_times(host, base, specs), _device_times(host, fed, specs)
    assert after[0] <= before[0] and after[1:] == before[1:]


def test_a_read_dominated_gemm_streams_at_its_own_rate_and_fixed_time(host):
    base = before_new_terms()
    own = _with(base, "gemm", read_stream_efficiency=0.98, read_stream_fixed_s=7e-6)
    specs = [GEMV, BATCHED_SMALL, GEMM_SQUARE, GEMV_TINY]
    before, after = _device_times(host, base, specs), _device_times(host, own, specs)
    assert after[0] != before[0]  # a GEMV reads 128 MB and writes 16 KB: its own stream
    assert after[1:3] == before[1:3]  # a third of a batched GEMM's bytes are written; a square is compute
    # a GEMV of 8 KB pays at most its own stream's length as fixed time, not 7 us
    assert after[3] - before[3] < 7e-6 - base.gemm.stream_fixed_s
    assert (8192 * 8192 * 2) / (2 * 8192) >= READ_DOMINATED


def test_the_stream_stage_recovers_the_read_stream_it_generated(host):
    from tensorforge.estimate.fit import Fitter, _fit_stream_gemms, _read_stream

    ceilings = H200_CEILINGS
    base = before_new_terms()
    truth = _with(base, "gemm", read_stream_efficiency=0.97, read_stream_fixed_s=7e-6)
    bound, points = generated_points(host, ("gemm",), ceilings, truth)
    target = host.target("h200")
    streams = [p for p in points if _read_stream(p)]
    assert 5 <= len(streams) < len(points)
    assert any("m=1,n=6144" in p.name for p in streams)
    # a large square is compute; a batch of 512^3 GEMMs writes a third of its bytes
    assert not any("m=7168" in p.name or "batch=64" in p.name for p in streams)
    f = Fitter(_with(truth, "gemm", read_stream_efficiency=0.8, read_stream_fixed_s=1.5e-6), target, bound.ceilings)
    _fit_stream_gemms(f, points)
    assert math.isclose(f.c.gemm.read_stream_efficiency, 0.97, rel_tol=1e-2)
    assert math.isclose(f.c.gemm.read_stream_fixed_s, 7e-6, rel_tol=5e-2)
    assert f.report["gemm-stream"]["points"] == len(streams)
