"""Large GEMMs held for seconds on a GPU (the sustained regime: the board at its power limit),
against `predict --regime sustained` and the burst estimate.

    python benchmarks/sustained.py [--out benchmarks/results/sustained.json]   (needs a GPU)
    python benchmarks/sustained.py --rescore benchmarks/results/sustained.json   (CPU)

Each shape runs back to back for WARM_S, then BATCHES batches of calls are timed between CUDA
events over about HOLD_S; the figure is the median batch's time per call (no flush: these
operands are far larger than the L2). The shapes are fixed here, chosen before any comparison,
and none of them is the 8192^3 square whose power the target's energy per FLOP was derived from
(benchmarks/h200_fp32.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import _result

NAME = "sustained"
SHAPES = (
    "gemm:m=16384,n=4096,k=14336,dtype=bf16",  # an LLM MLP projection over 16k tokens
    "gemm:m=4096,n=4096,k=4096,dtype=bf16",
    "gemm:m=8192,n=8192,k=2048,dtype=fp16",
    "gemm:m=8192,n=28672,k=4096,dtype=bf16",
    "gemm:m=12288,n=12288,k=12288,dtype=fp16",
    "gemm:m=6144,n=6144,k=6144,dtype=fp32,math_mode=fp32",
    "gemm:m=8192,n=8192,k=8192,dtype=fp32,math_mode=tf32",
)
WARM_S, HOLD_S, BATCHES = 2.0, 3.0, 15
COLUMNS = [
    ("spec", "workload"),
    ("measured_s", "sustained (s)"),
    ("sustained_s", "ESTIMATE sustained (s)"),
    ("ape_sustained", "APE sustained"),
    ("burst_s", "ESTIMATE burst (s)"),
    ("ape_burst", "APE burst"),
    ("bound_s", "bound (s)"),
]
LABELS = {
    "measured_s": "MEASURED: median per-call time of the timed batches after seconds of back-to-back calls",
    "sustained_s": "PREDICTED: the estimate, predict --regime sustained (device time)",
    "burst_s": "PREDICTED: the estimate, burst regime (device time)",
    "bound_s": "PREDICTED: the lower bound (boost clock: it stays a bound in every regime)",
    "ape_sustained": "DERIVED: |sustained_s - measured_s| / measured_s",
    "ape_burst": "DERIVED: |burst_s - measured_s| / measured_s",
    "median_ape_sustained": "DERIVED: median of ape_sustained",
    "median_ape_burst": "DERIVED: median of ape_burst",
    "below_bound": "DERIVED: rows measured below the bound",
}


def _operands(torch, spec: str):
    fields = dict(kv.split("=") for kv in spec.split(":", 1)[1].split(","))
    m, n, k = int(fields["m"]), int(fields["n"]), int(fields["k"])
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[fields["dtype"]]
    torch.backends.cuda.matmul.allow_tf32 = fields.get("math_mode") == "tf32"
    return torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)


def hold(torch, spec: str) -> float:
    a, b = _operands(torch, spec)
    torch.mm(a, b)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    calls = 0
    while time.perf_counter() - t0 < WARM_S:
        torch.mm(a, b)
        calls += 1
        if calls % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    per_call = WARM_S / max(calls, 1)
    n = max(1, int(HOLD_S / BATCHES / per_call))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(BATCHES):
        start.record()
        for _ in range(n):
            torch.mm(a, b)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / n)
    del a, b
    torch.cuda.empty_cache()
    return statistics.median(times)


def predict_rows(rows: list[dict], target_name: str = "h200") -> list[dict]:
    from tensorforge.api import run_prediction
    from tensorforge.host.plugin_host import PluginHost

    host = PluginHost()
    out = []
    for r in rows:
        burst = run_prediction(host, target_name, [r["spec"]]).workloads[0]
        sustained = run_prediction(host, target_name, [r["spec"]], regime="sustained").workloads[0]
        m = r["measured_s"]
        s, b = sustained.estimate.device_s, burst.estimate.device_s
        out.append(
            {
                "spec": r["spec"],
                "measured_s": m,
                "sustained_s": s,
                "ape_sustained": abs(s - m) / m,
                "burst_s": b,
                "ape_burst": abs(b - m) / m,
                "bound_s": burst.latency_s,
            }
        )
    return out


def document(rows: list[dict], device: str, command: str | None = None) -> dict:
    return _result.build(
        benchmark=NAME,
        device=device,
        columns=COLUMNS,
        rows=rows,
        summary={
            "median_ape_sustained": statistics.median(r["ape_sustained"] for r in rows),
            "median_ape_burst": statistics.median(r["ape_burst"] for r in rows),
            "below_bound": sum(1 for r in rows if r["measured_s"] < r["bound_s"]),
        },
        labels=LABELS,
        notes=[
            "the sustained rates: the target's power limit less its idle power over its energy per FLOP, "
            "measured on an H200 with 8192^3 GEMMs (benchmarks/h200_fp32.py), a shape not among these",
        ],
        fit="8192^3 fp32 and bf16 GEMMs' power on an H200 (h200_fp32.py): the energy per FLOP",
        evaluated=f"{len(SHAPES)} other large GEMMs held for seconds",
        command=command,
    )


def measure(torch) -> list[dict]:
    rows = []
    for spec in SHAPES:
        rows.append({"spec": spec, "measured_s": hold(torch, spec)})
        print(f"{spec}: {rows[-1]['measured_s'] * 1e3:.3f} ms", file=sys.stderr)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _result.out_option(ap, NAME)
    _result.rescore_option(ap)
    a = ap.parse_args(argv)
    _result.write(a.out, _result.measured_and_scored(a, "sustained.py", measure, predict_rows, document))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
