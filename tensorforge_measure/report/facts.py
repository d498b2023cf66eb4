"""Everything the report says, derived from the capture alone: numbers, and sentences whose
claims are decided by those numbers (never stronger than the evidence)."""

from collections.abc import Sequence
from typing import Any

from tensorforge_measure.telemetry.clock_events import SLOWDOWN_REASONS

from tensorforge.api import VECTOR_EXECUTES, seconds
from tensorforge_measure.capture.convert import to_document
from tensorforge_measure.capture.labels import LABELS
from tensorforge_measure.capture.model import Capture
from tensorforge_measure.capture.sections.calibrated import Calibrated
from tensorforge_measure.capture.sections.diagnostic import Diagnostic
from tensorforge_measure.capture.sections.measured import Measured, Measurement
from tensorforge_measure.compare.bottleneck import FOOTNOTE, bottleneck_cell
from tensorforge_measure.report.choice import choose
from tensorforge_measure.report.energy_section import energy_facts
from tensorforge_measure.report.estimate_section import estimate_facts
from tensorforge_measure.report.facts_measurement import measurement_facts


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _estimate_s(w, r) -> float | None:
    """The estimate the comparison used; without a comparison row, the eager estimate (what an
    eager p50 would be compared with)."""
    if r is not None and r.predicted_estimate_s is not None:
        return r.predicted_estimate_s
    return w.estimate.eager_s if w.estimate is not None else None


def _workload_rows(capture: Capture) -> list[dict[str, Any]]:
    measured = capture.measured.workloads if isinstance(capture.measured, Measured) else None
    rows = capture.comparison.workloads if capture.comparison else {}
    out = []
    for w in capture.predicted.analytical.workloads:
        m = measured.get(w.name) if measured is not None else None
        r = rows.get(w.name)
        stats = m.stats if isinstance(m, Measurement) else None
        p50 = stats.p50 if stats else None
        out.append(
            {
                "name": w.name,
                "spec": w.spec,
                "flops": w.flops,
                "compulsory_bytes": w.compulsory_bytes,
                "operators": len(w.operators),
                "intensity": w.flops / w.compulsory_bytes if w.compulsory_bytes else None,
                "analytical_s": w.latency_s,
                "calibrated_s": r.predicted_calibrated_s if r else None,
                "measured_p50_s": p50,
                "p10_s": stats.p10 if stats else None,
                "p90_s": stats.p90 if stats else None,
                "n": stats.n if stats else None,
                "ape_analytical": r.ape_analytical if r else None,
                "ape_calibrated": r.ape_calibrated if r else None,
                # the estimate (expected time, not a bound) in the mode of the p50 it is compared with
                "estimate_s": _estimate_s(w, r),
                "estimate_mode": (r.estimate_regime if r and r.predicted_estimate_s is not None else None)
                or ("eager" if w.estimate is not None else None),
                "ape_estimate": r.ape_estimate if r else None,
                # both bounds' classifications, in the words of the summary and the README
                "bottleneck": bottleneck_cell(w.bottleneck, r.bottleneck if r else None),
                "bound_check": r.bound_check.verdict if r else "no verdict",
                # weak evidence makes APE and the bound check provisional (policy/evidence_quality.py)
                "evidence": r.evidence_quality.verdict if r and r.evidence_quality else None,
                "evidence_reasons": list(r.evidence_quality.reasons) if r and r.evidence_quality else [],
                "provisional": bool(r and r.evidence_quality and not r.evidence_quality.sufficient),
                "status": "not measured" if m is None else m.status,
                "failure": m.reason if m is not None and stats is None else None,
                # the math mode of the operator doing most of the work (not, say, a norm's fp32)
                "math_mode": max(w.operators, key=lambda o: o.flops).math_mode if w.operators else None,
                "achieved_flops_per_s": w.flops / p50 if p50 else None,
            }
        )
    return out


def _comparison_story(row: dict[str, Any] | None, device: str | None, primary: bool) -> str:
    if row is None:
        return (
            "No workload in this capture to compare."
            if primary
            else "Only one workload in this capture: there is nothing to contrast it with."
        )
    name = row["name"]
    if row["measured_p50_s"] is None:
        return f"{name} was not measured ({row['failure'] or row['status']}): only the prediction is shown."
    if row["bound_check"] == "BOUND VIOLATION":
        return (
            f"The measured p50 of {name} fell below its calibrated lower bound: a bound violation. "
            "The model or the calibration is wrong for this workload."
        )
    ape = row["ape_calibrated"]
    if ape is None:
        return (
            f"{name} was measured on a device other than the predicted target, so no APE is "
            "computed; the prediction and the measurement are shown side by side only."
        )
    where = f"one {device}" if device else "one device"
    if primary:
        return (
            f"On this capture, the calibrated analytical lower bound of {name} was within "
            f"{_pct(ape)} of the measured p50. This is one workload on {where}, not a claim about "
            "all such workloads or devices."
        )
    if ape > 0.5 and row["measured_p50_s"] < 50e-6:
        return (
            f"{name} diverges sharply (APE {_pct(ape)}: predicted {seconds(row['calibrated_s'])}, measured "
            f"{seconds(row['measured_p50_s'])}). This is consistent with fixed framework or kernel-launch "
            "overhead absent from the lower-bound model, but this experiment does not establish that "
            "explanation as causal."
        )
    return (
        f"{name}: APE {_pct(ape)} between the calibrated lower bound and the measured p50; "
        "the capture does not establish why they differ."
    )


def _ceilings(capture: Capture) -> list[dict[str, Any]]:
    sheet = capture.predicted.analytical.ceilings
    cal = capture.calibrated.ceilings if isinstance(capture.calibrated, Calibrated) else None
    rows = []
    for mode, peak in sorted(sheet.compute.items()):
        measured = cal.compute.get(mode) if cal else None
        rows.append(
            {
                "what": f"compute {mode}",
                "unit": "FLOP/s",
                "datasheet": peak,
                "calibrated": measured,
                "fraction": measured / peak if measured else None,
            }
        )
    dram = cal.dram_bytes_per_s if cal else None
    rows.append(
        {
            "what": "memory (copy, read + write)",
            "unit": "B/s",
            "datasheet": sheet.dram_bytes_per_s,
            "calibrated": dram,
            "fraction": dram / sheet.dram_bytes_per_s if dram else None,
        }
    )
    return rows


TILE_ORDER = ("m", "n", "k", "q", "kv", "d")


def _ordered_tile(tile: dict[str, int]) -> list[list[Any]]:
    """Tile extents in loop order (m, n, k ...), not the sorted order of the JSON document."""
    rank = {k: i for i, k in enumerate(TILE_ORDER)}
    return [[k, tile[k]] for k in sorted(tile, key=lambda k: (rank.get(k, len(rank)), k))]


def _compute_rate(ceilings, op) -> float | None:
    """The rate that timed `op`: a vector-unit operator (elementwise work) ran at the fastest
    vector rate for its precision, a matrix operator at its math mode's rate. Captures written
    before vector rates existed have none: their vector work ran at the fp32 math mode."""
    vector = ceilings.vector
    if op.problem_type == "StreamProblem" and vector:
        rates = [vector[p] for p in VECTOR_EXECUTES.get(op.math_mode, ("fp32",)) if p in vector]
        return max(rates) if rates else None
    return ceilings.compute.get(op.math_mode)


def _path(capture: Capture, name: str | None, primary: str | None) -> dict[str, Any] | None:
    pred = capture.predicted.calibrated or capture.predicted.analytical
    workloads = {w.name: w for w in pred.workloads}
    if not workloads:
        return None
    w = workloads.get(name or "") or workloads.get(primary or "") or next(iter(workloads.values()))
    top = max(w.operators, key=lambda o: o.latency_s)
    mapping = top.mapping
    return {
        "workload": w.name,
        "spec": w.spec,
        "bound": pred.bound,
        "target": pred.target,
        "flops": w.flops,
        "compulsory_bytes": w.compulsory_bytes,
        "operators": len(w.operators),
        "top_operator": top.name,
        "strategy": mapping.strategy,
        "tile": _ordered_tile(mapping.tile),
        "split": mapping.split,
        "tiles": mapping.tiles,
        "waves": mapping.waves,
        "dram_traffic": mapping.traffic.get("dram"),
        "ceiling_origin": top.ceiling_origin,
        "math_mode": top.math_mode,
        "compute_rate": _compute_rate(pred.ceilings, top),
        "dram_rate": pred.ceilings.dram_bytes_per_s,
        "compute_s": w.compute_s,
        "memory_s": w.memory_s,
        "latency_s": w.latency_s,
        "bottleneck": w.bottleneck,
    }


def _telemetry_name(capture: Capture) -> str:
    """How the report names the telemetry source: 'NVML' for the NVML source, else its name."""
    source = capture.diagnostic.source if isinstance(capture.diagnostic, Diagnostic) else ""
    return "NVML" if source in ("", "nvml") else f"{source} telemetry"


def _telemetry(capture: Capture) -> dict[str, Any]:
    diag = capture.diagnostic
    if not isinstance(diag, Diagnostic) or not diag.available:
        return {"available": False, "reason": diag.reason, "observations": [], "caveat": diag.caveat}
    notes = []
    source = _telemetry_name(capture)
    for name, window in sorted(diag.windows.items()):
        if window.clock_event_fractions is None:
            # sources without clock-event reasons are described by the one line they write
            if window.headline:
                notes.append(
                    f"{source} during the telemetry window of {name}: {window.headline}. "
                    "This is observed context, not an explanation of the measured time."
                )
            continue
        for reason, fraction in window.clock_event_fractions:
            if reason == "GpuIdle" or not fraction:
                continue
            kind = "hardware or thermal slowdown" if reason in SLOWDOWN_REASONS else "clock-event reason"
            notes.append(
                f"NVML reported {reason} ({kind}) during {fraction * 100:.0f}% of the telemetry window "
                f"of {name}. This is observed context, not proof that the benchmark was limited by it."
            )
    return {
        "available": True,
        "reason": None,
        "observations": notes,
        "caveat": diag.caveat,
        "window": diag.window,
        "source": diag.source,
    }


def _limits(capture: Capture, rows) -> list[str]:
    measured, cal = capture.measured, capture.calibrated
    device = measured.device.name if isinstance(measured, Measured) else None
    started = capture.provenance.started_at
    out = []
    if isinstance(measured, Measured):
        out.append(f"One physical device ({device}) and one capture session ({started}).")
    else:
        out.append(f"Nothing was measured ({measured.reason}): every number here is PREDICTED.")
    if device and "laptop" in device.lower():
        out.append("Laptop thermal and power state affect measurements.")
    elif not isinstance(measured, Measured) and "laptop" in capture.target:
        out.append("On a laptop, thermal and power state would affect measurements of this target.")
    out += [
        "An analytical lower bound, not a cycle-accurate model.",
        "Not a GPU simulator.",
        "No measured-bottleneck claim: the bottleneck is an analytical classification.",
        f"No generalization to every device sold as {capture.target}.",
        "No production capacity claim.",
        "No model-quality assessment.",
    ]
    comparison = capture.comparison
    if comparison and comparison.device_note and isinstance(measured, Measured):
        out.append(f"APE withheld: {comparison.device_note}.")
    failed = [r["name"] for r in rows if r["status"] == "failed"]
    if failed:
        out.append(f"{len(failed)} workload(s) failed to measure: {', '.join(failed)}.")
    if isinstance(cal, Calibrated) and cal.reused:
        out.append(f"Calibration reused from {cal.measured_at}: the ceilings come from an earlier session.")
    phases = isinstance(measured, Measured) and any(getattr(m, "regime", None) for m in measured.workloads.values())
    if isinstance(measured, Measured) and "cuda" in measured.backend and phases:
        out.append(
            "The primary latencies are measured in the burst regime (short stretches, L2 flushed "
            "before each iteration), as device time (CUDA-graph replay) where the workload could be "
            "captured; the sustained regime is shown beside them and is often slower (power cap)."
        )
    elif isinstance(measured, Measured) and "cuda" in measured.backend:
        out.append(
            "Latencies are measured in a burst regime (short stretches, L2 flushed before each "
            "iteration); sustained load can run slower, as the telemetry window may show."
        )
    elif isinstance(measured, Measured):
        out.append(
            f"Latencies are per-iteration samples on {measured.backend} with caches flushed "
            "before each iteration; other load on the machine changes them (see the telemetry)."
        )
    return out


def _comparison(choice, by_name, device, primary: bool) -> dict[str, Any]:
    row = by_name.get(choice.name)
    return {"row": row, "story": _comparison_story(row, device, primary), "chosen_by": choice.why}


def build_facts(
    capture: Capture,
    path_workload: str | None = None,
    gate=None,
    primary: str | None = None,
    contrast: str | None = None,
    verdicts: Sequence[dict[str, Any]] = (),
    operators_workload: str | None = None,
) -> dict[str, Any]:
    """The report's facts. `primary`/`contrast` name the compared workloads; None chooses them
    from the numbers (report/choice.py). `gate` is the regression gate's result against a
    baseline, `verdicts` those of the other installed policies (JSON-ready, as the command
    made them)."""
    rows = _workload_rows(capture)
    by_name = {r["name"]: r for r in rows}
    chosen = choose(rows, primary, contrast)
    measured = capture.measured.device if isinstance(capture.measured, Measured) else None
    device = measured.name if measured else None
    prov = capture.provenance
    violations = list(capture.comparison.bound_violations) if capture.comparison else []
    cal = capture.calibrated
    return {
        "schema": "tensorforge.report/1",
        "title": f"TensorForge capture: {capture.target}",
        "target": capture.target,
        "operating_point": capture.operating_point,
        "device": device,
        "fingerprint": measured.fingerprint if measured else None,
        "started_at": prov.started_at,
        "finished_at": prov.finished_at,
        "duration_s": prov.duration_s,
        "command": " ".join(prov.command),
        "tensorforge_version": prov.tensorforge_version,
        "digest": capture.digest.value if capture.digest else None,
        "labels": [{"label": label.name, "meaning": label.meaning, "source": label.source} for label in LABELS],
        "sections": {
            key: {"available": bool(section.available), "reason": section.reason}
            for key, section in (
                ("measured", capture.measured),
                ("calibrated", capture.calibrated),
                ("diagnostic", capture.diagnostic),
            )
        },
        "workloads": rows,
        "primary": _comparison(chosen["primary"], by_name, device, True),
        "contrast": _comparison(chosen["contrast"], by_name, device, False),
        "ceilings": _ceilings(capture),
        "launch_floor_s": cal.ceilings.launch_floor_s if isinstance(cal, Calibrated) else None,
        "path": _path(capture, path_workload, chosen["primary"].name),
        "bottleneck_footnote": FOOTNOTE,
        "bottleneck_statement": "The predicted bottleneck is an analytical classification. "
        f"{_telemetry_name(capture)} does not prove this classification.",
        "telemetry": _telemetry(capture),
        "policy": {
            "bound_checks": {r["name"]: r["bound_check"] for r in rows},
            "bound_violations": violations,
            "gate": gate,
            "verdicts": list(verdicts),
        },
        "limits": _limits(capture, rows),
        "plugins": to_document(prov.plugins),
        # the estimate beside the bound, read from the capture's own document
        "estimate": estimate_facts(to_document(capture)),
        # measured energy beside the floor and the estimate (absent in captures without energy)
        "energy": energy_facts(to_document(capture)),
        "measurement": measurement_facts(capture, operators_workload),
    }
