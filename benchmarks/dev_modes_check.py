"""Development check of the measurement modes on a CUDA device: floors, graph capture and burst
graph timing, the trace window's attribution (per-operator sums against the graph p50), the
sustained regime's steady detection, sustained probes. Prints a table; writes JSON and one raw
trace under --out.
Usage: python benchmarks/dev_modes_check.py --out DIR [-w SPEC ...]
"""

import argparse
import inspect
import json
import sys
import time
from pathlib import Path

import attrs

from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve
from tensorforge_measure.host import OpsHost


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--workload", "-w", action="append", default=[])
    args = parser.parse_args()
    out = Path(args.out)
    import triton
    import triton.testing
    from tf_cuda.floors import probe_floors
    from tf_cuda.probes import probe_matmul
    from tf_cuda.probes_sustained import probe_copy_sustained, probe_matmul_sustained

    from tensorforge_measure.measure.phases import PhasePlan

    print("triton", triton.__version__, "do_bench_cudagraph", inspect.signature(triton.testing.do_bench_cudagraph))
    core, ops = PluginHost(), OpsHost()
    session = ops.backend("torch-cuda").open(0)
    result = {"device": session.info.name}
    t = time.perf_counter()
    floors = probe_floors(session.device)
    result["floors"] = attrs.asdict(floors)
    print(
        f"floors ({time.perf_counter() - t:.2f} s): "
        + ", ".join(
            f"{k} {getattr(floors, k) * 1e6:.2f} us" if getattr(floors, k) is not None else f"{k} -"
            for k in (
                "kernel_interval_s",
                "kernel_duration_s",
                "kernel_gap_s",
                "eager_event_floor_s",
                "host_call_interval_s",
            )
        ),
        floors.notes,
        flush=True,
    )
    rows = []
    specs = tuple(args.workload) or (
        "transformer_decode",
        "gemm_tiny",
        "gemm_large_square",
        "conv_resnet50_3x3",
        "transformer_prefill",
    )
    for workload, _ in resolve(core, specs):
        builder = ops.builder(workload.kind, "torch-cuda")
        mode = getattr(workload.params, "math_mode", "fp32")
        row = {"workload": workload.name}
        t0 = time.perf_counter()
        with session.prepared(builder, workload.params, mode) as prepared:
            with session.phases(prepared.fn, PhasePlan()) as ph:
                t1 = time.perf_counter()
                burst = ph.burst()
                t2 = time.perf_counter()
                sustained = ph.sustained()
                t3 = time.perf_counter()
                row["graph_method"] = ph.graph.method if ph.graph is not None else None
                row["graph_calls"] = ph.graph.calls if ph.graph is not None else None
        for phase in (burst, sustained):
            for tm in phase.timings:
                row[f"{tm.regime}_{tm.mode}"] = {
                    "p50": tm.timed.stats.p50,
                    "rel_iqr": tm.timed.stats.rel_iqr,
                    "n": tm.timed.stats.n,
                    "stop": tm.timed.stop_reason,
                }
        row["notes"] = list(burst.notes + sustained.notes)
        row["steady"] = attrs.asdict(sustained.steady) if sustained.steady else None
        tr = burst.trace
        if tr is not None:
            row["trace_notes"] = list(tr.notes)
            row["trace_source"] = tr.device_source
            for label, summ in (("eager", tr.eager), ("graph", tr.graph)):
                if summ is None:
                    continue
                row[f"trace_{label}"] = {
                    "span": summ.span_p50_s,
                    "busy": summ.busy_p50_s,
                    "gap": summ.gap_p50_s,
                    "lead_in": summ.lead_in_p50_s,
                    "unattributed": summ.unattributed_busy_p50_s,
                    "sum_ops": sum(o.time_p50_s for o in summ.operators),
                    "ops": {
                        o.operator: [
                            o.activities,
                            o.time_p50_s,
                            o.busy_p50_s,
                            o.gap_p50_s,
                            o.host_p50_s,
                            [k.name[:90] for k in o.kernels],
                        ]
                        for o in summ.operators
                    },
                }
        row["seconds"] = {"prepare+capture": t1 - t0, "burst+trace": t2 - t1, "sustained": t3 - t2}
        rows.append(row)
        g = row.get("burst_graph", {})
        tg = row.get("trace_graph") or row.get("trace_eager") or {}
        print(
            f"{workload.name:22s} burst eager {row['burst_eager']['p50'] * 1e6:9.2f} us "
            f"(iqr {row['burst_eager']['rel_iqr']:.3f}) graph {g.get('p50', 0) * 1e6:9.2f} us "
            f"(iqr {g.get('rel_iqr', 0):.3f}) | sust eager {row['sustained_eager']['p50'] * 1e6:9.2f} "
            f"graph {row.get('sustained_graph', {}).get('p50', 0) * 1e6:9.2f} us steady "
            f"{sustained.steady.reached} after {sustained.steady.after_s:.2f} s | trace {tr.device_source}: "
            f"sum ops {tg.get('sum_ops', 0) * 1e6:.2f} us span {tg.get('span', 0) * 1e6:.2f} lead "
            f"{(tg.get('lead_in') or 0) * 1e6:.2f} unattr {tg.get('unattributed', 0) * 1e6:.2f} | "
            f"cover {tg.get('sum_ops', 0) / max(g.get('p50', 1e-9), 1e-12):.3f} "
            f"(+lead {(tg.get('sum_ops', 0) + (tg.get('lead_in') or 0)) / max(g.get('p50', 1e-9), 1e-12):.3f}) "
            f"calls/graph {row['graph_calls']} | "
            f"{ {k: round(v, 2) for k, v in row['seconds'].items()} } | notes {row['notes'] + row.get('trace_notes', [])}",
            flush=True,
        )
    result["workloads"] = rows
    t = time.perf_counter()
    burst_bf16 = probe_matmul("bf16", device=session.device)
    t1 = time.perf_counter()
    sus_bf16 = probe_matmul_sustained("bf16", device=session.device)
    t2 = time.perf_counter()
    sus_copy = probe_copy_sustained(device=session.device)
    t3 = time.perf_counter()
    result["probes"] = {
        "burst_bf16": attrs.asdict(burst_bf16),
        "sustained_bf16": attrs.asdict(sus_bf16),
        "sustained_copy": attrs.asdict(sus_copy),
        "seconds": [t1 - t, t2 - t1, t3 - t2],
    }
    print(
        f"bf16 burst {burst_bf16.best_flops_per_s / 1e12:.1f} TFLOP/s at {burst_bf16.best_n} "
        f"{[(n, round(r / 1e12, 1)) for n, r in burst_bf16.points]} ({t1 - t:.2f} s)"
    )
    print(
        f"bf16 sustained {sus_bf16.best_flops_per_s / 1e12:.1f} TFLOP/s at {sus_bf16.best_n} "
        f"{[(n, round(r / 1e12, 1)) for n, r in sus_bf16.points]} ({t2 - t1:.2f} s)"
    )
    print(f"copy sustained {sus_copy.bytes_per_s / 1e12:.2f} TB/s ({t3 - t2:.2f} s) {sus_copy.method[-160:]}")
    (out / "dev_modes.json").write_text(json.dumps(result, indent=1, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
