"""Workload classes for scoring the estimate (and the bound), from the workload's kind and
parameters alone, so any capture can be scored by class, not only the committed suite. Each
workload kind answers its own class (WorkloadKind.estimate_class); the rules the shipped kinds
answer with:

GEMMs: odd (a leading dimension not a multiple of 16 bytes, or any dimension that is not a
multiple of 64), skinny (min(M, N) <= 64), batched/transposed (batch > 1 or a transposed
operand), large (>= 64 GFLOP), small (the rest). Convolutions: fp32 (fp32 or tf32 math), stem
(<= 4 input channels), depthwise (one channel per group), 1x1, kxk. Attention and transformer
workloads: prefill or decode.
"""

from typing import Any

from tensorforge.errors import PluginError

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


def workload_class(kind: Any, params: Any) -> str:
    """The estimate class of a workload: its kind's own answer (`WorkloadKind.estimate_class`),
    one of CLASSES ("other" by default). The Core never recognises a kind by name; a kind whose
    answer is not a class is the plugin's error, said with the kind's name."""
    answer = kind.estimate_class(params)
    if answer not in CLASSES:
        raise PluginError(
            f"workload kind {getattr(kind, 'name', kind)!r} answered estimate class {answer!r}; "
            f"expected one of {', '.join(CLASSES)}"
        )
    return str(answer)


def family_of_class(name: str) -> str:
    for family, members in FAMILIES.items():
        if name in members:
            return family
    return "other"
