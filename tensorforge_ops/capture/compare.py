"""Predicted against measured: APE (same device only) and bound violations.

APE = |predicted - measured p50| / measured p50, only when the measuring device is the target
that was predicted. A measured p50 below the calibrated lower bound by more than the noise
tolerance is a bound violation: the model or the calibration is wrong, and it is shown loudly.
"""

from typing import Optional

from ..measure.stats import SampleStats
from .sections.comparison import BoundCheck, ComparisonRow
from .sections.measured import Measurement, WorkloadMeasurement

MIN_TOLERANCE = 0.02   # relative; widened to the measurement's own interquartile spread
BOUND_RULE = ("violation when measured p50 < calibrated lower bound x (1 - tolerance); "
              "tolerance = max(2%, measured rel. IQR)")


def ape(predicted_s: float, measured_s: float) -> float:
    return abs(predicted_s - measured_s) / measured_s


def bound_tolerance(stats: SampleStats) -> float:
    return max(MIN_TOLERANCE, float(stats.rel_iqr or 0.0))


def compare_workload(name: str, analytical, calibrated, measurement: Optional[WorkloadMeasurement],
                     same_device: bool, device_note: Optional[str], calibrated_note: str) -> ComparisonRow:
    bound = calibrated or analytical
    row = dict(predicted_analytical_s=analytical.latency_s if analytical else None,
               predicted_calibrated_s=calibrated.latency_s if calibrated else None,
               bottleneck=bound.bottleneck if bound else None,
               measured_p50_s=None, ape_analytical=None, ape_calibrated=None, ape_note=None)
    if not isinstance(measurement, Measurement):
        why = measurement.reason if measurement is not None else "not measured"
        return ComparisonRow(**{**row, "ape_note": f"no measurement: {why}"},
                             bound_check=BoundCheck(verdict=f"no verdict: no measurement ({why})"))
    p50 = measurement.stats.p50
    row["measured_p50_s"] = p50
    if same_device and p50 > 0:
        row["ape_analytical"] = ape(analytical.latency_s, p50) if analytical else None
        row["ape_calibrated"] = ape(calibrated.latency_s, p50) if calibrated else None
    elif same_device:  # all-zero samples (below timer resolution): APE has no denominator
        row["ape_note"] = "measured p50 is 0 s (below timer resolution): APE is undefined"
    else:
        row["ape_note"] = device_note
    if calibrated is None:
        return ComparisonRow(**row, bound_check=BoundCheck(verdict=f"no verdict: {calibrated_note}"))
    tol = bound_tolerance(measurement.stats)
    ratio = p50 / calibrated.latency_s
    check = BoundCheck(verdict="BOUND VIOLATION" if ratio < 1.0 - tol else "within bound",
                       measured_over_bound=ratio, tolerance=tol, rule=BOUND_RULE)
    return ComparisonRow(**row, bound_check=check)
