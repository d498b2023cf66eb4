"""Ops side of tf_distributed: the torch-distributed backend, its probes and its telemetry,
registered through the 'tensorforge_measure' entry-point group like any third-party plugin."""

from tensorforge_measure import hookimpl
from tf_distributed.backend import TorchDistributedBackend
from tf_distributed.probes import CollectiveSweepProbe, PerRankCeilingsProbe
from tf_distributed.telemetry import DistributedTelemetry


@hookimpl
def tensorforge_measure_register_backends(register):
    register(TorchDistributedBackend())


@hookimpl
def tensorforge_measure_register_probes(register):
    register(PerRankCeilingsProbe())
    register(CollectiveSweepProbe())


@hookimpl
def tensorforge_measure_register_telemetry(register):
    register(DistributedTelemetry())
