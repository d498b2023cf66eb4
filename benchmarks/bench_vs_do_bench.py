"""TensorForge's torch-cuda timing against triton.testing.do_bench, same workloads, one run.

Both flush the L2 between iterations, run continuously (one synchronisation per window, as
do_bench does) and report a median. The harnesses are compared over
equal time windows, interleaved (A B, B A, A B), because on an H200 a sustained load hits the
700 W power cap within a few hundred milliseconds (NVML: SwPowerCap, SM clock 1980 -> ~1500 MHz)
and a long window then measures a slower GPU, not a different harness.
Usage: python benchmarks/bench_vs_do_bench.py [--workload SPEC ...] [--window 0.2] [--output results.json]
"""

import argparse
import json
import statistics
import sys

from tensorforge.plugins import PluginHost
from tensorforge.suite import resolve
from tensorforge_ops.host import OpsHost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", "-w", action="append", default=[])
    parser.add_argument("--window", type=float, default=0.2, help="seconds of timed work per harness call")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", "-o")
    args = parser.parse_args()
    import triton.testing
    from tensorforge_ops.measure.cuda_timing import time_cuda
    from tensorforge_ops.measure.timing import TimingPolicy

    core, ops = PluginHost(), OpsHost()
    session = ops.backend("torch-cuda").open(0)
    rows = []
    for workload, _ in resolve(core, tuple(args.workload)):
        builder = ops.builder(workload.kind, "torch-cuda")
        mode = getattr(workload.params, "math_mode", "fp32")
        with session.prepared(builder, workload.params, mode) as prepared:
            burst = session.time(prepared.fn, 2.0).stats.p50   # what `run` records (burst regime)
            estimate = burst
            n = max(10, int(args.window / estimate))
            policy = TimingPolicy(warmup_iters=5, min_iters=n, max_iters=n, target_rel_iqr=0.0,
                                  budget_s=60.0, flush_bytes=session.flush_bytes, sync_batch=n)
            ours, ref = [], []
            for r in range(args.rounds):
                def run_ours():
                    ours.append(time_cuda(prepared.fn, policy, session.device).stats.p50)

                def run_ref():
                    ref.append(triton.testing.do_bench(prepared.fn, warmup=25, rep=args.window * 1e3,
                                                       return_mode="median") * 1e-3)
                for step in ((run_ours, run_ref) if r % 2 == 0 else (run_ref, run_ours)):
                    step()
        ratio = statistics.median(ours) / statistics.median(ref)
        rows.append({"workload": workload.name, "iterations_per_window": n, "tensorforge_burst_p50_s": burst,
                     "tensorforge_p50_s": ours, "do_bench_median_s": ref, "ratio_of_medians": ratio})
        print(f"{workload.name:22s} tensorforge {statistics.median(ours) * 1e3:9.4f} ms   "
              f"do_bench {statistics.median(ref) * 1e3:9.4f} ms   ratio {ratio:.4f}   (n={n})   "
              f"burst p50 {burst * 1e3:9.4f} ms", flush=True)
    worst = max(abs(r["ratio_of_medians"] - 1) for r in rows)
    print(f"largest deviation from do_bench: {worst * 100:.2f}% on {session.info.name}")
    if args.output:
        with open(args.output, "w") as handle:
            json.dump({"device": session.info.name, "window_s": args.window, "rounds": args.rounds,
                       "rows": rows}, handle, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
