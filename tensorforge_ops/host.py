"""The Ops side's plugin host: same loading and isolation rules as the Core's, its own group."""

from tensorforge.plugins import BaseHost

from . import hookspecs
from .api import CalibrationProbe, CaptureSink, MeasurementBackend, Policy, TelemetrySource, WorkloadBuilder

HOOKS = {
    "tensorforge_ops_register_backends": "backends",
    "tensorforge_ops_register_builders": "builders",
    "tensorforge_ops_register_probes": "probes",
    "tensorforge_ops_register_telemetry": "telemetry",
    "tensorforge_ops_register_policies": "policies",
    "tensorforge_ops_register_sinks": "sinks",
}


class OpsHost(BaseHost):
    project = hookspecs.PROJECT
    group = hookspecs.ENTRY_POINT_GROUP
    side = "ops"
    spec_modules = (hookspecs,)
    registration_hooks = HOOKS
    expected_types = {"backends": MeasurementBackend, "builders": WorkloadBuilder,
                      "probes": CalibrationProbe, "telemetry": TelemetrySource, "policies": Policy,
                      "sinks": CaptureSink}

    def backend(self, name: str) -> MeasurementBackend:
        return self._get("backends", name)

    def builder(self, kind: str, backend: str):
        found = self._registered["builders"].get(f"{kind}@{backend}")
        return found.value if found else None

    def for_backend(self, kind: str, backend: str):
        return [v for v in self.values(kind) if v.backend == backend]
