"""PREDICTED energy for a run: the Core's energy model (tensorforge.energy) applied to the
calibrated bound, with the coefficients of the calibration's energy probes.

Times: the floor uses the calibrated lower bound (and, for work the power limit slows, the
power-limited time); the estimate uses the estimate's eager time (the energy window runs eager
calls back to back). The power limit is the one NVML enforced during calibration; where the
device reported none, the target's declared limit stands in and the record says so.
"""

from __future__ import annotations

from typing import Any

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


def sustained_bound(burst_w: Any, sustained_w: Any, power_limited_s: float | None, cache_bytes: float | None):
    """(the sustained regime's bound with the power limit, which bound it is).

    max(the sustained-probe calibrated bound, the power-limited bound), except for a working set
    that fits in the last-level cache: there max(the burst calibrated bound, the power-limited
    bound). Why: the sustained probes' ceilings are the rates of square GEMMs of n >= 4096 at the
    power cap, whose operands (>= 100 MB at 4096 fp16) stream from DRAM; at the same cap, work
    whose operands stay in L2 spends less energy per FLOP and runs at a higher clock, so the
    probe's rate is not an upper bound on its rate. On the H200, conv_fp16_3x3_64x512x14 (30 MB)
    ran its sustained p50 at 714 TFLOP/s against the fp16 sustained ceiling's 702 (02:34 session),
    below that bound in 4 of 6 sessions (0.980-0.999); on the burst bound it is 1.107-1.254 over
    them. The burst ceiling is the device at full clock: no cap makes work faster than that."""
    sustained = sustained_w.latency_s if sustained_w is not None else None
    resident = cache_bytes is not None and float(burst_w.compulsory_bytes) <= cache_bytes
    first, label = (float(burst_w.latency_s), "burst calibrated") if resident else (sustained, "sustained-probe calibrated")
    bounds = [(b, name) for b, name in ((first, label), (power_limited_s, "power-limited")) if b is not None]
    if not bounds:
        return None, None
    return max(bounds)


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
    cache = device_target.cache_level()
    cache_bytes = float(cache.capacity_bytes) if cache is not None else None
    rows: dict[str, WorkloadEnergyRecord] = {}
    for w in calibrated_pred.workloads:
        estimate_s = w.estimate.eager_s if w.estimate is not None else None
        device_s = getattr(w.estimate, "device_s", None) if w.estimate is not None else None
        sustained_w = sustained_pred.workload(w.name) if sustained_pred is not None else None
        sustained_device_s = getattr(getattr(sustained_w, "estimate", None), "device_s", None)
        e = workload_energy(w, coefficients, cache_bytes, estimate_s, device_s, sustained_device_s)
        bound_s, bound_from = sustained_bound(w, sustained_w, e.power_limited_bound_s, cache_bytes)
        rows[w.name] = WorkloadEnergyRecord(
            floor_j=e.floor_j,
            floor_terms=_terms(e.floor_terms),
            estimate_j=e.estimate_j,
            estimate_terms=_terms(e.estimate_terms) if e.estimate_terms else None,
            estimate_note=e.estimate_note,
            power_limited_bound_s=e.power_limited_bound_s,
            power_limited=e.power_limited,
            uncalibrated_modes=e.uncalibrated_modes,
            sustained_bound_s=bound_s,
            sustained_bound_from=bound_from,
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
