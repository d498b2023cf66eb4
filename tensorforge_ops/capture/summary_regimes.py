"""Summary lines for what the measurement phases add: named floors and per-regime ceilings
(CALIBRATED), every workload's timings by regime and mode with the host overhead and each
regime's bound check, and per-operator coverage and violations."""

from typing import Any

from tensorforge.api import percent, seconds, si, table

FLOOR_NAMES = (("kernel_interval_s", "kernel interval (graph)"), ("kernel_duration_s", "kernel duration"),
               ("kernel_gap_s", "kernel gap"), ("eager_event_floor_s", "eager event floor"),
               ("host_call_interval_s", "host call interval"))


def calibrated_lines(cal: dict[str, Any]) -> list[str]:
    lines = []
    sustained = (cal.get("ceilings_by_regime") or {}).get("sustained")
    if sustained:
        modes = ", ".join(f"{m} {si(v, 'FLOP/s')}" for m, v in sorted(sustained.get("compute", {}).items()))
        copy = si(sustained["dram_bytes_per_s"], "B/s") if sustained.get("dram_bytes_per_s") else "-"
        lines.append(f"            sustained regime: {modes or '-'}; copy {copy} (the line above: burst regime)")
    floors = cal.get("floors") or {}
    named = [f"{label} {seconds(floors[k])}" for k, label in FLOOR_NAMES if floors.get(k) is not None]
    if named:
        lines.append(f"            floors: {', '.join(named)}")
    return lines


def _p50(value) -> str:
    return seconds(value) if value else "-"


def regime_lines(doc: dict[str, Any]) -> list[str]:
    measured, comp = doc["measured"], doc.get("comparison", {})
    if not measured.get("available"):
        return []
    rows, notes = [], []
    for name, m in measured.get("workloads", {}).items():
        if m.get("status") != "ok" or not m.get("modes") and m.get("regime", "burst") == "burst" and not m.get("operators"):
            continue
        regimes = comp.get("workloads", {}).get(name, {}).get("regimes", {})
        burst = regimes.get("burst") or regimes.get("single") or {}
        sus = regimes.get("sustained") or {}
        overhead = (m.get("host_overhead_s") or {}).get("burst")
        check = (sus.get("bound_check") or {}).get("verdict", "-")
        ops = comp.get("workloads", {}).get(name, {}).get("operators") or {}
        rows.append([name, _p50(burst.get("graph_p50_s")), _p50(burst.get("eager_p50_s")),
                     seconds(overhead) if overhead is not None else "-",
                     _p50(sus.get("graph_p50_s")), _p50(sus.get("eager_p50_s")),
                     _p50(sus.get("predicted_calibrated_s")), "no verdict" if check.startswith("no verdict") else check,
                     percent(ops.get("coverage")) if ops.get("available") else "-"])
        if m.get("regimes_note"):
            notes.append(m["regimes_note"])
        if not (m.get("graph") or {}).get("captured", True) and (m.get("graph") or {}).get("reason"):
            notes.append(f"{name}: {m['graph']['reason']}")
        if m.get("steady") and not m["steady"].get("reached"):
            notes.append(f"{name}: sustained timing began before the device was steady ({m['steady']['rule']})")
    if not rows:
        return []
    lines = ["", "MEASURED by regime and mode (graph: CUDA-graph replay, device time; eager: host included)",
             table(["workload", "burst graph", "burst eager", "host overhead", "sustained graph", "sustained eager",
                    "sustained bound", "sustained check", "ops cover"], rows)]
    lines += sorted(set(notes))
    violations = comp.get("regime_bound_violations") or []
    lines.append(f"BOUND VIOLATIONS by regime: {', '.join(violations)}" if violations else
                 "bound violations by regime (each against its own regime's bound): none")
    op_violations = comp.get("operator_bound_violations") or []
    if op_violations:
        lines.append(f"OPERATOR BOUND VIOLATIONS: {', '.join(op_violations)}")
    lines.append("ops cover: operators' trace times summed, over the burst graph p50 (else the primary "
                 "eager p50); per operator: `tensorforge report`")
    return lines
