"""Per-operator time on every rank, in a window of its own after the latency timing.

The builders mark each Core operator with `operator_range(name)` (tensorforge_measure.measure.
op_ranges); here each range records a marker at its start and end (CUDA events on a GPU, the
host clock on a CPU), so an operator's time is the device time between its markers, summed over
its executions in one call. Events recorded between kernels cost nothing on the device, but the
time between an operator's markers includes any wait for the host to launch its kernels (eager
mode), and a collective's time includes waiting for the slowest rank to arrive.

Reported per operator: the median over iterations of the slowest rank's time (what the workload
waits for; these add up to the iteration) and of the fastest rank's (the strictest test of a
lower bound: every rank must take at least the bound).
"""

import contextlib
import statistics
from collections import defaultdict
from typing import Any

from tensorforge_measure import recording

METHOD = (
    "operator window after the timing: per iteration flush -> start line -> fn() with a marker "
    "(CUDA event / host clock) at each operator range's start and end; per operator the sum "
    "over its executions in one call; median over iterations"
)


def operator_window(step, fn, iterations: int) -> dict[str, Any]:
    """Run `iterations` calls with operator markers on every rank; the per-operator summary."""
    local = step.local
    flush_step = local.flush_step()
    records: list[list[tuple]] = []
    totals = []

    def recorder(name: str):
        @contextlib.contextmanager
        def mark():
            start = local.marker()
            try:
                yield
            finally:
                records[-1].append((name, start, local.marker()))

        return mark()

    for _ in range(iterations):
        if flush_step is not None:
            flush_step()
        local.hold()
        step.start_line()
        records.append([])
        begin = local.marker()
        with recording(recorder):
            fn()
        totals.append((begin, local.marker()))
    local.synchronize()
    mine: list[dict[str, float]] = []
    counts: dict[str, int] = defaultdict(int)
    for i, iteration in enumerate(records):
        per_op: dict[str, float] = defaultdict(float)
        for name, start, end in iteration:
            per_op[name] += local.elapsed_s(start, end)
            if i == 0:
                counts[name] += 1
        mine.append(dict(per_op))
    mine_totals = [local.elapsed_s(a, b) for a, b in totals]
    everyone = step.everyone({"operators": mine, "totals": mine_totals})
    return summarize(everyone, dict(counts), iterations)


def summarize(everyone: list[dict[str, Any]], counts: dict[str, int], iterations: int) -> dict[str, Any]:
    names = list(counts)
    rows = []
    for name in names:
        per_iter = [[r["operators"][i].get(name, 0.0) for r in everyone] for i in range(iterations)]
        rows.append(
            {
                "operator": name,
                "activities": counts[name],
                "time_p50_s": statistics.median(max(col) for col in per_iter),
                "fastest_rank_p50_s": statistics.median(min(col) for col in per_iter),
                "per_rank_p50_s": [statistics.median(col[r] for col in per_iter) for r in range(len(everyone))],
            }
        )
    iteration = statistics.median(max(r["totals"][i] for r in everyone) for i in range(iterations))
    covered = sum(r["time_p50_s"] for r in rows)
    return {
        "source": "eager",
        "iterations": iterations,
        "method": METHOD,
        "notes": [
            "markers at operator ranges (no profiler); an operator's time includes host "
            "launch gaps inside its range and, for a collective, waiting for the other ranks"
        ],
        "eager": {
            "operators": rows,
            "iteration_p50_s": iteration,
            "coverage": covered / iteration if iteration > 0 else None,
        },
        "graph": None,
    }
