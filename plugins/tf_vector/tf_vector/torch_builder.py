"""The vector workloads on PyTorch: one call of the functional op each, inside an operator range
named as the Core names the kind's one operator, on random inputs (never zeros; a divisor and a
base of pow kept away from zero, so no infinities or NaNs are timed). Registered under the Ops
entry-point group; the Core side never imports this module."""

from tensorforge_measure import WorkloadBuilder, hookimpl, operator_range, torch_dtype

# The Python scalars of operand=scalar (elementwise.py counts the FLOPs of exactly these).
SCALARS = {"add": 1.0, "mul": 0.5, "div": 3.0, "pow": 2.0}


def _rand(p, device, *shape, positive=False):
    """A random tensor of the workload's dtype, rows x cols unless `shape` is given."""
    import torch

    shape = shape or (p.rows, p.cols)
    dtype = torch_dtype(p.dtype, "PyTorch vector operators")
    if positive:  # in [0.5, 1.5)
        return torch.rand(*shape, device=device, dtype=dtype) + 0.5
    return torch.randn(*shape, device=device, dtype=dtype)


class SoftmaxTorch(WorkloadBuilder):
    kind = "softmax"
    framework = "torch"

    def build(self, p, device):
        import torch

        x = _rand(p, device)

        def run():
            with operator_range("softmax"):
                return torch.softmax(x, dim=-1)

        return run


class NormTorch(WorkloadBuilder):
    kind = "norm"
    framework = "torch"

    def build(self, p, device):
        import torch.nn.functional as F

        x = _rand(p, device)
        weight, bias = _rand(p, device, p.cols), _rand(p, device, p.cols)

        def run():
            with operator_range("norm"):
                if p.norm == "rms":
                    return F.rms_norm(x, (p.cols,), weight)
                return F.layer_norm(x, (p.cols,), weight, bias)

        return run


class ActivationTorch(WorkloadBuilder):
    kind = "activation"
    framework = "torch"

    def build(self, p, device):
        import torch
        import torch.nn.functional as F

        fn = {"gelu": F.gelu, "silu": F.silu, "relu": F.relu, "tanh": torch.tanh}[p.fn]
        x = _rand(p, device)

        def run():
            with operator_range("activation"):
                return fn(x)

        return run


class ElementwiseTorch(WorkloadBuilder):
    kind = "elementwise"
    framework = "torch"

    def build(self, p, device):
        import torch

        fn = {"add": torch.add, "mul": torch.mul, "div": torch.div, "pow": torch.pow}[p.op]
        a = _rand(p, device, positive=p.op == "pow")
        b = SCALARS[p.op] if p.operand == "scalar" else _rand(p, device, positive=p.op == "div")
        out = torch.empty_like(a)

        def run():
            with operator_range("elementwise"):
                return fn(a, b, out=out)

        return run


@hookimpl
def tensorforge_measure_register_builders(register):
    for builder in (SoftmaxTorch(), NormTorch(), ActivationTorch(), ElementwiseTorch()):
        register(builder)
