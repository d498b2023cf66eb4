"""The trace window: a few calls of a workload under the PyTorch profiler, in a window of its own
(never inside timed samples: the profiler adds host cost to every op), turned into per-operator
statistics by trace_attribution.

On a CUDA device the window traces eager calls (which kernels each operator launched, and the
host time inside each operator's range) and, where the workload was captured as a CUDA graph,
graph replays (the device time of each operator without host gaps). On the CPU it traces eager
calls with CPU activity only: the framework ops inside each range are the operator's time.
Every call is preceded by the same L2 flush as the timed samples, inside a range of its own so
its kernel is never attributed to the workload.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from tensorforge.api import one_line
from tensorforge_measure.measure import op_ranges
from tensorforge_measure.measure.native_log import without_profiler_lines
from tensorforge_measure.measure.trace_attribution import (
    TraceError,
    TraceSummary,
    apply_template,
    cpu_iterations,
    device_iterations,
    sequence,
    summarize_iterations,
)


@attrs.frozen
class WorkloadTrace:
    iterations: int
    eager: TraceSummary | None  # eager calls (None when the profiler gave nothing)
    graph: TraceSummary | None  # graph replays, operators from the eager sequence
    device_source: str | None  # which of the two the per-operator device time comes from
    notes: tuple  # why something is missing (graph not matched, no profiler, ...)
    method: str


def export(run: Callable[[], None], cuda: bool) -> dict:
    """Run `run` under the profiler (CPU activity, and CUDA activity on a GPU); the trace as a
    Chrome-trace document."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    # a CPU-only window: the profiler's own log lines (a CUDA build without a GPU logs an ERROR
    # probing for one) are no news to the user (measure/native_log.py)
    quiet = contextlib.nullcontext() if cuda else without_profiler_lines()
    with quiet, tempfile.TemporaryDirectory(prefix="tensorforge-trace-") as folder:
        with profile(activities=activities) as prof:
            run()
            if cuda:
                torch.cuda.synchronize()
        path = Path(folder) / "trace.json"
        prof.export_chrome_trace(str(path))
        return json.loads(path.read_text(encoding="utf-8"))


def _calls(
    fn: Callable[[], Any], flush_step: Callable[[], Any] | None, n: int, ranges: bool, pace: float | None = None
) -> Callable[[], None]:
    """n calls of fn, each after the flush, each inside an ITERATION range; with `pace` (a duty
    cycle < 1, GPU only) the host waits for each call and rests so the calls stay in the burst
    regime the timings were taken in."""
    import time

    from torch.profiler import record_function

    def run() -> None:
        import torch

        recorder = op_ranges.profiler_recorder() if ranges else (lambda name: op_ranges._NOOP)
        with op_ranges.recording(recorder):
            for _ in range(n):
                start = time.perf_counter()
                if flush_step is not None:
                    with record_function(op_ranges.FLUSH):
                        flush_step()
                with record_function(op_ranges.ITERATION):
                    fn()
                if pace is not None and pace < 1:
                    torch.cuda.synchronize()
                    time.sleep((time.perf_counter() - start) * (1.0 / pace - 1.0))

    return run


def trace_cuda(
    fn: Callable[[], Any], graph, flush_step, iterations: int, graph_note: str | None = None, pace: float | None = None
) -> WorkloadTrace:
    """Eager calls, then replays of `graph` (cuda_graph.GraphCalls), in one profiler session."""
    notes = [] if graph_note is None else [graph_note]
    replays = 0
    if graph is not None:
        replays = max(2, -(-iterations // graph.calls))

    def run() -> None:
        _calls(fn, flush_step, iterations, True, pace)()
        if graph is not None:
            # the graph flushes before each of its calls itself
            _calls(graph.replay, None, replays, False, pace)()

    method = (
        f"torch.profiler (CPU + CUDA activity): {iterations} eager calls"
        + (
            f", then {replays} replays of the graph of {graph.calls} unrolled [flush -> fn]"
            if graph is not None
            else ""
        )
        + "; every call after the L2 flush"
        + (f", each call followed by a rest (<= {pace:.0%} duty, burst regime)" if pace else "")
        + "; kernels attributed through their launch's operator range, graph kernels through "
        "the eager call's kernel sequence"
    )
    try:
        doc = export(run, cuda=True)
        its = device_iterations(doc)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # no CUPTI, a profiler bug: the measurement stands without a trace
        return WorkloadTrace(iterations, None, None, None, tuple(notes + [f"no kernel trace: {one_line(exc)}"]), method)
    eager_its = [it for it in its if it.index < iterations]
    graph_its = [it for it in its if it.index >= iterations]
    eager = graph_summary = None
    try:
        eager = summarize_iterations(eager_its)
    except TraceError as exc:
        notes.append(f"eager trace: {exc}")
    matched_ok = False
    if graph is not None and eager_its:
        calls, prefix = graph.calls, 1 if graph.flushed else 0
        matched, why = apply_template(graph_its, sequence(eager_its[-1]), calls, prefix)
        if why:
            notes.append(f"graph replay not attributed to operators: {why}")
        matched_ok = why is None
        try:
            graph_summary = summarize_iterations(matched)
        except TraceError as exc:
            notes.append(f"graph trace: {exc}")
            matched_ok = False
    source = "graph replay" if matched_ok else ("eager" if eager is not None else None)
    return WorkloadTrace(iterations, eager, graph_summary, source, tuple(notes), method)


def trace_cpu(fn: Callable[[], Any], flush_step, iterations: int) -> WorkloadTrace:
    """Eager calls with CPU activity: each operator's framework ops and their wall time."""
    method = (
        f"torch.profiler (CPU activity): {iterations} calls, each after the cache flush; "
        "top-level framework ops attributed to the operator range around them"
    )
    try:
        summary = summarize_iterations(cpu_iterations(export(_calls(fn, flush_step, iterations, True), cuda=False)))
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        return WorkloadTrace(iterations, None, None, None, (f"no CPU trace: {one_line(exc)}",), method)
    return WorkloadTrace(iterations, summary, None, "eager", (), method)
