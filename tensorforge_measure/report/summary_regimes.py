"""Summary lines for what the measurement phases add: named floors and per-regime ceilings
(CALIBRATED), every workload's timings by regime and mode with the host overhead and each
regime's bound check, and per-operator coverage and violations."""

from tensorforge.api import percent, seconds, si, table
from tensorforge_measure.capture.model import Capture
from tensorforge_measure.capture.sections.calibrated import Calibrated
from tensorforge_measure.capture.sections.measured import Measured, Measurement

FLOOR_NAMES = (
    ("kernel_interval_s", "kernel interval (graph)"),
    ("kernel_duration_s", "kernel duration"),
    ("kernel_gap_s", "kernel gap"),
    ("eager_event_floor_s", "eager event floor"),
    ("host_call_interval_s", "host call interval"),
)


def calibrated_lines(cal: Calibrated) -> list[str]:
    lines = []
    sustained = (cal.ceilings_by_regime or {}).get("sustained")
    if sustained:
        modes = ", ".join(f"{m} {si(v, 'FLOP/s')}" for m, v in sorted(sustained.compute.items()))
        copy = si(sustained.dram_bytes_per_s, "B/s") if sustained.dram_bytes_per_s else "-"
        lines.append(f"            sustained regime: {modes or '-'}; copy {copy} (the line above: burst regime)")
    floors = cal.floors or {}
    named = [f"{label} {seconds(floors[k])}" for k, label in FLOOR_NAMES if floors.get(k) is not None]
    if named:
        lines.append(f"            floors: {', '.join(named)}")
    return lines


def _p50(value: float | None) -> str:
    return seconds(value) if value else "-"


def regime_lines(capture: Capture) -> list[str]:
    measured, comp = capture.measured, capture.comparison
    if not isinstance(measured, Measured) or comp is None:
        return []
    rows, notes = [], []
    for name, m in measured.workloads.items():
        if not isinstance(m, Measurement) or m.regime is None:  # before phases: nothing to add
            continue
        row = comp.workloads.get(name)
        regimes = (row.regimes if row else None) or {}
        burst = regimes.get("burst") or regimes.get("single")
        sus = regimes.get("sustained")
        overhead = (m.host_overhead_s or {}).get("burst")
        check = sus.bound_check.verdict if sus else "-"
        ops = row.operators if row else None
        rows.append(
            [
                name,
                _p50(burst.graph_p50_s if burst else None),
                _p50(burst.eager_p50_s if burst else None),
                seconds(overhead) if overhead is not None else "-",
                _p50(sus.graph_p50_s if sus else None),
                _p50(sus.eager_p50_s if sus else None),
                _p50(sus.predicted_calibrated_s if sus else None),
                "no verdict" if check.startswith("no verdict") else check,
                percent(ops.coverage) if ops and ops.available else "-",
            ]
        )
        if m.regimes_note:
            notes.append(m.regimes_note)
        if m.graph is not None and not m.graph.captured and m.graph.reason:
            notes.append(f"{name}: {m.graph.reason}")
        if m.steady is not None and not m.steady.reached:
            notes.append(f"{name}: sustained timing began before the device was steady ({m.steady.rule})")
    if not rows:
        return []
    lines = [
        "",
        "MEASURED by regime and mode (graph: CUDA-graph replay, device time; eager: host included)",
        table(
            [
                "workload",
                "burst graph",
                "burst eager",
                "host overhead",
                "sustained graph",
                "sustained eager",
                "sustained bound",
                "sustained check",
                "ops cover",
            ],
            rows,
        ),
    ]
    lines += sorted(set(notes))
    violations = comp.regime_bound_violations or ()
    lines.append(
        f"BOUND VIOLATIONS by regime: {', '.join(violations)}"
        if violations
        else "bound violations by regime (each against its own regime's bound): none"
    )
    if comp.operator_bound_violations:
        lines.append(f"OPERATOR BOUND VIOLATIONS: {', '.join(comp.operator_bound_violations)}")
    lines.append(
        "ops cover: operators' trace times summed, over the burst graph p50 (else the primary "
        "eager p50); per operator: `tensorforge report`"
    )
    return lines
