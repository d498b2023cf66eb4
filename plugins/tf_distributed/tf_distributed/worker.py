"""One rank of a distributed measurement: the process torchrun starts per device.

`tensorforge run` (the parent, tf_distributed.session) launches `torchrun -m
tf_distributed.worker`; rank 0 connects back to the parent and receives commands, which it hands
to every rank over a gloo control group; every rank executes the command (all of them take part
in each collective), and rank 0 returns every rank's reply. Commands: hello, probe_local,
sweep, prepare, time, telemetry, release, exit.

Why every rank answers each command in step: a rank that raised while the others went on into a
collective would leave them waiting forever, so each step that can fail on one rank is followed
by an agreement on the control group (`agree`), and all ranks fail it together.
"""

import argparse
import contextlib
import os
import socket
import sys
from multiprocessing.connection import Client
from typing import Any

from tensorforge import one_line

AUTHKEY_ENV = "TENSORFORGE_DIST_AUTHKEY"


class StepFailed(Exception):
    """A step failed on one or more ranks; raised on every rank alike."""


class Worker:
    def __init__(self, device_kind: str, control_address: str | None):
        import datetime as dt

        import torch
        import torch.distributed as dist

        from tensorforge_measure import OpsHost
        from tf_distributed.local import LocalDevice
        from tf_distributed.lockstep import Lockstep

        self.torch, self.dist, self.kind = torch, dist, device_kind
        self.rank = int(os.environ["RANK"])
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.world = int(os.environ["WORLD_SIZE"])
        self.ops = OpsHost()
        self.local = LocalDevice(device_kind, self.local_rank, self.world, self.ops)
        timeout = dt.timedelta(seconds=float(os.environ.get("TENSORFORGE_DIST_TIMEOUT_S", "300")))
        if device_kind == "cuda":
            dist.init_process_group("nccl", timeout=timeout, device_id=self.local.device)
        else:
            dist.init_process_group("gloo", timeout=timeout)
        self.control = dist.new_group(backend="gloo", timeout=timeout)
        self.step = Lockstep(dist, self.rank, self.world, self.control, self.local)
        self.conn = None
        if self.rank == 0:
            host, port = control_address.rsplit(":", 1)
            self.conn = Client((host, int(port)), authkey=bytes.fromhex(os.environ[AUTHKEY_ENV]))
        self.prepared: dict[str, Any] | None = None

    # -- the loop -------------------------------------------------------------------------------
    def serve(self) -> None:
        while True:
            command = self.step.decide(self.conn.recv() if self.rank == 0 else None)
            op = command.get("op")
            try:
                reply = {"ok": True, "result": getattr(self, f"do_{op}")(command)}
            except StepFailed as exc:
                reply = {"ok": False, "error": str(exc)}
            except Exception as exc:  # after the step's last collective: every rank gets here
                reply = {"ok": False, "error": f"rank {self.rank}: {one_line(exc)}"}
            replies = self.step.everyone(reply)
            if self.rank == 0:
                self.conn.send(replies)
            if op == "exit":
                return

    def agree(self, failure: str | None, what: str) -> None:
        """Every rank learns whether every rank succeeded; all raise StepFailed together."""
        failures = [(r, f) for r, f in enumerate(self.step.everyone(failure)) if f]
        if failures:
            raise StepFailed(f"{what}: " + "; ".join(f"rank {r}: {f}" for r, f in failures))

    @contextlib.contextmanager
    def mode(self, math_mode: str):
        from tensorforge_measure import math_mode as mode_flags

        with mode_flags(math_mode), self.torch.inference_mode():
            yield

    # -- commands -------------------------------------------------------------------------------
    def do_hello(self, command) -> dict[str, Any]:
        from tf_distributed import environment

        info = self.local.session.info
        return {
            "rank": self.rank,
            "local_rank": self.local_rank,
            "world": self.world,
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "device": {
                "backend": info.backend,
                "name": info.name,
                "fingerprint": info.fingerprint,
                "details": dict(info.details),
            },
            "libraries": environment.library_versions(self.torch, self.kind),
            "settings": environment.settings(),
            "topology": environment.topology(self.kind) if self.local_rank == 0 else None,
            "nvml": environment.nvml_gpu(self.local.device.index or 0) if self.kind == "cuda" else None,
        }

    def do_probe_local(self, command) -> dict[str, Any]:
        """This rank's device ceilings from the local backend's own probes (all ranks at once)."""
        import attrs

        from tensorforge_measure import EstimateTermsProbe, Unavailable

        results, failures = [], {}
        probes = self.ops.for_backend("probes", self.local.backend_name)
        for _, probe in sorted(enumerate(probes), key=lambda item: (getattr(item[1], "order", 0), item[0])):
            # this backend times burst eager calls only: its bounds need the burst (or single-
            # regime) ceilings, and a sustained probe would leave the devices hot for the rest
            if getattr(probe, "regime", "burst") == "sustained":
                continue
            # the estimate's sweep feeds a single-device fit this backend does not make (about
            # 30 s per rank on an H200, for points nothing here reads)
            if isinstance(probe, EstimateTermsProbe):
                continue
            try:
                results.append(attrs.asdict(probe.run(self.local.session)))
            except Unavailable as exc:
                failures[probe.name] = str(exc)
            except Exception as exc:
                failures[probe.name] = one_line(exc)
        self.local.release()
        return {"results": results, "failures": failures}

    def _build(self, kind: str, params, math_mode: str):
        """Build on every rank, agree, run once, check the result on known values, agree."""
        from tensorforge_measure import Unavailable

        builder = self.ops.builder(kind, "torch-distributed")
        failure, fn = None, None
        if builder is None:
            failure = f"no builder for workload kind {kind!r} on backend 'torch-distributed'"
        with self.mode(math_mode), self.local.peak_memory() as peak_box:
            if failure is None:
                try:
                    fn = builder.build(params, self.local.device)
                except Unavailable as exc:  # the builder's own reason, e.g. pp > 1 is not measured
                    failure = str(exc)
                except Exception as exc:
                    failure = one_line(exc)
            self.agree(failure, "build")
            try:
                fn()
                self.local.synchronize()
            except Exception as exc:
                failure = one_line(exc)
        self.agree(failure, "first run")
        check = (True, "no result check for this workload kind")
        if hasattr(fn, "check"):
            with self.mode(math_mode):
                try:
                    check = tuple(fn.check())
                except Exception as exc:
                    check = (False, f"the check raised {one_line(exc)}")
        checks = self.step.everyone(check)
        if not all(ok for ok, _ in checks):
            raise StepFailed("result check failed: " + "; ".join(f"rank {r}: {d}" for r, (_, d) in enumerate(checks)))
        peak, method = peak_box[0] if peak_box else (None, "unavailable")
        return fn, {"peak_memory_bytes": peak, "peak_memory_method": method, "check": checks[self.rank][1]}

    def do_prepare(self, command) -> dict[str, Any]:
        self.do_release(command)
        fn, info = self._build(command["kind"], command["params"], command["math_mode"])
        self.prepared = {"fn": fn, "math_mode": command["math_mode"]}
        return {**info, "framework_flags": self.local.framework_flags()}

    def do_release(self, command) -> None:
        self.prepared = None
        self.local.release()

    def do_time(self, command) -> dict[str, Any]:
        from tensorforge_measure import TimingPolicy
        from tf_distributed.operator_window import operator_window

        if self.prepared is None:
            raise StepFailed("nothing prepared")
        fn = self.prepared["fn"]
        policy = TimingPolicy(**command["policy"], flush_bytes=self.local.flush_bytes)
        with self.mode(self.prepared["math_mode"]):
            timed = self.step.time(fn, policy)
            window = (
                operator_window(self.step, fn, command["operator_iterations"])
                if command.get("operator_iterations")
                else None
            )
        return {**timed, "operators": window}

    def do_telemetry(self, command) -> dict[str, Any]:
        """This rank's telemetry window: `calls` back-to-back calls (the same number on every rank:
        the collectives inside need every rank) while its device is sampled."""
        if self.prepared is None:
            raise StepFailed("nothing prepared")
        fn, calls = self.prepared["fn"], int(command["calls"])

        def run_all():
            for _ in range(calls):
                fn()
            self.local.synchronize()

        with self.mode(self.prepared["math_mode"]):
            if self.kind == "cuda":
                from tf_cuda.telemetry import collect_window, telemetry_to_dict

                window = telemetry_to_dict(
                    collect_window(
                        run_all,
                        device_index=self.local.device.index or 0,
                        duration_s=0.0,
                        synchronize=self.local.synchronize,
                    )
                )
            else:
                from tf_cpu.telemetry import collect_window

                window = collect_window(run_all, self.local.session.machine.cpus, 0.0)
        return {"rank": self.rank, "calls": calls, **window}

    def do_sweep(self, command) -> dict[str, Any]:
        from tf_distributed.sweep import sweep

        return sweep(self, command)

    def do_exit(self, command) -> None:
        self.prepared = None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf_distributed.worker")
    parser.add_argument("--device", choices=("cuda", "cpu"), required=True)
    parser.add_argument("--control", required=True, help="host:port of the parent's control listener")
    args = parser.parse_args(argv)
    worker = Worker(args.device, args.control)
    try:
        worker.serve()
    finally:
        worker.local.close()
        try:
            worker.dist.destroy_process_group()
        except Exception:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
