"""Per-iteration wall-clock timing on the host CPU, with the same stopping rule and statistics
as the CUDA loop (tensorforge_measure.measure.timing.should_stop, tensorforge_measure.measure.stats.summarize).

Why wall clock around each call: PyTorch's CPU operators return when their work is done (the
intra-op threads join before the call returns), so `perf_counter_ns` before and after one call
times exactly that call, Python dispatch included (the call-floor probe reports that part).
Why flush: a workload whose operands stay in the last-level cache from the previous iteration
would be timed warm, which is not how it runs inside a model; touching a buffer several times
the LLC, reading and writing every line, evicts them. No burst regime here: that exists for a
GPU's power cap, which the CPU path has no telemetry to detect; the DIAGNOSTIC window records
clock and load instead.
"""

import time
from collections.abc import Callable
from typing import Any

from tensorforge_measure import TimedSamples, TimingPolicy, should_stop, summarize


def make_flush(torch, nbytes: int, mode: str = "write") -> Callable[[], Any] | None:
    """A callable that evicts the caches by touching `nbytes`: 'write' adds 1 to every byte
    (each line read and written back dirty, like the GPU's write flush); 'read' sums them
    (clean lines). None for nbytes == 0. Runs on PyTorch's intra-op threads, so every core's
    private caches are flushed too, not only the calling thread's."""
    if nbytes <= 0:
        return None
    buffer = torch.ones(nbytes, dtype=torch.uint8)  # touched now: pages are resident
    if mode == "read":
        words = buffer[: nbytes // 8 * 8].view(torch.int64)
        total = torch.empty((), dtype=torch.int64)
        return lambda: torch.sum(words, dim=0, out=total)
    return lambda: buffer.add_(1)


def time_cpu(fn: Callable[[], Any], policy: TimingPolicy, flush: Callable[[], Any] | None = None) -> TimedSamples:
    """Time fn() per iteration: warm-up (untimed, unflushed), then `flush -> t0 -> fn() -> t1`
    until should_stop says stable, max_iters or budget (wall clock, warm-up included)."""
    t0 = time.perf_counter()
    # Warm-up absorbs one-off costs: oneDNN primitive creation, the OpenMP pool waking up,
    # first-touch page faults of outputs.
    for _ in range(policy.warmup_iters):
        fn()
    samples = []
    stop = None
    clock = time.perf_counter_ns
    while stop is None:
        if flush is not None:
            flush()
        start = clock()
        fn()
        end = clock()
        samples.append((end - start) * 1e-9)
        stop = should_stop(samples, policy, time.perf_counter() - t0)
    return TimedSamples(
        samples_s=tuple(samples),
        stats=summarize(samples),
        stop_reason=stop,
        warmup_iters=policy.warmup_iters,
        flush_bytes=policy.flush_bytes,
    )
