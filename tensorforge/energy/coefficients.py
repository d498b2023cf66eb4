"""Where `predict`'s energy coefficients come from, first found wins:

1. 'calibrated': the document given with `--ceilings` (a calibration, its `energy` section, or a
   capture, its CALIBRATED section's), when it holds fitted energy coefficients;
2. 'shipped': the coefficients of the target's device shipped with TensorForge (shipped.json
   beside this file), each copied from a real calibration whose `basis` says which device, when
   and where the document is; a system of several such devices gets them per device;
3. 'declared': the target's [power] figures: idle_w as the static power, joules_per_flop per math
   mode, joules_per_dram_byte (0 where not declared, and said), the power limit (power_limit_w,
   else tdp_w), each with its source under 'power.<figure>'.

Lower ends (what the floor uses): a calibration's own (fit - 2 standard errors, less 3%). A
declared figure has no uncertainty of its own, so its lower end is DECLARED_LOW of it: the H200
calibration's lower ends sat 7-17% below its fitted figures (static 17%), and a figure carried
from another chip (ASSUMED) is no better known. A floor from declared figures is a floor of the
model with those figures; only a calibration of the device itself makes it one of the device.

Pure JSON reading in the Core (it never imports what wrote the documents): keys by name.
"""

import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import attrs

from tensorforge.energy.model import EnergyCoefficients
from tensorforge.errors import TensorForgeError
from tensorforge.files.documents import read_json

DATA = Path(__file__).with_name("shipped.json")
DECLARED_LOW = 0.8
# the scalar and per-mode fields of a coefficients record (the capture's EnergyCoefficientsRecord)
REQUIRED = ("static_w", "static_w_low", "joules_per_dram_byte", "joules_per_dram_byte_low")
OPTIONAL = (
    "idle_w",
    "power_limit_w",
    "capped_power_w",
    "busy_w",
    "peak_power_w",
    "busy_below_cap_w",
    "host_s_per_kernel",
    "joules_per_vector_flop",
)
PER_MODE = ("joules_per_flop", "joules_per_flop_low", "capped_rate_flop_s", "sustained_rate_flop_s")


@attrs.frozen
class EnergyBasis:
    """The coefficients `predict` uses and where they come from; `coefficients` None: no energy,
    and `source` says why."""

    kind: str | None  # 'calibrated', 'shipped', 'declared'; None: no coefficients
    source: str
    coefficients: EnergyCoefficients | None
    short: str = ""  # the source in a few words, for a line of text


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise TensorForgeError(f"{where} must be a finite number >= 0, got {value!r}")
    return float(value)


def coefficients_from_record(data: Any, where: str) -> EnergyCoefficients:
    """EnergyCoefficients from a coefficients record as a capture or calibration stores it
    (`calibrated.energy.coefficients`); a TensorForgeError naming the first bad key."""
    if not isinstance(data, dict):
        raise TensorForgeError(f"{where}: expected a JSON object of energy coefficients")
    values: dict[str, Any] = {}
    for key in REQUIRED:
        if key not in data:
            raise TensorForgeError(f"{where}: '{key}' is missing")
        values[key] = _number(data[key], f"{where}: '{key}'")
    for key in OPTIONAL:
        values[key] = None if data.get(key) is None else _number(data[key], f"{where}: '{key}'")
    for key in PER_MODE:
        table = data.get(key) or {}
        if not isinstance(table, dict):
            raise TensorForgeError(f"{where}: '{key}' must map math modes to numbers")
        values[key] = {str(m): _number(v, f"{where}: '{key}.{m}'") for m, v in sorted(table.items())}
    return EnergyCoefficients(
        **values,
        power_limit_source=str(data.get("power_limit_source") or ""),
        source=str(data.get("source") or where),
    )


def coefficients_in_document(path: str | Path) -> EnergyCoefficients | None:
    """The energy coefficients of a calibration or a capture (`predict --ceilings`); None where
    it has none (a calibration without the energy probe, a failed fit). The ceilings reader has
    already refused a file it cannot read or that describes another device."""
    try:
        data = read_json(path, "ceilings document")
    except TensorForgeError:
        return None
    if not isinstance(data, dict):
        return None
    calibrated = data.get("calibrated")
    section: dict[str, Any] = calibrated if isinstance(calibrated, dict) else data
    energy = section.get("energy")
    record = energy.get("coefficients") if isinstance(energy, dict) else None
    if not isinstance(record, dict):
        return None
    record = dict(record)
    sustained = (section.get("ceilings_by_regime") or {}).get("sustained")
    if "sustained_rate_flop_s" not in record and isinstance(sustained, dict):
        record["sustained_rate_flop_s"] = sustained.get("compute") or {}
    return coefficients_from_record(record, f"energy coefficients in {path}")


@lru_cache(maxsize=1)
def shipped() -> dict[str, tuple[str, EnergyCoefficients]]:
    """{device name: (basis, coefficients)} from shipped.json."""
    table = json.loads(DATA.read_text(encoding="utf-8"))
    return {
        name: (entry["basis"], coefficients_from_record(entry["coefficients"], f"shipped energy of {name}"))
        for name, entry in table.items()
    }


def _devices(target) -> list[str]:
    """The device names a target describes, a system's ('2 x NVIDIA H200') per device."""
    return [re.sub(r"^\d+\s*x\s+", "", name) for name in getattr(target, "device_names", ()) or ()]


def declared(target) -> EnergyBasis:
    """The target's [power] figures as energy coefficients (module docstring), or why not."""
    power = getattr(target, "power", None)
    sources = getattr(target, "sources", {}) or {}
    if power is None or power.idle_w is None or not power.joules_per_flop:
        return EnergyBasis(
            None,
            f"target {target.name} declares no energy figures ([power] idle_w and joules_per_flop) "
            "and no calibration of its device ships with TensorForge; give --ceilings with a calibration",
            None,
        )
    byte_j = power.joules_per_dram_byte or 0.0
    named = [k for k in ("idle_w", "joules_per_flop", "joules_per_dram_byte") if f"power.{k}" in sources]
    source = f"declared by target {target.name} ([power]; sources: {', '.join(f'power.{k}' for k in named) or 'none'})"
    if power.joules_per_dram_byte is None:
        source += "; no joules_per_dram_byte declared: DRAM bytes cost 0 J"
    low = DECLARED_LOW
    coefficients = EnergyCoefficients(
        static_w=float(power.idle_w),
        static_w_low=float(power.idle_w) * low,
        idle_w=float(power.idle_w),
        joules_per_flop=dict(power.joules_per_flop),
        joules_per_flop_low={m: float(v) * low for m, v in power.joules_per_flop.items()},
        joules_per_dram_byte=float(byte_j),
        joules_per_dram_byte_low=float(byte_j) * low,
        power_limit_w=power.limit_w,
        power_limit_source="power.power_limit_w" if power.power_limit_w is not None else "power.tdp_w",
        source=source,
    )
    return EnergyBasis("declared", source, coefficients, f"target {target.name}'s [power] figures")


def energy_basis(target, ceilings_path: str | None = None) -> EnergyBasis:
    """The coefficients for `target` by the order in the module docstring."""
    missing = ""
    if ceilings_path:
        found = coefficients_in_document(ceilings_path)
        power = getattr(target, "power", None)
        if found is not None and found.power_limit_w is None and power is not None:
            # the device reported no limit: the target's declared one stands in, and says so
            found = attrs.evolve(found, power_limit_w=power.limit_w, power_limit_source=f"declared by {target.name}")
        if found is not None:
            source = found.source or f"calibrated, from {ceilings_path}"
            return EnergyBasis("calibrated", source, found, f"{source.split(' (')[0]}, from {ceilings_path}")
        missing = f"{ceilings_path} holds no energy coefficients; "
    for name in _devices(target):
        if name in shipped():
            basis, coefficients = shipped()[name]
            short = basis.split(" (")[0]
            return EnergyBasis("shipped", f"{missing}shipped coefficients of {name}: {basis}", coefficients, short)
    fallback = declared(target)
    return attrs.evolve(fallback, source=missing + fallback.source)
