"""A readable summary of a capture, from the capture document alone."""

from typing import Any

from tensorforge.api import percent, seconds, si, table

from .compare import fastest_check, fastest_sample



def _telemetry_lines(diag: dict[str, Any]) -> list[str]:
    if not diag.get("available"):
        return [f"DIAGNOSTIC  unavailable: {diag.get('reason')}"]
    source = "NVML" if diag.get("source") in (None, "nvml") else diag["source"]
    lines = [f"DIAGNOSTIC  {source}, separate window after timing (context, never a verdict)"]
    for name, window in sorted(diag.get("windows", {}).items()):
        summary = window.get("summary") or {}
        if not window.get("available"):
            lines.append(f"  {name}: unavailable ({window.get('unavailable_reason') or window.get('reason')})")
            continue
        if window.get("headline"):   # a source that summarises itself (e.g. host-cpu)
            lines.append(f"  {name}: {window['headline']}")
            continue
        reasons = ", ".join(f"{r} {f * 100:.0f}%" for r, f in summary.get("reason_fractions", [])
                            if r != "GpuIdle") or "none"
        lines.append(f"  {name}: SM {summary.get('sm_clock_mhz_median')} MHz median, "
                     f"{summary.get('power_w_median')} W median, clock-event reasons seen: {reasons}")
    lines.append(f"  {diag.get('caveat')}")
    return lines


def _fastest(row: dict[str, Any], measurement: dict[str, Any]) -> dict[str, Any]:
    """The fastest sample against the calibrated bound, from the document's own samples (so
    captures written before the comparison recorded it are checked too)."""
    bound = row.get("predicted_calibrated_s")
    if not bound or measurement.get("status") != "ok":
        return {}
    return fastest_check(fastest_sample(measurement), bound)


def _fastest_cell(check: dict[str, Any]) -> str:
    """The fastest sample's margin over the calibrated bound, signed (no tolerance)."""
    margin = check.get("fastest_margin")
    if margin is None:
        return "-"
    return f"{margin * 100:+.2f}%" + (" BELOW" if margin < 0 else "")


def summary_text(doc: dict[str, Any]) -> str:
    pred = doc["predicted"]
    analytical = pred["analytical"]
    measured, cal = doc["measured"], doc["calibrated"]
    comp = doc.get("comparison", {})
    lines = [f"TensorForge capture  target {doc['target']} @ {doc['operating_point']}"
             f"{'' if doc.get('complete') else '  (INCOMPLETE)'}"]
    if measured.get("available"):
        lines.append(f"MEASURED    on {measured['device']['name']} ({measured['device']['fingerprint']}) "
                     f"with {measured.get('backend')}")
    else:
        lines.append(f"MEASURED    unavailable: {measured.get('reason')}")
    if cal.get("available"):
        c = cal["ceilings"]
        modes = ", ".join(f"{m} {si(v, 'FLOP/s')}" for m, v in sorted(c["compute"].items()))
        launch = seconds(c["launch_floor_s"]) if c.get("launch_floor_s") else "-"
        lines.append(f"CALIBRATED  {modes}; copy {si(c['dram_bytes_per_s'] or 0, 'B/s')}; launch floor {launch}"
                     f" ({'reused from ' + cal['measured_at'] if cal.get('reused') else 'measured ' + cal['measured_at']})")
    else:
        lines.append(f"CALIBRATED  unavailable: {cal.get('reason')}")
    if pred.get("calibrated_note"):
        lines.append(f"            calibrated bound: {pred['calibrated_note']}")
    elif pred.get("calibrated_target") and pred["calibrated_target"] != doc["target"]:
        lines.append(f"            calibrated bound is for the measuring device's target {pred['calibrated_target']}")
    rows, fastest = [], {}
    for w in analytical["workloads"]:
        r = comp.get("workloads", {}).get(w["name"], {})
        m = measured.get("workloads", {}).get(w["name"], {}) if measured.get("available") else {}
        check = r.get("bound_check", {}).get("verdict", "-")
        fastest[w["name"]] = _fastest(r, m)
        rows.append([w["name"], seconds(w["latency_s"]),
                     seconds(r.get("predicted_calibrated_s")) if r.get("predicted_calibrated_s") else "-",
                     seconds(r.get("measured_p50_s")) if r.get("measured_p50_s") else
                     ("failed" if m.get("status") == "failed" else "-"),
                     percent(r.get("ape_calibrated")), percent(r.get("ape_analytical")), w["bottleneck"],
                     check if not check.startswith("no verdict") else "no verdict",
                     _fastest_cell(fastest[w["name"]])])
    lines += ["", table(["workload", "PREDICTED analytical", "calibrated bound", "MEASURED p50",
                         "APE cal", "APE analytical", "bottleneck*", "bound check",
                         "fastest vs bound"], rows)]
    failed = {n: m["reason"] for n, m in measured.get("workloads", {}).items() if m.get("status") == "failed"}
    for name, reason in sorted(failed.items()):
        lines.append(f"failed: {name}: {reason}")
    if comp.get("device_note"):
        lines.append(f"APE: {comp['device_note']}")
    below = sorted(n for n, f in fastest.items() if f.get("fastest_verdict") == "FASTEST SAMPLE BELOW BOUND")
    if below:
        lines.append("FASTEST SAMPLE BELOW THE CALIBRATED BOUND (the bound is not sound there): " + ", ".join(
            f"{n} ({fastest[n]['fastest_margin'] * 100:+.2f}%)" for n in below))
    violations = comp.get("bound_violations", [])
    lines.append(f"BOUND VIOLATIONS: {', '.join(violations)}" if violations else
                 "bound violations: none" if measured.get("available") else "bound checks: no verdict (nothing measured)")
    lines.append("* predicted bottleneck: an analytical classification; telemetry does not prove it")
    lines += [""] + _telemetry_lines(doc["diagnostic"])
    prov = doc.get("provenance", {})
    lines.append(f"\nrun took {prov.get('duration_s', '-')} s; digest {doc.get('digest', {}).get('value', '-')[:16]}...")
    return "\n".join(lines) + "\n"
