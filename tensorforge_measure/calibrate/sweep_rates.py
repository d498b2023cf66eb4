"""Compute rates that the estimate-terms sweep's GEMM points reached, per math mode, so the
calibrated compute ceiling of a mode is the highest rate ANY calibration probe of that mode
observed (the ceiling must bound every GEMM the device runs; a rate measured on some shape is
proof the device reaches it).

Why: on the H200 (final session of 2026-11-30) the matmul-ceiling probe's square sweep gave bf16
783 TFLOP/s while the sweep's 7168^3 bf16 GEMM ran at 812 TFLOP/s (p50), and held-out large GEMMs
ran up to 2% faster than the bound built on 783. Pure Python (no torch): the offline check
(benchmarks/ceiling_check.py) recomputes the same rates from a stored capture.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from tensorforge.api import parse_fields

GEMM_GROUPS = ("gemm", "gemm-mode", "unaligned")


def gemm_flops_and_mode(spec: str) -> tuple[float, str] | None:
    """(nominal FLOPs, math mode) of a 'gemm:...' spec; None for other kinds, and for fp32 data
    without an explicit math mode (which mode PyTorch used then depends on a global flag)."""
    kind, _, rest = spec.partition(":")
    if kind != "gemm":
        return None
    f = parse_fields(rest, spec)
    mode = f.get("math_mode") or (f.get("dtype") if f.get("dtype") in ("bf16", "fp16") else None)
    if mode is None:
        return None
    flops = 2.0 * int(f["m"]) * int(f["n"]) * int(f["k"]) * int(f.get("batch", 1))
    return flops, str(mode)


def sweep_gemm_rates(points: Iterable[Mapping[str, Any]]) -> dict[str, tuple[float, str, str]]:
    """{mode: (FLOP/s, point name, which sample)} over the sweep's GEMM points: nominal FLOPs over
    the fastest sample ('min_s'; points from before it was recorded give 'p10_s', a slower
    sample, so a rate no higher than the truth; points timed as CUDA graphs alone give
    'graph_min_s', the fastest replay's time per call)."""
    best: dict[str, tuple[float, str, str]] = {}
    for p in points:
        if p.get("group") not in GEMM_GROUPS or not p.get("spec"):
            continue
        fm = gemm_flops_and_mode(str(p["spec"]))
        sample = next((k for k in ("min_s", "p10_s", "graph_min_s") if p.get(k)), "min_s")
        seconds = p.get(sample)
        if fm is None or not seconds:
            continue
        rate = fm[0] / float(seconds)
        if rate > best.get(fm[1], (0.0, "", ""))[0]:
            best[fm[1]] = (rate, str(p.get("name")), sample)
    return best
