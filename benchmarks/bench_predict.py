"""Speed of the Core: predicting the whole default suite with bounded mapping exploration.

Reports wall time per suite, per workload, and mapping candidates evaluated per second.
Usage: python benchmarks/bench_predict.py [--target rtx3050-laptop] [--repeat 20]
"""

import argparse
import statistics
import sys
import time

from tensorforge.bound.model import machine_for, predict, predict_workload
from tensorforge.hardware.target import datasheet_ceilings
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="rtx3050-laptop")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    host = PluginHost()
    target = host.target(args.target)
    if args.target == "host-cpu":  # the shared suite has tf32; run/predict use the CPU-sized one
        from tf_cpu.backend import TorchCpuBackend

        workloads = resolve(host, TorchCpuBackend().default_suite)
    else:
        workloads = resolve(host, ())
    mappings = host.mappings()
    suite_times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        pred = predict(workloads, target, mappings)
        suite_times.append(time.perf_counter() - start)
    suite, best = statistics.median(suite_times), min(suite_times)
    search = getattr(pred, "search", "bounded")  # older Cores did not say
    print(
        f"default suite on {args.target}: {len(workloads)} workloads, {pred.candidates} candidates "
        f"({search} search), median {suite * 1e3:.1f} ms, best {best * 1e3:.1f} ms over {args.repeat} "
        f"runs -> {pred.candidates / suite:,.0f} candidates/s (median), {pred.candidates / best:,.0f} (best)"
    )
    ceilings = datasheet_ceilings(target)
    machine = machine_for(target, ceilings)
    for workload, kind in workloads:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = predict_workload(workload, kind, target, ceilings, mappings, machine)  # fresh memo
            times.append(time.perf_counter() - start)
        t = statistics.median(times)
        print(
            f"  {workload.name:22s} {t * 1e3:7.2f} ms  {result.candidates:6d} candidates  "
            f"{result.candidates / t:12,.0f} candidates/s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
