"""The transformer's operators executed with PyTorch, one to one with the Core's decomposition
(norm, QKV, RoPE, KV-cache append, SDPA attention or Hugging Face's eager attention, output
projection, residuals, MLP; the sequential or parallel block, pre- or post-norm; the final norm
and LM head when the workload has them), each
inside an operator range named as the Core names it (so a kernel trace, or the distributed
backend's operator window, attributes time to operators), with distinct random weights per layer
so weight traffic is real. Registered under the Ops group; the Core side never imports this module.

With tp > 1 each process of a torch.distributed run (the torch-distributed backend) holds its
rank's shard (tf_transformer.parallel) and the partial sums meet in torch.distributed
all-reduces. Weights, inputs and KV caches are drawn from a generator seeded alike on every rank
and sliced, so the tp=N model computes what the tp=1 model with the same seed computes (a test
holds it to that) and every rank starts from the same replicated input.
"""

from tensorforge_measure import Unavailable, WorkloadBuilder, hookimpl, operator_range, torch_dtype
from tf_transformer import eager, huggingface
from tf_transformer.parallel import ALL_GATHER_LOGITS, ALL_REDUCE_ATTN, ALL_REDUCE_MLP

SEED = 20260101


def _tp_rank(p):
    """(rank, tp) of this process; (0, 1) without tensor parallelism."""
    if p.pp > 1:
        raise Unavailable(
            f"pp={p.pp}: pipeline parallelism is predicted only (on paper); the measurement runs tensor parallelism"
        )
    if p.tp == 1:
        return 0, 1
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise Unavailable(
            f"tp={p.tp} runs one process per device through torch.distributed: measure "
            "it on a system target (tensorforge run --target h200x2; backend torch-distributed)"
        )
    if dist.get_world_size() != p.tp:
        raise Unavailable(f"tp={p.tp} needs exactly {p.tp} processes; this run has {dist.get_world_size()}")
    return dist.get_rank(), p.tp


class TransformerTorch(WorkloadBuilder):
    kind = "transformer"
    framework = "torch"  # any PyTorch device: torch-cuda, torch-cpu, torch-distributed ...

    def build(self, p, device):
        import torch
        import torch.nn.functional as F

        if p.phase == "train":  # forward + backward + optimizer through autograd (torch_train.py)
            from tf_transformer.torch_train import build_train

            return build_train(p, device)
        rank, tp = _tp_rank(p)
        dtype = torch_dtype(p.dtype, "this PyTorch transformer")
        B, S, D, Hd = p.batch, p.seq, p.hidden, p.head_dim
        hf = p.impl == "huggingface"  # transformers' eager op sequence (huggingface.py)
        H, KV, I = p.heads, p.kv_heads, p.intermediate  # the whole model
        h, kv, i_ = H // tp, max(1, KV // tp), I // tp  # this rank's share
        q_heads = slice(rank * h, (rank + 1) * h)
        first_kv = rank * kv if KV >= tp else rank // (tp // KV)  # replicated when tp > kv_heads
        kv_heads = slice(first_kv, first_kv + kv)
        cols = slice(rank * i_, (rank + 1) * i_)
        up_width = 2 * I if p.mlp == "gated" else I
        scale = D**-0.5  # keeps activations finite through the stack
        gen = torch.Generator(device=device).manual_seed(SEED)

        def rand(*shape, s=scale):
            return torch.randn(*shape, device=device, dtype=dtype, generator=gen) * s

        def heads_rows(w, first, count):
            return w[first * Hd : (first + count) * Hd]

        def layer():
            w_qkv = rand((H + 2 * KV) * Hd, D)
            q_w, k_w, v_w = w_qkv.split([H * Hd, KV * Hd, KV * Hd])
            w_o, w_up, w_down = rand(D, H * Hd), rand(up_width, D), rand(D, I)
            up = torch.cat([w_up[:I][cols], w_up[I:][cols]]) if p.mlp == "gated" else w_up[cols]
            return {
                "w_qkv": torch.cat(
                    [
                        heads_rows(q_w, q_heads.start, h),
                        heads_rows(k_w, kv_heads.start, kv),
                        heads_rows(v_w, kv_heads.start, kv),
                    ]
                ).contiguous(),
                "w_o": w_o[:, q_heads.start * Hd : q_heads.stop * Hd].contiguous(),
                "w_up": up.contiguous(),
                "w_down": w_down[:, cols].contiguous(),
                "n1": torch.ones(D, device=device, dtype=dtype),
                "n2": torch.ones(D, device=device, dtype=dtype),
            }

        layers = [layer() for _ in range(p.layers)]
        n_final = torch.ones(D, device=device, dtype=dtype) if p.final_norm else None
        w_lm = (
            rand(p.vocab, D)[rank * (p.vocab // tp) : (rank + 1) * (p.vocab // tp)].contiguous()
            if p.with_lm_head
            else None
        )
        x0 = rand(B, S, D, s=1.0)
        caches = None
        if p.phase == "decode":
            caches = [
                tuple(rand(B, KV, p.kv_len, Hd, s=1.0)[:, kv_heads].contiguous() for _ in range(2))
                for _ in range(p.layers)
            ]
        rd = p.rope_dims or Hd  # the rotated dims of each head (GPT-NeoX: a quarter)
        pos = torch.arange(p.context, p.context + S, device=device, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(0, rd, 2, device=device, dtype=torch.float32) / rd))
        angles = torch.outer(pos, inv)
        cos = torch.cat([angles.cos(), angles.cos()], -1).to(dtype)[None, None]
        sin = torch.cat([angles.sin(), angles.sin()], -1).to(dtype)[None, None]
        mask = None
        if p.phase == "decode" and S > 1 and p.causal:
            # queries sit at the end of the cache: query i sees keys 0 .. context + i
            q_pos = torch.arange(p.context, p.context + S, device=device)[:, None]
            mask = torch.arange(p.kv_len, device=device)[None, :] <= q_pos
        eager_mask = None
        if p.attention == "eager" and eager.masked(p):  # queries at the end of the keys, as above
            eager_mask = torch.ones(S, p.kv_len, device=device, dtype=torch.bool).tril(p.kv_len - S)

        def norm(t, w):
            if p.norm == "rmsnorm":
                return F.rms_norm(t, (D,), w)
            return F.layer_norm(t, (D,), w)

        def rotate(t):
            half = t.shape[-1] // 2
            rotated = torch.cat([-t[..., half:], t[..., :half]], -1)
            return t * cos + rotated * sin

        def rope(t):
            if rd == Hd:
                return rotate(t)
            return torch.cat([rotate(t[..., :rd]), t[..., rd:]], -1)  # GPT-NeoX's partial rotary

        def attend(q, k, v):
            causal = p.causal and p.phase == "prefill"
            try:
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=h != kv)
            except TypeError:  # PyTorch without enable_gqa: expand K/V to all query heads
                k, v = (t.repeat_interleave(h // kv, dim=1) for t in (k, v))
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

        def repeat_kv(t):  # HF's repeat_kv: every KV head expanded to its group of query heads
            return t[:, :, None].expand(B, kv, h // kv, *t.shape[2:]).reshape(B, h, *t.shape[2:])

        def attend_eager(q, k, v):
            """Hugging Face's eager attention (GPT-2, BERT, Llama's eager_attention_forward):
            torch.matmul on the (batch, heads, tokens, head_dim) views, the scores written out."""
            if 1 < kv < h:
                with operator_range(eager.REPEAT_KV):
                    k, v = repeat_kv(k), repeat_kv(v)
            elif kv < h:  # one KV head: the expand is a view (stride 0), no kernel and no operator
                k, v = repeat_kv(k), repeat_kv(v)
            with operator_range(eager.SCORES):
                scores = torch.matmul(q, k.transpose(-1, -2))
            with operator_range(eager.SCALE):
                scores = huggingface.scale(torch, scores, Hd) if hf else scores * Hd**-0.5
            if eager_mask is not None:
                with operator_range(eager.MASK):
                    if hf:
                        scores = huggingface.mask(torch, eager_mask, scores)
                    else:
                        scores = torch.where(eager_mask, scores, torch.finfo(scores.dtype).min)
            with operator_range(eager.SOFTMAX):
                probs = torch.softmax(scores, dim=-1)
            with operator_range(eager.CONTEXT):
                return torch.matmul(probs, v).transpose(1, 2).reshape(B, S, h * Hd)

        all_reduce, gather_logits = _collectives(tp)

        def forward():
            # One operator_range per Core operator (tf_transformer.plugin.Transformer.operators),
            # entered once per layer; views (split, view, transpose) launch no kernel and sit
            # with the operator that produced or consumes them.
            x = x0
            for i, w in enumerate(layers):
                if p.post_norm:  # BERT: the layer input feeds the projection; norms follow the adds
                    h_attn = x
                else:
                    with operator_range("norm_attn"):
                        h_attn = norm(x, w["n1"])
                if p.block == "parallel":  # Falcon, GPT-NeoX: the MLP's own norm of the layer input
                    with operator_range("norm_mlp"):
                        h_mlp = norm(x, w["n2"])
                with operator_range("qkv_proj"):
                    qkv = F.linear(h_attn, w["w_qkv"])
                q, k, v = qkv.split([h * Hd, kv * Hd, kv * Hd], dim=-1)
                q = q.view(B, S, h, Hd).transpose(1, 2)
                k = k.view(B, S, kv, Hd).transpose(1, 2)
                v = v.view(B, S, kv, Hd).transpose(1, 2)
                if p.rope:
                    with operator_range("rope"):
                        q, k = rope(q), rope(k)
                if caches is not None:
                    with operator_range("kv_append"):
                        k_cache, v_cache = caches[i]
                        k_cache[:, :, p.context :].copy_(k)
                        v_cache[:, :, p.context :].copy_(v)
                    k, v = k_cache, v_cache
                if p.attention == "eager":
                    o = attend_eager(q, k, v)
                else:
                    with operator_range("attention"):
                        # the copy back to token-major layout is part of the fused attention's output
                        o = attend(q, k, v).transpose(1, 2).reshape(B, S, h * Hd)
                with operator_range("o_proj"):
                    attn_out = F.linear(o, w["w_o"])
                if tp > 1:  # row-parallel: the ranks' partial sums meet here
                    with operator_range(ALL_REDUCE_ATTN):
                        all_reduce(attn_out)
                if p.block == "sequential":
                    with operator_range("residual_attn"):
                        x = x + attn_out
                    if p.post_norm:
                        with operator_range("norm_attn"):
                            x = h_mlp = norm(x, w["n1"])
                    else:
                        with operator_range("norm_mlp"):
                            h_mlp = norm(x, w["n2"])
                elif p.block == "parallel_shared_norm":  # both branches read one norm of the input
                    h_mlp = h_attn
                with operator_range("mlp_up"):
                    up = F.linear(h_mlp, w["w_up"])
                with operator_range("mlp_act"):
                    if p.mlp == "gated":
                        gate, lin = up.chunk(2, dim=-1)
                        act = F.silu(gate) * lin
                    elif p.mlp == "relu":  # OPT
                        act = F.relu(up)
                    elif hf:
                        act = huggingface.gelu_new(torch, up)
                    else:
                        act = F.gelu(up, approximate="tanh")
                with operator_range("mlp_down"):
                    mlp_out = F.linear(act, w["w_down"])
                if tp > 1:
                    with operator_range(ALL_REDUCE_MLP):
                        all_reduce(mlp_out)
                if p.block == "sequential":
                    with operator_range("residual_mlp"):
                        x = x + mlp_out
                    if p.post_norm:
                        with operator_range("norm_mlp"):
                            x = norm(x, w["n2"])
                else:
                    with operator_range("residual"):
                        x = x + attn_out + mlp_out
            hn = x
            if n_final is not None:
                with operator_range("norm_final"):
                    hn = norm(x, n_final)
            if w_lm is None:
                return hn
            if p.logits == "last":  # the last position of each sequence (a view)
                hn = hn[:, -1:, :]
            with operator_range("lm_head"):
                logits = F.linear(hn, w_lm)
            if tp == 1:
                return logits
            with operator_range(ALL_GATHER_LOGITS):
                return gather_logits(logits)

        if tp > 1:
            forward.check = lambda: _replicated(forward, tp)
        return forward


def _collectives(tp: int):
    """In-place all-reduce of partial sums and the vocabulary all-gather, over the default group."""
    if tp == 1:
        return None, None
    import torch
    import torch.distributed as dist

    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor

    def gather_logits(shard):
        # gathered along dimension 0 (flat), then each rank's vocabulary slice back in place
        out = torch.empty(tp * shard.numel(), device=shard.device, dtype=shard.dtype)
        gather(out, shard.reshape(-1))
        return torch.cat(out.view((tp,) + tuple(shard.shape)).unbind(0), dim=-1)

    return dist.all_reduce, gather_logits


def _replicated(forward, tp: int):
    """Tensor parallelism leaves the same activations on every rank: one forward, then the
    ranks' outputs compared (bitwise: the all-reduce hands every rank the same sums)."""
    import torch
    import torch.distributed as dist

    out = forward().float()
    finite = bool(torch.isfinite(out).all())
    mine = out.flatten()[:: max(1, out.numel() // 4096)].contiguous()
    everyone = [torch.empty_like(mine) for _ in range(tp)]
    dist.all_gather(everyone, mine)
    same = all(torch.equal(everyone[0], t) for t in everyone[1:])
    ok = finite and same
    return ok, (
        f"tp={tp}: outputs {'identical' if same else 'DIFFER'} across ranks, {'finite' if finite else 'NOT FINITE'}"
    )


@hookimpl
def tensorforge_measure_register_builders(register):
    from tf_transformer.sdpa_torch import SdpaTorch

    register(TransformerTorch())
    register(SdpaTorch())
