"""A workload's callable captured as a CUDA graph, so its device time is measured without the
host: one replay launches every kernel of several calls with one host call.

Why: eager timing of small kernels measures Python and launch cost (the default decode
transformer: 1.90 ms eager, 0.41 ms replayed as a graph on an H200); the difference of the two
is the host overhead of the eager call.

How a graph call is timed: the graph holds `calls` copies of [L2 flush -> start event -> fn ->
end event], the events recorded as graph nodes (cudaEventRecordExternal). Each call's own
event pair then brackets exactly its kernels, with the flush between calls as in eager timing
and without the launch latency of a replay (which an event pair around a whole replay would
add to every sample: 2.7 us on a 2.3 us GEMM). This is what triton's do_bench_cudagraph
amortises away by unrolling calls, kept per call. Where PyTorch cannot record events inside a
graph, a one-call graph is timed with an event pair around each replay, and the method says so.

When capture fails (an op that synchronises, a library that refuses stream capture, memory),
the reason is kept and the workload has eager timings only.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from tensorforge.errors import one_line

# Side-stream warm-up calls before capture, as PyTorch's CUDA-graph notes require: lazy
# initialisation (cuBLAS handles and workspaces, autotuning) must not happen during capture.
WARMUP_CALLS = 3


class GraphCaptureError(Exception):
    """fn could not be captured; the message says why."""


def warm_up(torch, fn: Callable[[], Any], device) -> None:
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(WARMUP_CALLS):
            fn()
    torch.cuda.current_stream(device).wait_stream(stream)
    torch.cuda.synchronize(device)


class GraphCalls:
    """`calls` calls of fn in one CUDA graph, each after the flush and inside its own event pair
    (in-graph events), or, with inner_events=False, one bare call timed from outside."""

    def __init__(self, torch, fn: Callable[[], Any], flush_step: Optional[Callable[[], Any]], calls: int,
                 device, inner_events: bool = True):
        self.torch, self.device, self.calls, self.inner_events = torch, device, calls, inner_events
        self.events: List[tuple] = []
        self.note: Optional[str] = None      # why the fallback was used
        self.graph = torch.cuda.CUDAGraph()
        try:
            if inner_events:
                self.events = [(torch.cuda.Event(enable_timing=True, external=True),
                                torch.cuda.Event(enable_timing=True, external=True)) for _ in range(calls)]
            with torch.cuda.graph(self.graph):
                if inner_events:
                    for start, end in self.events:
                        if flush_step is not None:
                            flush_step()
                        start.record()
                        fn()
                        end.record()
                else:
                    fn()
            self.graph.replay()      # a replay that fails belongs to capture, not to timing
            torch.cuda.synchronize(device)
            if inner_events:
                self.read()
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            self.close()
            raise GraphCaptureError(one_line(exc)) from None

    @property
    def method(self) -> str:
        if self.inner_events:
            return (f"CUDA graph of {self.calls} call(s), each [L2 flush -> start event -> fn -> end event] "
                    "with the events recorded as graph nodes; every call's event pair is one sample")
        return "CUDA graph of one call; event pair around each replay (includes the replay's launch latency)"

    def replay(self) -> None:
        self.graph.replay()

    def read(self) -> List[float]:
        """Per-call seconds of the last replay (waits for it)."""
        self.events[-1][1].synchronize()
        return [start.elapsed_time(end) * 1e-3 for start, end in self.events]

    def close(self) -> None:
        self.graph = None
        self.events = []


def capture(torch, fn, flush_step, calls: int, device) -> GraphCalls:
    """GraphCalls with in-graph events, or the one-call fallback when events cannot be recorded
    inside a graph on this PyTorch (GraphCaptureError when fn itself cannot be captured)."""
    try:
        return GraphCalls(torch, fn, flush_step, calls, device, inner_events=True)
    except GraphCaptureError as exc:
        # Tell "events in graphs unsupported" from "fn not capturable": capture fn alone.
        bare = GraphCalls(torch, fn, None, 1, device, inner_events=False)
        bare.note = f"graph mode timed around whole replays: events inside the graph failed ({exc})"
        return bare
