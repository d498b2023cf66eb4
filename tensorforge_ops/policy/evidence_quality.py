"""Is one workload's measurement good enough to judge by? Flagged where the evidence is produced.

Why here and not only in the gate: a busy host-CPU run printed "within bound" and an APE from
2-12 samples while its own telemetry showed 38-59% of the CPU going to other processes; only a
later `gate` said NO VERDICT. Every measured workload now carries this verdict, computed by the
run from its samples and its telemetry window, recomputed by `verify`, and shown beside APE and
bound checks (which become *provisional* when the evidence is insufficient).

The checks, each with its limit and the value found:
  samples      at least MIN_SAMPLES timed iterations
  spread       relative IQR at most MAX_SPREAD (the gate's defaults, so both judge alike)
  contention   other processes and stolen time under MAX_CONTENTION_PCT of the CPUs (host
               telemetry; a GPU's NVML window has no such figure and the check is skipped)
  throttling   no hardware or thermal slowdown among the clock-event reasons (NVML)

Telemetry is DIAGNOSTIC: it never makes a verdict, but it may withhold confidence from one.
Missing telemetry is not counted against the evidence (it is reported as not checked).
"""

from __future__ import annotations

import math
from typing import Any
from collections.abc import Mapping, Sequence

import attrs

from ..measure.stats import summarize
from ..telemetry.nvml import SLOWDOWN_REASONS

MIN_SAMPLES = 10
MAX_SPREAD = 0.10
MAX_CONTENTION_PCT = 10.0

SUFFICIENT, INSUFFICIENT = "sufficient", "insufficient"
CHECKS = ("samples", "spread", "contention", "throttling")


@attrs.frozen
class QualityCheck:
    name: str                  # one of CHECKS
    ok: bool | None         # None: could not be checked (no telemetry)
    detail: str                # one line: the value found against the limit


@attrs.frozen
class EvidenceQuality:
    verdict: str                               # SUFFICIENT | INSUFFICIENT
    reasons: tuple[str, ...]                   # the failed checks' details, in CHECKS order
    checks: tuple[QualityCheck, ...]

    @property
    def sufficient(self) -> bool:
        return self.verdict == SUFFICIENT


def _samples_check(n: int) -> QualityCheck:
    if n >= MIN_SAMPLES:
        return QualityCheck("samples", True, f"{n} samples (>= {MIN_SAMPLES})")
    return QualityCheck("samples", False, f"too few samples: {n} < {MIN_SAMPLES}")


def _spread_check(rel_iqr: float) -> QualityCheck:
    if math.isfinite(rel_iqr) and rel_iqr <= MAX_SPREAD:
        return QualityCheck("spread", True, f"relative IQR {rel_iqr * 100:.1f}% (<= {MAX_SPREAD * 100:.0f}%)")
    return QualityCheck("spread", False, f"spread too wide: relative IQR {rel_iqr * 100:.1f}% > "
                                         f"{MAX_SPREAD * 100:.0f}%")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _contention_check(summary: Mapping[str, Any] | None) -> QualityCheck:
    other = _number((summary or {}).get("other_processes_pct"))
    steal = _number((summary or {}).get("steal_pct"))
    if other is None and steal is None:
        return QualityCheck("contention", None, "not checked: the telemetry window has no CPU-share figures")
    busy = (other or 0.0) + (steal or 0.0)
    parts = ", ".join(p for p in (None if other is None else f"other processes {other:.0f}%",
                                  None if steal is None else f"stolen {steal:.0f}%") if p)
    if busy <= MAX_CONTENTION_PCT:
        return QualityCheck("contention", True, f"{parts} (<= {MAX_CONTENTION_PCT:.0f}%)")
    return QualityCheck("contention", False, f"contended: {parts} of the CPUs during its telemetry window "
                                             f"(> {MAX_CONTENTION_PCT:.0f}%)")


def _throttling_check(fractions: Sequence[Sequence[Any]] | None) -> QualityCheck:
    if fractions is None:
        return QualityCheck("throttling", None, "not checked: the telemetry window reports no clock-event reasons")
    slow = [(str(r), float(f)) for r, f in fractions if r in SLOWDOWN_REASONS and _number(f) and f > 0]
    if not slow:
        return QualityCheck("throttling", True, "no hardware or thermal slowdown reported")
    reason, fraction = max(slow, key=lambda pair: pair[1])
    return QualityCheck("throttling", False, f"throttled: {reason} in {fraction * 100:.0f}% of its telemetry samples")


def assess(samples_s: Sequence[float], window: Any | None = None) -> EvidenceQuality:
    """The evidence-quality verdict of one workload's samples and its telemetry window (a
    capture TelemetryWindow, or None when no window was collected). Pure: `verify` recomputes it."""
    stats = summarize(list(samples_s))
    summary = None
    fractions = None
    if window is not None and getattr(window, "available", False):
        data = getattr(window, "data", None) or {}
        summary = data.get("summary") if isinstance(data.get("summary"), Mapping) else None
        fractions = getattr(window, "clock_event_fractions", None)
    checks = (_samples_check(stats.n), _spread_check(float(stats.rel_iqr)),
              _contention_check(summary), _throttling_check(fractions))
    reasons = tuple(c.detail for c in checks if c.ok is False)
    return EvidenceQuality(INSUFFICIENT if reasons else SUFFICIENT, reasons, checks)
