"""A binary elementwise operator on a rows x cols tensor: with operand=tensor, out = a OP b for
two rows x cols tensors; with operand=scalar, out = a OP s for a Python scalar s, as torch.add,
torch.mul, torch.div and torch.pow compute them.

Compulsory traffic: each tensor input read once (one or two), the output written once. FLOPs
per element, a transcendental counted as one (and as a special-function operation): add, mul
and div one each (a division is several instructions on most hardware: one keeps the bound a
bound); pow with a tensor exponent exp(b * log(a)), three with two transcendentals. The scalar
forms use the scalars the measured implementation uses (torch_builder.SCALARS): pow's is 2,
which PyTorch runs as a * a, one multiplication.
"""

import attrs

from tensorforge import WorkloadKind
from tf_vector.common import choice, dim, dtype_field, elements, stream_operator, tensor_bytes

# (op, operand) -> (FLOPs per element, transcendentals per element)
FLOPS = {
    ("add", "tensor"): (1, 0),
    ("mul", "tensor"): (1, 0),
    ("div", "tensor"): (1, 0),
    ("pow", "tensor"): (3, 2),
    ("add", "scalar"): (1, 0),
    ("mul", "scalar"): (1, 0),
    ("div", "scalar"): (1, 0),
    ("pow", "scalar"): (1, 0),  # a ** 2 = a * a
}


@attrs.frozen
class ElementwiseParams:
    rows: int = dim()
    cols: int = dim()
    op: str = choice("add", "mul", "div", "pow")
    operand: str = choice("tensor", "scalar", default="tensor")
    dtype: str = dtype_field()


class Elementwise(WorkloadKind):
    name = "elementwise"
    description = (
        "elementwise op=add, mul, div or pow of a rows x cols tensor with a second tensor "
        "(operand=tensor) or a Python scalar (operand=scalar)"
    )
    params_type = ElementwiseParams
    presets = {
        # a residual add of Llama-style activations: 4 sequences of 2048 tokens, hidden 4096
        "elementwise_residual_add": {"rows": 8192, "cols": 4096, "op": "add", "dtype": "bf16"},
        # scaling by a constant (e.g. attention scores by 1/sqrt(d)) in fp32
        "elementwise_scale": {"rows": 8192, "cols": 4096, "op": "mul", "operand": "scalar", "dtype": "fp32"},
    }
    default_suite = ()

    def operators(self, p: ElementwiseParams):
        n, size = elements(p), tensor_bytes(p)
        flops, special = FLOPS[p.op, p.operand]
        reads = [("a", size)] + ([("b", size)] if p.operand == "tensor" else [])
        return stream_operator("elementwise", p, flops * n, special * n, reads, [("out", size)])

    def implementation(self, p: ElementwiseParams):
        """One contiguous elementwise kernel."""
        from tensorforge import Implementation

        return {"elementwise": Implementation(kernels=1, pattern="elementwise")}
