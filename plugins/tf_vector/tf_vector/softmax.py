"""Softmax over the last dimension of a rows x cols tensor: y = exp(x - max) / sum(exp(x - max)),
row by row, as F.softmax(x, dim=-1) computes it (attention scores, logits).

Compulsory traffic: the input read once and the output written once; the row's maximum and sum
stay on chip (a kernel holds one row, or passes over it twice from the cache). FLOPs per
element: the maximum's comparison, the subtraction, the exponential, the sum's addition and the
scaling by the reciprocal of the sum; the exponential is the one transcendental.
"""

import attrs

from tensorforge import WorkloadKind
from tf_vector.common import dim, dtype_field, elements, stream_operator, tensor_bytes

FLOPS_PER_ELEMENT = 5  # max, subtract, exp, add, scale
EXPS_PER_ELEMENT = 1


@attrs.frozen
class SoftmaxParams:
    rows: int = dim()
    cols: int = dim()
    dtype: str = dtype_field()


class Softmax(WorkloadKind):
    name = "softmax"
    description = "softmax over the last dimension of a rows x cols tensor (one max and one sum per row)"
    params_type = SoftmaxParams
    presets = {
        # eager attention's score matrix: 1 sequence x 32 heads x 2048 queries over 2048 keys
        "softmax_attn_scores": {"rows": 65536, "cols": 2048, "dtype": "bf16"},
        # sampling probabilities over Llama 3's 128256-token vocabulary for 16 sequences
        "softmax_logits": {"rows": 16, "cols": 128256, "dtype": "fp32"},
    }
    default_suite = ()

    def operators(self, p: SoftmaxParams):
        n = elements(p)
        size = tensor_bytes(p)
        return stream_operator("softmax", p, FLOPS_PER_ELEMENT * n, EXPS_PER_ELEMENT * n, [("x", size)], [("y", size)])

    def implementation(self, p: SoftmaxParams):
        """One F.softmax kernel, a row reduction with a rate of its own where fitted (else the norms')."""
        from tensorforge import Implementation

        return {"softmax": Implementation(kernels=1, pattern="softmax_rows")}
