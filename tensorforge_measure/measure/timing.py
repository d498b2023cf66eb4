"""How long to time, and when to stop: the device-neutral half of every timing loop.

Why its own module: a CUDA-event loop and a host wall-clock loop differ in how they read a
clock, not in when they stop or what they report. Both take a `TimingPolicy`, stop on
`should_stop` and return `TimedSamples`, so a CPU capture and a GPU capture mean the same thing
by "stable" or "budget". Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from tensorforge_measure.measure.stats import SampleStats, summarize

STOP_REASONS = ("stable", "budget", "max_iters")

# Sync at most every SYNC_BATCH iterations by default (a loop that reads its clock only at a
# synchronisation, such as CUDA events, batches iterations between them).
SYNC_BATCH = 10


def _non_negative(_inst, attr, value):
    if value < 0:
        raise ValueError(f"{attr.name} must be >= 0, got {value!r}")


def _positive(_inst, attr, value):
    if not value > 0:
        raise ValueError(f"{attr.name} must be > 0, got {value!r}")


@attrs.frozen
class TimingPolicy:
    warmup_iters: int = attrs.field(default=5, validator=_non_negative)
    min_iters: int = attrs.field(default=10, validator=_positive)
    max_iters: int = attrs.field(default=500, validator=_positive)
    target_rel_iqr: float = attrs.field(default=0.02, validator=_non_negative)
    budget_s: float = attrs.field(default=3.0, validator=_positive)  # wall clock, warm-up included
    flush_bytes: int = attrs.field(default=0, validator=_non_negative)  # 0: no L2 flush
    # Fraction of wall time the device may be busy with timed work; below 1, the host rests
    # after each batch. Why: a sustained load can push a GPU into its power cap within tens
    # of milliseconds (an H200 went from 1.38 to 1.62 ms per bf16 8192^3 GEMM after ~30 ms),
    # so continuous repetition would measure the cap, not the kernel, and mix the two.
    max_duty: float = attrs.field(default=1.0, validator=_positive)
    # Longest stretch of back-to-back timed work before a synchronisation (and rest).
    burst_s: float = attrs.field(default=0.005, validator=_positive)
    # How the L2 is flushed: 'write' zeroes the buffer (as triton's do_bench does) and leaves
    # the cache full of dirty lines that the timed kernel must write back; 'read' sums it and
    # leaves clean lines, so only the kernel's own cold reads are timed.
    flush_mode: str = attrs.field(default="write", validator=attrs.validators.in_(("write", "read")))
    # Most iterations enqueued between synchronisations (each one leaves the GPU briefly idle).
    sync_batch: int = attrs.field(default=SYNC_BATCH, validator=_positive)

    @max_iters.validator
    def _max_covers_min(self, _attr, value):
        if value < self.min_iters:
            raise ValueError(f"max_iters ({value}) must be >= min_iters ({self.min_iters})")


@attrs.frozen
class TimedSamples:
    samples_s: tuple[float, ...] = attrs.field(converter=lambda xs: tuple(float(x) for x in xs))
    stats: SampleStats
    stop_reason: str = attrs.field(validator=attrs.validators.in_(STOP_REASONS))
    warmup_iters: int
    flush_bytes: int


def should_stop(samples: Sequence[float], policy: TimingPolicy, elapsed_s: float) -> str | None:
    """Why to stop now, or None to keep going.

    'stable' wins over the others (it is the outcome we wanted, even if a limit was also
    hit); then 'max_iters'; then 'budget', which applies even below min_iters because it
    is the hard wall-clock cap. With no samples there is nothing to report, so never stop.
    """
    n = len(samples)
    if n == 0:
        return None
    if n >= policy.min_iters and summarize(samples).rel_iqr <= policy.target_rel_iqr:
        return "stable"
    if n >= policy.max_iters:
        return "max_iters"
    if elapsed_s > policy.budget_s:
        return "budget"
    return None
