"""One rank's own device, seen through the single-device backend that already measures it
(torch-cuda for a GPU, torch-cpu for a slice of the host CPU): its session (identity, probes,
flush size), and the few things the lockstep loop needs from it that differ between a GPU and a
CPU: a clock, a cache flush, peak memory, the framework flags.

Why reuse those backends instead of repeating them: a rank's device is exactly what they
measure, so a system's per-device ceilings come from the same probes as a single device's, and
its fingerprint from the same fields.
"""

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

LOCAL_BACKEND = {"cuda": "torch-cuda", "cpu": "torch-cpu"}
# The device-side wait before the start line (GPU only). Why: without it the device reaches the
# timed call as soon as the start line ends, often before this rank's host has launched it (an
# eager NCCL launch costs the host tens of us), so a small collective's sample was whichever of
# host launch or device time came last: 9 to over 100 us for 4 KiB on two H200s, a median five
# times the fastest sample. With the wait, the host has queued the start line and the timed call
# before the device gets there, the start line lets both ranks go together, and the sample is
# the device's time for the call: the regime a pipelined program, or a CUDA graph, runs
# collectives in. The host's own cost per eager call is measured apart (sweep.py: host_call_s).
HOLD_S = 200e-6


def cpu_slice(cpus: list[int], rank: int, world: int) -> list[int]:
    """This rank's share of the usable CPUs: equal contiguous slices (at least one CPU each;
    with fewer CPUs than ranks, ranks share)."""
    per = max(1, len(cpus) // world)
    start = (rank * per) % len(cpus)
    return cpus[start : start + per]


class LocalDevice:
    """A rank's device: `kind` 'cuda' or 'cpu', the local backend's session, timing helpers."""

    def __init__(self, kind: str, local_rank: int, world: int, ops):
        import torch

        self.torch, self.kind = torch, kind
        if kind == "cpu":
            mine = cpu_slice(sorted(os.sched_getaffinity(0)), local_rank, world)
            os.sched_setaffinity(0, mine)  # the torch-cpu session reads the CPUs this process may use
        backend = ops.backend(LOCAL_BACKEND[kind])
        self.session = backend.open(local_rank if kind == "cuda" else 0)
        self.backend_name = backend.name
        self.device = self.session.device
        self._flush: Callable[[], Any] | None = None
        self._hold_cycles: int | None = None
        self.hold_s: float | None = None  # the wait's measured length, once calibrated

    # -- identity and flags -----------------------------------------------------------------
    def framework_flags(self) -> dict[str, Any]:
        if self.kind == "cuda":
            from tensorforge_measure import framework_flags

            return dict(framework_flags())
        from tf_cpu.backend import framework_flags

        return dict(framework_flags(self.torch))

    @property
    def flush_bytes(self) -> int:
        return int(self.session.flush_bytes)

    def flush_step(self) -> Callable[[], Any] | None:
        """The same cache flush the single-device loop does before each timed call."""
        if self._flush is None:
            if self.kind == "cuda":
                buf = self.torch.empty(self.flush_bytes // 4, dtype=self.torch.int32, device=self.device)
                self._flush = buf.zero_
            else:
                self._flush = self.session.flush()
        return self._flush

    def hold(self) -> None:
        """On a GPU, a device-side wait of about HOLD_S (torch.cuda._sleep, its cycle count
        calibrated once with CUDA events); on a CPU nothing (its markers are the host clock)."""
        if self.kind != "cuda":
            return
        torch = self.torch
        if self._hold_cycles is None:
            try:
                torch.cuda._sleep(1000)  # load the kernel before timing it
                trial = 1_000_000
                start = self.marker()
                torch.cuda._sleep(trial)
                end = self.marker()
                torch.cuda.synchronize(self.device)
            except (AttributeError, RuntimeError):  # a build without the spin kernel: no wait
                self._hold_cycles = 0
                return
            cycles_per_s = trial / max(self.elapsed_s(start, end), 1e-9)
            self._hold_cycles = max(1, int(HOLD_S * cycles_per_s))
            self.hold_s = self._hold_cycles / cycles_per_s
        if self._hold_cycles:
            torch.cuda._sleep(self._hold_cycles)

    def synchronize(self) -> None:
        if self.kind == "cuda":
            self.torch.cuda.synchronize(self.device)

    # -- clocks ---------------------------------------------------------------------------------
    def marker(self):
        """A point in the device's time: a CUDA event recorded on the current stream, or the
        host clock (CPU operators finish before they return)."""
        if self.kind == "cuda":
            event = self.torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter_ns()

    def elapsed_s(self, start, end) -> float:
        if self.kind == "cuda":
            return start.elapsed_time(end) * 1e-3
        return (end - start) * 1e-9

    # -- peak memory ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def peak_memory(self):
        """Yields a one-element list that holds (peak bytes or None, method) after the block."""
        out: list[tuple[int | None, str]] = []
        if self.kind == "cuda":
            torch = self.torch
            torch.cuda.synchronize(self.device)
            torch.cuda.empty_cache()
            base = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            yield out
            torch.cuda.synchronize(self.device)
            out.append(
                (
                    int(torch.cuda.max_memory_allocated(self.device) - base),
                    "torch.cuda.max_memory_allocated after build + one run, minus memory_allocated "
                    "before the build, on this rank's GPU",
                )
            )
        else:
            from tf_cpu import peak_rss

            base, why_not = peak_rss.start()
            yield out
            out.append(peak_rss.peak_since(base) if why_not is None else (None, why_not))

    def release(self) -> None:
        import gc

        gc.collect()
        if self.kind == "cuda":
            self.torch.cuda.empty_cache()

    def close(self) -> None:
        self._flush = None
        self.session.close()
