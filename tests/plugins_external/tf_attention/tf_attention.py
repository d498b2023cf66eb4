"""A batched attention kernel, softmax(Q K^T / sqrt(d)) V, fused FlashAttention-style."""

import attrs

from tensorforge import (
    DTYPE_BYTES,
    AttentionProblem,
    Operator,
    Tensor,
    WorkloadKind,
    default_math_mode,
    hookimpl,
    parse_dtype,
)


def dim(default=attrs.NOTHING):
    # `min` is read by TensorForge's parameter parser: a bad value is one clear error line.
    return attrs.field(default=default, metadata={"min": 1})


@attrs.frozen
class AttentionParams:
    heads: int = dim()
    q_len: int = dim()
    kv_len: int = dim()
    batch: int = dim(1)
    head_dim: int = dim(128)
    causal: bool = False
    dtype: str = attrs.field(default="bf16", converter=parse_dtype)

    def __attrs_post_init__(self):
        # A ValueError here reaches the user as "attention: <message>".
        if self.causal and self.q_len > self.kv_len:
            raise ValueError(f"causal attention needs q_len <= kv_len, got {self.q_len} > {self.kv_len}")


class Attention(WorkloadKind):
    name = "attention"
    description = "batched fused attention softmax(Q K^T / sqrt(d)) V over batch x heads"
    params_type = AttentionParams
    presets = {
        "attention_prefill_4k": {"heads": 32, "q_len": 4096, "kv_len": 4096, "causal": True},
        "attention_decode_32k": {"batch": 8, "heads": 32, "q_len": 1, "kv_len": 32768},
    }
    default_suite = ("attention_prefill_4k",)

    def operators(self, p):
        e = DTYPE_BYTES[p.dtype]
        q_bytes = p.batch * p.heads * p.q_len * p.head_dim * e
        kv_bytes = p.batch * p.heads * p.kv_len * p.head_dim * e
        problem = AttentionProblem(
            batch=p.batch,
            heads=p.heads,
            kv_heads=p.heads,
            q_len=p.q_len,
            kv_len=p.kv_len,
            head_dim=p.head_dim,
            causal=p.causal,
            math_mode=default_math_mode(p.dtype),
            elem_bytes=e,
            q=Tensor("Q", q_bytes),
            k=Tensor("K", kv_bytes),
            v=Tensor("V", kv_bytes),
            o=Tensor("O", q_bytes),
        )
        return (Operator("attention", problem),)


@hookimpl
def tensorforge_register_workloads(register):
    register(Attention())
