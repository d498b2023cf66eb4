"""The Ops side's plugin host: same loading and isolation rules as the Core's, its own group."""

from tensorforge.api import BaseHost, PluginError, TensorForgeError
from tensorforge_measure import hookspecs
from tensorforge_measure.api import (
    POLICY_COMMANDS,
    POLICY_EVIDENCE,
    CalibrationProbe,
    CaptureSink,
    MeasurementBackend,
    Policy,
    TelemetrySource,
    WorkloadBuilder,
)

HOOKS = {
    "tensorforge_measure_register_backends": "backends",
    "tensorforge_measure_register_builders": "builders",
    "tensorforge_measure_register_probes": "probes",
    "tensorforge_measure_register_telemetry": "telemetry",
    "tensorforge_measure_register_policies": "policies",
    "tensorforge_measure_register_sinks": "sinks",
}


class OpsHost(BaseHost):
    project = hookspecs.PROJECT
    group = hookspecs.ENTRY_POINT_GROUP
    side = "ops"
    spec_modules = (hookspecs,)
    registration_hooks = HOOKS
    expected_types = {
        "backends": MeasurementBackend,
        "builders": WorkloadBuilder,
        "probes": CalibrationProbe,
        "telemetry": TelemetrySource,
        "policies": Policy,
        "sinks": CaptureSink,
    }

    def backend(self, name: str) -> MeasurementBackend:
        return self.get("backends", name)

    def policy(self, name: str) -> Policy:
        return self.get("policies", name)

    def _check(self, kind, value, plugin):
        if kind == "builders" and not (value.kind and (value.backend or value.framework)):
            raise PluginError(
                f"plugin {plugin!r}: builder {value.name!r} needs a workload kind and a backend or a framework"
            )
        if kind == "policies":
            self._check_policy(value, plugin)

    @staticmethod
    def _check_policy(policy: Policy, plugin: str) -> None:
        """A policy says which commands run it and what evidence it needs, in known words, and
        implements decide: checked here once, so every command can rely on it."""
        where = f"plugin {plugin!r}: policy {policy.name!r}"
        commands, requires = getattr(policy, "commands", None), getattr(policy, "requires", None)
        if not isinstance(commands, tuple) or not commands or not set(commands) <= set(POLICY_COMMANDS):
            raise PluginError(
                f"{where} must declare commands as a non-empty tuple of {', '.join(POLICY_COMMANDS)}; got {commands!r}"
            )
        if not isinstance(requires, tuple) or not set(requires) <= set(POLICY_EVIDENCE):
            raise PluginError(
                f"{where} must declare requires as a tuple of {', '.join(POLICY_EVIDENCE)}; got {requires!r}"
            )
        if type(policy).decide is Policy.decide:
            raise PluginError(f"{where} does not implement decide(request)")

    def builder(self, kind: str, backend: str):
        """The builder for `kind` on `backend`: one registered for that backend by name wins
        (a device-specific builder), else one of the backend's framework (e.g. 'torch')."""
        found = self.find("builders", f"{kind}@{backend}")
        if found and found.backend == backend:
            return found
        registered = self.find("backends", backend)
        framework = getattr(registered, "framework", "") if registered else ""
        found = self.find("builders", f"{kind}@{framework}") if framework else None
        return found if found and found.framework == framework else None

    def default_backend(self, target, fallback: str) -> str:
        """The backend that declares `target` (a Target, or its name) as its own, by name in
        `targets` or through its `claims(target)` (e.g. every system of several devices), else
        `fallback`."""
        name = getattr(target, "name", target)

        def claimed(backend) -> bool:
            if name in (getattr(backend, "targets", ()) or ()):
                return True
            claims = getattr(backend, "claims", None)
            return bool(claims(target)) if claims is not None and not isinstance(target, str) else False

        claims = [b.name for b in self.values("backends") if claimed(b)]
        if len(claims) > 1:
            raise TensorForgeError(
                f"backends {', '.join(claims)} all measure target {name!r}: choose one with --backend"
            )
        return claims[0] if claims else fallback

    def for_backend(self, kind: str, backend: str):
        return [v for v in self.values(kind) if v.backend == backend]
