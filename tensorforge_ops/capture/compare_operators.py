"""Predicted against measured per Core operator, where a backend measured operators (the
torch-distributed backend's operator window: `operators` in the MEASURED row).

Each operator's calibrated bound (all its executions in one call) is checked against its
measured time. Where the backend measured several ranks: a device-local operator against the
fastest rank's time (`fastest_rank_p50_s`: every rank computes its share alone, so each must
take at least the bound and the fastest is the strictest test); a collective against the slowest
rank's, because a collective is one operation of all ranks together: a rank that arrives late
finds its peers' data already sent and finishes sooner than the operation took, so its own
share is no measure of it (the whole operation lasts until the last rank is done). APE only on
the predicted device, against the slowest rank's time (what the workload waits for).
"""

from collections.abc import Mapping
from typing import Any

from .compare import MIN_TOLERANCE, ape


def operator_rows(analytical, calibrated, measurement: Mapping[str, Any] | None,
                  same_device: bool) -> dict[str, Any] | None:
    if not measurement or measurement.get("status") != "ok":
        return None
    window = measurement.get("operators") or {}
    summary = window.get(window.get("source") or "eager") or {}
    if not summary.get("operators"):
        return {"available": False, "reason": "; ".join(window.get("notes") or ["no operator window"])}
    measured = {o["operator"]: o for o in summary["operators"]}
    tol = max(MIN_TOLERANCE, float(measurement["stats"].get("rel_iqr") or 0.0))
    cal_ops = {op.name: op for op in (calibrated.operators if calibrated else ())}
    rows: list[dict[str, Any]] = []
    for op in analytical.operators:
        m, cal = measured.get(op.name), cal_ops.get(op.name)
        row: dict[str, Any] = {"operator": op.name, "count": op.count, "bottleneck": (cal or op).bottleneck,
                               "predicted_analytical_s": op.latency_s,
                               "predicted_calibrated_s": cal.latency_s if cal else None,
                               "measured_s": m["time_p50_s"] if m else None,
                               "fastest_rank_s": m.get("fastest_rank_p50_s") if m else None,
                               "ape_calibrated": None}
        if m is None:
            row["bound_check"] = {"verdict": "no verdict: the operator window did not see this operator"}
        elif cal is None:
            row["bound_check"] = {"verdict": "no verdict: no calibrated bound"}
        else:
            collective = op.problem_type == "CollectiveProblem"
            strictest = m["time_p50_s"] if collective else m.get("fastest_rank_p50_s", m["time_p50_s"])
            if same_device and m["time_p50_s"] > 0:
                row["ape_calibrated"] = ape(cal.latency_s, m["time_p50_s"])
            ratio = strictest / cal.latency_s if cal.latency_s > 0 else None
            row["bound_check"] = {"verdict": "BOUND VIOLATION" if ratio is not None and ratio < 1.0 - tol
                                  else "within bound", "measured_over_bound": ratio, "tolerance": tol}
        rows.append(row)
    return {"available": True, "mode": window.get("source"), "method": window.get("method"),
            "operators": rows, "coverage": summary.get("coverage"),
            "rule": "violation when an operator's median (fastest rank; a collective: slowest rank) < its "
                    "calibrated bound x (1 - tolerance); tolerance = max(2%, the workload's rel. IQR)",
            "violations": [r["operator"] for r in rows if r["bound_check"]["verdict"] == "BOUND VIOLATION"]}
