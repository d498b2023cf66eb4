"""Reading a Hugging Face-style config.json from a local path into transformer fields.

Only the architecture matters here; weights are never loaded and nothing is fetched from a
network. Key names and block structure differ between model families, so each family that
departs from the Llama layout is read by its own rule:

  llama, mistral, qwen2, gemma (and other gated families)  pre-norm RMSNorm, gated MLP, RoPE
  gpt2            n_embd / n_head / n_layer / n_inner (null: 4 x n_embd) / n_positions;
                  LayerNorm, tanh-GELU MLP, learned position embeddings (no RoPE)
  falcon          (also the older RefinedWeb model types) LayerNorm, GELU MLP, RoPE unless
                  alibi; parallel attention and MLP (parallel_attn): one shared norm on the
                  first generation, one norm per branch with new_decoder_architecture;
                  multi-query attention (multi_query) or num_kv_heads groups
  bert, roberta   encoders: post-norm (a LayerNorm after each residual add, none at the end),
                  GELU MLP, learned absolute positions (no RoPE), attention over the whole
                  sequence (causal=false), no LM head (lm_head=true adds the vocabulary
                  projection; the masked-LM head's transform is not modelled); RoBERTa's
                  positions start after its padding index, so it takes 2 fewer tokens
  opt             pre-norm LayerNorm (post-norm where do_layer_norm_before is false), ReLU MLP
                  of ffn_dim, learned positions, a final norm unless _remove_final_layer_norm;
                  a word_embed_proj_dim other than hidden_size (OPT-350m's projections) is refused
  gpt_neox        LayerNorm, GELU MLP, RoPE on rotary_pct of each head (rope_dims), parallel
                  attention and MLP with a norm each when use_parallel_residual (the default)

The embedding lookups and the encoders' embedding LayerNorm are not modelled (as everywhere:
leaving work out keeps the bound a bound).

vocab_size becomes `vocab` (the LM head is then included; lm_head=false leaves it out), the
maximum positions become `max_positions` (longer seq + context is refused), and a sliding
attention window in force becomes `window` (longer is refused: not modelled).
"""

from pathlib import Path
from typing import Any

from tensorforge import TensorForgeError, read_json

ALIASES = {
    "hidden": ("hidden_size", "n_embd", "d_model"),
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "heads": ("num_attention_heads", "n_head"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads"),
    "intermediate": ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"),
    "head_dim": ("head_dim",),
    "vocab": ("vocab_size",),
    "max_positions": ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length"),
}
# Families whose MLP is gated (SwiGLU / GeGLU) and whose norm is RMSNorm.
GATED_FAMILIES = {
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "gemma",
    "gemma2",
    "gemma3",
    "phi3",
    "olmo2",
    "granite",
    "cohere",
}
GPT2_FAMILIES = {"gpt2"}
FALCON_FAMILIES = {"falcon", "refinedwebmodel", "refinedweb"}
ENCODER_FAMILIES = {"bert", "roberta"}
OPT_FAMILIES = {"opt"}
NEOX_FAMILIES = {"gpt_neox"}


def _first(data: dict[str, Any], keys: tuple[str, ...]) -> Any | None:
    for key in keys:
        if data.get(key) is not None:
            return data[key]
    return None


def _read(path: Path) -> dict[str, Any]:
    data = read_json(path, "transformer config")
    if not isinstance(data, dict):
        raise TensorForgeError(f"transformer config {path}: expected a JSON object")
    return data["text_config"] if isinstance(data.get("text_config"), dict) else data


def _whole_number(value: Any, key: str, path: Path) -> int:
    """A config's size field as an int. Why here: a string, list, 1e400 or NaN reached `int()`
    further on and ended in a traceback instead of a line naming the key."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and not value.is_integer())
    ):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise TensorForgeError(f"transformer config {path}: {key!r} must be a whole number, got {shown}")
    return int(value)


def _falcon(data: dict[str, Any], fields: dict[str, Any]) -> None:
    new_arch = bool(data.get("new_decoder_architecture", False))
    if new_arch:
        fields["kv_heads"] = data.get("num_kv_heads") or fields["heads"]
    elif data.get("multi_query", True):
        fields["kv_heads"] = 1
    else:
        fields["kv_heads"] = fields["heads"]
    if data.get("parallel_attn", True):
        fields["block"] = "parallel" if new_arch else "parallel_shared_norm"
    fields.update(mlp="gelu", norm="layernorm", rope=not data.get("alibi", False))


def _encoder(data: dict[str, Any], fields: dict[str, Any], family: str, path: Path) -> None:
    kind = data.get("position_embedding_type", "absolute")
    if kind != "absolute":
        raise TensorForgeError(
            f"transformer config {path}: position_embedding_type={kind!r} is not modelled (only 'absolute')"
        )
    mlp = "relu" if str(data.get("hidden_act", "gelu")).lower() == "relu" else "gelu"
    fields.update(mlp=mlp, norm="layernorm", rope=False, causal=False, post_norm=True, final_norm=False)
    fields["lm_head"] = False  # an encoder's output is its hidden states
    if family == "roberta" and "max_positions" in fields:
        # position ids start at padding_idx + 1: max_position_embeddings - (pad_token_id + 1) tokens
        pad = _whole_number(data.get("pad_token_id", 1), "pad_token_id", path)
        fields["max_positions"] = max(1, fields["max_positions"] - (pad + 1))


def _opt(data: dict[str, Any], fields: dict[str, Any], path: Path) -> None:
    projected = data.get("word_embed_proj_dim")
    if projected is not None and projected != fields["hidden"]:
        raise TensorForgeError(
            f"transformer config {path}: word_embed_proj_dim={projected!r} differs from hidden_size="
            f"{fields['hidden']}; the embedding projections (project_in/out) are not modelled"
        )
    pre_norm = bool(data.get("do_layer_norm_before", True))
    activation = str(data.get("activation_function", "relu")).lower()
    fields.update(
        mlp="relu" if activation == "relu" else "gelu",
        norm="layernorm",
        rope=False,
        post_norm=not pre_norm,
        final_norm=pre_norm and not data.get("_remove_final_layer_norm", False),
    )


def _neox(data: dict[str, Any], fields: dict[str, Any], path: Path) -> None:
    fields.update(mlp="gelu", norm="layernorm", rope=True)
    if data.get("use_parallel_residual", True):
        fields["block"] = "parallel"
    pct = data.get("rotary_pct", 1.0)
    if isinstance(pct, bool) or not isinstance(pct, (int, float)) or not 0 < pct <= 1:
        raise TensorForgeError(f"transformer config {path}: 'rotary_pct' must be a number in (0, 1], got {pct!r}")
    head_dim = fields.get("head_dim") or fields["hidden"] // max(1, fields["heads"])
    dims = int(head_dim * pct)  # as GPTNeoXAttention computes rotary_ndims
    if 0 < dims < head_dim:
        fields["rope_dims"] = dims


def load_config(path: Path) -> dict[str, Any]:
    data = _read(path)
    fields: dict[str, Any] = {}
    for field, keys in ALIASES.items():
        value = _first(data, keys)
        if value is not None:
            fields[field] = _whole_number(value, next(k for k in keys if data.get(k) is not None), path)
    for required in ("hidden", "layers", "heads"):
        if required not in fields:
            raise TensorForgeError(f"transformer config {path}: missing {ALIASES[required][0]!r}")
    family = str(data.get("model_type", "")).lower()
    if family in GPT2_FAMILIES:
        fields.update(mlp="gelu", norm="layernorm", rope=False)  # learned position embeddings
    elif family in FALCON_FAMILIES:
        _falcon(data, fields)
    elif family in ENCODER_FAMILIES:
        _encoder(data, fields, family, path)
    elif family in OPT_FAMILIES:
        _opt(data, fields, path)
    elif family in NEOX_FAMILIES:
        _neox(data, fields, path)
    else:
        gated = family in GATED_FAMILIES or str(data.get("hidden_act", "")).lower() in ("silu", "swiglu")
        fields["mlp"] = "gated" if gated else "gelu"
        fields["norm"] = "rmsnorm" if gated or "rms_norm_eps" in data else "layernorm"
    if "intermediate" not in fields:
        fields["intermediate"] = 4 * int(fields["hidden"])
    window = data.get("sliding_window")
    if (
        isinstance(window, int)
        and not isinstance(window, bool)
        and window > 0
        and data.get("use_sliding_window", True) is not False
    ):
        fields["window"] = window
    return fields
