"""Ceilings handed in from outside the Core (calibration writes them), read from JSON.
The Core validates them but never imports whatever produced them."""

from pathlib import Path

from .errors import TensorForgeError
from .fileio import read_json
from .precision import MATH_MODES
from .target import Ceilings


def ceilings_from_data(data, where: str) -> Ceilings:
    if not isinstance(data, dict):
        raise TensorForgeError(f"{where}: expected a JSON object")
    data = data.get("ceilings", data)  # a calibration document nests them
    compute = data.get("compute")
    if not isinstance(compute, dict) or not compute:
        raise TensorForgeError(f"{where}: 'compute' must map math modes to FLOP/s")
    for mode, rate in compute.items():
        if mode not in MATH_MODES:
            raise TensorForgeError(f"{where}: compute has unknown math mode {mode!r}")
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not rate > 0:
            raise TensorForgeError(f"{where}: compute[{mode}] must be a positive number, got {rate!r}")
    dram = data.get("dram_bytes_per_s")
    if not isinstance(dram, (int, float)) or isinstance(dram, bool) or not dram > 0:
        raise TensorForgeError(f"{where}: 'dram_bytes_per_s' must be a positive number, got {dram!r}")
    return Ceilings(origin=str(data.get("origin", "calibrated")),
                    compute={k: float(v) for k, v in compute.items()},
                    dram_bytes_per_s=float(dram), source=str(data.get("source", where)))


def load_ceilings(path) -> Ceilings:
    path = Path(path)
    data = read_json(path, "ceilings file")
    return ceilings_from_data(data, f"ceilings file {path}")
