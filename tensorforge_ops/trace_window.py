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

import json
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

import attrs

from tensorforge.errors import one_line

from . import op_ranges
from .trace_attribution import (TraceError, TraceSummary, apply_template, cpu_iterations, device_iterations,
                                sequence, summarize_iterations)


@attrs.frozen
class WorkloadTrace:
    iterations: int
    eager: Optional[TraceSummary]      # eager calls (None when the profiler gave nothing)
    graph: Optional[TraceSummary]      # graph replays, operators from the eager sequence
    device_source: Optional[str]       # which of the two the per-operator device time comes from
    notes: tuple                       # why something is missing (graph not matched, no profiler, ...)
    method: str


def export(run: Callable[[], None], cuda: bool) -> dict:
    """Run `run` under the profiler (CPU activity, and CUDA activity on a GPU); the trace as a
    Chrome-trace document."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        run()
        if cuda:
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory(prefix="tensorforge-trace-") as folder:
        path = Path(folder) / "trace.json"
        prof.export_chrome_trace(str(path))
        return json.loads(path.read_text(encoding="utf-8"))


def _calls(fn: Callable[[], Any], flush_step: Optional[Callable[[], Any]], n: int, ranges: bool) -> Callable[[], None]:
    from torch.profiler import record_function

    def run() -> None:
        recorder = op_ranges.profiler_recorder() if ranges else (lambda name: op_ranges._NOOP)
        with op_ranges.recording(recorder):
            for _ in range(n):
                if flush_step is not None:
                    with record_function(op_ranges.FLUSH):
                        flush_step()
                with record_function(op_ranges.ITERATION):
                    fn()
    return run


def trace_cuda(fn: Callable[[], Any], replay: Optional[Callable[[], Any]], flush_step, iterations: int,
               graph_note: Optional[str] = None) -> WorkloadTrace:
    """Eager calls, then graph replays, in one profiler session."""
    notes = [] if graph_note is None else [graph_note]

    def run() -> None:
        _calls(fn, flush_step, iterations, True)()
        if replay is not None:
            _calls(replay, flush_step, iterations, False)()

    method = (f"torch.profiler (CPU + CUDA activity): {iterations} eager calls"
              + (f", then {iterations} CUDA-graph replays" if replay else "")
              + ", each after the L2 flush; kernels attributed through their launch's operator range")
    try:
        doc = export(run, cuda=True)
        its = device_iterations(doc)
    except KeyboardInterrupt:
        raise
    except Exception as exc:   # no CUPTI, a profiler bug: the measurement stands without a trace
        return WorkloadTrace(iterations, None, None, None, tuple(notes + [f"no kernel trace: {one_line(exc)}"]), method)
    eager_its = [it for it in its if it.index < iterations]
    graph_its = [it for it in its if it.index >= iterations]
    eager = graph = None
    try:
        eager = summarize_iterations(eager_its)
    except TraceError as exc:
        notes.append(f"eager trace: {exc}")
    if replay is not None and eager_its:
        matched, why = apply_template(graph_its, sequence(eager_its[-1]))
        if why:
            notes.append(f"graph replay not attributed to operators: {why}")
        try:
            graph = summarize_iterations(matched)
        except TraceError as exc:
            notes.append(f"graph trace: {exc}")
    source = "graph replay" if graph is not None and not any("not attributed" in n for n in notes) else (
        "eager" if eager is not None else None)
    return WorkloadTrace(iterations, eager, graph, source, tuple(notes), method)


def trace_cpu(fn: Callable[[], Any], flush_step, iterations: int) -> WorkloadTrace:
    """Eager calls with CPU activity: each operator's framework ops and their wall time."""
    method = (f"torch.profiler (CPU activity): {iterations} calls, each after the cache flush; "
              "top-level framework ops attributed to the operator range around them")
    try:
        summary = summarize_iterations(cpu_iterations(export(_calls(fn, flush_step, iterations, True), cuda=False)))
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        return WorkloadTrace(iterations, None, None, None, (f"no CPU trace: {one_line(exc)}",), method)
    return WorkloadTrace(iterations, summary, None, "eager", ("CPU: no CUDA graphs; eager is the only mode",), method)
