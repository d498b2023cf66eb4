"""Per-iteration CUDA-event timing, plus the CUDA context a reader needs to interpret the
numbers (device, driver and library versions). The stopping rule and the result type are
device-neutral and live in timing.py; the precision flags in precision.py.

Why events per iteration rather than one pair around a loop: a distribution (p10/p50/
rel_iqr) shows noise and outliers that a single mean hides. Why batched synchronisation:
reading an event forces a host-device sync; doing it every iteration would leave the GPU
idle between iterations, doing it never would leave no way to stop early.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from tensorforge_measure import TimedSamples, TimingPolicy, should_stop, summarize
from tensorforge_measure import read_or_none as _read

# Synchronise sooner than policy.sync_batch for slow iterations, so the wall budget is
# overshot by no more than ~BUDGET_SLACK of itself.
BUDGET_SLACK = 0.05


def flush_step(torch, flush_bytes: int, device, mode: str = "write") -> Callable[[], Any] | None:
    """The L2 flush: one pass over a buffer of flush_bytes (None when 0). 'write' zeroes it in
    int32 words, as do_bench does: on the H200 a byte-wise memset left a batched fp16 GEMM 3%
    faster than an int32 one of the same size (111.8 vs 114.8 us; do_bench 115.5;
    the result file is kept at the lab-archive-2026-12 tag). 'read' sums it in int64 words: it evicts without
    leaving dirty lines behind."""
    if not flush_bytes:
        return None
    if mode == "read":
        words = torch.empty(flush_bytes // 8, dtype=torch.int64, device=device)
        total = torch.empty((), dtype=torch.int64, device=device)
        return lambda: torch.sum(words, dim=0, out=total)
    return torch.empty(flush_bytes // 4, dtype=torch.int32, device=device).zero_


def _batch_size(samples: Sequence[float], policy: TimingPolicy) -> int:
    # First iteration alone: we know nothing about its cost yet and it may take seconds.
    if not samples:
        return 1
    per_iter = float(np.median(samples))
    if per_iter <= 0:
        return policy.sync_batch
    limit = (
        min(BUDGET_SLACK * policy.budget_s, policy.burst_s) if policy.max_duty < 1 else BUDGET_SLACK * policy.budget_s
    )
    return max(1, min(policy.sync_batch, int(limit / per_iter)))


def cuda_device(device: Any = None) -> torch.device:
    """A concrete torch.device('cuda', index): None means the current device."""
    if device is None:
        return torch.device("cuda", torch.cuda.current_device())
    dev = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"expected a CUDA device, got {dev}")
    return dev if dev.index is not None else torch.device("cuda", torch.cuda.current_device())


def time_cuda(fn: Callable[[], Any], policy: TimingPolicy = TimingPolicy(), device: Any = None) -> TimedSamples:
    """Time fn() per iteration with CUDA events on the current stream of `device`.

    fn must enqueue its work on the current stream (the PyTorch default). Each timed
    iteration is: [flush L2] -> start event -> fn() -> end event. The flush writes the
    whole preallocated buffer (as Triton's do_bench does) so fn starts with a cold L2;
    note the dirty lines it leaves can be written back during fn, a small bias toward
    slower times for very short kernels. The flush buffer counts toward
    torch.cuda.max_memory_allocated while this runs, so measure peak memory separately.
    """
    if not torch.cuda.is_available():
        raise RuntimeError("time_cuda needs a CUDA device; torch.cuda.is_available() is False")
    dev = cuda_device(device)
    t0 = time.perf_counter()
    starts: list = []
    ends: list = []
    samples: list[float] = []
    stop: str | None = None
    with torch.cuda.device(dev):
        flush = flush_step(torch, policy.flush_bytes, dev, policy.flush_mode)
        try:
            # Warm-up absorbs one-off costs (cuBLAS handle/workspace, autotuning, lazy
            # module loading, clock ramp-up); it is neither flushed nor timed.
            for _ in range(policy.warmup_iters):
                fn()
            torch.cuda.synchronize(dev)
            while stop is None:
                batch = min(_batch_size(samples, policy), policy.max_iters - len(starts))
                batch_start = time.perf_counter()
                # Create the events before enqueuing so event creation never sits between
                # a start and its end.
                pairs = [
                    (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(batch)
                ]
                for start, end in pairs:
                    if flush is not None:
                        flush()
                    start.record()
                    fn()
                    end.record()
                    starts.append(start)
                    ends.append(end)
                # Events complete in stream order: once the last end is done, all are.
                ends[-1].synchronize()
                if policy.max_duty < 1:
                    busy = time.perf_counter() - batch_start
                    time.sleep(busy * (1.0 / policy.max_duty - 1.0))
                for i in range(len(samples), len(starts)):
                    samples.append(starts[i].elapsed_time(ends[i]) * 1e-3)  # ms -> s
                stop = should_stop(samples, policy, time.perf_counter() - t0)
        finally:
            # Free the flush buffer (back to PyTorch's caching allocator) before returning.
            del flush
    return TimedSamples(
        samples_s=tuple(samples),
        stats=summarize(samples),
        stop_reason=stop,
        warmup_iters=policy.warmup_iters,
        flush_bytes=policy.flush_bytes,
    )


def _driver_version() -> str | None:
    # pynvml is optional (the 'measure' extra); imported lazily so its absence costs nothing.
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:
        return None


def versions(device: Any = None) -> dict:
    """Software and device versions; device fields are None without CUDA. Never raises."""
    info = {
        "torch": str(torch.__version__),
        "cuda_runtime": torch.version.cuda,
        "cudnn": _read(lambda: torch.backends.cudnn.version()),
        "driver": _driver_version(),
        "cuda_available": bool(_read(torch.cuda.is_available)),
        "device_count": _read(lambda: int(torch.cuda.device_count())) or 0,
        "device_index": None,
        "device_name": None,
        "compute_capability": None,
        "multiprocessor_count": None,
        "total_memory_bytes": None,
        "l2_cache_bytes": None,
        # which physical board: DIAGNOSTIC, never in the fingerprint (boards of one model share
        # calibrations). Why: H200 sessions of the same fingerprint drew 620 vs 670-676 W in the
        # same copy probe window (2026-12-01, the two last sessions against the four before), and nothing on
        # record said whether the lent board had changed
        "device_uuid": None,
    }
    if not info["cuda_available"]:
        return info
    try:
        dev = cuda_device(device)
        p = torch.cuda.get_device_properties(dev)
    except Exception:
        return info
    l2 = getattr(p, "L2_cache_size", None)  # attribute absent on older PyTorch
    uuid = getattr(p, "uuid", None)  # likewise
    info.update(
        device_index=dev.index,
        device_name=str(p.name),
        compute_capability=f"{p.major}.{p.minor}",
        multiprocessor_count=int(p.multi_processor_count),
        total_memory_bytes=int(p.total_memory),
        l2_cache_bytes=int(l2) if l2 is not None else None,
        device_uuid=str(uuid) if uuid else None,
    )
    return info
