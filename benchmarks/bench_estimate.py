"""Speed of the estimate: the whole evaluation suite predicted, bound + estimate, on one core.

Each run starts cold (fresh caches of the estimate's GEMM geometry), as a new `predict` process
would; the figure is the best and the median of the runs, in-process (interpreter start-up and
plugin loading not included; `time tensorforge predict ...` shows those).
Usage: taskset -c 0 python benchmarks/bench_estimate.py [--target h200] [--repeat 10]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from tensorforge.bound.model import predict
from tensorforge.estimate import gemm
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve

SUITE = Path(__file__).resolve().parent / "eval" / "h200-suite.toml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="h200")
    parser.add_argument("--suite", default=str(SUITE))
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    host = PluginHost()
    target = host.target(args.target)
    workloads = resolve(host, (), (args.suite,))
    mappings = host.mappings()
    runs = {"bound only": [], "bound + estimate": []}
    for _ in range(args.repeat):
        for label, estimate in (("bound only", False), ("bound + estimate", True)):
            gemm.geometry.cache_clear()
            start = time.perf_counter()
            predict(workloads, target, mappings, estimate=estimate)
            runs[label].append(time.perf_counter() - start)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(
        f"{len(workloads)} workloads of {Path(args.suite).name} on {args.target}, {cores} core(s) "
        f"available, {args.repeat} cold runs each"
    )
    for label, times in runs.items():
        print(f"  {label:17s} best {min(times) * 1e3:7.1f} ms   median {statistics.median(times) * 1e3:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
