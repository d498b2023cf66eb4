"""Where does our timing loop differ from triton.testing.do_bench on short kernels?

Same workloads, equal continuous windows, interleaved rounds; our loop in variants that change
one thing at a time towards do_bench: the flush buffer (uint8 of 4 x L2 vs do_bench's int32
of 256e6 bytes) and the warm-up (5 iterations vs do_bench's 25 ms).
Usage: python benchmarks/bench_harness_diff.py [-w SPEC ...] [-o results.json]
"""

import argparse
import json
import statistics
import sys

from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve
from tensorforge_measure.host import OpsHost


def our_loop(fn, n, flush, warmup, torch):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for start, end in pairs:
        flush.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in pairs) * 1e-3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", "-w", action="append", default=[])
    parser.add_argument("--window", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", "-o")
    args = parser.parse_args()
    import torch
    import triton.testing

    core, ops = PluginHost(), OpsHost()
    session = ops.backend("torch-cuda").open(0)
    uint8_flush = torch.empty(session.flush_bytes, dtype=torch.uint8, device=session.device)
    int32_flush = torch.empty(int(256e6 // 4), dtype=torch.int, device=session.device)
    rows = []
    for workload, _ in resolve(core, tuple(args.workload)):
        builder = ops.builder(workload.kind, "torch-cuda")
        with session.prepared(builder, workload.params, getattr(workload.params, "math_mode", "fp32")) as prep:
            estimate = session.time(prep.fn, 0.5).stats.p50
            n = max(10, int(args.window / estimate))
            long_warmup = max(5, int(0.025 / estimate))
            variants = {
                "ours": lambda: our_loop(prep.fn, n, uint8_flush, 5, torch),
                "ours+int32-flush": lambda: our_loop(prep.fn, n, int32_flush, 5, torch),
                "ours+25ms-warmup": lambda: our_loop(prep.fn, n, uint8_flush, long_warmup, torch),
                "ours+both": lambda: our_loop(prep.fn, n, int32_flush, long_warmup, torch),
                "do_bench": lambda: (
                    triton.testing.do_bench(prep.fn, warmup=25, rep=args.window * 1e3, return_mode="median") * 1e-3
                ),
            }
            results = {k: [] for k in variants}
            for r in range(args.rounds):
                order = list(variants) if r % 2 == 0 else list(reversed(variants))
                for name in order:
                    results[name].append(variants[name]())
        medians = {k: statistics.median(v) for k, v in results.items()}
        rows.append({"workload": workload.name, "n": n, "medians_s": medians, "rounds_s": results})
        print(f"{workload.name:22s} " + "  ".join(f"{k} {v * 1e6:8.2f}us" for k, v in medians.items()), flush=True)
    if args.output:
        with open(args.output, "w") as handle:
            json.dump({"device": session.info.name, "rows": rows}, handle, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
