"""Predicted against measured per regime and per operator.

Each measured timing is compared with the calibrated bound of its own regime: burst (and a
single-regime device's one regime) with the ceilings the burst probes measured, sustained with
the sustained probes' ceilings. Within a regime the device time (graph mode) is used where it
exists, the eager timing otherwise; both stay visible. Per operator, the trace window's device
time of each Core operator (burst regime; graph replays where they were attributed, else eager
calls) is compared with the operator's calibrated bound. APE only on the predicted device.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

from .compare import MIN_TOLERANCE, ape, bound_tolerance

UNATTRIBUTED = "(unattributed)"


def timings(measurement: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """Every timing of a measured row by (regime, mode); rows from before regimes existed hold
    one burst eager timing."""
    out = {(measurement.get("regime", "burst"), measurement.get("mode", "eager")): measurement}
    for m in measurement.get("modes") or ():
        out[(m["regime"], m["mode"])] = m
    return out


def _check(p50: float, bound: float, stats: Mapping[str, Any]) -> dict[str, Any]:
    tol = bound_tolerance(dict(stats))
    ratio = p50 / bound
    return {"verdict": "BOUND VIOLATION" if ratio < 1.0 - tol else "within bound",
            "measured_over_bound": ratio, "tolerance": tol}


def regime_rows(measurement: Mapping[str, Any] | None, bounds: Mapping[str, float | None],
                same_device: bool, notes: Mapping[str, str | None]) -> dict[str, dict[str, Any]]:
    """Per regime measured: the p50 used (graph where it exists), the other mode's p50, the
    calibrated bound of that regime, APE and the bound check."""
    if not measurement or measurement.get("status") != "ok":
        return {}
    by_key = timings(measurement)
    rows: dict[str, dict[str, Any]] = {}
    for regime in sorted({r for r, _ in by_key}):
        mode = "graph" if (regime, "graph") in by_key else "eager"
        used = by_key[(regime, mode)]
        p50 = used["stats"]["p50"]
        row: dict[str, Any] = {"mode": mode, "measured_p50_s": p50,
                               "eager_p50_s": by_key[(regime, "eager")]["stats"]["p50"] if (regime, "eager") in by_key else None,
                               "graph_p50_s": by_key[(regime, "graph")]["stats"]["p50"] if (regime, "graph") in by_key else None,
                               "predicted_calibrated_s": bounds.get(regime), "ape_calibrated": None}
        bound = bounds.get(regime)
        if bound is None:
            row["bound_check"] = {"verdict": f"no verdict: {notes.get(regime) or 'no calibrated bound for this regime'}"}
        else:
            if same_device and p50 > 0:
                row["ape_calibrated"] = ape(bound, p50)
            row["bound_check"] = _check(p50, bound, used["stats"])
        rows[regime] = row
    return rows


def _trace_summary(measurement: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str | None]:
    ops = measurement.get("operators") or {}
    source = ops.get("source")
    if source == "graph replay":
        return ops.get("graph"), "graph"
    if source == "eager":
        return ops.get("eager"), "eager"
    return None, None


def operator_rows(analytical, calibrated, measurement: Mapping[str, Any] | None, same_device: bool,
                  graph_p50_s: float | None) -> dict[str, Any] | None:
    """Per Core operator: predicted bounds (analytical, calibrated; all its executions) against its
    measured time in the trace window (taken in the primary timing's regime); how much of the
    workload the operators cover: of the burst graph p50 where there is one, else of the primary
    (eager) p50."""
    if not measurement or measurement.get("status") != "ok":
        return None
    summary, mode = _trace_summary(measurement)
    if summary is None:
        notes = (measurement.get("operators") or {}).get("notes") or ["no trace window"]
        return {"available": False, "reason": "; ".join(notes)}
    measured = {o["operator"]: o for o in summary["operators"]}
    tol = max(MIN_TOLERANCE, float(measurement["stats"].get("rel_iqr") or 0.0))
    rows: list[dict[str, Any]] = []
    preds = {op.name: op for op in (analytical.operators if analytical else ())}
    cal_ops = {op.name: op for op in (calibrated.operators if calibrated else ())}
    for name, op in preds.items():
        m = measured.get(name)
        cal = cal_ops.get(name)
        row: dict[str, Any] = {"operator": name, "count": op.count, "bottleneck": (cal or op).bottleneck,
                               "predicted_analytical_s": op.latency_s,
                               "predicted_calibrated_s": cal.latency_s if cal else None,
                               "measured_s": m["time_p50_s"] if m else None,
                               "kernels": m["activities"] if m else 0,
                               "ape_calibrated": None, "bound_check": None}
        if m is None:
            row["bound_check"] = {"verdict": "no verdict: no kernel of this operator in the trace"}
        elif cal is not None:
            if same_device and m["time_p50_s"] > 0:
                row["ape_calibrated"] = ape(cal.latency_s, m["time_p50_s"])
            check = _check(m["time_p50_s"], cal.latency_s, {"rel_iqr": tol}) if cal.latency_s > 0 else \
                {"verdict": "within bound", "measured_over_bound": None, "tolerance": tol}
            row["bound_check"] = check
        rows.append(row)
    stray = measured.get(UNATTRIBUTED)
    total = sum(o["time_p50_s"] for o in summary["operators"])
    regime = measurement.get("regime", "burst")
    whole = graph_p50_s or measurement["stats"]["p50"]
    of = "the burst graph-mode p50" if graph_p50_s else f"the {regime} {measurement.get('mode', 'eager')} p50"
    return {"available": True, "mode": mode, "regime": regime, "operators": rows,
            "unattributed_s": stray["time_p50_s"] if stray else 0.0,
            "sum_measured_s": total,
            "graph_p50_s": graph_p50_s, "whole_p50_s": whole,
            "coverage": total / whole if whole else None,
            "coverage_rule": "sum of the operators' trace times (kernels or framework ops and the gaps "
                             f"before them) over {of} of the whole workload",
            "violations": [r["operator"] for r in rows if (r["bound_check"] or {}).get("verdict") == "BOUND VIOLATION"]}
