"""Predicted against measured: APE, the bound-check tolerance and its edges, and the readable
summary of the real H200 capture."""

import json
from types import SimpleNamespace

import attrs
import numpy as np
import pytest
from golden import COMPLETE, H200_RUN, ids
from tf_cuda.telemetry import CAVEAT

from tensorforge.cli.units import seconds, si
from tensorforge_measure.capture.convert import to_document
from tensorforge_measure.capture.document import read_capture
from tensorforge_measure.capture.sections.measured import FailedMeasurement, Measurement
from tensorforge_measure.compare.bottleneck import FOOTNOTE
from tensorforge_measure.compare.workload import MIN_TOLERANCE, ape, bound_tolerance, compare_workload
from tensorforge_measure.measure.stats import SampleStats
from tensorforge_measure.report.summary import summary_text

REAL = H200_RUN


def pred(latency_s, bottleneck="compute"):
    return SimpleNamespace(latency_s=latency_s, bottleneck=bottleneck)


def stats(p50=1.0, rel_iqr=0.0):
    return SampleStats(n=25, p10=p50, p50=p50, p90=p50, mean=p50, stdev=0.0, cv=0.0, rel_iqr=rel_iqr, min=p50, max=p50)


def spread_samples(p50, rel_iqr, n=25):
    """n = 4k+1 samples whose median is p50 and whose relative IQR is rel_iqr (quartiles at exact
    ranks; the low quartile clipped at 0 s): the comparison recomputes both from the samples."""
    if rel_iqr == 0:
        return (p50,) * n
    low = max(0.0, p50 - rel_iqr * p50 / 2)
    high = low + rel_iqr * p50
    quarter = (n - 1) // 4
    return (low,) * (quarter + 1) + (p50,) * (n - 2 * quarter - 2) + (high,) * (quarter + 1)


def ok(p50, rel_iqr=0.0, samples=None):
    samples = spread_samples(p50, rel_iqr) if samples is None else tuple(samples)
    from tensorforge_measure.measure.stats import summarize

    return Measurement(
        math_mode="fp32",
        samples_s=samples,
        stats=summarize(samples) if samples else stats(p50, rel_iqr),
        stop_reason="stable",
        warmup_iters=0,
        flush_bytes=0,
        peak_memory_bytes=None,
        framework_flags={},
        throughput_flops_per_s=None,
        throughput_bytes_per_s=None,
    )


def row_for(
    measurement,
    analytical=pred(0.5),  # noqa: B008 (read-only)
    calibrated=pred(1.0),  # noqa: B008 (read-only)
    same_device=True,  # noqa: B008 (read-only)
    device_note=None,
    calibrated_note="no calibrated bound",
):
    """The comparison row as the capture document holds it."""
    return to_document(
        compare_workload("w", analytical, calibrated, measurement, same_device, device_note, calibrated_note)
    )


# -- ape and tolerance -------------------------------------------------------------------------


def test_ape_definition():
    assert ape(2.0, 1.0) == 1.0
    assert ape(0.5, 1.0) == 0.5
    assert ape(1.5, 2.0) == 0.25
    assert ape(3.0, 3.0) == 0.0
    assert ape(1.0, 4.0) == ape(7.0, 4.0) == 0.75  # symmetric around the measurement


@pytest.mark.parametrize(
    "rel_iqr, expected",
    [(0.0, 0.02), (0.019, 0.02), (0.02, 0.02), (0.05, 0.05), (0.3, 0.3), (float("inf"), float("inf"))],
)
def test_bound_tolerance_widens_with_rel_iqr(rel_iqr, expected):
    assert MIN_TOLERANCE == 0.02
    assert bound_tolerance(stats(rel_iqr=rel_iqr)) == expected


# -- bound check -------------------------------------------------------------------------------


def test_exactly_at_the_edge_is_not_a_violation():
    row = row_for(ok(1.0 - 0.02))
    assert row["bound_check"]["measured_over_bound"] == 0.98
    assert row["bound_check"]["tolerance"] == 0.02
    assert row["bound_check"]["verdict"] == "within bound"
    below = row_for(ok(0.9799))
    assert below["bound_check"]["verdict"] == "BOUND VIOLATION"


def test_edge_moves_with_the_measurement_spread():
    assert row_for(ok(0.75, rel_iqr=0.25))["bound_check"]["verdict"] == "within bound"
    assert row_for(ok(0.7499, rel_iqr=0.25))["bound_check"]["verdict"] == "BOUND VIOLATION"
    # 10% under the bound: a violation for a tight measurement, noise for a spread-out one
    assert row_for(ok(0.9, rel_iqr=0.01))["bound_check"]["verdict"] == "BOUND VIOLATION"
    assert row_for(ok(0.9, rel_iqr=0.12))["bound_check"]["verdict"] == "within bound"
    assert row_for(ok(1e-9, rel_iqr=50.0))["bound_check"]["verdict"] == "within bound"


def test_above_bound_row_contents():
    row = row_for(ok(2.0, rel_iqr=0.01))
    assert row == {
        "predicted_analytical_s": 0.5,
        "predicted_calibrated_s": 1.0,
        "bottleneck": "compute",
        "measured_p50_s": 2.0,
        "measured_min_s": 1.99,
        "ape_analytical": 0.75,
        "ape_calibrated": 0.5,
        "ape_note": None,
        "bound_check": {
            "verdict": "within bound",
            "measured_over_bound": 2.0,
            "tolerance": 0.02,
            "rule": "violation when measured p50 < calibrated lower bound x (1 - tolerance); "
            "tolerance = max(2%, measured rel. IQR); soundness: the fastest sample against the "
            "bound with no tolerance",
            "fastest_over_bound": 1.99,
            "fastest_margin": pytest.approx(0.99),
            "fastest_verdict": "fastest sample within bound",
        },
        "evidence_quality": {
            "verdict": "sufficient",
            "reasons": [],
            "checks": [
                {"name": "samples", "ok": True, "detail": "25 samples (>= 10)"},
                {"name": "spread", "ok": True, "detail": "relative IQR 1.0% (<= 10%)"},
                {
                    "name": "contention",
                    "ok": None,
                    "detail": "not checked: the telemetry window has no CPU-share figures",
                },
                {
                    "name": "throttling",
                    "ok": None,
                    "detail": "not checked: the telemetry window reports no clock-event reasons",
                },
            ],
        },
    }


def test_fastest_sample_is_checked_without_tolerance():
    """p50 1% above the bound passes the p50 rule; one sample 0.1% below the bound still says
    the bound is not sound for this workload."""
    row = row_for(ok(1.01, rel_iqr=0.01, samples=[1.02, 0.999, 1.01]))
    check = row["bound_check"]
    assert check["verdict"] == "within bound" and row["measured_min_s"] == 0.999
    assert check["fastest_verdict"] == "FASTEST SAMPLE BELOW BOUND"
    assert check["fastest_margin"] == pytest.approx(-0.001)
    at = row_for(ok(1.0, samples=[1.0, 1.2]))["bound_check"]
    assert at["fastest_margin"] == 0.0 and at["fastest_verdict"] == "fastest sample within bound"
    # samples not kept: the stats' min stands in
    no_samples = row_for(attrs.evolve(ok(1.5), samples_s=(), stats=attrs.evolve(stats(1.5), min=1.25)))
    assert no_samples["measured_min_s"] == 1.25 and no_samples["bound_check"]["fastest_over_bound"] == 1.25


def test_bottleneck_prefers_the_calibrated_prediction():
    assert row_for(ok(1.0), analytical=pred(0.5, "memory"), calibrated=pred(1.0, "compute"))["bottleneck"] == "compute"
    assert row_for(ok(1.0), analytical=pred(0.5, "memory"), calibrated=None)["bottleneck"] == "memory"
    assert compare_workload("w", None, None, None, False, None, "x").bottleneck is None


def test_no_measurement_gives_no_verdict():
    row = row_for(None)
    assert row["measured_p50_s"] is None and row["ape_analytical"] is None and row["ape_calibrated"] is None
    assert row["ape_note"] == "no measurement: not measured"
    assert row["bound_check"] == {"verdict": "no verdict: no measurement (not measured)"}
    failed = row_for(FailedMeasurement(math_mode="fp32", reason="CUDA out of memory: boom"))
    assert failed["ape_note"] == "no measurement: CUDA out of memory: boom"
    assert failed["bound_check"] == {"verdict": "no verdict: no measurement (CUDA out of memory: boom)"}


def test_no_calibrated_bound_gives_no_verdict_but_keeps_analytical_ape():
    row = row_for(ok(2.0), calibrated=None, calibrated_note="no calibration: probes failed")
    assert row["bound_check"] == {"verdict": "no verdict: no calibration: probes failed"}
    assert row["ape_analytical"] == 0.75 and row["ape_calibrated"] is None
    assert row["predicted_calibrated_s"] is None and row["measured_p50_s"] == 2.0


def test_other_device_gives_no_ape_but_still_checks_the_bound():
    note = "measured on NVIDIA H200, which is not target x"
    row = row_for(ok(0.5), same_device=False, device_note=note)
    assert row["ape_analytical"] is None and row["ape_calibrated"] is None
    assert row["ape_note"] == note
    assert row["bound_check"]["verdict"] == "BOUND VIOLATION"


# -- summary of the real capture ---------------------------------------------------------------


@pytest.fixture(scope="module")
def real_doc():
    return json.loads(REAL.read_text(encoding="utf-8"))


def test_summary_of_real_capture(real_doc):
    """The summary of the real H200 capture, checked against the capture's own numbers (GPU
    sessions regenerate the file, so nothing here is copied from one run)."""
    doc = real_doc
    text = summary_text(read_capture(REAL))
    lines = text.splitlines()
    device = doc["measured"]["device"]
    assert lines[0] == "TensorForge capture  target h200 @ max-boost"
    assert lines[1] == f"MEASURED    on NVIDIA H200 ({device['fingerprint']}) with torch-cuda"
    c = doc["calibrated"]["ceilings"]
    assert lines[2].startswith(
        f"CALIBRATED  bf16 {si(c['compute']['bf16'], 'FLOP/s')}, "
        f"fp16 {si(c['compute']['fp16'], 'FLOP/s')}, fp32 {si(c['compute']['fp32'], 'FLOP/s')}, "
        f"tf32 {si(c['compute']['tf32'], 'FLOP/s')}; copy {si(c['dram_bytes_per_s'], 'B/s')}; "
        f"launch floor {seconds(c['launch_floor_s'])}"
    )
    # the gemm_large_square row, column by column
    row = doc["comparison"]["workloads"]["gemm_large_square"]
    pred = next(w for w in doc["predicted"]["analytical"]["workloads"] if w["name"] == "gemm_large_square")
    big = next(line for line in lines if line.startswith("gemm_large_square "))
    cells = [cell for cell in big.split("  ") if cell.strip()]
    assert [cell.strip() for cell in cells] == [
        "gemm_large_square",
        seconds(pred["latency_s"]),
        seconds(row["predicted_calibrated_s"]),
        seconds(row["measured_p50_s"]),
        f"{row['ape_calibrated'] * 100:.1f}%",
        f"{row['ape_analytical'] * 100:.1f}%",
        "compute",
        "within bound",
        f"{(min(doc['measured']['workloads']['gemm_large_square']['samples_s']) / row['predicted_calibrated_s'] - 1) * 100:+.2f}%"
        + (
            " BELOW"
            if min(doc["measured"]["workloads"]["gemm_large_square"]["samples_s"]) < row["predicted_calibrated_s"]
            else ""
        ),
        "-",
    ]  # evidence quality: not recorded by this (older) capture
    assert pred["latency_s"] == row["predicted_analytical_s"]
    # no violations in the real capture, and the summary says so in so many words
    assert doc["comparison"]["bound_violations"] == []
    assert "bound violations: none" in lines
    assert "BOUND VIOLATION" not in text
    for name in doc["measured"]["workloads"]:
        assert any(line.startswith(name + " ") for line in lines), name
    # NVML saw the software power cap on the big GEMMs; the summary reports it per window
    windows = doc["diagnostic"]["windows"]
    capped = {
        name: dict(w["summary"]["reason_fractions"])["SwPowerCap"]
        for name, w in windows.items()
        if "SwPowerCap" in dict(w["summary"]["reason_fractions"])
    }
    assert "gemm_large_square" in capped and "SwPowerCap" in text
    for name, fraction in capped.items():
        line = next(line for line in lines if line.startswith(f"  {name}: SM "))
        assert f"SwPowerCap {fraction * 100:.0f}%" in line
    assert FOOTNOTE in lines and "telemetry does not prove it" in FOOTNOTE
    assert f"  {CAVEAT}" in lines
    assert CAVEAT == (
        "NVML telemetry is diagnostic context from a separate execution window; it does "
        "not prove a bottleneck and never decides a verdict."
    )
    assert lines[-1] == (f"run took {doc['provenance']['duration_s']} s; digest {doc['digest']['value'][:16]}...")


@pytest.mark.parametrize("capture", COMPLETE, ids=ids(COMPLETE))
def test_summary_rows_follow_from_the_capture(capture):
    """Every workload's row says what the capture's numbers say (not: equals a file the same
    code wrote): its measured p50 and its bound check, recomputed from the raw samples."""
    cap = read_capture(capture)
    lines = summary_text(cap).splitlines()
    measured = cap.measured.workloads if hasattr(cap.measured, "workloads") else {}
    for w in cap.predicted.analytical.workloads:
        line = next(line for line in lines if line.startswith(w.name + "  "))
        cells = [c.strip() for c in line.split("  ") if c.strip()]
        assert cells[1] == seconds(w.latency_s)
        m = measured.get(w.name)
        if getattr(m, "samples_s", None):
            assert cells[3] == seconds(float(np.median(m.samples_s)))
            row = cap.comparison.workloads[w.name]
            verdict = row.bound_check.verdict
            assert (verdict if not verdict.startswith("no verdict") else "no verdict") in line


def test_summary_marks_incomplete_and_violations():
    cap = read_capture(REAL)
    cap = attrs.evolve(cap, complete=False, comparison=attrs.evolve(cap.comparison, bound_violations=("gemm_tiny",)))
    text = summary_text(cap)
    assert text.splitlines()[0].endswith("(INCOMPLETE)")
    assert "BOUND VIOLATIONS: gemm_tiny" in text and "bound violations: none" not in text


def test_real_capture_comparison_follows_the_rule(real_doc):
    """Every recorded verdict in the real capture is what compare's rule gives for its numbers."""
    for name, row in real_doc["comparison"]["workloads"].items():
        stats = real_doc["measured"]["workloads"][name]["stats"]
        check = row["bound_check"]
        assert check["tolerance"] == bound_tolerance(SampleStats(**stats))
        assert check["measured_over_bound"] == stats["p50"] / row["predicted_calibrated_s"]
        expected = "BOUND VIOLATION" if check["measured_over_bound"] < 1 - check["tolerance"] else "within bound"
        assert check["verdict"] == expected == "within bound"
        assert row["ape_analytical"] == ape(row["predicted_analytical_s"], stats["p50"])


def test_zero_p50_has_no_ape_and_does_not_crash():
    """All-zero samples (below timer resolution) leave APE undefined instead of dividing by 0."""
    row = row_for(ok(0.0))
    assert row["measured_p50_s"] == 0.0
    assert row["ape_analytical"] is None and row["ape_calibrated"] is None
    assert row["ape_note"] == "measured p50 is 0 s (below timer resolution): APE is undefined"
    # 0 s is what the timer could not resolve, not a time below the bound: no verdict, and why
    assert row["bound_check"] == {"verdict": "no verdict: measured p50 is 0 s (below timer resolution)"}


def test_the_estimate_is_compared_in_the_measurement_regime():
    """The eager estimate beside the bound, its APE against the eager p50; never the bound's.
    A row without an estimate has no estimate fields (older captures read the same)."""
    est = SimpleNamespace(eager_s=1.5, device_s=1.2)
    calibrated = SimpleNamespace(latency_s=1.0, bottleneck="compute", estimate=est)
    row = row_for(ok(2.0), calibrated=calibrated)
    assert row["predicted_estimate_s"] == 1.5 and row["estimate_regime"] == "eager"
    assert row["ape_estimate"] == pytest.approx(0.25)
    assert row["ape_calibrated"] == pytest.approx(0.5)
    assert "predicted_estimate_s" not in row_for(ok(2.0))
    # a graph-mode p50 (device time) is compared with the device-time estimate, host overhead left out
    graph = attrs.evolve(ok(2.0), regime="burst", mode="graph")
    row = row_for(graph, calibrated=calibrated)
    assert row["predicted_estimate_s"] == 1.2 and row["estimate_regime"] == "graph"
    assert row["ape_estimate"] == pytest.approx(0.4)
