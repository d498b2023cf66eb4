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
    # Sustained probes last: they leave the device hot and power-capped, which would lower the
    # ceilings of burst probes run after them. Otherwise the given order.
    for probe in sorted(probes, key=lambda p: getattr(p, "regime", "burst") == "sustained"):
        progress(f"calibrating: {probe.name}")
        try:
            results.append(probe.run(session))
        except Unavailable as exc:
            failures[probe.name] = str(exc)
        except Exception as exc:  # one failing probe leaves the others' ceilings usable
            failures[probe.name] = one_line(exc)
    by_regime: dict[str, dict[str, Any]] = {}
    floors: dict[str, float] = {}
    launch = None
    for result in results:
        regime = by_regime.setdefault(result.regime, {"compute": {}, "dram_bytes_per_s": None})
        regime["compute"].update(result.compute)
        regime["dram_bytes_per_s"] = result.dram_bytes_per_s or regime["dram_bytes_per_s"]
        floors.update(result.floors)
        launch = result.launch_floor_s if result.launch_floor_s else launch
    # 'ceilings' keeps its meaning for every reader: the regime the probes of a device ran in by
    # default (burst on a GPU, the single regime of a device that has only one).
    base = by_regime.get("burst") or by_regime.get("single") or {"compute": {}, "dram_bytes_per_s": None}
    return {
        "label": "CALIBRATED",
        "fingerprint": session.info.fingerprint,
        "device": session.info.name,
        "device_details": dict(session.info.details),
        "measured_at": started,
        "finished_at": now(),
        "tensorforge_version": __version__,
        "ceilings": {"compute": dict(base["compute"]), "dram_bytes_per_s": base["dram_bytes_per_s"],
                     "launch_floor_s": launch},
        "ceilings_by_regime": by_regime,
        "floors": floors,
        "probes": {r.name: {"method": r.method, "duration_s": r.duration_s, "regime": r.regime,
                            "compute": dict(r.compute), "dram_bytes_per_s": r.dram_bytes_per_s,
                            "launch_floor_s": r.launch_floor_s, "floors": dict(r.floors),
                            "details": dict(r.details)}
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


def regimes(calibration: dict[str, Any]) -> list[str]:
    """The regimes a calibration has ceilings for ('burst' alone for calibrations written before
    regimes existed)."""
    by_regime = calibration.get("ceilings_by_regime")
    return sorted(by_regime) if isinstance(by_regime, dict) and by_regime else ["burst"]


def to_ceilings(calibration: dict[str, Any], regime: str | None = None) -> Ceilings | None:
    """Core ceilings of one regime (default: the calibration's base 'ceilings'); None when the
    probes that matter did not run in it.

    A math mode or the bandwidth missing from the sustained regime is taken from the burst
    one, and the source says so: nothing runs faster sustained than in a burst, so the bound
    stays a lower bound (only a looser one)."""
    c = calibration.get("ceilings", {})
    borrowed: list[str] = []
    if regime is not None and regime in (calibration.get("ceilings_by_regime") or {}):
        own = calibration["ceilings_by_regime"][regime]
        compute = dict(own.get("compute") or {})
        for mode, rate in (c.get("compute") or {}).items():
            if mode not in compute:
                compute[mode] = rate
                borrowed.append(mode)
        dram = own.get("dram_bytes_per_s")
        if not dram and c.get("dram_bytes_per_s"):
            dram = c["dram_bytes_per_s"]
            borrowed.append("DRAM bandwidth")
        c = {"compute": compute, "dram_bytes_per_s": dram}
    elif regime not in (None, "burst", "single"):
        return None
    if not c.get("compute") or not c.get("dram_bytes_per_s"):
        return None
    where = f" ({regime} regime" + (f"; {', '.join(borrowed)} from the burst probes" if borrowed else "") + ")" \
        if regime else ""
    return Ceilings(origin="calibrated", compute={k: float(v) for k, v in c["compute"].items()},
                    dram_bytes_per_s=float(c["dram_bytes_per_s"]),
                    source=f"calibrated on {calibration.get('device')} at {calibration.get('measured_at')} "
                           f"({calibration.get('fingerprint')}){where}")
