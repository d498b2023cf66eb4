"""GEMM on PyTorch: random inputs (never zeros), output preallocated, transposes honoured.
Registered under the Ops entry-point group; the Core side never imports this module.

phase=train: a training step of a linear layer (input A, weight B) through autograd
(tensorforge_measure.TrainStep): the forward and its two gradients run in a custom autograd
Function whose backward computes dA and dB as PyTorch's mm backward does (transposed views, no
copies; each gradient in the layout of its operand), each in its own operator range, so a trace
attributes them. Every micro-step has its own A and output gradient dC."""

from tensorforge import Training
from tensorforge_measure import TrainStep, WorkloadBuilder, hookimpl, no_inference, operator_range, torch_dtype

_FUNCTION: dict = {}


def matmul_function(torch):
    """C = op(A) @ op(B) with A and B given as stored (transposed or not), made on first use."""
    if "fn" in _FUNCTION:
        return _FUNCTION["fn"]

    class Matmul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a_stored, b_stored, transpose_a, transpose_b):
            ctx.save_for_backward(a_stored, b_stored)
            ctx.transposed = (transpose_a, transpose_b)
            a = a_stored.mT if transpose_a else a_stored
            b = b_stored.mT if transpose_b else b_stored
            with operator_range("matmul"):
                return torch.matmul(a, b)

        @staticmethod
        def backward(ctx, dc):
            a_stored, b_stored = ctx.saved_tensors
            transpose_a, transpose_b = ctx.transposed
            a = a_stored.mT if transpose_a else a_stored
            b = b_stored.mT if transpose_b else b_stored
            da = db = None
            if ctx.needs_input_grad[0]:
                with operator_range("matmul_grad_a"):  # dA = dC @ B^T, or stored transposed: B @ dC^T
                    da = torch.matmul(b, dc.mT) if transpose_a else torch.matmul(dc, b.mT)
            if ctx.needs_input_grad[1]:
                with operator_range("matmul_grad_b"):  # dB = A^T @ dC, or stored transposed: dC^T @ A
                    db = torch.matmul(dc.mT, a) if transpose_b else torch.matmul(a.mT, dc)
            return da, db, None, None

    _FUNCTION["fn"] = Matmul
    return Matmul


class GemmTorch(WorkloadBuilder):
    kind = "gemm"
    framework = "torch"  # any PyTorch device: torch-cuda, torch-cpu, ...

    def build(self, p, device):
        import torch

        training = Training.of(p)
        if training is not None:
            return self._train(torch, p, training, device)
        dtype = torch_dtype(p.dtype, "PyTorch matmul")
        lead = (p.batch,) if p.batch > 1 else ()
        a = torch.randn(*lead, *((p.k, p.m) if p.transpose_a else (p.m, p.k)), device=device, dtype=dtype)
        b = torch.randn(*lead, *((p.n, p.k) if p.transpose_b else (p.k, p.n)), device=device, dtype=dtype)
        a = a.transpose(-1, -2) if p.transpose_a else a
        b = b.transpose(-1, -2) if p.transpose_b else b
        c = torch.empty(*lead, p.m, p.n, device=device, dtype=dtype)

        def run():
            with operator_range("matmul"):  # the Core's one operator of a GEMM
                return torch.matmul(a, b, out=c)

        return run

    def _train(self, torch, p, training, device):
        dtype = torch_dtype(p.dtype, "PyTorch matmul")
        lead = (p.batch,) if p.batch > 1 else ()
        a_shape = (*lead, *((p.k, p.m) if p.transpose_a else (p.m, p.k)))
        b_shape = (*lead, *((p.n, p.k) if p.transpose_b else (p.k, p.n)))
        master = torch.float32 if training.mixed_precision else dtype
        with no_inference(torch):
            inputs = [torch.randn(a_shape, device=device, dtype=dtype).requires_grad_() for _ in range(p.grad_accum)]
            grad_out = [torch.randn(*lead, p.m, p.n, device=device, dtype=dtype) for _ in range(p.grad_accum)]
            weight = (torch.randn(b_shape, device=device, dtype=master) * p.k**-0.5).requires_grad_()
        step = TrainStep(torch, training, [weight], device)
        fn = matmul_function(torch)

        def micro(i, weights):
            c = fn.apply(inputs[i], weights[0], p.transpose_a, p.transpose_b)
            return (c,), (grad_out[i],), (inputs[i],)

        def run():
            step(micro)

        run.step = step  # what tests look at (gradients, optimizer state, each micro-step's data)
        run.step_inputs = list(zip(inputs, grad_out))
        return run


@hookimpl
def tensorforge_measure_register_builders(register):
    register(GemmTorch())
