"""Per-iteration timing on every rank at once, in lockstep, and the slowest rank per iteration.

Why lockstep: a collective returns only when every rank has called it, so every rank must run
the same number of iterations; rank 0 decides each batch's size and when to stop (the single-
device stopping rule, tensorforge_measure.measure.timing.should_stop, applied to the slowest-rank
samples) and tells the others over a gloo control group.

Each timed iteration is: [cache flush] -> on a GPU a device-side wait of 200 us (local.HOLD_S:
the host queues the start line and the timed launches meanwhile, so a sample is device time, not
host launch cost) -> one-element all-reduce (the start line: ranks leave it together, so one
rank's late start is not charged to the collective it then waits in) -> start marker -> fn() ->
end marker. The wait comes before the start line, so a rank whose wait ends later (a lower
clock) is caught up by the start line instead of being charged to the timed collective. Markers are CUDA events on a GPU, the host clock on a CPU. The
iteration's time is the slowest rank's: the workload is done when its last rank is.
"""

import time
from collections.abc import Callable
from typing import Any

from tensorforge_measure import TimingPolicy, should_stop, summarize

# Longest stretch of back-to-back timed work between synchronisations (as the single-device
# CUDA loop batches), and the budget share one batch may take.
BUDGET_SLACK = 0.05


def batch_size(samples: list[float], policy: TimingPolicy) -> int:
    if not samples:
        return 1
    per_iter = sorted(samples)[len(samples) // 2]
    if per_iter <= 0:
        return policy.sync_batch
    limit = (
        min(BUDGET_SLACK * policy.budget_s, policy.burst_s) if policy.max_duty < 1 else BUDGET_SLACK * policy.budget_s
    )
    return max(1, min(policy.sync_batch, policy.max_iters, int(limit / per_iter)))


class Lockstep:
    """The ranks' shared means: this rank, the control group, the start line, the device."""

    def __init__(self, dist, rank: int, world: int, control, local):
        self.dist, self.rank, self.world, self.control, self.local = dist, rank, world, control, local
        torch = local.torch
        self._line = torch.zeros(1, device=local.device)

    def start_line(self) -> None:
        self.dist.all_reduce(self._line)

    def decide(self, value):
        """Rank 0's value, on every rank."""
        box = [value if self.rank == 0 else None]
        self.dist.broadcast_object_list(box, src=0, group=self.control)
        return box[0]

    def everyone(self, value) -> list[Any]:
        """Every rank's value, in rank order, on every rank."""
        out: list[Any] = [None] * self.world
        self.dist.all_gather_object(out, value, group=self.control)
        return out

    def time(self, fn: Callable[[], Any], policy: TimingPolicy, flush: bool = True) -> dict[str, Any]:
        """Lockstep timing of fn(): this rank's samples, every rank's, the slowest per iteration."""
        local = self.local
        flush_step = local.flush_step() if flush and policy.flush_bytes else None
        t0 = time.perf_counter()
        for _ in range(policy.warmup_iters):
            self.start_line()
            fn()
        local.synchronize()
        mine: list[float] = []
        per_rank: list[list[float]] = [[] for _ in range(self.world)]
        slowest: list[float] = []
        stop: str | None = None
        while True:
            decision = self.decide(self._next(slowest, policy, t0) if self.rank == 0 else None)
            if isinstance(decision, str):
                stop = decision
                break
            batch_start = time.perf_counter()
            marks = []
            for _ in range(decision):
                if flush_step is not None:
                    flush_step()
                local.hold()
                self.start_line()
                start = local.marker()
                fn()
                marks.append((start, local.marker()))
            local.synchronize()
            if policy.max_duty < 1:
                busy = time.perf_counter() - batch_start
                time.sleep(busy * (1.0 / policy.max_duty - 1.0))
            batch = [local.elapsed_s(a, b) for a, b in marks]
            mine.extend(batch)
            for r, samples in enumerate(self.everyone(batch)):
                per_rank[r].extend(samples)
            slowest.extend(max(col) for col in zip(*(per_rank[r][-decision:] for r in range(self.world))))
        return {
            "samples_s": slowest,
            "per_rank_samples_s": per_rank,
            "stop_reason": stop,
            "warmup_iters": policy.warmup_iters,
            "flush_bytes": policy.flush_bytes if flush_step else 0,
            "hold_s": local.hold_s,
        }

    @staticmethod
    def _next(slowest: list[float], policy: TimingPolicy, t0: float):
        """Rank 0: a stop reason (str) or the next batch's size (int)."""
        stop = should_stop(slowest, policy, time.perf_counter() - t0)
        if stop is not None:
            return stop
        return min(batch_size(slowest, policy), policy.max_iters - len(slowest))


def stats_of(samples: list[float]) -> dict[str, Any]:
    import attrs

    return attrs.asdict(summarize(samples))
