"""fp32 (CUDA-core, TF32 off) GEMMs on an H200, timed as published operator measurements are
(one eager call between CUDA events, no L2 flush, the mean of the fastest 5 of 25), and the power
such a GEMM draws held for seconds: the sm90 SIMT coefficients are fitted to the first
(public_fit.py, stage sm90), and the second gives the energy per fp32 FLOP of TSMC 4N, the node
of Hopper and Ada, which a power-limited Ada board's target file may declare.

    python benchmarks/h200_fp32.py [--out benchmarks/results/h200_fp32.json]   (needs a GPU)

The shapes are a grid fixed here (powers of two and model widths), chosen before any fitting and
never from an evaluation set.
"""

from __future__ import annotations

import argparse
import sys
import time

import _result

NAME = "h200_fp32"
SIZES = (256, 512, 1024, 2048, 3072, 4096, 6144, 8192)
SKINNY = ((16, 4096, 4096), (64, 4096, 4096), (128, 768, 3072), (512, 3072, 768), (2048, 50257, 768))
COLUMNS = [("spec", "workload"), ("eager_warm_s", "eager-warm p50-of-fastest (s)"), ("tflops", "TFLOP/s")]


def specs() -> list[tuple[int, int, int]]:
    out = [(s, s, s) for s in SIZES]
    out += [(s, s, 1024) for s in SIZES[2:]] + [(1024, 1024, s) for s in SIZES[3:]]
    return out + list(SKINNY)


def eager_warm(torch, m: int, n: int, k: int) -> float:
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        torch.mm(a, b)
    torch.cuda.synchronize()
    times = []
    for _ in range(25):
        start.record()
        torch.mm(a, b)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    times.sort()
    return sum(times[:5]) / 5


def power(torch, pynvml, handle, m: int, seconds: float, dtype) -> dict[str, float]:
    """Average board power, FLOP rate and SM clock over `seconds` of back-to-back m^3 GEMMs."""
    a = torch.randn(m, m, device="cuda", dtype=dtype)
    b = torch.randn(m, m, device="cuda", dtype=dtype)
    torch.mm(a, b)
    torch.cuda.synchronize()
    e0, t0, n = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.perf_counter(), 0
    clocks = []
    while time.perf_counter() - t0 < seconds:
        for _ in range(8):
            torch.mm(a, b)
        n += 8
        torch.cuda.synchronize()
        clocks.append(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    t1, e1 = time.perf_counter(), pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    watts = (e1 - e0) * 1e-3 / (t1 - t0)
    return {
        "watts": watts,
        "flops_per_s": 2.0 * m**3 * n / (t1 - t0),
        "sm_clock_mhz_median": sorted(clocks)[len(clocks) // 2],
    }


def idle_watts(pynvml, handle, seconds: float) -> float:
    e0, t0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.perf_counter()
    time.sleep(seconds)
    return (pynvml.nvmlDeviceGetTotalEnergyConsumption(handle) - e0) * 1e-3 / (time.perf_counter() - t0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(_result.default_out(NAME)))
    ap.add_argument("--seconds", type=float, default=8.0, help="seconds of load per power reading")
    a = ap.parse_args(argv)
    torch = _result.need_gpus(1, NAME)
    import pynvml

    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 on the CUDA cores, as the public rows
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    rows = []
    for m, n, k in specs():
        t = eager_warm(torch, m, n, k)
        spec = f"gemm:m={m},n={n},k={k},dtype=fp32,math_mode=fp32"
        rows.append({"spec": spec, "eager_warm_s": t, "tflops": 2.0 * m * n * k / t / 1e12})
        print(f"{spec}: {t * 1e6:.1f} us", file=sys.stderr)
    idle = idle_watts(pynvml, handle, 3.0)
    fp32 = power(torch, pynvml, handle, 8192, a.seconds, torch.float32)
    bf16 = power(torch, pynvml, handle, 8192, a.seconds, torch.bfloat16)
    summary = {
        "idle_w": idle,
        "fp32": fp32,
        "bf16": bf16,
        "fp32_joules_per_flop_above_idle": (fp32["watts"] - idle) / fp32["flops_per_s"],
        "bf16_joules_per_flop_above_idle": (bf16["watts"] - idle) / bf16["flops_per_s"],
        "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) * 1e-3,
    }
    doc = _result.build(
        benchmark=NAME,
        device=_result.gpu_words(torch),
        columns=COLUMNS,
        rows=rows,
        summary=summary,
        labels={
            "eager_warm_s": "MEASURED: mean of the fastest 5 of 25 event-timed eager calls, no L2 flush, TF32 off",
            "tflops": "DERIVED: 2mnk / eager_warm_s",
            "idle_w": "MEASURED: NVML total-energy counter over 3 s idle",
            "fp32": "MEASURED: NVML energy counter and SM clock over back-to-back 8192^3 fp32 GEMMs",
            "bf16": "MEASURED: the same for bf16",
            "fp32_joules_per_flop_above_idle": "DERIVED: (load W - idle W) / FLOP/s",
            "bf16_joules_per_flop_above_idle": "DERIVED: (load W - idle W) / FLOP/s",
            "power_limit_w": "MEASURED: NVML enforced power limit",
        },
        notes=["TF32 off (torch.backends.cuda.matmul.allow_tf32 = False): cuBLAS runs SIMT fp32 kernels"],
    )
    _result.write(a.out, doc)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
