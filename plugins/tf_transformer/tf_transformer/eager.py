"""Eager attention (attention=eager): what Hugging Face's GPT-2 and BERT run instead of a fused
kernel, as operators the bound and the estimate already know (batched matmuls and streams):

  repeat_kv     grouped-query (1 < kv_heads < heads): K and V copied out to every query head
                (HF's repeat_kv; with one KV head it is a view, and no operator)
  attn_scores   S = Q @ K^T, a matmul batched over batch x heads, the score matrix written out
  attn_scale    S * 1/sqrt(head_dim), read and written back
  attn_mask     causal only, with more than one query: masked scores set to the dtype's minimum
  attn_softmax  P = softmax(S) over the keys, a row reduction
  attn_context  O = P @ V, batched like the scores

Why spell it out: the score matrix (batch x heads x queries x keys elements) goes to memory and
back three or four times, which a fused kernel never does; at long sequences that traffic, not
the matmuls, is the time. Every query sees every key here (a mask costs a pass, it saves no
work), so the FLOPs are the full products, not the causal half the fused kernel does.

The boolean causal mask (queries x keys, shared by every batch, head and layer) stays in the
cache and is not counted; nor are the layout copies torch.matmul makes of operands that arrive
as transposed views (implementation() declares them for the estimate: a different eager code
need not make them, so the bound leaves them out).
"""

from tensorforge import DTYPE_BYTES, MatmulProblem, Operator, StreamProblem, Tensor

SOFTMAX_FLOPS = 5  # per score: max, subtract, exp, add, scale (as tf_vector's softmax counts)

# Operator names, in the order they run (the builder enters the same names).
REPEAT_KV, SCORES, SCALE, MASK, SOFTMAX, CONTEXT = (
    "repeat_kv",
    "attn_scores",
    "attn_scale",
    "attn_mask",
    "attn_softmax",
    "attn_context",
)


def masked(p) -> bool:
    """A causal mask pass runs when some query must not see some key: causal, more than one query."""
    return p.causal and p.seq > 1


def repeats_kv(p) -> bool:
    """repeat_kv copies K and V; with a single KV head its expand + reshape is a view (stride 0)."""
    return 1 < p.kv_heads < p.heads


def score_bytes(p) -> int:
    """The score matrix: batch x heads x queries x keys elements of the workload's dtype."""
    return p.batch * p.heads * p.seq * p.kv_len * DTYPE_BYTES[p.dtype]


def _stream(name, flops, reads, writes, count, dtype, special=0.0):
    problem = StreamProblem(
        flops=float(flops),
        read_tensors=tuple(reads),
        write_tensors=tuple(writes),
        math_mode=dtype,
        special_ops=float(special),
    )
    return Operator(name, problem, count)


def _bmm(name, p, m, n, k, a, b, c):
    e = DTYPE_BYTES[p.dtype]
    problem = MatmulProblem(
        batch=p.batch * p.heads,
        m=m,
        n=n,
        k=k,
        math_mode=p.math_mode,
        a_elem_bytes=e,
        b_elem_bytes=e,
        c_elem_bytes=e,
        a=a,
        b=b,
        c=c,
    )
    return Operator(name, problem, p.layers)


def operators(p, q: Tensor, k: Tensor, v: Tensor, out: Tensor) -> list[Operator]:
    """The eager operators of one layer (each repeated `layers` times) from the projection's
    queries `q` and the keys and values `k`, `v` (this step's or the KV cache) to `out`."""
    e, L, dt = DTYPE_BYTES[p.dtype], p.layers, p.dtype
    S, Lk, Hd = p.seq, p.kv_len, p.head_dim
    ops = []
    if repeats_kv(p):
        rep = p.batch * p.heads * Lk * Hd * e
        k_rep, v_rep = Tensor("k_rep", rep), Tensor("v_rep", rep)
        ops.append(_stream(REPEAT_KV, 0, (k, v), (k_rep, v_rep), L, dt))
        k, v = k_rep, v_rep
    n = p.batch * p.heads * S * Lk
    scores, probs = Tensor("scores", score_bytes(p)), Tensor("probs", score_bytes(p))
    ops += [_bmm(SCORES, p, S, Lk, Hd, q, k, scores), _stream(SCALE, n, (scores,), (scores,), L, dt)]
    if masked(p):
        ops.append(_stream(MASK, n, (scores,), (scores,), L, dt))
    ops += [
        _stream(SOFTMAX, SOFTMAX_FLOPS * n, (scores,), (probs,), L, dt, special=n),  # one exp per score
        _bmm(CONTEXT, p, S, Hd, Lk, probs, v, out),
    ]
    return ops


def implementation(p) -> dict:
    """How torch_builder.py runs them (the HF code): each matmul one torch.matmul on 4-D
    (batch, heads, tokens, head_dim) tensors, which folds batch and heads into one bmm and first
    copies an operand whose batch and heads cannot share one stride (only possible with batch > 1
    and heads > 1): queries and this step's keys are token-major views of the projection, and stay
    so through a full RoPE (its output follows its input's layout), except with one token or a
    partial RoPE (a cat writes them head-major); this step's values are such views too; a KV
    cache and repeat_kv's output are head-major, a single KV head expanded to every query head is
    not (stride 0). The context's transpose back to token-major is one more copy with more than
    one query. The scale, the mask and the softmax are one kernel each; repeat_kv one copy per
    tensor. (`p`: one rank's share under tensor parallelism.)"""
    from tensorforge import Implementation as Impl

    e = DTYPE_BYTES[p.dtype]
    B, S, H, Hd = p.batch, p.seq, p.heads, p.head_dim
    token_bytes = B * S * H * Hd * e  # queries, this step's keys or values, or the context, per head
    fold = B > 1 and H > 1  # batch and heads fold into one bmm stride only if one of them is 1
    head_major = p.rope and (S == 1 or 0 < p.rope_dims < Hd)  # RoPE's output, as above
    if p.kv_heads == 1 < H:  # one KV head expanded: every query head's copy is made
        kv_copy = fold, B * H * p.kv_len * Hd * e
        k_copy = v_copy = kv_copy
    elif repeats_kv(p) or p.phase == "decode":  # repeat_kv's output, or the cache: head-major
        k_copy = v_copy = (False, 0)
    else:  # this step's keys and values, views of the projection
        k_copy, v_copy = (fold and not head_major, token_bytes), (fold, token_bytes)

    def copies(*parts):
        moved = [2 * nbytes for copied, nbytes in parts if copied]  # each read and written once
        return {"layout_copy_bytes": sum(moved), "layout_copy_kernels": len(moved)}

    return {
        REPEAT_KV: Impl(kernels=2, pattern="copy"),
        SCORES: Impl(
            kernels=1,
            leading_dims=(Hd, Hd, p.kv_len),
            **copies((fold and not head_major, token_bytes), k_copy),
        ),
        SCALE: Impl(kernels=1, pattern="elementwise"),
        MASK: Impl(kernels=1, pattern="elementwise"),
        SOFTMAX: Impl(kernels=1, pattern="softmax_rows"),
        CONTEXT: Impl(
            kernels=1,
            leading_dims=(p.kv_len, Hd, Hd),
            **copies(v_copy, (S > 1 and H > 1, token_bytes)),
        ),
    }
