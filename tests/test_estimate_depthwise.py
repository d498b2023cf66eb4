"""The depthwise convolution's fixed time per kernel (ConvCoefficients.depthwise_fixed_s): it is
paid once per depthwise kernel and by nothing else, 0 is the older model, and stage
conv-depthwise fits it with the bandwidth and the per-tap rate from the three conv-depthwise
probes (docs/estimate.md, "Depthwise convolutions")."""

import math

import attrs
import pytest
from estimate_points import H200_CEILINGS, before_new_terms, generated_points
from estimate_points import device_times as _device_times
from estimate_points import with_section as _with

from tensorforge.estimate.fit import Fitter, _fit_depthwise, _fit_nd
from tensorforge.host.plugin_host import PluginHost

DEPTHWISE_3X3 = "conv2d:n=16,c=96,h=80,w=80,k=96,r=3,s=3,stride=1,padding=1,groups=96,dtype=bf16"
CONV_3X3 = "conv2d:n=96,c=64,h=96,w=96,k=64,r=3,s=3,stride=1,padding=1,groups=1,dtype=bf16"
CONV_1X1 = "conv2d:n=32,c=256,h=56,w=56,k=64,r=1,s=1,stride=1,padding=0,groups=1,dtype=bf16"
GEMM_SQUARE = "gemm:m=4096,n=4096,k=4096,dtype=bf16"

# graph p50 of the three CUDA-plan conv-depthwise probes in an H200 session of
# 2026-12-01 (16 x 384 x 28^2 3x3, 8 x 128 x 112^2 3x3, 32 x 512 x 14^2 5x5; every session since
# 2026-11-30 within 2% of these), in the plan's order
H200_DEPTHWISE_S = {"c=384": 13.55e-6, "c=128": 26.41e-6, "c=512": 18.02e-6}
# that session's graph-timed launch line (kernel.graph_launch_s, graph_harness_s)
H200_GRAPH_KERNEL = {"graph_launch_s": 1.296e-6, "graph_harness_s": 1.48e-7, "graph_timed": True}


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def _h200_base():
    base = before_new_terms()
    return attrs.evolve(base, kernel=attrs.evolve(base.kernel, **H200_GRAPH_KERNEL))


def test_coefficients_without_the_fixed_time_are_the_older_model():
    c = before_new_terms()
    assert c.conv.depthwise_fixed_s == 0.0


def test_the_fixed_time_is_paid_once_per_depthwise_kernel_and_by_nothing_else(host):
    base = before_new_terms()
    fixed = _with(base, "conv", depthwise_fixed_s=4.4e-6)
    specs = [DEPTHWISE_3X3, CONV_3X3, CONV_1X1, GEMM_SQUARE]
    before, after = _device_times(host, base, specs), _device_times(host, fixed, specs)
    assert math.isclose(after[0] - before[0], 4.4e-6, rel_tol=1e-6)  # one kernel, one fixed time
    assert after[1:] == before[1:]  # implicit-GEMM and 1x1 convolutions, GEMMs: not touched


def test_the_stage_recovers_the_depthwise_terms_it_generated(host):
    truth = _with(_h200_base(), "conv", depthwise_bandwidth_efficiency=0.59, depthwise_compute_efficiency=0.26)
    truth = _with(truth, "conv", depthwise_fixed_s=4.4e-6)
    bound, points = generated_points(host, ("conv-depthwise",), H200_CEILINGS, truth)
    assert len(points) == 3  # two 3x3 sizes and a 5x5
    start = _with(truth, "conv", depthwise_bandwidth_efficiency=0.43, depthwise_compute_efficiency=0.19)
    f = Fitter(_with(start, "conv", depthwise_fixed_s=0.0), host.target("h200"), bound.ceilings)
    _fit_depthwise(f, points)
    assert math.isclose(f.c.conv.depthwise_bandwidth_efficiency, 0.59, rel_tol=1e-2)
    assert math.isclose(f.c.conv.depthwise_compute_efficiency, 0.26, rel_tol=1e-2)
    assert math.isclose(f.c.conv.depthwise_fixed_s, 4.4e-6, rel_tol=2e-2)
    assert f.report["conv-depthwise"]["max_ape"] < 1e-3


def _h200_points(host):
    base = _h200_base()
    bound, points = generated_points(host, ("conv-depthwise",), H200_CEILINGS, base)
    measured = [next(v for k, v in H200_DEPTHWISE_S.items() if f",{k}," in p.name) for p in points]
    return bound, [attrs.evolve(p, measured_s=s) for p, s in zip(points, measured)]


def test_the_h200_depthwise_probes_need_the_fixed_time(host):
    """The two 3x3 probes (19 and 51 MB) lie on one line of bytes with a ~4.4 us intercept beyond
    the launch: fitted with it, the three probes are reproduced to < 1%; without it (two points
    for the rate, as before) the 3x3 pair splits the difference, each ~12% off."""
    bound, points = _h200_points(host)
    target = host.target("h200")
    with_fixed = Fitter(_h200_base(), target, bound.ceilings)
    _fit_depthwise(with_fixed, points)
    fitted = with_fixed.c.conv
    assert 3.5e-6 < fitted.depthwise_fixed_s < 5.5e-6
    # the 3x3 stream at ~2.5 TB/s of the 4.26 TB/s ceiling; the 5x5's taps at ~13 TFLOP/s of 51
    assert 0.55 < fitted.depthwise_bandwidth_efficiency < 0.62
    assert 0.23 < fitted.depthwise_compute_efficiency < 0.28
    assert with_fixed.report["conv-depthwise"]["max_ape"] < 0.01

    # the older stage: bandwidth and per-tap rate alone, the fixed time held at 0
    without = Fitter(_h200_base(), target, bound.ceilings)
    rates = [
        ("conv", "depthwise_bandwidth_efficiency", 0.02, 1.5),
        ("conv", "depthwise_compute_efficiency", 0.005, 1.5),
    ]
    _fit_nd(without, "conv-depthwise", points, rates, starts=[(0.5, 0.3)])
    assert without.c.conv.depthwise_fixed_s == 0.0
    older = without.times(points, without.c)
    apes = {p.name.split(",")[1]: abs(t - p.measured_s) / p.measured_s for t, p in zip(older, points)}
    assert apes["c=384"] > 0.08 and apes["c=128"] > 0.08  # 19 MB too fast, 51 MB too slow
    assert older[0] < points[0].measured_s and older[1] > points[1].measured_s


def test_one_depthwise_probe_fits_the_bandwidth_alone(host):
    bound, points = _h200_points(host)
    f = Fitter(_h200_base(), host.target("h200"), bound.ceilings)
    before = f.c.conv
    _fit_depthwise(f, points[:1])
    assert f.c.conv.depthwise_bandwidth_efficiency != before.depthwise_bandwidth_efficiency
    assert f.c.conv.depthwise_compute_efficiency == before.depthwise_compute_efficiency
    assert f.c.conv.depthwise_fixed_s == 0.0
