"""Does a large unrolled CUDA graph change later replays of a small one? (issue 12, decode row)

On the H200 (2026-11-30) the decode step read 371 us per step replayed as a graph of one step,
408 us as a graph of 87 unrolled steps (triton's do_bench_cudagraph), and ~407 us for small graphs
too once a large one had been captured in the process. This times, in one fresh process and in
the order given, graphs of N unrolled calls of a workload (no flush: the question is the graph,
not the cache), each replayed `--replays` times, per-call median; a size may repeat (1,87,1).

Usage: python benchmarks/graph_size_order.py -w transformer_decode --sizes 1,87,1 [-o out.json]
"""

import argparse
import json
import statistics
import sys

from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve
from tensorforge_measure.host import OpsHost


def time_graph(torch, fn, calls: int, replays: int) -> dict:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    torch.cuda.synchronize()
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) * 1e-3 / calls)
    del graph
    return {"calls": calls, "per_call_p50_s": statistics.median(per_call), "per_call_min_s": min(per_call)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", "-w", default="transformer_decode")
    parser.add_argument("--sizes", default="1,87,1")
    parser.add_argument("--replays", type=int, default=20)
    parser.add_argument("--output", "-o")
    args = parser.parse_args()
    import torch

    core, ops = PluginHost(), OpsHost()
    session = ops.backend("torch-cuda").open(0)
    ((workload, _),) = resolve(core, (args.workload,))
    builder = ops.builder(workload.kind, "torch-cuda")
    mode = getattr(workload.params, "math_mode", "fp32")
    rows = []
    with session.prepared(builder, workload.params, mode) as prepared:
        for size in (int(s) for s in args.sizes.split(",")):
            row = time_graph(torch, prepared.fn, size, args.replays)
            rows.append(row)
            print(
                f"{args.workload}: graph of {size:4d} calls: {row['per_call_p50_s'] * 1e6:.1f} us per call "
                f"(min {row['per_call_min_s'] * 1e6:.1f})",
                flush=True,
            )
    if args.output:
        with open(args.output, "w") as handle:
            json.dump({"device": session.info.name, "workload": args.workload, "rows": rows}, handle, indent=2)
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
