"""Report facts of the measurement phases: every workload in both regimes (device and eager
time, host overhead, each against its own regime's bound) and, for one chosen workload, where
its time goes per Core operator (calibrated bound vs measured trace time, kernels that ran)."""

from typing import Any


def regime_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    comparison = doc.get("comparison", {}).get("workloads", {})
    measured = doc["measured"].get("workloads") or {} if doc["measured"].get("available") else {}
    rows = []
    for name, m in measured.items():
        if m.get("status") != "ok":
            continue
        regimes = comparison.get(name, {}).get("regimes") or {}
        for regime, r in sorted(regimes.items()):
            rows.append({"workload": name, "regime": regime, "mode": r["mode"], "graph_p50_s": r.get("graph_p50_s"),
                         "eager_p50_s": r.get("eager_p50_s"),
                         "host_overhead_s": (m.get("host_overhead_s") or {}).get(regime),
                         "bound_s": r.get("predicted_calibrated_s"), "ape": r.get("ape_calibrated"),
                         "check": (r.get("bound_check") or {}).get("verdict", "no verdict")})
    return rows


def choose_operators_workload(doc: dict[str, Any], named: str | None) -> dict[str, Any]:
    """The workload whose operators are shown: the named one, else the one with the most
    operators compared (ties: the longer measured p50)."""
    comparison = doc.get("comparison", {}).get("workloads", {})
    if named:
        return {"name": named, "why": "named with --operators"}
    candidates = [(len(r["operators"]["operators"]), r.get("measured_p50_s") or 0.0, n)
                  for n, r in comparison.items() if (r.get("operators") or {}).get("available")]
    if not candidates:
        return {"name": None, "why": "no workload has a per-operator trace"}
    _, _, name = max(candidates)
    return {"name": name, "why": "the workload with the most operators traced (ties: the longest p50)"}


def operator_facts(doc: dict[str, Any], named: str | None = None) -> dict[str, Any]:
    chosen = choose_operators_workload(doc, named)
    name = chosen["name"]
    row = doc.get("comparison", {}).get("workloads", {}).get(name, {}) if name else {}
    ops = row.get("operators") or {}
    if not ops.get("available"):
        reason = ops.get("reason") or chosen["why"]
        return {"workload": name, "available": False, "reason": reason, "chosen_by": chosen["why"]}
    m = doc["measured"]["workloads"][name]
    trace = (m.get("operators") or {}).get(ops["mode"]) or {}
    kernels = {o["operator"]: [k["name"] for k in o["kernels"]] for o in trace.get("operators", [])}
    rows = [{**r, "kernel_names": kernels.get(r["operator"], []),
             "ratio": (r["measured_s"] / r["predicted_calibrated_s"]) if r["measured_s"] and r["predicted_calibrated_s"] else None}
            for r in ops["operators"]]
    return {"workload": name, "available": True, "chosen_by": chosen["why"], "mode": ops["mode"],
            "regime": ops["regime"], "rows": rows, "unattributed_s": ops["unattributed_s"],
            "sum_measured_s": ops["sum_measured_s"], "whole_p50_s": ops.get("whole_p50_s", ops["graph_p50_s"]),
            "coverage_rule": ops.get("coverage_rule"), "coverage": ops["coverage"],
            "violations": ops["violations"], "notes": (m.get("operators") or {}).get("notes") or []}


def floor_facts(doc: dict[str, Any]) -> dict[str, float]:
    cal = doc["calibrated"]
    return dict(cal.get("floors") or {}) if cal.get("available") else {}


def measurement_facts(doc: dict[str, Any], operators_workload: str | None = None) -> dict[str, Any]:
    comparison = doc.get("comparison", {})
    return {"regimes": regime_rows(doc), "operators": operator_facts(doc, operators_workload),
            "floors": floor_facts(doc),
            "regime_bound_violations": comparison.get("regime_bound_violations") or [],
            "operator_bound_violations": comparison.get("operator_bound_violations") or []}
