"""How the flush subtraction of a graph sample depends on the flush and the graph (issue 12, decode).

In a fresh process, for one workload: the harness's GraphCalls sample (T[flush -> fn] x n minus
T[flush] x n, over n) at several n, with the write flush (int32 zeroing, as do_bench) and with a
read flush (a sum over the same bytes: evicts without leaving dirty lines), beside a flush-free
graph. A flushed call reading faster than the flush-free one would say the subtraction removes
more than the flush's cost inside [flush -> fn] (e.g. back-to-back flushes alone writing back each
other's dirty lines).

Usage: python benchmarks/graph_flush_subtraction.py -w transformer_decode --calls 1,5,87
"""

import argparse
import statistics
import sys

from tf_cuda.graph import capture
from tf_cuda.timing import flush_step

from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve
from tensorforge_measure.host import OpsHost


def sample(graph, pairs: int) -> float:
    values = [graph.read_pair(graph.queue_pair(warm=True)) for _ in range(pairs)]
    return statistics.median(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", "-w", default="transformer_decode")
    parser.add_argument("--calls", default="1,5,87")
    parser.add_argument("--pairs", type=int, default=15)
    args = parser.parse_args()
    import torch

    core, ops = PluginHost(), OpsHost()
    session = ops.backend("torch-cuda").open(0)
    ((workload, _),) = resolve(core, (args.workload,))
    builder = ops.builder(workload.kind, "torch-cuda")
    mode = getattr(workload.params, "math_mode", "fp32")
    write = flush_step(torch, session.flush_bytes, session.device)
    read = flush_step(torch, session.flush_bytes, session.device, "read")
    with session.prepared(builder, workload.params, mode) as prepared:
        for n in (int(c) for c in args.calls.split(",")):
            for name, step in (("no flush", None), ("write flush", write), ("read flush", read)):
                graph = capture(torch, prepared.fn, step, n, session.device)
                print(
                    f"{args.workload}: n={n:3d} {name:11s}: {sample(graph, args.pairs) * 1e6:.1f} us per call",
                    flush=True,
                )
                graph.close()
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
