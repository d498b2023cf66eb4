"""phase=train: one training step of the transformer (pre-norm sequential blocks, fused attention):
`grad_accum` micro-steps of the forward (the prefill's operators over batch x seq tokens) and its
backward, then the parameter-side operators of tensorforge.Training (fp32 masters, accumulation,
optimizer) over all the weights at once.

The backward starts from a given gradient of the output (the logits, or the last hidden state
without an LM head): the loss is not modelled. Per layer, last layer first:
  mlp_down_grad_input / _grad_weight   dA = dY W, dW = dY^T A   (as every projection)
  mlp_act_grad                         the activation's derivative: reads dY and the up projection
  mlp_up_grad_input / _grad_weight
  norm_mlp_grad                        reads x, dY, the norm weight; writes dX and the weight's gradient
  residual_mlp_grad                    the residual stream's two gradients added (autograd's sum)
  o_proj_grad_input / _grad_weight
  attention_grad                       FlashAttention's backward (AttentionBackwardProblem: S and P
                                       recomputed on chip, 2.5x the forward's FLOPs)
  rope_grad                            the rotation backwards, and dq, dk, dv joined into dQKV
  qkv_proj_grad_input / _grad_weight
  norm_attn_grad, residual_attn_grad
and before the layers the LM head's and the final norm's. Norms, activations, RoPE and the sums are
memory-bound StreamProblems. What the step keeps for the backward is `memory(p)`'s activations.
"""

import attrs

from tensorforge import DTYPE_BYTES, AttentionBackwardProblem, Operator, Tensor, Training

from tf_transformer.streams import stream as _stream

# Vector FLOPs per element of the backward passes (why: counted from the usual implementations;
# lower than a kernel needs is safe for the bound).
NORM_GRAD_FLOPS = {"rmsnorm": 8, "layernorm": 12}  # dX from x, dY, weight, rstd; the weight's gradient
ACT_GRAD_FLOPS = {"gated": 8, "gelu": 12, "relu": 1}  # silu' and two muls; tanh-gelu's derivative; a select
ROPE_FLOPS = 3
WEIGHTS = "weights"  # the parameter-side operators' name for all the weights together


def check(p) -> None:
    """ValueError for what phase=train does not model (one line, naming the field)."""
    Training.check(p, "prefill")
    if p.phase != "train":
        return
    unsupported = [
        (p.context, f"context={p.context} (phase=train processes whole sequences, no KV cache)"),
        (p.block != "sequential", f"block={p.block}"),
        (p.post_norm, "post_norm=true"),
        (p.attention != "sdpa", f"attention={p.attention}"),
        (getattr(p, "impl", "tensorforge") != "tensorforge", f"impl={getattr(p, 'impl', '')}"),
        (p.tp > 1 or p.pp > 1, f"tp={p.tp}, pp={p.pp}"),
        (getattr(p, "logits", "all") != "all", f"logits={getattr(p, 'logits', '')}"),
    ]
    for bad, what in unsupported:
        if bad:
            raise ValueError(
                f"phase=train models pre-norm sequential blocks with fused attention on one device, not {what}"
            )


def weight_numels(p) -> list[int]:
    """Elements of every weight tensor the step updates, in the builder's order."""
    up = 2 * p.intermediate if p.mlp == "gated" else p.intermediate
    per_layer = [
        (p.heads + 2 * p.kv_heads) * p.head_dim * p.hidden,
        p.hidden * p.heads * p.head_dim,
        up * p.hidden,
        p.hidden * p.intermediate,
        p.hidden,
        p.hidden,
    ]
    out = per_layer * p.layers
    if p.final_norm:
        out.append(p.hidden)
    if p.with_lm_head:
        out.append(p.vocab * p.hidden)
    return out


def _matmul(name, m, n, k, p, a, b, c, count):
    from tensorforge import MatmulProblem

    e = DTYPE_BYTES[p.dtype]
    return Operator(
        name,
        MatmulProblem(
            batch=1,
            m=m,
            n=n,
            k=k,
            math_mode=p.math_mode,
            a_elem_bytes=e,
            b_elem_bytes=e,
            c_elem_bytes=e,
            a=Tensor(a, m * k * e),
            b=Tensor(b, k * n * e),
            c=Tensor(c, m * n * e),
        ),
        count,
    )


def _linear_grads(name, tokens, n, k, p, dy, x, w, count):
    """Gradients of y = x @ W^T (x: tokens x k, W: n x k): dX = dY W and dW = dY^T x."""
    return [
        _matmul(f"{name}_grad_input", tokens, k, n, p, dy, w, f"d_{x}", count),
        _matmul(f"{name}_grad_weight", n, k, tokens, p, dy, x, f"d{w}", count),
    ]


def backward_operators(p) -> list[Operator]:
    """The backward of one micro-step, in execution order (counts: layers x grad_accum)."""
    e, dt, N = DTYPE_BYTES[p.dtype], p.dtype, p.grad_accum
    L = p.layers * N
    T = p.batch * p.seq
    D, Hd, H, KV, I = p.hidden, p.head_dim, p.heads, p.kv_heads, p.intermediate
    up = 2 * I if p.mlp == "gated" else I
    act = lambda width: T * width * e  # noqa: E731

    def norm_grad(name, dy, count):
        return _stream(
            f"{name}_grad",
            NORM_GRAD_FLOPS[p.norm] * T * D,
            [("x", act(D)), (dy, act(D)), (f"{name}_w", D * e)],
            [("d_x_norm" if name != "norm_final" else "d_x", act(D)), (f"d{name}_w", D * e)],
            count,
            dt,
            T,
        )

    def residual_grad(name):  # the stream's two gradients added
        return _stream(f"{name}_grad", T * D, [("d_x", act(D)), ("d_x_norm", act(D))], [("d_x", act(D))], L, dt)

    ops = []
    if p.with_lm_head:
        head_in = "h_final" if p.final_norm else "x"
        ops += _linear_grads("lm_head", T, p.vocab, D, p, "d_logits", head_in, "w_lm_head", N)
        top = f"d_{head_in}"
    else:
        top = "d_h_final" if p.final_norm else "d_x"
    if p.final_norm:
        ops.append(norm_grad("norm_final", top, N))
    ops += _linear_grads("mlp_down", T, D, I, p, "d_x", "mlp_act", "w_down", L)
    ops.append(
        _stream(
            "mlp_act_grad",
            ACT_GRAD_FLOPS[p.mlp] * T * I,
            [("d_mlp_act", act(I)), ("up", act(up))],
            [("d_up", act(up))],
            L,
            dt,
            0 if p.mlp == "relu" else T * I,
        )
    )
    ops += _linear_grads("mlp_up", T, up, D, p, "d_up", "h_mlp", "w_up", L)
    ops += [norm_grad("norm_mlp", "d_h_mlp", L), residual_grad("residual_mlp")]
    ops += _linear_grads("o_proj", T, D, H * Hd, p, "d_x", "attn", "w_o", L)
    q_bytes, kv_bytes = T * H * Hd * e, T * KV * Hd * e
    attention = AttentionBackwardProblem(
        batch=p.batch,
        heads=H,
        kv_heads=KV,
        q_len=p.seq,
        kv_len=p.seq,
        head_dim=Hd,
        causal=p.causal,
        math_mode=p.math_mode,
        elem_bytes=e,
        q=Tensor("qkv", q_bytes),
        k=Tensor("qkv", kv_bytes),
        v=Tensor("qkv", kv_bytes),
        o=Tensor("attn", q_bytes),
        do=Tensor("d_attn", q_bytes),
        dq=Tensor("d_qkv", q_bytes),
        dk=Tensor("d_qkv", kv_bytes),
        dv=Tensor("d_qkv", kv_bytes),
    )
    ops.append(Operator("attention_grad", attention, L))
    if p.rope:  # the rotated share of dq and dk turned back
        dims = p.rope_dims or Hd
        rot = (q_bytes + kv_bytes) * dims // Hd
        ops.append(_stream("rope_grad", ROPE_FLOPS * T * (H + KV) * dims, [("d_qkv", rot)], [("d_qkv", rot)], L, dt))
    ops += _linear_grads("qkv_proj", T, (H + 2 * KV) * Hd, D, p, "d_qkv", "h_attn", "w_qkv", L)
    ops += [norm_grad("norm_attn", "d_h_attn", L), residual_grad("residual_attn")]
    return ops


def operators(p, forward: tuple[Operator, ...]) -> tuple[Operator, ...]:
    """The step: the weights' casts, `grad_accum` forwards and backwards, the parameter side."""
    t = Training.of(p)
    n = p.grad_accum
    weights = {WEIGHTS: sum(weight_numels(p))}
    fwd = [Operator(op.name, op.problem, op.count * n) for op in forward]
    return (*t.cast_weights(weights), *fwd, *backward_operators(p), *t.update_operators(weights))


def implementation(p) -> dict:
    """How torch_train.py runs each backward operator (what the estimate charges): each projection's
    gradient one matmul (dX = dY @ W on the weight as stored; dW = dY^T @ X, the transposed view),
    the norms' backward PyTorch's (the input's gradient and a reduction for the weight's: 2
    kernels), the activation's autograd's (gated: two muls, silu's backward and the cat that joins
    the halves' gradients: 4 kernels over ~2.6x the compulsory bytes), attention SDPA's backward
    (FlashAttention-2: 4 kernels and memsets, 6 with grouped KV heads; an H200 trace counted them),
    RoPE's autograd backward (per rotated tensor a mul per term, the neg and the slices' zero-fill
    and copies, the adds, over ~5x the bytes; then one copy joining dq, dk, dv: 21 in all), the
    residual sums one add each. The kernel counts are those an H200 trace (torch 2.11) showed."""
    from tensorforge import Implementation as Impl

    D, Hd, H, KV, I = p.hidden, p.head_dim, p.heads, p.kv_heads, p.intermediate
    up = 2 * I if p.mlp == "gated" else I

    def grads(name, n, k):  # y = x @ W^T, W: n x k
        return {
            f"{name}_grad_input": Impl(kernels=1, leading_dims=(n, k, k)),
            f"{name}_grad_weight": Impl(kernels=1, leading_dims=(n, k, k)),
        }

    dims = p.rope_dims or Hd
    table = {
        **grads("qkv_proj", (H + 2 * KV) * Hd, D),
        **grads("o_proj", D, H * Hd),
        **grads("mlp_up", up, D),
        **grads("mlp_down", D, I),
        **grads("lm_head", p.vocab or 1, D),
        "norm_attn_grad": Impl(kernels=2, pattern="norm"),
        "norm_mlp_grad": Impl(kernels=2, pattern="norm"),
        "norm_final_grad": Impl(kernels=2, pattern="norm"),
        "residual_attn_grad": Impl(kernels=1, pattern="elementwise"),
        "residual_mlp_grad": Impl(kernels=1, pattern="elementwise"),
        "mlp_act_grad": Impl(
            kernels=4 if p.mlp == "gated" else 1,
            pattern="strided" if p.mlp == "gated" else "elementwise",
            traffic_factor=2.6 if p.mlp == "gated" else 1.0,
        ),
        "rope_grad": Impl(
            kernels=21,
            pattern="strided",
            # + the copy joining dq, dk, dv into dQKV: (H + 2 KV) Hd read and written per token
            traffic_factor=5.0 + (H + 2 * KV) * Hd / ((H + KV) * dims),
        ),
    }
    e = DTYPE_BYTES[p.dtype]
    join = 2 * p.batch * p.seq * (H + 2 * KV) * Hd * e  # without RoPE the join is attention's
    # SDPA's FlashAttention backward on an H200 (torch 2.11): dQ's accumulator zeroed, the dO*O
    # rowsum, the main kernel, dQ converted; grouped KV heads add the sums of dK and dV over groups
    table["attention_grad"] = Impl(
        kernels=4 + (2 if KV < H else 0),
        layout_copy_bytes=0 if p.rope else join,
        layout_copy_kernels=0 if p.rope else 1,
    )
    # every one of them runs inside autograd's backward (the Functions' backwards, autograd.grad
    # over the Ranged graphs), so the engine issues their kernels
    table = {name: attrs.evolve(impl, issued_by="autograd") for name, impl in table.items()}
    return table | Training.of(p).update_implementations(weight_numels(p))


def activation_bytes(p) -> int:
    """What the step's autograd graph keeps for the backward per micro-step (the builder's): per
    layer the layer input, the two norms' outputs, QKV, the rotated q and k, SDPA's output and its
    token-major copy (and log-sum-exp), the stream after attention, the up projection, the gated
    activation's silu and its output; then the final norm's input and output, and the logits."""
    e = DTYPE_BYTES[p.dtype]
    T = p.batch * p.seq
    D, Hd, H, KV, I = p.hidden, p.head_dim, p.heads, p.kv_heads, p.intermediate
    up = 2 * I if p.mlp == "gated" else I
    rotated = (H + KV) * Hd if p.rope else 0
    widths = 4 * D + (H + 2 * KV) * Hd + rotated + 2 * H * Hd + up + I + (I if p.mlp == "gated" else 0)
    per_layer = T * widths * e + p.batch * H * p.seq * 4  # + the fp32 log-sum-exp
    final = (T * D * e if p.final_norm else 0) + (T * D * e if p.with_lm_head else 0)
    logits = T * p.vocab * e if p.with_lm_head else 0
    return p.layers * per_layer + final + logits


def memory(p) -> dict[str, int]:
    """Device memory of the step at its peak, by part: the start of the last micro-step's backward
    (the weights' compute copies and everything saved for the backward, the earlier micro-steps'
    accumulated gradients, the MLP's gradients in flight) or its end (every weight's gradient, with
    accumulation the accumulator beside it; copies and activations freed), whichever is
    larger."""
    t = Training.of(p)
    e, mb = DTYPE_BYTES[p.dtype], t.master_bytes
    P = sum(weight_numels(p))
    T = p.batch * p.seq
    I = p.intermediate
    up = 2 * I if p.mlp == "gated" else I
    out_width = p.vocab if p.with_lm_head else p.hidden
    base = {
        "parameters": P * mb,
        "optimizer_state": t.state_bytes(P),
        "inputs": p.grad_accum * T * (p.hidden + out_width) * e,  # x and the output's gradient per micro-step
    }
    start = {
        "weight_copies": P * e if t.mixed_precision else 0,
        "activations": activation_bytes(p),
        "gradients": P * mb if p.grad_accum > 1 else 0,
        "transient": T * (up + I + 2 * p.hidden) * e,
    }
    # the weights' gradients: in the master precision (with accumulation the accumulator too),
    # and under mixed precision their compute-dtype originals, all cast at once when the last is done
    end = {
        "weight_copies": 0,
        "activations": 0,
        "gradients": P * mb * (2 if p.grad_accum > 1 else 1) + (P * e if t.mixed_precision else 0),
        "transient": 0,
    }
    return {**base, **(start if sum(start.values()) >= sum(end.values()) else end)}
