"""One workload's MEASURED row from its measurement phases: every timing labelled with its
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
from typing import Any
from collections.abc import Callable

import attrs

from tensorforge.api import one_line, to_data

from ..measure.phases import ModeTiming, PhasePlan

PRIMARY_ORDER = (("burst", "graph"), ("burst", "eager"), ("single", "eager"))


def timing_data(t: ModeTiming) -> dict[str, Any]:
    return {"regime": t.regime, "mode": t.mode, "samples_s": list(t.timed.samples_s),
            "stats": attrs.asdict(t.timed.stats), "stop_reason": t.timed.stop_reason,
            "warmup_iters": t.timed.warmup_iters, "flush_bytes": t.timed.flush_bytes, "method": t.method}


def primary(timings: list[ModeTiming]) -> ModeTiming:
    by_key = {(t.regime, t.mode): t for t in timings}
    return next(by_key[k] for k in PRIMARY_ORDER if k in by_key)


def host_overhead(timings: list[ModeTiming]) -> dict[str, float]:
    """Per regime: eager p50 - graph p50, the host's share of an eager call (may be negative
    within noise for kernels long enough to hide the host)."""
    by_key = {(t.regime, t.mode): t.timed.stats.p50 for t in timings}
    return {regime: by_key[(regime, "eager")] - by_key[(regime, "graph")]
            for regime in ("burst", "sustained") if (regime, "eager") in by_key and (regime, "graph") in by_key}


def operators_data(trace) -> dict[str, Any] | None:
    """The trace window's per-operator statistics, eager and graph, and which one holds the
    operators' device time."""
    if trace is None:
        return None
    return {"source": trace.device_source, "iterations": trace.iterations, "method": trace.method,
            "notes": list(trace.notes),
            "eager": to_data(trace.eager) if trace.eager is not None else None,
            "graph": to_data(trace.graph) if trace.graph is not None else None}


def burst_run_once(fn: Callable[[], Any], synchronize: Callable[[], None], stretch_s: float = 0.005,
                   duty: float = 0.5) -> Callable[[], None]:
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


def _window(source, session, run_once, seconds: float, regime: str) -> dict[str, Any]:
    try:
        window = dict(source.collect(session, run_once, seconds))
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        window = {"available": False, "reason": one_line(exc)}
    window["regime"] = regime
    return window


def measure_phases(session, prepared, plan: PhasePlan, source, telemetry_s: float
                   ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Run the phases of a prepared workload; the row's measurement fields and the telemetry
    windows by regime (each collected right after its regime's timings, never inside them)."""
    windows: dict[str, dict[str, Any]] = {}
    timings: list[ModeTiming] = []
    notes: list[str] = []
    with session.phases(prepared.fn, plan) as phases:
        burst = phases.burst()
        timings += burst.timings
        notes += burst.notes
        single = any(t.regime == "single" for t in burst.timings)
        if source is not None and not single:
            run_once = burst_run_once(prepared.fn, session.synchronize)
            windows["burst"] = _window(source, session, run_once, min(0.3, telemetry_s), "burst")
        sustained = phases.sustained() if plan.sustained and not single else None
        if sustained is not None:
            timings += sustained.timings
            notes += sustained.notes
        if source is not None:
            regime = "single" if single else "sustained"
            windows[regime] = _window(source, session, prepared.fn, telemetry_s, regime)
        graph = getattr(phases, "graph", None)
        graph_record = {"captured": graph is not None, "reason": getattr(phases, "graph_note", None),
                        "method": graph.method if graph is not None else None,
                        "calls_per_replay": graph.calls if graph is not None else None}
    main = primary(timings)
    row = {**{k: v for k, v in timing_data(main).items()},
           "modes": [timing_data(t) for t in timings if t is not main],
           "host_overhead_s": host_overhead(timings),
           "graph": graph_record,
           "steady": to_data(sustained.steady) if sustained is not None and sustained.steady else None,
           "regimes_note": next((n for n in notes if n.startswith("regimes collapse")), None),
           "notes": [n for n in notes if not n.startswith("regimes collapse")],
           "operators": operators_data(burst.trace)}
    return row, windows
