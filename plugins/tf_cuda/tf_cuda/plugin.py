"""Ops built-ins, registered through the 'tensorforge_measure' entry-point group like any plugin:
the torch-cuda backend, its calibration probes and the NVML telemetry source."""

from tensorforge_measure import hookimpl
from tf_cuda.backend import TorchCudaBackend
from tf_cuda.probes_plugin import (
    CopyBandwidthProbe,
    CopyBandwidthSustainedProbe,
    EnergyProbe,
    KernelFloorsProbe,
    MatmulCeilingProbe,
    MatmulCeilingSustainedProbe,
    StreamBandwidthProbe,
    StreamBandwidthSustainedProbe,
)
from tf_cuda.telemetry_source import NvmlTelemetry


@hookimpl
def tensorforge_measure_register_backends(register):
    register(TorchCudaBackend())


@hookimpl
def tensorforge_measure_register_probes(register):
    # run_probes runs the sustained ones last and, among the burst ones, the estimate's sweep
    # (order 100) after the ceiling probes, whatever the order here
    register(MatmulCeilingProbe())
    register(CopyBandwidthProbe())
    register(StreamBandwidthProbe("read"))
    register(StreamBandwidthProbe("write"))
    register(KernelFloorsProbe())
    register(MatmulCeilingSustainedProbe())
    register(CopyBandwidthSustainedProbe())
    register(StreamBandwidthSustainedProbe("read"))
    register(EnergyProbe())  # sustained, order 200: after every other probe
    from tensorforge_measure import EstimateTermsProbe

    register(EstimateTermsProbe("torch-cuda"))


@hookimpl
def tensorforge_measure_register_telemetry(register):
    register(NvmlTelemetry())
