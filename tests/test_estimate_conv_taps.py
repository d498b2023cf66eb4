"""The tap term of implicit-GEMM convolutions: each filter tap's im2col gather against
the math of the tile it feeds, overlapped on Hopper's 16-bit kernels, in series on the fp32/tf32
ones; coefficient sets without a tap tile predict as before, and stage conv-kxk fits the overlap
on tensor-core families only (docs/estimate.md)."""

import attrs
import numpy as np
import pytest
from estimate_points import H200_CEILINGS, before_new_terms, generated_points
from estimate_points import device_times as _device_times
from estimate_points import with_section as _with

from tensorforge.estimate import gemm
from tensorforge.estimate.fit import TAP_TILE, Fitter, _fit_kxk
from tensorforge.host.plugin_host import PluginHost

SHALLOW = "conv2d:n=96,c=64,h=96,w=96,k=64,r=3,s=3,stride=1,padding=1,groups=1,dtype=bf16"
DEEP = "conv2d:n=256,c=512,h=12,w=12,k=512,r=3,s=3,stride=1,padding=1,groups=1,dtype=bf16"
TF32 = "conv2d:n=16,c=96,h=28,w=28,k=96,r=3,s=3,stride=1,padding=1,groups=1,dtype=fp32,math_mode=tf32"
TILES = {"tm": np.array([256, 128, 64]), "tn": np.array([64, 128, 64])}


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def _tiled(c, **changes):
    return _with(c, "conv", kxk_tap_tile=float(TAP_TILE), **changes)


def test_without_a_tap_tile_the_series_term_of_before_holds(host):
    base = before_new_terms()
    assert (base.conv.kxk_tap_tile, base.conv.kxk_tap_overlap, base.conv.fp32_tap_channels) == (0.0, 1.0, 0.0)
    # the overlap and the fp32 term are read only where a tap tile is set
    other = _with(base, "conv", kxk_tap_overlap=4.0, fp32_tap_channels=500.0)
    specs = [SHALLOW, DEEP, TF32]
    assert _device_times(host, other, specs) == _device_times(host, base, specs)
    # one rate 1 / (1 + T / C) for every tile
    share = gemm.tap_share(TILES, gemm.TapCost(channels=64.0, conv_channels=64))
    assert share == 0.5


def test_the_overlap_hides_a_deep_taps_gather_and_not_a_shallow_ones():
    """T = 100 channels at a 128x128 tile: in series a 512-channel tap keeps 84% of the rate; a
    gather that overlaps the math (p = 3) leaves it over 99%, while 64 channels still lose 40%."""
    tile = TILES["tm"][1:2], TILES["tn"][1:2]
    geo = {"tm": tile[0], "tn": tile[1]}

    def share(channels, overlap):
        tap = gemm.TapCost(channels=100.0, conv_channels=channels, tile=float(TAP_TILE), overlap=overlap)
        return float(gemm.tap_share(geo, tap)[0])

    assert share(512, 1.0) < 0.85 < 0.99 < share(512, 3.0)
    assert share(64, 1.0) < share(64, 3.0) < 0.6


def test_a_small_tile_pays_its_gather_against_less_math():
    """The gather is a fixed time per tile and k-block: 256x64 and 128x128 tiles (same area) keep
    the same share, a 64x64 one (a quarter of the math) less."""
    tap = gemm.TapCost(channels=100.0, conv_channels=128, tile=float(TAP_TILE), overlap=2.0)
    big, square, small = gemm.tap_share(TILES, tap)
    assert big == square and small < 0.5 * square


def test_deep_and_shallow_convolutions_through_the_estimate(host):
    # rate and operand feed as the H200 fits leave them (at most the GEMM's rate; x4: no tile
    # feed-bound), so the main loop shows
    base = _with(before_new_terms(), "conv", kxk_efficiency=0.9, kxk_feed_scale=4.0)
    off = _with(base, "conv", kxk_tap_channels=0.0)
    series = _tiled(base, kxk_tap_channels=100.0, kxk_tap_overlap=1.0)
    hidden = _tiled(base, kxk_tap_channels=100.0, kxk_tap_overlap=3.0)
    (s0, d0), (s1, d1), (s3, d3) = (_device_times(host, c, [SHALLOW, DEEP]) for c in (off, series, hidden))
    assert d1 / d0 > 1.1 and d3 / d0 < 1.02  # the 512-channel convolution: its gather hidden
    assert s3 / s0 > 1.3  # the 64-channel one still pays its gather


def test_fp32_convolutions_take_their_own_series_term(host):
    fitted = _with(before_new_terms(), "conv", kxk_efficiency=0.9, kxk_feed_scale=4.0)
    base = _tiled(fitted, kxk_tap_channels=100.0, kxk_tap_overlap=2.0, fp32_tap_channels=50.0)
    specs = [TF32, DEEP]
    before = _device_times(host, base, specs)
    kxk = _device_times(host, _with(base, "conv", kxk_tap_channels=200.0), specs)
    fp32 = _device_times(host, _with(base, "conv", fp32_tap_channels=100.0), specs)
    assert kxk[0] == before[0] and kxk[1] > before[1]
    assert fp32[0] > before[0] and fp32[1] == before[1]


def test_stage_conv_kxk_fits_the_overlap_on_tensor_core_families_only(host):
    ceilings = H200_CEILINGS
    base = before_new_terms()
    truth = _tiled(
        base,
        kxk_efficiency=1.0,
        kxk_tap_channels=100.0,
        kxk_tap_overlap=2.5,
        kxk_fixed_s=3.5e-6,
        kxk_wave_exposed=0.001,
        kxk_feed_scale=4.0,
        fp32_tap_channels=40.0,
    )
    bound, points = generated_points(host, ("conv-kxk", "conv-fp32"), ceilings, truth)
    kxk = [p for p in points if p.group == "conv-kxk"]
    fp32 = [p for p in points if p.group == "conv-fp32"]
    target = host.target("h200")
    f = Fitter(base, target, bound.ceilings)
    _fit_kxk(f, kxk, fp32)
    assert f.c.conv.kxk_tap_tile == TAP_TILE and f.c.conv.kxk_tap_overlap > 1.5
    assert "conv.kxk_tap_overlap" in f.report["conv-kxk"]["fitted"]
    assert f.report["conv-kxk"]["median_ape"] < 0.02 and f.report["conv-fp32"]["median_ape"] < 0.02
    # the host CPU (one kxk probe, blocked kernels): the series term for every tile, as before
    cpu = Fitter(attrs.evolve(base, family="cpu-x86-64"), target, bound.ceilings)
    _fit_kxk(cpu, kxk[:2], fp32)
    assert cpu.c.conv.kxk_tap_tile == 0.0 and "conv.kxk_tap_overlap" not in cpu.report["conv-kxk"]["fitted"]
