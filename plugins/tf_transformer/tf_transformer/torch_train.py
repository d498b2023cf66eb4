"""phase=train on PyTorch: one training step of the transformer through autograd
(tensorforge_measure.TrainStep), each Core operator and each of its backward operators in a range
of its own (tf_transformer.training names them), so a kernel trace attributes the backward too.

How the ranges reach the backward, which autograd runs on its own thread per device:
- projections are a custom Function whose backward computes dX = dY @ W and dW = dY^T @ X (what
  F.linear's backward runs), each in its range;
- norms, RoPE, attention and the activation run inside `Ranged`: its forward runs the ordinary
  PyTorch code on detached inputs with autograd on and keeps that small graph; its backward runs
  autograd.grad over it inside `<name>_grad`, so the kernels are autograd's own, in one range;
- where the residual stream forks (into a norm and the skip), `Fork` hands out the stream twice
  and its backward adds the two gradients (autograd's sum) inside `residual_*_grad`.
Weights are drawn as in torch_builder.py (a seeded generator, scaled to keep activations finite);
every micro-step has its own input and its own gradient of the output (no loss is computed).
Registered through torch_builder.py; the Core side never imports this module."""

from tensorforge import Training
from tensorforge_measure import TrainStep, no_inference, operator_range, torch_dtype
from tf_transformer.training import weight_numels

SEED = 20260101
_FUNCTIONS: dict = {}


def functions(torch):
    """(Linear, Ranged, Fork, Residual): the custom autograd Functions, made on first use."""
    if _FUNCTIONS:
        return _FUNCTIONS["all"]
    import torch.nn.functional as F

    class Linear(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, name):
            ctx.save_for_backward(x, w)
            ctx.name = name
            with operator_range(name):
                return F.linear(x, w)

        @staticmethod
        def backward(ctx, dy):
            x, w = ctx.saved_tensors
            dx = dw = None
            if ctx.needs_input_grad[0]:
                with operator_range(f"{ctx.name}_grad_input"):
                    dx = torch.matmul(dy, w)
            if ctx.needs_input_grad[1]:
                with operator_range(f"{ctx.name}_grad_weight"):
                    dw = torch.matmul(dy.reshape(-1, dy.shape[-1]).mT, x.reshape(-1, x.shape[-1]))
            return dx, dw, None

    class Ranged(torch.autograd.Function):
        @staticmethod
        def forward(ctx, name, fn, *inputs):
            ctx.name = name
            with torch.enable_grad():
                inner = [t.detach().requires_grad_(t.requires_grad) if torch.is_tensor(t) else t for t in inputs]
                with operator_range(name):
                    out = fn(*inner)
            outs = out if isinstance(out, tuple) else (out,)
            ctx.inner = (inner, outs)
            detached = tuple(o.detach() for o in outs)
            return detached if isinstance(out, tuple) else detached[0]

        @staticmethod
        def backward(ctx, *grads):
            inner, outs = ctx.inner
            ctx.inner = None
            wanted = [i for i, t in enumerate(inner) if torch.is_tensor(t) and t.requires_grad]
            with operator_range(f"{ctx.name}_grad"):
                got = torch.autograd.grad(outs, [inner[i] for i in wanted], grads, allow_unused=True)
            result = [None] * len(inner)
            for i, g in zip(wanted, got):
                result[i] = g
            return (None, None, *result)

    class Fork(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, name):
            ctx.name = name
            return x.view_as(x), x.view_as(x)

        @staticmethod
        def backward(ctx, a, b):
            with operator_range(ctx.name):
                return a + b, None

    class Residual(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, name):
            with operator_range(name):
                return x + y

        @staticmethod
        def backward(ctx, g):
            return g, g, None

    _FUNCTIONS["all"] = (Linear, Ranged, Fork, Residual)
    return _FUNCTIONS["all"]


def build_train(p, device):
    import torch
    import torch.nn.functional as F

    training = Training.of(p)
    Linear, Ranged, Fork, Residual = functions(torch)
    dtype = torch_dtype(p.dtype, "this PyTorch transformer")
    master = torch.float32 if training.mixed_precision else dtype
    B, S, D, Hd = p.batch, p.seq, p.hidden, p.head_dim
    H, KV, I = p.heads, p.kv_heads, p.intermediate
    up_width = 2 * I if p.mlp == "gated" else I
    gen = torch.Generator(device=device).manual_seed(SEED)
    out_width = p.vocab if p.with_lm_head else D

    with no_inference(torch):

        def rand(*shape, s=D**-0.5, dt=master):
            return torch.randn(*shape, device=device, dtype=dt, generator=gen) * s

        masters = []
        for _ in range(p.layers):  # the order of training.weight_numels
            masters += [rand((H + 2 * KV) * Hd, D), rand(D, H * Hd), rand(up_width, D), rand(D, I)]
            masters += [torch.ones(D, device=device, dtype=master) for _ in range(2)]
        if p.final_norm:
            masters.append(torch.ones(D, device=device, dtype=master))
        if p.with_lm_head:
            masters.append(rand(p.vocab, D))
        assert [m.numel() for m in masters] == weight_numels(p)
        for m in masters:
            m.requires_grad_()
        inputs = [rand(B, S, D, s=1.0, dt=dtype).requires_grad_() for _ in range(p.grad_accum)]
        grad_out = [rand(B, S, out_width, s=1.0, dt=dtype) for _ in range(p.grad_accum)]
        rd = p.rope_dims or Hd
        pos = torch.arange(0, S, device=device, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(0, rd, 2, device=device, dtype=torch.float32) / rd))
        angles = torch.outer(pos, inv)
        cos = torch.cat([angles.cos(), angles.cos()], -1).to(dtype)[None, None]
        sin = torch.cat([angles.sin(), angles.sin()], -1).to(dtype)[None, None]
    step = TrainStep(torch, training, masters, device)

    def norm(t, w):
        return F.rms_norm(t, (D,), w) if p.norm == "rmsnorm" else F.layer_norm(t, (D,), w)

    def rotate(t):
        half = t.shape[-1] // 2
        return t * cos + torch.cat([-t[..., half:], t[..., :half]], -1) * sin

    def split(qkv):
        q, k, v = qkv.split([H * Hd, KV * Hd, KV * Hd], dim=-1)
        return (
            q.view(B, S, H, Hd).transpose(1, 2),
            k.view(B, S, KV, Hd).transpose(1, 2),
            v.view(B, S, KV, Hd).transpose(1, 2),
        )

    def rope(qkv):  # the split joins RoPE: its backward joins dq, dk, dv into dQKV in this range
        q, k, v = split(qkv)
        if rd == Hd:
            return rotate(q), rotate(k), v
        return torch.cat([rotate(q[..., :rd]), q[..., rd:]], -1), torch.cat([rotate(k[..., :rd]), k[..., rd:]], -1), v

    def attend(q, k, v):
        try:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=p.causal, enable_gqa=H != KV)
        except TypeError:  # PyTorch without enable_gqa: K/V expanded to every query head
            k, v = (t.repeat_interleave(H // KV, dim=1) for t in (k, v))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=p.causal)
        return o.transpose(1, 2).reshape(B, S, H * Hd)

    def activation(up):
        if p.mlp == "gated":
            gate, lin = up.chunk(2, dim=-1)
            return F.silu(gate) * lin
        return F.relu(up) if p.mlp == "relu" else F.gelu(up, approximate="tanh")

    def micro(i, weights):
        x = inputs[i]
        for layer in range(p.layers):
            w_qkv, w_o, w_up, w_down, n1, n2 = weights[6 * layer : 6 * layer + 6]
            into_norm, skip = Fork.apply(x, "residual_attn_grad")
            h = Ranged.apply("norm_attn", norm, into_norm, n1)
            qkv = Linear.apply(h, w_qkv, "qkv_proj")
            if p.rope:
                q, k, v = Ranged.apply("rope", rope, qkv)
                o = Ranged.apply("attention", attend, q, k, v)
            else:
                o = Ranged.apply("attention", lambda t: attend(*split(t)), qkv)
            x = Residual.apply(skip, Linear.apply(o, w_o, "o_proj"), "residual_attn")
            into_norm, skip = Fork.apply(x, "residual_mlp_grad")
            h = Ranged.apply("norm_mlp", norm, into_norm, n2)
            a = Ranged.apply("mlp_act", activation, Linear.apply(h, w_up, "mlp_up"))
            x = Residual.apply(skip, Linear.apply(a, w_down, "mlp_down"), "residual_mlp")
        rest = list(weights[6 * p.layers :])
        if p.final_norm:
            x = Ranged.apply("norm_final", norm, x, rest.pop(0))
        if p.with_lm_head:
            x = Linear.apply(x, rest.pop(0), "lm_head")
        return (x,), (grad_out[i],), (inputs[i],)

    def run():
        step(micro)

    run.step = step  # what tests look at (gradients, optimizer state, each micro-step's data)
    run.step_inputs = list(zip(inputs, grad_out))
    return run
