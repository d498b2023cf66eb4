"""The Ops side's plugin host: same loading and isolation rules as the Core's, its own group;
one per Core host (`ops_host`), with the Core host's plugin selection.

Names are reserved as on the Core side (a shipped distribution's names win). Some things are
chosen without a name: the telemetry source that serves a backend, the host's energy counter.
Those were the first by name: a stranger's source called 'aaa-telemetry' for torch-cpu silently
replaced the shipped host-CPU one (DIAGNOSTIC became unavailable, the evidence check lost its
contention test). Now a shipped source wins; one offered beside it is passed over, and said so
in `list-plugins` and on standard error; two strangers' sources and no shipped one: neither.
"""

import attrs

from tensorforge.api import BaseHost, PluginError, PluginHost, TensorForgeError
from tensorforge_measure import hookspecs
from tensorforge_measure.api import (
    POLICY_COMMANDS,
    POLICY_EVIDENCE,
    CalibrationProbe,
    CaptureSink,
    HostEnergySource,
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
    "tensorforge_measure_register_host_energy": "host_energy",
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
        "host_energy": HostEnergySource,
    }

    def _collect(self) -> None:
        super()._collect()
        # what `one_for` passes over, said once where it is decided: beside the plugin's report
        self.passed_over: list[str] = []  # a line each, for standard error
        self._unused: set[tuple[str, str]] = set()
        for kind in ("telemetry", "host_energy"):
            groups: dict[str, list[str]] = {}
            for name in self.names(kind):
                groups.setdefault(getattr(self.find(kind, name), "backend", ""), []).append(name)
            for serves, names in groups.items():
                self._settle_sources(kind, serves, names)

    def _settle_sources(self, kind: str, serves: str, names: list[str]) -> None:
        if len(names) < 2:
            return
        what = "host energy source" if kind == "host_energy" else f"telemetry source for backend {serves!r}"
        shipped = [n for n in names if self._shipped(self.owner(kind, n) or "")]
        for name in names:
            if name in shipped[:1]:
                continue
            why = (
                f"the shipped {shipped[0]!r} ({self._describe(self.owner(kind, shipped[0]) or '')}) is used"
                if shipped
                else f"{', '.join(repr(n) for n in names if n != name)} is offered too and neither is shipped: "
                "neither is used; uninstall one, or leave one out with --disable-plugins"
            )
            self._pass_over(kind, name, f"passed over: its {what} {name!r} is not used; {why}")

    def _pass_over(self, kind: str, name: str, message: str) -> None:
        plugin = self.owner(kind, name) or ""
        self.passed_over.append(f"plugin {plugin!r} is {message}")
        report = self.reports[plugin]
        self.reports[plugin] = attrs.evolve(report, warnings=report.warnings + (message,))
        self._unused.add((kind, name))

    def one_for(self, kind: str, backend: str | None = None):
        """The telemetry source serving `backend` (kind 'telemetry'), or the host's energy source
        ('host_energy'), by the rule above; None when there is none to use."""
        candidates = [
            v
            for v in self.values(kind)
            if (kind, v.name) not in self._unused and (backend is None or getattr(v, "backend", None) == backend)
        ]
        return candidates[0] if candidates else None

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
        if kind == "backends":
            self._check_backend(value, plugin)

    @staticmethod
    def _check_backend(backend: MeasurementBackend, plugin: str) -> None:
        """What a backend declares instead of being recognised by name (its probe plan, its
        budgets, whether it is the fallback and reads the host's energy beside its own), checked
        here once so the runner and the probes can rely on it."""
        where = f"plugin {plugin!r}: backend {backend.name!r}"
        plan = getattr(backend, "probe_plan", ())
        if not isinstance(plan, tuple):
            raise PluginError(f"{where} must declare probe_plan as a tuple of probe items; got {plan!r}")
        budget = getattr(backend, "probe_item_budget_s", None)
        if isinstance(budget, bool) or not isinstance(budget, int | float) or not 0 < budget < float("inf"):
            raise PluginError(f"{where} must declare probe_item_budget_s as a positive number; got {budget!r}")
        for flag in ("fallback", "host_energy_beside"):
            if not isinstance(getattr(backend, flag, False), bool):
                raise PluginError(f"{where} must declare {flag} as True or False; got {getattr(backend, flag)!r}")

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

    def default_backend(self, target, fallback: str | None = None) -> str:
        """The backend that declares `target` (a Target, or its name) as its own, by name in
        `targets` or through its `claims(target)` (e.g. every system of several devices), else
        `fallback`, else the backend that declares itself the fallback (`fallback = True`)."""
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
        if claims:
            return claims[0]
        if fallback:
            return fallback
        return self.fallback_backend(f"target {name!r}")

    def fallback_backend(self, what: str = "this machine") -> str:
        """The one backend that declares itself the fallback (`fallback = True`): what measures
        `what` when no backend claims it, so no command names a backend to fall back on."""
        fallbacks = [b.name for b in self.values("backends") if getattr(b, "fallback", False)]
        if len(fallbacks) != 1:
            raise TensorForgeError(
                f"no installed backend measures {what}"
                + (f" (fallbacks: {', '.join(fallbacks)})" if fallbacks else "")
                + ": choose one with --backend"
            )
        return fallbacks[0]

    def for_backend(self, kind: str, backend: str):
        return [v for v in self.values(kind) if v.backend == backend]


def warn_plugins(core: PluginHost, ops: OpsHost, echo) -> None:
    """Before a measurement: each plugin left out (a reserved or contested name, a failure) and
    each source passed over, one 'warning: ...' line each, so a stranger's plugin that lost a
    name is never silent."""
    for report in core.broken() + ops.broken():
        echo(f"warning: plugin {report.name!r} is not loaded: {report.error}")
    for line in ops.passed_over:
        echo(f"warning: {line}")


def _build_ops_host(core: PluginHost) -> OpsHost:
    return OpsHost(options=core.options)


def ops_host(core: PluginHost) -> OpsHost:
    """The Ops side's plugin host beside `core`: built on first use, then the same one, so the
    Ops plugins load once per Core host, whichever of list-plugins, a command and a capture's
    provenance asks first. Callers look it up when they call it (`hosts.ops_host(core)`), so a
    test substitutes a prepared host in this one place."""
    return core.companion("tensorforge_measure", _build_ops_host)
