"""GEMM: C[b] = op(A[b]) @ op(B[b]) with M, N, K, optional batch, dtype, math mode, transposes.

Transposes change the layout PyTorch sees, not the FLOPs or the compulsory traffic, so the
model treats them alike; the measurement honours them.
"""

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

    def __attrs_post_init__(self):
        object.__setattr__(self, "math_mode", parse_math_mode(self.math_mode, self.dtype))


class Gemm(WorkloadKind):
    name = "gemm"
    description = "dense matrix multiply C = A @ B (optionally batched), M x N x K"
    params_type = GemmParams
    presets = {
        "gemm_large_square": {"m": 8192, "n": 8192, "k": 8192, "dtype": "bf16"},
        "gemm_tiny": {"m": 64, "n": 64, "k": 64, "dtype": "bf16"},
        "gemm_skinny_decode": {"m": 16, "n": 8192, "k": 8192, "dtype": "bf16"},
        "gemm_square_tf32": {"m": 4096, "n": 4096, "k": 4096, "dtype": "fp32", "math_mode": "tf32"},
        "gemm_square_fp32": {"m": 4096, "n": 4096, "k": 4096, "dtype": "fp32", "math_mode": "fp32"},
        "gemm_batched_fp16": {"batch": 32, "m": 1024, "n": 1024, "k": 1024, "dtype": "fp16"},
    }
    default_suite = ("gemm_large_square", "gemm_tiny", "gemm_skinny_decode", "gemm_square_tf32", "gemm_batched_fp16")

    def operators(self, p: GemmParams):
        e = DTYPE_BYTES[p.dtype]
        problem = MatmulProblem(
            batch=p.batch,
            m=p.m,
            n=p.n,
            k=p.k,
            math_mode=p.math_mode,
            a_elem_bytes=e,
            b_elem_bytes=e,
            c_elem_bytes=e,
            a=Tensor("A", p.batch * p.m * p.k * e),
            b=Tensor("B", p.batch * p.k * p.n * e),
            c=Tensor("C", p.batch * p.m * p.n * e),
        )
        return (Operator("matmul", problem),)

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
        return {"matmul": Implementation(kernels=1, leading_dims=(lda, ldb, p.n))}


@hookimpl
def tensorforge_register_workloads(register):
    register(Gemm())
