"""PREDICTED against MEASURED, per workload: APE (only on the predicted device) and the bound
check (a measured p50 below the calibrated lower bound, beyond noise, is a violation)."""

from collections.abc import Mapping

import attrs

from tensorforge_measure.capture.fields import field, optional
from tensorforge_measure.capture.sections.energy import EnergyComparison


@attrs.frozen(kw_only=True)
class BoundCheck:
    """Measured p50 against the calibrated lower bound, beyond noise."""

    verdict: str = field("'within bound', 'BOUND VIOLATION' or 'no verdict: <what is missing>'")
    measured_over_bound: float | None = optional("measured p50 / calibrated lower bound", "1")
    tolerance: float | None = optional("relative noise allowance: max(2%, measured relative IQR)", "1")
    rule: str | None = optional("the rule, in words")
    fastest_over_bound: float | None = optional(
        "fastest sample / calibrated lower bound (soundness, no tolerance; absent in older captures)", "1"
    )
    fastest_margin: float | None = optional("fastest sample / calibrated lower bound - 1", "1")
    fastest_verdict: str | None = optional(
        "'fastest sample within bound', 'FASTEST SAMPLE BELOW BOUND' (the bound is not sound there) "
        "or 'no verdict: no samples'"
    )


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
class RegimeComparison:
    """One regime's timing of a workload against the calibrated bound of that regime."""

    mode: str = field("the mode compared: 'graph' (device time) where it exists, else 'eager'")
    measured_p50_s: float = field("MEASURED p50 of that regime and mode", "s")
    eager_p50_s: float | None = field("MEASURED eager p50 of the regime; null when not timed", "s")
    graph_p50_s: float | None = field("MEASURED graph-mode p50 of the regime; null when not timed", "s")
    predicted_calibrated_s: float | None = field(
        "PREDICTED lower bound from this regime's calibrated ceilings; null when there are none", "s"
    )
    ape_calibrated: float | None = field("|bound - p50| / p50; only on the predicted device", "1")
    bound_check: BoundCheck = field("the p50 against this regime's bound")


@attrs.frozen(kw_only=True)
class OperatorComparison:
    """One Core operator: its bounds (all its executions) against its measured trace time."""

    operator: str = field("the Core operator's name")
    count: int = field("executions per call of the workload (layers)", "count")
    bottleneck: str = field("predicted bottleneck of the operator (an analytical classification)")
    predicted_analytical_s: float = field("PREDICTED lower bound from datasheet ceilings", "s")
    predicted_calibrated_s: float | None = field("PREDICTED lower bound from calibrated ceilings", "s")
    measured_s: float | None = field(
        "MEASURED trace time (kernels and the gaps before them), p50; on several "
        "ranks the slowest rank's median time in it (what the workload waits for); "
        "null when no kernel of it was traced",
        "s",
    )
    fastest_rank_s: float | None = optional("on several ranks: the fastest rank's median time in it", "s")
    kernels: int | None = optional(
        "kernels (CPU: framework ops) per call; absent in a window of several ranks, which times ranges, not kernels",
        "count",
    )
    ape_calibrated: float | None = field("|calibrated bound - measured| / measured; only on the predicted device", "1")
    bound_check: BoundCheck = field(
        "the measured time against the calibrated bound (tolerance: as the workload's); on several ranks the "
        "fastest rank's time for local work, the slowest rank's for a collective"
    )


@attrs.frozen(kw_only=True)
class OperatorsComparison:
    """Per operator: where the time goes, against each operator's bound."""

    available: bool = field("false when the workload has no per-operator trace (reason says why)")
    reason: str | None = optional("why there is no per-operator comparison")
    mode: str | None = optional("'graph' (graph replays) or 'eager': which traced calls give the times")
    regime: str | None = optional("the regime the trace window ran in (the primary timing's)")
    method: str | None = optional("how a window of several ranks attributed time to operators")
    operators: tuple[OperatorComparison, ...] | None = optional("per Core operator, in the Core's order")
    unattributed_s: float | None = optional("trace time outside every operator range", "s")
    sum_measured_s: float | None = optional("the operators' trace times summed (unattributed included)", "s")
    graph_p50_s: float | None = optional("the burst graph-mode p50 of the whole workload", "s")
    whole_p50_s: float | None = optional("the whole workload's p50 that coverage divides by", "s")
    coverage: float | None = optional("sum_measured_s / whole_p50_s", "1")
    coverage_rule: str | None = optional("what coverage divides, in words")
    rule: str | None = optional("the bound check's rule in words, where it differs by operator (several ranks)")
    violations: tuple[str, ...] | None = optional("operators whose measured time beat their calibrated bound")


@attrs.frozen(kw_only=True)
class ComparisonRow:
    """One workload: its bounds, its measured p50, APE and bound check."""

    predicted_analytical_s: float | None = field("PREDICTED lower bound from datasheet ceilings", "s")
    predicted_calibrated_s: float | None = field("PREDICTED lower bound from calibrated ceilings", "s")
    bottleneck: str | None = field("predicted bottleneck (an analytical classification, not a measurement)")
    measured_p50_s: float | None = field("MEASURED median latency", "s")
    measured_min_s: float | None = optional(
        "MEASURED fastest sample (absent when not measured, and in older captures)", "s"
    )
    ape_analytical: float | None = field("|analytical bound - p50| / p50; only on the predicted device", "1")
    ape_calibrated: float | None = field("|calibrated bound - p50| / p50; only on the predicted device", "1")
    ape_note: str | None = field("why APE is withheld; null when computed")
    bound_check: BoundCheck = field("measured p50 against the calibrated lower bound")
    evidence_quality: EvidenceQuality | None = optional(
        "whether the measurement is good enough to judge by; when insufficient, APE and the bound "
        "check are provisional (absent when not measured, and in older captures)"
    )
    regimes: Mapping[str, RegimeComparison] | None = optional(
        "per regime measured (burst, sustained, single): its timing against its own regime's bound"
    )
    operators: OperatorsComparison | None = optional("per Core operator: trace time against its bound")
    predicted_estimate_s: float | None = optional(
        "PREDICTED estimate (expected time, not a bound) in the measurement's regime (absent in older captures)", "s"
    )
    estimate_regime: str | None = optional(
        "the timing mode the estimate is for, that of the p50 it is compared with: 'graph' (device "
        "time, the estimate's device_s) or 'eager' (device time + host overhead, its eager_s); the "
        "estimate's coefficients are calibrated in the burst regime"
    )
    ape_estimate: float | None = optional("|estimate - p50| / p50; only on the predicted device", "1")
    energy: EnergyComparison | None = optional(
        "MEASURED joules per execution against the PREDICTED energy floor and estimate (docs/energy.md)"
    )


@attrs.frozen(kw_only=True)
class Comparison:
    """PREDICTED against MEASURED for every workload."""

    same_device: bool = field("whether the measuring device is the predicted target (APE needs it)")
    device_note: str | None = field("why APE is withheld for every workload; null on the predicted device")
    calibrated_target: str | None = field("target whose calibrated bounds the checks used")
    workloads: Mapping[str, ComparisonRow] = field("per workload name: its comparison")
    bound_violations: tuple[str, ...] = field("workloads whose measurement beat the calibrated lower bound")
    regime_bound_violations: tuple[str, ...] | None = optional(
        "'workload (regime mode)' for every timing that beat its own regime's bound"
    )
    operator_bound_violations: tuple[str, ...] | None = optional(
        "'workload: operator' for every operator whose trace time beat its calibrated bound"
    )
    energy_floor_violations: tuple[str, ...] | None = optional(
        "workloads whose measured joules per execution came in below their energy floor"
    )
