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
