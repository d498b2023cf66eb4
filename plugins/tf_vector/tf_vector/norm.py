"""LayerNorm (weight and bias) or RMSNorm (weight) over the last dimension of a rows x cols
tensor, as F.layer_norm / F.rms_norm compute it.

Compulsory traffic: the input read once, the weight (and LayerNorm's bias) read once, the output
written once; the row's statistics stay on chip. FLOPs per element as the transformer kind
counts them: RMSNorm squares, sums, scales and applies the weight (4); LayerNorm adds the mean,
the subtraction and the bias (7). One reciprocal square root per row is the transcendental.
"""

import attrs

from tensorforge import DTYPE_BYTES, WorkloadKind
from tf_vector.common import choice, dim, dtype_field, elements, stream_operator, tensor_bytes

FLOPS_PER_ELEMENT = {"rms": 4, "layer": 7}


@attrs.frozen
class NormParams:
    rows: int = dim()
    cols: int = dim()
    norm: str = choice("layer", "rms")
    dtype: str = dtype_field()


class Norm(WorkloadKind):
    name = "norm"
    description = (
        "LayerNorm (norm=layer: weight and bias) or RMSNorm (norm=rms: weight) over the last dimension "
        "of a rows x cols tensor"
    )
    params_type = NormParams
    presets = {
        # BERT-base: 8 sequences of 512 tokens, hidden 768
        "norm_layer_bert": {"rows": 4096, "cols": 768, "norm": "layer", "dtype": "fp16"},
        # Llama-style: 4 sequences of 2048 tokens, hidden 4096
        "norm_rms_llama": {"rows": 8192, "cols": 4096, "norm": "rms", "dtype": "bf16"},
    }
    default_suite = ()

    def operators(self, p: NormParams):
        size, vector = tensor_bytes(p), p.cols * DTYPE_BYTES[p.dtype]
        params = [("weight", vector)] + ([("bias", vector)] if p.norm == "layer" else [])
        flops = FLOPS_PER_ELEMENT[p.norm] * elements(p)
        return stream_operator("norm", p, flops, p.rows, [("x", size), *params], [("y", size)])

    def implementation(self, p: NormParams):
        """One fused F.layer_norm / F.rms_norm kernel, a row reduction."""
        from tensorforge import Implementation

        return {"norm": Implementation(kernels=1, pattern="norm")}
