"""The sustained regime: continuous execution after the device has reached its steady clock,
timed the way triton.testing.do_bench times (L2 flush, event pair per iteration, one
synchronisation at the end of the window, median).

Why a regime of its own: under continuous load an H200 reaches its 700 W cap and clocks down
(NVML: ~1500 MHz against 1980 MHz boost during large GEMMs), so a large bf16 GEMM runs 9-17%
slower than in the short bursts the burst regime times. A user serving a model sees the
sustained figure; both are real, and each is labelled.

How "steady" is detected, from the workload's own timings (no clock counter needed): the
device runs the workload back to back in windows of about `window_s`; it is steady once at
least `min_s` of continuous load has passed and the median iteration time of the last
`windows` windows agree within `tolerance` (max / min - 1). The next window is always enqueued
before the previous one is read, so the device never idles while the host checks. After
`max_s` without agreement the state is recorded as not steady and timing goes ahead.

A host-bound load (its burst eager p50 at least HOST_BOUND times its burst graph p50: the host's
Python and launches set the eager call's time, and the device idles between them) is steady once
`min_s` of it has run. Why: its window medians follow the host's launch rate, not the device's
clock, and on the H200 they never agreed within 1% (the 2.6 us GEMM's eager calls are bimodal,
5.4 and 6.1 us, in both harnesses), so the rule waited its whole `max_s` (3 s) and recorded "not
steady" while NVML showed the clock at 1980 MHz with no clock-event reason in every sustained
window of such a load (the GEMM and the decode step, 160-290 W against a 700 W cap).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


from tensorforge_measure import summarize
from tensorforge_measure import (  # noqa: F401  (re-exported for this module's readers)
    HOST_BOUND,
    SteadyPolicy,
    SteadyState,
    is_steady,
)
from tensorforge_measure import steady_burst_p50 as burst_p50  # noqa: F401  (re-exported)
from tensorforge_measure import host_bound as host_bound  # noqa: F401,F811
from tensorforge_measure import TimedSamples


def _read(pairs) -> list[float]:
    pairs[-1][1].synchronize()
    return [s.elapsed_time(e) * 1e-3 for s, e in pairs]


def per_call_wall_s(pairs) -> float:
    """Device wall time per iteration of a window, flush included (first start to last end)."""
    return pairs[0][0].elapsed_time(pairs[-1][1]) * 1e-3 / len(pairs)


class ContinuousLoad:
    """Work queued back to back on the current stream: each call is flush -> start event -> fn ->
    end event, and windows are queued before earlier ones are read, so the device never waits
    for the host between them."""

    def __init__(self, flush_step: Callable[[], Any] | None, window_s: float, max_calls: int = 100_000):
        import torch

        self.torch, self.flush_step = torch, flush_step
        self.window_s, self.max_calls = window_s, max_calls

    def calls_for(self, per_call_s: float, window_s: float | None = None) -> int:
        """Calls that fill a window, given the device time of one call (flush included)."""
        window = self.window_s if window_s is None else window_s
        return max(1, min(self.max_calls, int(window / max(per_call_s, 1e-7))))

    def queue(self, fn: Callable[[], Any], calls: int) -> list[tuple]:
        torch = self.torch
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
        for start, end in pairs:
            if self.flush_step is not None:
                self.flush_step()
            start.record()
            fn()
            end.record()
        return pairs

    @staticmethod
    def read(pairs) -> list[float]:
        """Per-call event times of a queued window (waits for it)."""
        return _read(pairs)


def reach_steady(
    load: ContinuousLoad,
    fn: Callable[[], Any],
    first_guess_s: float,
    policy: SteadyPolicy,
    clock: Callable[[], float] = time.perf_counter,
    host_bound: bool = False,
) -> tuple[SteadyState, list[tuple], float]:
    """Run fn continuously until steady (or max_s). Returns the state, the window still in
    flight (queue the timed window behind it before reading anything) and the measured device
    time of one call, flush included. host_bound: the load's eager time is the host's (module
    docstring)."""
    t0 = clock()
    medians: list[float] = []
    calls = load.calls_for(first_guess_s)
    pending = load.queue(fn, calls)
    while True:
        queued = load.queue(fn, calls)
        samples = load.read(pending)
        per_call = per_call_wall_s(pending)
        calls = load.calls_for(per_call)
        pending = queued
        medians.append(statistics.median(samples))
        elapsed = clock() - t0
        steady = is_steady(medians, elapsed, policy, host_bound)
        if steady or elapsed >= policy.max_s:
            return SteadyState(steady, elapsed, tuple(medians), policy.rule(host_bound)), pending, per_call


def as_timed(samples: Sequence[float], flush_bytes: int) -> TimedSamples:
    """A sustained window's samples in the shape every measurement has (fixed count: 'max_iters')."""
    return TimedSamples(
        samples_s=tuple(samples),
        stats=summarize(samples),
        stop_reason="max_iters",
        warmup_iters=0,
        flush_bytes=flush_bytes,
    )
