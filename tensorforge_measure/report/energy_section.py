"""The report's energy section: per workload the MEASURED joules per execution (the energy
counter) beside the PREDICTED energy floor (sound) and ESTIMATE (expected), the power
integration's agreement, and the sustained timing against the power-limited bound."""

from __future__ import annotations

from typing import Any

from tensorforge.api import percent, seconds


def _j(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6)):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value * 1e9:.4g} nJ"


def energy_facts(doc: dict[str, Any]) -> dict[str, Any] | None:
    pred = (doc["predicted"].get("energy") or {}).get("workloads", {})
    measured = (doc.get("measured") or {}).get("workloads", {}) if doc.get("measured", {}).get("available") else {}
    comparison = (doc.get("comparison") or {}).get("workloads", {})
    names = sorted(set(pred) | {n for n, m in measured.items() if m.get("energy")})
    if not names:
        return None
    rows = []
    for name in names:
        m = (measured.get(name) or {}).get("energy") or {}
        c = (comparison.get(name) or {}).get("energy") or {}
        p = pred.get(name) or {}
        integration = m.get("integration") or {}
        rows.append(
            {
                "name": name,
                "measured_j": m.get("joules_per_execution"),
                "reason": m.get("reason"),
                "mean_power_w": m.get("mean_power_w"),
                "joules_per_token": m.get("joules_per_token"),
                "floor_j": p.get("floor_j"),
                # the estimate the comparison used: the one matching the window's execution
                "estimate_j": c["estimate_j"] if c.get("estimate_j") is not None else p.get("estimate_j"),
                "execution": m.get("execution"),
                "floor_verdict": c.get("floor_verdict"),
                "estimate_error": c.get("estimate_error"),
                "counter_agreement": integration.get("counter_agreement"),
                "power_limited_bound_s": c.get("power_limited_bound_s"),
                "sustained_p50_s": c.get("sustained_p50_s"),
                "sustained_verdict": c.get("sustained_verdict"),
                "bound_from": p.get("sustained_bound_from"),
            }
        )
    energy = doc["predicted"].get("energy") or {}
    return {
        "source": energy.get("coefficients_source"),
        "note": doc["predicted"].get("energy_note"),
        "violations": list((doc.get("comparison") or {}).get("energy_floor_violations") or []),
        "rows": rows,
    }


HEADERS = [
    "workload",
    "MEASURED J/exec",
    "mean power",
    "PREDICTED floor",
    "ESTIMATE",
    "estimate error",
    "floor check",
    "counter vs power integral",
    "J/token",
    "sustained bound with the power limit (which)",
    "MEASURED sustained p50",
]


def _bound(r: dict[str, Any]) -> str:
    """The sustained bound, which bound it is, and BOUND ABOVE THE MEASUREMENT where it is (no
    tolerance: the bound is not sound there)."""
    if not r["power_limited_bound_s"]:
        return "-"
    text = seconds(r["power_limited_bound_s"]) + (f" ({r['bound_from']})" if r.get("bound_from") else "")
    verdict = r.get("sustained_verdict")
    return f"{text} {verdict}" if verdict and verdict != "within bound" else text


def _floor_check(r: dict[str, Any]) -> str:
    verdict = r["floor_verdict"] or "-"
    # without a measurement the MEASURED cell already gives the reason: say it once per row
    return "no verdict" if r["measured_j"] is None and verdict.startswith("no verdict") else verdict


def empty(e: dict[str, Any]) -> bool:
    """No joule measured, floored or estimated for any workload: a table of dashes."""
    return not any(r["measured_j"] is not None or r["floor_j"] or r["estimate_j"] for r in e["rows"])


def empty_line(e: dict[str, Any]) -> str:
    """The whole section in one line when `empty`: each distinct reason once."""
    reasons = sorted({r["reason"] or "not measured" for r in e["rows"]})
    predicted = f"; nothing predicted ({e['note']})" if e["note"] else ""
    return f"Energy per execution: nothing measured ({'; '.join(reasons)}){predicted}."


def table_rows(e: dict[str, Any]) -> list[list[str]]:
    return [
        [
            r["name"],
            (_j(r["measured_j"]) + (" (graph replays)" if r.get("execution") == "graph" else ""))
            if r["measured_j"] is not None
            else f"- ({r['reason'] or 'not measured'})",
            f"{r['mean_power_w']:.0f} W" if r["mean_power_w"] is not None else "-",
            _j(r["floor_j"]),
            _j(r["estimate_j"]),
            percent(r["estimate_error"]) if r["estimate_error"] is not None else "-",
            _floor_check(r),
            percent(r["counter_agreement"]) if r["counter_agreement"] is not None else "-",
            _j(r["joules_per_token"]) if r["joules_per_token"] is not None else "-",
            _bound(r),
            seconds(r["sustained_p50_s"]) if r["sustained_p50_s"] else "-",
        ]
        for r in e["rows"]
    ]


def intro(e: dict[str, Any]) -> str:
    basis = f"coefficients: {e['source']}" if e["source"] else f"no energy prediction: {e['note']}"
    violations = f"FLOOR VIOLATIONS: {', '.join(e['violations'])}" if e["violations"] else "no energy floor violations"
    return (
        "MEASURED joules per execution from the device's energy counter, in a window of its own (host-bound "
        "workloads: CUDA-graph replays, at the device's pace, compared with the estimate on the device time); the PREDICTED "
        f"floor is sound (no measurement may come in below it), the ESTIMATE is expected, not a bound ({basis}); "
        f"{violations}. docs/energy.md explains every figure."
    )


def markdown_lines(e: dict[str, Any]) -> list[str]:
    if empty(e):
        return ["", empty_line(e)]
    out = ["", "## Energy per execution", "", intro(e), "", "| " + " | ".join(HEADERS) + " |"]
    out.append("|" + "---|" * len(HEADERS))
    out += ["| " + " | ".join(row) + " |" for row in table_rows(e)]
    return out
