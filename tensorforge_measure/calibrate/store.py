"""CALIBRATED ceilings: run the probes on a session, store the result per device fingerprint,
reuse it, and hand it to the Core as `Ceilings(origin='calibrated')`. The stored document is the
typed `Calibration` of the capture's CALIBRATED section (capture/sections/calibrated.py)."""

import datetime as dt
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

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
from tensorforge_measure.calibrate import margin
from tensorforge_measure.capture.sections.calibrated import (
    CalibratedCeilings,
    Calibration,
    ProbeEvidence,
    ProbeRecord,
    RegimeCeilings,
)
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
    evidence: dict[str, ProbeEvidence | None] = {}
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
            result, judged = _judged_run(session, probe, progress)
            results.append(result)
            evidence[probe.name] = judged
        except Unavailable as exc:
            failures[probe.name] = str(exc)
        except Exception as exc:  # one failing probe leaves the others' ceilings usable
            failures[probe.name] = one_line(exc)
        advance(progress)
    return assemble(session, results, failures, started, evidence)


def _judged_run(session, probe, progress: Callable[[str], None]) -> tuple[ProbeResult, ProbeEvidence | None]:
    """The probe's result and its evidence: run again while the evidence is insufficient, at
    most MAX_ATTEMPTS times (once for a probe that is not repeatable), keeping the least
    contended attempt (calibrate/probe_evidence.py)."""
    from tensorforge_measure.calibrate import probe_evidence

    limit = probe_evidence.MAX_ATTEMPTS if getattr(probe, "repeatable", True) else 1
    kept: tuple[float, ProbeResult, ProbeEvidence | None] | None = None
    for attempt in range(1, limit + 1):
        meter = probe_evidence.start_meter(session)
        try:
            result = probe.run(session)
        except Exception:
            if kept is None:
                raise
            break  # a repeat that fails leaves the attempt already made
        shares = probe_evidence.read(meter)
        judged = probe_evidence.judge(result, shares, attempt)
        share = probe_evidence.contended_share(shares)
        if judged is None or judged.sufficient:  # nothing to judge, or good: this one is kept
            kept = (share, result, judged)
            break
        if kept is None or share < kept[0]:
            kept = (share, result, judged)
        if attempt < limit:
            progress(f"calibrating: {probe.name} again ({'; '.join(judged.reasons)})")
    assert kept is not None  # the loop runs at least once
    _, result, judged = kept
    if judged is not None and judged.attempts != attempt:
        judged = attrs.evolve(judged, attempts=attempt)  # how many ran, whichever was kept
    return result, judged


# Every compute ceiling lies this fraction above the highest rate any probe of its mode observed.
# Why: a ceiling is the best of some probe shapes' fastest samples, and the fastest sample of a
# GEMM lands above the best probe's by more than one run's spread shows. On an H200 (2026-12-01)
# a held-out fp32 2048^3 GEMM ran 0.13% above a 1% allowance; in a run of 2026-12-02, with the
# long-K probes in the sweep (bf16 best 838.5 TFLOP/s, 2048x4096x16384 at 835.8), a 2048x4096x
# 14336 bf16 GEMM's fastest sample ran at 855: 2.0% above the best probe, through the 1%
# allowance. 2.5% covers what was seen, with half a point to spare; the probes' own rates stay
# as observed in probes[name].compute and the calibration says the allowance.
COMPUTE_ALLOWANCE = 0.025
# The key of the DRAM ceiling among the math modes in a probe's fastest_spread and in margins.
DRAM = "dram"
# The least margin of a DRAM ceiling: none measured between runs yet, so a DRAM ceiling's margin
# is its probes' own spread alone (margin.py).
DRAM_ALLOWANCE = 0.0


def assemble(
    session,
    results: list[ProbeResult],
    failures: dict[str, str],
    started: str,
    evidence: Mapping[str, ProbeEvidence | None] | None = None,
) -> Calibration:
    """The calibration that probe results add up to, with each probe's evidence where judged."""
    from tensorforge_measure.calibrate.probe_evidence import calibration_evidence

    evidence = evidence or {}
    # (rate, spread of its fastest samples) per regime and ceiling, from every probe that saw it
    seen: dict[str, dict[str, list[tuple[float, float]]]] = {}
    patterns: dict[str, dict[str, float]] = {}
    floors: dict[str, float] = {}
    collectives: dict[str, Any] = {}
    launch = None
    for result in results:
        # a ceiling is the highest rate ANY probe of the regime observed (the matmul sweep's and
        # the estimate sweep's GEMMs; the copy, read and write streams): the device reached it, so
        # a bound built on a lower one is unsound for work that runs faster (a read-only stream
        # beat the copy's rate by 3% on an H200). probes[name] says who set it.
        regime = seen.setdefault(result.regime, {})
        spread = getattr(result, "fastest_spread", None) or {}
        for mode, rate in result.compute.items():
            regime.setdefault(mode, []).append((float(rate), spread.get(mode, 0.0)))
        if result.dram_bytes_per_s:
            regime.setdefault(DRAM, []).append((float(result.dram_bytes_per_s), spread.get(DRAM, 0.0)))
        for pattern, rate in (getattr(result, "dram_patterns", None) or {}).items():
            kept = patterns.setdefault(result.regime, {})
            kept[pattern] = max(float(rate), kept.get(pattern, 0.0))
        floors.update(result.floors)
        collectives.update(getattr(result, "collectives", None) or {})  # probes of one device have none
        launch = result.launch_floor_s if result.launch_floor_s else launch
    ceilings = {
        r: {
            name: margin.ceiling(rates, DRAM_ALLOWANCE if name == DRAM else COMPUTE_ALLOWANCE)
            for name, rates in by_name.items()
        }
        for r, by_name in seen.items()
    }
    compute = {r: {n: c for n, (c, _) in by.items() if n != DRAM} for r, by in ceilings.items()}
    dram = {r: by[DRAM][0] for r, by in ceilings.items() if DRAM in by}
    margins = {r: {n: m for n, (_, m) in sorted(by.items())} for r, by in ceilings.items() if by}
    by_regime = {
        r: RegimeCeilings(
            compute=compute.get(r, {}), dram_bytes_per_s=dram.get(r), dram_patterns=patterns.get(r) or None
        )
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
                evidence=evidence.get(r.name),
                fastest_spread=dict(getattr(r, "fastest_spread", None) or {}) or None,
                dram_patterns=dict(getattr(r, "dram_patterns", None) or {}) or None,
            )
            for r in results
        },
        failed_probes=failures,
        ceilings_by_regime=by_regime or None,
        floors=floors or None,
        energy=_energy(energy),
        compute_allowance=COMPUTE_ALLOWANCE if seen else None,
        margins=margins or None,
        evidence=calibration_evidence({r.name: evidence.get(r.name) for r in results}),
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
