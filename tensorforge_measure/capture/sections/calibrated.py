"""CALIBRATED: the ceilings dedicated probes measured on the device, and how.

`Calibration` is also the document stored per device fingerprint (and reused by later runs);
the capture's section is that document plus whether it was reused and where it is stored.
"""

from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge.api import CollectiveCeiling
from tensorforge_measure.capture.fields import const, field, optional
from tensorforge_measure.capture.sections.comparison import QualityCheck
from tensorforge_measure.capture.sections.energy import EnergyCalibration


@attrs.frozen(kw_only=True)
class CalibratedCeilings:
    """The ceilings all probes add up to: what the calibrated lower bound divides by."""

    compute: Mapping[str, float] = field(
        "compute rate per math mode: the best a probe reached plus its margin (Calibration.margins)", "FLOP/s"
    )
    dram_bytes_per_s: float | None = field(
        "DRAM bandwidth: the highest rate any stream probe reached (copy counting bytes read + written, "
        "read-only, write-only) plus its margin",
        "B/s",
    )
    launch_floor_s: float | None = field(
        "host-side interval of a trivial eager operation (not part of the lower bound)", "s"
    )
    collectives: Mapping[str, CollectiveCeiling] | None = optional(
        "calibrated collective curves by 'op/ranks' (a system of several devices; absent otherwise)"
    )


@attrs.frozen(kw_only=True)
class RegimeCeilings:
    """The ceilings the probes of one regime add up to."""

    compute: Mapping[str, float] = field("best compute rate per math mode in this regime", "FLOP/s")
    dram_bytes_per_s: float | None = field(
        "DRAM bandwidth in this regime: the highest rate any stream probe reached plus its margin", "B/s"
    )
    dram_patterns: Mapping[str, float] | None = optional(
        "the highest rate each access pattern's probes reached in this regime, without margin ('copy', "
        "'read', 'write'); absent in calibrations written before them",
        "B/s",
    )


@attrs.frozen(kw_only=True)
class ProbeEvidence:
    """Whether one probe's result is good enough to calibrate by (calibrate/probe_evidence.py):
    the spread of the samples behind its figures and the CPU share other work took while it ran."""

    verdict: str = field("'sufficient' or 'insufficient'")
    reasons: tuple[str, ...] = field("the failed checks' details; empty when sufficient")
    checks: tuple[QualityCheck, ...] = field("'spread' and 'contention', each passed, failed or not checked")
    attempts: int = field(
        "how many times the probe ran: it is run again while its evidence is insufficient, a bounded "
        "number of times, and the least contended attempt is kept",
        "count",
    )

    @property
    def sufficient(self) -> bool:
        return self.verdict == "sufficient"


@attrs.frozen(kw_only=True)
class CalibrationEvidence:
    """Whether the calibration as a whole is good enough to calibrate by: insufficient when any
    judged probe's evidence is. `run` says so when it reuses an insufficient calibration."""

    verdict: str = field("'sufficient' or 'insufficient'")
    reasons: tuple[str, ...] = field("per insufficient probe: 'probe NAME: why'; empty when sufficient")
    rule: str = field("the rule, in words")

    @property
    def sufficient(self) -> bool:
        return self.verdict == "sufficient"


@attrs.frozen(kw_only=True)
class ProbeRecord:
    """What one probe found, and exactly how."""

    method: str = field("exactly what the probe ran and how it reduced the timings to one number")
    duration_s: float = field("how long the probe ran", "s")
    compute: Mapping[str, float] = field("compute ceilings it found, per math mode", "FLOP/s")
    dram_bytes_per_s: float | None = field("memory bandwidth it found", "B/s")
    launch_floor_s: float | None = field("launch floor it found", "s")
    details: Mapping[str, Any] = field("probe-specific detail (sizes swept, points, buffers)")
    collectives: Mapping[str, CollectiveCeiling] | None = optional("collective curves it found, by 'op/ranks'")
    regime: str | None = optional("the regime it ran in: 'burst', 'sustained' or 'single'; absent: burst")
    floors: Mapping[str, float] | None = optional("named kernel floors it measured (docs/measurement.md)", "s")
    fastest_spread: Mapping[str, float] | None = optional(
        "per ceiling it set (a math mode, or 'dram'): the relative spread of its fastest samples "
        "(calibrate/margin.py); absent where the probe does not say"
    )
    dram_patterns: Mapping[str, float] | None = optional(
        "the rate each memory access pattern it ran reached ('copy', 'read', 'write')", "B/s"
    )
    evidence: ProbeEvidence | None = optional(
        "whether its result is good enough to calibrate by; absent where nothing could be judged (a "
        "session without a contention reading and a probe that reports no spread) and in older calibrations"
    )


@attrs.frozen(kw_only=True)
class Calibration:
    """A calibration of one device, as stored per fingerprint (and reused by later runs)."""

    label: str = const("CALIBRATED", "the section's label")
    fingerprint: str = field("fingerprint of the calibrated device")
    device: str = field("name of the calibrated device")
    device_details: Mapping[str, Any] = field("what the backend reported about the device (backend-specific)")
    measured_at: str = field("when the probes started (ISO 8601, UTC)")
    finished_at: str = field("when they finished (ISO 8601, UTC)")
    tensorforge_version: str = field("version of tensorforge that ran the probes")
    ceilings: CalibratedCeilings = field("the ceilings all probes add up to")
    probes: Mapping[str, ProbeRecord] = field("per probe name: what it found and how")
    failed_probes: Mapping[str, str] = field("per probe name: why it failed")
    ceilings_by_regime: Mapping[str, RegimeCeilings] | None = optional(
        "the ceilings per regime ('ceilings' is the burst one, or the single one of a one-regime device); "
        "absent in calibrations written before regimes"
    )
    floors: Mapping[str, float] | None = optional(
        "kernel floors, each named for what it measures: kernel_interval_s, kernel_duration_s, kernel_gap_s, "
        "eager_event_floor_s, host_call_interval_s",
        "s",
    )
    estimate: Mapping[str, Any] | None = optional(
        "the estimate's coefficients fitted from the estimate-terms probe points for one target: "
        "'coefficients' (tensorforge.estimate.coefficients.EstimateCoefficients), 'report' (how "
        "well each stage reproduced its probes), 'target', 'regime' (the regime the sweep ran in and "
        "the coefficients are for: 'burst' on a GPU, 'single' on a one-regime device; absent: burst); "
        "or 'error' when the fit failed (absent in older captures and where no such probe ran)"
    )
    energy: EnergyCalibration | None = optional(
        "the energy probes' windows and the coefficients fitted to them (docs/energy.md); absent where "
        "no energy probe ran"
    )
    margins: Mapping[str, Mapping[str, float]] | None = optional(
        "per regime, per ceiling (a math mode, or 'dram'): the fraction by which the ceiling lies above the "
        "highest rate any probe of it observed. Each probe's rate counts with a margin of the relative "
        "spread of its fastest samples, at least the floor (compute_allowance for compute, none for DRAM), "
        "so the rate of a later run's fastest sample stays below the ceiling (calibrate/margin.py); absent in "
        "calibrations written before it"
    )
    compute_allowance: float | None = optional(
        "the least fraction by which every compute ceiling (ceilings, ceilings_by_regime) lies above the "
        "highest rate any probe of its mode observed (each ceiling's own margin, at least this, is in "
        "margins; probes[name].compute keep the observed rates): another shape's fastest sample can beat "
        "the probes' best by about 2% (docs/measurement.md, 'The compute allowance'); absent in "
        "calibrations written before it (no allowance)"
    )
    evidence: CalibrationEvidence | None = optional(
        "whether the probes' evidence is good enough to calibrate by (each probe's in probes[name].evidence); "
        "absent where no probe could be judged and in older calibrations"
    )


@attrs.frozen(kw_only=True)
class Calibrated(Calibration):
    """CALIBRATED: the calibration the run used, and whether it was reused."""

    available: bool = const(True, "true: ceilings were calibrated on the measuring device")
    reason: None = field("always null when available", default=None)
    reused: bool = field("true when a stored calibration of this fingerprint was reused rather than measured now")
    stored_at: str = field("where the calibration is stored on the machine that ran the capture")
