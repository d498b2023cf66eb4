"""The collective calibration sweep, on every rank: each operation over every rank at message
sizes from bytes to GiB, built, checked and timed exactly as a measured collective workload is
(the same builder, result check and lockstep timing), so the curve it yields applies to them.

Per size every statistic of the slowest-rank samples is kept; the curve uses the fastest sample
(a lower bound must hold for every later run of the same operation, not for its median: on two
H200s the 4 KiB all-reduce's samples spread from 9 us to over 100 us, host launch included, and a
curve from the p10 lay 18% above the fastest sample of a later measurement; the lockstep loop now
waits on the device after its start line, so a sample is device time, lockstep.py).

At the smallest size the sweep also measures the host's cost of one eager call (host_call_s):
calls issued back to back with no synchronisation, host clock over the calls, the fastest of a
few repetitions, the slowest rank's. That is what an eager small collective costs a program whose
host cannot run ahead of its device (launch + the host work of torch.distributed and NCCL); it is
context for estimates and readers, never part of a bound (a queued or graph-captured collective
does not pay it).
"""

import time
from typing import Any

from tensorforge import DTYPE_BYTES, one_line


def sweep(worker, command) -> dict[str, Any]:
    from tf_collective.plugin import CollectiveParams

    from tensorforge_measure import TimingPolicy
    from tf_distributed.lockstep import stats_of

    policy = TimingPolicy(**command["policy"], flush_bytes=worker.local.flush_bytes)
    out: dict[str, Any] = {}
    for op in command["ops"]:
        points: list[dict[str, Any]] = []
        skipped: list[str] = []
        for size in command["sizes"]:
            size = (
                int(size)
                // (DTYPE_BYTES[command["dtype"]] * worker.world)
                * (DTYPE_BYTES[command["dtype"]] * worker.world)
            )
            if size <= 0:
                continue
            params = CollectiveParams(op=op, bytes=size, dtype=command["dtype"], ranks=0)
            host = None
            try:
                fn, info = worker._build("collective", params, "fp32")
                with worker.mode("fp32"):
                    timed = worker.step.time(fn, policy)
                    if not points:
                        host = host_call_s(worker, fn)
            except Exception as exc:  # StepFailed: every rank skips this size alike
                skipped.append(f"{size} B: {one_line(exc)}")
                continue
            finally:
                fn = None
                worker.local.release()
            stats = stats_of(timed["samples_s"])
            points.append(
                {
                    "bytes": size,
                    "p10_s": stats["p10"],
                    "p50_s": stats["p50"],
                    "min_s": stats["min"],
                    "n": stats["n"],
                    "stop_reason": timed["stop_reason"],
                    "check": info["check"],
                    **({"host_call_s": host} if host is not None else {}),
                }
            )
        out[op] = {"points": points, "skipped": skipped}
    return out


def host_call_s(worker, fn, calls: int = 50, repeats: int = 3) -> float:
    """Host seconds per eager call of fn, issued back to back (see the module docstring); every
    rank runs the same calls, so the collectives pair up; the slowest rank's fastest repetition."""
    best = float("inf")
    for _ in range(repeats):
        worker.step.start_line()
        worker.local.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
        worker.local.synchronize()
    return max(worker.step.everyone(best))
