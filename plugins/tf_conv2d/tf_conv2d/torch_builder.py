"""Conv2D on PyTorch (cuDNN), channels-last, random inputs and filters.
Registered under the Ops entry-point group; the Core side never imports this module."""

from tensorforge_measure import WorkloadBuilder, hookimpl, operator_range, torch_dtype


class Conv2dTorch(WorkloadBuilder):
    kind = "conv2d"
    framework = "torch"  # any PyTorch device: torch-cuda, torch-cpu, ...

    def build(self, p, device):
        import torch
        import torch.nn.functional as F

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


@hookimpl
def tensorforge_measure_register_builders(register):
    register(Conv2dTorch())
