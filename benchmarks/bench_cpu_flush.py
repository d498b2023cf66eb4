"""Does the host-CPU flush evict, and what does it cost? (docs/host-cpu.md, "Flush")

For buffers of 4, 16 and 32 MiB, times one read pass (`sum`, one thread) three ways, interleaved:
warm (read just before), after the torch-cpu session's flush, and after a flush twice as large.
If the session's flush evicts, "after flush" matches "after 2x flush" and both are slower than
warm. Also prints the flush plan (size, basis, measured reach) and the flush's own cost.

    python benchmarks/bench_cpu_flush.py [--rounds 15] [--json out.json]
"""

import argparse
import json
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    import attrs
    import torch
    from tf_cpu.backend import TorchCpuBackend
    from tf_cpu.cpu_timing import make_flush
    from tf_cpu.flush import flush_cost

    session = TorchCpuBackend().open(0)
    plan = session.flush_plan
    flush = session.flush()
    double = make_flush(torch, 2 * plan.bytes)
    results = {
        "plan": attrs.asdict(plan),
        "threads": session.threads,
        "double_flush_seconds_p50": flush_cost(double),
        "buffers": {},
    }
    for mib in (4, 16, 32):
        data = torch.ones((mib << 20) // 4, dtype=torch.float32)
        times = {"warm": [], "after flush": [], "after 2x flush": []}
        for _ in range(args.rounds):
            for name, before in (("warm", lambda: data.sum()), ("after flush", flush), ("after 2x flush", double)):
                before()
                # The read on one thread: a parallel region on a busy machine waits for its
                # slowest thread to be scheduled, which would hide the cache effect.
                torch.set_num_threads(1)
                start = time.perf_counter()
                data.sum()
                times[name].append(time.perf_counter() - start)
                torch.set_num_threads(session.threads)
        results["buffers"][f"{mib} MiB"] = {k: statistics.median(v) for k, v in times.items()}
    session.close()
    print(
        f"flush: {plan.bytes / 2**20:.1f} MiB, {plan.seconds_p50 * 1e3:.2f} ms per call "
        f"(2x: {results['double_flush_seconds_p50'] * 1e3:.2f} ms); basis: {plan.basis}"
    )
    for name, row in results["buffers"].items():
        print(f"  read {name:>6}: " + ", ".join(f"{k} {v * 1e6:8.1f} us" for k, v in row.items()))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
