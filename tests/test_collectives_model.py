"""Collectives in the Core: nccl-tests' sizes and bus factors, the bytes each device moves per
tier of a system's links, the analytical bound (latency + slowest tier), the calibrated curve
(under every swept point by construction), and system targets in the target file format."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorforge.bound.model import predict
from tensorforge.errors import TensorForgeError
from tensorforge.hardware.target import datasheet_ceilings
from tensorforge.hardware.target_dump import dump_target
from tensorforge.hardware.target_file import target_from_toml
from tensorforge.host.plugin_host import PluginHost
from tensorforge.testing import check_target
from tensorforge.workloads.collectives import (
    CollectiveCeiling,
    CollectiveProblem,
    analytical_seconds,
    bus_factor,
    ceiling_key,
    fit_ceiling,
    tier_traffic,
)
from tensorforge.workloads.problems import Tensor
from tensorforge.workloads.suite import resolve

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

GiB, MiB, KiB = 1 << 30, 1 << 20, 1 << 10
NVLINK = 450e9  # H200: 18 NVLink 4 links x 25 GB/s per direction
NDR = 50e9  # one 400 Gb/s ConnectX-7 per GPU


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def problem(op, nbytes, ranks=0, stride=1):
    return CollectiveProblem(
        op=op,
        bytes=nbytes,
        ranks=ranks,
        elem_bytes=2,
        stride=stride,
        input=Tensor("in", nbytes),
        output=Tensor("out", nbytes),
    )


def test_bus_factors_are_nccl_tests_conventions():
    assert bus_factor("all_reduce", 2) == 1.0 and bus_factor("all_reduce", 8) == 2 * 7 / 8
    assert bus_factor("all_gather", 8) == bus_factor("reduce_scatter", 8) == bus_factor("all_to_all", 8) == 7 / 8
    assert bus_factor("broadcast", 8) == bus_factor("send_recv", 2) == 1.0
    assert bus_factor("all_reduce", 1) == 0.0


def test_two_gpus_all_reduce_moves_the_buffer_once_per_device(host):
    system = host.target("h200x2")
    (tier,) = tier_traffic(problem("all_reduce", GiB), system.interconnect, system.devices)
    assert (tier.tier, tier.groups, tier.ranks_per_group) == ("nvlink", 2, 1)
    assert tier.bytes_per_device == GiB  # 2(n-1)/n x S = S, and S with in-switch reduction too
    latency, transfer, bound_by, _ = analytical_seconds(problem("all_reduce", GiB), system.interconnect, 2)
    assert (latency, bound_by) == (0.47e-6, "nvlink")
    assert transfer == pytest.approx(GiB / NVLINK)


def test_eight_gpus_take_the_in_switch_formula_for_all_reduce_only(host):
    system = host.target("h200x8")
    (reduce,) = tier_traffic(problem("all_reduce", GiB), system.interconnect, 8)
    assert reduce.bytes_per_device == GiB and "in-switch" in reduce.formula  # not 1.75 x S: NVSwitch can add
    (gather,) = tier_traffic(problem("all_gather", GiB), system.interconnect, 8)
    assert gather.bytes_per_device == pytest.approx(7 / 8 * GiB)
    (a2a,) = tier_traffic(problem("all_to_all", GiB), system.interconnect, 8)
    assert a2a.bytes_per_device == pytest.approx(7 / 8 * GiB)


def test_without_in_switch_reduction_all_reduce_is_the_ring_bound(host):
    import attrs

    system = host.target("h200x8")
    tiers = tuple(attrs.evolve(t, in_switch_reduction=False) for t in system.interconnect.tiers)
    (tier,) = tier_traffic(problem("all_reduce", GiB), attrs.evolve(system.interconnect, tiers=tiers), 8)
    assert tier.bytes_per_device == pytest.approx(2 * 7 / 8 * GiB)


def test_two_nodes_add_an_infiniband_tier_that_bounds_the_all_reduce(host):
    system = host.target("h200x16-2node")
    nvlink, ib = tier_traffic(problem("all_reduce", GiB), system.interconnect, 16)
    assert (nvlink.tier, nvlink.groups, nvlink.ranks_per_group) == ("nvlink", 8, 1)
    assert (ib.tier, ib.groups, ib.ranks_per_group) == ("infiniband", 2, 8)
    assert ib.bytes_per_device == pytest.approx(GiB / 8)  # each node's NICs share S (SHARP reduces)
    latency, transfer, bound_by, _ = analytical_seconds(problem("all_reduce", GiB), system.interconnect, 16)
    assert bound_by == "infiniband" and latency == 2.7e-6
    assert transfer == pytest.approx(GiB / 8 / NDR)
    # all-to-all: half of each buffer leaves the node, nothing to aggregate
    _, ib_a2a = tier_traffic(problem("all_to_all", GiB), system.interconnect, 16)
    assert ib_a2a.bytes_per_device == pytest.approx(GiB / 2)


def test_a_pipeline_send_between_nodes_crosses_only_infiniband(host):
    system = host.target("h200x16-2node")
    (tier,) = tier_traffic(problem("send_recv", 64 * MiB, ranks=2, stride=8), system.interconnect, 16)
    assert tier.tier == "infiniband" and tier.bytes_per_device == 64 * MiB
    (inside,) = tier_traffic(problem("send_recv", 64 * MiB, ranks=2, stride=1), system.interconnect, 16)
    assert inside.tier == "nvlink"


def test_too_many_ranks_for_the_target_is_one_line_naming_the_workload(host):
    workloads = resolve(host, ("all_reduce_64m:ranks=4",))
    with pytest.raises(TensorForgeError) as info:
        predict(workloads, host.target("h200x2"), host.mappings())
    message = str(info.value)
    assert "\n" not in message and "all_reduce_64m" in message
    assert "all_reduce over 4 ranks needs 4 devices; the target has 2" in message


def test_predicted_collective_on_a_system(host):
    (w,) = predict(resolve(host, ("all_reduce_1g",)), host.target("h200x2"), host.mappings()).workloads
    (op,) = w.operators
    assert op.problem_type == "CollectiveProblem" and op.bottleneck == w.bottleneck == "interconnect"
    assert op.ceiling_origin == "datasheet" and op.mapping.memory_level == "nvlink"
    assert w.latency_s == pytest.approx(0.47e-6 + GiB / NVLINK)
    # a single GPU has no links: predicting a collective there is refused, not zero
    with pytest.raises(TensorForgeError, match="needs 2 devices; the target has 1"):
        predict(resolve(host, ("all_reduce_1g:ranks=2",)), host.target("h200"), host.mappings())
    with pytest.raises(TensorForgeError, match="every device of a one-device target moves nothing"):
        predict(resolve(host, ("all_reduce_1g",)), host.target("h200"), host.mappings())


def _points(alpha, beta, op="all_reduce", n=2, noise=0.0, seed=0):
    rng = random.Random(seed)
    sizes = [4096 << i for i in range(20)]
    return [(s, (alpha + bus_factor(op, n) * s / beta) * (1 + rng.uniform(0, noise))) for s in sizes]


def test_fit_recovers_a_clean_curve():
    c = fit_ceiling("all_reduce", 2, _points(20e-6, 350e9), drift=0.0, resolution_s=0.0)
    assert c.bus_bytes_per_s == pytest.approx(350e9, rel=1e-9)
    assert c.latency_s == pytest.approx(20e-6, rel=1e-6)
    assert c.floor_s == pytest.approx(20e-6 + 4096 / 350e9)


@pytest.mark.parametrize("seed", range(20))
def test_fitted_curve_is_under_every_swept_point(seed):
    rng = random.Random(seed)
    op = rng.choice(["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"])
    n = rng.choice([2, 4, 8])
    pts = _points(rng.uniform(5e-6, 60e-6), rng.uniform(50e9, 500e9), op, n, noise=0.3, seed=seed)
    c = fit_ceiling(op, n, pts)
    assert c.bus_bytes_per_s >= max(bus_factor(op, n) * b / t for b, t in pts) * (1 - 1e-12)
    for b, t in pts:
        assert c.seconds(b) <= t * (1 - c.drift) - c.resolution_s + 1e-15  # under every point, with the allowance


def test_the_envelope_follows_the_swept_points_and_the_line_holds_beyond():
    # bus bandwidth rising with size, as NCCL's does: no line is close everywhere
    pts = [(64 * MiB, 250e-6), (128 * MiB, 465e-6), (256 * MiB, 885e-6), (512 * MiB, 1690e-6)]
    c = fit_ceiling("all_reduce", 2, pts, eager_floor_s=40e-6, drift=0.0, resolution_s=0.0)
    for b, t in pts:
        assert c.seconds(b) == t  # a swept size: its fastest time
    assert c.envelope(96 * MiB) == pytest.approx((250e-6 + 465e-6) / 2)  # the chord, half way
    assert c.envelope(160 * MiB) == pytest.approx(465e-6 + (885e-6 - 465e-6) / 4)
    line = lambda b: c.latency_s + b / c.bus_bytes_per_s  # noqa: E731
    assert line(96 * MiB) < c.envelope(96 * MiB) == c.seconds(96 * MiB)
    beyond = c.seconds(GiB)
    assert beyond == pytest.approx(c.latency_s + GiB / c.bus_bytes_per_s) and beyond < 2 * 1690e-6
    assert c.seconds(4096) == c.floor_s == 250e-6 and c.eager_floor_s == 40e-6


def test_a_slow_small_size_is_lowered_to_the_fastest_larger_one():
    # a host-bound sample at 16 KiB (25 us) with 11 us at 64 KiB: a larger message is never faster
    pts = [(3 * KiB, 9e-6), (16 * KiB, 25e-6), (64 * KiB, 11e-6), (256 * KiB, 13e-6)]
    c = fit_ceiling("all_reduce", 2, pts, drift=0.0, resolution_s=0.0)
    assert c.points == ((3 * KiB, 9e-6), (16 * KiB, 11e-6), (64 * KiB, 11e-6), (256 * KiB, 13e-6))
    assert c.seconds(32 * KiB) == pytest.approx(11e-6)


def test_a_cpu_curve_takes_the_smaller_knot_between_swept_sizes():
    # gloo on a CPU: 3 MiB leaves the caches and runs slower per byte, so the chord would lie
    # above a 1 MiB message; "step" takes the smaller knot
    pts = [(3 * KiB, 100e-6), (96 * KiB, 250e-6), (3 * MiB, 2.7e-3)]
    step = fit_ceiling("all_reduce", 2, pts, drift=0.0, resolution_s=0.0, interpolation="step")
    chord = fit_ceiling("all_reduce", 2, pts, drift=0.0, resolution_s=0.0)
    assert step.envelope(MiB) == 250e-6 and step.envelope(96 * KiB) == 250e-6
    assert chord.envelope(MiB) > 1e-3
    from tensorforge.files.serialize import to_data
    from tensorforge.workloads.collectives import ceilings_from_data

    data = to_data(step)
    assert ceilings_from_data({"all_reduce/2": data}, "x")["all_reduce/2"].interpolation == "step"
    older = {k: v for k, v in data.items() if k != "interpolation"}  # curves from before the field
    assert ceilings_from_data({"all_reduce/2": older}, "x")["all_reduce/2"].interpolation == "step"
    with pytest.raises(TensorForgeError, match="interpolation one of chord, step"):
        ceilings_from_data({"all_reduce/2": {**data, "interpolation": "spline"}}, "x")


def _nccl_like(size: float, lines) -> float:
    """NCCL's choice: the fastest of its (latency, bandwidth) algorithm/protocol lines."""
    return min(lat + size / bw for lat, bw in lines)


@given(
    lines=st.lists(st.tuples(st.floats(2e-6, 60e-6), st.floats(5e9, 500e9)), min_size=1, max_size=4),
    noise=st.lists(st.floats(0.0, 0.02), min_size=21, max_size=21),
)
@settings(max_examples=200, deadline=None)
def test_curve_from_the_sweep_sizes_never_exceeds_the_suite_sizes(lines, noise):
    # Calibrated at the sweep's sizes (3 x 2^k; each fastest sample at most 2% above the true
    # time, what the allowance covers), scored at powers of two no probe used: never above the
    # true time, because NCCL's time (a minimum of lines) is concave and the chord lies under it.
    from tf_distributed.probes import SIZES

    sizes = SIZES["cuda"]
    assert not any(s & (s - 1) == 0 for s in sizes)  # none is a power of two
    pts = [(s, _nccl_like(s, lines) * (1 + e)) for s, e in zip(sizes, noise)]
    c = fit_ceiling("all_reduce", 2, pts)
    for k in range(12, 32):
        size = 1 << k
        assert c.seconds(size) <= _nccl_like(size, lines) * (1 + 1e-12)


def test_curves_read_back_from_json_are_checked():
    from tensorforge.files.serialize import to_data
    from tensorforge.workloads.collectives import ceilings_from_data

    curve = fit_ceiling("all_gather", 2, _points(10e-6, 300e9, "all_gather"))
    assert (curve.drift, curve.resolution_s) == (0.02, 1e-6)
    again = ceilings_from_data({"all_gather/2": to_data(curve)}, "x")
    assert again == {"all_gather/2": curve}
    with pytest.raises(TensorForgeError, match=r"x: collectives\['all_gather/2'\] is malformed"):
        ceilings_from_data({"all_gather/2": {"op": "all_gather"}}, "x")
    with pytest.raises(TensorForgeError, match="key must be 'all_gather/2'"):
        ceilings_from_data({"all_reduce/2": to_data(curve)}, "x")


def test_fit_refuses_too_few_points():
    with pytest.raises(ValueError, match="at least two"):
        fit_ceiling("all_reduce", 2, [(4096, 1e-5)])


def test_calibrated_curve_replaces_the_links_only_where_it_was_measured(host):
    import attrs

    system = host.target("h200x2")
    curve = CollectiveCeiling(
        op="all_reduce",
        ranks=2,
        bus_bytes_per_s=350e9,
        latency_s=25e-6,
        floor_s=30e-6,
        min_bytes=4096,
        max_bytes=4 * GiB,
    )
    sheet = datasheet_ceilings(system)
    ceilings = attrs.evolve(sheet, origin="calibrated", collectives={ceiling_key("all_reduce", 2): curve})
    pred = predict(
        resolve(host, ("all_reduce_4k", "all_reduce_1g", "all_gather_1g")), system, host.mappings(), ceilings=ceilings
    )
    small, big, gather = pred.workloads
    assert small.latency_s == 30e-6  # the floor
    assert big.latency_s == pytest.approx(25e-6 + GiB / 350e9)  # alpha + S x 1 / beta
    assert big.operators[0].ceiling_origin == "calibrated"
    assert gather.operators[0].ceiling_origin == "datasheet"  # no curve for all_gather/2
    assert any("no calibrated curve for all_gather" in n for n in gather.operators[0].mapping.notes)


@pytest.mark.parametrize("name", ["h200x2", "h200x8", "h200x16-2node", "host-cpu-x2"])
def test_shipped_systems_pass_the_target_check_and_round_trip(host, name):
    target = host.target(name)
    check_target(target)  # sources, the TOML round trip, and an all-reduce over every device
    assert target.devices == target.interconnect.tiers[-1].span
    assert all(f"interconnect.{t.name}" in target.sources for t in target.interconnect.tiers)
    assert target.device_names[0].startswith(f"{target.devices} x ")


def test_system_target_file_errors_are_one_line(tmp_path):
    text = dump_target(PluginHost().target("h200x16-2node"))
    assert "[[interconnect]]" in text and "devices = 16" in text
    cases = {
        "span = 16": (
            "span = 12",
            "field 'interconnect[1].span' = 12: expected a multiple of the previous tier's span (8)",
        ),
        "devices = 16": ("devices = 32", "field 'interconnect[1].span' = 16: expected the target's device count (32)"),
        'topology = "switch"': ('topology = "torus"', "field 'interconnect[0].topology' = \"torus\": expected one of"),
    }
    for old, (new, message) in cases.items():
        bad = text.replace(old, new, 1)
        with pytest.raises(TensorForgeError) as info:
            target_from_toml(bad, "target file x.toml")
        assert message in str(info.value) and "\n" not in str(info.value)
    single = dump_target(PluginHost().target("h200")).replace('name = "h200"', 'name = "h200"\ndevices = 8')
    with pytest.raises(TensorForgeError, match=r"field 'devices' = 8: expected 1, or \[\[interconnect\]\] tables"):
        target_from_toml(single, "target file x.toml")


def test_a_predicted_all_reduce_never_beats_its_own_links(host):
    """Whatever the size, the bound is at least the bytes over the link bandwidth plus one hop."""
    system = host.target("h200x8")
    for size in (4096, MiB, GiB):
        (w,) = predict(resolve(host, (f"collective:op=all_gather,bytes={size}",)), system, host.mappings()).workloads
        assert w.latency_s >= 7 / 8 * size / NVLINK + 0.47e-6 - 1e-15
        assert math.isfinite(w.latency_s)
