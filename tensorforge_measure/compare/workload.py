"""Predicted against measured: APE (same device only) and bound violations.

APE = |predicted - measured p50| / measured p50, only when the measuring device is the target
that was predicted. A measured p50 below the calibrated lower bound by more than the noise
tolerance is a bound violation: the model or the calibration is wrong, and it is shown loudly.

The p50 rule tolerates noise; soundness does not. A lower bound must hold for every run, so
the comparison also gives the margin of the *fastest* sample over the bound, with no
tolerance: a fastest sample below the calibrated bound says the bound is not sound for that
workload (tests/test_capture_soundness.py checks it on every committed capture).
"""

from typing import Any

import attrs

from tensorforge_measure.capture.sections.comparison import BoundCheck, ComparisonRow
from tensorforge_measure.capture.sections.diagnostic import TelemetryWindow
from tensorforge_measure.capture.sections.measured import Measurement, WorkloadMeasurement
from tensorforge_measure.compare.evidence_quality import assess
from tensorforge_measure.measure.stats import SampleStats, summarize

MIN_TOLERANCE = 0.02  # relative; widened to the measurement's own interquartile spread
BOUND_RULE = (
    "violation when measured p50 < calibrated lower bound x (1 - tolerance); "
    "tolerance = max(2%, measured rel. IQR); soundness: the fastest sample against the "
    "bound with no tolerance"
)
FASTEST_BELOW = "FASTEST SAMPLE BELOW BOUND"


def ape(predicted_s: float, measured_s: float) -> float:
    return abs(predicted_s - measured_s) / measured_s


def bound_tolerance(stats: SampleStats) -> float:
    return max(MIN_TOLERANCE, float(stats.rel_iqr or 0.0))


def fastest_sample(measurement: Measurement) -> float | None:
    """The fastest iteration measured: the raw samples' minimum (the stats' min if samples
    were not kept)."""
    return min(measurement.samples_s) if measurement.samples_s else measurement.stats.min


@attrs.frozen
class FastestCheck:
    """The fastest sample against a bound, with no tolerance."""

    verdict: str
    over_bound: float | None = None  # fastest / bound
    margin: float | None = None  # fastest / bound - 1


def fastest_check(fastest: float | None, bound_s: float) -> FastestCheck:
    """Margin of the fastest sample over the bound: (fastest - bound) / bound, no tolerance."""
    if fastest is None or bound_s <= 0:
        return FastestCheck("no verdict: no samples")
    margin = fastest / bound_s - 1.0
    return FastestCheck(FASTEST_BELOW if margin < 0 else "fastest sample within bound", fastest / bound_s, margin)


def compare_workload(
    name: str,
    analytical,
    calibrated,
    measurement: WorkloadMeasurement | None,
    same_device: bool,
    device_note: str | None,
    calibrated_note: str,
    window: TelemetryWindow | None = None,
) -> ComparisonRow:
    """One workload's comparison; `window` is its telemetry window (for the evidence quality).
    Deterministic from its inputs: `verify` recomputes every row with it."""
    bound = calibrated or analytical
    row: dict[str, Any] = dict(
        predicted_analytical_s=analytical.latency_s if analytical else None,
        predicted_calibrated_s=calibrated.latency_s if calibrated else None,
        bottleneck=bound.bottleneck if bound else None,
        measured_p50_s=None,
        ape_analytical=None,
        ape_calibrated=None,
        ape_note=None,
    )
    # the estimate (expected time, not a bound) in the mode of the p50 it is compared with:
    # device time (estimate.device_s) against a graph-mode p50, eager (device time + host
    # overhead) against an eager p50; the calibrated prediction's where it has one
    chosen = calibrated if getattr(calibrated, "estimate", None) is not None else analytical
    estimate = getattr(chosen, "estimate", None)
    mode = (getattr(measurement, "mode", None) or "eager") if isinstance(measurement, Measurement) else "eager"
    estimate_s = None if estimate is None else (estimate.eager_s if mode == "eager" else estimate.device_s)
    if estimate is not None:
        row.update(predicted_estimate_s=estimate_s, estimate_regime=mode)
    if not isinstance(measurement, Measurement):
        why = measurement.reason if measurement is not None else "not measured"
        return ComparisonRow(
            **{**row, "ape_note": f"no measurement: {why}"},
            bound_check=BoundCheck(verdict=f"no verdict: no measurement ({why})"),
        )
    # From the raw samples, never the recorded summary: what a row says must follow from them
    # (a capture that kept no samples has only its summary, and no evidence quality).
    stats = summarize(measurement.samples_s) if measurement.samples_s else measurement.stats
    p50 = stats.p50
    row["measured_p50_s"] = p50
    row["measured_min_s"] = fastest_sample(measurement)
    row["evidence_quality"] = assess(measurement.samples_s, window) if measurement.samples_s else None
    if same_device and p50 > 0:
        row["ape_analytical"] = ape(analytical.latency_s, p50) if analytical else None
        row["ape_calibrated"] = ape(calibrated.latency_s, p50) if calibrated else None
        row["ape_estimate"] = ape(estimate_s, p50) if estimate_s is not None else None
    elif same_device:  # all-zero samples (below timer resolution): APE has no denominator
        row["ape_note"] = "measured p50 is 0 s (below timer resolution): APE is undefined"
    else:
        row["ape_note"] = device_note
    if calibrated is None:
        return ComparisonRow(**row, bound_check=BoundCheck(verdict=f"no verdict: {calibrated_note}"))
    if p50 <= 0:  # below timer resolution: no evidence the kernel beat anything
        return ComparisonRow(
            **row, bound_check=BoundCheck(verdict="no verdict: measured p50 is 0 s (below timer resolution)")
        )
    tol = bound_tolerance(stats)
    ratio = p50 / calibrated.latency_s
    fastest = fastest_check(row["measured_min_s"], calibrated.latency_s)
    check = BoundCheck(
        verdict="BOUND VIOLATION" if ratio < 1.0 - tol else "within bound",
        measured_over_bound=ratio,
        tolerance=tol,
        rule=BOUND_RULE,
        fastest_over_bound=fastest.over_bound,
        fastest_margin=fastest.margin,
        fastest_verdict=fastest.verdict,
    )
    return ComparisonRow(**row, bound_check=check)
