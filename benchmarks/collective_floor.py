"""The small-message floor of a collective in its three regimes, on every rank of one host.

Why: a small collective's time depends less on the links than on who waits for whom. This
measures, for an all-reduce of a few sizes (default 4 KiB and 1 MiB, bf16 on GPUs, fp32 on CPUs):

  eager-idle    host clock around one eager call on an idle device (synchronised before and
                after): what an isolated collective costs a program, host launch included
  host-call     host seconds per eager call issued back to back with no synchronisation: the
                host's own cost per call (launch + the work of torch.distributed and NCCL)
  eager-queued  CUDA events around one eager call queued behind a 200 us device-side wait and a
                one-element all-reduce (the torch-distributed backend's lockstep timing): the
                device's time for the call, host launch hidden
  graph         CUDA events around a replay of a CUDA graph holding `--graph-calls` calls,
                divided by that count: a collective's device time when a graph launches it

Every figure is the slowest rank's (per iteration where ranks time the same iteration). This is
a benchmark (figures for docs/several-devices.md), not a capture: the captures' bound and
measurements come from `tensorforge run`. Each regime runs in its own try; a failure is recorded
and the others still run; before a graph is replayed every rank agrees it captured, so one rank's
failure cannot leave the other waiting in a collective.

    torchrun --standalone --nproc-per-node 2 benchmarks/collective_floor.py --out floor.json
"""

import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="4096,1048576", help="message sizes in bytes, comma-separated")
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--graph-calls", type=int, default=20)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group("nccl" if cuda else "gloo")
    control = dist.new_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    me = Rank(cuda)
    dtype = torch.bfloat16 if cuda else torch.float32
    result: dict = {
        "world_size": world,
        "backend": dist.get_backend(),
        "torch": torch.__version__,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "settings": {k: v for k, v in sorted(os.environ.items()) if k.startswith(("NCCL_", "TORCH_NCCL"))},
        "hold_s": HOLD_S if cuda else None,
        "sizes": {},
    }
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
        result["sizes"][str(size)] = row
    if rank == 0:
        print(f"all_reduce over {world} ranks ({result['backend']}, {result['device']}): slowest rank, microseconds")
        print(f"{'bytes':>9} {'regime':13} {'min':>9} {'p10':>9} {'p50':>9} {'p90':>9}")
        for size, row in result["sizes"].items():
            for regime, s in row.items():
                if "p50_s" in s:
                    print(
                        f"{size:>9} {regime:13} "
                        + " ".join(f"{s[k] * 1e6:9.2f}" for k in ("min_s", "p10_s", "p50_s", "p90_s"))
                    )
                else:
                    print(f"{size:>9} {regime:13} unavailable: {s['unavailable']}")
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1, sort_keys=True)
    dist.barrier(group=control)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
