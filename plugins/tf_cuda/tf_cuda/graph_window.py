"""The CUDA backend's graph of unrolled calls for an energy window (cuda_replays), the capability
its sessions offer as `graph_replays` (tensorforge_measure.energy.execution says which execution a
window runs and why; its names are re-exported here for this module's readers)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from tensorforge_measure import (  # noqa: F401  (re-exported)
    EAGER,
    GRAPH,
    GRAPH_HOW,
    GRAPH_TARGET_S,
    MAX_GRAPH_CALLS,
    MAX_POOL_BYTES,
    PACE_BOUND,
    PACE_CHUNKS,
    PACE_MAX_CALL_S,
    PACE_S,
    GraphCaptureError,
    Replays,
    WindowChoice,
    energy_window,
    graph_calls,
    host_launch_s,
)
from tensorforge_measure import choose_window as choose  # noqa: F401  (re-exported)
from tensorforge_measure import window_burst_p50 as burst_p50  # noqa: F401  (re-exported)


@contextlib.contextmanager
def cuda_replays(torch: Any, fn: Callable[[], Any], calls: int, device: Any) -> Iterator[Replays]:
    """A CUDA graph of `calls` unrolled fn() (no flush), warmed up and captured on the capture
    stream every graph of the run uses (cuda_graph.paired_graph: the launch state the latency
    graphs were timed in); GraphCaptureError where capture fails or its pool exceeds
    MAX_POOL_BYTES. Freed with its pool when the block ends."""
    from tensorforge import one_line
    from tf_cuda.graph import paired_graph

    def body() -> None:
        for _ in range(calls):
            fn()

    graph = None
    try:
        with torch.inference_mode():  # as the latency graphs were captured (cuda_modes.cuda_phases)
            torch.cuda.synchronize(device)
            before = torch.cuda.memory_reserved(device)
            try:
                graph = paired_graph(torch, fn, body, device)
                graph.replay()  # a replay that fails belongs to capture, not to the window
                torch.cuda.synchronize(device)
            except KeyboardInterrupt:
                raise
            except Exception as exc:
                raise GraphCaptureError(one_line(exc)) from None
            pool = max(0, int(torch.cuda.memory_reserved(device) - before))
        if pool > MAX_POOL_BYTES:
            raise GraphCaptureError(
                f"the graph of {calls} calls reserved {pool / 2**20:.0f} MiB (> {MAX_POOL_BYTES / 2**20:.0f} MiB)"
            )
        yield Replays(graph.replay, calls, pool)
    finally:
        graph = None
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
