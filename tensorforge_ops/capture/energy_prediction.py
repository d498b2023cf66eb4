"""PREDICTED energy for a run: the Core's energy model (tensorforge.energy) applied to the
calibrated bound, with the coefficients of the calibration's energy probes.

Times: the floor uses the calibrated lower bound (and, for work the power limit slows, the
power-limited time); the estimate uses the estimate's eager time (the energy window runs eager
calls back to back). The power limit is the one NVML enforced during calibration; where the
device reported none, the target's declared limit stands in and the record says so.
"""

from __future__ import annotations

from typing import Any

import attrs

from tensorforge.api import workload_energy

from ..energy.fit import to_core
from .sections.energy import EnergyPrediction, WorkloadEnergyRecord

TIME_BASIS = (
    "floor: the calibrated lower bound's time, or the power-limited time where longer; estimate: the "
    "estimate's eager time (kernels launched from Python), or the power-limited time where longer; its "
    "busy term: the estimate's device (kernel) time"
)


def _terms(terms) -> dict[str, float]:
    return {
        "static_j": terms.static_j,
        "compute_j": terms.compute_j,
        "dram_j": terms.dram_j,
        "time_s": terms.time_s,
        "dram_bytes": terms.dram_bytes,
        **({"busy_j": terms.busy_j} if terms.busy_j else {}),
    }


def _sustained_rates(cal: Any) -> dict[str, float]:
    """The sustained probe's compute ceilings per math mode (FLOP/s), where the calibration has them."""
    sustained = (getattr(cal, "ceilings_by_regime", None) or {}).get("sustained")
    compute = getattr(sustained, "compute", None) or {}
    return {m: float(r) for m, r in compute.items() if r}


def energy_prediction(cal: Any, calibrated_pred: Any, device_target: Any, sustained_pred: Any = None):
    """(EnergyPrediction, None) or (None, why not)."""
    energy = getattr(cal, "energy", None) if cal is not None else None
    if energy is None:
        return None, "the calibration has no energy probe windows (recalibrate with the energy probe)"
    if energy.coefficients is None:
        return None, f"the energy fit failed: {energy.error}"
    if calibrated_pred is None or device_target is None:
        return None, "no calibrated bound to build the energy floor on"
    declared = getattr(device_target, "power", None)
    fallback = (declared.limit_w, f"declared by target {device_target.name}") if declared is not None else None
    coefficients = to_core(energy.coefficients, fallback)
    sustained_rates = _sustained_rates(cal)
    if sustained_rates:  # the estimate's capped time (tensorforge.energy.capped_time)
        coefficients = attrs.evolve(coefficients, sustained_rate_flop_s=sustained_rates)
    cache = device_target.cache_level()
    cache_bytes = float(cache.capacity_bytes) if cache is not None else None
    rows: dict[str, WorkloadEnergyRecord] = {}
    for w in calibrated_pred.workloads:
        estimate_s = w.estimate.eager_s if w.estimate is not None else None
        device_s = getattr(w.estimate, "device_s", None) if w.estimate is not None else None
        sustained_w = sustained_pred.workload(w.name) if sustained_pred is not None else None
        sustained_device_s = getattr(getattr(sustained_w, "estimate", None), "device_s", None)
        e = workload_energy(w, coefficients, cache_bytes, estimate_s, device_s, sustained_device_s, sustained_w)
        sustained = sustained_w.latency_s if sustained_w is not None else None
        bounds = [b for b in (sustained, e.power_limited_bound_s) if b is not None]
        rows[w.name] = WorkloadEnergyRecord(
            floor_j=e.floor_j,
            floor_terms=_terms(e.floor_terms),
            estimate_j=e.estimate_j,
            estimate_terms=_terms(e.estimate_terms) if e.estimate_terms else None,
            estimate_note=e.estimate_note,
            power_limited_bound_s=e.power_limited_bound_s,
            power_limited=e.power_limited,
            uncalibrated_modes=e.uncalibrated_modes,
            sustained_bound_s=max(bounds) if bounds else None,
            operators={op.name: op.floor_j for op in e.operators} or None,
        )
    return (
        EnergyPrediction(
            label="PREDICTED energy",
            coefficients_source=coefficients.source
            + (
                f"; power limit {coefficients.power_limit_w:g} W ({coefficients.power_limit_source})"
                if coefficients.power_limit_w
                else ""
            ),
            cache_bytes=cache_bytes,
            time_basis=TIME_BASIS,
            workloads=rows,
        ),
        None,
    )
