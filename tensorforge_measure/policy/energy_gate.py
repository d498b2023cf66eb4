"""The energy gate: per workload PASS, REGRESSION, IMPROVEMENT or NO VERDICT on joules per
execution, with the latency gate's evidence rules (policy/gate.py): the same device fingerprint
and framework flags, enough samples, a narrow spread, and a change called only when the
Mann-Whitney test and the bootstrap interval on the ratio of medians agree and the effect passes
the threshold.

Its samples are the energy window's joules per execution between consecutive counter updates
(MEASURED `energy.samples_j`): one per update interval, so a short window holds few, and too few
is NO VERDICT, never a guess.

A host-bound workload (burst eager p50 at least 1.5x its graph p50: the tiny GEMM, the eager decode
step) is NO VERDICT, whatever its samples say: its energy window runs eager calls, which last as
long as the host CPU takes per call, at little more than static power, so its joules per execution
measure the host's speed. On unchanged code (H200, 2026-12-01, a run and its rerun) the tiny GEMM
came out REGRESSION (+13.8%: time per execution +14.4%, power +0.1%) and the decode step
IMPROVEMENT (-22.1%: time -20.6%). The latency gate judges their device (graph) time.

Now such a workload's energy window replays a CUDA graph of it (tf_cuda/graph_window.py,
`energy.execution == "graph"`): the device sets its pace, so it is judged under the same evidence
rules; the host-bound rule stays for eager windows (captures from before graph windows, a failed capture). The
window-pace rule (time per execution >= 1.5x the graph p50) applies to both: a graph window reads
~1 there (no host between the kernels), so it does not misfire; one that did would be NO VERDICT.
Two windows of different executions (eager in one capture, graph in the other: the choice reads the
host's launch time too, which moves from run to run) are NO VERDICT: not the same measurement.
"""

from __future__ import annotations

import numpy as np
from tensorforge_measure.measure.steady import HOST_BOUND, burst_p50

from tensorforge_measure.capture.sections.measured import Measurement
from tensorforge_measure.measure.stats import summarize
from tensorforge_measure.policy.evidence import Evidence
from tensorforge_measure.policy.gate import (
    NO_VERDICT,
    GateSettings,
    WorkloadVerdict,
    _device_difference,
    _flag_difference,
    _rows,
    _seed,
    _specs,
    suite_order,
    classify,
    incomparable,
    significant,
)
from tensorforge_measure.policy.statistics import bootstrap_ratio_ci, mann_whitney


def _samples(row, role: str, settings: GateSettings) -> tuple[list[float] | None, str | None]:
    if row is None:
        return None, f"not measured in the {role}"
    if not isinstance(row, Measurement):
        return None, f"{role} measurement failed: {row.reason}"
    energy = row.energy
    if energy is None:
        return None, f"no energy window in the {role}"
    if not energy.available:
        return None, f"no energy measurement in the {role}: {energy.reason}"
    samples = list(energy.samples_j or ())
    if len(samples) < settings.min_samples:
        return None, f"too few energy samples in the {role} ({len(samples)} < {settings.min_samples})"
    stats = summarize(samples)
    if float(stats.rel_iqr) > settings.max_spread:
        return None, (
            f"energy spread too wide in the {role} (relative IQR {float(stats.rel_iqr) * 100:.1f}% > "
            f"{settings.max_spread * 100:.0f}%)"
        )
    if stats.p50 <= 0:
        return None, f"median joules per execution is 0 in the {role}"
    return samples, None


def _split(a, b) -> str:
    """The change of J per execution split into its time and power parts (J = mean power x seconds
    per execution, from the two windows): context for reading a verdict, never a verdict. Why: a
    host-bound loop's window (an eager decode, a tiny GEMM) spends ~static power for as long as the
    host takes per call, so its joules follow the host's speed from run to run (two H200
    runs, 2026-12-01: gemm_tiny 2.06 and 2.59 mJ per execution, unchanged code); a change in time with the
    power unchanged says that, a change in power says the device drew more."""
    if not (a.seconds_per_execution and b.seconds_per_execution and a.mean_power_w and b.mean_power_w):
        return ""
    t = b.seconds_per_execution / a.seconds_per_execution - 1
    w = b.mean_power_w / a.mean_power_w - 1
    return f"; time per execution {t * 100:+.1f}%, power {w * 100:+.1f}%"


def _burst_p50(row, mode: str) -> float | None:
    """The burst-regime p50 of one mode of a measurement (its primary timing or one of `modes`)."""
    return burst_p50(((t.regime, t.mode, t.stats.p50) for t in (row, *(row.modes or ()))), mode)


def host_bound_ratio(row) -> float | None:
    """Burst eager p50 over burst graph p50 of a measurement, or None where it has no graph timing.
    Read from the capture, so the gate needs no device."""
    eager, graph = _burst_p50(row, "eager"), _burst_p50(row, "graph")
    return eager / graph if eager and graph else None


def window_pace_ratio(row) -> float | None:
    """The energy window's seconds per execution over the burst graph p50 (the device's time), or
    None where either is missing. A window paced by its kernels reads 1.0-1.25 (the power cap slows
    the large GEMMs ~20%); one paced by the host's launches reads more."""
    graph = _burst_p50(row, "graph")
    pace = row.energy.seconds_per_execution if row.energy is not None else None
    return pace / graph if pace and graph else None


def _host_bound(rows: dict) -> str | None:
    """Why a workload's energy window cannot be judged: its loop of eager calls is paced by the host
    (module docstring), in the baseline or the candidate; None where neither is. Read from times
    alone: the burst eager p50 against the graph p50, and the window's own time per execution
    against the graph p50 (a call whose burst eager time is near its device time can still be
    host-paced in a queued window: conv_resnet50_3x3, H200, 2026-12-01, 2.0x in one run, 1.2x in the
    next, its joules -12% at +48% power)."""
    for role, row in rows.items():
        ratio = host_bound_ratio(row)
        # a window of CUDA-graph replays runs at the device's pace whatever the eager call's host
        # time: the burst rule is about eager windows; the window-pace rule below holds for both
        graph_window = getattr(row.energy, "execution", None) == "graph"
        if ratio is not None and ratio >= HOST_BOUND and not graph_window:
            return (
                f"host-bound in the {role} (burst eager p50 {ratio:.1f}x the graph p50): its energy window "
                "of eager calls lasts as long as the host takes per call, so its joules per execution "
                "follow the host CPU's speed, not the device; the latency gate judges its device time"
            )
        pace = window_pace_ratio(row)
        if pace is not None and pace >= HOST_BOUND:
            return (
                f"host-paced energy window in the {role} ({pace:.1f}x the graph p50 per execution): the "
                "window lasted as long as the host took per call, so its joules per execution follow the "
                "host CPU's speed, not the device; the latency gate judges its device time"
            )
    return None


def _executions_differ(a, b) -> str | None:
    """Why two windows are not the same measurement: one ran eager calls, the other CUDA-graph
    replays (graph_window.choose decides per run, from the host's launch time too: a workload the
    host barely outruns can land on either side in two runs); None where both ran the same (a
    capture from before graph windows ran eager calls)."""
    ran = [getattr(e, "execution", None) or "eager" for e in (a, b)]
    if ran[0] == ran[1]:
        return None
    return (
        f"the energy windows ran different executions ({ran[0]} calls in the baseline, {ran[1]} in the candidate): "
        "their joules per execution are not the same measurement"
    )


def _floor_violation(evidence: Evidence, name: str, row) -> bool:
    """The energy floor check recomputed from the capture (never the recorded one)."""
    from tensorforge_measure.compare.energy import energy_row

    energy = evidence.capture.predicted.energy
    check = energy_row(energy.workloads.get(name) if energy else None, row)
    return check is not None and check.floor_verdict == "FLOOR VIOLATION"


def energy_verdicts(base: Evidence, cand: Evidence, settings: GateSettings | None = None) -> list[WorkloadVerdict]:
    """Per workload of either capture: the energy verdict (p50 fields hold J per execution)."""
    settings = settings or GateSettings()
    base_rows, cand_rows = _rows(base), _rows(cand)
    base_specs, cand_specs = _specs(base), _specs(cand)
    global_reason = _device_difference(base, cand)
    out: list[WorkloadVerdict] = []
    for name in suite_order(base_specs, cand_specs):
        not_comparable = incomparable(name, base_specs, cand_specs, global_reason)
        if not_comparable:
            out.append(WorkloadVerdict(name, NO_VERDICT, not_comparable))
            continue
        a, why = _samples(base_rows.get(name), "baseline", settings)
        b, why_b = _samples(cand_rows.get(name), "candidate", settings) if a is not None else (None, None)
        if a is None or b is None:
            out.append(WorkloadVerdict(name, NO_VERDICT, why or why_b or "no energy samples"))
            continue
        violated = [
            role
            for role, ev, rows in (("baseline", base, base_rows), ("candidate", cand, cand_rows))
            if _floor_violation(ev, name, rows[name])
        ]
        if violated:
            out.append(
                WorkloadVerdict(
                    name,
                    NO_VERDICT,
                    f"energy floor violation in the {violated[0]}: the energy model or its calibration is wrong "
                    "there, so the comparison is meaningless",
                )
            )
            continue
        flags = _flag_difference(base_rows[name].framework_flags, cand_rows[name].framework_flags)  # type: ignore[union-attr]
        if flags:
            out.append(WorkloadVerdict(name, NO_VERDICT, flags))
            continue
        ran = _executions_differ(base_rows[name].energy, cand_rows[name].energy)  # type: ignore[union-attr]
        if ran:
            out.append(WorkloadVerdict(name, NO_VERDICT, ran))
            continue
        paced = _host_bound({"baseline": base_rows[name], "candidate": cand_rows[name]})
        if paced:
            moved = float(np.median(b)) / float(np.median(a)) - 1
            split = _split(base_rows[name].energy, cand_rows[name].energy)  # type: ignore[union-attr]
            out.append(WorkloadVerdict(name, NO_VERDICT, f"{paced} ({moved * 100:+.1f}% J per execution{split})"))
            continue
        p50a, p50b = float(np.median(a)), float(np.median(b))
        ratio = p50b / p50a
        _, p = mann_whitney(a, b)
        low, high = bootstrap_ratio_ci(
            a, b, resamples=settings.resamples, confidence=settings.confidence, seed=_seed(base, cand, "energy:" + name)
        )
        change = f"{(ratio - 1) * 100:+.1f}% J per execution (CI {(low - 1) * 100:+.1f}%..{(high - 1) * 100:+.1f}%, p={p:.2g})"
        verdict = classify(ratio, p, low, high, settings)
        change += _split(base_rows[name].energy, cand_rows[name].energy)  # type: ignore[union-attr]
        if verdict == "REGRESSION":
            reason = f"more energy: {change}"
        elif verdict == "IMPROVEMENT":
            reason = f"less energy: {change}"
        elif significant(p, low, high, settings):
            reason = f"{change}: significant but below the {settings.threshold * 100:g}% effect threshold"
        else:
            reason = f"{change}: not significant"
        out.append(WorkloadVerdict(name, verdict, reason, p50a, p50b, ratio, low, high, p, len(a), len(b)))
    return out
