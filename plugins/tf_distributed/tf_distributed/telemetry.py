"""Telemetry of a distributed run (DIAGNOSTIC): every rank samples its own device (NVML per GPU,
host counters per CPU slice) in one window over the same number of calls, after the timing.
The runner's `run_once` is not used: the workload runs in the worker processes."""

from tf_cuda.telemetry import CAVEAT

from tensorforge_measure import TelemetrySource


class DistributedTelemetry(TelemetrySource):
    name = "per-rank"
    backend = "torch-distributed"
    caveat = CAVEAT.replace(
        "NVML telemetry", "Per-rank telemetry (NVML on each GPU; host counters on a CPU's share of cores)"
    )

    def collect(self, session, run_once, duration_s):
        window = session.telemetry(duration_s)
        ranks = window["per_rank"]
        available = any(r.get("available") for r in ranks)
        reasons = sorted({r.get("unavailable_reason") or r.get("reason") or "" for r in ranks} - {""})
        return {
            "available": available,
            "unavailable_reason": None if available else "; ".join(reasons),
            "calls": window["calls"],
            "per_rank": ranks,
            "headline": _headline(ranks) if available else None,
        }


def _headline(ranks) -> str:
    parts = []
    for r in ranks:
        s = r.get("summary") or {}
        if r.get("headline"):
            parts.append(f"rank {r['rank']}: {r['headline']}")
        elif s:
            reasons = ", ".join(name for name, f in s.get("reason_fractions", []) if name != "GpuIdle") or "none"
            parts.append(
                f"rank {r['rank']}: SM {s.get('sm_clock_mhz_median')} MHz, "
                f"{s.get('power_w_median')} W, reasons {reasons}"
            )
    return "; ".join(parts)
