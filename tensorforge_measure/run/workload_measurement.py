"""One workload's MEASURED fields from its measurement phases: every timing labelled with its
regime and mode, the primary timing the comparison and the gate use, the host overhead, the
steady state, the graph capture outcome, the per-operator trace; and its telemetry windows,
one per regime.

Which timing is primary: device time where it exists (the burst-regime graph replays), else
the burst (or single-regime) eager calls. Why: eager timing of small kernels measures Python
and launch cost, and its spread (rel. IQR 22-30% for the default decode transformer on an
H200) leaves the gate without a verdict; the eager timing stays in the row, labelled.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs

from tensorforge.api import one_line
from tensorforge_measure.capture.sections.diagnostic import TelemetryWindow
from tensorforge_measure.capture.sections.phases import (
    GraphRecord,
    ModeTimingRecord,
    OperatorsRecord,
    SteadyRecord,
    TraceSummaryRecord,
)
from tensorforge_measure.measure.phases import ModeTiming, PhasePlan

PRIMARY_ORDER = (("burst", "graph"), ("burst", "eager"), ("single", "eager"))


def timing_record(t: ModeTiming) -> ModeTimingRecord:
    return ModeTimingRecord(
        regime=t.regime,
        mode=t.mode,
        samples_s=tuple(t.timed.samples_s),
        stats=t.timed.stats,
        stop_reason=t.timed.stop_reason,
        warmup_iters=t.timed.warmup_iters,
        flush_bytes=t.timed.flush_bytes,
        method=t.method,
    )


def primary(timings: list[ModeTiming]) -> ModeTiming:
    by_key = {(t.regime, t.mode): t for t in timings}
    return next(by_key[k] for k in PRIMARY_ORDER if k in by_key)


def host_overhead(timings: list[ModeTiming]) -> dict[str, float]:
    """Per regime: eager p50 - graph p50, the host's share of an eager call (may be negative
    within noise for kernels long enough to hide the host)."""
    by_key = {(t.regime, t.mode): t.timed.stats.p50 for t in timings}
    return {
        regime: by_key[(regime, "eager")] - by_key[(regime, "graph")]
        for regime in ("burst", "sustained")
        if (regime, "eager") in by_key and (regime, "graph") in by_key
    }


def _summary(summary) -> TraceSummaryRecord | None:
    # trace_attribution's classes carry the same fields as the capture's records
    from tensorforge_measure.capture.convert import converter

    return None if summary is None else converter.structure(attrs.asdict(summary), TraceSummaryRecord)


def operators_record(trace) -> OperatorsRecord | None:
    """The trace window's per-operator statistics, eager and graph, and which one holds the
    operators' device time."""
    if trace is None:
        return None
    return OperatorsRecord(
        source=trace.device_source,
        iterations=trace.iterations,
        method=trace.method,
        notes=tuple(trace.notes),
        eager=_summary(trace.eager),
        graph=_summary(trace.graph),
    )


def idle_per_activity(trace) -> float | None:
    """The traced graph replays' idle time between activities per call, divided by the activities
    per call: which launch level the graph ran at (GraphRecord.idle_per_activity_s)."""
    summary = getattr(trace, "graph", None) if trace is not None else None
    if summary is None:
        return None
    activities = sum(op.activities for op in summary.operators)
    return summary.gap_p50_s / activities if activities > 0 else None


def burst_run_once(
    fn: Callable[[], Any], synchronize: Callable[[], None], stretch_s: float = 0.005, duty: float = 0.5
) -> Callable[[], None]:
    """What a telemetry window repeats to hold the burst regime: calls for ~stretch_s, then an
    equal rest (duty 50%), as the burst timings ran."""

    def run_once() -> None:
        start = time.perf_counter()
        while True:
            fn()
            synchronize()
            if time.perf_counter() - start >= stretch_s:
                break
        time.sleep((time.perf_counter() - start) * (1.0 / duty - 1.0))

    return run_once


def _window(source, session, run_once, seconds: float, regime: str) -> TelemetryWindow:
    from tensorforge_measure.capture.telemetry_window import window_from_source

    try:
        window = window_from_source(source.collect(session, run_once, seconds))
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a telemetry source's failure costs its window, never the run
        window = TelemetryWindow(available=False, reason=one_line(exc))
    return attrs.evolve(window, regime=regime)


def measure_phases(
    session, prepared, plan: PhasePlan, source, telemetry_s: float, seconds: dict[str, float] | None = None
) -> tuple[dict[str, Any], dict[str, TelemetryWindow]]:
    """Run the phases of a prepared workload: the Measurement fields they give, and the
    telemetry windows by regime (each right after its regime's timings, never inside them).
    `seconds`, when given, receives the wall seconds of each step (for the run log)."""
    seconds = {} if seconds is None else seconds
    windows: dict[str, TelemetryWindow] = {}
    timings: list[ModeTiming] = []
    notes: list[str] = []
    with session.phases(prepared.fn, plan) as phases:
        burst = phases.burst()
        timings += burst.timings
        notes += burst.notes
        single = any(t.regime == "single" for t in burst.timings)
        if source is not None and not single:
            run_once = burst_run_once(prepared.fn, session.synchronize)
            t0 = time.perf_counter()
            windows["burst"] = _window(source, session, run_once, min(0.3, telemetry_s), "burst")
            seconds["burst telemetry"] = time.perf_counter() - t0
        sustained = phases.sustained() if plan.sustained and not single else None
        if sustained is not None:
            timings += sustained.timings
            notes += sustained.notes
        if source is not None:
            regime = "single" if single else "sustained"
            t0 = time.perf_counter()
            windows[regime] = _window(source, session, prepared.fn, telemetry_s, regime)
            seconds[f"{regime} telemetry"] = time.perf_counter() - t0
        for step, took in (getattr(phases, "seconds", None) or {}).items():
            seconds.setdefault(step, took)
        graph = getattr(phases, "graph", None)
        graph_record = GraphRecord(
            captured=graph is not None,
            reason=getattr(phases, "graph_note", None),
            method=graph.method if graph is not None else None,
            calls_per_replay=graph.calls if graph is not None else None,
            launch_state=getattr(graph, "launch_state", None) if graph is not None else None,
            idle_per_activity_s=idle_per_activity(burst.trace),
        )
    main = primary(timings)
    steady = sustained.steady if sustained is not None else None
    fields = {
        "samples_s": tuple(main.timed.samples_s),
        "stats": main.timed.stats,
        "stop_reason": main.timed.stop_reason,
        "warmup_iters": main.timed.warmup_iters,
        "flush_bytes": main.timed.flush_bytes,
        "regime": main.regime,
        "mode": main.mode,
        "method": main.method,
        "modes": tuple(timing_record(t) for t in timings if t is not main),
        "host_overhead_s": host_overhead(timings) or None,
        "graph": graph_record,
        "steady": SteadyRecord(
            reached=steady.reached,
            after_s=steady.after_s,
            window_medians_s=tuple(steady.window_medians_s),
            rule=steady.rule,
        )
        if steady
        else None,
        "regimes_note": next((n for n in notes if n.startswith("regimes collapse")), None),
        "notes": tuple(n for n in notes if not n.startswith("regimes collapse")) or None,
        "operators": operators_record(burst.trace),
    }
    return fields, windows
