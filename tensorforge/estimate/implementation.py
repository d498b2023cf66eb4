"""How a plugin's reference implementation executes an operator: what the estimate needs
beyond the loop nest, and what the bound deliberately ignores.

The bound must hold for any implementation, so it looks at FLOPs and compulsory bytes alone.
The estimate predicts the implementation that is actually measured, so it needs a few facts the
Core cannot derive: how many kernels an operator launches, which access pattern its memory
traffic follows, how many times its kernels touch the compulsory bytes (a RoPE written as five
elementwise PyTorch ops moves about five times the bytes of a fused one), the memory layout of
a GEMM's operands (alignment decides which kernel family may run) and a convolution's channels
(the tensor-core path pads them). A workload kind declares these per operator name through
`WorkloadKind.implementation(params)`; an operator it says nothing about gets the defaults of
its problem type, and the estimate says so (`default implementation`).
"""

import attrs

# Access patterns of streaming (non-GEMM) work, each with its own calibrated bandwidth.
PATTERNS = ("elementwise", "norm", "copy", "concat")
# Patterns that run the kernels another pattern's probes time, and so use that rate:
# 'strided' is elementwise math on non-contiguous views (RoPE on the transposed q/k, a gated
# activation on the two halves of one projection): PyTorch runs it in its non-vectorised
# elementwise_kernel<128, 4>, the very kernel of the strided copy probes (slice_copy,
# transpose_copy); the contiguous 'elementwise' probes run vectorized_elementwise_kernel<8>.
# Evidence: an H200 trace of the default transformer prefill (not an evaluation workload; the
# capture is kept at the lab-archive-2026-12 tag): RoPE ran 307 us per layer in such kernels for ~420 MB, 1.4 TB/s,
# where the vectorised add reaches 4.4 TB/s.
PATTERN_ALIASES = {"strided": "copy"}
# Patterns with a rate of their own where a fit measured it, else another pattern's: softmax is
# a row reduction like the norms, but reads its row once where a LayerNorm's kernels move more
# per byte of output; fitted apart, NeuSight's fit rows of all three GPUs gave softmax the faster
# rate (pooled with the norms, an A100's large softmaxes came out 28% slow and its LayerNorms
# fast). Coefficients fitted before it (the H200's) have no softmax rate and use the norms'.
PATTERN_FALLBACKS = {"softmax_rows": "norm"}


def rate_pattern(pattern: str, rates=None) -> str:
    """The pattern whose calibrated bandwidth a pattern uses (in `rates`, where given)."""
    pattern = PATTERN_ALIASES.get(pattern, pattern)
    if rates is not None and pattern not in rates and pattern in PATTERN_FALLBACKS:
        return PATTERN_FALLBACKS[pattern]
    return pattern


# What issues an operator's kernels on the host in an eager call (train_host.py charges each its
# own host cost): 'python', a framework call from Python per kernel (every forward operator);
# 'autograd', the autograd engine's nodes during a backward; 'optimizer', an optimizer's step.
ISSUERS = ("python", "autograd", "optimizer")


def _pattern(_inst, _attr, value):
    if value and value not in PATTERNS and value not in PATTERN_ALIASES and value not in PATTERN_FALLBACKS:
        known = ", ".join(PATTERNS + tuple(PATTERN_ALIASES) + tuple(PATTERN_FALLBACKS))
        raise ValueError(f"unknown access pattern {value!r}; known: {known}")


@attrs.frozen
class Implementation:
    """Per operator, per execution (the operator's `count` repeats all of it).

    kernels: kernel launches of the operator's main work (attention's split-KV combine is
        decided by the estimate itself and not counted here).
    pattern: access pattern of streaming work (elementwise, norm, copy, concat, strided).
    traffic_factor: bytes the kernels move / the operator's compulsory bytes.
    layout_copy_bytes, layout_copy_kernels: extra copies around the main kernel that exist only
        because of tensor layouts (attention output transposed back to tokens x features): bytes
        read + written, and how many kernels do it.
    leading_dims: GEMM operands' leading dimensions in elements (A, B, C); empty = row-major
        without transposes (K, N, N).
    conv_channels, conv_taps: a convolution's input channels per group and filter taps (R*S);
        0 = not a convolution. conv_depthwise: one channel per group (a dedicated kernel, not
        an implicit GEMM). conv_gather: a 1x1 filter that still gathers its input (a stride > 1
        skips positions): cuDNN runs it as an implicit GEMM, not as a plain GEMM over the
        channels-last input.
    issued_by: what issues the kernels on the host (ISSUERS): 'python' unless the operator is
        part of a training step's backward ('autograd') or its optimizer ('optimizer').
    tensors: the parameter tensors an optimizer operator's step walks (issued_by='optimizer').
    """

    kernels: int = attrs.field(default=1, validator=attrs.validators.ge(0))
    pattern: str = attrs.field(default="", validator=_pattern)
    traffic_factor: float = attrs.field(default=1.0, validator=attrs.validators.ge(0.0))
    layout_copy_bytes: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    layout_copy_kernels: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    leading_dims: tuple[int, ...] = ()
    conv_channels: int = 0
    conv_taps: int = 0
    conv_depthwise: bool = False
    conv_gather: bool = False
    issued_by: str = attrs.field(default="python", validator=attrs.validators.in_(ISSUERS))
    tensors: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    declared: bool = True  # False: the defaults of the problem type, nothing was declared


DEFAULT = Implementation(declared=False)


def declared_table(kind, params) -> dict:
    """operator name -> Implementation, as the workload kind declares it (may be empty)."""
    declare = getattr(kind, "implementation", None)
    table: dict | None = declare(params) if declare is not None else None
    return dict(table or {})


def implementation_of(kind, params, operator_name: str) -> Implementation:
    """What the workload kind declares for this operator, or the defaults."""
    return declared_table(kind, params).get(operator_name, DEFAULT)
