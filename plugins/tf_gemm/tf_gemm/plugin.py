"""GEMM: C[b] = op(A[b]) @ op(B[b]) with M, N, K, optional batch, dtype, math mode, transposes.

Transposes change the layout PyTorch sees, not the FLOPs or the compulsory traffic, so the
model treats them alike; the measurement honours them.

phase=train makes it one training step of a linear layer whose input is A and weight B: per
micro-step the forward, the input gradient dA = dC @ B^T (`matmul_grad_a`) and the weight
gradient dB = A^T @ dC (`matmul_grad_b`), each computed in the layout of the operand it is the
gradient of (a transposed operand gets its gradient transposed too, as PyTorch's mm backward
does), then the parameter-side operators of tensorforge.workloads.training (fp32 masters,
accumulation, optimizer). Every micro-step reads its own A and dC (micro-batches).
"""

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


# A GEMM of at least this many FLOPs is in the estimate class 'gemm-large'.
LARGE_FLOPS = 64e9


def _dims(**kw):
    return attrs.field(metadata={"min": 1}, **kw)


@attrs.frozen
class GemmParams:
    m: int = _dims()
    n: int = _dims()
    k: int = _dims()
    batch: int = _dims(default=1)
    dtype: str = attrs.field(default="bf16", converter=parse_dtype)
    math_mode: str = attrs.field(default=None)
    transpose_a: bool = False
    transpose_b: bool = False
    # forward: C = A @ B alone; train: a training step of a linear layer (input A, weight B)
    phase: str = attrs.field(default="forward", metadata={"choices": ("forward", "train")})
    optimizer: str = attrs.field(default="none", metadata={"choices": TRAIN_OPTIMIZERS})
    grad_accum: int = attrs.field(default=1, metadata={"min": 1})  # micro-steps per optimizer step
    mixed_precision: bool = False  # fp32 master weights, gradients and optimizer state

    def __attrs_post_init__(self):
        object.__setattr__(self, "math_mode", parse_math_mode(self.math_mode, self.dtype))
        Training.check(self, "forward")


class Gemm(WorkloadKind):
    name = "gemm"
    description = (
        "dense matrix multiply C = A @ B (optionally batched), M x N x K; phase=train: a layer's training step"
    )
    params_type = GemmParams
    presets = {
        "gemm_large_square": {"m": 8192, "n": 8192, "k": 8192, "dtype": "bf16"},
        "gemm_tiny": {"m": 64, "n": 64, "k": 64, "dtype": "bf16"},
        "gemm_skinny_decode": {"m": 16, "n": 8192, "k": 8192, "dtype": "bf16"},
        "gemm_square_tf32": {"m": 4096, "n": 4096, "k": 4096, "dtype": "fp32", "math_mode": "tf32"},
        "gemm_square_fp32": {"m": 4096, "n": 4096, "k": 4096, "dtype": "fp32", "math_mode": "fp32"},
        "gemm_batched_fp16": {"batch": 32, "m": 1024, "n": 1024, "k": 1024, "dtype": "fp16"},
        "gemm_train_adamw": {"m": 8192, "n": 4096, "k": 4096, "dtype": "bf16", "phase": "train", "optimizer": "adamw"},
    }
    default_suite = ("gemm_large_square", "gemm_tiny", "gemm_skinny_decode", "gemm_square_tf32", "gemm_batched_fp16")

    def operators(self, p: GemmParams):
        t = Training.of(p)
        count = t.grad_accum if t else 1
        forward = Operator("matmul", _matmul(p, p.m, p.n, p.k, "A", "B", "C"), count)
        if t is None:
            return (forward,)
        # In the layout of the operand each is the gradient of: a transposed A (stored K x M)
        # gets dA^T = B @ dC^T, a transposed B (stored N x K) gets dB^T = dC^T @ A.
        if p.transpose_a:
            grad_a = _matmul(p, p.k, p.m, p.n, "B", "dC", "dA")
        else:
            grad_a = _matmul(p, p.m, p.k, p.n, "dC", "B", "dA")
        if p.transpose_b:
            grad_b = _matmul(p, p.n, p.k, p.m, "dC", "A", "dB")
        else:
            grad_b = _matmul(p, p.k, p.n, p.m, "A", "dC", "dB")
        weights = {"B": p.batch * p.k * p.n}
        return (
            *t.cast_weights(weights),
            forward,
            Operator("matmul_grad_a", grad_a, count),
            Operator("matmul_grad_b", grad_b, count),
            *t.update_operators(weights),
        )

    def estimate_class(self, p: GemmParams) -> str:
        """odd (a leading dimension not a multiple of 16 bytes, or any dimension above 64 that is
        not a multiple of 64), skinny (min(M, N) <= 64), batched (batch > 1 or a transposed
        operand), large (>= LARGE_FLOPS), small (the rest)."""
        e = DTYPE_BYTES.get(p.dtype, 2)
        lda = p.m if p.transpose_a else p.k
        ldb = p.k if p.transpose_b else p.n
        unaligned = any((ld * e) % 16 for ld in (lda, ldb, p.n))
        if unaligned or any(d % 64 for d in (p.m, p.n, p.k) if d > 64):
            return "gemm-odd"
        if min(p.m, p.n) <= 64:
            return "gemm-skinny"
        if p.batch > 1 or p.transpose_a or p.transpose_b:
            return "gemm-batched"
        return "gemm-large" if 2.0 * p.batch * p.m * p.n * p.k >= LARGE_FLOPS else "gemm-small"

    def implementation(self, p: GemmParams):
        """The measured implementation is one torch.matmul (one cuBLAS kernel); a transposed
        operand is passed to cuBLAS as a transposed view, so its leading dimension changes."""
        from tensorforge import Implementation

        lda = p.m if p.transpose_a else p.k
        ldb = p.k if p.transpose_b else p.n
        table = {"matmul": Implementation(kernels=1, leading_dims=(lda, ldb, p.n))}
        t = Training.of(p)
        if t is None:
            return table
        # the gradients as torch_builder computes them (transposed views, no copies): the
        # leading dimension of each operand is the row length of the tensor it is a view of; both
        # run in the custom Function's backward, issued by autograd's engine
        grad_a = (ldb, p.n, p.m) if p.transpose_a else (p.n, ldb, p.k)
        grad_b = (p.n, lda, p.k) if p.transpose_b else (lda, p.n, p.n)
        table["matmul_grad_a"] = Implementation(kernels=1, leading_dims=grad_a, issued_by="autograd")
        table["matmul_grad_b"] = Implementation(kernels=1, leading_dims=grad_b, issued_by="autograd")
        return table | t.update_implementations([p.batch * p.k * p.n])

    def memory(self, p: GemmParams) -> dict[str, int]:
        """Device memory at once, by part. Train: as torch_builder allocates the step, parts
        that do not overlap: inputs (A and dC of every micro-step; A is what the backward
        saves), parameters (B's master), gradients (the one handed to the optimizer), optimizer
        state (made at the build), weight copies (B's compute copy under mixed precision) and
        transient (one micro-step's C and dA; dB where it is not itself the gradient; its fp32
        cast beside an accumulator)."""
        t = Training.of(p)
        if t is None:
            return super().memory(p)
        e, mb = DTYPE_BYTES[p.dtype], t.master_bytes
        x, y, w = p.batch * p.m * p.k, p.batch * p.m * p.n, p.batch * p.k * p.n
        return {
            "inputs": t.grad_accum * (x + y) * e,
            "parameters": w * mb,
            "gradients": w * mb,
            "optimizer_state": t.state_bytes(w),
            "weight_copies": w * e if t.mixed_precision else 0,
            "transient": (y + x) * e
            + (w * e if t.mixed_precision or t.grad_accum > 1 else 0)
            + (w * mb if t.mixed_precision and t.grad_accum > 1 else 0),
        }

    def activation_bytes(self, p: GemmParams) -> int:
        """What one micro-step keeps for its backward: A, and B as the forward used it (the
        compute copy under mixed precision; otherwise the parameter itself, not counted)."""
        t = Training.of(p)
        if t is None:
            return 0
        e = DTYPE_BYTES[p.dtype]
        return p.batch * p.m * p.k * e + (p.batch * p.k * p.n * e if t.mixed_precision else 0)

    def footprint_bytes(self, p: GemmParams) -> int:
        """Forward: every distinct tensor. Train: the step's peak, the sum of memory()'s parts."""
        if Training.of(p) is None:
            return super().footprint_bytes(p)
        return sum(self.memory(p).values())


def _matmul(p: GemmParams, m: int, n: int, k: int, a: str, b: str, c: str) -> MatmulProblem:
    e = DTYPE_BYTES[p.dtype]
    return MatmulProblem(
        batch=p.batch,
        m=m,
        n=n,
        k=k,
        math_mode=p.math_mode,
        a_elem_bytes=e,
        b_elem_bytes=e,
        c_elem_bytes=e,
        a=Tensor(a, p.batch * m * k * e),
        b=Tensor(b, p.batch * k * n * e),
        c=Tensor(c, p.batch * m * n * e),
    )


@hookimpl
def tensorforge_register_workloads(register):
    register(Gemm())
