"""A readable summary of a capture, from the capture alone."""

from tensorforge.api import PLAIN, Screen, percent, seconds, short_basis, si
from tensorforge_measure.capture.model import Capture
from tensorforge_measure.capture.sections.calibrated import Calibrated
from tensorforge_measure.capture.sections.comparison import ComparisonRow
from tensorforge_measure.capture.sections.diagnostic import Diagnostic
from tensorforge_measure.capture.sections.measured import FailedMeasurement, Measured, Measurement, WorkloadMeasurement
from tensorforge_measure.compare.bottleneck import FOOTNOTE, HEADER, bottleneck_cell
from tensorforge_measure.compare.workload import FASTEST_BELOW, FastestCheck, fastest_check, fastest_sample
from tensorforge_measure.report.summary_regimes import calibrated_lines, regime_lines
from tensorforge_measure.report.summary_system import collective_lines, operator_lines, system_lines


def _telemetry_lines(diag) -> list[str]:
    if not isinstance(diag, Diagnostic) or not diag.available:
        return [f"DIAGNOSTIC  unavailable: {diag.reason}"]
    source = "NVML" if diag.source == "nvml" else diag.source
    lines = [f"DIAGNOSTIC  {source}, separate window after timing (context, never a verdict)"]
    burst = diag.burst_windows or {}
    windows = sorted([*diag.windows.items(), *burst.items()], key=lambda x: (x[0], x[1].regime != "burst"))
    for name, window in windows:
        if window.regime and (burst or window.regime != "single"):
            name = f"{name} [{window.regime}]"
        if not window.available:
            lines.append(f"  {name}: unavailable ({window.reason})")
        else:
            lines.append(f"  {name}: {window.headline or 'no headline from the source'}")
    lines.append(f"  {diag.caveat}")
    return lines


def _fastest(row: ComparisonRow | None, measurement: WorkloadMeasurement | None) -> FastestCheck | None:
    """The fastest sample against the calibrated bound, from the capture's own samples (so
    captures written before the comparison recorded it are checked too)."""
    bound = row.predicted_calibrated_s if row else None
    if not bound or not isinstance(measurement, Measurement):
        return None
    return fastest_check(fastest_sample(measurement), bound)


def _fastest_cell(check: FastestCheck | None) -> str:
    """The fastest sample's margin over the calibrated bound, signed (no tolerance)."""
    if check is None or check.margin is None:
        return "-"
    return f"{check.margin * 100:+.2f}%" + (" BELOW" if check.margin < 0 else "")


def _provisional(cell: str) -> str:
    return cell if cell == "-" else f"{cell} (provisional)"


def _one_reason(capture: Capture) -> str | None:
    """The reason when no section but PREDICTED has data and all say the same (no device):
    said once instead of once per section."""
    measured, cal, diag = capture.measured, capture.calibrated, capture.diagnostic
    if isinstance(measured, Measured) or isinstance(cal, Calibrated):
        return None
    if isinstance(diag, Diagnostic) and diag.available:
        return None
    reasons = {measured.reason, cal.reason, diag.reason}
    return measured.reason if len(reasons) == 1 else None


def summary_text(capture: Capture, screen: Screen = PLAIN, next_step: str | None = None) -> str:
    """The summary written beside the capture (PLAIN: full columns) or shown on `screen`;
    `next_step`, a line saying what to run next, goes under the reason nothing was measured."""
    pred = capture.predicted
    measured, cal, comp = capture.measured, capture.calibrated, capture.comparison
    lines = [
        f"TensorForge capture  target {capture.target} @ {capture.operating_point}"
        f"{'' if capture.complete else '  (INCOMPLETE)'}"
    ]
    # on a screen, a reason shared by every section is said once; a file keeps the full record
    reason = _one_reason(capture) if screen.width else None
    if reason is not None:
        lines.append(f"PREDICTED   only: MEASURED, CALIBRATED and DIAGNOSTIC unavailable: {reason}")
        lines += [next_step] if next_step else []
    elif isinstance(measured, Measured):
        lines.append(f"MEASURED    on {measured.device.name} ({measured.device.fingerprint}) with {measured.backend}")
        lines += system_lines(measured)
    else:
        lines.append(f"MEASURED    unavailable: {measured.reason}")
    if reason is not None:
        pass
    elif isinstance(cal, Calibrated):
        c = cal.ceilings
        modes = ", ".join(f"{m} {si(v, 'FLOP/s')}" for m, v in sorted(c.compute.items()))
        launch = seconds(c.launch_floor_s) if c.launch_floor_s else "-"
        floor_name = "eager event floor" if "eager_event_floor_s" in (cal.floors or {}) else "launch floor"
        lines.append(
            f"CALIBRATED  {modes}; copy {si(c.dram_bytes_per_s or 0, 'B/s')}; {floor_name} {launch}"
            f" ({'reused from ' + cal.measured_at if cal.reused else 'measured ' + cal.measured_at})"
        )
        lines += calibrated_lines(cal)
        lines += collective_lines(cal)
    else:
        lines.append(f"CALIBRATED  unavailable: {cal.reason}")
    if pred.calibrated_note and not (reason and pred.calibrated_note.endswith(reason)):
        lines.append(f"            calibrated bound: {pred.calibrated_note}")
    elif pred.calibrated_target and pred.calibrated_target != capture.target:
        lines.append(f"            calibrated bound is for the measuring device's target {pred.calibrated_target}")
    rows: list[list[str]] = []
    fastest: dict[str, FastestCheck | None] = {}
    weak: dict[str, tuple[str, ...]] = {}
    measured_rows = measured.workloads if isinstance(measured, Measured) else {}
    # captures from before the estimate have no estimate columns (their summaries stay the same)
    estimated = comp is not None and any(r.predicted_estimate_s is not None for r in comp.workloads.values())
    for w in pred.analytical.workloads:
        r = comp.workloads.get(w.name) if comp else None
        check = r.bound_check.verdict if r else "-"
        check = check if not check.startswith("no verdict") else "no verdict" if measured.available else "-"
        failed = isinstance(measured_rows.get(w.name), FailedMeasurement)
        fastest[w.name] = _fastest(r, measured_rows.get(w.name))
        quality = r.evidence_quality if r else None
        ape_cal, ape_an = percent(r.ape_calibrated if r else None), percent(r.ape_analytical if r else None)
        if quality is not None and not quality.sufficient:
            # Weak evidence is flagged where it is shown: these figures may not hold on a rerun.
            weak[w.name] = quality.reasons
            ape_cal, ape_an = (_provisional(v) for v in (ape_cal, ape_an))
            check = _provisional(check) if check != "no verdict" else check
        rows.append(
            [
                w.name,
                seconds(w.latency_s),
                seconds(r.predicted_calibrated_s) if r and r.predicted_calibrated_s else "-",
                seconds(r.measured_p50_s) if r and r.measured_p50_s else ("failed" if failed else "-"),
                ape_cal,
                ape_an,
            ]
            + (
                [
                    seconds(r.predicted_estimate_s) if r and r.predicted_estimate_s else "-",
                    percent(r.ape_estimate if r else None),
                ]
                if estimated
                else []
            )
            + [
                bottleneck_cell(w.bottleneck, r.bottleneck if r else None),
                check,
                _fastest_cell(fastest[w.name]),
                quality.verdict if quality is not None else "-",
            ]
        )
    primary = "MEASURED p50"
    if any(isinstance(m, Measurement) and m.mode == "graph" for m in measured_rows.values()):
        primary = "MEASURED p50 (burst, graph*)"
    # the estimate is given in the mode of the p50 beside it (device time against graph, eager
    # against eager); one mode names the column, a mix is footnoted
    estimate_modes = sorted(
        {
            r.estimate_regime or "eager"
            for r in (comp.workloads.values() if comp else ())
            if r.predicted_estimate_s is not None
        }
    )
    estimate_head = f"ESTIMATE ({estimate_modes[0]})" if len(estimate_modes) == 1 else "ESTIMATE**"
    # The evidence column is never dropped on a narrow screen: it says whether the APE and bound
    # check beside it can be trusted (the PROVISIONAL lines below repeat the reasons).
    lines += [
        "",
        screen.table(
            ["workload", "PREDICTED analytical", "calibrated bound", primary, "APE cal", "APE analytical"]
            + ([estimate_head, "APE est"] if estimated else [])
            + [HEADER, "bound check", "fastest vs bound", "evidence"],
            rows,
            optional=("fastest vs bound", "APE analytical", "APE est", "PREDICTED analytical", "APE cal"),
        ),
    ]
    for name, reasons in weak.items():
        lines.append(
            screen.wrap(
                f"PROVISIONAL {name}: insufficient evidence ({'; '.join(reasons)}): its APE and "
                "bound check may not hold on a rerun"
            )
        )
    for name, m in sorted(measured_rows.items()):
        if isinstance(m, FailedMeasurement):
            lines.append(f"failed: {name}: {m.reason}")
    if comp and comp.device_note and reason is None:
        lines.append(f"APE: {comp.device_note}")
    below = sorted(
        (n, f.margin)
        for n, f in fastest.items()
        if f is not None and f.verdict == FASTEST_BELOW and f.margin is not None
    )
    if below:
        lines.append(
            "FASTEST SAMPLE BELOW THE CALIBRATED BOUND (the bound is not sound there): "
            + ", ".join(f"{n} ({margin * 100:+.2f}%)" for n, margin in below)
        )
    violations = comp.bound_violations if comp else ()
    if violations or measured.available or reason is None:
        lines.append(
            f"BOUND VIOLATIONS: {', '.join(violations)}"
            if violations
            else "bound violations: none"
            if measured.available
            else "bound checks: no verdict (nothing measured)"
        )
    lines += operator_lines(comp)
    lines.append(FOOTNOTE)
    if primary != "MEASURED p50":
        lines.append(
            "* graph: the burst-regime CUDA-graph device time where the workload was captured, else its eager time"
        )
    basis = (pred.calibrated or pred.analytical).estimate_basis
    if basis:  # on a screen in short; the file and the capture keep all of it
        shown = basis if screen.width is None else short_basis(basis)
        lines.append(f"ESTIMATE: expected time, not a bound; basis: {shown}")
    if estimated and len(estimate_modes) > 1:
        lines.append(
            "** estimate in the mode of the MEASURED p50 beside it: device time against graph, "
            "device time + host overhead against eager"
        )
    lines += regime_lines(capture)
    lines += [] if reason is not None else [""] + _telemetry_lines(capture.diagnostic)
    duration = capture.provenance.duration_s
    digest = capture.digest.value[:16] if capture.digest else "-"
    lines.append(f"\nrun took {duration if duration is not None else '-'} s; digest {digest}...")
    return "\n".join(screen.wrap(line) for line in "\n".join(lines).split("\n")) + "\n"
