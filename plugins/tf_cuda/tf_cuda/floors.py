"""Kernel floors, each named for what it measures.

The old "launch floor" (14-25 us on an H200) was the event-timed interval of one eager op:
the host's dispatch and launch time, larger than the 4.7 us a tiny GEMM measures. Here four
different things are measured separately:

* kernel_interval_s: device time per kernel when trivial kernels run back to back from a CUDA
  graph replay (no host in the way): one kernel's duration plus the gap to the next.
* kernel_duration_s and kernel_gap_s: the same replay under the profiler, split into the
  p50 duration of one trivial kernel and the p50 idle gap between consecutive kernels.
* eager_event_floor_s: an event pair around one eager trivial op, p50 (the device waits for the
  host's dispatch and launch, so this is a host-bound interval seen from the device).
* host_call_interval_s: host wall time per eager call of a trivial op, launched back to back
  without synchronising (Python + dispatch + launch), p50 over batches.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import attrs

from tensorforge import one_line

GRAPH_KERNELS = 200  # trivial kernels per captured graph
GRAPH_REPLAYS = 30
HOST_BATCHES, HOST_CALLS = 30, 100
TRACED_REPLAYS = 3


@attrs.frozen
class Floors:
    kernel_interval_s: float
    kernel_duration_s: float | None
    kernel_gap_s: float | None
    eager_event_floor_s: float
    host_call_interval_s: float
    methods: tuple[tuple[str, str], ...]
    notes: tuple[str, ...] = ()


def _graph_of_trivial_kernels(torch, x, device):
    from tf_cuda.graph import paired_graph

    def body():
        for _ in range(GRAPH_KERNELS):
            x.add_(1.0)

    return paired_graph(torch, lambda: x.add_(1.0), body, device)


def _kernel_interval(torch, graph, device) -> float:
    graph.replay()
    torch.cuda.synchronize(device)
    per_kernel: list[float] = []
    for _ in range(GRAPH_REPLAYS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        per_kernel.append(start.elapsed_time(end) * 1e-3 / GRAPH_KERNELS)
    return statistics.median(per_kernel)


def _split_from_trace(graph) -> tuple[float | None, float | None, str | None]:
    from torch.profiler import record_function

    from tensorforge_measure import ITERATION, device_iterations
    from tensorforge_measure import export_trace as export

    def run():
        for _ in range(TRACED_REPLAYS):
            with record_function(ITERATION):
                graph.replay()

    try:
        its = device_iterations(export(run, cuda=True))
    except Exception as exc:
        return None, None, f"kernel duration and gap not split: no kernel trace ({one_line(exc)})"
    durations, gaps = [], []
    for it in its:
        acts = it.activities
        durations += [a.dur_us * 1e-6 for a in acts]
        gaps += [max(0.0, b.start_us - a.end_us) * 1e-6 for a, b in zip(acts, acts[1:])]
    if len(durations) < GRAPH_KERNELS or not gaps:
        return (
            None,
            None,
            (
                f"kernel duration and gap not split: the trace showed {len(durations)} "
                f"kernels of {TRACED_REPLAYS} replays of {GRAPH_KERNELS}"
            ),
        )
    return statistics.median(durations), statistics.median(gaps), None


def _host_call_interval(torch, x, device) -> float:
    per_call = []
    for _ in range(HOST_BATCHES):
        torch.cuda.synchronize(device)
        t0 = time.perf_counter_ns()
        for _ in range(HOST_CALLS):
            x.add_(1.0)
        per_call.append((time.perf_counter_ns() - t0) * 1e-9 / HOST_CALLS)
    torch.cuda.synchronize(device)
    return statistics.median(per_call)


def probe_floors(device: Any, trace: bool = True) -> Floors:
    import torch

    from tf_cuda.probes import probe_launch_floor

    x = torch.ones(1, device=device)
    graph = _graph_of_trivial_kernels(torch, x, device)
    interval = _kernel_interval(torch, graph, device)
    duration = gap = None
    notes = []
    if trace:
        duration, gap, why = _split_from_trace(graph)
        if why:
            notes.append(why)
    del graph
    eager = probe_launch_floor(device=device)
    host = _host_call_interval(torch, x, device)
    methods = (
        (
            "kernel_interval_s",
            f"a CUDA graph of {GRAPH_KERNELS} x.add_(1.0) on a 1-element float32 tensor, "
            f"event pair around each of {GRAPH_REPLAYS} replays; p50 of elapsed / "
            f"{GRAPH_KERNELS}",
        ),
        ("kernel_duration_s", f"the same graph, {TRACED_REPLAYS} replays under torch.profiler: p50 kernel duration"),
        ("kernel_gap_s", "same trace: p50 idle time from one kernel's end to the next one's start"),
        ("eager_event_floor_s", eager.method),
        (
            "host_call_interval_s",
            f"host perf_counter around {HOST_CALLS} eager x.add_(1.0) calls queued "
            f"without synchronising, per call; p50 of {HOST_BATCHES} batches",
        ),
    )
    return Floors(interval, duration, gap, eager.seconds, host, methods, tuple(notes))
