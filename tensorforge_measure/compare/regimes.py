"""Predicted against measured per regime and per operator.

Each measured timing is compared with the calibrated bound of its own regime: burst (and a
single-regime device's one regime) with the ceilings the burst probes measured, sustained with
the sustained probes' ceilings. Within a regime the device time (graph mode) is used where it
exists, the eager timing otherwise; both stay visible. Per operator, the trace window's device
time of each Core operator (in the primary timing's regime; graph replays where they were
attributed, else eager calls) is compared with the operator's calibrated bound. APE only on the
predicted device.
"""

from __future__ import annotations

from collections.abc import Mapping

from tensorforge_measure.capture.sections.comparison import (
    BoundCheck,
    OperatorComparison,
    OperatorsComparison,
    RegimeComparison,
)
from tensorforge_measure.capture.sections.measured import Measurement, WorkloadMeasurement
from tensorforge_measure.capture.sections.phases import TraceSummaryRecord
from tensorforge_measure.compare.workload import BOUND_RULE, ape, bound_tolerance, fastest_check
from tensorforge_measure.measure.stats import SampleStats

UNATTRIBUTED = "(unattributed)"


def timings(m: Measurement) -> dict[tuple[str, str], tuple[SampleStats, tuple[float, ...]]]:
    """Every timing of a measured row by (regime, mode): its stats and samples. Rows from before
    regimes existed hold one burst eager timing."""
    out = {(m.regime or "burst", m.mode or "eager"): (m.stats, m.samples_s)}
    for t in m.modes or ():
        out[(t.regime, t.mode)] = (t.stats, t.samples_s)
    return out


def _check(p50: float, bound: float, tolerance: float, fastest: float | None = None) -> BoundCheck:
    """The p50 against the bound beyond noise; with `fastest` (a regime's timing), also the
    soundness line the burst check has: the fastest sample against the bound with no tolerance.
    Why for regimes too: a sustained bound above the measurement by less than the tolerance (the
    H200's conv_fp16_3x3_64x512x14, p50 2.0% under its sustained bound on 2026-12-01, tolerance 2.8%)
    was 'within bound' with nothing saying the bound is not sound there."""
    ratio = p50 / bound
    sound = fastest_check(fastest, bound) if fastest is not None else None
    return BoundCheck(
        verdict="BOUND VIOLATION" if ratio < 1.0 - tolerance else "within bound",
        measured_over_bound=ratio,
        tolerance=tolerance,
        rule=BOUND_RULE.split(";")[0],  # (the words old captures hold; verify compares them)
        fastest_over_bound=sound.over_bound if sound else None,
        fastest_margin=sound.margin if sound else None,
        fastest_verdict=sound.verdict if sound else None,
    )


def regime_rows(
    measurement: WorkloadMeasurement | None,
    bounds: Mapping[str, float | None],
    same_device: bool,
    notes: Mapping[str, str | None],
) -> dict[str, RegimeComparison] | None:
    """Per regime measured: the p50 used (graph where it exists), the other mode's p50, the
    calibrated bound of that regime, APE and the bound check."""
    if not isinstance(measurement, Measurement):
        return None
    by_key = timings(measurement)
    rows: dict[str, RegimeComparison] = {}
    for regime in sorted({r for r, _ in by_key}):
        mode = "graph" if (regime, "graph") in by_key else "eager"
        stats, samples = by_key[(regime, mode)]
        p50 = stats.p50
        fastest = min(samples) if samples else stats.min
        bound = bounds.get(regime)
        if bound is None:
            check = BoundCheck(verdict=f"no verdict: {notes.get(regime) or 'no calibrated bound for this regime'}")
        else:
            check = _check(p50, bound, bound_tolerance(stats), fastest)
        rows[regime] = RegimeComparison(
            mode=mode,
            measured_p50_s=p50,
            eager_p50_s=by_key[(regime, "eager")][0].p50 if (regime, "eager") in by_key else None,
            graph_p50_s=by_key[(regime, "graph")][0].p50 if (regime, "graph") in by_key else None,
            predicted_calibrated_s=bound,
            ape_calibrated=ape(bound, p50) if bound is not None and same_device and p50 > 0 else None,
            bound_check=check,
        )
    return rows


def _trace_summary(m: Measurement) -> tuple[TraceSummaryRecord | None, str | None]:
    ops = m.operators
    if ops is None:
        return None, None
    if ops.source == "graph replay":
        return ops.graph, "graph"
    if ops.source == "eager":
        return ops.eager, "eager"
    return None, None


def operator_rows(
    analytical, calibrated, measurement: WorkloadMeasurement | None, same_device: bool, graph_p50_s: float | None
) -> OperatorsComparison | None:
    """Per Core operator: predicted bounds (analytical, calibrated; all its executions) against its
    measured time in the trace window; how much of the workload the operators cover: of the
    burst graph p50 where there is one, else of the primary (eager) p50."""
    if not isinstance(measurement, Measurement):
        return None
    summary, mode = _trace_summary(measurement)
    if summary is None:
        notes = measurement.operators.notes if measurement.operators is not None else ()
        return OperatorsComparison(available=False, reason="; ".join(notes) or "no trace window")
    measured = {o.operator: o for o in summary.operators}
    tol = bound_tolerance(measurement.stats)
    cal_ops = {op.name: op for op in (calibrated.operators if calibrated else ())}
    rows = []
    for op in analytical.operators if analytical else ():
        m, cal = measured.get(op.name), cal_ops.get(op.name)
        if m is None:
            check = BoundCheck(verdict="no verdict: no kernel of this operator in the trace")
        elif cal is None:
            check = BoundCheck(verdict="no verdict: no calibrated bound")
        elif cal.latency_s > 0:
            check = _check(m.time_p50_s, cal.latency_s, tol)
        else:
            check = BoundCheck(verdict="within bound", tolerance=tol)
        rows.append(
            OperatorComparison(
                operator=op.name,
                count=op.count,
                bottleneck=(cal or op).bottleneck,
                predicted_analytical_s=op.latency_s,
                predicted_calibrated_s=cal.latency_s if cal else None,
                measured_s=m.time_p50_s if m else None,
                kernels=m.activities if m else 0,
                ape_calibrated=ape(cal.latency_s, m.time_p50_s)
                if m and cal and same_device and m.time_p50_s > 0
                else None,
                bound_check=check,
            )
        )
    stray = measured.get(UNATTRIBUTED)
    total = sum(o.time_p50_s for o in summary.operators)
    regime = measurement.regime or "burst"
    whole = graph_p50_s or measurement.stats.p50
    of = "the burst graph-mode p50" if graph_p50_s else f"the {regime} {measurement.mode or 'eager'} p50"
    return OperatorsComparison(
        available=True,
        mode=mode,
        regime=regime,
        operators=tuple(rows),
        unattributed_s=stray.time_p50_s if stray else 0.0,
        sum_measured_s=total,
        graph_p50_s=graph_p50_s,
        whole_p50_s=whole,
        coverage=total / whole if whole else None,
        coverage_rule=(
            "sum of the operators' trace times (kernels or framework ops and the gaps before them) "
            f"over {of} of the whole workload"
        ),
        violations=tuple(r.operator for r in rows if r.bound_check.verdict == "BOUND VIOLATION"),
    )
