"""The regression gate: per workload PASS, REGRESSION, IMPROVEMENT or NO VERDICT.

A change is called only when two independent checks agree on the raw samples of both
captures: the Mann-Whitney U test (is the candidate's distribution shifted at all?) together
with a bootstrap interval on the ratio of medians that excludes 1 (significance), and the
ratio's point estimate beyond the minimum effect size (is the shift big enough to matter?),
widened for a workload so short that it moves more than that between runs of unchanged code
(the run effect: between_runs.py; the verdict names the effect it needed).
Before any statistics, the evidence has to be comparable; otherwise the answer is NO VERDICT
with what is missing. Why this design (and not asv's, conbench's or Bencher's): docs/policy.md.
"""

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, cast

import attrs
import numpy as np

from tensorforge.api import finite_in, seconds
from tensorforge_measure.capture.sections.measured import Measured, Measurement, WorkloadMeasurement
from tensorforge_measure.measure.stats import summarize
from tensorforge_measure.policy.between_runs import JITTER_S, RELATIVE_SD, needed_effect
from tensorforge_measure.policy.evidence import Evidence, slowdowns
from tensorforge_measure.policy.statistics import bootstrap_ratio_ci, mann_whitney

PASS, REGRESSION, IMPROVEMENT, NO_VERDICT = "PASS", "REGRESSION", "IMPROVEMENT", "NO VERDICT"

# Exit statuses, a contract for CI (documented in docs/policy.md and `tensorforge gate --help`).
EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, EXIT_NO_VERDICT = 0, 1, 2, 3


@attrs.frozen
class GateSettings:
    # Finite and in range, or refused: a NaN alpha made every change "not significant" (PASS).
    # minimum effect: the ratio of medians must move by this much
    threshold: float = attrs.field(default=0.05, validator=finite_in(0, 10, low_open=True))
    # Mann-Whitney significance level
    alpha: float = attrs.field(default=0.01, validator=finite_in(0, 1, low_open=True, high_open=True))
    # bootstrap interval of the ratio of medians
    confidence: float = attrs.field(default=0.99, validator=finite_in(0, 1, low_open=True, high_open=True))
    resamples: int = attrs.field(default=2000, validator=finite_in(100))
    min_samples: int = attrs.field(default=10, validator=finite_in(3))
    # relative IQR above which a side is too noisy to judge
    max_spread: float = attrs.field(default=0.10, validator=finite_in(0, 10, low_open=True))
    # the run effect (policy/between_runs.py): how far a median moves between runs of unchanged
    # code, an absolute part (seconds) and a relative part; 0 and 0 turn the allowance off
    run_jitter_s: float = attrs.field(default=JITTER_S, validator=finite_in(0, 1))
    run_relative_sd: float = attrs.field(default=RELATIVE_SD, validator=finite_in(0, 1))
    # where the two run-effect figures come from: the built-in model, or an A/A pair (`gate --aa`)
    run_effect_source: str = "the built-in model (policy/between_runs.py)"


@attrs.frozen
class WorkloadVerdict:
    workload: str
    verdict: str
    reason: str
    baseline_p50_s: float | None = None
    candidate_p50_s: float | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    n_baseline: int | None = None
    n_candidate: int | None = None
    # the relative change of the median this verdict needed: the threshold, or the between-run
    # allowance of a workload this short where that is larger (policy/between_runs.py)
    needed_effect: float | None = None


@attrs.frozen
class GateResult:
    label: str
    baseline: dict[str, Any]
    candidate: dict[str, Any]
    settings: GateSettings
    verdicts: tuple[WorkloadVerdict, ...]
    exit_status: int
    summary: str


def _side(evidence: Evidence) -> dict[str, Any]:
    capture = evidence.capture
    device = capture.measured.device if isinstance(capture.measured, Measured) else None
    return {
        "path": evidence.path,
        "digest": capture.digest.value if capture.digest else None,
        "origin": evidence.origin,
        "origin_detail": evidence.origin_detail,
        "device": device.name if device else None,
        "fingerprint": device.fingerprint if device else None,
        "target": capture.target,
        "started_at": capture.provenance.started_at,
    }


def _specs(evidence: Evidence) -> dict[str, str]:
    return {w.name: w.spec for w in evidence.capture.predicted.analytical.workloads}


def _rows(evidence: Evidence) -> dict[str, WorkloadMeasurement]:
    measured = evidence.capture.measured
    return dict(measured.workloads) if isinstance(measured, Measured) else {}


def measured_rows(evidence: Evidence) -> dict[str, Measurement]:
    """The workloads a capture measured (samples in hand), by name."""
    return {n: m for n, m in _rows(evidence).items() if isinstance(m, Measurement) and m.samples_s}


def _flag_difference(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    if not changed:
        return None
    k = changed[0]
    more = f" (+{len(changed) - 1} more)" if len(changed) > 1 else ""
    return f"framework flags differ: {k} {a.get(k)!r} -> {b.get(k)!r}{more}"


def _recomputed_row(evidence: Evidence, name: str, row: Measurement):
    """The workload's bound check and evidence quality recomputed from the capture's PREDICTED,
    MEASURED and DIAGNOSTIC (never the recorded ones: the gate decides on what follows from the
    raw samples). Only those two are used, and neither depends on the APE notes, so those
    arguments are fixed."""
    from tensorforge_measure.capture.sections.diagnostic import Diagnostic
    from tensorforge_measure.compare.workload import compare_workload

    capture = evidence.capture
    calibrated = capture.predicted.calibrated
    windows = capture.diagnostic.windows if isinstance(capture.diagnostic, Diagnostic) else {}
    return compare_workload(
        name,
        None,
        calibrated.workload(name) if calibrated is not None else None,
        row,
        False,
        None,
        "no calibrated bound",
        windows.get(name),
    )


def _missing_evidence(name, base: Evidence, cand: Evidence, base_row, cand_row, settings) -> str | None:
    """Why the two sides of one workload cannot be compared, or None."""
    for role, row in (("baseline", base_row), ("candidate", cand_row)):
        if row is None:
            return f"not measured in the {role}"
        if not isinstance(row, Measurement):
            return f"{role} measurement failed: {row.reason}"
    flags = _flag_difference(base_row.framework_flags, cand_row.framework_flags)
    if flags:
        return flags
    # the regime and mode of the samples compared (captures before them: burst eager)
    modes = [(row.regime or "burst", row.mode or "eager") for row in (base_row, cand_row)]
    if modes[0] != modes[1]:
        return f"measured differently: {' '.join(modes[0])} in the baseline, {' '.join(modes[1])} in the candidate"
    for role, evidence, row in (("baseline", base, base_row), ("candidate", cand, cand_row)):
        if not row.samples_s:
            return f"no raw samples in the {role}"
        stats = summarize(row.samples_s)  # recomputed: the recorded summary is not trusted
        if stats.n < settings.min_samples:
            return f"too few samples in the {role} ({stats.n} < {settings.min_samples})"
        spread = float(stats.rel_iqr)
        if spread > settings.max_spread:
            return (
                f"spread too wide in the {role} (relative IQR {spread * 100:.1f}% > {settings.max_spread * 100:.0f}%)"
            )
        if stats.p50 <= 0:
            return f"p50 is 0 s in the {role} (below timer resolution): no ratio of medians to judge"
        recomputed = _recomputed_row(evidence, name, row)
        if recomputed.bound_check.verdict == "BOUND VIOLATION":
            return (
                f"bound violation in the {role}: the model or the calibration is wrong there, "
                "so the comparison is meaningless"
            )
        slow = slowdowns(evidence.capture, name)
        if slow:
            reason, fraction = slow[0]
            return f"telemetry shows {reason} in the {role}'s window ({fraction * 100:.0f}% of samples)"
        quality = recomputed.evidence_quality
        assert quality is not None  # samples exist (checked above), so it was assessed
        for contention in (c for c in quality.checks if c.name == "contention" and c.ok is False):
            return f"{contention.detail} in the {role}"
    return None


def _seed(base: Evidence, cand: Evidence, name: str) -> int:
    digests = [e.capture.digest.value if e.capture.digest else "" for e in (base, cand)]
    text = f"{digests[0]}:{digests[1]}:{name}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def significant(p: float, low: float, high: float, settings: GateSettings) -> bool:
    """Both tests agree: Mann-Whitney p < alpha AND the bootstrap interval excludes 1."""
    return p < settings.alpha and (low > 1.0 or high < 1.0)


def classify(
    ratio: float, p: float, low: float, high: float, settings: GateSettings, needed: float | None = None
) -> str:
    """The verdict from the statistics alone (pure, so tests and mutation testing reach it):
    a change counts only when BOTH the Mann-Whitney test (p < alpha) and the bootstrap interval
    (excluding 1) are significant; then REGRESSION at ratio >= 1 + effect, IMPROVEMENT at
    ratio <= 1 / (1 + effect) (the same effect in the other direction: 5% slower undone is
    1/1.05 = 4.76% faster, not 5%), else PASS. The effect is `needed` where given (the
    between-run allowance: policy/between_runs.py), else the threshold."""
    effect = settings.threshold if needed is None else needed
    changed = significant(p, low, high, settings)
    if changed and ratio >= 1.0 + effect:
        return REGRESSION
    if changed and ratio <= 1.0 / (1.0 + effect):
        return IMPROVEMENT
    return PASS


def typical_p50(p50a: float, p50b: float) -> float:
    """The workload's duration for its between-run allowance: the geometric mean of the two
    medians, so swapping baseline and candidate gives the same allowance."""
    return float(np.sqrt(p50a * p50b))


def effect_needed(p50a: float, p50b: float, settings: GateSettings) -> float:
    """The effect a verdict on two medians needs: the threshold, widened for a workload so short
    that it moves more than that between runs of unchanged code."""
    return needed_effect(
        typical_p50(p50a, p50b), settings.alpha, settings.threshold, settings.run_jitter_s, settings.run_relative_sd
    )


def _decide(name, base_row: Measurement, cand_row: Measurement, base, cand, settings) -> WorkloadVerdict:
    a, b = list(base_row.samples_s), list(cand_row.samples_s)
    p50a, p50b = float(np.median(a)), float(np.median(b))
    ratio = p50b / p50a
    _, p = mann_whitney(a, b)
    low, high = bootstrap_ratio_ci(
        a, b, resamples=settings.resamples, confidence=settings.confidence, seed=_seed(base, cand, name)
    )
    change = f"{(ratio - 1) * 100:+.1f}% (CI {(low - 1) * 100:+.1f}%..{(high - 1) * 100:+.1f}%, p={p:.2g})"
    needed = effect_needed(p50a, p50b, settings)
    widened = needed > settings.threshold
    # where the run effect widened it, the verdict says by how much and why
    effect = (
        f"the {needed * 100:.1f}% effect a {seconds(typical_p50(p50a, p50b))} workload needs "
        f"(it moves that much between runs of unchanged code; threshold {settings.threshold * 100:g}%)"
        if widened
        else f"the {settings.threshold * 100:g}% effect threshold"
    )
    verdict = classify(ratio, p, low, high, settings, needed)
    if verdict == REGRESSION:
        reason = f"slower by {change}" + (f", beyond {effect}" if widened else "")
    elif verdict == IMPROVEMENT:
        reason = f"faster by {change}" + (f", beyond {effect}" if widened else "")
    elif significant(p, low, high, settings):
        reason = f"{change}: significant but below {effect}"
    else:
        reason = f"{change}: not significant"
    return WorkloadVerdict(name, verdict, reason, p50a, p50b, ratio, low, high, p, len(a), len(b), needed)


def _device_difference(base: Evidence, cand: Evidence) -> str | None:
    """Why no workload can be compared at all, or None."""
    digests = [e.capture.digest.value if e.capture.digest else None for e in (base, cand)]
    if digests[0] is not None and digests[0] == digests[1]:
        # the same samples on both sides always look unchanged: that is no evidence of no change
        return (
            f"baseline and candidate are the same capture (digest {digests[0][:16]}...): a capture "
            "compared with itself is no evidence that nothing changed"
        )
    a, b = base.capture.measured, cand.capture.measured
    if not isinstance(a, Measured):
        return f"baseline has no measurements: {a.reason}"
    if not isinstance(b, Measured):
        return f"candidate has no measurements: {b.reason}"
    if a.device.fingerprint != b.device.fingerprint:
        return (
            f"different device fingerprints: {a.device.fingerprint} ({a.device.name}) "
            f"vs {b.device.fingerprint} ({b.device.name})"
        )
    return None


def incomparable(name: str, base_specs: dict, cand_specs: dict, global_reason: str | None) -> str | None:
    """Why one workload of two captures cannot be compared at all (different devices or settings,
    or a different workload definition under the same name), else None. Shared by every gate."""
    if global_reason:
        return global_reason
    if name in base_specs and name in cand_specs and base_specs[name] != cand_specs[name]:
        return f"workload definition differs: {base_specs[name]} vs {cand_specs[name]}"
    return None


def suite_order(base_specs: dict[str, str], cand_specs: dict[str, str]) -> list[str]:
    """Every workload of either capture in suite order, as `run` lists them: the baseline's,
    then those only the candidate has. One order everywhere, so rows line up across outputs."""
    return list(base_specs) + [name for name in cand_specs if name not in base_specs]


def workload_verdicts(base: Evidence, cand: Evidence, settings: GateSettings = GateSettings()) -> list[WorkloadVerdict]:
    """Per workload of either capture: PASS, REGRESSION, IMPROVEMENT or NO VERDICT with why."""
    base_rows, cand_rows = _rows(base), _rows(cand)
    base_specs, cand_specs = _specs(base), _specs(cand)
    names = suite_order(base_specs, cand_specs)
    global_reason = _device_difference(base, cand)
    verdicts: list[WorkloadVerdict] = []
    for name in names:
        not_comparable = incomparable(name, base_specs, cand_specs, global_reason)
        if not_comparable:
            verdicts.append(WorkloadVerdict(name, NO_VERDICT, not_comparable))
            continue
        missing = _missing_evidence(name, base, cand, base_rows.get(name), cand_rows.get(name), settings)
        if missing:
            verdicts.append(WorkloadVerdict(name, NO_VERDICT, missing))
        else:  # nothing missing: both sides are Measurements with samples (_missing_evidence checked)
            verdicts.append(
                _decide(
                    name, cast(Measurement, base_rows[name]), cast(Measurement, cand_rows[name]), base, cand, settings
                )
            )
    return verdicts


def result(base: Evidence, cand: Evidence, settings: GateSettings, verdicts: Sequence[WorkloadVerdict]) -> GateResult:
    """The gate's verdicts with their exit status and a one-line summary."""
    counts = {v: sum(1 for x in verdicts if x.verdict == v) for v in (REGRESSION, IMPROVEMENT, PASS, NO_VERDICT)}
    if counts[REGRESSION]:
        status = EXIT_REGRESSION
    elif counts[NO_VERDICT] or not verdicts:
        # no workloads at all is no evidence either: never "exit 0" on nothing
        status = EXIT_NO_VERDICT
    else:
        status = EXIT_OK
    summary = (
        ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "NO VERDICT: neither capture has a workload to compare"
    )
    return GateResult("POLICY", _side(base), _side(cand), settings, tuple(verdicts), status, summary)


def gate(base: Evidence, cand: Evidence, settings: GateSettings = GateSettings()) -> GateResult:
    return result(base, cand, settings, workload_verdicts(base, cand, settings))
