"""An activation function applied to every element of a rows x cols tensor, as PyTorch's
F.gelu (exact, with erf), F.silu, F.relu and torch.tanh compute it.

Compulsory traffic: the input read once, the output written once. FLOPs per element, each
transcendental counted as one (and as a special-function operation):
  gelu  x/2 * (1 + erf(x / sqrt 2)): scale, erf, add, multiply, halve          5, 1 special
  silu  x / (1 + exp(-x)): negate, exp, add, divide                            4, 1 special
  relu  max(x, 0)                                                              1
  tanh  tanh(x)                                                                1, 1 special
"""

import attrs

from tensorforge import WorkloadKind
from tf_vector.common import choice, dim, dtype_field, elements, stream_operator, tensor_bytes

# fn -> (FLOPs per element, transcendentals per element)
FLOPS = {"gelu": (5, 1), "silu": (4, 1), "relu": (1, 0), "tanh": (1, 1)}


@attrs.frozen
class ActivationParams:
    rows: int = dim()
    cols: int = dim()
    fn: str = choice(*FLOPS)
    dtype: str = dtype_field()


class Activation(WorkloadKind):
    name = "activation"
    description = (
        "activation function on every element of a rows x cols tensor: fn=gelu (exact, erf), silu, relu or tanh"
    )
    params_type = ActivationParams
    presets = {
        # BERT-base's MLP: 8 sequences of 512 tokens, intermediate 3072
        "activation_gelu_bert": {"rows": 4096, "cols": 3072, "fn": "gelu", "dtype": "fp16"},
        # Llama 3 8B's gate: 4 sequences of 2048 tokens, intermediate 14336
        "activation_silu_llama": {"rows": 8192, "cols": 14336, "fn": "silu", "dtype": "bf16"},
    }
    default_suite = ()

    def operators(self, p: ActivationParams):
        n, size = elements(p), tensor_bytes(p)
        flops, special = FLOPS[p.fn]
        return stream_operator("activation", p, flops * n, special * n, [("x", size)], [("y", size)])

    def implementation(self, p: ActivationParams):
        """One contiguous elementwise kernel."""
        from tensorforge import Implementation

        return {"activation": Implementation(kernels=1, pattern="elementwise")}
