"""Conv2D (NCHW semantics) mapped as an implicit GEMM per group:
   M = N*P*Q,  N_gemm = K/groups,  K_gemm = (C/groups)*R*S,  batch = groups.
The A operand is never materialised: its distinct bytes are the input activation (with
halo re-reads left to the mapping's panel model), not the larger im2col matrix.

phase=train adds, per micro-step, the data gradient dX (`conv2d_grad_input`: an implicit GEMM
whose reduction runs over (K/groups)*R*S, M = N*P*Q, N_gemm = C/groups, so its FLOPs are the
forward's exactly; with stride 1 and same padding M is the input's N*H*W too) and the weight
gradient dW (`conv2d_grad_weight`: M = K/groups, N_gemm = (C/groups)*R*S, the reduction over
the N*P*Q output positions), then the parameter-side operators of tensorforge.workloads.training.
Every micro-step reads its own input and output gradient (micro-batches)."""

import attrs

from tensorforge import (
    DTYPE_BYTES,
    MatmulProblem,
    Operator,
    Tensor,
    TRAIN_OPTIMIZERS,
    Training,
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
    # forward: the convolution alone; train: a training step of the layer (the filter its weight)
    phase: str = attrs.field(default="forward", metadata={"choices": ("forward", "train")})
    optimizer: str = attrs.field(default="none", metadata={"choices": TRAIN_OPTIMIZERS})
    grad_accum: int = attrs.field(default=1, metadata={"min": 1})  # micro-steps per optimizer step
    mixed_precision: bool = False  # fp32 master weights, gradients and optimizer state

    def __attrs_post_init__(self):
        object.__setattr__(self, "math_mode", parse_math_mode(self.math_mode, self.dtype))
        Training.check(self, "forward")
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
    description = (
        "2-D convolution N x C x H x W with K filters R x S, as an implicit GEMM; phase=train: a training step"
    )
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
    presets["conv_resnet50_3x3_train"] = {**presets["conv_resnet50_3x3"], "phase": "train", "optimizer": "sgd"}
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
        g = p.groups
        x, w, y = _sizes(p)
        t = Training.of(p)
        count = t.grad_accum if t else 1
        npq, cg, kg, rs = p.n * p.p * p.q, p.c // g, p.k // g, p.r * p.s
        forward = Operator("conv2d", _gemm(p, npq, kg, cg * rs, ("input", x), ("filter", w), ("output", y)), count)
        if t is None:
            return (forward,)
        weights = {"filter": p.k * cg * rs}
        return (
            *t.cast_weights(weights),
            forward,
            Operator(
                "conv2d_grad_input",
                _gemm(p, npq, cg, kg * rs, ("d_output", y), ("filter", w), ("d_input", x)),
                count,
            ),
            Operator(
                "conv2d_grad_weight",
                _gemm(p, kg, cg * rs, npq, ("d_output", y), ("input", x), ("dfilter", w)),
                count,
            ),
            *t.update_operators(weights),
        )

    def memory(self, p: Conv2dParams) -> dict[str, int]:
        """Device memory at once, by part. Train: as torch_builder allocates the step, parts that
        do not overlap (as the GEMM kind's): inputs (x and dY of every micro-step; x is what the
        backward saves), the filter's master, gradient and optimizer state, the filter's compute copy
        (mixed precision) and one micro-step's output, dX and dW."""
        t = Training.of(p)
        if t is None:
            return super().memory(p)
        x, w, y = _sizes(p)
        mb = t.master_bytes
        params = w // DTYPE_BYTES[p.dtype]
        return {
            "inputs": t.grad_accum * (x + y),
            "parameters": params * mb,
            "gradients": params * mb,
            "optimizer_state": t.state_bytes(params),
            "weight_copies": w if t.mixed_precision else 0,
            "transient": y
            + x
            + (w if t.mixed_precision or t.grad_accum > 1 else 0)
            + (params * mb if t.mixed_precision and t.grad_accum > 1 else 0),
        }

    def activation_bytes(self, p: Conv2dParams) -> int:
        """What one micro-step keeps for its backward: the input, and the filter's compute copy
        under mixed precision (otherwise the parameter itself, not counted)."""
        t = Training.of(p)
        if t is None:
            return 0
        x, w, _ = _sizes(p)
        return x + (w if t.mixed_precision else 0)

    def footprint_bytes(self, p: Conv2dParams) -> int:
        """Forward: every distinct tensor. Train: the step's peak, the sum of memory()'s parts."""
        if Training.of(p) is None:
            return super().footprint_bytes(p)
        return sum(self.memory(p).values())

    def implementation(self, p: Conv2dParams):
        """One cuDNN kernel over channels-last tensors: an implicit GEMM whose reduction runs
        over (C/groups) x R x S (tensor-core kernels pad the channels to 16 bytes), or, with one
        channel per group, a dedicated depthwise kernel."""
        from tensorforge import Implementation

        per_group = p.c // p.groups
        depthwise = per_group == 1 and p.groups > 1
        table = {
            "conv2d": Implementation(
                kernels=1,
                conv_channels=per_group,
                conv_taps=p.r * p.s,
                conv_depthwise=depthwise,
                # H200 traces: a strided 1x1 ran cuDNN's implicit-GEMM fprop, never nvjet
                conv_gather=p.r * p.s == 1 and p.stride > 1,
            )
        }
        t = Training.of(p)
        if t is None:
            return table
        # cuDNN's data gradient is an implicit GEMM reducing over the output channels and taps;
        # its weight gradient reduces over output positions: a plain GEMM whose rows are the
        # channels-last tensors' (K channels of dY, C of x); depthwise: the stencil kernels
        kg = p.k // p.groups
        # (both in the custom Function's backward: issued by autograd's engine)
        table["conv2d_grad_input"] = Implementation(
            kernels=1, conv_channels=kg, conv_taps=p.r * p.s, conv_depthwise=depthwise, issued_by="autograd"
        )
        table["conv2d_grad_weight"] = Implementation(
            kernels=1,
            leading_dims=(p.k, p.c, per_group * p.r * p.s),
            conv_channels=per_group if depthwise else 0,
            conv_depthwise=depthwise,
            issued_by="autograd",
        )
        return table | t.update_implementations([p.k * per_group * p.r * p.s])


def _sizes(p: Conv2dParams) -> tuple[int, int, int]:
    """Bytes of the input, the filter and the output."""
    e = DTYPE_BYTES[p.dtype]
    return (
        p.n * p.c * p.h * p.w * e,
        p.k * (p.c // p.groups) * p.r * p.s * e,
        p.n * p.k * p.p * p.q * e,
    )


def _gemm(p: Conv2dParams, m: int, n: int, k: int, a, b, c) -> MatmulProblem:
    """One implicit GEMM per group; a, b, c: (name, distinct bytes) of its operands."""
    e = DTYPE_BYTES[p.dtype]
    return MatmulProblem(
        batch=p.groups,
        m=m,
        n=n,
        k=k,
        math_mode=p.math_mode,
        a_elem_bytes=e,
        b_elem_bytes=e,
        c_elem_bytes=e,
        a=Tensor(*a),
        b=Tensor(*b),
        c=Tensor(*c),
    )


@hookimpl
def tensorforge_register_workloads(register):
    register(Conv2d())
