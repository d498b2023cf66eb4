"""Report facts of the measurement phases: every workload in both regimes (device and eager
time, host overhead, each against its own regime's bound) and, for one chosen workload, where
its time goes per Core operator (calibrated bound vs measured trace time, kernels that ran)."""

from typing import Any

from tensorforge_measure.capture.model import Capture
from tensorforge_measure.capture.sections.calibrated import Calibrated
from tensorforge_measure.capture.sections.measured import Measured, Measurement


def regime_rows(capture: Capture) -> list[dict[str, Any]]:
    comparison = capture.comparison.workloads if capture.comparison else {}
    measured = capture.measured.workloads if isinstance(capture.measured, Measured) else {}
    rows = []
    for name, m in measured.items():
        row = comparison.get(name)
        if not isinstance(m, Measurement) or row is None or not row.regimes:
            continue
        for regime, r in sorted(row.regimes.items()):
            rows.append(
                {
                    "workload": name,
                    "regime": regime,
                    "mode": r.mode,
                    "graph_p50_s": r.graph_p50_s,
                    "eager_p50_s": r.eager_p50_s,
                    "host_overhead_s": (m.host_overhead_s or {}).get(regime),
                    "bound_s": r.predicted_calibrated_s,
                    "ape": r.ape_calibrated,
                    "check": r.bound_check.verdict,
                }
            )
    return rows


def choose_operators_workload(capture: Capture, named: str | None) -> dict[str, Any]:
    """The workload whose operators are shown: the named one, else the one with the most
    operators compared (ties: the longer measured p50)."""
    if named:
        return {"name": named, "why": "named with --operators"}
    comparison = capture.comparison.workloads if capture.comparison else {}
    candidates = [
        (len(r.operators.operators or ()), r.measured_p50_s or 0.0, n)
        for n, r in comparison.items()
        if r.operators is not None and r.operators.available
    ]
    if not candidates:
        return {"name": None, "why": "no workload has a per-operator trace"}
    return {"name": max(candidates)[2], "why": "the workload with the most operators traced (ties: the longest p50)"}


def operator_facts(capture: Capture, named: str | None = None) -> dict[str, Any]:
    chosen = choose_operators_workload(capture, named)
    name = chosen["name"]
    row = capture.comparison.workloads.get(name) if capture.comparison and name else None
    ops = row.operators if row else None
    if ops is None or not ops.available:
        reason = (ops.reason if ops else None) or chosen["why"]
        return {"workload": name, "available": False, "reason": reason, "chosen_by": chosen["why"]}
    m = capture.measured.workloads[name] if isinstance(capture.measured, Measured) else None
    trace = None
    if isinstance(m, Measurement) and m.operators is not None:
        trace = m.operators.graph if ops.mode == "graph" else m.operators.eager
    kernels = {o.operator: [k.name for k in o.kernels] for o in (trace.operators if trace else ())}
    rows = [
        {
            "operator": r.operator,
            "count": r.count,
            "kernels": r.kernels,
            "bottleneck": r.bottleneck,
            "predicted_analytical_s": r.predicted_analytical_s,
            "predicted_calibrated_s": r.predicted_calibrated_s,
            "measured_s": r.measured_s,
            "ape_calibrated": r.ape_calibrated,
            "bound_check": {"verdict": r.bound_check.verdict},
            "kernel_names": kernels.get(r.operator, []),
            "ratio": (r.measured_s / r.predicted_calibrated_s) if r.measured_s and r.predicted_calibrated_s else None,
        }
        for r in ops.operators or ()
    ]
    # a window of several ranks (torch-distributed) times ranges on every rank, not kernels; captures
    # written before the two views were one record lack the sums and the regime (burst: absent means burst)
    several_ranks = any(r.fastest_rank_s is not None for r in ops.operators or ())
    measured_sum = sum(r.measured_s for r in ops.operators or () if r.measured_s is not None)
    return {
        "workload": name,
        "available": True,
        "chosen_by": chosen["why"],
        "mode": ops.mode,
        "regime": ops.regime or "burst",
        "method": ops.method if several_ranks else None,
        "rows": rows,
        "unattributed_s": ops.unattributed_s,
        "sum_measured_s": ops.sum_measured_s if ops.sum_measured_s is not None else measured_sum,
        "whole_p50_s": ops.whole_p50_s
        if ops.whole_p50_s is not None
        else (measured_sum / ops.coverage if ops.coverage else None),  # the window's own whole call
        "coverage_rule": ops.coverage_rule
        or ("the operators' slowest-rank times over the slowest rank's whole call" if several_ranks else None),
        "coverage": ops.coverage,
        "violations": list(ops.violations or ()),
        "notes": list(m.operators.notes) if isinstance(m, Measurement) and m.operators else [],
    }


def measurement_facts(capture: Capture, operators_workload: str | None = None) -> dict[str, Any]:
    comparison = capture.comparison
    cal = capture.calibrated
    return {
        "regimes": regime_rows(capture),
        "operators": operator_facts(capture, operators_workload),
        "floors": dict(cal.floors or {}) if isinstance(cal, Calibrated) else {},
        "regime_bound_violations": list(comparison.regime_bound_violations or ()) if comparison else [],
        "operator_bound_violations": list(comparison.operator_bound_violations or ()) if comparison else [],
    }
