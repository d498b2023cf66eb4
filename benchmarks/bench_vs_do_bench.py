"""TensorForge's torch-cuda timings against triton.testing, same workloads, same device, one run.

* sustained regime vs do_bench: TensorForge's sustained window (eager calls after the device is
  steady under continuous load, L2 flush, event pair per call, one synchronisation; the rule
  in tensorforge_ops.measure.cuda_sustained) and do_bench(return_mode='median') alternate for
  `rounds` rounds (A B, B A, A B, ...). do_bench too is called right after the same continuous load
  has made the device steady: called after an idle moment, a power-capped GPU lands in a
  transient (on an H200 the 8192^3 bf16 GEMM read 1.71 and 1.78 ms from do_bench against 1.62 ms
  steady), so without it the two would time different device states. One do_bench call without
  the preceding load ("cold") is recorded beside.
* graph mode vs do_bench_cudagraph: do_bench_cudagraph replays n unrolled calls without an L2
  flush, so it is run on `flush + fn` (after the steadying load) and on `flush` alone, and the
  difference is the reference (the same int32 flush of the same buffer TensorForge uses).
  Compared with TensorForge's sustained graph window; the burst graph p50 is shown beside.
Ratios are of medians over the rounds; GEMM and transformer workloads are the ones judged.
Usage: python benchmarks/bench_vs_do_bench.py [-w SPEC ...] [--rounds 5] [--window 0.1] [-o results.json]
"""

import argparse
import json
import statistics
import sys

from tensorforge.plugins import PluginHost
from tensorforge.suite import resolve
from tensorforge_ops.host import OpsHost

GEMM_AND_TRANSFORMER = ("gemm", "transformer")


def _cudagraph_ms(triton_testing, torch, fn, rep_ms):
    with torch.cuda.stream(torch.cuda.Stream()):
        try:
            return float(triton_testing.do_bench_cudagraph(fn, rep=rep_ms, return_mode="median"))
        except TypeError:  # older Triton: no return_mode (mean of its retries)
            return float(triton_testing.do_bench_cudagraph(fn, rep=rep_ms))


def _settle(phases):
    """The continuous load TensorForge's sustained phase starts with, until steady; drained."""
    from tensorforge_ops.measure.cuda_sustained import ContinuousLoad, reach_steady

    load = ContinuousLoad(phases.flush, phases.plan.steady.window_s)
    state, pending, _ = reach_steady(
        load, phases.fn, (phases.burst_eager_s or 1e-4) + phases.flush_s, phases.plan.steady
    )
    load.read(pending)
    return state.reached


def compare_one(session, prepared, args, triton_testing, torch):
    from tensorforge_ops.measure.phases import PhasePlan

    plan = PhasePlan(trace=False, sustained_window_s=args.window)
    row = {}
    with session.phases(prepared.fn, plan) as phases:
        burst = {t.mode: t.timed.stats.p50 for t in phases.burst().timings}
        row["burst_p50_s"] = burst
        row["graph_capture"] = phases.graph_note or "ok"
        row["do_bench_cold_median_s"] = (
            triton_testing.do_bench(prepared.fn, warmup=25, rep=args.window * 1e3, return_mode="median") * 1e-3
        )
        ours_eager, ours_graph, ref, graph_ref, steady, raw = [], [], [], [], [], []
        for r in range(args.rounds):

            def run_ours():
                result = phases.sustained()
                steady.append(result.steady.reached)
                for t in result.timings:
                    (ours_eager if t.mode == "eager" else ours_graph).append(t.timed.stats.p50)

            def run_ref():
                steady.append(_settle(phases))
                ref.append(
                    triton_testing.do_bench(prepared.fn, warmup=25, rep=args.window * 1e3, return_mode="median") * 1e-3
                )
                if phases.graph is not None:
                    flush = phases.flush
                    steady.append(_settle(phases))
                    both = _cudagraph_ms(triton_testing, torch, lambda: (flush(), prepared.fn()), args.graph_rep)
                    alone = _cudagraph_ms(triton_testing, torch, flush, args.graph_rep)
                    graph_ref.append((both - alone) * 1e-3)
                    raw.append([both * 1e-3, alone * 1e-3])

            for step in (run_ours, run_ref) if r % 2 == 0 else (run_ref, run_ours):
                step()
        row.update(
            sustained_eager_p50_s=ours_eager,
            do_bench_median_s=ref,
            steady_reached=steady,
            sustained_ratio=statistics.median(ours_eager) / statistics.median(ref),
        )
        if graph_ref:
            reference = statistics.median(graph_ref)
            row.update(
                sustained_graph_p50_s=ours_graph,
                cudagraph_reference_s=graph_ref,
                cudagraph_flush_and_fn_and_flush_alone_s=raw,
                flush_s=phases.flush_s,
                graph_calls=phases.graph.calls,
                graph_ratio=statistics.median(ours_graph) / reference if reference > 0 else None,
            )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", "-w", action="append", default=[])
    parser.add_argument("--window", type=float, default=0.1, help="seconds per timed window (do_bench rep)")
    parser.add_argument("--graph-rep", type=float, default=20.0, help="do_bench_cudagraph rep (ms)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", "-o")
    args = parser.parse_args()
    import torch
    import triton.testing as triton_testing

    core, ops = PluginHost(), OpsHost()
    session = ops.backend("torch-cuda").open(0)
    rows = []
    for workload, _ in resolve(core, tuple(args.workload)):
        builder = ops.builder(workload.kind, "torch-cuda")
        mode = getattr(workload.params, "math_mode", "fp32")
        with session.prepared(builder, workload.params, mode) as prepared:
            row = {
                "workload": workload.name,
                "kind": workload.kind,
                **compare_one(session, prepared, args, triton_testing, torch),
            }
        rows.append(row)
        graph = row.get("graph_ratio")
        print(
            f"{workload.name:22s} sustained {statistics.median(row['sustained_eager_p50_s']) * 1e3:9.4f} ms "
            f"do_bench {statistics.median(row['do_bench_median_s']) * 1e3:9.4f} ms ratio "
            f"{row['sustained_ratio']:.4f} | graph "
            + (
                f"{statistics.median(row['sustained_graph_p50_s']) * 1e3:9.4f} ms cudagraph+flush "
                f"{statistics.median(row['cudagraph_reference_s']) * 1e3:9.4f} ms ratio {graph:.4f}"
                if graph
                else f"n/a ({row['graph_capture']})"
            )
            + f" | burst eager {row['burst_p50_s']['eager'] * 1e3:.4f} ms, do_bench cold "
            f"{row['do_bench_cold_median_s'] * 1e3:.4f} ms",
            flush=True,
        )
    judged = [r for r in rows if r["kind"] in GEMM_AND_TRANSFORMER]
    worst = max((abs(r["sustained_ratio"] - 1), r["workload"]) for r in judged) if judged else None
    worst_g = (
        max((abs(r["graph_ratio"] - 1), r["workload"]) for r in judged if r.get("graph_ratio"))
        if any(r.get("graph_ratio") for r in judged)
        else None
    )
    if worst:
        print(f"GEMM/transformer: largest sustained deviation from do_bench {worst[0] * 100:.2f}% ({worst[1]})")
    if worst_g:
        print(
            f"GEMM/transformer: largest graph deviation from do_bench_cudagraph+flush "
            f"{worst_g[0] * 100:.2f}% ({worst_g[1]}) on {session.info.name}"
        )
    if args.output:
        with open(args.output, "w") as handle:
            json.dump(
                {"device": session.info.name, "window_s": args.window, "rounds": args.rounds, "rows": rows},
                handle,
                indent=2,
                sort_keys=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
