"""CALIBRATED ceilings: run the probes on a session, store the result per device fingerprint,
reuse it, and hand it to the Core as `Ceilings(origin='calibrated')`. The stored document is the
typed `Calibration` of the capture's CALIBRATED section (capture/sections/calibrated.py)."""

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tensorforge import __version__
from tensorforge.api import (
    Ceilings,
    TensorForgeError,
    canonical_json,
    collective_ceilings,
    one_line,
    read_json,
    write_atomic,
)
from tensorforge_measure.api import ProbeResult, Unavailable
from tensorforge_measure.capture.sections.calibrated import CalibratedCeilings, Calibration, ProbeRecord, RegimeCeilings
from tensorforge_measure.progress import advance, plan


def home() -> Path:
    """Where TensorForge keeps state ($TENSORFORGE_HOME, else ~/.cache/tensorforge): one rule,
    in tensorforge_measure/home.py."""
    from tensorforge_measure.home import home as tensorforge_home

    return tensorforge_home()


def store_path(fingerprint: str) -> Path:
    return home() / "calibrations" / f"{fingerprint}.json"


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def run_probes(
    session,
    probes,
    progress: Callable[[str], None] = lambda s: None,
    before_sustained: Callable[[Calibration], None] | None = None,
) -> Calibration:
    """A calibration: every probe's result and the ceilings they add up to. `before_sustained`,
    if given, is called once with the calibration of the probes run so far, just before the
    first sustained probe (the runner starts the estimate's fit then: background_fit.py)."""
    results: list[ProbeResult] = []
    failures: dict[str, str] = {}
    started = now()
    plan(progress, len(probes), "calibration probes")
    # Sustained probes last: they leave the device hot and power-capped, which would lower the
    # ceilings of burst probes run after them. Within a regime, ascending `order` (a long burst
    # sweep such as the estimate's runs after the ceiling probes), then the given order.
    ordered = sorted(
        enumerate(probes),
        key=lambda item: (getattr(item[1], "regime", "burst") == "sustained", getattr(item[1], "order", 0), item[0]),
    )
    for _, probe in ordered:
        if before_sustained is not None and getattr(probe, "regime", "burst") == "sustained":
            before_sustained(assemble(session, results, failures, started))
            before_sustained = None
        progress(f"calibrating: {probe.name}")
        try:
            results.append(probe.run(session))
        except Unavailable as exc:
            failures[probe.name] = str(exc)
        except Exception as exc:  # one failing probe leaves the others' ceilings usable
            failures[probe.name] = one_line(exc)
        advance(progress)
    return assemble(session, results, failures, started)


# Every compute ceiling lies this fraction above the highest rate any probe of its mode observed.
# Why: a ceiling is the best of some probe shapes' fastest samples, and the fastest sample of one
# shape moves by about 1% between runs: on an H200 (2026-12-01) the fp32 (CUDA-core)
# GEMMs' rate is flat from 2048^3 up (50.3, 49.9, 50.7 TFLOP/s in the matmul probe) and a held-out
# fp32 2048^3 GEMM's fastest sample ran at 50.72, 0.13% above the 50.65 ceiling, after beating it
# by 0.006% in a run the day before: a bound built on the bare maximum fails by noise. The
# probes' own rates stay as observed in probes[name].compute; the calibration says the allowance.
COMPUTE_ALLOWANCE = 0.01


def assemble(session, results: list[ProbeResult], failures: dict[str, str], started: str) -> Calibration:
    """The calibration that probe results add up to."""
    compute: dict[str, dict[str, float]] = {}
    dram: dict[str, float | None] = {}
    floors: dict[str, float] = {}
    collectives: dict[str, Any] = {}
    launch = None
    for result in results:
        # a mode's ceiling is the highest rate ANY probe of the regime observed (the matmul
        # sweep's and the estimate sweep's GEMMs): the device reached it, so a bound built on a
        # lower one is unsound for shapes that run faster. probes[name].compute says who set it.
        regime = compute.setdefault(result.regime, {})
        for mode, rate in result.compute.items():
            regime[mode] = max(float(rate), regime.get(mode, 0.0))
        dram[result.regime] = result.dram_bytes_per_s or dram.get(result.regime)
        floors.update(result.floors)
        collectives.update(getattr(result, "collectives", None) or {})  # probes of one device have none
        launch = result.launch_floor_s if result.launch_floor_s else launch
    compute = {
        r: {mode: rate * (1.0 + COMPUTE_ALLOWANCE) for mode, rate in rates.items()} for r, rates in compute.items()
    }
    by_regime = {
        r: RegimeCeilings(compute=compute.get(r, {}), dram_bytes_per_s=dram.get(r))
        for r in sorted(set(compute) | set(dram))
    }
    # 'ceilings' keeps its meaning for every reader: the regime a device's probes run in by
    # default (burst on a GPU; the single regime of a device that has only one)
    energy = next((r.details["energy"] for r in results if "energy" in r.details), None)
    base = by_regime.get("burst") or by_regime.get("single") or RegimeCeilings(compute={}, dram_bytes_per_s=None)
    return Calibration(
        fingerprint=session.info.fingerprint,
        device=session.info.name,
        device_details=dict(session.info.details),
        measured_at=started,
        finished_at=now(),
        tensorforge_version=__version__,
        ceilings=CalibratedCeilings(
            compute=dict(base.compute),
            dram_bytes_per_s=base.dram_bytes_per_s,
            launch_floor_s=launch,
            collectives=_curves(collectives, "the collective probes") or None,
        ),
        probes={
            r.name: ProbeRecord(
                method=r.method,
                duration_s=r.duration_s,
                compute=dict(r.compute),
                dram_bytes_per_s=r.dram_bytes_per_s,
                launch_floor_s=r.launch_floor_s,
                # the energy probe's whole record is the calibration's 'energy', not repeated here
                details={k: v for k, v in r.details.items() if k != "energy"},
                regime=r.regime,
                floors=dict(r.floors) or None,
                collectives=_curves(getattr(r, "collectives", None), f"probe {r.name}") or None,
            )
            for r in results
        },
        failed_probes=failures,
        ceilings_by_regime=by_regime or None,
        floors=floors or None,
        energy=_energy(energy),
        compute_allowance=COMPUTE_ALLOWANCE if compute else None,
    )


def _energy(data):
    """The energy probe's record, as the calibration's typed section."""
    if data is None:
        return None
    from tensorforge_measure.capture.convert import converter
    from tensorforge_measure.capture.sections.energy import EnergyCalibration

    return converter.structure(data, EnergyCalibration)


def _curves(data, where: str):
    """Collective curves a probe handed in as data (or as objects), checked."""
    from tensorforge.api import CollectiveCeiling, to_data

    plain = {k: to_data(v) if isinstance(v, CollectiveCeiling) else v for k, v in (data or {}).items()}
    return collective_ceilings(plain, where)


def save(calibration: Calibration) -> Path:
    from tensorforge_measure.capture.convert import to_document

    path = store_path(calibration.fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, canonical_json(to_document(calibration)))
    return path


def load(fingerprint: str) -> Calibration | None:
    """The stored calibration for this fingerprint, or None. A damaged file is an error the
    user must see (naming the file), not something to silently overwrite."""
    from tensorforge_measure.capture.convert import converter, first_error

    path = store_path(fingerprint)
    if not path.exists():
        return None
    try:
        data = read_json(path, "stored calibration")
    except TensorForgeError as exc:
        raise TensorForgeError(f"{exc}; remove it or pass --recalibrate") from None
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint:
        raise TensorForgeError(
            f"stored calibration {path} is not a calibration for {fingerprint}; remove it or pass --recalibrate"
        )
    try:
        return converter.structure(data, Calibration)
    except Exception as exc:
        raise TensorForgeError(
            f"stored calibration {path} is not a calibration ({first_error(exc, 'calibration')}); "
            "remove it or pass --recalibrate"
        ) from None


def regimes(calibration: Calibration) -> list[str]:
    """The regimes a calibration has ceilings for ('burst' alone for calibrations written before
    regimes existed)."""
    return sorted(calibration.ceilings_by_regime) if calibration.ceilings_by_regime else ["burst"]


def to_ceilings(calibration: Calibration, regime: str | None = None) -> Ceilings | None:
    """Core ceilings of one regime (default: the calibration's base `ceilings`); None when the
    probes that matter did not run in it.

    A math mode or the bandwidth missing from the sustained regime is taken from the burst one,
    and the source says so: nothing runs faster sustained than in a burst, so the bound stays a
    lower bound (only a looser one)."""
    base = calibration.ceilings
    compute, dram = dict(base.compute), base.dram_bytes_per_s
    where = ""
    if regime is not None and regime in (calibration.ceilings_by_regime or {}):
        own = (calibration.ceilings_by_regime or {})[regime]
        borrowed = sorted(set(compute) - set(own.compute))
        compute = {**compute, **own.compute}
        if own.dram_bytes_per_s:
            dram = own.dram_bytes_per_s
        elif dram:
            borrowed.append("DRAM bandwidth")
        where = f" ({regime} regime" + (f"; {', '.join(borrowed)} from the burst probes" if borrowed else "") + ")"
    elif regime not in (None, "burst", "single"):
        return None
    if not compute or not dram:
        return None
    return Ceilings(
        origin="calibrated",
        compute={k: float(v) for k, v in compute.items()},
        dram_bytes_per_s=float(dram),
        # only a system's; measured once (the sweep has no regimes), used in every regime
        collectives=dict(getattr(base, "collectives", None) or {}),
        source=f"calibrated on {calibration.device} at {calibration.measured_at} ({calibration.fingerprint}){where}",
    )
