"""Tensor and pipeline parallelism for the transformer kind: what one rank computes, and the
collectives on the critical path as operators of their own.

Tensor parallelism (tp, Megatron-LM's layout): the QKV and MLP-up projections are split by
columns (each rank holds heads/tp query heads, kv_heads/tp key/value heads - replicated when
tp > kv_heads - and intermediate/tp MLP columns), the output and MLP-down projections by rows,
so each rank's partial sums meet in one all-reduce after attention and one after the MLP. Norms
and residuals are replicated. An LM head is split by vocabulary and its logits all-gathered.
Why shard the parameters and reuse the single-device decomposition: the per-rank operators are
then exactly the unsplit ones at the smaller sizes, whatever block structure the kind grows.

Pipeline parallelism (pp, on paper): layers split into pp stages of layers/pp each; for one batch
the stages run one after another, so the bound is every layer's time plus pp - 1 transfers of the
activations between neighbouring stages (tp devices apart). Micro-batching overlaps stages for
throughput, not for one batch's latency; the measurement backend does not run pp > 1.
"""

import attrs

from tensorforge import DTYPE_BYTES, CollectiveProblem, Operator, Tensor

# Operator names of the collectives (the builder enters the same names).
ALL_REDUCE_ATTN = "all_reduce_attn"
ALL_REDUCE_MLP = "all_reduce_mlp"
ALL_GATHER_LOGITS = "all_gather_logits"
PP_SEND = "pp_send_recv"


def check(p) -> None:
    """ValueError for a tp/pp split the model cannot take."""
    if p.heads % p.tp:
        raise ValueError(f"tp={p.tp} must divide heads={p.heads} (each rank holds whole heads)")
    if p.kv_heads % p.tp and p.tp % p.kv_heads:
        raise ValueError(
            f"tp={p.tp} and kv_heads={p.kv_heads}: one must divide the other "
            "(KV heads are split, or replicated when tp > kv_heads)"
        )
    if p.intermediate % p.tp:
        raise ValueError(f"tp={p.tp} must divide intermediate={p.intermediate}")
    if p.with_lm_head and p.vocab % p.tp:
        raise ValueError(f"tp={p.tp} must divide vocab={p.vocab} (the LM head is split by vocabulary)")
    if p.tp > 1 and p.block != "sequential":
        raise ValueError(
            f"tp={p.tp} with block={p.block}: tensor parallelism is modelled for sequential "
            "blocks (one all-reduce after attention, one after the MLP)"
        )
    if p.layers % p.pp:
        raise ValueError(f"pp={p.pp} must divide layers={p.layers}")


def shard(p, layers: int = 0):
    """One rank's share as unsplit parameters (head_dim kept), with tp = pp = 1."""
    return attrs.evolve(
        p,
        heads=p.heads // p.tp,
        kv_heads=max(1, p.kv_heads // p.tp),
        intermediate=p.intermediate // p.tp,
        head_dim=p.head_dim,
        vocab=p.vocab // p.tp,
        layers=layers or p.layers,
        tp=1,
        pp=1,
    )


def _collective(
    name: str, op: str, nbytes: int, ranks: int, e: int, tensor: str, count: int, stride: int = 1, out_bytes: int = 0
) -> Operator:
    return Operator(
        name,
        CollectiveProblem(
            op=op,
            bytes=nbytes,
            ranks=ranks,
            elem_bytes=e,
            stride=stride,
            input=Tensor(tensor, nbytes if op != "all_gather" else nbytes // ranks),
            output=Tensor(tensor if op != "all_gather" else tensor + "_gathered", out_bytes or nbytes),
        ),
        count,
    )


def with_collectives(p, ops: tuple[Operator, ...]) -> tuple[Operator, ...]:
    """The per-rank operators of the sharded model with the collectives placed where the
    partial sums meet: after o_proj, after mlp_down, after lm_head; then the pipeline sends."""
    e = DTYPE_BYTES[p.dtype]
    act = p.batch * p.seq * p.hidden * e
    out: list[Operator] = []
    for op in ops:
        out.append(op)
        if p.tp > 1 and op.name == "o_proj":
            out.append(_collective(ALL_REDUCE_ATTN, "all_reduce", act, p.tp, e, "attn_out", op.count))
        elif p.tp > 1 and op.name == "mlp_down":
            out.append(_collective(ALL_REDUCE_MLP, "all_reduce", act, p.tp, e, "mlp_out", op.count))
        elif p.tp > 1 and op.name == "lm_head":
            logits = p.logit_rows * p.vocab * e
            out.append(_collective(ALL_GATHER_LOGITS, "all_gather", logits, p.tp, e, "logits", op.count))
    if p.pp > 1:
        out.append(_collective(PP_SEND, "send_recv", act, 2, e, "x", p.pp - 1, stride=p.tp))
    return tuple(out)
