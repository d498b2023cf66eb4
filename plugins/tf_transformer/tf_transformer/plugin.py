"""Transformer blocks (decoders, and encoders such as BERT) decomposed into operators, for
prefill and decode.

Per layer (block=sequential, the Llama/GPT-2 layout): norm -> QKV projection -> (RoPE) ->
[decode: append new K/V to the cache] -> fused attention (FlashAttention-style, causal,
grouped-query) -> output projection -> residual -> norm -> MLP up (gated: gate and up together)
-> activation (gated: silu(g) * u; gelu; relu) -> MLP down -> residual. block=parallel (Falcon,
GPT-NeoX): attention and MLP both read the layer input, each through its own norm (parallel) or
one shared norm (parallel_shared_norm), and one residual adds both. post_norm=true (BERT, OPT-350m)
moves each norm after its residual add (the layer input feeds the QKV projection). Then a final
norm (final_norm=false for a bare block) and the LM head when the vocabulary is known
(lm_head=false leaves it out). RoPE may rotate only the first rope_dims of each head (GPT-NeoX's
rotary_pct). attention=eager replaces the fused attention by the operators Hugging Face's eager
code runs, the score matrix going to memory and back (eager.py).

Token and position embedding lookups are not modelled (a gather of one row per token: leaving
it out keeps the bound a bound). Elementwise work runs at the workload's precision, so the
target's fastest vector rate for it applies; activations' exponentials count as transcendentals.

Tensor names tie producers to consumers, so the model can keep activations that fit in the
shared cache out of DRAM; weights and the KV cache always come from DRAM. Every layer has its
own weights and cache (operators repeat `layers` times on distinct instances), and each
distinct weight has its own name, so the workload's compulsory traffic counts them all.

`tp` and `pp` split the model over several devices (parallel.py): the operators are then one
rank's share, with the all-reduces (and pipeline sends) as operators of their own.
"""

from pathlib import Path

import attrs

from tensorforge import (
    DTYPE_BYTES,
    AttentionProblem,
    MatmulProblem,
    Operator,
    TRAIN_OPTIMIZERS,
    Tensor,
    WorkloadKind,
    build_params,
    hookimpl,
    parse_dtype,
    parse_math_mode,
)
from tf_transformer import eager, huggingface, parallel, training
from tf_transformer.hf_config import load_config
from tf_transformer.streams import stream as _stream

# Vector-unit FLOPs per element (why: counted from the usual implementations).
NORM_FLOPS = {"rmsnorm": 4, "layernorm": 7}  # rms: sq, sum, scale, weight; ln adds mean, sub, bias
ACT_FLOPS = {"gated": 5, "gelu": 8, "relu": 1}  # silu(x)*y ~ exp, add, div, mul, mul; tanh-gelu ~ 8; max
ROPE_FLOPS = 3  # x*cos + rotate(x)*sin per element
BLOCKS = ("sequential", "parallel", "parallel_shared_norm")


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
    mlp: str = attrs.field(default="gated", metadata={"choices": ("gated", "gelu", "relu")})
    norm: str = attrs.field(default="rmsnorm", metadata={"choices": ("rmsnorm", "layernorm")})
    rope: bool = True
    batch: int = _pos(default=1)
    seq: int = _pos(default=1)
    # train: a training step (forward over whole sequences, backward, optimizer; training.py)
    phase: str = attrs.field(default="prefill", metadata={"choices": ("prefill", "decode", "train")})
    context: int = attrs.field(default=0, metadata={"min": 0})
    causal: bool = True
    vocab: int = attrs.field(default=0, metadata={"min": 0})
    dtype: str = attrs.field(default="bf16", converter=parse_dtype)
    math_mode: str = attrs.field(default=None)
    config: str = attrs.field(default=None)
    block: str = attrs.field(default="sequential", metadata={"choices": BLOCKS})
    final_norm: bool = True
    lm_head: bool = attrs.field(default=None)  # None: included when `vocab` is known
    max_positions: int = attrs.field(default=0, metadata={"min": 0})  # 0: unknown
    window: int = attrs.field(default=0, metadata={"min": 0})  # sliding window; 0: none
    # tensor- and pipeline-parallel degrees (parallel.py); tp * pp devices in all
    tp: int = attrs.field(default=1, metadata={"min": 1})
    pp: int = attrs.field(default=1, metadata={"min": 1})
    # sdpa: one fused attention kernel; eager: Hugging Face's eager attention (eager.py)
    attention: str = attrs.field(default="sdpa", metadata={"choices": ("sdpa", "eager")})
    # whose eager code runs the model: the project's builder, or transformers' modeling code
    # (gelu_new as eight ops, scalar fills in eager attention: huggingface.py)
    impl: str = attrs.field(default="tensorforge", metadata={"choices": ("tensorforge", "huggingface")})
    post_norm: bool = False  # norms after the residual adds (BERT); False: before each branch
    rope_dims: int = attrs.field(default=0, metadata={"min": 0})  # dims RoPE rotates per head; 0: all
    # the LM head over every position (all) or the last of each sequence (last: what a serving
    # engine's prefill computes, the next token's logits; `serving`)
    logits: str = attrs.field(default="all", metadata={"choices": ("all", "last")})
    # phase=train (training.py): the optimizer, micro-steps per optimizer step, fp32 master weights
    optimizer: str = attrs.field(default="none", metadata={"choices": TRAIN_OPTIMIZERS})
    grad_accum: int = attrs.field(default=1, metadata={"min": 1})
    mixed_precision: bool = False

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
        origin = f" (from {self.config})" if self.config else ""
        if self.max_positions and self.kv_len > self.max_positions:
            raise ValueError(
                f"seq + context = {self.kv_len} exceeds the model's max_positions={self.max_positions}{origin}"
            )
        if self.window and self.kv_len > self.window:
            raise ValueError(
                f"seq + context = {self.kv_len} exceeds the sliding attention "
                f"window={self.window}{origin}; sliding-window attention is not modelled"
            )
        if self.lm_head and not self.vocab:
            raise ValueError("lm_head=true needs vocab (the vocabulary size)")
        if self.post_norm and self.block != "sequential":
            raise ValueError(
                f"post_norm=true (a norm after each residual add) needs block=sequential, not {self.block}"
            )
        if self.rope_dims and not self.rope:
            raise ValueError("rope_dims (the dimensions RoPE rotates) needs rope=true")
        if self.rope_dims > self.head_dim or self.rope_dims % 2:
            raise ValueError(f"rope_dims={self.rope_dims} must be even and at most head_dim={self.head_dim}")
        parallel.check(self)
        training.check(self)

    @property
    def with_lm_head(self) -> bool:
        return bool(self.vocab) if self.lm_head is None else bool(self.lm_head and self.vocab)

    @property
    def kv_len(self) -> int:
        return self.context + self.seq

    @property
    def logit_rows(self) -> int:
        """Positions the LM head runs on: every token, or the last of each sequence."""
        return self.batch if self.logits == "last" else self.batch * self.seq


def _matmul(name, tokens, n, k, mode, e, a, w, c, count):
    return Operator(
        name,
        MatmulProblem(
            batch=1,
            m=tokens,
            n=n,
            k=k,
            math_mode=mode,
            a_elem_bytes=e,
            b_elem_bytes=e,
            c_elem_bytes=e,
            a=Tensor(a, tokens * k * e),
            b=Tensor(w, k * n * e),
            c=Tensor(c, tokens * n * e),
        ),
        count,
    )


class Transformer(WorkloadKind):
    name = "transformer"
    description = (
        "transformer blocks, decoder or encoder (prefill, decode or a training step; GQA; gated, GELU or ReLU MLP; "
        "pre- or post-norm; fused or eager attention); config=path/to/config.json reads a Hugging Face config"
    )
    params_type = TransformerParams
    _small = {
        "hidden": 2048,
        "layers": 4,
        "heads": 16,
        "kv_heads": 4,
        "intermediate": 5632,
        "mlp": "gated",
        "norm": "rmsnorm",
        "dtype": "bf16",
    }
    presets = {
        "transformer_prefill": {**_small, "batch": 4, "seq": 2048, "phase": "prefill"},
        "transformer_decode": {**_small, "batch": 8, "seq": 1, "phase": "decode", "context": 2048},
        "transformer_gpt2_prefill": {
            "hidden": 768,
            "layers": 12,
            "heads": 12,
            "mlp": "gelu",
            "norm": "layernorm",
            "rope": False,
            "batch": 8,
            "seq": 1024,
            "dtype": "fp16",
        },
    }
    default_suite = ("transformer_prefill", "transformer_decode")
    model_file_field = "config"  # `predict --model PATH` reads a Hugging Face config.json

    def parse(self, fields, base_dir=None):
        fields = dict(fields)
        config = fields.get("config")
        if config:
            path = Path(str(config)).expanduser()
            if not path.is_absolute() and base_dir is not None:
                path = Path(base_dir) / path
            if _is_folder(path):
                path = path / "config.json"
            merged = load_config(path)
            merged.update({k: v for k, v in fields.items() if k != "config"})
            merged["config"] = str(path)
            fields = merged
        return build_params(self.name, self.params_type, fields)

    def estimate_class(self, p: TransformerParams) -> str:
        """decode or prefill, by the step's phase."""
        return "transformer-decode" if p.phase == "decode" else "transformer-prefill"

    def tokens(self, p: TransformerParams) -> int:
        """One step processes batch x seq tokens (the energy window's joules per token); a
        training step grad_accum times that."""
        return p.batch * p.seq * (p.grad_accum if p.phase == "train" else 1)

    def operators(self, p: TransformerParams):
        if p.phase == "train":  # the forward below is the prefill's (no KV cache)
            return training.operators(p, self._operators(p))
        if p.tp == 1 and p.pp == 1:
            return self._operators(p)
        return parallel.with_collectives(p, self._operators(parallel.shard(p)))

    def _operators(self, p: TransformerParams):
        """One device's operators for an unsplit model (a rank's share once sharded)."""
        e = DTYPE_BYTES[p.dtype]
        mode, L, dt = p.math_mode, p.layers, p.dtype
        T = p.batch * p.seq  # tokens processed in this pass
        D, Hd, H, KV, I = p.hidden, p.head_dim, p.heads, p.kv_heads, p.intermediate
        q_bytes, kv_tok_bytes = T * H * Hd * e, T * KV * Hd * e
        act = lambda width: T * width * e
        up_width = 2 * I if p.mlp == "gated" else I

        def norm(name, out, count=L):  # one rsqrt per token row
            return _stream(
                name, NORM_FLOPS[p.norm] * T * D, [("x", act(D)), (f"{name}_w", D * e)], [(out, act(D))], count, dt, T
            )

        ops = []
        if not p.post_norm:  # pre-norm: the branches read normalised copies of the layer input
            ops.append(norm("norm_attn", "h_attn"))
            if p.block == "parallel":
                ops.append(norm("norm_mlp", "h_mlp"))
        attn_in = "x" if p.post_norm else "h_attn"
        ops.append(_matmul("qkv_proj", T, (H + 2 * KV) * Hd, D, mode, e, attn_in, "w_qkv", "qkv", L))
        if p.rope:  # the rotated share of each query and key head (rope_dims of head_dim)
            dims = p.rope_dims or Hd
            rot = (q_bytes + kv_tok_bytes) * dims // Hd
            ops.append(_stream("rope", ROPE_FLOPS * (T * (H + KV) * dims), [("qkv", rot)], [("qkv", rot)], L, dt))
        if p.phase == "decode":
            cache_bytes = p.batch * KV * p.kv_len * Hd * e
            ops.append(
                _stream("kv_append", 0, [("qkv", 2 * kv_tok_bytes)], [("kv_cache_new", 2 * kv_tok_bytes)], L, dt)
            )
            k_t, v_t = Tensor("k_cache", cache_bytes), Tensor("v_cache", cache_bytes)
        else:
            k_t, v_t = Tensor("qkv", kv_tok_bytes), Tensor("qkv", kv_tok_bytes)
        q_t, o_t = Tensor("qkv", q_bytes), Tensor("attn", q_bytes)
        if p.attention == "eager":
            ops += eager.operators(p, q_t, k_t, v_t, o_t)
        else:
            attention = AttentionProblem(
                batch=p.batch,
                heads=H,
                kv_heads=KV,
                q_len=p.seq,
                kv_len=p.kv_len,
                head_dim=Hd,
                causal=p.causal,
                math_mode=mode,
                elem_bytes=e,
                q=q_t,
                k=k_t,
                v=v_t,
                o=o_t,
            )
            ops.append(Operator("attention", attention, L))
        ops.append(_matmul("o_proj", T, D, H * Hd, mode, e, "attn", "w_o", "attn_out", L))
        if p.post_norm:
            mlp_in = "x"
        else:
            mlp_in = {"sequential": "h_mlp", "parallel": "h_mlp", "parallel_shared_norm": "h_attn"}[p.block]
        if p.block == "sequential":
            ops += [
                _stream("residual_attn", T * D, [("x", act(D)), ("attn_out", act(D))], [("x", act(D))], L, dt),
                norm("norm_attn", "x") if p.post_norm else norm("norm_mlp", "h_mlp"),
            ]
        ops += [
            _matmul("mlp_up", T, up_width, D, mode, e, mlp_in, "w_up", "up", L),
            _stream(
                "mlp_act",
                ACT_FLOPS[p.mlp] * T * I,
                [("up", act(up_width))],
                [("mlp_act", act(I))],
                L,
                dt,
                0 if p.mlp == "relu" else T * I,
            ),  # one exp (silu) or tanh (gelu) per element; relu none
            _matmul("mlp_down", T, D, I, mode, e, "mlp_act", "w_down", "mlp_out", L),
        ]
        if p.block == "sequential":
            ops.append(_stream("residual_mlp", T * D, [("x", act(D)), ("mlp_out", act(D))], [("x", act(D))], L, dt))
            if p.post_norm:
                ops.append(norm("norm_mlp", "x"))
        else:
            ops.append(
                _stream(
                    "residual",
                    2 * T * D,
                    [("x", act(D)), ("attn_out", act(D)), ("mlp_out", act(D))],
                    [("x", act(D))],
                    L,
                    dt,
                )
            )
        head_in = "x"
        if p.final_norm:
            ops.append(norm("norm_final", "h_final", 1))
            head_in = "h_final"
        if p.with_lm_head:
            ops.append(_matmul("lm_head", p.logit_rows, p.vocab, D, mode, e, head_in, "w_lm_head", "logits", 1))
        return tuple(ops)

    def implementation(self, p: TransformerParams):
        """How torch_builder.py executes each operator (what the estimate charges):
        norms are one fused kernel each (F.rms_norm / F.layer_norm); each projection one
        F.linear (x @ W^T: both operands' rows run along the reduction dimension); RoPE is
        five elementwise kernels per rotated tensor (neg, cat, two muls, add) moving about five
        times the bytes a fused RoPE would, on strided views (q and k transposed), and with
        rope_dims < head_dim one more cat per tensor joining the rotated and the passed dims
        (reading and writing whole heads); the KV-cache append is one strided copy per cache;
        attention is one SDPA (FlashAttention) call, the output's transpose back to tokens a
        view (attention=eager: eager.implementation); the gated activation is two kernels (silu,
        mul) on the strided halves of the up projection; residuals one add each."""
        from tensorforge import Implementation as Impl

        D, Hd, H, KV, I = p.hidden, p.head_dim, p.heads, p.kv_heads, p.intermediate
        up_width = 2 * I if p.mlp == "gated" else I

        def linear(k, n):
            return Impl(kernels=1, leading_dims=(k, k, n))

        dims = p.rope_dims or Hd
        partial = dims < Hd  # the cat reads and writes whole heads: Hd / dims of the rotated bytes

        table = {
            "norm_attn": Impl(kernels=1, pattern="norm"),
            "qkv_proj": linear(D, (H + 2 * KV) * Hd),
            # on the transposed q/k views: strided, PyTorch's non-vectorised elementwise kernels
            "rope": Impl(
                kernels=12 if partial else 10, pattern="strided", traffic_factor=5.0 + (Hd / dims if partial else 0.0)
            ),
            "kv_append": Impl(kernels=2, pattern="copy"),
            "attention": Impl(kernels=1),
            "o_proj": linear(H * Hd, D),
            "residual_attn": Impl(kernels=1, pattern="elementwise"),
            "norm_mlp": Impl(kernels=1, pattern="norm"),
            "mlp_up": linear(D, up_width),
            "mlp_act": Impl(
                kernels=2 if p.mlp == "gated" else 1,
                # gated: silu and mul on the two halves of one projection (strided views)
                pattern="strided" if p.mlp == "gated" else "elementwise",
                traffic_factor=(5.0 / 3.0) if p.mlp == "gated" else 1.0,
            ),
            "mlp_down": linear(I, D),
            "residual_mlp": Impl(kernels=1, pattern="elementwise"),
            "norm_final": Impl(kernels=1, pattern="norm"),
            "lm_head": linear(D, p.vocab or 1),
        }
        if p.attention == "eager":  # declared for the operators one rank runs
            table.update(eager.implementation(parallel.shard(p) if p.tp > 1 else p))
        if p.phase == "train":
            table.update(training.implementation(p))
        if p.impl == "huggingface":
            table = huggingface.implementation(p, table, (eager.SCALE, eager.MASK))
        return table

    def weight_bytes(self, p: TransformerParams) -> int:
        e = DTYPE_BYTES[p.dtype]
        up = 2 * p.intermediate if p.mlp == "gated" else p.intermediate
        norms = 1 if p.block == "parallel_shared_norm" else 2
        per_layer = (
            p.hidden * (p.heads + 2 * p.kv_heads) * p.head_dim
            + p.heads * p.head_dim * p.hidden
            + p.hidden * up
            + p.intermediate * p.hidden
            + norms * p.hidden
        )
        final = p.hidden if p.final_norm else 0
        head = p.vocab * p.hidden if p.with_lm_head else 0
        return (p.layers * per_layer + final + head) * e

    def footprint_bytes(self, p: TransformerParams) -> int:
        """Weights + KV cache + the largest few live activations (one rank's share under tp/pp);
        a training step's peak (training.memory)."""
        if p.phase == "train":
            return sum(training.memory(p).values())
        parts = self.memory(p)
        return parts["weights"] + parts["kv_cache"] + parts["activations"]

    def memory(self, p: TransformerParams) -> dict[str, int]:
        """One device's memory by part (one rank's share under tp/pp): weights, the token
        embedding table (vocab x hidden, which the footprint leaves out with the lookups; a model
        that ties it to the LM head holds one copy, so this overstates its memory by that much),
        the KV cache of every sequence up to kv_len, and the largest few live activations (the
        QKV, MLP-up and two hidden-width tensors of the step's tokens, the logits, eager
        attention's scores)."""
        if p.phase == "train":
            return training.memory(p)
        if p.tp > 1 or p.pp > 1:
            p = parallel.shard(p, layers=p.layers // p.pp)
        e = DTYPE_BYTES[p.dtype]
        T = p.batch * p.seq
        cache = 2 * p.layers * p.batch * p.kv_heads * p.kv_len * p.head_dim * e
        widths = [
            (p.heads + 2 * p.kv_heads) * p.head_dim,
            2 * p.intermediate if p.mlp == "gated" else p.intermediate,
            p.hidden,
            p.hidden,
        ]
        logits = p.logit_rows * p.vocab * e if p.with_lm_head else 0
        scores = 2 * eager.score_bytes(p) if p.attention == "eager" else 0  # scores and probabilities
        return {
            "weights": self.weight_bytes(p),
            "embeddings": p.vocab * p.hidden * e,
            "kv_cache": cache,
            "activations": T * sum(widths) * e + logits + scores,
        }

    def activation_bytes(self, p: TransformerParams) -> int:
        """phase=train: what one micro-step keeps for its backward (training.activation_bytes); 0 otherwise."""
        return training.activation_bytes(p) if p.phase == "train" else 0

    def devices(self, p: TransformerParams) -> int:
        """tp devices each run the operators (one rank's share); the pp stages are all in them,
        one after another (parallel.py), so the idle stages' static power is left out."""
        return p.tp

    def serving(self, p: TransformerParams, batch: int, context: int):
        """The prompt's prefill (`context` tokens per sequence, the LM head on the last position:
        the first output token's logits) and one decode step over a cache of `context` tokens
        (context - 1 cached and the new one), both at `batch` sequences."""
        if context < 2:
            raise ValueError(f"context must be >= 2 tokens (a decode step attends over the prompt), got {context}")
        prefill = attrs.evolve(p, batch=batch, seq=context, phase="prefill", context=0, logits="last")
        decode = attrs.evolve(p, batch=batch, seq=1, phase="decode", context=context - 1)
        return prefill, decode


@hookimpl
def tensorforge_register_workloads(register):
    from tf_transformer.sdpa import Sdpa

    register(Transformer())
    register(Sdpa())


def _is_folder(path: Path) -> bool:
    """Whether the config path names a folder (its config.json is read then). A path the system
    cannot even look at (a name too long, a NUL byte) is no folder: load_config then refuses it
    in one line naming it, where Path.is_dir raised (a traceback) on Python 3.11."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False
