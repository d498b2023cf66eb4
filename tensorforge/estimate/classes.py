"""Workload classes for scoring the estimate (and the bound), from the workload's kind and
parameters alone, so any capture can be scored by class, not only the committed suite.

GEMMs: odd (a leading dimension not a multiple of 16 bytes, or any dimension that is not a
multiple of 64), skinny (min(M, N) <= 64), batched/transposed (batch > 1 or a transposed
operand), large (>= 64 GFLOP), small (the rest). Convolutions: fp32 (fp32 or tf32 math), stem
(<= 4 input channels), depthwise (one channel per group), 1x1, kxk. Attention and transformer
workloads: prefill or decode.
"""

from typing import Any

CLASSES = (
    "gemm-large",
    "gemm-small",
    "gemm-skinny",
    "gemm-odd",
    "gemm-batched",
    "conv-1x1",
    "conv-kxk",
    "conv-depthwise",
    "conv-stem",
    "conv-fp32",
    "attention-prefill",
    "attention-decode",
    "transformer-prefill",
    "transformer-decode",
    "other",
)

# The groups of classes, for the headline table.
FAMILIES: dict[str, tuple[str, ...]] = {
    "large GEMMs": ("gemm-large",),
    "small & skinny GEMMs": ("gemm-small", "gemm-skinny"),
    "odd & batched GEMMs": ("gemm-odd", "gemm-batched"),
    "convolutions": ("conv-1x1", "conv-kxk", "conv-depthwise", "conv-stem", "conv-fp32"),
    "prefill (attention, transformer)": ("attention-prefill", "transformer-prefill"),
    "decode (attention, transformer)": ("attention-decode", "transformer-decode"),
}

LARGE_FLOPS = 64e9
ELEM = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}


def workload_class(kind: str, params: Any) -> str:
    def g(name: str, default: Any = None) -> Any:
        return getattr(params, name, default)

    if kind == "gemm":
        m, n, k, batch = g("m"), g("n"), g("k"), g("batch", 1)
        e = ELEM.get(g("dtype", "bf16"), 2)
        lda = m if g("transpose_a") else k
        ldb = k if g("transpose_b") else n
        unaligned = any((ld * e) % 16 for ld in (lda, ldb, n))
        if unaligned or any(d % 64 for d in (m, n, k) if d > 64):
            return "gemm-odd"
        if min(m, n) <= 64:
            return "gemm-skinny"
        if batch > 1 or g("transpose_a") or g("transpose_b"):
            return "gemm-batched"
        return "gemm-large" if 2.0 * batch * m * n * k >= LARGE_FLOPS else "gemm-small"
    if kind == "conv2d":
        if g("math_mode") in ("fp32", "tf32"):
            return "conv-fp32"
        if g("c") <= 4:
            return "conv-stem"
        if g("groups", 1) > 1 and g("c") // g("groups") == 1:
            return "conv-depthwise"
        return "conv-1x1" if g("r") == 1 and g("s") == 1 else "conv-kxk"
    if kind == "sdpa":
        return "attention-decode" if g("q_len") <= 16 else "attention-prefill"
    if kind == "transformer":
        return "transformer-decode" if g("phase") == "decode" else "transformer-prefill"
    return "other"


def family_of_class(name: str) -> str:
    for family, members in FAMILIES.items():
        if name in members:
            return family
    return "other"
