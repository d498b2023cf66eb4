"""CALIBRATED energy coefficients: a least-squares fit of the probe windows' mean power

    P = P_s + sum_m e_m * (FLOP_m / s) + e_b * (DRAM bytes / s)

over windows of different arithmetic intensity (a launch-bound loop of tiny kernels: the static
power with the clocks up; a device-to-device copy: DRAM bytes and no math; square GEMMs per math
mode: math and few bytes; a skinny GEMM: both). The idle window (nothing running) is kept apart:
it is the lowest power the device draws and the floor's static power cannot exceed it.

Lower ends, for the floor: each coefficient minus twice its standard error, less a further
LOWER_MARGIN of itself (the counter and the power integration agree to about 2%, and a workload's
kernels may be more frugal than the probes'), never below zero.

Which operating point the coefficients describe: the probe windows run the work back to back, so
the large GEMMs run at the power cap, at the lowest clock and voltage the device uses for math,
where energy per FLOP is lowest (the first H200 session, whose windows idled between executions
and so ran at full clock, fitted 21% more J per bf16 FLOP than the capped runs' telemetry
implies). Lowest is what the floor and the power-limited bound need; an estimate for work that
runs at full clock comes out low by about that much. Why not the fit itself: a floor
built on fitted values is exceeded by every workload that runs a little more efficiently than
the probes did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tensorforge.api import EnergyCoefficients
from tensorforge_measure.capture.sections.energy import EnergyCoefficientsRecord, EnergyPoint

LOWER_MARGIN = 0.03
SIGMAS = 2.0


class FitError(ValueError):
    pass


def fit(
    points: Sequence[EnergyPoint],
    idle_w: float | None,
    power_limit_w: float | None,
    power_limit_source: str,
    source: str,
) -> tuple[EnergyCoefficientsRecord, dict[str, float], list[float]]:
    """The coefficients, their standard errors by name, and each point's residual (W)."""
    loaded = [p for p in points if p.seconds > 0]
    modes = sorted({m for p in loaded for m, f in p.flops.items() if f > 0})
    names = ["static_w", *(f"joules_per_flop.{m}" for m in modes), "joules_per_dram_byte"]
    if len(loaded) < len(names):
        raise FitError(f"{len(loaded)} probe windows for {len(names)} coefficients")
    x = np.array([[1.0, *(p.flops.get(m, 0.0) / p.seconds for m in modes), p.dram_bytes / p.seconds] for p in loaded])
    y = np.array([p.joules / p.seconds for p in loaded])
    scale = np.linalg.norm(x, axis=0)
    if not np.all(scale > 0):
        raise FitError("a coefficient has no probe window that exercises it")
    xs = x / scale
    beta_s, _res, rank, _sv = np.linalg.lstsq(xs, y, rcond=None)
    if rank < len(names):
        raise FitError("the probe windows do not separate the coefficients (rank-deficient)")
    beta = beta_s / scale
    residuals = y - x @ beta
    dof = len(loaded) - len(names)
    if dof > 0:
        sigma2 = float(residuals @ residuals) / dof
        cov = sigma2 * np.linalg.inv(xs.T @ xs)
        se = np.sqrt(np.maximum(np.diag(cov), 0.0)) / scale
    else:  # exactly determined: no spread to estimate; the margin alone widens the lower ends
        se = np.zeros(len(names))
    values = dict(zip(names, (float(b) for b in beta)))
    errors = dict(zip(names, (float(s) for s in se)))

    def low(name: str) -> float:
        return max(0.0, (values[name] - SIGMAS * errors[name]) * (1 - LOWER_MARGIN))

    static_low = low("static_w")
    if idle_w is not None:
        static_low = min(static_low, idle_w)
    record = EnergyCoefficientsRecord(
        static_w=values["static_w"],
        static_w_low=static_low,
        idle_w=idle_w,
        joules_per_flop={m: max(0.0, values[f"joules_per_flop.{m}"]) for m in modes},
        joules_per_flop_low={m: low(f"joules_per_flop.{m}") for m in modes},
        joules_per_dram_byte=max(0.0, values["joules_per_dram_byte"]),
        joules_per_dram_byte_low=low("joules_per_dram_byte"),
        power_limit_w=power_limit_w,
        power_limit_source=power_limit_source,
        source=source,
    )
    return record, errors, [float(r) for r in residuals]


def peak_power_w(points: Sequence[EnergyPoint]) -> float | None:
    """The highest mean power (counter joules / seconds) of the probe windows: the power the
    device is seen to draw over a fraction of a second, which the power-limited bound must allow
    (tensorforge.energy.model.bound_power_w). None without a window."""
    powers = [p.joules / p.seconds for p in points if p.seconds > 0]
    return max(powers) if powers else None


def to_core(record: EnergyCoefficientsRecord, power_limit: tuple[float, str] | None = None) -> EnergyCoefficients:
    """The Core's coefficients from the capture's record; `power_limit` (W, source) stands in
    where the device reported none (a target's declared limit)."""
    limit, limit_source = record.power_limit_w, record.power_limit_source
    if limit is None and power_limit is not None:
        limit, limit_source = power_limit
    return EnergyCoefficients(
        static_w=record.static_w,
        static_w_low=record.static_w_low,
        idle_w=record.idle_w,
        joules_per_flop=dict(record.joules_per_flop),
        joules_per_flop_low=dict(record.joules_per_flop_low),
        joules_per_dram_byte=record.joules_per_dram_byte,
        joules_per_dram_byte_low=record.joules_per_dram_byte_low,
        power_limit_w=limit,
        power_limit_source=limit_source,
        source=record.source,
        capped_rate_flop_s=dict(record.capped_rate_flop_s or {}),
        capped_power_w=record.capped_power_w,
        busy_w=record.busy_w,
        peak_power_w=record.peak_power_w,
        busy_below_cap_w=record.busy_below_cap_w,
        host_s_per_kernel=record.host_s_per_kernel,
        joules_per_vector_flop=record.joules_per_vector_flop,
    )


def flops_map(mode: str, flops: float) -> Mapping[str, float]:
    return {mode: flops} if flops else {}
