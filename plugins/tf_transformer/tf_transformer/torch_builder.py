"""The transformer's operators executed with PyTorch, one to one with the Core's decomposition
(norm, QKV, RoPE, KV-cache append, SDPA attention, output projection, residuals, MLP; the
sequential or parallel block; the final norm and LM head when the workload has them), each
inside an operator range named as the Core names it (so a kernel trace attributes kernels to
operators), with distinct random weights per layer so weight traffic is real. Registered under
the Ops group; the Core side never imports this module."""

from tensorforge_ops.api import WorkloadBuilder
from tensorforge_ops.hookspecs import hookimpl
from tensorforge_ops.measure.torch_dtypes import torch_dtype
from tensorforge_ops.measure.op_ranges import operator_range


class TransformerTorch(WorkloadBuilder):
    kind = "transformer"
    framework = "torch"           # any PyTorch device: torch-cuda, torch-cpu, ...

    def build(self, p, device):
        import torch
        import torch.nn.functional as F
        dtype = torch_dtype(p.dtype, "this PyTorch transformer")
        B, S, D, H, KV, Hd, I = p.batch, p.seq, p.hidden, p.heads, p.kv_heads, p.head_dim, p.intermediate
        up_width = 2 * I if p.mlp == "gated" else I
        scale = D ** -0.5   # keeps activations finite through the stack

        def rand(*shape):
            return torch.randn(*shape, device=device, dtype=dtype) * scale

        layers = [{"w_qkv": rand((H + 2 * KV) * Hd, D), "w_o": rand(D, H * Hd), "w_up": rand(up_width, D),
                   "w_down": rand(D, I), "n1": torch.ones(D, device=device, dtype=dtype),
                   "n2": torch.ones(D, device=device, dtype=dtype)} for _ in range(p.layers)]
        n_final = torch.ones(D, device=device, dtype=dtype) if p.final_norm else None
        w_lm = rand(p.vocab, D) if p.with_lm_head else None
        x0 = torch.randn(B, S, D, device=device, dtype=dtype)
        caches = None
        if p.phase == "decode":
            caches = [(torch.randn(B, KV, p.kv_len, Hd, device=device, dtype=dtype),
                       torch.randn(B, KV, p.kv_len, Hd, device=device, dtype=dtype)) for _ in range(p.layers)]
        pos = torch.arange(p.context, p.context + S, device=device, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(0, Hd, 2, device=device, dtype=torch.float32) / Hd))
        angles = torch.outer(pos, inv)
        cos = torch.cat([angles.cos(), angles.cos()], -1).to(dtype)[None, None]
        sin = torch.cat([angles.sin(), angles.sin()], -1).to(dtype)[None, None]
        mask = None
        if p.phase == "decode" and S > 1 and p.causal:
            # queries sit at the end of the cache: query i sees keys 0 .. context + i
            q_pos = torch.arange(p.context, p.context + S, device=device)[:, None]
            mask = torch.arange(p.kv_len, device=device)[None, :] <= q_pos

        def norm(t, w):
            if p.norm == "rmsnorm":
                return F.rms_norm(t, (D,), w)
            return F.layer_norm(t, (D,), w)

        def rope(t):
            half = t.shape[-1] // 2
            rotated = torch.cat([-t[..., half:], t[..., :half]], -1)
            return t * cos + rotated * sin

        def attend(q, k, v):
            causal = p.causal and p.phase == "prefill"
            try:
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                                      enable_gqa=H != KV)
            except TypeError:  # PyTorch without enable_gqa: expand K/V to all query heads
                k, v = (t.repeat_interleave(H // KV, dim=1) for t in (k, v))
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

        def forward():
            # One operator_range per Core operator (tf_transformer.plugin.Transformer.operators),
            # entered once per layer; views (split, view, transpose) launch no kernel and sit
            # with the operator that produced or consumes them.
            x = x0
            for i, w in enumerate(layers):
                with operator_range("norm_attn"):
                    h_attn = norm(x, w["n1"])
                with operator_range("qkv_proj"):
                    qkv = F.linear(h_attn, w["w_qkv"])
                q, k, v = qkv.split([H * Hd, KV * Hd, KV * Hd], dim=-1)
                q = q.view(B, S, H, Hd).transpose(1, 2)
                k = k.view(B, S, KV, Hd).transpose(1, 2)
                v = v.view(B, S, KV, Hd).transpose(1, 2)
                if p.rope:
                    with operator_range("rope"):
                        q, k = rope(q), rope(k)
                if caches is not None:
                    with operator_range("kv_append"):
                        k_cache, v_cache = caches[i]
                        k_cache[:, :, p.context:].copy_(k)
                        v_cache[:, :, p.context:].copy_(v)
                    k, v = k_cache, v_cache
                with operator_range("attention"):
                    # the copy back to token-major layout is part of the fused attention's output
                    o = attend(q, k, v).transpose(1, 2).reshape(B, S, H * Hd)
                with operator_range("o_proj"):
                    attn_out = F.linear(o, w["w_o"])
                if p.block == "sequential":
                    with operator_range("residual_attn"):
                        x = x + attn_out
                    with operator_range("norm_mlp"):
                        h_mlp = norm(x, w["n2"])
                elif p.block == "parallel":   # both branches read the layer input, own norms
                    with operator_range("norm_mlp"):
                        h_mlp = norm(x, w["n2"])
                else:                         # parallel_shared_norm (Falcon): one norm for both
                    h_mlp = h_attn
                with operator_range("mlp_up"):
                    up = F.linear(h_mlp, w["w_up"])
                with operator_range("mlp_act"):
                    if p.mlp == "gated":
                        gate, lin = up.chunk(2, dim=-1)
                        act = F.silu(gate) * lin
                    else:
                        act = F.gelu(up, approximate="tanh")
                with operator_range("mlp_down"):
                    mlp_out = F.linear(act, w["w_down"])
                if p.block == "sequential":
                    with operator_range("residual_mlp"):
                        x = x + mlp_out
                else:
                    with operator_range("residual"):
                        x = x + attn_out + mlp_out
            if n_final is not None:
                with operator_range("norm_final"):
                    h = norm(x, n_final)
            else:
                h = x
            if w_lm is None:
                return h
            with operator_range("lm_head"):
                return F.linear(h, w_lm)

        return forward


@hookimpl
def tensorforge_ops_register_builders(register):
    from .sdpa_torch import SdpaTorch
    register(TransformerTorch())
    register(SdpaTorch())
