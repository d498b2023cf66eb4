"""One workload's MEASURED energy against its PREDICTED floor and estimate, and its sustained
timing against the power-limited sustained bound. Built by `run` and rebuilt by `verify`
(recompute.py), so the row follows from PREDICTED and MEASURED alone.

The floor check has no tolerance: the floor's coefficients already stand at the lower end of
their uncertainty (energy/fit.py), so a measurement below it says the floor is not sound.
"""

from __future__ import annotations

from typing import Any

from tensorforge_measure.capture.sections.energy import EnergyComparison, WorkloadEnergyRecord

# a bound is a bound: no tolerance (the tolerance of the latency checks is for a p50 that might
# sit below a sound bound by noise; this says the bound is not sound for the sustained p50)
BOUND_ABOVE = "BOUND ABOVE THE MEASUREMENT"


def sustained_p50(m: Any) -> float | None:
    """The fastest p50 of the workload's sustained timings (eager or graph): the strictest
    measurement a sustained bound is checked against."""
    p50s = [t.stats.p50 for t in (getattr(m, "modes", None) or ()) if t.regime == "sustained"]
    return min(p50s) if p50s else None


QUEUED_EAGER = "eager window"
DEVICE_GRAPH = "device (graph window)"


def _estimate(pred: WorkloadEnergyRecord | None, measured: Any) -> tuple[float | None, str]:
    """The estimate that matches the window's execution, and which one it is: a window of CUDA-graph
    replays runs at the device's pace, so it is compared with the estimate on the device time alone
    (`device_estimate_j`); an eager window with the queued estimate (the host's launches where slower).
    A graph window without a device-time estimate (a calibration before the queued model) keeps the
    eager estimate and says so."""
    if pred is None:
        return None, QUEUED_EAGER
    if getattr(measured, "execution", None) == "graph":
        if pred.device_estimate_j is not None:
            return pred.device_estimate_j, DEVICE_GRAPH
        return pred.estimate_j, QUEUED_EAGER + " (no device-time estimate for this graph window)"
    return pred.estimate_j, QUEUED_EAGER


def energy_row(pred: WorkloadEnergyRecord | None, m: Any) -> EnergyComparison | None:
    measured_record = getattr(m, "energy", None)
    if pred is None and measured_record is None:
        return None
    measured = measured_record.joules_per_execution if measured_record and measured_record.available else None
    floor = pred.floor_j if pred else None
    estimate, basis = _estimate(pred, measured_record)
    if measured is None:
        why = measured_record.reason if measured_record is not None else "no energy window ran"
        verdict = f"no verdict: no energy measurement ({why})"
    elif floor is None:
        verdict = "no verdict: no energy floor (no energy calibration)"
    else:
        verdict = "FLOOR VIOLATION" if measured < floor else "within floor"
    bound = pred.sustained_bound_s if pred else None
    p50 = sustained_p50(m)
    return EnergyComparison(
        measured_j=measured,
        floor_j=floor,
        estimate_j=estimate,
        floor_verdict=verdict,
        measured_over_floor=measured / floor if measured is not None and floor else None,
        estimate_error=(estimate - measured) / measured if measured and estimate is not None else None,
        estimate_basis=basis if estimate is not None else None,
        power_limited_bound_s=bound,
        sustained_p50_s=p50,
        sustained_over_bound=p50 / bound if p50 is not None and bound else None,
        sustained_verdict=None if p50 is None or not bound else BOUND_ABOVE if p50 < bound else "within bound",
    )
