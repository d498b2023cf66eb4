"""Does a calibration probe's result deserve to become a ceiling? Judged where it is measured.

Why: on a busy 2-core machine `calibrate` stored an fp32 rate of 16.8 GFLOP/s (205 on a quiet
run) and a bf16 rate 35x the fp32 one from one lucky sample, silently, and `run` reused it until
--recalibrate. A workload's measurement was already judged by its spread and the contention in
its telemetry window (compare/evidence_quality.py); a probe is now judged by the same two checks
and the same limits:

  spread      relative IQR of the samples behind the probe's figures (ProbeResult.spread; not
              checked where the probe does not report it)
  contention  other processes' and stolen CPU shares while the probe ran, from the session's
              contention meter (Session.contention_meter; not checked where there is none)

A probe whose evidence is insufficient runs again, at most MAX_ATTEMPTS times in all (unless it
declares itself not repeatable, as a long sweep does); the least contended attempt is kept, and
when none was sufficient the probe, and so the calibration, is stored marked insufficient.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from tensorforge_measure.api import ProbeResult
from tensorforge_measure.capture.sections.calibrated import CalibrationEvidence, ProbeEvidence
from tensorforge_measure.capture.sections.comparison import QualityCheck
from tensorforge_measure.compare.evidence_quality import (
    INSUFFICIENT,
    MAX_CONTENTION_PCT,
    MAX_SPREAD,
    SUFFICIENT,
    contention_check,
    spread_check,
)

MAX_ATTEMPTS = 3
RULE = (
    f"a probe's evidence is insufficient when the relative IQR of the samples behind its figures exceeds "
    f"{MAX_SPREAD * 100:.0f}% or other processes and stolen time took more than {MAX_CONTENTION_PCT:.0f}% "
    f"of the CPUs while it ran; such a probe runs again (at most {MAX_ATTEMPTS} times in all, long sweeps "
    "once) and its least contended attempt is kept; the calibration is insufficient when any probe is"
)

Meter = Callable[[], Mapping[str, Any] | None]


def start_meter(session) -> Meter | None:
    """The session's contention meter started now, or None where it has none (or it fails:
    the probe is then measured without the check, and the check says so)."""
    starter = getattr(session, "contention_meter", None)
    if starter is None:
        return None
    try:
        return starter()
    except Exception:  # an unreadable /proc is no reason to lose the probe
        return None


def read(meter: Meter | None) -> Mapping[str, Any] | None:
    """The shares since the meter started; None where there is no meter or it fails."""
    if meter is None:
        return None
    try:
        shares = meter()
    except Exception:
        return None
    return shares if isinstance(shares, Mapping) else None


def _spread(result: ProbeResult) -> QualityCheck:
    value = result.spread
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return QualityCheck(name="spread", ok=None, detail="not checked: the probe reports no spread")
    return spread_check(float(value))


def _contention(shares: Mapping[str, Any] | None) -> QualityCheck:
    if shares is None:
        return QualityCheck(name="contention", ok=None, detail="not checked: no CPU-share reading on this device")
    return contention_check(shares, during="the probe")


def judge(result: ProbeResult, shares: Mapping[str, Any] | None, attempts: int = 1) -> ProbeEvidence | None:
    """The evidence of one probe attempt; None when nothing could be checked."""
    checks = (_spread(result), _contention(shares))
    if all(c.ok is None for c in checks):
        return None
    reasons = tuple(c.detail for c in checks if c.ok is False)
    return ProbeEvidence(
        verdict=INSUFFICIENT if reasons else SUFFICIENT, reasons=reasons, checks=checks, attempts=attempts
    )


def contended_share(shares: Mapping[str, Any] | None) -> float:
    """Other processes' plus stolen share (0 where unknown): how the kept attempt is chosen."""
    total = 0.0
    for key in ("other_processes_pct", "steal_pct"):
        value = (shares or {}).get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            total += float(value)
    return total


def calibration_evidence(evidence: Mapping[str, ProbeEvidence | None]) -> CalibrationEvidence | None:
    """The calibration's verdict from its probes' (None where no probe was judged)."""
    judged = {name: e for name, e in evidence.items() if e is not None}
    if not judged:
        return None
    reasons = tuple(
        f"probe {name}: {'; '.join(e.reasons)} ({e.attempts} attempt{'s' if e.attempts != 1 else ''})"
        for name, e in sorted(judged.items())
        if e.verdict == INSUFFICIENT
    )
    return CalibrationEvidence(verdict=INSUFFICIENT if reasons else SUFFICIENT, reasons=reasons, rule=RULE)


def weakness(evidence: CalibrationEvidence | None) -> str | None:
    """One line on why a calibration is weak, or None when it is not known to be."""
    if evidence is None or evidence.sufficient:
        return None
    more = f" (+{len(evidence.reasons) - 1} more)" if len(evidence.reasons) > 1 else ""
    return f"{evidence.reasons[0] if evidence.reasons else 'insufficient'}{more}"
