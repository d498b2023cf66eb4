"""The parent's view of a running distributed job: a measurement session like any other (the
runner prepares, times and collects telemetry through it), whose calls become commands that
every rank executes (tf_distributed.worker).

What it reports for a system of N devices: one device named "N x <device>", a fingerprint over
every rank's device fingerprint, the world size and the communication library and settings (a
calibration is reused only under the same ones), and per workload the slowest rank's time per
iteration with every rank's samples, the result check, peak memory per rank and the per-operator
window (`measurement_details`).
"""

import contextlib
import hashlib
import json
from collections.abc import Callable
from typing import Any

import attrs

from tensorforge_measure import DeviceInfo, Prepared, Session, TimedSamples, Unavailable, summarize
from tf_distributed.environment import FINGERPRINT_SETTINGS
from tf_distributed.launcher import Launch

AGGREGATION = (
    "slowest rank per iteration: every rank times the same iterations in lockstep "
    "(flush -> on a GPU a 200 us device-side wait, so the start line and the timed launches are "
    "queued before the device reaches them and a sample is device time, not host launch cost -> "
    "one-element all-reduce as the start line -> start marker -> fn() -> end marker) and an "
    "iteration lasts as long as its slowest rank"
)
MIN_SAMPLES = 25  # as torch-cuda and torch-cpu: enough for the gate's significance test
BURST_DUTY = {"cuda": 0.5, "cpu": 1.0}  # GPUs in the burst regime of torch-cuda; CPUs continuously
OPERATOR_ITERATIONS = 5


def fingerprint(hello: list[dict[str, Any]]) -> str:
    first = hello[0]
    text = json.dumps(
        {
            "ranks": [h["device"]["fingerprint"] for h in hello],
            "world": first["world"],
            "libraries": first["libraries"],
            "settings": {k: first["settings"].get(k) for k in FINGERPRINT_SETTINGS},
        },
        sort_keys=True,
    )
    return "dist-" + hashlib.sha256(text.encode()).hexdigest()[:16]


class WorkerCall:
    """What `Prepared.fn` is in the parent: the workload runs in the worker processes."""

    def __call__(self):
        raise RuntimeError("this workload runs in the torch-distributed worker processes; time it through the session")


class DistributedSession(Session):
    def __init__(self, launch: Launch, target_name: str):
        self.launch = launch
        self.kind = launch.device_kind
        self.world = launch.nprocs
        self.device = None
        hello = self.results(self.launch.call({"op": "hello"}), "hello")
        self.hello = hello
        names = sorted({h["device"]["name"] for h in hello})
        name = f"{self.world} x {names[0]}" if len(names) == 1 else " + ".join(h["device"]["name"] for h in hello)
        first = hello[0]
        topology = next((h["topology"] for h in hello if h.get("topology")), None)
        self.details = {
            "ranks": [
                {
                    "rank": h["rank"],
                    "local_rank": h["local_rank"],
                    "hostname": h["hostname"],
                    "device": h["device"],
                    "nvml": h.get("nvml"),
                }
                for h in hello
            ],
            "world_size": self.world,
            "device_kind": self.kind,
            "libraries": first["libraries"],
            "settings": first["settings"],
            "topology": topology,
            "launcher": " ".join(["torchrun"] + launch.command[3:-4]),
            "target": target_name,
        }
        self.info = DeviceInfo(
            backend="torch-distributed", name=name, fingerprint=fingerprint(hello), details=self.details
        )
        self.last: dict[str, Any] = {}
        self.p50_s: float | None = None

    # -- plumbing -------------------------------------------------------------------------------
    def results(self, replies: list[dict[str, Any]], what: str) -> list[Any]:
        errors = sorted({r["error"] for r in replies if not r.get("ok")})
        if errors:
            raise Unavailable(f"{what}: {'; '.join(errors)}")
        return [r["result"] for r in replies]

    def call(self, command: dict[str, Any]) -> list[Any]:
        return self.results(self.launch.call(command), command["op"])

    # -- Session --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def prepared(self, builder, params, math_mode: str):
        replies = self.call({"op": "prepare", "kind": builder.kind, "params": params, "math_mode": math_mode})
        peaks = [r["peak_memory_bytes"] for r in replies]
        flags = dict(replies[0]["framework_flags"])
        flags["distributed"] = {
            "world_size": self.world,
            **self.details["libraries"],
            "settings": self.details["settings"],
        }
        self.last = {
            "ranks": self.world,
            "aggregation": AGGREGATION,
            "result_check": {"ok": True, "per_rank": [r["check"] for r in replies]},
            "peak_memory_per_rank_bytes": peaks,
            "peak_memory_per_rank_method": replies[0]["peak_memory_method"],
        }
        self.p50_s = None
        try:
            yield Prepared(
                fn=WorkerCall(),
                peak_memory_bytes=max(peaks) if all(p is not None for p in peaks) else None,
                framework_flags=flags,
                peak_memory_method="the largest rank's: " + replies[0]["peak_memory_method"],
            )
        finally:
            try:
                self.call({"op": "release"})
            except Unavailable:
                pass

    def policy(self, budget_s: float) -> dict[str, Any]:
        return {
            "warmup_iters": 5,
            "min_iters": MIN_SAMPLES,
            "max_iters": 1000,
            "target_rel_iqr": 0.02,
            "budget_s": budget_s,
            "max_duty": BURST_DUTY[self.kind],
        }

    def time(self, fn: Callable[[], Any], budget_s: float):
        reply = self.call({"op": "time", "policy": self.policy(budget_s), "operator_iterations": OPERATOR_ITERATIONS})[
            0
        ]
        samples = reply["samples_s"]
        stats = summarize(samples)
        self.p50_s = stats.p50
        hold = reply.get("hold_s")
        self.last.update(
            {
                "aggregation": AGGREGATION
                + (
                    f" (the wait measured {hold * 1e6:.1f} us)"
                    if hold
                    else " (no device-side wait: torch.cuda._sleep unavailable)"
                    if self.kind == "cuda"
                    else ""
                ),
                "per_rank_samples_s": reply["per_rank_samples_s"],
                "per_rank_p50_s": [summarize(s).p50 for s in reply["per_rank_samples_s"]],
                "operators": reply["operators"],
            }
        )
        return TimedSamples(
            samples_s=samples,
            stats=stats,
            stop_reason=reply["stop_reason"],
            warmup_iters=reply["warmup_iters"],
            flush_bytes=reply["flush_bytes"],
        )

    def telemetry(self, duration_s: float) -> dict[str, Any]:
        """Every rank's window over the same number of calls (about duration_s long)."""
        calls = max(1, int(duration_s / self.p50_s)) if self.p50_s else 1
        return {"calls": calls, "per_rank": self.call({"op": "telemetry", "calls": calls})}

    def measurement_details(self) -> dict[str, Any]:
        """What the runner adds to the last workload's MEASURED row."""
        return dict(self.last)

    def synchronize(self) -> None:
        """Each rank synchronises its own device inside every command."""

    def close(self) -> None:
        self.launch.close()


def combine_probe_results(per_rank: list[dict[str, Any]]) -> dict[str, Any]:
    """The system's device ceilings from every rank's probes: the fastest rank's rates (a bound
    from the fastest device holds for every device) and the shortest floor."""
    compute: dict[str, float] = {}
    floors: dict[str, float] = {}
    dram, floor = None, None
    for rank in per_rank:
        for result in rank["results"]:
            for name, value in (result.get("floors") or {}).items():
                floors[name] = min(floors.get(name, value), value)
            for mode, rate in (result.get("compute") or {}).items():
                compute[mode] = max(compute.get(mode, 0.0), rate)
            if result.get("dram_bytes_per_s"):
                dram = max(dram or 0.0, result["dram_bytes_per_s"])
            if result.get("launch_floor_s"):
                floor = min(floor, result["launch_floor_s"]) if floor else result["launch_floor_s"]
    return {"compute": compute, "dram_bytes_per_s": dram, "launch_floor_s": floor, "floors": floors}


def to_dict(value) -> dict[str, Any]:
    return attrs.asdict(value) if attrs.has(type(value)) else dict(value)
