"""Ops built-ins, registered through the 'tensorforge_ops' entry-point group like any plugin:
the torch-cuda backend, its calibration probes and the NVML telemetry source."""

from .calibrate.cuda_plugin import (
    CopyBandwidthProbe,
    CopyBandwidthSustainedProbe,
    KernelFloorsProbe,
    MatmulCeilingProbe,
    MatmulCeilingSustainedProbe,
)
from .hookspecs import hookimpl
from .measure.torch_cuda import TorchCudaBackend
from .telemetry.nvml_source import NvmlTelemetry


@hookimpl
def tensorforge_ops_register_backends(register):
    register(TorchCudaBackend())


@hookimpl
def tensorforge_ops_register_probes(register):
    # run_probes runs the sustained ones last and, among the burst ones, the estimate's sweep
    # (order 100) after the ceiling probes, whatever the order here
    register(MatmulCeilingProbe())
    register(CopyBandwidthProbe())
    register(KernelFloorsProbe())
    register(MatmulCeilingSustainedProbe())
    register(CopyBandwidthSustainedProbe())
    from .calibrate.estimate_probes import EstimateTermsProbe

    register(EstimateTermsProbe("torch-cuda"))


@hookimpl
def tensorforge_ops_register_telemetry(register):
    register(NvmlTelemetry())
