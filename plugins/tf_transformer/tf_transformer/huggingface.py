"""impl=huggingface: the op sequence of transformers' eager modeling code where it differs from
the project's builder, so a model written the Hugging Face way is estimated (and measured) as it
runs, not as a fused rewrite of it would.

  mlp_act (gelu)  gelu_new (NewGELUActivation, GPT-2's activation_function): eight elementwise
                  ops, 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))), each a
                  kernel of its own reading one or two intermediate-width tensors and writing one
                  (10 reads and 8 writes where a fused tanh-GELU does 1 and 1: 9x its bytes)
  attn_scale      a division by a scalar torch.full (GPT-2: scale_attn_weights): two kernels,
                  and the division runs PyTorch's non-vectorised elementwise_kernel<128, 4> (a
                  0-dim device tensor is a broadcast operand), the strided copies' kernel and rate
  attn_mask       torch.where against a scalar torch.full of the dtype's minimum and the
                  broadcast causal mask: two kernels, likewise non-vectorised
Evidence: a torch.profiler trace of this code's GPT-2 (fp16, batch 8, 1024 tokens) on an H200
(benchmarks/whole_model.py --profile): 73 elementwise_kernel<128, 4> calls, 7.2 ms of the 24.2 ms
forward, at ~1.3 TB/s where the vectorised adds of the same forward reach ~4 TB/s.

Why it matters: at GPT-2's sizes the eight GELU passes over the 4 x hidden activations cost about
as much DRAM traffic as the MLP's GEMMs move, and at small batches every extra kernel is a host
dispatch the device waits for.
"""

import math

GELU_NEW_KERNELS = 8
GELU_NEW_TRAFFIC = 9.0  # (10 reads + 8 writes) / (1 read + 1 write)


def implementation(p, table: dict, eager_names: tuple[str, str]) -> dict:
    """The project's table with the Hugging Face differences (module docstring)."""
    from tensorforge import Implementation as Impl

    out = dict(table)
    if p.mlp == "gelu":
        out["mlp_act"] = Impl(kernels=GELU_NEW_KERNELS, pattern="elementwise", traffic_factor=GELU_NEW_TRAFFIC)
    if p.attention == "eager":
        for name in eager_names:
            if name in out:
                out[name] = Impl(kernels=out[name].kernels + 1, pattern="strided")
    return out


def gelu_new(torch, x):
    """transformers.activations.NewGELUActivation, as it runs eagerly."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def scale(torch, scores, head_dim: int):
    """GPT-2's eager scaling: a division by a scalar tensor made on the device."""
    return scores / torch.full([], head_dim**0.5, dtype=scores.dtype, device=scores.device)


def mask(torch, causal, scores):
    """GPT-2's eager causal mask: torch.where against a scalar tensor of the dtype's minimum."""
    value = torch.full([], torch.finfo(scores.dtype).min, dtype=scores.dtype, device=scores.device)
    return torch.where(causal, scores, value)
