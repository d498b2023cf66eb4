"""PREDICTED against MEASURED, per workload: APE (only on the predicted device) and the bound
check (a measured p50 below the calibrated lower bound, beyond noise, is a violation)."""

from collections.abc import Mapping

import attrs

from ..fields import field, optional


@attrs.frozen(kw_only=True)
class BoundCheck:
    """Measured p50 against the calibrated lower bound, beyond noise."""
    verdict: str = field("'within bound', 'BOUND VIOLATION' or 'no verdict: <what is missing>'")
    measured_over_bound: float | None = optional("measured p50 / calibrated lower bound", "1")
    tolerance: float | None = optional("relative noise allowance: max(2%, measured relative IQR)", "1")
    rule: str | None = optional("the rule, in words")
    fastest_over_bound: float | None = optional(
        "fastest sample / calibrated lower bound (soundness, no tolerance; absent in older captures)", "1")
    fastest_margin: float | None = optional("fastest sample / calibrated lower bound - 1", "1")
    fastest_verdict: str | None = optional(
        "'fastest sample within bound', 'FASTEST SAMPLE BELOW BOUND' (the bound is not sound there) "
        "or 'no verdict: no samples'")


@attrs.frozen(kw_only=True)
class QualityCheck:
    """One check of a measurement's evidence quality."""
    name: str = field("'samples', 'spread', 'contention' or 'throttling'")
    ok: bool | None = field("true: passed; false: failed; null: could not be checked (no telemetry for it)")
    detail: str = field("the value found against the limit, in one line")


@attrs.frozen(kw_only=True)
class EvidenceQuality:
    """Whether one workload's measurement is good enough to judge by (policy/evidence_quality.py):
    enough samples, a narrow spread, no contention from other processes, no throttling.
    Insufficient evidence makes its APE and bound check provisional."""
    verdict: str = field("'sufficient' or 'insufficient'")
    reasons: tuple[str, ...] = field("the failed checks' details; empty when sufficient")
    checks: tuple[QualityCheck, ...] = field("every check, passed, failed or not checked")

    @property
    def sufficient(self) -> bool:
        return self.verdict == "sufficient"


@attrs.frozen(kw_only=True)
class ComparisonRow:
    """One workload: its bounds, its measured p50, APE and bound check."""
    predicted_analytical_s: float | None = field("PREDICTED lower bound from datasheet ceilings", "s")
    predicted_calibrated_s: float | None = field("PREDICTED lower bound from calibrated ceilings", "s")
    bottleneck: str | None = field("predicted bottleneck (an analytical classification, not a measurement)")
    measured_p50_s: float | None = field("MEASURED median latency", "s")
    measured_min_s: float | None = optional(
        "MEASURED fastest sample (absent when not measured, and in older captures)", "s")
    ape_analytical: float | None = field("|analytical bound - p50| / p50; only on the predicted device", "1")
    ape_calibrated: float | None = field("|calibrated bound - p50| / p50; only on the predicted device", "1")
    ape_note: str | None = field("why APE is withheld; null when computed")
    bound_check: BoundCheck = field("measured p50 against the calibrated lower bound")
    evidence_quality: EvidenceQuality | None = optional(
        "whether the measurement is good enough to judge by; when insufficient, APE and the bound "
        "check are provisional (absent when not measured, and in older captures)")


@attrs.frozen(kw_only=True)
class Comparison:
    """PREDICTED against MEASURED for every workload."""
    same_device: bool = field("whether the measuring device is the predicted target (APE needs it)")
    device_note: str | None = field("why APE is withheld for every workload; null on the predicted device")
    calibrated_target: str | None = field("target whose calibrated bounds the checks used")
    workloads: Mapping[str, ComparisonRow] = field("per workload name: its comparison")
    bound_violations: tuple[str, ...] = field("workloads whose measurement beat the calibrated lower bound")
