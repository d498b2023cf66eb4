"""Reading a Hugging Face-style config.json from a local path into transformer fields.

Only the architecture matters here; weights are never loaded. Key names differ between model
families (GPT-2 uses n_embd / n_layer / n_head), so each field lists its aliases.
"""

from pathlib import Path
from typing import Any

from tensorforge.errors import TensorForgeError
from tensorforge.fileio import read_json

ALIASES = {
    "hidden": ("hidden_size", "n_embd", "d_model"),
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "heads": ("num_attention_heads", "n_head"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads"),
    "intermediate": ("intermediate_size", "n_inner", "ffn_dim"),
    "head_dim": ("head_dim",),
}
# Families whose MLP is gated (SwiGLU / GeGLU) and whose norm is RMSNorm.
GATED_FAMILIES = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3",
                  "phi3", "olmo2", "granite", "cohere"}


def load_config(path: Path) -> dict[str, Any]:
    data = read_json(path, "transformer config")
    if not isinstance(data, dict):
        raise TensorForgeError(f"transformer config {path}: expected a JSON object")
    data = data.get("text_config", data) if isinstance(data.get("text_config"), dict) else data
    fields: dict[str, Any] = {}
    for field, keys in ALIASES.items():
        for key in keys:
            if data.get(key) is not None:
                fields[field] = data[key]
                break
    for required in ("hidden", "layers", "heads"):
        if required not in fields:
            raise TensorForgeError(f"transformer config {path}: missing {ALIASES[required][0]!r}")
    family = str(data.get("model_type", "")).lower()
    gated = family in GATED_FAMILIES or str(data.get("hidden_act", "")).lower() in ("silu", "swiglu")
    fields["mlp"] = "gated" if gated else "gelu"
    fields["norm"] = "rmsnorm" if gated or "rms_norm_eps" in data else "layernorm"
    if "intermediate" not in fields:
        fields["intermediate"] = 4 * int(fields["hidden"])
    return fields
