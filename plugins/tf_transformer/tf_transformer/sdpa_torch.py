"""Fused attention on PyTorch: F.scaled_dot_product_attention over (batch, heads, seq, dim) views
of token-major tensors, as the transformer builder calls it. Imported from torch_builder.py's
Ops registration; the Core side never imports it."""

from tensorforge_measure import WorkloadBuilder, operator_range, torch_dtype


class SdpaTorch(WorkloadBuilder):
    kind = "sdpa"
    framework = "torch"

    def build(self, p, device):
        import torch
        import torch.nn.functional as F

        dtype = torch_dtype(p.dtype, "PyTorch attention")
        B, H, KV, D = p.batch, p.heads, p.kv_heads, p.head_dim
        # queries token-major (as a projection writes them), the cache head-major (as the
        # transformer builder keeps it); random, never zeros
        q = torch.randn(B, p.q_len, H, D, device=device, dtype=dtype).transpose(1, 2)
        if p.q_len == p.kv_len:
            k = torch.randn(B, p.kv_len, KV, D, device=device, dtype=dtype).transpose(1, 2)
            v = torch.randn(B, p.kv_len, KV, D, device=device, dtype=dtype).transpose(1, 2)
        else:
            k = torch.randn(B, KV, p.kv_len, D, device=device, dtype=dtype)
            v = torch.randn(B, KV, p.kv_len, D, device=device, dtype=dtype)

        def attend():
            with operator_range("attention"):  # the Core's one operator of an sdpa workload
                try:
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=p.causal, enable_gqa=H != KV)
                except TypeError:  # PyTorch without enable_gqa: expand K/V to all query heads
                    kk, vv = (t.repeat_interleave(H // KV, dim=1) for t in (k, v))
                    out = F.scaled_dot_product_attention(q, kk, vv, is_causal=p.causal)
                return out.transpose(1, 2)

        return attend
