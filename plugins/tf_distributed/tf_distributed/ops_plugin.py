"""Ops side of tf_distributed: the torch-distributed backend, its probes and its telemetry,
registered through the 'tensorforge_ops' entry-point group like any third-party plugin."""

from tensorforge_ops.hookspecs import hookimpl

from .backend import TorchDistributedBackend
from .probes import CollectiveSweepProbe, PerRankCeilingsProbe
from .telemetry import DistributedTelemetry


@hookimpl
def tensorforge_ops_register_backends(register):
    register(TorchDistributedBackend())


@hookimpl
def tensorforge_ops_register_probes(register):
    register(PerRankCeilingsProbe())
    register(CollectiveSweepProbe())


@hookimpl
def tensorforge_ops_register_telemetry(register):
    register(DistributedTelemetry())
