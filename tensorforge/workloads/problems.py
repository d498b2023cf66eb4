"""Operator-level problems: the loop nests that mapping strategies tile onto a target.

A workload decomposes into operators; each operator holds one problem. Problems name the
tensors they read and write (with their distinct bytes in device memory) so the model can tell
compulsory traffic from traffic that a producer left in the shared cache.
"""

from typing import TYPE_CHECKING, Union

import attrs

if TYPE_CHECKING:  # collectives.py builds on Tensor from here: no import at run time
    from tensorforge.workloads.collectives import CollectiveProblem


@attrs.frozen
class Tensor:
    """A named operand and the distinct bytes it occupies in device memory."""

    name: str
    nbytes: int


@attrs.frozen
class MatmulProblem:
    """C[b, m, n] = sum_k A[b, m, k] * B[b, k, n], executed in `math_mode`.

    `a`, `b`, `c` give the operands' distinct bytes in device memory; for an implicit-GEMM
    convolution `a` is the input activation, smaller than the logical m*k matrix it expands to.
    """

    batch: int
    m: int
    n: int
    k: int
    math_mode: str
    a_elem_bytes: int
    b_elem_bytes: int
    c_elem_bytes: int
    a: Tensor
    b: Tensor
    c: Tensor

    @property
    def flops(self) -> float:
        return 2.0 * self.batch * self.m * self.n * self.k

    def reads(self) -> tuple[Tensor, ...]:
        return (self.a, self.b)

    def writes(self) -> tuple[Tensor, ...]:
        return (self.c,)


@attrs.frozen
class AttentionProblem:
    """Fused scaled-dot-product attention, FlashAttention-style: S and P never reach memory.

    Queries are positioned at the end of the key sequence (kv_len - q_len + i), so the same
    problem covers prefill (q_len == kv_len) and decode (q_len small, reading a KV cache).
    Grouped-query attention: `heads` query heads share `kv_heads` key/value heads.
    """

    batch: int
    heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    head_dim: int
    causal: bool
    math_mode: str
    elem_bytes: int
    q: Tensor
    k: Tensor
    v: Tensor
    o: Tensor

    # matrix products per visible query-key pair, each 2*head_dim FLOPs: QK^T and PV (a class
    # attribute, not a field: the backward's subclass sets its own)
    matmuls = 2

    @property
    def visible_pairs(self) -> int:
        """Query-key pairs that are computed (causal masking drops the rest)."""
        if not self.causal:
            return self.q_len * self.kv_len
        offset = self.kv_len - self.q_len
        return self.q_len * offset + self.q_len * (self.q_len + 1) // 2

    @property
    def flops(self) -> float:
        # QK^T and PV: 2 matmuls of 2*d flops per visible pair, per query head.
        return 2.0 * self.matmuls * self.batch * self.heads * self.visible_pairs * self.head_dim

    @property
    def softmax_exps(self) -> float:
        """Exponentials the softmax needs: one per visible query-key pair, per query head."""
        return float(self.batch * self.heads * self.visible_pairs)

    @property
    def softmax_flops(self) -> float:
        """Vector FLOPs of the softmax, its exponentials included (each counted as one): per
        score at least the subtraction of the running maximum and the exponential. (The
        maximum, the row sum and the rescaling are left out: a kernel could move the sum to
        the tensor units, and the bound must not charge what a kernel can avoid.)"""
        return 2.0 * self.softmax_exps

    def reads(self) -> tuple[Tensor, ...]:
        return (self.q, self.k, self.v)

    def writes(self) -> tuple[Tensor, ...]:
        return (self.o,)


@attrs.frozen
class AttentionBackwardProblem(AttentionProblem):
    """The backward of fused attention, FlashAttention-2 style: S and P are recomputed on chip
    from Q, K and the forward's log-sum-exp, never stored. Per visible pair 5 matrix products
    (QK^T again, dP = dO V^T, dV += P^T dO, dQ += dS K, dK += dS^T Q) against the forward's 2, so
    2.5x its FLOPs; one exponential per pair (P recomputed). `q`, `k`, `v`, `o` are the forward's
    tensors, all read here (O for the rowsum of dO * O); `do` the output's gradient (read), `dq`,
    `dk`, `dv` the inputs' gradients (written).
    """

    do: Tensor
    dq: Tensor
    dk: Tensor
    dv: Tensor

    matmuls = 5

    def reads(self) -> tuple[Tensor, ...]:
        return (self.q, self.k, self.v, self.o, self.do)

    def writes(self) -> tuple[Tensor, ...]:
        return (self.dq, self.dk, self.dv)


@attrs.frozen
class StreamProblem:
    """Elementwise or reduction work (norms, activations, residual adds, softmax outside
    attention): one pass over its tensors on the vector units, no tiling to choose.

    `flops` counts every operation, a transcendental as one; `special_ops` says how many of
    them are transcendentals (exp, tanh...), which may run on special-function units.
    `math_mode` is the precision of the elements (a dtype such as 'bf16'): the vector work may
    run at the rate of any precision that holds them exactly (precision.VECTOR_EXECUTES).
    """

    flops: float
    read_tensors: tuple[Tensor, ...]
    write_tensors: tuple[Tensor, ...]
    math_mode: str = "fp32"
    special_ops: float = 0.0

    on_vector_units = True  # no tensor (matrix) math mode needs to be declared for it

    def reads(self) -> tuple[Tensor, ...]:
        return self.read_tensors

    def writes(self) -> tuple[Tensor, ...]:
        return self.write_tensors


Problem = Union[MatmulProblem, AttentionProblem, AttentionBackwardProblem, StreamProblem, "CollectiveProblem"]


@attrs.frozen
class Operator:
    """One step of a workload: a named problem executed `count` times in sequence."""

    name: str
    problem: Problem
    count: int = 1
