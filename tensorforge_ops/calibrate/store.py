"""CALIBRATED ceilings: run the probes on a session, store the result per device fingerprint,
reuse it, and hand it to the Core as `Ceilings(origin='calibrated')`. The stored document is the
typed `Calibration` of the capture's CALIBRATED section (capture/sections/calibrated.py)."""

import datetime as dt
from pathlib import Path
from collections.abc import Callable

from tensorforge import __version__
from tensorforge.api import Ceilings, TensorForgeError, canonical_json, one_line, read_json, write_atomic

from ..api import ProbeResult, Unavailable
from ..capture.sections.calibrated import CalibratedCeilings, Calibration, ProbeRecord


def home() -> Path:
    """Where TensorForge keeps state ($TENSORFORGE_HOME, else ~/.cache/tensorforge): one rule,
    in tensorforge_ops/home.py."""
    from ..home import home as tensorforge_home
    return tensorforge_home()


def store_path(fingerprint: str) -> Path:
    return home() / "calibrations" / f"{fingerprint}.json"


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def run_probes(session, probes, progress: Callable[[str], None] = lambda s: None) -> Calibration:
    """A calibration: every probe's result and the ceilings they add up to."""
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
    return Calibration(
        fingerprint=session.info.fingerprint, device=session.info.name,
        device_details=dict(session.info.details), measured_at=started, finished_at=now(),
        tensorforge_version=__version__,
        ceilings=CalibratedCeilings(compute=compute, dram_bytes_per_s=dram, launch_floor_s=launch),
        probes={r.name: ProbeRecord(method=r.method, duration_s=r.duration_s, compute=dict(r.compute),
                                    dram_bytes_per_s=r.dram_bytes_per_s, launch_floor_s=r.launch_floor_s,
                                    details=dict(r.details))
                for r in results},
        failed_probes=failures)


def save(calibration: Calibration) -> Path:
    from ..capture.convert import to_document
    path = store_path(calibration.fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, canonical_json(to_document(calibration)))
    return path


def load(fingerprint: str) -> Calibration | None:
    """The stored calibration for this fingerprint, or None. A damaged file is an error the
    user must see (naming the file), not something to silently overwrite."""
    from ..capture.convert import first_error, converter
    path = store_path(fingerprint)
    if not path.exists():
        return None
    try:
        data = read_json(path, "stored calibration")
    except TensorForgeError as exc:
        raise TensorForgeError(f"{exc}; remove it or pass --recalibrate") from None
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint:
        raise TensorForgeError(f"stored calibration {path} is not a calibration for {fingerprint}; "
                               "remove it or pass --recalibrate")
    try:
        return converter.structure(data, Calibration)
    except Exception as exc:
        raise TensorForgeError(f"stored calibration {path} is not a calibration ({first_error(exc, 'calibration')}); "
                               "remove it or pass --recalibrate") from None


def to_ceilings(calibration: Calibration) -> Ceilings | None:
    """Core ceilings from a calibration; None when the probes that matter did not run."""
    c = calibration.ceilings
    if not c.compute or not c.dram_bytes_per_s:
        return None
    return Ceilings(origin="calibrated", compute={k: float(v) for k, v in c.compute.items()},
                    dram_bytes_per_s=float(c.dram_bytes_per_s),
                    source=f"calibrated on {calibration.device} at {calibration.measured_at} "
                           f"({calibration.fingerprint})")
