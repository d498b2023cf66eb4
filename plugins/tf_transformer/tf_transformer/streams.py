"""A memory-bound operator from named (tensor, bytes) pairs: the forward (plugin.py) and the
training step's backward (training.py) describe their norms, activations and residuals alike."""

from tensorforge import Operator, StreamProblem, Tensor


def stream(name, flops, reads, writes, count, dtype, special=0.0) -> Operator:
    return Operator(
        name,
        StreamProblem(
            flops=float(flops),
            read_tensors=tuple(Tensor(n, b) for n, b in reads),
            write_tensors=tuple(Tensor(n, b) for n, b in writes),
            math_mode=dtype,
            special_ops=float(special),
        ),
        count,
    )
