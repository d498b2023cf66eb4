"""How many bytes the host-CPU backend touches between timed calls, why that many, and what
touching them costs.

Why not "several times every cache sysfs reports": a virtual machine may report the host
socket's whole L3 (one 2-vCPU VM reported 480 MiB) while each of its cores reaches only its own
slice. Flushing 4x that moved 1.94 GB before every iteration (~250 ms), so a 2 s budget held 6
samples of a 5 ms GEMM and the flush, not the workload, set the evidence.

The flush has to cover what the timed threads can hold: each core's private caches plus the
shared level as far as a core reaches into it. sysfs gives the first reliably; the second is
measured: one thread makes repeated read-modify-write passes over buffers of growing size, and
the rate falls from cache speed to memory speed once a buffer no longer fits what that core
holds. The smallest size past the fall is the measured reach. Where the sweep shows no clear
fall (a noisy machine, no cache levels), the sysfs total is used as before, and the plan says
which basis it used.

`choose_reach` and `plan_flush` are pure (tests feed them recorded rates); `measure_pass_rates`
and `flush_cost` need torch and run when a session opens.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from tf_cpu.machine import Machine

MIB = 1 << 20
# Twice what the threads can hold: caches do not replace strictly least-recently-used lines,
# so one pass of exactly their capacity leaves some operands behind.
FLUSH_MULTIPLE = 2
MIN_FLUSH_BYTES = 16 * MIB
# The sweep: powers of two from SWEEP_MIN to four times the nominal reach of one core, so the
# last sizes are well past the caches; clamped so a small machine's RAM is never at risk and a
# huge reported L3 cannot make the sweep itself slow.
SWEEP_MIN = 1 * MIB
SWEEP_FLOOR = 64 * MIB
SWEEP_CAP = 1 << 30
SWEEP_REPEATS = 3
BYTES_PER_TIMING = 16 * MIB  # several passes over small buffers, so each timing is not a blip
# A cache plateau counts only when it is clearly faster than memory.
MIN_CACHE_SPEEDUP = 1.5


@attrs.frozen
class FlushPlan:
    """What the backend flushes with, and the evidence for the size."""

    bytes: int
    basis: str  # one sentence: which figures set the size
    nominal_cache_bytes: int  # every data/unified cache instance sysfs reports
    private_cache_bytes: int  # of those, the per-core (private) instances
    nominal_reach_bytes: int  # what sysfs says one core reaches (one instance per level)
    measured_reach_bytes: int | None  # None: the sweep showed no clear cache-to-memory fall
    pass_rates: tuple[tuple[int, float], ...] = ()  # (buffer bytes, bytes per second) of the sweep
    seconds_p50: float | None = None  # the flush's own cost per call, measured


def nominal_cache_bytes(machine: Machine) -> int:
    """All data and unified cache serving the usable CPUs, every instance counted once."""
    return sum(c.size_bytes for c in machine.caches)


def private_cache_bytes(machine: Machine) -> int:
    return sum(c.size_bytes for c in machine.caches if c.per_core)


def nominal_reach_bytes(machine: Machine) -> int:
    """What one core reaches by sysfs: one instance of every level (the largest, to be safe)."""
    return sum(capacity for per_core in (True, False) for _, capacity, _ in machine.levels(per_core))


def sweep_sizes(machine: Machine) -> tuple[int, ...]:
    top = min(max(4 * nominal_reach_bytes(machine), SWEEP_FLOOR), SWEEP_CAP)
    if machine.memory_bytes:
        top = min(top, max(SWEEP_MIN, machine.memory_bytes // 8))
    sizes, size = [], SWEEP_MIN
    while size <= top:
        sizes.append(size)
        size *= 2
    return tuple(sizes)


def choose_reach(rates: Sequence[tuple[int, float]]) -> tuple[int | None, str]:
    """The measured reach of one core from (size, rate) pairs in growing size: the smallest size
    past the fastest one whose rate fell below the geometric mean of the cache rate (the best)
    and the memory rate (the largest buffer's). None with the reason when there is no clear fall."""
    rates = sorted((int(s), float(r)) for s, r in rates)
    if len(rates) < 3 or any(not (r > 0 and math.isfinite(r)) for _, r in rates):
        return None, "too few usable sweep points"
    best_at = max(range(len(rates)), key=lambda i: rates[i][1])
    cache_rate, memory_rate = rates[best_at][1], rates[-1][1]
    if cache_rate < MIN_CACHE_SPEEDUP * memory_rate:
        return None, (
            f"no clear cache plateau (best {cache_rate / 1e9:.3g} GB/s vs "
            f"{memory_rate / 1e9:.3g} GB/s at {rates[-1][0] // MIB} MiB)"
        )
    threshold = math.sqrt(cache_rate * memory_rate)
    # The last size is at the memory rate, below the midpoint: the search always ends.
    size, rate = next((s, r) for s, r in rates[best_at + 1 :] if r < threshold)
    return size, (
        f"pass rate falls from {cache_rate / 1e9:.3g} GB/s to {rate / 1e9:.3g} GB/s "
        f"at {size // MIB} MiB (memory {memory_rate / 1e9:.3g} GB/s)"
    )


def plan_flush(machine: Machine, rates: Sequence[tuple[int, float]] = ()) -> FlushPlan:
    """The flush size: FLUSH_MULTIPLE x what the timed threads can hold, which is every core's
    private caches plus the shared levels up to the measured reach (never more than sysfs
    reports in total); the sysfs total alone when the sweep is inconclusive."""
    nominal, private = nominal_cache_bytes(machine), private_cache_bytes(machine)
    reach, why = choose_reach(rates)
    if reach is None:
        cover = nominal
        basis = f"{FLUSH_MULTIPLE} x the {_mib(nominal)} of cache sysfs reports ({why})"
    else:
        cover = min(nominal, private + reach) if nominal else reach
        basis = (
            f"{FLUSH_MULTIPLE} x {_mib(cover)}: every core's private caches ({_mib(private)}) "
            f"plus one core's measured reach ({_mib(reach)}: {why}), at most the "
            f"{_mib(nominal)} sysfs reports"
        )
    size = max(FLUSH_MULTIPLE * cover, MIN_FLUSH_BYTES)
    if size == MIN_FLUSH_BYTES and FLUSH_MULTIPLE * cover < MIN_FLUSH_BYTES:
        basis += f"; raised to the {_mib(MIN_FLUSH_BYTES)} minimum"
    return FlushPlan(
        bytes=size,
        basis=basis,
        nominal_cache_bytes=nominal,
        private_cache_bytes=private,
        nominal_reach_bytes=nominal_reach_bytes(machine),
        measured_reach_bytes=reach,
        pass_rates=tuple((int(s), float(r)) for s, r in rates),
    )


def _mib(nbytes: int) -> str:
    return f"{nbytes / MIB:.3g} MiB"


def measure_pass_rates(
    torch, sizes: Sequence[int], repeats: int = SWEEP_REPEATS, clock: Callable[[], float] = time.perf_counter
) -> tuple[tuple[int, float], ...]:
    """(size, bytes per second) of read-modify-write passes over a buffer of each size, on one
    thread (one core's reach), best of `repeats` (the least disturbed by other processes). The
    caller's thread count is restored."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    out = []
    try:
        for size in sizes:
            buffer = torch.zeros(size, dtype=torch.uint8)
            buffer.add_(1)  # resident and in cache as far as it fits
            passes = max(1, BYTES_PER_TIMING // size)
            best = math.inf
            for _ in range(repeats):
                start = clock()
                for _ in range(passes):
                    buffer.add_(1)
                best = min(best, (clock() - start) / passes)
            del buffer
            if best > 0:
                out.append((int(size), size / best))
    finally:
        torch.set_num_threads(threads)
    return tuple(out)


def flush_cost(flush: Callable[[], Any], calls: int = 5, clock: Callable[[], float] = time.perf_counter) -> float:
    """Median seconds of one flush call (after one untimed call)."""
    flush()
    times = []
    for _ in range(calls):
        start = clock()
        flush()
        times.append(clock() - start)
    return statistics.median(times)
