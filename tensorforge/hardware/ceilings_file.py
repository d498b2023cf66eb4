"""Ceilings handed in from outside the Core, read from JSON: `predict --ceilings FILE`.

FILE may be
  * a calibration document (`tensorforge calibrate --json > cal.json`, or the stored copy under
    ~/.cache/tensorforge/calibrations/), labelled CALIBRATED, naming the device it ran on;
  * a capture (`tensorforge run ... -o capture.json`): its CALIBRATED section is used;
  * a bare {"compute": {...}, "dram_bytes_per_s": ...} object, which names no device.

Ceilings describe the device they were measured on, so they are refused for a target that
device is not (and bare ones, which cannot be checked) unless the caller explicitly allows it;
then the prediction says whose ceilings it used. The JSON is parsed here, in the Core, which
never imports the Ops package that wrote it: the layout is read by its keys.
"""

from pathlib import Path
from typing import Any, TypeGuard

from tensorforge.errors import TensorForgeError
from tensorforge.files.documents import read_json
from tensorforge.hardware.target import Ceilings, Target
from tensorforge.workloads.collectives import ceilings_from_data as collective_ceilings
from tensorforge.workloads.precision import MATH_MODES

# A capture names itself 'tensorforge.capture' (schema_version beside it); version 1 wrote
# 'tensorforge.capture/1'. The CALIBRATED section has the same layout in both.
CAPTURE_SCHEMA = "tensorforge.capture"
CAPTURE_SCHEMA_PREFIX = CAPTURE_SCHEMA + "/"
OVERRIDE = "--force-ceilings"


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and value != float("inf")


def _section(data: Any, where: str) -> tuple[dict[str, Any], str]:
    """The object holding the ceilings and a description of what kind of document it was."""
    if not isinstance(data, dict):
        raise TensorForgeError(f"{where}: expected a JSON object")
    schema = data.get("schema")
    if isinstance(schema, str) and (schema == CAPTURE_SCHEMA or schema.startswith(CAPTURE_SCHEMA_PREFIX)):
        section = data.get("calibrated")
        if not isinstance(section, dict) or section.get("label") != "CALIBRATED":
            raise TensorForgeError(f"{where}: capture has no CALIBRATED section")
        if not section.get("available", True) or not isinstance(section.get("ceilings"), dict):
            reason = section.get("reason") or "no ceilings recorded"
            raise TensorForgeError(f"{where}: capture has no calibrated ceilings ({reason})")
        return section, "capture"
    if data.get("label") == "CALIBRATED" or isinstance(data.get("ceilings"), dict):
        return data, "calibration"
    if "compute" in data:
        return data, "ceilings"
    raise TensorForgeError(
        f"{where}: neither a calibration document (tensorforge calibrate --json), "
        'a capture, nor a {"compute": ..., "dram_bytes_per_s": ...} object'
    )


def ceilings_from_data(data, where: str) -> Ceilings:
    section, kind = _section(data, where)
    values = section.get("ceilings", section) if kind != "ceilings" else section
    if not isinstance(values, dict):
        raise TensorForgeError(f"{where}: 'ceilings' must be a JSON object")
    compute = values.get("compute")
    if not isinstance(compute, dict) or not compute:
        raise TensorForgeError(f"{where}: 'compute' must map math modes to FLOP/s")
    for mode, rate in compute.items():
        if mode not in MATH_MODES:
            raise TensorForgeError(f"{where}: compute has unknown math mode {mode!r}")
        if not _number(rate):
            raise TensorForgeError(f"{where}: compute[{mode}] must be a positive number, got {rate!r}")
    dram = values.get("dram_bytes_per_s")
    if not _number(dram):
        raise TensorForgeError(f"{where}: 'dram_bytes_per_s' must be a positive number, got {dram!r}")
    device = section.get("device")
    device = device.strip() if isinstance(device, str) else ""
    if device:
        source = (
            f"calibrated on {device} at {section.get('measured_at', 'an unrecorded time')} "
            f"({section.get('fingerprint', 'no fingerprint')}), from {kind} {where}"
        )
    else:
        source = str(section.get("source") or f"{kind} {where}")
    return Ceilings(
        origin=str(values.get("origin", "calibrated")),
        compute={k: float(v) for k, v in compute.items()},
        dram_bytes_per_s=float(dram),
        source=source,
        device=device,
        collectives=collective_ceilings(values.get("collectives"), where),
    )


def check_device(ceilings: Ceilings, target: Target, where: str, allow_other_device: bool) -> None:
    """Refuse ceilings measured on a device the target does not describe (or on no named
    device) unless the caller allows it; then the prediction itself says so (model.py)."""
    if allow_other_device:
        return
    if not ceilings.device:
        raise TensorForgeError(
            f"{where} does not name the device it was measured on, so it cannot be "
            f"checked against target {target.name!r}; pass {OVERRIDE} to use it anyway"
        )
    if not target.matches_device(ceilings.device):
        known = ", ".join(target.device_names) or "no device names"
        raise TensorForgeError(
            f"{where} was measured on {ceilings.device!r}, not on target {target.name!r} "
            f"(which matches: {known}); pass {OVERRIDE} to use it anyway"
        )


def load_ceilings(path, target: Target | None = None, allow_other_device: bool = False) -> Ceilings:
    """Ceilings from a calibration document, a capture or a bare ceilings object; checked
    against `target`'s device when one is given."""
    path = Path(path)
    where = f"ceilings file {path}"
    ceilings = ceilings_from_data(read_json(path, "ceilings file"), where)
    if target is not None:
        check_device(ceilings, target, where, allow_other_device)
    return ceilings
