"""Transformer decoder blocks decomposed into operators, for prefill and decode.

Per layer: norm -> QKV projection -> (RoPE) -> [decode: append new K/V to the cache] ->
fused attention (FlashAttention-style, causal, grouped-query) -> output projection -> residual
-> norm -> MLP up (gated: gate and up together) -> activation (gated: silu(g) * u) -> MLP down
-> residual. Then a final norm and, when `vocab` > 0, the LM head.

Tensor names tie producers to consumers, so the model can keep activations that fit in the
shared cache out of DRAM; weights and the KV cache always come from DRAM.

`tp` and `pp` split the model over several devices (parallel.py): the operators are then one
rank's share, with the all-reduces (and pipeline sends) as operators of their own.
"""

from pathlib import Path

import attrs

from tensorforge.errors import TensorForgeError
from tensorforge.hookspecs import hookimpl
from tensorforge.params import build_params
from tensorforge.precision import DTYPE_BYTES, parse_dtype, parse_math_mode
from tensorforge.problems import AttentionProblem, MatmulProblem, Operator, StreamProblem, Tensor
from tensorforge.workload import WorkloadKind

from . import parallel
from .hf_config import load_config

# Vector-unit FLOPs per element (why: counted from the usual implementations).
NORM_FLOPS = {"rmsnorm": 4, "layernorm": 7}   # rms: sq, sum, scale, weight; ln adds mean, sub, bias
ACT_FLOPS = {"gated": 5, "gelu": 8}           # silu(x)*y ~ exp, add, div, mul, mul; tanh-gelu ~ 8
ROPE_FLOPS = 3                                # x*cos + rotate(x)*sin per element


def _pos(**kw):
    return attrs.field(metadata={"min": 1}, **kw)


@attrs.frozen
class TransformerParams:
    hidden: int = _pos()
    layers: int = _pos()
    heads: int = _pos()
    kv_heads: int = attrs.field(default=None, metadata={"min": 1})
    head_dim: int = attrs.field(default=None, metadata={"min": 1})
    intermediate: int = attrs.field(default=None, metadata={"min": 1})
    mlp: str = attrs.field(default="gated", metadata={"choices": ("gated", "gelu")})
    norm: str = attrs.field(default="rmsnorm", metadata={"choices": ("rmsnorm", "layernorm")})
    rope: bool = True
    batch: int = _pos(default=1)
    seq: int = _pos(default=1)
    phase: str = attrs.field(default="prefill", metadata={"choices": ("prefill", "decode")})
    context: int = attrs.field(default=0, metadata={"min": 0})
    causal: bool = True
    vocab: int = attrs.field(default=0, metadata={"min": 0})
    dtype: str = attrs.field(default="bf16", converter=parse_dtype)
    math_mode: str = attrs.field(default=None)
    config: str = attrs.field(default=None)
    # tensor- and pipeline-parallel degrees (parallel.py); tp * pp devices in all
    tp: int = attrs.field(default=1, metadata={"min": 1})
    pp: int = attrs.field(default=1, metadata={"min": 1})

    def __attrs_post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)
        set_("math_mode", parse_math_mode(self.math_mode, self.dtype))
        if self.kv_heads is None:
            set_("kv_heads", self.heads)
        if self.head_dim is None:
            if self.hidden % self.heads:
                raise ValueError(f"heads={self.heads} does not divide hidden={self.hidden}; give head_dim")
            set_("head_dim", self.hidden // self.heads)
        if self.intermediate is None:
            set_("intermediate", 4 * self.hidden)
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads={self.kv_heads} must divide heads={self.heads}")
        if self.phase == "prefill" and self.context:
            raise ValueError("context (tokens already in the KV cache) applies to phase=decode")
        if self.phase == "decode" and self.context < 1:
            raise ValueError("phase=decode needs context >= 1 (tokens already in the KV cache)")
        parallel.check(self)

    @property
    def kv_len(self) -> int:
        return self.context + self.seq


def _matmul(name, tokens, n, k, mode, e, a, w, c, count):
    return Operator(name, MatmulProblem(
        batch=1, m=tokens, n=n, k=k, math_mode=mode, a_elem_bytes=e, b_elem_bytes=e, c_elem_bytes=e,
        a=Tensor(a, tokens * k * e), b=Tensor(w, k * n * e), c=Tensor(c, tokens * n * e)), count)


def _stream(name, flops, reads, writes, count=1):
    return Operator(name, StreamProblem(
        flops=float(flops), read_tensors=tuple(Tensor(n, b) for n, b in reads),
        write_tensors=tuple(Tensor(n, b) for n, b in writes)), count)


class Transformer(WorkloadKind):
    name = "transformer"
    description = ("decoder-only transformer (prefill or decode; GQA; gated or GELU MLP); "
                   "config=path/to/config.json reads a Hugging Face config")
    params_type = TransformerParams
    _small = {"hidden": 2048, "layers": 4, "heads": 16, "kv_heads": 4, "intermediate": 5632,
              "mlp": "gated", "norm": "rmsnorm", "dtype": "bf16"}
    presets = {
        "transformer_prefill": {**_small, "batch": 4, "seq": 2048, "phase": "prefill"},
        "transformer_decode": {**_small, "batch": 8, "seq": 1, "phase": "decode", "context": 2048},
        "transformer_gpt2_prefill": {"hidden": 768, "layers": 12, "heads": 12, "mlp": "gelu",
                                     "norm": "layernorm", "rope": False, "batch": 8, "seq": 1024,
                                     "dtype": "fp16"},
    }
    default_suite = ("transformer_prefill", "transformer_decode")

    def parse(self, fields, base_dir=None):
        fields = dict(fields)
        config = fields.get("config")
        if config:
            path = Path(str(config)).expanduser()
            if not path.is_absolute() and base_dir is not None:
                path = Path(base_dir) / path
            if path.is_dir():
                path = path / "config.json"
            merged = load_config(path)
            merged.update({k: v for k, v in fields.items() if k != "config"})
            merged["config"] = str(path)
            fields = merged
        return build_params(self.name, self.params_type, fields)

    def operators(self, p: TransformerParams):
        if p.tp == 1 and p.pp == 1:
            return self._operators(p)
        return parallel.with_collectives(p, self._operators(parallel.shard(p)))

    def _operators(self, p: TransformerParams):
        """One device's operators for an unsplit model (a rank's share once sharded)."""
        e = DTYPE_BYTES[p.dtype]
        mode, L = p.math_mode, p.layers
        T = p.batch * p.seq                      # tokens processed in this pass
        D, Hd, H, KV, I = p.hidden, p.head_dim, p.heads, p.kv_heads, p.intermediate
        q_bytes, kv_tok_bytes = T * H * Hd * e, T * KV * Hd * e
        act = lambda width: T * width * e
        up_width = 2 * I if p.mlp == "gated" else I
        ops = [
            _stream("norm_attn", NORM_FLOPS[p.norm] * T * D, [("x", act(D)), ("norm_w", D * e)],
                    [("h_attn", act(D))], L),
            _matmul("qkv_proj", T, (H + 2 * KV) * Hd, D, mode, e, "h_attn", "w_qkv", "qkv", L),
        ]
        if p.rope:
            rot = q_bytes + kv_tok_bytes
            ops.append(_stream("rope", ROPE_FLOPS * (T * (H + KV) * Hd), [("qkv", rot)], [("qkv", rot)], L))
        if p.phase == "decode":
            cache_bytes = p.batch * KV * p.kv_len * Hd * e
            ops.append(_stream("kv_append", 0, [("qkv", 2 * kv_tok_bytes)],
                               [("kv_cache_new", 2 * kv_tok_bytes)], L))
            k_t, v_t = Tensor("k_cache", cache_bytes), Tensor("v_cache", cache_bytes)
        else:
            k_t, v_t = Tensor("qkv", kv_tok_bytes), Tensor("qkv", kv_tok_bytes)
        attention = AttentionProblem(
            batch=p.batch, heads=H, kv_heads=KV, q_len=p.seq, kv_len=p.kv_len, head_dim=Hd,
            causal=p.causal, math_mode=mode, elem_bytes=e,
            q=Tensor("qkv", q_bytes), k=k_t, v=v_t, o=Tensor("attn", q_bytes))
        ops += [
            Operator("attention", attention, L),
            _matmul("o_proj", T, D, H * Hd, mode, e, "attn", "w_o", "attn_out", L),
            _stream("residual_attn", T * D, [("x", act(D)), ("attn_out", act(D))], [("x", act(D))], L),
            _stream("norm_mlp", NORM_FLOPS[p.norm] * T * D, [("x", act(D)), ("norm_w", D * e)],
                    [("h_mlp", act(D))], L),
            _matmul("mlp_up", T, up_width, D, mode, e, "h_mlp", "w_up", "up", L),
            _stream("mlp_act", ACT_FLOPS[p.mlp] * T * I, [("up", act(up_width))], [("mlp_act", act(I))], L),
            _matmul("mlp_down", T, D, I, mode, e, "mlp_act", "w_down", "mlp_out", L),
            _stream("residual_mlp", T * D, [("x", act(D)), ("mlp_out", act(D))], [("x", act(D))], L),
            _stream("norm_final", NORM_FLOPS[p.norm] * T * D, [("x", act(D)), ("norm_w", D * e)],
                    [("h_final", act(D))]),
        ]
        if p.vocab:
            ops.append(_matmul("lm_head", T, p.vocab, D, mode, e, "h_final", "w_lm_head", "logits", 1))
        return tuple(ops)

    def weight_bytes(self, p: TransformerParams) -> int:
        e = DTYPE_BYTES[p.dtype]
        up = 2 * p.intermediate if p.mlp == "gated" else p.intermediate
        per_layer = (p.hidden * (p.heads + 2 * p.kv_heads) * p.head_dim + p.heads * p.head_dim * p.hidden
                     + p.hidden * up + p.intermediate * p.hidden + 2 * p.hidden)
        return (p.layers * per_layer + p.hidden + p.vocab * p.hidden) * e

    def footprint_bytes(self, p: TransformerParams) -> int:
        """Weights + KV cache + the largest few live activations (one rank's share under tp/pp)."""
        if p.tp > 1 or p.pp > 1:
            p = parallel.shard(p, layers=p.layers // p.pp)
        e = DTYPE_BYTES[p.dtype]
        T = p.batch * p.seq
        cache = 2 * p.layers * p.batch * p.kv_heads * p.kv_len * p.head_dim * e
        widths = [(p.heads + 2 * p.kv_heads) * p.head_dim,
                  2 * p.intermediate if p.mlp == "gated" else p.intermediate, p.hidden, p.hidden]
        logits = T * p.vocab * e
        return self.weight_bytes(p) + cache + T * sum(widths) * e + logits


@hookimpl
def tensorforge_register_workloads(register):
    register(Transformer())
