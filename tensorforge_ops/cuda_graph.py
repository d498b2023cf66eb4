"""A workload's callable captured as a CUDA graph, so its device time can be timed without the
host: a replay launches every kernel of the call with one host call.

Why: eager timing of small kernels measures Python and launch cost (the default decode
transformer: 1.90 ms eager, 0.41 ms replayed as a graph on an H200). The difference of the two
is the host overhead of the eager call. When capture fails (an op that synchronises, a
library that refuses stream capture, memory), the reason is kept and the workload has eager
timings only.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional

import attrs

from tensorforge.errors import one_line

# Side-stream warm-up calls before capture, as PyTorch's CUDA-graph notes require: lazy
# initialisation (cuBLAS handles and workspaces, autotuning) must not happen during capture.
WARMUP_CALLS = 3


@attrs.frozen
class GraphCapture:
    replay: Optional[Callable[[], Any]]     # None when capture failed
    reason: Optional[str]                   # why capture failed, None when it worked
    method: str = ("torch.cuda.CUDAGraph of one call, captured after "
                   f"{WARMUP_CALLS} warm-up calls on a side stream; replayed with graph.replay()")


@contextlib.contextmanager
def captured(fn: Callable[[], Any], device: Any) -> Iterator[GraphCapture]:
    """Capture fn() as a graph on `device` for the block; free the graph and its pool after."""
    import torch
    graph = None
    try:
        try:
            stream = torch.cuda.Stream(device)
            stream.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(stream):
                for _ in range(WARMUP_CALLS):
                    fn()
            torch.cuda.current_stream(device).wait_stream(stream)
            torch.cuda.synchronize(device)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn()
            graph.replay()                     # a replay that fails belongs to capture, not timing
            torch.cuda.synchronize(device)
        except KeyboardInterrupt:
            raise
        except Exception as exc:   # not capturable: say why and carry on with eager timings
            graph = None
            _recover(torch, device)
            yield GraphCapture(None, f"CUDA graph capture failed: {one_line(exc)}")
            return
        yield GraphCapture(graph.replay, None)
    finally:
        del graph
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


def _recover(torch, device) -> None:
    # A failed capture can leave the error sticky on the stream; synchronising clears what can
    # be cleared, and a device that stays broken shows up in the next step's own error.
    with contextlib.suppress(Exception):
        torch.cuda.synchronize(device)
