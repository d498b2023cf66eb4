"""Calibration probes of the torch-distributed backend (CALIBRATED), run by the parent through
the session:

  per-rank-ceilings  every rank runs its own device's probes (torch-cuda's or torch-cpu's) at the
                     same time, as the ranks run a tensor-parallel layer; the system's ceilings
                     are the fastest rank's rates and the shortest floor (sound for every rank)
  collective-sweep   each collective over every rank at message sizes from KiB to GiB
                     (sweep.py), fitted to the calibrated curve that the collective bound uses
                     (tensorforge.workloads.collectives.fit_ceiling)
"""

import time
from typing import Any

from tensorforge import COLLECTIVE_OPS, bus_factor, ceiling_key, fit_ceiling, to_data
from tensorforge_measure import CalibrationProbe, ProbeResult, Unavailable

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
# Bytes to GiB at 3 x 2^k bytes: on a GPU 3 KiB .. 3 GiB, an octave apart; a CPU's gloo sweep
# (CI on two busy cores) takes three sizes, 3 KiB to 3 MiB. None is a power of two, so the default
# suites' collectives (powers of two, each between two swept sizes) are bounded at sizes the
# sweep did not measure: the curve is scored on messages no probe used.
SIZES = {"cuda": [3 * KiB << i for i in range(21)], "cpu": [3 * KiB, 96 * KiB, 3 * MiB]}
SWEEP_OPS = tuple(op for op in COLLECTIVE_OPS if op != "send_recv")
POLICY = {
    "cuda": {
        "warmup_iters": 3,
        "min_iters": 10,
        "max_iters": 100,
        "target_rel_iqr": 0.02,
        "budget_s": 0.25,
        "max_duty": 0.5,
    },
    "cpu": {
        "warmup_iters": 2,
        "min_iters": 5,
        "max_iters": 40,
        "target_rel_iqr": 0.05,
        "budget_s": 0.1,
        "max_duty": 1.0,
    },
}
DTYPE = {"cuda": "bf16", "cpu": "fp32"}
# Between swept sizes: NCCL's time is concave in size (the fastest of its algorithm/protocol
# lines), gloo's on a CPU is not (a message that leaves the caches runs slower per byte).
INTERPOLATION = {"cuda": "chord", "cpu": "step"}


def eager_small_message_s(point: dict[str, Any]) -> float:
    """What one eager call of the smallest swept message costs a program whose host cannot run
    ahead: the longer of the host's cost per call (sweep.py's host_call_s, when measured) and the
    device's median time for it."""
    return max(point["p50_s"], point.get("host_call_s") or 0.0)


class PerRankCeilingsProbe(CalibrationProbe):
    name = "per-rank-ceilings"
    backend = "torch-distributed"

    def run(self, session) -> ProbeResult:
        from tf_distributed.session import combine_probe_results

        start = time.perf_counter()
        per_rank = session.call({"op": "probe_local"})
        combined = combine_probe_results(per_rank)
        if not combined["compute"]:
            failures = sorted({f"{k}: {v}" for r in per_rank for k, v in r["failures"].items()})
            raise Unavailable(
                "no rank's probes measured a compute ceiling" + (f" ({'; '.join(failures)})" if failures else "")
            )
        return ProbeResult(
            name=self.name,
            method=(
                "every rank runs its local backend's probes at the same time; compute and memory "
                "ceilings: the fastest rank's; launch floor and named floors: the shortest"
            ),
            compute=combined["compute"],
            dram_bytes_per_s=combined["dram_bytes_per_s"],
            launch_floor_s=combined["launch_floor_s"],
            floors=combined["floors"],
            details={"per_rank": per_rank},
            duration_s=time.perf_counter() - start,
        )


class CollectiveSweepProbe(CalibrationProbe):
    name = "collective-sweep"
    backend = "torch-distributed"

    def run(self, session) -> ProbeResult:
        start = time.perf_counter()
        kind, n = session.kind, session.world
        reply = session.call(
            {"op": "sweep", "ops": list(SWEEP_OPS), "sizes": SIZES[kind], "dtype": DTYPE[kind], "policy": POLICY[kind]}
        )[0]
        ceilings: dict[str, Any] = {}
        details: dict[str, Any] = {}
        for op, data in reply.items():
            points: list[dict[str, Any]] = data["points"]
            for p in points:
                p["bus_bytes_per_s_best"] = bus_factor(op, n) * p["bytes"] / p["min_s"] if p["min_s"] > 0 else None
            details[op] = {"points": points, "skipped": data["skipped"]}
            try:
                ceiling = fit_ceiling(
                    op,
                    n,
                    [(p["bytes"], p["min_s"]) for p in points],
                    source=f"collective-sweep on {session.info.name}",
                    eager_floor_s=eager_small_message_s(points[0]) if points else None,
                    interpolation=INTERPOLATION[kind],
                    typical=[(p["bytes"], p["p50_s"]) for p in points],
                )
            except ValueError as exc:
                details[op]["fit"] = f"no curve: {exc}"
                continue
            ceilings[ceiling_key(op, n)] = to_data(ceiling)
        if not ceilings:
            raise Unavailable(
                "the sweep measured no collective: " + "; ".join(s for d in details.values() for s in d["skipped"][:1])
            )
        return ProbeResult(
            name=self.name,
            method=(
                f"each collective over {n} ranks, {DTYPE[kind]}, sizes {SIZES[kind][0]} B to "
                f"{SIZES[kind][-1]} B; per size the fastest slowest-rank sample (lockstep timing, as "
                "measured workloads) less 2% and 1 us, lowered to the fastest larger size (the knots); curve: "
                f"inside the sweep max(floor, the {INTERPOLATION[kind]} between the two knots around S), beyond it "
                "max(floor, alpha + S x factor / beta), beta = max(best bus bandwidth, slope of the two largest "
                "sizes), alpha = largest intercept under every knot, floor = fastest knot (tensorforge.workloads.collectives)"
            ),
            collectives=ceilings,
            details={"world_size": n, "dtype": DTYPE[kind], "ops": details},
            duration_s=time.perf_counter() - start,
        )
