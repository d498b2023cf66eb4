"""Conv2D on PyTorch (cuDNN), channels-last, random inputs and filters.
Registered under the Ops entry-point group; the Core side never imports this module.

phase=train: a training step of the layer through autograd (tensorforge_measure.TrainStep): a
custom autograd Function runs the forward and, in its backward, the data and weight gradients as
two calls of aten's convolution_backward (what autograd's own ConvolutionBackward runs, one
output at a time), each in its own operator range so a trace attributes them. Every micro-step
has its own input and output gradient."""

from tensorforge import Training
from tensorforge_measure import TrainStep, WorkloadBuilder, hookimpl, no_inference, operator_range, torch_dtype

_FUNCTION: dict = {}


def conv_function(torch):
    """y = conv2d(x, w) whose backward names its two gradients, made on first use."""
    if "fn" in _FUNCTION:
        return _FUNCTION["fn"]
    import torch.nn.functional as F

    class Conv(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, stride, padding, dilation, groups):
            ctx.save_for_backward(x, w)
            ctx.conv = (stride, padding, dilation, groups)
            with operator_range("conv2d"):
                return F.conv2d(x, w, None, stride, padding, dilation, groups)

        @staticmethod
        def backward(ctx, dy):
            x, w = ctx.saved_tensors
            stride, padding, dilation, groups = ctx.conv
            args = (None, [stride] * 2, [padding] * 2, [dilation] * 2, False, [0, 0], groups)
            dx = dw = None
            if ctx.needs_input_grad[0]:
                with operator_range("conv2d_grad_input"):
                    dx = torch.ops.aten.convolution_backward(dy, x, w, *args, [True, False, False])[0]
            if ctx.needs_input_grad[1]:
                with operator_range("conv2d_grad_weight"):
                    dw = torch.ops.aten.convolution_backward(dy, x, w, *args, [False, True, False])[1]
            return dx, dw, None, None, None, None

    _FUNCTION["fn"] = Conv
    return Conv


class Conv2dTorch(WorkloadBuilder):
    kind = "conv2d"
    framework = "torch"  # any PyTorch device: torch-cuda, torch-cpu, ...

    def build(self, p, device):
        import torch
        import torch.nn.functional as F

        training = Training.of(p)
        if training is not None:
            return self._train(torch, p, training, device)
        dtype = torch_dtype(p.dtype, "PyTorch conv2d")
        # channels_last is the layout tensor-core convolutions use natively (no transposes).
        x = torch.randn(p.n, p.c, p.h, p.w, device=device, dtype=dtype).to(memory_format=torch.channels_last)
        w = torch.randn(p.k, p.c // p.groups, p.r, p.s, device=device, dtype=dtype).to(
            memory_format=torch.channels_last
        )

        def run():
            with operator_range("conv2d"):  # the Core's one operator of a convolution
                return F.conv2d(x, w, None, p.stride, p.padding, p.dilation, p.groups)

        return run

    def _train(self, torch, p, training, device):
        dtype = torch_dtype(p.dtype, "PyTorch conv2d")
        last = torch.channels_last
        master = torch.float32 if training.mixed_precision else dtype
        fan_in = (p.c // p.groups) * p.r * p.s
        with no_inference(torch):
            inputs = [
                torch.randn(p.n, p.c, p.h, p.w, device=device, dtype=dtype).to(memory_format=last).requires_grad_()
                for _ in range(p.grad_accum)
            ]
            grad_out = [
                torch.randn(p.n, p.k, p.p, p.q, device=device, dtype=dtype).to(memory_format=last)
                for _ in range(p.grad_accum)
            ]
            weight = torch.randn(p.k, p.c // p.groups, p.r, p.s, device=device, dtype=master) * fan_in**-0.5
            weight = weight.to(memory_format=last).requires_grad_()
        step = TrainStep(torch, training, [weight], device)
        fn = conv_function(torch)

        def micro(i, weights):
            y = fn.apply(inputs[i], weights[0], p.stride, p.padding, p.dilation, p.groups)
            return (y,), (grad_out[i],), (inputs[i],)

        def run():
            step(micro)

        run.step = step  # what tests look at (gradients, optimizer state, each micro-step's data)
        run.step_inputs = list(zip(inputs, grad_out))
        return run


@hookimpl
def tensorforge_measure_register_builders(register):
    register(Conv2dTorch())
