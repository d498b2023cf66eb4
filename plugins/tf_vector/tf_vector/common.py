"""What the four vector kinds share: a rows x cols tensor of a floating-point dtype, and the one
streaming operator each kind is.

Why one StreamProblem per workload: each kind is a single pass over its tensors on the vector
units (PyTorch runs it as one kernel), so the bound is its compulsory bytes at DRAM bandwidth
(or its vector FLOPs, whichever is longer) and the estimate prices that kernel by the access
pattern the kind declares: 'norm' for the row reductions (softmax, norms), 'elementwise' for the
rest.
"""

import attrs

from tensorforge import DTYPE_BYTES, Operator, StreamProblem, Tensor, TensorForgeError, parse_dtype

# Softmax, norms and transcendental activations are computed in floating point; int8 and fp8
# elements have no such kernel in PyTorch, and no precision the vector units would run them in.
FLOAT_DTYPES = ("fp32", "fp16", "bf16")


def float_dtype(value) -> str:
    """The dtype's canonical name, or ValueError (build_params prefixes the kind's name)."""
    try:
        name = parse_dtype(value)
    except TensorForgeError:
        name = ""
    if name not in FLOAT_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(FLOAT_DTYPES)}, got {value!r}")
    return name


def dim():
    """A tensor dimension: a whole number >= 1."""
    return attrs.field(metadata={"min": 1})


def dtype_field():
    return attrs.field(default="bf16", converter=float_dtype)


def choice(*choices: str, default=attrs.NOTHING):
    return attrs.field(default=default, metadata={"choices": choices})


def elements(p) -> int:
    return p.rows * p.cols


def tensor_bytes(p) -> int:
    """Bytes of one rows x cols tensor of the workload's dtype."""
    return elements(p) * DTYPE_BYTES[p.dtype]


def stream_operator(name: str, p, flops: float, special: float, reads, writes) -> tuple[Operator, ...]:
    """The workload's one operator: `reads` and `writes` are (tensor name, bytes) pairs."""
    problem = StreamProblem(
        flops=float(flops),
        read_tensors=tuple(Tensor(n, b) for n, b in reads),
        write_tensors=tuple(Tensor(n, b) for n, b in writes),
        math_mode=p.dtype,
        special_ops=float(special),
    )
    return (Operator(name, problem),)
