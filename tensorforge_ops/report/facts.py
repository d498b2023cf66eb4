"""Everything the report says, derived from the capture alone: numbers, and sentences whose
claims are decided by those numbers (never stronger than the evidence)."""

from typing import Any

from tensorforge.api import VECTOR_EXECUTES, seconds

from ..telemetry.nvml import SLOWDOWN_REASONS
from .choice import choose

LABELS = (
    ("PREDICTED", "Analytical Core output derived from workload, mapping, traffic and timing assumptions.",
     "the Core, deterministic, no device"),
    ("MEASURED", "Physical PyTorch latency, throughput and device memory from this device.",
     "a measurement backend on a real device"),
    ("CALIBRATED", "Empirical compute and memory-copy ceilings measured by dedicated probes.",
     "calibration probes on the same device"),
    ("DIAGNOSTIC", "Telemetry context from a separate execution window.",
     "a telemetry source; never used for a verdict"),
    ("POLICY", "Decisions that exist only when their required evidence exists.",
     "policies reading the above"),
)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _workload_rows(doc) -> list[dict[str, Any]]:
    measured = doc["measured"]
    rows = doc.get("comparison", {}).get("workloads", {})
    out = []
    for w in doc["predicted"]["analytical"]["workloads"]:
        m = (measured.get("workloads") or {}).get(w["name"]) if measured.get("available") else None
        r = rows.get(w["name"], {})
        ok = bool(m and m.get("status") == "ok")
        stats = m["stats"] if ok and m else {}
        p50 = stats.get("p50")
        out.append({
            "name": w["name"], "spec": w["spec"], "flops": w["flops"], "compulsory_bytes": w["compulsory_bytes"],
            "operators": len(w["operators"]),
            "intensity": w["flops"] / w["compulsory_bytes"] if w["compulsory_bytes"] else None,
            "analytical_s": w["latency_s"], "calibrated_s": r.get("predicted_calibrated_s"),
            "measured_p50_s": p50, "p10_s": stats.get("p10"), "p90_s": stats.get("p90"), "n": stats.get("n"),
            "ape_analytical": r.get("ape_analytical"), "ape_calibrated": r.get("ape_calibrated"),
            # the calibrated bound's classification where there is one, as in the path section
            "bottleneck": r.get("bottleneck") or w["bottleneck"], "bound_check": (r.get("bound_check") or {}).get("verdict", "no verdict"),
            "status": "not measured" if m is None else m.get("status"),
            "failure": m.get("reason") if m and not ok else None,
            # the math mode of the operator doing most of the work (not, say, a norm's fp32)
            "math_mode": max(w["operators"], key=lambda o: o["flops"])["math_mode"] if w["operators"] else None,
            "achieved_flops_per_s": w["flops"] / p50 if p50 else None,
        })
    return out


def _comparison_story(row: dict[str, Any] | None, device: str | None, primary: bool) -> str:
    if row is None:
        return ("No workload in this capture to compare." if primary else
                "Only one workload in this capture: there is nothing to contrast it with.")
    name = row["name"]
    if row["measured_p50_s"] is None:
        return f"{name} was not measured ({row['failure'] or row['status']}): only the prediction is shown."
    if row["bound_check"] == "BOUND VIOLATION":
        return (f"The measured p50 of {name} fell below its calibrated lower bound: a bound violation. "
                "The model or the calibration is wrong for this workload.")
    ape = row["ape_calibrated"]
    if ape is None:
        return (f"{name} was measured on a device other than the predicted target, so no APE is "
                "computed; the prediction and the measurement are shown side by side only.")
    where = f"one {device}" if device else "one device"
    if primary:
        return (f"On this capture, the calibrated analytical lower bound of {name} was within "
                f"{_pct(ape)} of the measured p50. This is one workload on {where}, not a claim about "
                "all such workloads or devices.")
    if ape > 0.5 and row["measured_p50_s"] < 50e-6:
        return (f"{name} diverges sharply (APE {_pct(ape)}: predicted {seconds(row['calibrated_s'])}, measured "
                f"{seconds(row['measured_p50_s'])}). This is consistent with fixed framework or kernel-launch "
                "overhead absent from the lower-bound model, but this experiment does not establish that "
                "explanation as causal.")
    return (f"{name}: APE {_pct(ape)} between the calibrated lower bound and the measured p50; "
            "the capture does not establish why they differ.")


def _ceilings(doc) -> list[dict[str, Any]]:
    sheet = doc["predicted"]["analytical"]["ceilings"]
    cal = doc["calibrated"].get("ceilings") if doc["calibrated"].get("available") else None
    rows = []
    for mode, peak in sorted(sheet["compute"].items()):
        measured = (cal or {}).get("compute", {}).get(mode)
        rows.append({"what": f"compute {mode}", "unit": "FLOP/s", "datasheet": peak, "calibrated": measured,
                     "fraction": measured / peak if measured else None})
    dram = (cal or {}).get("dram_bytes_per_s")
    rows.append({"what": "memory (copy, read + write)", "unit": "B/s", "datasheet": sheet["dram_bytes_per_s"],
                 "calibrated": dram, "fraction": dram / sheet["dram_bytes_per_s"] if dram else None})
    return rows


TILE_ORDER = ("m", "n", "k", "q", "kv", "d")


def _ordered_tile(tile: dict[str, int]) -> list[list[Any]]:
    """Tile extents in loop order (m, n, k ...), not the sorted order of the JSON document."""
    rank = {k: i for i, k in enumerate(TILE_ORDER)}
    return [[k, tile[k]] for k in sorted(tile, key=lambda k: (rank.get(k, len(rank)), k))]


def _compute_rate(ceilings: dict[str, Any], op: dict[str, Any]) -> float | None:
    """The rate that timed `op`: a vector-unit operator (elementwise work) ran at the fastest
    vector rate for its precision, a matrix operator at its math mode's rate. Captures written
    before vector rates existed have none: their vector work ran at the fp32 math mode."""
    vector = ceilings.get("vector") or {}
    if op.get("problem_type") == "StreamProblem" and vector:
        rates = [vector[p] for p in VECTOR_EXECUTES.get(op["math_mode"], ("fp32",)) if p in vector]
        return max(rates) if rates else None
    return ceilings["compute"].get(op["math_mode"])


def _path(doc, name: str | None, primary: str | None) -> dict[str, Any] | None:
    pred = doc["predicted"].get("calibrated") or doc["predicted"]["analytical"]
    workloads = {w["name"]: w for w in pred["workloads"]}
    if not workloads:
        return None
    w = workloads.get(name) or workloads.get(primary) or next(iter(workloads.values()))
    top = max(w["operators"], key=lambda o: o["latency_s"])
    mapping = top["mapping"]
    return {
        "workload": w["name"], "spec": w["spec"], "bound": pred["bound"], "target": pred["target"],
        "flops": w["flops"], "compulsory_bytes": w["compulsory_bytes"], "operators": len(w["operators"]),
        "top_operator": top["name"], "strategy": mapping["strategy"], "tile": _ordered_tile(mapping["tile"]),
        "split": mapping["split"], "tiles": mapping["tiles"], "waves": mapping["waves"],
        "dram_traffic": mapping["traffic"].get("dram"), "ceiling_origin": top["ceiling_origin"],
        "math_mode": top["math_mode"], "compute_rate": _compute_rate(pred["ceilings"], top),
        "dram_rate": pred["ceilings"]["dram_bytes_per_s"],
        "compute_s": w["compute_s"], "memory_s": w["memory_s"], "latency_s": w["latency_s"],
        "bottleneck": w["bottleneck"],
    }


def _telemetry_name(doc) -> str:
    """How the report names the telemetry source: 'NVML' for the NVML source, else its name."""
    source = str(doc["diagnostic"].get("source") or "")
    return "NVML" if source in ("", "nvml") else f"{source} telemetry"


def _telemetry(doc) -> dict[str, Any]:
    diag = doc["diagnostic"]
    if not diag.get("available"):
        return {"available": False, "reason": diag.get("reason"), "observations": [], "caveat": diag.get("caveat")}
    notes = []
    source = _telemetry_name(doc)
    for name, window in sorted((diag.get("windows") or {}).items()):
        summary = window.get("summary") or {}
        if window.get("headline"):   # sources other than NVML summarise their window in one line
            notes.append(f"{source} during the telemetry window of {name}: {window['headline']}. "
                         "This is observed context, not an explanation of the measured time.")
        for reason, fraction in summary.get("reason_fractions") or []:
            if reason == "GpuIdle" or not fraction:
                continue
            kind = "hardware or thermal slowdown" if reason in SLOWDOWN_REASONS else "clock-event reason"
            notes.append(f"NVML reported {reason} ({kind}) during {fraction * 100:.0f}% of the telemetry window "
                         f"of {name}. This is observed context, not proof that the benchmark was limited by it.")
    return {"available": True, "reason": None, "observations": notes, "caveat": diag.get("caveat"),
            "window": diag.get("window"), "source": diag.get("source")}


def _limits(doc, rows) -> list[str]:
    measured, cal = doc["measured"], doc["calibrated"]
    device = (measured.get("device") or {}).get("name")
    started = doc.get("provenance", {}).get("started_at", "?")
    out = []
    if measured.get("available"):
        out.append(f"One physical device ({device}) and one capture session ({started}).")
    else:
        out.append(f"Nothing was measured ({measured.get('reason')}): every number here is PREDICTED.")
    if device and "laptop" in device.lower():
        out.append("Laptop thermal and power state affect measurements.")
    elif not measured.get("available") and "laptop" in doc["target"]:
        out.append("On a laptop, thermal and power state would affect measurements of this target.")
    out += ["An analytical lower bound, not a cycle-accurate model.", "Not a GPU simulator.",
            "No measured-bottleneck claim: the bottleneck is an analytical classification.",
            f"No generalization to every device sold as {doc['target']}.",
            "No production capacity claim.", "No model-quality assessment."]
    comparison = doc.get("comparison", {})
    if comparison.get("device_note") and measured.get("available"):
        out.append(f"APE withheld: {comparison['device_note']}.")
    failed = [r["name"] for r in rows if r["status"] == "failed"]
    if failed:
        out.append(f"{len(failed)} workload(s) failed to measure: {', '.join(failed)}.")
    if cal.get("available") and cal.get("reused"):
        out.append(f"Calibration reused from {cal.get('measured_at')}: the ceilings come from an earlier session.")
    if measured.get("available") and "cuda" in str(measured.get("backend", "")):
        out.append("Latencies are measured in a burst regime (short stretches, L2 flushed before each "
                   "iteration); sustained load can run slower, as the telemetry window may show.")
    elif measured.get("available"):
        out.append(f"Latencies are per-iteration samples on {measured.get('backend')} with caches flushed "
                   "before each iteration; other load on the machine changes them (see the telemetry).")
    return out


def _comparison(choice, by_name, device, primary: bool) -> dict[str, Any]:
    row = by_name.get(choice.name)
    return {"row": row, "story": _comparison_story(row, device, primary), "chosen_by": choice.why}


def build_facts(doc: dict[str, Any], path_workload: str | None = None, gate=None,
                primary: str | None = None, contrast: str | None = None) -> dict[str, Any]:
    """The report's facts. `primary`/`contrast` name the compared workloads; None chooses them
    from the numbers (report/choice.py)."""
    rows = _workload_rows(doc)
    by_name = {r["name"]: r for r in rows}
    chosen = choose(rows, primary, contrast)
    device = (doc["measured"].get("device") or {}).get("name")
    prov = doc.get("provenance", {})
    violations = doc.get("comparison", {}).get("bound_violations", [])
    return {
        "schema": "tensorforge.report/1",
        "title": f"TensorForge capture: {doc['target']}",
        "target": doc["target"], "operating_point": doc["operating_point"], "device": device,
        "fingerprint": (doc["measured"].get("device") or {}).get("fingerprint"),
        "started_at": prov.get("started_at"), "finished_at": prov.get("finished_at"),
        "duration_s": prov.get("duration_s"), "command": " ".join(prov.get("command", [])),
        "tensorforge_version": prov.get("tensorforge_version"), "digest": doc["digest"]["value"],
        "labels": [{"label": l, "meaning": m, "source": s} for l, m, s in LABELS],
        "sections": {k: {"available": bool(doc[k].get("available")), "reason": doc[k].get("reason")}
                     for k in ("measured", "calibrated", "diagnostic")},
        "workloads": rows,
        "primary": _comparison(chosen["primary"], by_name, device, True),
        "contrast": _comparison(chosen["contrast"], by_name, device, False),
        "ceilings": _ceilings(doc),
        "launch_floor_s": (doc["calibrated"].get("ceilings") or {}).get("launch_floor_s")
        if doc["calibrated"].get("available") else None,
        "path": _path(doc, path_workload, chosen["primary"].name),
        "bottleneck_statement": "The predicted bottleneck is an analytical classification. "
                                f"{_telemetry_name(doc)} does not prove this classification.",
        "telemetry": _telemetry(doc),
        "policy": {"bound_checks": {r["name"]: r["bound_check"] for r in rows}, "bound_violations": violations,
                   "gate": gate},
        "limits": _limits(doc, rows),
        "plugins": prov.get("plugins", []),
    }
