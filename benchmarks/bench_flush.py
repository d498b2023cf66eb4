"""How the L2 flush between iterations changes the measured time (and agreement with do_bench).

For each workload, the burst-regime p50 with no flush, a write flush (zero_ of 4 x L2, as
do_bench) and a read flush (sum of 4 x L2: leaves clean lines), next to do_bench's median.
Usage: python benchmarks/bench_flush.py [-w SPEC ...] [-o results.json]
"""

import argparse
import json
import sys

import attrs

from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve
from tensorforge_measure.host import OpsHost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", "-w", action="append", default=[])
    parser.add_argument("--output", "-o")
    args = parser.parse_args()
    import triton.testing
    from tf_cuda.backend import MAX_DUTY, MIN_SAMPLES
    from tf_cuda.timing import time_cuda

    from tensorforge_measure.measure.timing import TimingPolicy

    core, ops = PluginHost(), OpsHost()
    session = ops.backend("torch-cuda").open(0)
    base = TimingPolicy(
        warmup_iters=5,
        min_iters=MIN_SAMPLES,
        max_iters=1000,
        target_rel_iqr=0.02,
        budget_s=1.0,
        flush_bytes=session.flush_bytes,
        max_duty=MAX_DUTY,
    )
    modes = {"none": attrs.evolve(base, flush_bytes=0), "write": base, "read": attrs.evolve(base, flush_mode="read")}
    rows = []
    for workload, _ in resolve(core, tuple(args.workload)):
        builder = ops.builder(workload.kind, "torch-cuda")
        with session.prepared(builder, workload.params, getattr(workload.params, "math_mode", "fp32")) as prep:
            row = {"workload": workload.name}
            for name, policy in modes.items():
                row[f"p50_{name}_s"] = time_cuda(prep.fn, policy, session.device).stats.p50
            row["do_bench_median_s"] = triton.testing.do_bench(prep.fn, warmup=25, rep=100, return_mode="median") * 1e-3
        rows.append(row)
        print(
            f"{workload.name:40s} "
            + "  ".join(f"{k[:-2]} {v * 1e6:9.2f} us" for k, v in row.items() if k.endswith("_s")),
            flush=True,
        )
    if args.output:
        with open(args.output, "w") as handle:
            json.dump({"device": session.info.name, "rows": rows}, handle, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
