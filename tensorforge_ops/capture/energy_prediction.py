"""PREDICTED energy for a run: the Core's energy model (tensorforge.energy) applied to the
calibrated bound, with the coefficients of the calibration's energy probes.

Times: the floor uses the calibrated lower bound (and, for work the power limit slows, the
power-limited time); the estimate uses the queued window's time (the slower of the estimate's
device time and the host's launches: an eager window), and beside it the estimate on the device
time alone (`device_estimate_j`: a window of CUDA-graph replays, which host-bound workloads get). The power limit is the one NVML enforced during calibration; where the
device reported none, the target's declared limit stands in and the record says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge.api import workload_energy

from ..energy.fit import to_core
from .sections.energy import EnergyPrediction, WorkloadEnergyRecord

TIME_BASIS = (
    "floor: the calibrated lower bound's time, or the power-limited time where longer; estimate: the "
    "estimate's eager time (kernels launched from Python), or the power-limited time where longer; its "
    "busy term: the estimate's device (kernel) time; with the queued model (a calibration with the host time "
    "per kernel): the slower of the estimate's device time and the host's launches (an eager window), and "
    "device_estimate_j on the device time alone (a CUDA-graph window; the comparison picks the one matching "
    "the window's execution)"
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


def probe_call_s(cal: Any) -> dict[str, float]:
    """Per math mode, how long one call of the sustained matmul probe lasted at the size whose rate
    became the sustained ceiling (2 n^3 / rate at best_n); {} where the calibration does not say."""
    probe = (getattr(cal, "probes", None) or {}).get("matmul-ceiling-sustained")
    if probe is None:
        return {}
    out: dict[str, float] = {}
    for mode, detail in (probe.details or {}).items():
        if not isinstance(detail, Mapping):
            continue
        n = detail.get("best_n")
        rate = dict((p[0], p[1]) for p in detail.get("points") or ()).get(n) or (probe.compute or {}).get(mode)
        if n and rate:
            out[mode] = 2.0 * float(n) ** 3 / float(rate)
    return out


def sustained_bound(burst_w: Any, sustained_w: Any, power_limited_s: float | None, probe_calls: dict[str, float]):
    """(the sustained regime's bound with the power limit, which bound it is).

    max(the sustained-probe calibrated bound, the power-limited bound), except for work whose
    sustained-probe bound is shorter than one call of the sustained matmul probe at its best size
    in one of the work's math modes: there max(the burst calibrated bound, the power-limited
    bound). Why: in the sustained regime every call follows an L2 flush (the workloads' timings
    and the probe alike), and the cap limits the power averaged over call and flush; a call that
    is short against the flush runs at a lower duty cycle and so at a higher clock than the
    probe's calls, and the probe's rate is not an upper bound on it. On the H200 (02:34) the calls
    under ~110 us ran their sustained p50 within 0-6% of their burst p50 while the longer ones
    were 7-24% slower; conv_fp16_3x3_64x512x14 (83 us a call against the fp16 probe's 196 us at
    n = 4096) ran at 714 TFLOP/s sustained against the fp16 sustained ceiling's 702, below that
    bound in 4 of 6 sessions (0.980-0.999). The burst ceiling is the device at full clock: no cap
    makes work faster than that."""
    sustained = sustained_w.latency_s if sustained_w is not None else None
    modes = {op.math_mode for op in getattr(burst_w, "operators", ()) or () if float(op.flops) > 0}
    calls = [probe_calls[m] for m in modes if m in probe_calls]
    short = sustained is not None and bool(calls) and float(sustained) < max(calls)
    first, label = (
        (float(burst_w.latency_s), "burst calibrated") if short else (sustained, "sustained-probe calibrated")
    )
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
    sustained_rates = _sustained_rates(cal)
    if sustained_rates:  # the estimate's capped time (tensorforge.energy.capped_time)
        coefficients = attrs.evolve(coefficients, sustained_rate_flop_s=sustained_rates)
    cache = device_target.cache_level()
    cache_bytes = float(cache.capacity_bytes) if cache is not None else None
    rows: dict[str, WorkloadEnergyRecord] = {}
    probe_calls = probe_call_s(cal)
    for w in calibrated_pred.workloads:
        estimate_s = w.estimate.eager_s if w.estimate is not None else None
        device_s = getattr(w.estimate, "device_s", None) if w.estimate is not None else None
        sustained_w = sustained_pred.workload(w.name) if sustained_pred is not None else None
        sustained_device_s = getattr(getattr(sustained_w, "estimate", None), "device_s", None)
        e = workload_energy(w, coefficients, cache_bytes, estimate_s, device_s, sustained_device_s, sustained_w)
        bound_s, bound_from = sustained_bound(w, sustained_w, e.power_limited_bound_s, probe_calls)
        rows[w.name] = WorkloadEnergyRecord(
            floor_j=e.floor_j,
            floor_terms=_terms(e.floor_terms),
            estimate_j=e.estimate_j,
            estimate_terms=_terms(e.estimate_terms) if e.estimate_terms else None,
            estimate_note=e.estimate_note,
            device_estimate_j=e.device_estimate_j,
            device_estimate_terms=_terms(e.device_estimate_terms) if e.device_estimate_terms else None,
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
