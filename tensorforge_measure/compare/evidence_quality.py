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
from collections.abc import Mapping, Sequence
from typing import Any

from tensorforge_measure.telemetry.clock_events import SLOWDOWN_REASONS

from tensorforge_measure.capture.sections.comparison import EvidenceQuality, QualityCheck
from tensorforge_measure.capture.sections.diagnostic import TelemetryWindow
from tensorforge_measure.measure.stats import summarize

MIN_SAMPLES = 10
MAX_SPREAD = 0.10
MAX_CONTENTION_PCT = 10.0

SUFFICIENT, INSUFFICIENT = "sufficient", "insufficient"
CHECKS = ("samples", "spread", "contention", "throttling")


def _samples_check(n: int) -> QualityCheck:
    if n >= MIN_SAMPLES:
        return QualityCheck(name="samples", ok=True, detail=f"{n} samples (>= {MIN_SAMPLES})")
    return QualityCheck(name="samples", ok=False, detail=f"too few samples: {n} < {MIN_SAMPLES}")


def spread_check(rel_iqr: float) -> QualityCheck:
    shown = f"relative IQR {rel_iqr * 100:.1f}%"
    if rel_iqr <= MAX_SPREAD:  # an infinite spread (p50 of 0 s) fails here too
        return QualityCheck(name="spread", ok=True, detail=f"{shown} (<= {MAX_SPREAD * 100:.0f}%)")
    return QualityCheck(name="spread", ok=False, detail=f"spread too wide: {shown} > {MAX_SPREAD * 100:.0f}%")


def _percent(summary: Mapping[str, Any], key: str) -> float | None:
    value = summary.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def contention_check(summary: Mapping[str, Any], during: str = "its telemetry window") -> QualityCheck:
    """Other processes' and stolen CPU shares against MAX_CONTENTION_PCT (also used for each
    calibration probe: calibrate/probe_evidence.py, `during` 'the probe')."""
    shares = [
        (label, _percent(summary, key))
        for label, key in (("other processes", "other_processes_pct"), ("stolen", "steal_pct"))
    ]
    found = [(label, value) for label, value in shares if value is not None]
    if not found:
        return QualityCheck(
            name="contention", ok=None, detail="not checked: the telemetry window has no CPU-share figures"
        )
    parts = ", ".join(f"{label} {value:.0f}%" for label, value in found)
    if sum(value for _, value in found) <= MAX_CONTENTION_PCT:
        return QualityCheck(name="contention", ok=True, detail=f"{parts} (<= {MAX_CONTENTION_PCT:.0f}%)")
    return QualityCheck(
        name="contention",
        ok=False,
        detail=f"contended: {parts} of the CPUs during {during} (> {MAX_CONTENTION_PCT:.0f}%)",
    )


def _throttling_check(fractions: Sequence[Sequence[Any]] | None) -> QualityCheck:
    if fractions is None:
        return QualityCheck(
            name="throttling", ok=None, detail="not checked: the telemetry window reports no clock-event reasons"
        )
    slow = [(str(r), float(f)) for r, f in fractions if r in SLOWDOWN_REASONS and f > 0]
    if not slow:
        return QualityCheck(name="throttling", ok=True, detail="no hardware or thermal slowdown reported")
    reason, fraction = max(slow, key=lambda pair: pair[1])
    return QualityCheck(
        name="throttling", ok=False, detail=f"throttled: {reason} in {fraction * 100:.0f}% of its telemetry samples"
    )


def assess(samples_s: Sequence[float], window: TelemetryWindow | None = None) -> EvidenceQuality:
    """The evidence-quality verdict of one workload's samples and its telemetry window (None
    when no window was collected). Pure: `verify` recomputes it from the capture."""
    stats = summarize(list(samples_s))
    sampled = window if window is not None and window.available else None
    summary = sampled.data.get("summary") if sampled is not None else None
    checks = (
        _samples_check(stats.n),
        spread_check(float(stats.rel_iqr)),
        contention_check(summary if isinstance(summary, Mapping) else {}),
        _throttling_check(sampled.clock_event_fractions if sampled is not None else None),
    )
    reasons = tuple(c.detail for c in checks if c.ok is False)
    return EvidenceQuality(verdict=INSUFFICIENT if reasons else SUFFICIENT, reasons=reasons, checks=checks)
