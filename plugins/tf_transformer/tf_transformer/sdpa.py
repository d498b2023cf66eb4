"""Fused attention on its own ('sdpa': PyTorch's scaled_dot_product_attention, FlashAttention-
style; the name 'attention' is left to third-party plugins): one AttentionProblem,
for prefill (q_len == kv_len, causal or not) and decode (one query per sequence over a KV cache
of kv_len keys). Grouped-query attention through kv_heads. The transformer decomposes into the
same problem; this kind lets attention be predicted, probed and measured alone."""

import attrs

from tensorforge import DTYPE_BYTES, AttentionProblem, Operator, Tensor, WorkloadKind, parse_dtype, parse_math_mode


def _pos(**kw):
    return attrs.field(metadata={"min": 1}, **kw)


@attrs.frozen
class SdpaParams:
    batch: int = _pos()
    heads: int = _pos()
    q_len: int = _pos()
    head_dim: int = _pos(default=128)
    kv_heads: int = attrs.field(default=None, metadata={"min": 1})
    kv_len: int = attrs.field(default=None, metadata={"min": 1})
    causal: bool = True
    dtype: str = attrs.field(default="bf16", converter=parse_dtype)
    math_mode: str = attrs.field(default=None)

    def __attrs_post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        set_("math_mode", parse_math_mode(self.math_mode, self.dtype))
        if self.kv_heads is None:
            set_("kv_heads", self.heads)
        if self.kv_len is None:
            set_("kv_len", self.q_len)
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads={self.kv_heads} must divide heads={self.heads}")
        if self.q_len > self.kv_len:
            raise ValueError(f"q_len={self.q_len} exceeds kv_len={self.kv_len}")
        if self.causal and 1 < self.q_len < self.kv_len:
            raise ValueError(
                "causal attention with 1 < q_len < kv_len needs an explicit mask "
                "(PyTorch aligns is_causal to the top-left); use q_len=1 or q_len=kv_len"
            )
        if self.q_len == 1 and self.causal:
            set_("causal", False)  # one query at the end sees every key: no mask


class Sdpa(WorkloadKind):
    name = "sdpa"
    description = (
        "fused scaled-dot-product attention (FlashAttention-style), prefill or decode "
        "(q_len=1 over kv_len cached keys), grouped-query through kv_heads"
    )
    params_type = SdpaParams
    presets = {
        "sdpa_prefill_causal": {"batch": 4, "heads": 32, "kv_heads": 8, "q_len": 2048, "head_dim": 128, "causal": True},
        "sdpa_decode": {"batch": 32, "heads": 32, "kv_heads": 8, "q_len": 1, "kv_len": 4096, "head_dim": 128},
    }
    default_suite = ()

    def estimate_class(self, p: SdpaParams) -> str:
        """decode (q_len <= 16) or prefill."""
        return "attention-decode" if p.q_len <= 16 else "attention-prefill"

    def operators(self, p: SdpaParams):
        e = DTYPE_BYTES[p.dtype]
        q = p.batch * p.heads * p.q_len * p.head_dim * e
        kv = p.batch * p.kv_heads * p.kv_len * p.head_dim * e
        return (
            Operator(
                "attention",
                AttentionProblem(
                    batch=p.batch,
                    heads=p.heads,
                    kv_heads=p.kv_heads,
                    q_len=p.q_len,
                    kv_len=p.kv_len,
                    head_dim=p.head_dim,
                    causal=p.causal,
                    math_mode=p.math_mode,
                    elem_bytes=e,
                    q=Tensor("q", q),
                    k=Tensor("k", kv),
                    v=Tensor("v", kv),
                    o=Tensor("o", q),
                ),
            ),
        )

    def implementation(self, p: SdpaParams):
        """One F.scaled_dot_product_attention call; its output transposed back is a view."""
        from tensorforge import Implementation

        return {"attention": Implementation(kernels=1)}
