"""Conv2D (NCHW semantics) mapped as an implicit GEMM per group:
   M = N*P*Q,  N_gemm = K/groups,  K_gemm = (C/groups)*R*S,  batch = groups.
The A operand is never materialised: its distinct bytes are the input activation (with
halo re-reads left to the mapping's panel model), not the larger im2col matrix."""

import attrs

from tensorforge import (
    DTYPE_BYTES,
    MatmulProblem,
    Operator,
    Tensor,
    WorkloadKind,
    hookimpl,
    parse_dtype,
    parse_math_mode,
)


def _at_least(low, **kw):
    return attrs.field(metadata={"min": low}, **kw)


@attrs.frozen
class Conv2dParams:
    n: int = _at_least(1)
    c: int = _at_least(1)
    h: int = _at_least(1)
    w: int = _at_least(1)
    k: int = _at_least(1)
    r: int = _at_least(1, default=3)
    s: int = _at_least(1, default=3)
    stride: int = _at_least(1, default=1)
    padding: int = _at_least(0, default=0)
    dilation: int = _at_least(1, default=1)
    groups: int = _at_least(1, default=1)
    dtype: str = attrs.field(default="bf16", converter=parse_dtype)
    math_mode: str = attrs.field(default=None)

    def __attrs_post_init__(self):
        object.__setattr__(self, "math_mode", parse_math_mode(self.math_mode, self.dtype))
        if self.c % self.groups or self.k % self.groups:
            raise ValueError(f"groups={self.groups} must divide c={self.c} and k={self.k}")
        if self.p < 1 or self.q < 1:
            raise ValueError(
                f"the {self.r}x{self.s} filter (dilation {self.dilation}) does not fit "
                f"the {self.h}x{self.w} input with padding {self.padding}"
            )

    @property
    def p(self) -> int:
        return (self.h + 2 * self.padding - self.dilation * (self.r - 1) - 1) // self.stride + 1

    @property
    def q(self) -> int:
        return (self.w + 2 * self.padding - self.dilation * (self.s - 1) - 1) // self.stride + 1


class Conv2d(WorkloadKind):
    name = "conv2d"
    description = "2-D convolution N x C x H x W with K filters R x S, as an implicit GEMM"
    params_type = Conv2dParams
    presets = {
        "conv_resnet50_3x3": {
            "n": 32,
            "c": 128,
            "h": 28,
            "w": 28,
            "k": 128,
            "r": 3,
            "s": 3,
            "padding": 1,
            "dtype": "bf16",
        },
        "conv_resnet50_1x1": {"n": 32, "c": 256, "h": 56, "w": 56, "k": 64, "r": 1, "s": 1, "dtype": "bf16"},
        "conv_stem_7x7": {
            "n": 32,
            "c": 3,
            "h": 224,
            "w": 224,
            "k": 64,
            "r": 7,
            "s": 7,
            "stride": 2,
            "padding": 3,
            "dtype": "bf16",
        },
        "conv_depthwise_3x3": {
            "n": 32,
            "c": 256,
            "h": 56,
            "w": 56,
            "k": 256,
            "r": 3,
            "s": 3,
            "padding": 1,
            "groups": 256,
            "dtype": "bf16",
        },
    }
    default_suite = ("conv_resnet50_3x3", "conv_resnet50_1x1", "conv_depthwise_3x3")

    def estimate_class(self, p: Conv2dParams) -> str:
        """fp32 (fp32 or tf32 math), stem (<= 4 input channels), depthwise (one channel per
        group), 1x1, kxk."""
        if p.math_mode in ("fp32", "tf32"):
            return "conv-fp32"
        if p.c <= 4:
            return "conv-stem"
        if p.groups > 1 and p.c // p.groups == 1:
            return "conv-depthwise"
        return "conv-1x1" if p.r == 1 and p.s == 1 else "conv-kxk"

    def operators(self, p: Conv2dParams):
        e = DTYPE_BYTES[p.dtype]
        g = p.groups
        problem = MatmulProblem(
            batch=g,
            m=p.n * p.p * p.q,
            n=p.k // g,
            k=(p.c // g) * p.r * p.s,
            math_mode=p.math_mode,
            a_elem_bytes=e,
            b_elem_bytes=e,
            c_elem_bytes=e,
            a=Tensor("input", p.n * p.c * p.h * p.w * e),
            b=Tensor("filter", p.k * (p.c // g) * p.r * p.s * e),
            c=Tensor("output", p.n * p.k * p.p * p.q * e),
        )
        return (Operator("conv2d", problem),)

    def implementation(self, p: Conv2dParams):
        """One cuDNN kernel over channels-last tensors: an implicit GEMM whose reduction runs
        over (C/groups) x R x S (tensor-core kernels pad the channels to 16 bytes), or, with one
        channel per group, a dedicated depthwise kernel."""
        from tensorforge import Implementation

        per_group = p.c // p.groups
        return {
            "conv2d": Implementation(
                kernels=1, conv_channels=per_group, conv_taps=p.r * p.s, conv_depthwise=per_group == 1 and p.groups > 1
            )
        }


@hookimpl
def tensorforge_register_workloads(register):
    register(Conv2d())
