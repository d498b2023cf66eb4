"""Which coefficients an estimate uses, and the rates they turn the ceilings into.

Order of preference, and what the output then says (`estimate basis`):
  1 calibrated: probes ran on the measured device (its calibration carries fitted coefficients);
  2 declared: the target file declares them (an architect's own figures);
  3 carried-over: the shipped coefficients of a calibrated device of the same architecture
    family (shipped.py says which device and when);
  4 carried-over-other-family: no coefficients of this family are shipped; the nearest
    family's are used (nearest_family: the closest NVIDIA compute capability with shipped
    coefficients, preferring the older one, whose kernels the newer parts also run: an sm89 L4
    runs cuBLAS's 'ampere_*' kernels) and the basis says so. Never a silent guess.
"""

import re

from tensorforge.estimate.coefficients import EstimateCoefficients
from tensorforge.estimate.shipped import shipped
from tensorforge.hardware.target import Ceilings, Target

# Which shipped family stands in for a family nobody calibrated, where no compute capability
# says more (nearest_family).
NEAREST = {"nvidia": "nvidia-sm90", "cpu": "cpu-x86-64", "x86": "cpu-x86-64"}


def nearest_family(family: str, table) -> str | None:
    """The shipped 'nvidia-smNN' family closest to `family` by compute capability: the newest at
    or below it (its kernels run on the newer part), else the oldest above it."""
    m = re.fullmatch(r"nvidia-sm(\d+)", family)
    if not m:
        return None
    want = int(m.group(1))
    have = sorted(int(f[len("nvidia-sm") :]) for f in table if re.fullmatch(r"nvidia-sm\d+", f))
    below = [v for v in have if v <= want]
    pick = below[-1] if below else (have[0] if have else None)
    return None if pick is None else f"nvidia-sm{pick}"


def family_of(target: Target) -> str:
    declared = getattr(target, "architecture", "") or ""
    if declared:
        return declared
    return "cpu" if target.pe_array.unit_name.lower() in ("core", "cores") else "unknown"


def coefficients_for(target: Target, calibrated: EstimateCoefficients | None = None) -> EstimateCoefficients:
    family = family_of(target)
    if calibrated is not None:
        return calibrated
    declared = getattr(target, "estimate", None)
    if declared is not None:
        return declared
    table = shipped()
    if family in table:
        return table[family]
    prefix = family.split("-")[0]
    stand_in = nearest_family(family, table) or NEAREST.get(
        prefix, "nvidia-sm90" if target.pe_array.unit_name == "SM" else "cpu-x86-64"
    )
    base = table[stand_in]
    return base.relabel(
        "carried-over-other-family",
        f"{family} takes {stand_in}'s coefficients (none shipped for it; the nearest family), {base.basis}",
    )


def achievable(ceilings: Ceilings, c: EstimateCoefficients) -> tuple[dict[str, float], float]:
    """Calibrated ceilings are achievable as they are; datasheet ones are scaled by what the
    source device achieved of its own datasheet (peak_fraction, dram_fraction)."""
    fallback = min(c.peak_fraction.values()) if c.peak_fraction else 1.0
    compute = {}
    for mode, rate in ceilings.compute.items():
        if ceilings.origin_of(mode) == "calibrated":
            compute[mode] = float(rate)
        else:
            compute[mode] = float(rate) * c.peak_fraction.get(mode, fallback)
    dram = float(ceilings.dram_bytes_per_s)
    if ceilings.origin != "calibrated":
        dram *= c.dram_fraction
    return compute, dram
