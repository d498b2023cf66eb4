"""CALIBRATED ceilings: run the probes on a session, store the result per device fingerprint,
reuse it, and hand it to the Core as `Ceilings(origin='calibrated')`."""

import datetime as dt
import os
from pathlib import Path
from typing import Any
from collections.abc import Callable

from tensorforge import __version__
from tensorforge.api import (Ceilings, TensorForgeError, canonical_json, one_line, read_json,
                             write_atomic)

from ..api import ProbeResult, Unavailable


def home() -> Path:
    """Where TensorForge keeps state: $TENSORFORGE_HOME, else ~/.cache/tensorforge."""
    root = os.environ.get("TENSORFORGE_HOME")
    return Path(root) if root else Path.home() / ".cache" / "tensorforge"


def store_path(fingerprint: str) -> Path:
    return home() / "calibrations" / f"{fingerprint}.json"


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def run_probes(session, probes, progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """A calibration document: every probe's result and the ceilings they add up to."""
    results: list[ProbeResult] = []
    failures: dict[str, str] = {}
    started = now()
    for probe in probes:
        progress(f"calibrating: {probe.name}")
        try:
            results.append(probe.run(session))
        except Unavailable as exc:
            failures[probe.name] = str(exc)
        except Exception as exc:  # one failing probe leaves the others' ceilings usable
            failures[probe.name] = one_line(exc)
    compute: dict[str, float] = {}
    dram = launch = None
    for result in results:
        compute.update(result.compute)
        dram = result.dram_bytes_per_s if result.dram_bytes_per_s else dram
        launch = result.launch_floor_s if result.launch_floor_s else launch
    return {
        "label": "CALIBRATED",
        "fingerprint": session.info.fingerprint,
        "device": session.info.name,
        "device_details": dict(session.info.details),
        "measured_at": started,
        "finished_at": now(),
        "tensorforge_version": __version__,
        "ceilings": {"compute": compute, "dram_bytes_per_s": dram, "launch_floor_s": launch},
        "probes": {r.name: {"method": r.method, "duration_s": r.duration_s,
                            "compute": dict(r.compute), "dram_bytes_per_s": r.dram_bytes_per_s,
                            "launch_floor_s": r.launch_floor_s, "details": dict(r.details)}
                   for r in results},
        "failed_probes": failures,
    }


def save(calibration: dict[str, Any]) -> Path:
    path = store_path(calibration["fingerprint"])
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, canonical_json(calibration))
    return path


def load(fingerprint: str) -> dict[str, Any] | None:
    """The stored calibration for this fingerprint, or None. A damaged file is an error the
    user must see (naming the file), not something to silently overwrite."""
    path = store_path(fingerprint)
    if not path.exists():
        return None
    try:
        data = read_json(path, "stored calibration")
    except TensorForgeError as exc:
        raise TensorForgeError(f"{exc}; remove it or pass --recalibrate") from None
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint or "ceilings" not in data:
        raise TensorForgeError(f"stored calibration {path} is not a calibration for {fingerprint}; "
                               "remove it or pass --recalibrate")
    return data


def to_ceilings(calibration: dict[str, Any]) -> Ceilings | None:
    """Core ceilings from a calibration; None when the probes that matter did not run."""
    c = calibration.get("ceilings", {})
    if not c.get("compute") or not c.get("dram_bytes_per_s"):
        return None
    return Ceilings(origin="calibrated", compute={k: float(v) for k, v in c["compute"].items()},
                    dram_bytes_per_s=float(c["dram_bytes_per_s"]),
                    source=f"calibrated on {calibration.get('device')} at {calibration.get('measured_at')} "
                           f"({calibration.get('fingerprint')})")
