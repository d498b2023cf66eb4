"""TensorForge's torch-cuda timing against triton.testing.do_bench, same workloads, one run.

Both flush the L2 between iterations and report a median; the ratio of medians says whether
our per-iteration CUDA-event loop agrees with the reference harness (aim: within 2%).
Usage: python benchmarks/bench_vs_do_bench.py [--workload SPEC ...] [--output results.json]
"""

import argparse
import json
import sys

from tensorforge.plugins import PluginHost
from tensorforge.suite import resolve
from tensorforge_ops.host import OpsHost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", "-w", action="append", default=[])
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument("--output", "-o")
    args = parser.parse_args()
    import triton.testing

    core, ops = PluginHost(), OpsHost()
    session = ops.backend("torch-cuda").open(0)
    rows = []
    for workload, _ in resolve(core, tuple(args.workload)):
        builder = ops.builder(workload.kind, "torch-cuda")
        mode = getattr(workload.params, "math_mode", "fp32")
        with session.prepared(builder, workload.params, mode) as prepared:
            ours = session.time(prepared.fn, args.budget)
            ref_ms = triton.testing.do_bench(prepared.fn, warmup=25, rep=200, return_mode="median")
        ratio = ours.stats.p50 / (ref_ms * 1e-3)
        rows.append({"workload": workload.name, "tensorforge_p50_s": ours.stats.p50,
                     "tensorforge_samples": ours.stats.n, "do_bench_median_s": ref_ms * 1e-3,
                     "ratio": ratio})
        print(f"{workload.name:22s} tensorforge p50 {ours.stats.p50 * 1e3:10.4f} ms   "
              f"do_bench median {ref_ms:10.4f} ms   ratio {ratio:.4f}", flush=True)
    worst = max(abs(r["ratio"] - 1) for r in rows)
    print(f"largest deviation from do_bench: {worst * 100:.2f}% on {session.info.name}")
    if args.output:
        with open(args.output, "w") as handle:
            json.dump({"device": session.info.name, "rows": rows}, handle, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
