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


@attrs.frozen(kw_only=True)
class Comparison:
    """PREDICTED against MEASURED for every workload."""
    same_device: bool = field("whether the measuring device is the predicted target (APE needs it)")
    device_note: str | None = field("why APE is withheld for every workload; null on the predicted device")
    calibrated_target: str | None = field("target whose calibrated bounds the checks used")
    workloads: Mapping[str, ComparisonRow] = field("per workload name: its comparison")
    bound_violations: tuple[str, ...] = field("workloads whose measurement beat the calibrated lower bound")
