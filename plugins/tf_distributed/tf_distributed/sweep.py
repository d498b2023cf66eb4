"""The collective calibration sweep, on every rank: each operation over every rank at message
sizes from bytes to GiB, built, checked and timed exactly as a measured collective workload is
(the same builder, result check and lockstep timing), so the curve it yields applies to them.

Per size every statistic of the slowest-rank samples is kept; the curve uses the fastest sample
(a lower bound must hold for every later run of the same operation, not for its median: on two
H200s the 4 KiB all-reduce's samples spread from 9 us to over 100 us, host launch included, and a
curve from the p10 lay 18% above the fastest sample of a later measurement).
"""

from typing import Any

from tensorforge.errors import one_line
from tensorforge.precision import DTYPE_BYTES


def sweep(worker, command) -> dict[str, Any]:
    from tensorforge_ops.measure.timing import TimingPolicy
    from tf_collective.plugin import CollectiveParams

    from .lockstep import stats_of

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
            try:
                fn, info = worker._build("collective", params, "fp32")
                with worker.mode("fp32"):
                    timed = worker.step.time(fn, policy)
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
                }
            )
        out[op] = {"points": points, "skipped": skipped}
    return out
