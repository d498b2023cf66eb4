"""A workload's callable captured as a CUDA graph, so its device time is measured without the
host: one replay launches every kernel of several calls with one host call.

Why: eager timing of small kernels measures Python and launch cost (the default decode
transformer: 1.90 ms eager, 0.41 ms replayed as a graph on an H200); the difference of the two
is the host overhead of the eager call.

How a graph call is timed (as triton's do_bench_cudagraph, with the L2 flush it lacks, and a
distribution instead of one mean): two graphs are captured, one of `calls` unrolled
[L2 flush -> fn] and one of the same `calls` flushes alone. One sample is a replay of each,
back to back, each between an event pair: (T_fn - T_flush) / calls. The replay's own launch
latency and the flushes cancel in the difference, so a sample is the device time of one call
(its kernels and the gaps before them) without host or replay overhead. Why not event pairs
recorded inside the graph: on an H200 each in-graph event pair added ~2.7 us to every call
(a 2.3 us GEMM measured 5.1 us).

When capture fails (an op that synchronises, a library that refuses stream capture, memory),
the reason is kept and the workload has eager timings only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensorforge import one_line
from tensorforge_measure import GraphCaptureError  # noqa: F401  (fn could not be captured)

# Side-stream warm-up calls before capture, as PyTorch's CUDA-graph notes require: lazy
# initialisation (cuBLAS handles and workspaces, autotuning) must not happen during capture.
WARMUP_CALLS = 3


# The launch state every graph of this module is captured in, said with every graph timing. Why:
# on an H200 the same graph of the decode step (same 101 kernels, same durations) replayed with
# 0.10 or 0.45 us between consecutive kernels, and the upper level appeared when the workload's
# own kernels had run eagerly on a side stream other than the one the graph was then captured on
# (PyTorch's documented recipe and triton's do_bench_cudagraph: a fresh side stream for the
# warm-up, torch's default capture stream for the capture); with the warm-up on the capture
# stream, or on none, the graph replayed at the lower level (three traced H200
# sessions, 2026-11-30; see the lab-archive-2026-12 tag). torch.cuda.Stream() hands out pool streams round robin (32
# per priority, c10/cuda/CUDAStream.cpp) and torch.cuda.graph's default capture stream is one pool
# stream taken at its first use, so a fresh warm-up stream equals it only by the pool's count: the
# level was luck. Warming up and capturing on one stream per device makes it a property of the
# harness.
LAUNCH_STATE = "paired"
LAUNCH_STATE_NOTE = (
    "launch state 'paired': every workload's warm-up calls and every capture ran on one side stream "
    "per device, so no workload ran eagerly on a side stream other than its capture stream (on the "
    "H200 the lower launch level, ~0.10 us per kernel boundary, against ~0.45 us after a warm-up on "
    "another side stream; docs/measurement.md, 'The two levels, traced')"
)

# No device-side spin (torch.cuda._sleep) before the burst pairs: one was tried (2026-11-30) to give
# the host's launch of a large graph a head start, and the spin itself moved the decode step's graph
# to the upper launch level for the rest of the process (H200, 2026-11-30,
# results kept at the lab-archive-2026-12 tag: paired and no spin 372 us over 40 burst
# pairs, with or without rests; with the spin 372 for at most 3 pairs, then ~407 us, also in
# back-to-back replays afterwards). An eager kernel launched between replays is part of what decides
# the level; the burst pair queues only graph replays and event records.


def capture_stream(torch, device):
    """The one side stream per device that every workload's warm-up and every capture run on
    (see LAUNCH_STATE)."""
    key = str(device)
    if key not in _CAPTURE_STREAMS:
        _CAPTURE_STREAMS[key] = torch.cuda.Stream(device)
    return _CAPTURE_STREAMS[key]


_CAPTURE_STREAMS: dict[str, Any] = {}


def warm_up(torch, fn: Callable[[], Any], device) -> None:
    """WARMUP_CALLS eager calls on the capture stream, ordered after and before the current
    stream's work, synchronised before the capture."""

    def calls() -> None:
        for _ in range(WARMUP_CALLS):
            fn()

    _on_capture_stream(torch, calls, device)


def _on_capture_stream(torch, work: Callable[[], Any], device):
    """`work` run on the capture stream, ordered after and before the current stream's work,
    synchronised; the stream, for the capture that follows."""
    stream = capture_stream(torch, device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        work()
    torch.cuda.current_stream(device).wait_stream(stream)
    torch.cuda.synchronize(device)
    return stream


def paired_graph(torch, warm: Callable[[], Any], body: Callable[[], Any], device):
    """A CUDA graph of `body`, warmed up by `warm` and captured on the capture stream: for the
    calibration's own graphs (kernel floors, estimate chains, the energy busy window), so that
    nothing in a run's process warms up or captures on another side stream (see LAUNCH_STATE).
    Why: with the workloads paired and these probes on fresh pool streams and torch's default
    capture stream, the decode step's burst graph read 3-4% rel. IQR in calibrating runs and
    0.3% in reruns on a cached calibration (H200, 2026-11-30 and 2026-12-01)."""
    return _capture(torch, body, _on_capture_stream(torch, warm, device))


def _capture(torch, body: Callable[[], None], stream):
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        body()
    return graph


class GraphCalls:
    """`calls` unrolled [flush -> fn] in one CUDA graph, and the same flushes alone in another."""

    launch_state = LAUNCH_STATE  # what the capture states (GraphRecord.launch_state)

    def __init__(self, torch, fn: Callable[[], Any], flush_step: Callable[[], Any] | None, calls: int, device):
        self.torch, self.device, self.calls = torch, device, calls
        self.flushed = flush_step is not None
        self.work: Any = None  # torch.cuda.CUDAGraph once captured
        self.flushes: Any = None

        def work() -> None:
            for _ in range(calls):
                if flush_step is not None:
                    flush_step()
                fn()

        def flushes() -> None:
            for _ in range(calls):
                if flush_step is not None:
                    flush_step()

        try:
            stream = capture_stream(torch, device)
            self.work = _capture(torch, work, stream)
            self.flushes = _capture(torch, flushes, stream) if flush_step is not None else None
            self.work.replay()  # a replay that fails belongs to capture, not to timing
            torch.cuda.synchronize(device)
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            self.close()
            raise GraphCaptureError(one_line(exc)) from None

    @property
    def method(self) -> str:
        if not self.flushed:
            return (
                f"CUDA graph of {self.calls} unrolled call(s); sample = replay time (event pair) / "
                f"{self.calls}, replay launch latency included"
            )
        return (
            f"CUDA graph of {self.calls} unrolled [L2 flush -> fn] and a graph of the {self.calls} "
            f"flushes alone, replayed back to back between event pairs; sample = (T_fn - T_flush) / "
            f"{self.calls}: one call's device time, replay latency and flushes cancelled; " + LAUNCH_STATE_NOTE
        )

    def replay(self) -> None:
        """One replay of the workload graph (what the trace window traces)."""
        self.work.replay()

    def queue_pair(self, warm: bool = False) -> tuple:
        """Queue one sample: both replays, each between its own event pair. warm=True first
        replays the flushes alone, untimed: after an idle moment (the burst regime's rests) the
        first kernel runs slow, and without it that delay would land in T_fn and not in T_flush
        (on an H200 it added ~40 us to a 0.38 ms decode step and 1.8 us to a 2.6 us GEMM)."""
        ev = tuple(self.torch.cuda.Event(enable_timing=True) for _ in range(3))
        if warm and self.flushes is not None:
            self.flushes.replay()
        ev[0].record()
        self.work.replay()
        ev[1].record()
        if self.flushes is not None:
            self.flushes.replay()
        ev[2].record()
        return ev

    def queue_replay(self, flushes: bool = False) -> tuple:
        """Queue one replay of the workload graph (or of the flushes alone) between an event
        pair, with nothing else around it: the sustained window's load (see read_replays)."""
        graph = self.flushes if flushes else self.work
        ev = (self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True))
        ev[0].record()
        graph.replay()
        ev[1].record()
        return ev

    def read_replays(self, work: list[tuple], flushes: list[tuple]) -> list[float]:
        """Per-call device time of each workload replay: (T_fn - median T_flush) / calls, T_flush
        from the flush-alone replays (a memory-bound zeroing, its time steady under any clock)."""
        import statistics

        if not work:
            return []
        work[-1][1].synchronize()
        alone = statistics.median(s.elapsed_time(e) * 1e-3 for s, e in flushes) if flushes else 0.0
        return [max(0.0, s.elapsed_time(e) * 1e-3 - alone) / self.calls for s, e in work]

    def read_pair(self, ev: tuple) -> float:
        ev[2].synchronize()
        work = ev[0].elapsed_time(ev[1]) * 1e-3
        alone = ev[1].elapsed_time(ev[2]) * 1e-3 if self.flushes is not None else 0.0
        return max(0.0, work - alone) / self.calls

    def close(self) -> None:
        self.work = self.flushes = None


def capture(torch, fn, flush_step, calls: int, device) -> GraphCalls:
    """GraphCalls, or GraphCaptureError saying why fn cannot be captured."""
    return GraphCalls(torch, fn, flush_step, calls, device)
