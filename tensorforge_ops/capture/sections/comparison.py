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
class OperatorCheck:
    """One Core operator: its bounds against its time in a per-operator window."""
    operator: str = field("the Core operator's name")
    count: int = field("how many times the workload executes it", "count")
    bottleneck: str = field("its predicted bottleneck (a classification)")
    predicted_analytical_s: float = field("its datasheet lower bound, all executions", "s")
    predicted_calibrated_s: float | None = field("its calibrated lower bound, all executions", "s")
    measured_s: float | None = field("the slowest rank's median time in it (what the workload waits for)", "s")
    fastest_rank_s: float | None = field("the fastest rank's median time in it", "s")
    ape_calibrated: float | None = field("|calibrated bound - measured_s| / measured_s; predicted device only", "1")
    bound_check: BoundCheck = field(
        "its time against its calibrated bound: the fastest rank's for local work, the slowest rank's for "
        "a collective")


@attrs.frozen(kw_only=True)
class OperatorComparison:
    """Per operator, where a backend measured operators."""
    available: bool = field("true when a per-operator window exists")
    reason: str | None = optional("why there is none")
    mode: str | None = optional("the window's mode ('eager')")
    method: str | None = optional("how the window attributed time to operators")
    operators: tuple[OperatorCheck, ...] | None = optional("every Core operator, in order")
    coverage: float | None = optional("the operators' times over the whole call", "1")
    rule: str | None = optional("the bound check's rule, in words")
    violations: tuple[str, ...] | None = optional("operators whose time beat their calibrated bound")


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
    operators: OperatorComparison | None = optional("per operator, where a backend measured operators")


@attrs.frozen(kw_only=True)
class Comparison:
    """PREDICTED against MEASURED for every workload."""
    same_device: bool = field("whether the measuring device is the predicted target (APE needs it)")
    device_note: str | None = field("why APE is withheld for every workload; null on the predicted device")
    calibrated_target: str | None = field("target whose calibrated bounds the checks used")
    workloads: Mapping[str, ComparisonRow] = field("per workload name: its comparison")
    bound_violations: tuple[str, ...] = field("workloads whose measurement beat the calibrated lower bound")
    operator_bound_violations: tuple[str, ...] | None = optional(
        "'workload: operator' whose time beat its calibrated bound (where operators were measured)")
