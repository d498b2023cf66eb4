"""Hardware targets: a PE array, on-chip SRAM levels and DRAM, each figure with its source.

Targets hold datasheet figures (dense peaks only). `datasheet_ceilings` turns them into the
rates the model uses; calibration (Ops) can hand in measured `Ceilings` instead, and the Core
never needs to know where they came from beyond the `origin` label.
"""

import math
from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge.energy.model import PowerFigures, validate_power
from tensorforge.errors import TensorForgeError, unknown
from tensorforge.hardware.interconnect import Interconnect, validate_interconnect
from tensorforge.workloads.precision import MATH_MODES, VECTOR_MODE, VECTOR_PRECISIONS

SCOPES = ("per_unit", "shared")


@attrs.frozen
class PEArray:
    """`units` identical processing units (SMs), each doing `flops_per_clock[mode]` dense
    FLOPs per clock in each math mode it supports (matrix work: GEMMs, convolutions, attention).

    Elementwise and reduction work runs on the vector (non-tensor) units:
    `vector_flops_per_clock[precision]` (fp32, fp16, bf16; an FMA counts 2) and
    `special_per_clock[precision]`, transcendental results (exp, tanh, rsqrt...) per clock on
    special-function units. Both are optional: vector fp32 defaults to the fp32 math mode's
    rate, and without special-function units a transcendental runs on the vector units.
    """

    units: int
    unit_name: str
    flops_per_clock: Mapping[str, float]
    vector_flops_per_clock: Mapping[str, float] = attrs.field(factory=dict)
    special_per_clock: Mapping[str, float] = attrs.field(factory=dict)

    def vector_rates(self) -> dict[str, float]:
        """Vector FLOPs per clock per unit by precision, fp32 always present."""
        rates = {VECTOR_MODE: self.flops_per_clock.get(VECTOR_MODE, 0.0)}
        rates.update(self.vector_flops_per_clock)
        return rates


@attrs.frozen
class MemoryLevel:
    """One on-chip SRAM level. `per_unit` levels (shared memory) stage tiles; the outermost
    `shared` level (L2) is where concurrently running tiles reuse operands.
    `bytes_per_clock` is per unit for per_unit levels and total for shared ones; None when no
    trustworthy figure is published (the level's traffic is then reported but not timed)."""

    name: str
    capacity_bytes: int
    scope: str
    bytes_per_clock: float | None = None


@attrs.frozen
class OperatingPoint:
    """A clock and memory configuration the part is sold or run at."""

    name: str
    clock_mhz: float
    dram_bandwidth_bytes_per_s: float
    description: str = ""


@attrs.frozen
class Target:
    name: str
    description: str
    pe_array: PEArray
    sram: tuple[MemoryLevel, ...]
    dram_capacity_bytes: int
    operating_points: tuple[OperatingPoint, ...]
    default_operating_point: str
    sources: Mapping[str, str] = attrs.field(factory=dict)
    notes: tuple[str, ...] = ()
    # Names a measuring device reports for this part (e.g. 'NVIDIA H200'): measurements are
    # compared with this target's prediction (APE) only on a device that matches.
    device_names: tuple[str, ...] = ()
    # Architecture family (e.g. 'nvidia-sm90', 'cpu-x86-64'): which library tile menus and
    # which calibrated efficiencies the estimate (tensorforge.estimate) may carry over.
    architecture: str = ""
    # Estimate coefficients the target itself declares (a target file's [estimate] table), an
    # EstimateCoefficients; None: calibration or the family's shipped figures decide.
    estimate: Any | None = None
    # A system of several identical devices (the fields above describe one of them) and how
    # they are linked (interconnect.py); a single device has devices=1 and no interconnect.
    devices: int = 1
    interconnect: Interconnect | None = None
    # Declared power figures (TDP, power limits; energy.py's PowerFigures), each sourced under
    # 'power.<figure>' in `sources`; None where the target declares none.
    power: PowerFigures | None = None

    def matches_device(self, device_name: str) -> bool:
        name = device_name.strip().lower()
        return any(name == known.lower() for known in self.device_names)

    def operating_point(self, name: str | None = None) -> OperatingPoint:
        wanted = name or self.default_operating_point
        for point in self.operating_points:
            if point.name == wanted:
                return point
        raise unknown(f"operating point for target {self.name!r}", wanted, [p.name for p in self.operating_points])

    def tile_level(self) -> MemoryLevel:
        return next(level for level in self.sram if level.scope == "per_unit")

    def cache_level(self) -> MemoryLevel | None:
        shared = [level for level in self.sram if level.scope == "shared"]
        return shared[-1] if shared else None


def validate_target(target) -> None:
    """Raise ValueError describing the first thing wrong with a target a plugin registered."""
    if not isinstance(target, Target):
        raise ValueError(f"expected a tensorforge.hardware.target.Target, got {type(target).__name__}")
    pe = target.pe_array
    if pe.units < 1:
        raise ValueError(f"target {target.name!r}: pe_array.units must be >= 1, got {pe.units}")
    if not pe.flops_per_clock:
        raise ValueError(f"target {target.name!r}: pe_array.flops_per_clock declares no math mode")
    for mode, rate in pe.flops_per_clock.items():
        if mode not in MATH_MODES:
            raise ValueError(f"target {target.name!r}: unknown math mode {mode!r} in flops_per_clock")
        if not rate > 0:
            raise ValueError(f"target {target.name!r}: flops_per_clock[{mode}] must be > 0, got {rate}")
    if "fp32" not in pe.flops_per_clock:
        raise ValueError(f"target {target.name!r}: flops_per_clock must declare fp32 (vector work runs there)")
    for table in ("vector_flops_per_clock", "special_per_clock"):
        for precision, rate in getattr(pe, table).items():
            if precision not in VECTOR_PRECISIONS:
                raise ValueError(
                    f"target {target.name!r}: unknown precision {precision!r} in {table}; "
                    f"known: {', '.join(VECTOR_PRECISIONS)}"
                )
            if not rate > 0:
                raise ValueError(f"target {target.name!r}: {table}[{precision}] must be > 0, got {rate}")
    if target.power is not None:
        if not isinstance(target.power, PowerFigures):
            raise ValueError(f"target {target.name!r}: power must be a tensorforge.energy.model.PowerFigures")
        validate_power(target.power, f"target {target.name!r}")
    if not any(level.scope == "per_unit" for level in target.sram):
        raise ValueError(f"target {target.name!r}: needs a per_unit SRAM level to stage tiles")
    for level in target.sram:
        if level.scope not in SCOPES:
            raise ValueError(f"target {target.name!r}: sram level {level.name!r} scope must be one of {SCOPES}")
        if level.capacity_bytes < 1:
            raise ValueError(f"target {target.name!r}: sram level {level.name!r} capacity must be >= 1 byte")
    if target.dram_capacity_bytes < 1:
        raise ValueError(f"target {target.name!r}: dram_capacity_bytes must be >= 1")
    if not target.operating_points:
        raise ValueError(f"target {target.name!r}: declares no operating point")
    for point in target.operating_points:
        if not (point.clock_mhz > 0 and point.dram_bandwidth_bytes_per_s > 0):
            raise ValueError(
                f"target {target.name!r}: operating point {point.name!r} needs positive clock and bandwidth"
            )
    if target.default_operating_point not in {p.name for p in target.operating_points}:
        raise ValueError(
            f"target {target.name!r}: default operating point {target.default_operating_point!r} is not declared"
        )
    validate_interconnect(target.name, target.devices, target.interconnect)
    _validate_rates(target)


def _validate_rates(target: "Target") -> None:
    """Every rate the model divides by is a finite number, at every operating point and over
    all devices: each figure may be finite while their product is not (flops_per_clock 1e308
    became "inf PFLOP/s", exit 0)."""
    for point in target.operating_points:
        try:
            ceilings = datasheet_ceilings(target, point.name)
            rates = [
                *(("flops_per_clock", m, v) for m, v in ceilings.compute.items()),
                *(("sram", n, v) for n, v in ceilings.sram_bytes_per_s.items()),
                *(("vector_flops_per_clock", p, v) for p, v in ceilings.vector.items()),
                *(("special_per_clock", p, v) for p, v in ceilings.special.items()),
            ]
            worst = [(table, key, v * target.devices) for table, key, v in rates]
        except OverflowError:
            raise ValueError(
                f"target {target.name!r}: a rate at operating point {point.name!r} is past float range "
                "(units x per-clock rate x clock)"
            ) from None
        for table, key, value in worst:
            if not math.isfinite(value):
                raise ValueError(
                    f"target {target.name!r}: {table}[{key}] x units x clock at operating point "
                    f"{point.name!r} (x {target.devices} devices) is not a finite rate"
                )


@attrs.frozen
class Ceilings:
    """The rates the model divides by. `origin` is 'datasheet' or 'calibrated'.

    compute: FLOP/s for the whole PE array per math mode. dram: bytes/s.
    sram: bytes/s per SRAM level name (per unit for per_unit levels) where known.
    vector: vector-unit FLOP/s per precision; special: transcendental results/s per precision
    (both for the whole array; empty in ceilings that calibration hands in, and then filled
    from the datasheet by `merge_ceilings`).
    device: the device the ceilings were measured on, where known (calibration documents and
    captures say it), so a prediction can tell ceilings that do not describe its target.
    """

    origin: str
    compute: Mapping[str, float]
    dram_bytes_per_s: float
    sram_bytes_per_s: Mapping[str, float] = attrs.field(factory=dict)
    source: str = ""
    # Where a merge filled a math mode from another origin, that mode's origin; else `origin`.
    compute_origin: Mapping[str, str] = attrs.field(factory=dict)
    vector: Mapping[str, float] = attrs.field(factory=dict)
    special: Mapping[str, float] = attrs.field(factory=dict)
    # Origin of the vector and special rates when it is not `origin` ('datasheet' after a merge).
    vector_origin: str = ""
    device: str = ""
    # Calibrated collective curves by collectives.ceiling_key (op/ranks); the datasheet side
    # has none: its links are the target's interconnect.
    collectives: Mapping[str, Any] = attrs.field(factory=dict)

    def origin_of(self, mode: str) -> str:
        return self.compute_origin.get(mode, self.origin)

    def origin_of_vector(self) -> str:
        return self.vector_origin or self.origin


def datasheet_ceilings(target: Target, operating_point: str | None = None) -> Ceilings:
    point = target.operating_point(operating_point)
    hz = point.clock_mhz * 1e6
    compute = {
        mode: target.pe_array.units * rate * hz for mode, rate in sorted(target.pe_array.flops_per_clock.items())
    }
    sram = {level.name: level.bytes_per_clock * hz for level in target.sram if level.bytes_per_clock}
    pe = target.pe_array
    vector = {p: pe.units * rate * hz for p, rate in sorted(pe.vector_rates().items())}
    special = {p: pe.units * rate * hz for p, rate in sorted(pe.special_per_clock.items())}
    return Ceilings(
        origin="datasheet",
        compute=compute,
        dram_bytes_per_s=point.dram_bandwidth_bytes_per_s,
        sram_bytes_per_s=sram,
        source=f"{target.name} datasheet at operating point {point.name!r} ({point.clock_mhz:g} MHz)",
        vector=vector,
        special=special,
    )


def merge_ceilings(calibrated: Ceilings, fallback: Ceilings) -> Ceilings:
    """Calibrated rates where measured, datasheet rates for what calibration did not probe.
    Which origin served each math mode is recorded per operator by the model.

    Calibration does not probe the vector units per precision, but its fp32 rate runs on them:
    when fp32 was calibrated, every vector rate is scaled by calibrated fp32 / datasheet fp32
    (what the vector units really sustain here, as the fp32 math mode has always been used for
    vector work). Special-function rates are only ever raised by that factor (when the datasheet
    clock is too low, as on a CPU that boosts above its reported clock), never lowered: nothing
    measured them."""
    compute = dict(fallback.compute)
    compute.update(calibrated.compute)
    sram = dict(fallback.sram_bytes_per_s)
    sram.update(calibrated.sram_bytes_per_s)
    origins = {mode: fallback.origin for mode in fallback.compute if mode not in calibrated.compute}
    vector, special, vector_origin = dict(fallback.vector), dict(fallback.special), fallback.origin
    if calibrated.vector:
        vector.update(calibrated.vector)
        special.update(calibrated.special)
        vector_origin = calibrated.origin
    else:
        scale = vector_scale(calibrated, fallback)
        if scale is not None:
            vector = {p: rate * scale for p, rate in vector.items()}
            special = {p: rate * max(1.0, scale) for p, rate in special.items()}
            vector_origin = calibrated.origin
    return Ceilings(
        origin=calibrated.origin,
        compute=compute,
        dram_bytes_per_s=calibrated.dram_bytes_per_s,
        sram_bytes_per_s=sram,
        source=calibrated.source,
        compute_origin=origins,
        vector=vector,
        special=special,
        vector_origin=vector_origin,
        device=calibrated.device,
        collectives=dict(calibrated.collectives),
    )


def vector_scale(calibrated: Ceilings, fallback: Ceilings) -> float | None:
    """Calibrated fp32 over the datasheet's fp32 vector rate; None when fp32 was not calibrated."""
    measured = calibrated.compute.get(VECTOR_MODE)
    sheet = fallback.vector.get(VECTOR_MODE)
    return measured / sheet if measured and sheet else None


def check_ceilings(ceilings: Ceilings) -> None:
    if not ceilings.dram_bytes_per_s > 0:
        raise TensorForgeError(f"{ceilings.origin} ceilings: DRAM bandwidth must be > 0")
    for mode, rate in ceilings.compute.items():
        if not rate > 0:
            raise TensorForgeError(f"{ceilings.origin} ceilings: compute[{mode}] must be > 0")
    for table in ("vector", "special"):
        for precision, rate in getattr(ceilings, table).items():
            if not rate > 0:
                raise TensorForgeError(f"{ceilings.origin} ceilings: {table}[{precision}] must be > 0")


def ceiling_for(ceilings: Ceilings, mode: str) -> float:
    if mode not in ceilings.compute:
        raise TensorForgeError(f"target declares no {mode} rate; known modes: {', '.join(sorted(ceilings.compute))}")
    return ceilings.compute[mode]
