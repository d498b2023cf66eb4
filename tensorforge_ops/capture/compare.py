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

MIN_TOLERANCE = 0.02   # relative; widened to the measurement's own interquartile spread


def ape(predicted_s: float, measured_s: float) -> float:
    return abs(predicted_s - measured_s) / measured_s


def bound_tolerance(stats: dict[str, Any]) -> float:
    return max(MIN_TOLERANCE, float(stats.get("rel_iqr") or 0.0))


def fastest_sample(measurement: dict[str, Any]) -> float | None:
    """The fastest iteration measured: the raw samples' minimum (the stats' min if samples
    were not kept)."""
    samples = measurement.get("samples_s") or []
    return min(samples) if samples else measurement.get("stats", {}).get("min")


def fastest_check(fastest: float | None, bound_s: float) -> dict[str, Any]:
    """Margin of the fastest sample over the bound: (fastest - bound) / bound, no tolerance."""
    if fastest is None or bound_s <= 0:
        return {"fastest_verdict": "no verdict: no samples"}
    margin = fastest / bound_s - 1.0
    return {"fastest_over_bound": fastest / bound_s, "fastest_margin": margin,
            "fastest_verdict": "FASTEST SAMPLE BELOW BOUND" if margin < 0 else "fastest sample within bound"}


def compare_workload(name: str, analytical, calibrated, measurement: dict[str, Any] | None,
                     same_device: bool, device_note: str | None, calibrated_note: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "predicted_analytical_s": analytical.latency_s if analytical else None,
        "predicted_calibrated_s": calibrated.latency_s if calibrated else None,
        "bottleneck": (calibrated or analytical).bottleneck if (calibrated or analytical) else None,
        "measured_p50_s": None, "ape_analytical": None, "ape_calibrated": None,
        "ape_note": None,
    }
    if not measurement or measurement.get("status") != "ok":
        why = measurement.get("reason") if measurement else "not measured"
        row["ape_note"] = f"no measurement: {why}"
        row["bound_check"] = {"verdict": f"no verdict: no measurement ({why})"}
        return row
    p50 = measurement["stats"]["p50"]
    row["measured_p50_s"] = p50
    row["measured_min_s"] = fastest_sample(measurement)
    if same_device and p50 > 0:
        row["ape_analytical"] = ape(analytical.latency_s, p50) if analytical else None
        row["ape_calibrated"] = ape(calibrated.latency_s, p50) if calibrated else None
    elif same_device:  # all-zero samples (below timer resolution): APE has no denominator
        row["ape_note"] = "measured p50 is 0 s (below timer resolution): APE is undefined"
    else:
        row["ape_note"] = device_note
    if calibrated is None:
        row["bound_check"] = {"verdict": f"no verdict: {calibrated_note}"}
        return row
    tol = bound_tolerance(measurement["stats"])
    ratio = p50 / calibrated.latency_s
    row["bound_check"] = {
        "verdict": "BOUND VIOLATION" if ratio < 1.0 - tol else "within bound",
        "measured_over_bound": ratio, "tolerance": tol,
        "rule": "violation when measured p50 < calibrated lower bound x (1 - tolerance); "
                "tolerance = max(2%, measured rel. IQR); soundness: the fastest sample against the "
                "bound with no tolerance",
        **fastest_check(row["measured_min_s"], calibrated.latency_s),
    }
    return row
