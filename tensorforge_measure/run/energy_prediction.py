"""PREDICTED energy for a run: the Core's energy model (tensorforge.energy.model) applied to the
calibrated bound, with the coefficients of the calibration's energy probes.

Times: the floor uses the calibrated lower bound (and, for work the power limit slows, the
power-limited time); the estimate uses the queued window's time (the slower of the estimate's
device time and the host's launches: an eager window), and beside it the estimate on the device
time alone (`device_estimate_j`: a window of CUDA-graph replays, which host-bound workloads get).
The power limit is the one NVML enforced during calibration; where the device reported none, the
target's declared limit stands in and the record says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge.api import (
    CAP_MARGIN,
    CapCalibration,
    bound_power_w,
    cap_bound_s,
    cap_calibration,
    flops_by_mode,
    window_time,
    workload_energy,
)
from tensorforge_measure.capture.sections.energy import CapRecord, EnergyPrediction, WorkloadEnergyRecord
from tensorforge_measure.energy.fit import to_core

TIME_BASIS = (
    "floor: the calibrated lower bound's time, or the power-limited time where longer; estimate: the "
    "estimate's eager time (kernels launched from Python), or the power-limited time where longer; its "
    "busy term: the estimate's device (kernel) time; with the queued model (a calibration with the host time "
    "per kernel): the slower of the estimate's device time and the host's launches (an eager window), and "
    "device_estimate_j on the device time alone (a CUDA-graph window; the comparison picks the one matching "
    "the window's execution); the device time is the estimate's window time where the calibration timed "
    "probes without the L2 flush (the flushed device time less the warm saving: the windows have no flush)"
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


CAP_LABEL = "power cap (sustained probes)"


def sustained_bound(
    burst_w: Any,
    sustained_w: Any,
    power_limited_s: float | None,
    probe_calls: dict[str, float],
    cap_s: float | None = None,
):
    """(the sustained regime's bound with the power limit, which bound it is).

    Where the calibration's sustained matmul probe gives the energy per FLOP at the cap
    (`cap_s`, tensorforge.bound.cap_bound): max(the burst calibrated bound, the cap bound, the energy
    probes' power-limited bound). The cap bound takes each call's flush into account, so it
    replaces the sustained-probe calibrated bound (the probe's fastest size's rate for every
    shape: 3-8% loose for the large GEMMs on the H200, whose calls are long against the flush)
    and the short-call rule below, which it contains: a call short against its flush gets the
    flush's credit.

    Without it (calibrations from before the cap bound): max(the sustained-probe calibrated
    bound, the power-limited bound), except for work whose sustained-probe bound is shorter than
    one call of the sustained matmul probe at its best size in one of the work's math modes:
    there max(the burst calibrated bound, the power-limited bound). Why: in the sustained regime
    every call follows an L2 flush, and the cap limits the power averaged over call and flush; a
    call that is short against the flush runs at a lower duty cycle and so at a higher clock than
    the probe's calls, and the probe's rate is not an upper bound on it (on an H200, 2026-12-01,
    conv_fp16_3x3_64x512x14, 83 us a call against the fp16 probe's 196 us, ran at 714 TFLOP/s
    sustained against the fp16 sustained ceiling's 702). The burst ceiling is the device at full
    clock: no cap makes work faster than that."""
    burst = float(burst_w.latency_s) if burst_w is not None else None
    candidates: tuple[tuple[float | None, str], ...]
    if cap_s is not None:
        candidates = ((burst, "burst calibrated"), (cap_s, CAP_LABEL), (power_limited_s, "power-limited"))
    else:
        sustained = float(sustained_w.latency_s) if sustained_w is not None else None
        modes = {op.math_mode for op in getattr(burst_w, "operators", ()) or () if float(op.flops) > 0}
        calls = [probe_calls[m] for m in modes if m in probe_calls]
        short = sustained is not None and bool(calls) and float(sustained) < max(calls)
        first = (burst, "burst calibrated") if short else (sustained, "sustained-probe calibrated")
        candidates = (first, (power_limited_s, "power-limited"))
    bounds = [(b, name) for b, name in candidates if b is not None]
    if not bounds:
        return None, None
    return max(bounds)


FLUSH_IN_METHOD = re.compile(r"flush of (\d+) B")


def _flush_bytes(detail: Mapping[str, Any]) -> float | None:
    """The sustained probe's flush per call: recorded since the cap bound, else read from its method."""
    if detail.get("flush_bytes"):
        return float(detail["flush_bytes"])
    found = FLUSH_IN_METHOD.search(str(detail.get("method") or ""))
    return float(found.group(1)) if found else None


CAP_METHOD = (
    "per math mode and size n of the sustained matmul probe (square n^3, each call after an L2 flush, timed "
    "at the cap): e(n) = ((P_cap - P_s) x (t_n + t_flush) - E_flush) / 2n^3, with t_n its fastest call; the "
    "bound's figure is the lowest e(n) less {margin:.0%}; P_cap = the enforced limit, P_s the fitted static "
    "power, t_flush = flush bytes / sustained copy bandwidth, E_flush = flush bytes x e_b low"
)


def _get(obj: Any, key: str) -> Any:
    """A calibration is typed in a run and a JSON document when a capture is rescored offline."""
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def cap_calibration_of(cal: Any, coefficients: Any, margin: float = CAP_MARGIN) -> CapCalibration | None:
    """The energy per FLOP at the cap from a calibration's sustained matmul probe; None where the
    calibration lacks the probe's points, its flush size or a power figure (`margin`: another
    than CAP_MARGIN, for a sensitivity check)."""
    probe = (_get(cal, "probes") or {}).get("matmul-ceiling-sustained")
    details = _get(probe, "details") or {}
    points = {
        m: [(float(n), float(r)) for n, r in d.get("points") or ()]
        for m, d in details.items()
        if isinstance(d, Mapping) and d.get("points")
    }
    flush = {_flush_bytes(d) for d in details.values() if isinstance(d, Mapping)} - {None}
    sustained = (_get(cal, "ceilings_by_regime") or {}).get("sustained")
    copy = _get(sustained, "dram_bytes_per_s") or _get(_get(cal, "ceilings"), "dram_bytes_per_s")
    if not points or len(flush) != 1 or not copy:
        return None
    flush_bytes = float(flush.pop())  # type: ignore[arg-type]
    # the enforced limit and the fitted static power: the probe ran ~1 s at the cap, the average
    # the cap regulates to; for a probe-sized call both cancel, and the sizes' e agree best with
    # these (tensorforge.bound.cap_bound)
    return cap_calibration(
        points,
        coefficients.power_limit_w or bound_power_w(coefficients),
        coefficients.static_w,
        flush_s=flush_bytes / float(copy),
        flush_j=flush_bytes * coefficients.joules_per_dram_byte_low,
        margin=margin,
    )


def cap_record(cap: CapCalibration) -> CapRecord:
    return CapRecord(
        joules_per_flop=dict(cap.joules_per_flop),
        per_size={m: {str(n): e for n, e in sizes} for m, sizes in cap.per_size.items()},
        margin=CAP_MARGIN,
        power_w=cap.power_w,
        static_w=cap.static_w,
        flush_s=cap.flush_s,
        flush_j=cap.flush_j,
        method=CAP_METHOD.format(margin=CAP_MARGIN),
    )


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
    if sustained_rates:  # the estimate's capped time (tensorforge.energy.model.capped_time)
        coefficients = attrs.evolve(coefficients, sustained_rate_flop_s=sustained_rates)
    cache = device_target.cache_level()
    cache_bytes = float(cache.capacity_bytes) if cache is not None else None
    rows: dict[str, WorkloadEnergyRecord] = {}
    probe_calls = probe_call_s(cal)
    cap = cap_calibration_of(cal, coefficients)
    for w in calibrated_pred.workloads:
        estimate_s = w.estimate.eager_s if w.estimate is not None else None
        # an energy window runs its executions back to back without the L2 flush: the estimate's
        # window time (the flushed device time less the calibrated warm saving)
        device_s = window_time(w.estimate)
        sustained_w = sustained_pred.workload(w.name) if sustained_pred is not None else None
        sustained_device_s = window_time(getattr(sustained_w, "estimate", None))
        e = workload_energy(w, coefficients, cache_bytes, estimate_s, device_s, sustained_device_s, sustained_w)
        cap_s = cap_bound_s(flops_by_mode(w), cap) if cap is not None else None
        bound_s, bound_from = sustained_bound(w, sustained_w, e.power_limited_bound_s, probe_calls, cap_s)
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
            cap_bound_s=cap_s,
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
            cap=cap_record(cap) if cap is not None else None,
        ),
        None,
    )
