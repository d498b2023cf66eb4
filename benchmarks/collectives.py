"""Collectives: the small-message floor of an all-reduce in its regimes, on every GPU of one host
(GPU x2 or more; NCCL, NVLink multicast off).

A small collective's time depends less on the links than on who waits for whom. For an all-reduce
of a few sizes (default 4 KiB, 1 MiB and 64 MiB, bf16), every figure the slowest rank's:

  eager-idle    host clock around one eager call on an idle device (synchronised before and
                after): what an isolated collective costs a program, host launch included
  host-call     host seconds per eager call issued back to back with no synchronisation
  eager-queued  CUDA events around one eager call queued behind a 200 us device-side wait and a
                one-element all-reduce (the torch-distributed backend's lockstep timing)
  graph         CUDA events around a replay of a CUDA graph of --graph-calls calls, per call

Each regime runs in its own try; a failure is recorded and the others still run. The command
starts one process per GPU itself (torch.distributed.run); --cpu rehearses with gloo on the CPU.

    python benchmarks/collectives.py [--sizes 4096,1048576,67108864] [--out benchmarks/results/collectives.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import _result

try:  # a machine without PyTorch still gets the one-line 'needs GPUs' exit
    import torch
    import torch.distributed as dist
except ImportError:
    torch = dist = None

NAME = "collectives"
# NVLink multicast stays off (a program that uses it can take a shared host's GPUs out of service)
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
HOLD_S = 200e-6


def summary(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "min_s": ordered[0],
        "p10_s": ordered[len(ordered) // 10],
        "p50_s": statistics.median(ordered),
        "p90_s": ordered[(len(ordered) * 9) // 10],
    }


def slowest(control, mine: list[float]) -> list[float]:
    """Per iteration, the slowest rank's sample (every rank timed the same iterations)."""
    everyone: list = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine, group=control)
    return [max(col) for col in zip(*everyone)]


def agree(control, ok: bool) -> bool:
    flags: list = [None] * dist.get_world_size()
    dist.all_gather_object(flags, ok, group=control)
    return all(flags)


class Rank:
    def __init__(self, cuda: bool):
        self.cuda = cuda
        self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
        self.line = torch.zeros(1, device=self.device)
        self.hold_cycles = 0
        if cuda:
            torch.cuda._sleep(1000)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            torch.cuda._sleep(1_000_000)
            b.record()
            torch.cuda.synchronize()
            self.hold_cycles = int(HOLD_S * 1_000_000 / (a.elapsed_time(b) * 1e-3))

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def eager_idle(self, x, iters: int) -> list[float]:
        out = []
        for _ in range(iters):
            dist.all_reduce(self.line)
            self.sync()
            start = time.perf_counter()
            dist.all_reduce(x)
            self.sync()
            out.append(time.perf_counter() - start)
        return out

    def host_call(self, x, calls: int, repeats: int) -> list[float]:
        out = []
        for _ in range(repeats):
            dist.all_reduce(self.line)
            self.sync()
            start = time.perf_counter()
            for _ in range(calls):
                dist.all_reduce(x)
            out.append((time.perf_counter() - start) / calls)
            self.sync()
        return out

    def eager_queued(self, x, iters: int) -> list[float]:
        marks = []
        for _ in range(iters):
            torch.cuda._sleep(self.hold_cycles)
            dist.all_reduce(self.line)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            dist.all_reduce(x)
            b.record()
            marks.append((a, b))
        self.sync()
        return [a.elapsed_time(b) * 1e-3 for a, b in marks]

    def graph(self, control, x, calls: int, replays: int) -> tuple[list[float], str]:
        graph, why = None, ""
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up on a side stream, as torch asks before capture
                for _ in range(3):
                    dist.all_reduce(x)
            torch.cuda.current_stream().wait_stream(side)
            self.sync()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(calls):
                    dist.all_reduce(x)
            self.sync()
        except Exception as exc:  # recorded; the other regimes stand
            graph, why = None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if not agree(control, graph is not None):
            return [], why or "another rank could not capture the graph"
        marks = []
        for _ in range(replays):
            torch.cuda._sleep(self.hold_cycles)
            dist.all_reduce(self.line)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            graph.replay()
            b.record()
            marks.append((a, b))
        self.sync()
        return [a.elapsed_time(b) * 1e-3 / calls for a, b in marks], ""


COLUMNS = [
    ("bytes", "bytes"),
    ("regime", "regime"),
    ("min_us", "min us"),
    ("p10_us", "p10 us"),
    ("p50_us", "p50 us"),
    ("p90_us", "p90 us"),
    ("n", "samples"),
]
LABELS = {
    "min_us": "MEASURED: fastest sample of the slowest rank, microseconds per all-reduce",
    "p10_us": "MEASURED: 10th percentile over samples (slowest rank per sample)",
    "p50_us": "MEASURED: median over samples (slowest rank per sample)",
    "p90_us": "MEASURED: 90th percentile over samples (slowest rank per sample)",
}


def table(sizes: dict) -> list[dict]:
    rows = []
    for size, regimes in sizes.items():
        for regime, s in regimes.items():
            row = {"bytes": int(size), "regime": regime.replace("_", "-")}
            if "p50_s" in s:
                row.update({k.replace("_s", "_us"): round(s[k] * 1e6, 3) for k in ("min_s", "p10_s", "p50_s", "p90_s")})
                row["n"] = s["n"]
            else:
                row["unavailable"] = s["unavailable"]
            rows.append(row)
    return rows


def worker(args) -> None:
    cuda = not args.cpu
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group("nccl" if cuda else "gloo")
    control = dist.new_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    me = Rank(cuda)
    dtype = torch.bfloat16 if cuda else torch.float32
    sizes: dict = {}
    for size in (int(s) for s in args.sizes.split(",")):
        x = torch.ones(size // (2 if cuda else 4), dtype=dtype, device=me.device)
        for _ in range(5):
            dist.all_reduce(x)
        me.sync()
        row: dict = {}
        row["eager_idle"] = summary(slowest(control, me.eager_idle(x, args.iters)))
        row["host_call"] = summary(slowest(control, me.host_call(x, 50, 5)))
        if cuda:
            row["eager_queued"] = summary(slowest(control, me.eager_queued(x, args.iters)))
            samples, why = me.graph(control, x, args.graph_calls, max(10, args.iters // 4))
            row["graph"] = summary(slowest(control, samples)) if samples else {"unavailable": why}
        sizes[str(size)] = row
    if rank == 0:
        rows = table(sizes)
        for r in rows:
            print(
                f"{r['bytes']:>9} {r['regime']:13} "
                + (f"p50 {r['p50_us']:9.2f} us" if "p50_us" in r else "unavailable")
            )
        device = f"{world} x {torch.cuda.get_device_name()}" if cuda else f"{world} ranks on {_result.cpu_words()}"
        settings = {k: v for k, v in sorted(os.environ.items()) if k.startswith(("NCCL_", "TORCH_NCCL", "NVSHMEM_"))}
        p50 = {f"{r['bytes']} {r['regime']}": r["p50_us"] for r in rows if "p50_us" in r}
        doc = _result.build(
            NAME,
            device,
            rows,
            {"world_size": world, "backend": dist.get_backend(), "p50_us": p50},
            LABELS,
            columns=COLUMNS,
            notes=[
                f"all_reduce, {'bf16' if cuda else 'fp32'}, {world} ranks, {dist.get_backend()}; torch "
                f"{torch.__version__}" + (f", NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}" if cuda else ""),
                "settings: " + json.dumps(settings, sort_keys=True),
            ],
            command=os.environ.get("TF_BENCH_COMMAND"),
        )
        print(f"wrote {_result.write(args.out, doc)}")
    dist.barrier(group=control)
    dist.destroy_process_group()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="4096,1048576,67108864", help="message sizes in bytes, comma-separated")
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--graph-calls", type=int, default=20)
    parser.add_argument("--nproc", type=int, default=None, help="processes (default: every GPU; --cpu: 2)")
    parser.add_argument("--cpu", action="store_true", help="rehearse on the CPU with gloo (no GPU)")
    _result.out_option(parser, NAME)
    args = parser.parse_args()
    if "LOCAL_RANK" in os.environ:  # one of the processes the launcher started
        worker(args)
        return 0
    if args.cpu:
        nproc = args.nproc or 2
    else:
        _result.need_gpus(2, "collectives")
        nproc = args.nproc or torch.cuda.device_count()
    env = {**os.environ, **SAFE_ENV, "TF_BENCH_COMMAND": " ".join(["python", *sys.argv])}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_result.HERE), env.get("PYTHONPATH", "")) if p)
    argv = [a for a in sys.argv[1:]]
    if not any(a == "--out" or a.startswith("--out=") for a in argv):
        argv += ["--out", args.out]
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1"]
    command += ["--nproc-per-node", str(nproc), __file__, *argv]
    return subprocess.run(command, env=env).returncode


if __name__ == "__main__":
    os.environ.update({k: os.environ.get(k, v) for k, v in SAFE_ENV.items()})
    sys.exit(main())
