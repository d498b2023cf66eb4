"""Predicted against measured per Core operator, where a backend measured operators (the
torch-distributed backend's operator window: `ranks.operators` of a MEASURED row).

Each operator's calibrated bound (all its executions in one call) is checked against its
measured time. Where the backend measured several ranks: a device-local operator against the
fastest rank's time (`fastest_rank_p50_s`: every rank computes its share alone, so each must
take at least the bound and the fastest is the strictest test); a collective against the slowest
rank's, because a collective is one operation of all ranks together: a rank that arrives late
finds its peers' data already sent and finishes sooner than the operation took, so its own
share is no measure of it (the whole operation lasts until the last rank is done). APE only on
the predicted device, against the slowest rank's time (what the workload waits for).
"""

from tensorforge_measure.capture.sections.comparison import BoundCheck, OperatorComparison, OperatorsComparison
from tensorforge_measure.capture.sections.measured import Measurement
from tensorforge_measure.compare.workload import MIN_TOLERANCE, ape

RULE = (
    "violation when an operator's median (fastest rank; a collective: slowest rank) < its calibrated "
    "bound x (1 - tolerance); tolerance = max(2%, the workload's rel. IQR)"
)


def operator_rows(analytical, calibrated, measurement, same_device: bool) -> OperatorsComparison | None:
    """None where nothing measured operators (a single-device backend, a failed workload)."""
    if not isinstance(measurement, Measurement) or measurement.ranks is None:
        return None
    window = measurement.ranks.operators
    if window is None or not window.eager.operators:
        notes = "; ".join(window.notes) if window is not None else "no operator window ran"
        return OperatorsComparison(available=False, reason=notes or "the window saw no operator")
    measured = {o.operator: o for o in window.eager.operators}
    tol = max(MIN_TOLERANCE, float(measurement.stats.rel_iqr or 0.0))
    cal_ops = {op.name: op for op in (calibrated.operators if calibrated else ())}
    rows = []
    for op in analytical.operators:
        m, cal = measured.get(op.name), cal_ops.get(op.name)
        if m is None:
            check = BoundCheck(verdict="no verdict: the operator window did not see this operator")
        elif cal is None:
            check = BoundCheck(verdict="no verdict: no calibrated bound")
        else:
            strictest = m.time_p50_s if op.problem_type == "CollectiveProblem" else m.fastest_rank_p50_s
            ratio = strictest / cal.latency_s if cal.latency_s > 0 else None
            check = BoundCheck(
                verdict="BOUND VIOLATION" if ratio is not None and ratio < 1.0 - tol else "within bound",
                measured_over_bound=ratio,
                tolerance=tol,
            )
        rows.append(
            OperatorComparison(
                operator=op.name,
                count=op.count,
                bottleneck=(cal or op).bottleneck,
                predicted_analytical_s=op.latency_s,
                predicted_calibrated_s=cal.latency_s if cal else None,
                measured_s=m.time_p50_s if m else None,
                fastest_rank_s=m.fastest_rank_p50_s if m else None,
                ape_calibrated=ape(cal.latency_s, m.time_p50_s)
                if (m and cal and same_device and m.time_p50_s > 0)
                else None,
                bound_check=check,
            )
        )
    return OperatorsComparison(
        available=True,
        mode=window.source,
        method=window.method,
        operators=tuple(rows),
        sum_measured_s=sum(o.time_p50_s for o in window.eager.operators),
        whole_p50_s=window.eager.iteration_p50_s,
        coverage=window.eager.coverage,
        coverage_rule=(
            "sum of the operators' slowest-rank times over the slowest rank's whole call "
            "(above 1 when the slowest rank differs from operator to operator)"
        ),
        rule=RULE,
        violations=tuple(r.operator for r in rows if r.bound_check.verdict == "BOUND VIOLATION"),
    )
