"""GEMM on PyTorch: random inputs (never zeros), output preallocated, transposes honoured.
Registered under the Ops entry-point group; the Core side never imports this module."""

from tensorforge_measure import WorkloadBuilder, hookimpl, operator_range, torch_dtype


class GemmTorch(WorkloadBuilder):
    kind = "gemm"
    framework = "torch"  # any PyTorch device: torch-cuda, torch-cpu, ...

    def build(self, p, device):
        import torch

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


@hookimpl
def tensorforge_measure_register_builders(register):
    register(GemmTorch())
