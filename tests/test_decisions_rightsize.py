"""Right-sizing verdicts, every branch asserted whole (each cell and target verdict as the
policy returns it), on targets and captures the test defines: a workload that does not fit, a
bound that already misses, no measurement, a measurement that meets, one that misses; how cells
add up to a target's verdict; prices; the order of the answer."""

import attrs
import pytest
from capture_factory import core, make_capture, samples

from tensorforge.api import seconds
from tensorforge.hardware.target import MemoryLevel, OperatingPoint, PEArray, Target
from tensorforge.workloads.suite import resolve
from tensorforge_measure.policy.evidence import Evidence
from tensorforge_measure.policy.rightsize import (
    MEETS,
    RULED_OUT,
    UNKNOWN,
    Cell,
    Objective,
    TargetVerdict,
    _same_workload,
    rightsize,
)

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("clean_plugin_env")]

GIB = 2**30


def toy(name, device, dram_gib=64.0):
    return Target(
        name=name,
        description="toy",
        dram_capacity_bytes=int(dram_gib * GIB),
        pe_array=PEArray(100, "PE", {"fp32": 1000, "bf16": 4000}),
        sram=(MemoryLevel("smem", 256 * 1024, "per_unit", 128),),
        operating_points=(OperatingPoint("base", 1000, 1e12),),
        default_operating_point="base",
        device_names=(device,),
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    host = core()
    workloads = resolve(host, ("gemm_tiny", "gemm_large_square"))
    fast, cheap = toy("toy-fast", "Toy Fast"), toy("toy-cheap", "Toy Cheap")
    small = toy("toy-small", "Toy Small", dram_gib=0.25)  # the large GEMM (0.375 GiB) does not fit
    ev = {
        "fast": Evidence(
            "fast.json",
            make_capture(
                {"gemm_tiny": samples(4e-6), "gemm_large_square": samples(3e-3)},
                home=home,
                device_name="Toy Fast",
                fingerprint="f",
            ),
        ),
        "cheap": Evidence(
            "cheap.json",
            make_capture(
                {"gemm_tiny": samples(4e-6), "gemm_large_square": samples(3e-3)},
                home=home,
                device_name="Toy Cheap",
                fingerprint="c",
            ),
        ),
        "h200": Evidence("h200.json", make_capture({"gemm_tiny": samples(5e-6)}, home=home)),
    }
    return host, workloads, (fast, cheap, small), ev


def bounds(host, workloads, target):
    from tensorforge.bound.model import predict

    return {w.name: w for w in predict(workloads, target, host.mappings()).workloads}


def test_every_branch_of_a_cell_and_how_cells_add_up(world):
    host, workloads, (fast, cheap, small), ev = world
    objective = Objective("latency", 10e-3)
    h200 = host.target("h200")
    results = rightsize(
        workloads,
        [h200, fast, cheap, small],
        host.mappings(),
        objective,
        [ev["fast"], ev["cheap"], ev["h200"]],
        {"toy-fast": 7.2, "toy-cheap": 3.6},
    )
    by = {r.target: r for r in results}
    b = bounds(host, workloads, fast)
    p50_tiny, p50_large = float(sorted(samples(4e-6))[12]), float(sorted(samples(3e-3))[12])
    assert by["toy-cheap"] == TargetVerdict(
        "toy-cheap",
        MEETS,
        "every workload measured on this device meets the objective",
        (
            Cell(
                "toy-cheap",
                "gemm_tiny",
                MEETS,
                f"MEASURED p50 {seconds(p50_tiny)} meets latency <= 10 ms",
                b["gemm_tiny"].latency_s,
                p50_tiny,
                "cheap.json",
            ),
            Cell(
                "toy-cheap",
                "gemm_large_square",
                MEETS,
                f"MEASURED p50 {seconds(p50_large)} meets latency <= 10 ms",
                b["gemm_large_square"].latency_s,
                p50_large,
                "cheap.json",
            ),
        ),
        3.6,
        pytest.approx(3.6 / 3600 * (p50_tiny + p50_large) * 1e6, rel=1e-12),
    )
    assert by["toy-fast"].cost_per_million == pytest.approx(2 * by["toy-cheap"].cost_per_million, rel=1e-12)
    hb = bounds(host, workloads, h200)
    assert by["h200"] == TargetVerdict(
        "h200",
        UNKNOWN,
        "no measurement on h200 for: gemm_large_square",
        (
            Cell(
                "h200",
                "gemm_tiny",
                MEETS,
                f"MEASURED p50 {seconds(float(sorted(samples(5e-6))[12]))} meets latency <= 10 ms",
                hb["gemm_tiny"].latency_s,
                float(sorted(samples(5e-6))[12]),
                "h200.json",
            ),
            Cell(
                "h200",
                "gemm_large_square",
                UNKNOWN,
                f"PREDICTED lower bound {seconds(hb['gemm_large_square'].latency_s)} would allow it; no capture measures "
                f"it on h200: run `tensorforge run --target h200 -w {hb['gemm_large_square'].spec}` there",
                hb["gemm_large_square"].latency_s,
            ),
        ),
        None,
        None,
    )
    sb = bounds(host, workloads, small)
    large = sb["gemm_large_square"]
    assert by["toy-small"].verdict == RULED_OUT and by["toy-small"].reason == (
        f"gemm_large_square: does not fit: needs {large.footprint_bytes / GIB:.2f} GiB, toy-small has 0.25 GiB"
    )
    assert by["toy-small"].cells[1] == Cell(
        "toy-small",
        "gemm_large_square",
        RULED_OUT,
        "does not fit: needs 0.38 GiB, toy-small has 0.25 GiB",
        large.latency_s,
    )
    assert by["toy-small"].cells[0].verdict == UNKNOWN
    # MEETS (cheapest first, then by cost), then UNKNOWN, then RULED OUT
    assert [r.target for r in results] == ["toy-cheap", "toy-fast", "h200", "toy-small"]


def test_a_bound_or_a_measurement_that_misses_rules_out(world):
    host, workloads, (fast, cheap, small), ev = world
    b = bounds(host, workloads, fast)
    tight = Objective("latency", 2.9e-3)  # above both bounds, below the large GEMM's measured 3 ms
    assert b["gemm_large_square"].latency_s < 2.9e-3
    result = rightsize(workloads, [fast], host.mappings(), tight, [ev["fast"]], {"toy-fast": 1.0})[0]
    p50 = float(sorted(samples(3e-3))[12])
    assert result.verdict == RULED_OUT and result.cost_per_million is None
    assert result.reason == f"gemm_large_square: MEASURED p50 {seconds(p50)} misses latency <= 2.9 ms"
    assert result.cells[1] == Cell(
        "toy-fast",
        "gemm_large_square",
        RULED_OUT,
        f"MEASURED p50 {seconds(p50)} misses latency <= 2.9 ms",
        b["gemm_large_square"].latency_s,
        p50,
        "fast.json",
    )
    impossible = Objective("latency", b["gemm_tiny"].latency_s / 2)
    cell = rightsize(workloads[:1], [fast], host.mappings(), impossible, [ev["fast"]], {})[0].cells[0]
    assert cell == Cell(
        "toy-fast",
        "gemm_tiny",
        RULED_OUT,
        f"PREDICTED lower bound {seconds(b['gemm_tiny'].latency_s)} already misses {impossible.describe()}",
        b["gemm_tiny"].latency_s,
    )


def test_ties_in_verdict_and_cost_go_by_name(world):
    host, workloads, (fast, cheap, small), ev = world
    results = rightsize(
        workloads[:1],
        [host.target("rtx3050-laptop"), host.target("h200")],
        host.mappings(),
        Objective("latency", 1.0),
        [],
        {},
    )
    assert [(r.target, r.verdict) for r in results] == [("h200", UNKNOWN), ("rtx3050-laptop", UNKNOWN)]
    priced = rightsize(
        workloads,
        [cheap, fast],
        host.mappings(),
        Objective("latency", 1.0),
        [ev["fast"], ev["cheap"]],
        {"toy-fast": 1.0},
    )
    # a MEETS with a price ranks before a MEETS without one
    assert [(r.target, r.cost_per_million is None) for r in priced] == [("toy-fast", False), ("toy-cheap", True)]


def test_a_capture_counts_for_the_device_it_measured_and_the_same_workload_only(world):
    host, workloads, (fast, cheap, small), ev = world
    kind = host.workload_kind("gemm")
    params = resolve(host, ("gemm_tiny",))[0][0].params
    assert _same_workload(kind, params, "gemm:m=64,n=64,k=64,dtype=bf16")
    assert not _same_workload(kind, params, "gemm:m=64,n=64,k=64,dtype=fp16")
    assert not _same_workload(kind, params, "conv2d:n=1")
    assert not _same_workload(kind, params, "gemm:m=-1")  # refused spec: not this workload
    result = rightsize(workloads[:1], [cheap], host.mappings(), Objective("latency", 1.0), [ev["fast"]], {})[0]
    assert result.verdict == UNKNOWN  # measured on Toy Fast, not Toy Cheap


def test_throughput_objectives(world):
    host, workloads, (fast, cheap, small), ev = world
    p50 = float(sorted(samples(4e-6))[12])
    meets = rightsize(workloads[:1], [fast], host.mappings(), Objective("throughput", 1 / p50), [ev["fast"]], {})
    assert meets[0].verdict == MEETS
    misses = rightsize(workloads[:1], [fast], host.mappings(), Objective("throughput", 1.01 / p50), [ev["fast"]], {})
    assert misses[0].verdict == RULED_OUT
    assert attrs.evolve(misses[0]).reason.endswith(f"misses throughput >= {1.01 / p50:g} per second")


def test_every_missing_workload_is_named_and_order_is_verdict_then_cost_then_name(world):
    host, workloads, (fast, cheap, small), ev = world
    laptop = host.target("rtx3050-laptop")
    later = toy("zz-unmeasured", "Never Measured")
    results = rightsize(
        workloads, [laptop, fast, small, later], host.mappings(), Objective("latency", 1.0), [ev["fast"]], {}
    )
    assert [(r.target, r.verdict) for r in results] == [
        ("toy-fast", MEETS),  # a MEETS without a price still ranks before UNKNOWN ("r" < "t")
        ("rtx3050-laptop", UNKNOWN),
        ("zz-unmeasured", UNKNOWN),  # UNKNOWN before RULED OUT, whatever the names
        ("toy-small", RULED_OUT),
    ]
    assert results[1].reason == "no measurement on rtx3050-laptop for: gemm_tiny, gemm_large_square"
    assert results[0].cost_per_million is None and results[0].price_per_hour is None


def test_a_spec_whose_value_holds_a_colon_is_still_the_same_workload(world, tmp_path):
    host, *_ = world
    folder = tmp_path / "a:b"
    folder.mkdir()
    config = folder / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2}')
    spec = f"transformer:config={config},seq=16"
    ((workload, kind),) = resolve(host, (spec,))
    assert _same_workload(kind, workload.params, workload.spec)
    assert ":" in workload.spec.partition(":")[2]


def test_a_workload_the_target_cannot_run_is_ruled_out_there(world):
    host, _, (fast, cheap, small), ev = world
    tf32 = resolve(host, ("gemm_square_tf32",))
    (result,) = rightsize(tf32, [fast], host.mappings(), Objective("latency", 1.0), [], {})
    why = (
        "cannot run on toy-fast: workload 'gemm_square_tf32': target 'toy-fast' declares no tf32 rate "
        "(operator 'matmul'); known modes: bf16, fp32"
    )
    assert result == TargetVerdict(
        "toy-fast",
        RULED_OUT,
        f"gemm_square_tf32: {why}",
        (Cell("toy-fast", "gemm_square_tf32", RULED_OUT, why, None),),
        None,
        None,
    )


def test_a_zero_second_p50_adds_nothing_to_the_cost(world, tmp_path):
    # A timer too coarse for a tiny kernel records 0 s; that p50 meets a latency objective and
    # adds no time to the cost (it is a measured 0, not a missing measurement counted as 1 s).
    host, workloads, (fast, _, _), _ = world
    coarse = Evidence(
        "coarse.json",
        make_capture(
            {"gemm_tiny": (0.0,) * 25, "gemm_large_square": samples(3e-3)},
            home=tmp_path,
            device_name="Toy Fast",
            fingerprint="f",
        ),
    )
    (result,) = rightsize(workloads, [fast], host.mappings(), Objective("latency", 10e-3), [coarse], {"toy-fast": 7.2})
    assert result.verdict == MEETS
    assert [c.measured_p50_s for c in result.cells] == [0.0, float(sorted(samples(3e-3))[12])]
    assert result.cost_per_million == pytest.approx(7.2 / 3600 * sorted(samples(3e-3))[12] * 1e6, rel=1e-12)
