"""Every figure a capture derives, recomputed from what it was derived from.

Why: a digest shows the document was not changed since it was sealed, not that its summaries
follow from its data; `verify` checked four percentiles and APE, and the gate trusted the
recorded relative IQR. A capture edited so its spread looked tight, or its comparison's p50
differed from the measured one, verified. Now `verify` recomputes:

* MEASURED: every summary statistic (n, percentiles, mean, stdev, cv, relative IQR, min, max)
  from the raw samples, of the primary timing and of every other regime and mode timed, and
  the throughputs from the predicted work over the p50;
* the comparison: every row, with the same function the run used (capture/compare_row.py), from
  PREDICTED, MEASURED and the workload's DIAGNOSTIC window: p50, fastest sample, APE, the bound
  check and its tolerance, the estimate, the evidence quality, every regime's and every
  operator's comparison; the list of bound violations; whether the measured device is the
  predicted target;
* POLICY: every recorded bound check is the comparison's.

Fields an older capture does not have are not demanded; those it has must match.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge_measure.capture.convert import to_document
from tensorforge_measure.capture.model import Capture
from tensorforge_measure.capture.sections.diagnostic import Diagnostic
from tensorforge_measure.capture.sections.measured import Measured, Measurement
from tensorforge_measure.compare.row import comparison_row, energy_floor_violations, violations
from tensorforge_measure.measure.stats import summarize

REL_TOL, ABS_TOL = 1e-9, 1e-15
# Words, not figures: the rule's wording has changed between versions, its arithmetic has not.
NOT_DERIVED = frozenset({"bound_check.rule"})


def close(a: Any, b: Any) -> bool:
    """Equal as the document holds them: numbers within a relative 1e-9 (JSON round trips),
    everything else exactly; mappings and sequences element by element."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


def _differences(recorded: Mapping[str, Any], expected: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Keys of `recorded` whose value is not `expected`'s (an older capture may lack keys: those
    are not demanded; a key it has that the recomputation lacks is a difference)."""
    out = []
    for key, value in recorded.items():
        where = f"{prefix}{key}"
        if key not in expected:
            if value is not None:
                out.append(where)
        elif isinstance(value, Mapping) and isinstance(expected[key], Mapping):
            out += _differences(value, expected[key], where + ".")
        elif not close(value, expected[key]):
            out.append(where)
    return out


def measured_problems(capture: Capture) -> tuple[list[str], int]:
    """(problems, workloads recomputed) for MEASURED's statistics and throughputs."""
    measured = capture.measured
    if not isinstance(measured, Measured):
        return [], 0
    problems: list[str] = []
    count = 0
    for name, m in sorted(measured.workloads.items()):
        if not isinstance(m, Measurement) or not m.samples_s:
            continue
        count += 1
        stats = summarize(m.samples_s)
        # the primary timing, and every other regime and mode the backend timed
        timings = [("", m.samples_s, m.stats)] + [
            (f" ({t.regime} {t.mode})", t.samples_s, t.stats) for t in m.modes or () if t.samples_s
        ]
        for label, chosen, recorded in timings:
            again = summarize(chosen)
            for field in attrs.fields(type(again)):
                got, want = getattr(recorded, field.name), getattr(again, field.name)
                if not close(float(got), float(want)):
                    problems.append(
                        f"{name}{label}: recorded {field.name} {got} does not match its raw samples ({want})"
                    )
        predicted = capture.predicted.analytical.workload(name)
        if stats.p50 <= 0 and (m.throughput_flops_per_s is not None or m.throughput_bytes_per_s is not None):
            problems.append(f"{name}: records a throughput although its measured p50 is 0 s")
        if predicted is not None and stats.p50 > 0:
            for label, work, got in (
                ("FLOP/s", predicted.flops, m.throughput_flops_per_s),
                ("bytes/s", predicted.compulsory_bytes, m.throughput_bytes_per_s),
            ):
                if got is not None and not close(got, work / stats.p50):
                    problems.append(
                        f"{name}: recorded throughput ({label}) {got} is not the predicted work "
                        f"over the measured p50 ({work / stats.p50})"
                    )
    return problems, count


def comparison_problems(capture: Capture) -> tuple[list[str], int]:
    """(problems, rows recomputed) for the comparison and POLICY's bound checks."""
    comp = capture.comparison
    if comp is None:
        return [], 0
    problems: list[str] = []
    pred = capture.predicted
    measured = capture.measured.workloads if isinstance(capture.measured, Measured) else {}
    windows = capture.diagnostic.windows if isinstance(capture.diagnostic, Diagnostic) else {}
    if isinstance(capture.measured, Measured) and capture.target_description is not None:
        same = capture.target_description.matches_device(capture.measured.device.name)
        if same != comp.same_device:
            problems.append(
                f"comparison says the measured device {'is' if comp.same_device else 'is not'} "
                f"the predicted target; the target description says otherwise"
            )
    cal_note = pred.calibrated_note or "no calibrated bound"
    names = {w.name for w in pred.analytical.workloads}
    if set(comp.workloads) != names:
        problems.append("comparison rows do not match the predicted workloads")
    count = 0
    for name, row in sorted(comp.workloads.items()):
        analytical = pred.analytical.workload(name)
        calibrated = pred.calibrated.workload(name) if pred.calibrated else None
        sustained = pred.calibrated_sustained.workload(name) if pred.calibrated_sustained else None
        expected = comparison_row(
            analytical,
            calibrated,
            sustained,
            measured.get(name),
            comp.same_device,
            comp.device_note,
            cal_note,
            pred.calibrated_sustained_note,
            windows.get(name),
            pred.energy.workloads.get(name) if pred.energy else None,
        )
        count += 1
        for key in sorted(set(_differences(to_document(row), to_document(expected))) - NOT_DERIVED):
            problems.append(
                f"{name}: recorded comparison {key} does not follow from PREDICTED, MEASURED and DIAGNOSTIC"
            )
    expected_lists = violations(dict(comp.workloads))
    for label, recorded, expected_list in zip(
        ("bound violations", "regime bound violations", "operator bound violations"),
        (comp.bound_violations, comp.regime_bound_violations, comp.operator_bound_violations),
        expected_lists,
    ):
        if recorded is not None and tuple(recorded) != expected_list:
            problems.append(f"recorded {label} {list(recorded)} are not the rows' ({list(expected_list)})")
    floor = energy_floor_violations(dict(comp.workloads))
    if comp.energy_floor_violations is not None and tuple(comp.energy_floor_violations) != (floor or ()):
        problems.append(
            f"recorded energy floor violations {list(comp.energy_floor_violations)} are not the rows' ({list(floor or ())})"
        )
    for name, check in sorted(capture.policy.bound_checks.items()):
        row_of = comp.workloads.get(name)
        if row_of is None or check.verdict != row_of.bound_check.verdict:
            problems.append(f"{name}: POLICY's bound check {check.verdict!r} is not the comparison's")
    return problems, count
