"""The plugin host: loads entry points one at a time, validates what plugins register, and
keeps a broken plugin from taking the others down.

Why not `PluginManager.load_setuptools_entrypoints` alone: it stops at the first plugin that
fails to import, and `check_pending()` raises for the first unknown hook without saying which
plugin is at fault. Loading each entry point ourselves lets us record the error against the
plugin, unregister it, and keep going; `check_pending()` then runs over what remains. The entry
points come from tensorforge/host/entry_points.py (importlib.metadata's rules, a fraction of its
start-up cost).
"""

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import pluggy

from tensorforge import hookspecs
from tensorforge.bound.mappings.base import MappingStrategy
from tensorforge.errors import PluginError, closest, one_line, unknown
from tensorforge.host import entry_points
from tensorforge.hardware.target import Target, validate_target
from tensorforge.host.options import DISABLE, ONLY, SLOW_IMPORT, PluginOptions
from tensorforge.host.tracing import Tracer
from tensorforge.workloads.kinds import WorkloadKind

T = TypeVar("T")

REGISTRATION_HOOKS = {
    "tensorforge_register_workloads": "workloads",
    "tensorforge_register_targets": "targets",
    "tensorforge_register_mappings": "mappings",
}


# The distributions that ship with TensorForge. Their names are reserved: another plugin that
# registers one of them is the one in error, whatever the entry-point order (a stranger's
# target called 'h200' with 1 SM once replaced the shipped 132-SM one with a warning line and
# exit 0). A name two other plugins both register is an error for both: neither is used.
# The list is packaging, not code: the `tensorforge` distribution declares each shipped
# distribution as an entry point of group SHIPPED_GROUP (pyproject.toml), so the Core's code
# names no plugin, and only the `tensorforge` distribution itself can add to the list.
SHIPPED_GROUP = "tensorforge_shipped"


@functools.cache
def shipped_distributions() -> frozenset[str]:
    """The normalised names of the distributions that ship with TensorForge, itself included."""
    declared = {
        _normal(ep.name)
        for ep in entry_points.entry_points(SHIPPED_GROUP)
        if ep.dist is not None and _normal(ep.dist.name) == "tensorforge"
    }
    return frozenset(declared | {"tensorforge"})


def _normal(distribution: str | None) -> str:
    return (distribution or "").lower().replace("_", "-").replace(".", "-")


# How one registered thing of each kind is named in messages.
SINGULAR = {
    "workloads": "workload",
    "targets": "target",
    "mappings": "mapping",
    "backends": "backend",
    "builders": "builder",
    "probes": "probe",
    "telemetry": "telemetry source",
    "policies": "policy",
    "presets": "preset",
    "host_energy": "host energy source",
}


def singular(kind: str) -> str:
    return SINGULAR.get(kind, kind)


@attrs.frozen
class PluginReport:
    """What `list-plugins` shows for one plugin."""

    name: str
    side: str  # 'core' or 'ops'
    distribution: str | None
    version: str | None
    module: str
    hooks: tuple[str, ...] = ()
    registered: dict[str, tuple[str, ...]] = attrs.field(factory=dict)
    error: str | None = None
    # Not errors: the plugin works (e.g. it was slow to import).
    warnings: tuple[str, ...] = ()


@attrs.frozen
class Registered:
    """One registered thing and the plugin that registered it."""

    value: Any
    plugin: str


def _unknown_hooks(pm: pluggy.PluginManager, plugin) -> list[str]:
    """Hook implementations of `plugin` with no spec, or with arguments the spec lacks."""
    problems = []
    for hookcaller in pm.get_hookcallers(plugin) or []:
        for impl in hookcaller.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            if hookcaller.spec is None:
                if not impl.opts.get("optionalhook"):
                    known = [
                        name for name, caller in vars(pm.hook).items() if getattr(caller, "spec", None) is not None
                    ]
                    problems.append(f"unknown hook {hookcaller.name!r}{closest(hookcaller.name, known)}")
            else:
                extra = set(impl.argnames) - set(hookcaller.spec.argnames)
                if extra:
                    problems.append(f"hook {hookcaller.name!r} takes unknown argument(s) {', '.join(sorted(extra))}")
    return problems


def _outcome(staged: list[Any]) -> Callable[[Any], str]:
    """What a registration call registered, for the trace."""
    return lambda _: "registered " + (", ".join(str(getattr(v, "name", v)) for v in staged) or "nothing")


class BaseHost:
    """Loads one side's plugins from its entry-point group and holds what they registered.
    The Core's PluginHost and the Ops side's host differ only in the class attributes."""

    project = hookspecs.PROJECT
    group = hookspecs.ENTRY_POINT_GROUP
    side = "core"
    spec_modules: tuple = hookspecs.SPEC_MODULES
    registration_hooks: dict[str, str] = REGISTRATION_HOOKS
    expected_types: dict[str, type] = {}

    def __init__(
        self,
        load_entry_points: bool = True,
        extra_plugins: tuple[tuple[str, Any], ...] = (),
        options: PluginOptions | None = None,
    ):
        self.pm = pluggy.PluginManager(self.project)
        for module in self.spec_modules:
            self.pm.add_hookspecs(module)
        # Plugin selection, tracing and the slow-import threshold: given by whoever builds the
        # host (the command line), else read from the environment once (plugin_options.py),
        # so one host is one consistent view.
        self.options = options if options is not None else PluginOptions.from_env()
        self.tracer = Tracer(self.side, self.options.trace)
        self.tracer.monitor(self.pm)
        self.reports: dict[str, PluginReport] = {}
        self._registered: dict[str, dict[str, Registered]] = {kind: {} for kind in self.registration_hooks.values()}
        # (namespace, name) -> the two plugins that both registered it: the name is unusable.
        self._conflicts: dict[tuple[str, str], list[str]] = {}
        if load_entry_points:
            self._load_entry_points()
        for name, plugin in extra_plugins:
            self._add(name, plugin, None, None, getattr(plugin, "__name__", name))
        self.pm.check_pending()  # everything unknown was removed above; this guards the rest
        self._collect()

    # -- loading ---------------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        for ep in sorted(entry_points.entry_points(self.group), key=lambda ep: ep.name):
            if not self.options.selects(ep.name) or ep.name in self.reports:
                continue
            dist_name = ep.dist.name if ep.dist is not None else None
            version = ep.dist.version if ep.dist is not None else None
            start = time.perf_counter()
            try:
                plugin = ep.load()
            except BaseException as exc:  # a plugin's import may raise anything, even SystemExit
                if isinstance(exc, KeyboardInterrupt):
                    raise
                error = f"failed to load: {one_line(exc)}"
                self.tracer.load(ep.name, ep.value, time.perf_counter() - start, error)
                self.reports[ep.name] = PluginReport(ep.name, self.side, dist_name, version, ep.value, error=error)
                continue
            seconds = time.perf_counter() - start
            self.tracer.load(ep.name, ep.value, seconds)
            self._add(ep.name, plugin, dist_name, version, ep.value)
            if seconds > self.options.slow_import_s:
                # Slow is not broken: the plugin stays, and list-plugins names it.
                report = self.reports[ep.name]
                self.reports[ep.name] = attrs.evolve(
                    report,
                    warnings=report.warnings
                    + (f"slow to import: {seconds:.2f} s (threshold {self.options.slow_import_s:g} s, {SLOW_IMPORT})",),
                )

    def _add(self, name, plugin, dist_name, version, module) -> None:
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:
            # pluggy's validation message puts the culprit (e.g. the unknown argument) on its
            # later lines: keep them, joined into one line.
            text = (
                f"{type(exc).__name__}: " + "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
                if isinstance(exc, pluggy.PluginValidationError)
                else one_line(exc)
            )
            self.reports[name] = PluginReport(
                name, self.side, dist_name, version, module, error=f"failed to register: {text}"
            )
            return
        problems = _unknown_hooks(self.pm, plugin)
        hooks = tuple(sorted(c.name for c in self.pm.get_hookcallers(plugin) or []))
        if problems:
            self.pm.unregister(plugin)
            self.reports[name] = PluginReport(
                name, self.side, dist_name, version, module, hooks, error="; ".join(problems)
            )
            return
        self.reports[name] = PluginReport(name, self.side, dist_name, version, module, hooks)

    # -- registration ----------------------------------------------------------------------
    def _collect(self) -> None:
        """Call each plugin's registration hooks one at a time, so a failure is attributed
        to exactly one plugin and leaves the others' registrations intact."""
        for hook_name, kind in self.registration_hooks.items():
            # get_hookimpls() is in registration (entry-point name) order; pluggy *calls* them
            # in reverse. Registration order decides who keeps a duplicated name: the first.
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                plugin_name = self._name_of(impl.plugin)
                if self.reports[plugin_name].error:
                    continue
                staged: list[Any] = []
                try:
                    self.tracer.call(
                        plugin_name,
                        hook_name,
                        impl.function,
                        {arg: staged.append for arg in impl.argnames},
                        _outcome(staged),
                    )
                    accepted = [self._validate(kind, value, plugin_name) for value in staged]
                    self._settle_duplicates(kind, accepted, plugin_name)
                except Exception as exc:
                    message = str(exc) if isinstance(exc, PluginError) else f"{hook_name} raised {one_line(exc)}"
                    self._fail(plugin_name, message)
                    continue
                for value in accepted:
                    self._registered[kind][value.name] = Registered(value, plugin_name)
                    self._accepted(kind, value, plugin_name)
                report = self.reports[plugin_name]
                names = tuple(sorted(report.registered.get(kind, ()) + tuple(v.name for v in accepted)))
                self.reports[plugin_name] = attrs.evolve(report, registered={**report.registered, kind: names})

    def _name_of(self, plugin: object) -> str:
        """The name a registered plugin was registered under (every plugin here has one)."""
        name = self.pm.get_name(plugin)
        if name is None:
            raise LookupError(f"{plugin!r} is not registered with this host")
        return name

    def _fail(self, plugin_name: str, message: str) -> None:
        """Drop everything the plugin registered: half a plugin is worse than none."""
        for kind in self._registered.values():
            for key in [k for k, reg in kind.items() if reg.plugin == plugin_name]:
                del kind[key]
        self._forget(plugin_name)
        self.reports[plugin_name] = attrs.evolve(self.reports[plugin_name], registered={}, error=message)
        # ...nor its other hooks (commands, reports): it is listed with its error, nothing more.
        plugin = self.pm.get_plugin(plugin_name)
        if plugin is not None:
            self.pm.unregister(plugin)

    def _accepted(self, kind: str, value, plugin: str) -> None:
        """Hook for subclasses to index what was registered."""

    def _forget(self, plugin: str) -> None:
        """Hook for subclasses to drop their indexes of a failed plugin."""

    def _check(self, kind: str, value, plugin: str) -> None:
        """Hook for subclasses: raise PluginError when `value` is invalid."""

    def _validate(self, kind: str, value, plugin: str):
        expected = self.expected_types[kind]
        if not isinstance(value, expected):
            raise PluginError(
                f"plugin {plugin!r} registered a {type(value).__name__} as a "
                f"{singular(kind)}; expected {expected.__module__}.{expected.__name__}"
            )
        name = getattr(value, "name", "")
        if not isinstance(name, str) or not name or name != name.strip() or name.lower() != name:
            raise PluginError(
                f"plugin {plugin!r} registered a {singular(kind)} with invalid name {name!r} "
                "(must be a non-empty lowercase string)"
            )
        if name in self._registered[kind] and self._registered[kind][name].plugin == plugin:
            raise PluginError(f"plugin {plugin!r} registered {singular(kind)} {name!r} twice")
        self._check(kind, value, plugin)
        return value

    # -- duplicate names ------------------------------------------------------------------
    def _names_claimed(self, kind: str, value) -> list[tuple[str, str]]:
        """(namespace, name) pairs `value` claims: its own name, and for subclasses more
        (a workload kind's presets)."""
        return [(kind, value.name)]

    def _holder(self, namespace: str, name: str) -> str | None:
        found = self._registered.get(namespace, {}).get(name)
        return found.plugin if found else None

    def _shipped(self, plugin: str) -> bool:
        report = self.reports.get(plugin)
        return report is not None and _normal(report.distribution) in shipped_distributions()

    def _describe(self, plugin: str) -> str:
        report = self.reports.get(plugin)
        if report is None or not report.distribution:
            return f"plugin {plugin!r} (no distribution)"
        return f"plugin {plugin!r} (distribution {report.distribution} {report.version or ''})".replace(" )", ")")

    def _settle_duplicates(self, kind: str, accepted: list[Any], plugin: str) -> None:
        """Apply the duplicate-name rule (see shipped_distributions) before `plugin`'s values
        are accepted: raise PluginError when `plugin` is the one in error; fail the other
        plugin when the other one is."""
        seen = set()
        for value in accepted:
            for namespace, name in self._names_claimed(kind, value):
                what = singular(namespace)
                if (namespace, name) in seen:
                    raise PluginError(f"plugin {plugin!r} registered {what} {name!r} twice")
                seen.add((namespace, name))
                taken = self._conflicts.get((namespace, name))
                if taken:
                    raise PluginError(
                        f"{self._describe(plugin)} registered {what} {name!r}, which "
                        f"{' and '.join(taken)} also registered: neither is used"
                    )
                other = self._holder(namespace, name)
                if other is None or other == plugin:
                    continue
                if self._shipped(other) and not self._shipped(plugin):
                    raise PluginError(
                        f"{self._describe(plugin)} registered {what} {name!r}, a name "
                        f"reserved by the shipped {self._describe(other)}"
                    )
                if self._shipped(plugin) and not self._shipped(other):
                    self._fail(
                        other,
                        f"{self._describe(other)} registered {what} {name!r}, a name "
                        f"reserved by the shipped {self._describe(plugin)}",
                    )
                    continue
                both = [self._describe(other), self._describe(plugin)]
                self._conflicts[(namespace, name)] = both
                message = (
                    f"{what} {name!r} is registered by both {both[0]} and {both[1]}: neither "
                    f"is used; uninstall one, or leave one out with --disable-plugins"
                )
                self._fail(other, message)
                raise PluginError(message)

    # -- queries ---------------------------------------------------------------------------
    def broken(self) -> list[PluginReport]:
        return [r for r in self.reports.values() if r.error]

    def broken_hint(self) -> str:
        """'; broken plugins: NAME (error), ...' to append to a "not found" error, or ''."""
        broken = self.broken()
        return ("; broken plugins: " + ", ".join(f"{r.name} ({r.error})" for r in broken)) if broken else ""

    def names(self, kind: str) -> list[str]:
        return sorted(self._registered[kind])

    def get(self, kind: str, name: str) -> Any:
        """The registered `kind` called `name`, or an error naming the known ones (and any
        broken plugin that might have registered it)."""
        if name not in self._registered[kind]:
            error = unknown(singular(kind), name, self._registered[kind])
            raise type(error)(str(error) + self.broken_hint())
        return self._registered[kind][name].value

    def find(self, kind: str, name: str) -> Any | None:
        """The registered `kind` called `name`, or None (no error: for lookups that may miss)."""
        found = self._registered[kind].get(name)
        return found.value if found else None

    def values(self, kind: str) -> list[Any]:
        return [self._registered[kind][n].value for n in self.names(kind)]

    def owner(self, kind: str, name: str) -> str | None:
        """The plugin that registered `name`, or None."""
        found = self._registered[kind].get(name)
        return found.plugin if found else None

    def selection_problems(self) -> list[str]:
        """A line for each name in TENSORFORGE_PLUGINS / TENSORFORGE_DISABLE that no installed
        entry point has, on either side (both read them): most likely a typo."""
        if not self.options.named():
            return []
        installed = {
            ep.name
            for ep in entry_points.all_entry_points()
            if ep.group == self.group or ep.group.startswith(hookspecs.ENTRY_POINT_GROUP + "_")
        }
        lines = []
        for name in sorted(self.options.named() - installed):
            variable = ONLY if name in (self.options.only or ()) else DISABLE
            lines.append(f"{variable} names {name!r}, which no installed plugin has{closest(name, installed)}")
        return lines


class PluginHost(BaseHost):
    """Loads Core-side plugins (group 'tensorforge') and holds what they registered."""

    expected_types = {"workloads": WorkloadKind, "targets": Target, "mappings": MappingStrategy}

    def __init__(
        self,
        load_entry_points: bool = True,
        extra_plugins: tuple[tuple[str, Any], ...] = (),
        options: PluginOptions | None = None,
    ):
        self._presets: dict[str, tuple[str, str]] = {}  # preset name -> (kind name, plugin)
        self._companions: dict[str, Any] = {}
        super().__init__(load_entry_points, extra_plugins, options)

    def companion(self, key: str, build: Callable[["PluginHost"], T]) -> T:
        """What another side keeps beside this host, built by `build(self)` on first use and
        the same object afterwards: the Ops side's own plugin host lives here, so one
        process loads the Ops plugins once, with this host's plugin selection."""
        if key not in self._companions:
            self._companions[key] = build(self)
        return self._companions[key]

    def _accepted(self, kind, value, plugin):
        if kind == "workloads":
            for preset in value.presets:
                self._presets[preset] = (value.name, plugin)

    def _forget(self, plugin):
        for key in [k for k, (_, p) in self._presets.items() if p == plugin]:
            del self._presets[key]

    def _names_claimed(self, kind, value):
        names = super()._names_claimed(kind, value)
        if kind == "workloads":
            names += [("presets", preset) for preset in value.presets]
        return names

    def _holder(self, namespace, name):
        if namespace == "presets":
            found = self._presets.get(name)
            return found[1] if found else None
        return super()._holder(namespace, name)

    def _check(self, kind, value, plugin):
        name = value.name
        if kind == "targets":
            try:
                validate_target(value)
            except ValueError as exc:
                raise PluginError(f"plugin {plugin!r}: {exc}") from None
        if kind == "workloads":
            missing = [p for p in value.default_suite if p not in value.presets]
            if missing:
                raise PluginError(
                    f"plugin {plugin!r}: workload {name!r} lists unknown preset {missing[0]!r} in its default suite"
                )
        if kind == "mappings" and not value.problem_types:
            raise PluginError(f"plugin {plugin!r}: mapping {name!r} declares no problem types")

    def workload_kind(self, name: str) -> WorkloadKind:
        return self.get("workloads", name)

    def target(self, name: str) -> Target:
        """An installed target by name, or a target file (a path: see target_file.py)."""
        from tensorforge.hardware.target_file import load_target_file, looks_like_path

        if looks_like_path(name):
            return load_target_file(name)
        known = self._registered["targets"]
        if name not in known:
            # the closest installed target is the usual starting point of a target file
            import difflib

            error = unknown("target", name, known)
            like = (difflib.get_close_matches(name[:64], sorted(known), n=1, cutoff=0) or ["NAME"])[0]
            file = (
                f"{name}.toml" if name.replace("-", "").replace("_", "").isalnum() and len(name) <= 32 else "mine.toml"
            )
            raise type(error)(
                f"{error}; or describe it in a target file: `tensorforge targets show {like} > {file}`, "
                f"edit it, then --target ./{file} (docs/targets.md){self.broken_hint()}"
            )
        return known[name].value

    def mappings(self) -> list[MappingStrategy]:
        return [self._registered["mappings"][n].value for n in self.names("mappings")]

    def preset(self, name: str) -> tuple[WorkloadKind, dict[str, Any]]:
        if name not in self._presets:
            raise unknown("workload preset", name, self._presets, listed_by="tensorforge workloads")
        kind_name, _ = self._presets[name]
        kind = self.workload_kind(kind_name)
        return kind, dict(kind.presets[name])

    def preset_names(self) -> list[str]:
        return sorted(self._presets)

    def default_suite(self) -> list[str]:
        names: list[str] = []
        for kind_name in self.names("workloads"):
            names.extend(self.workload_kind(kind_name).default_suite)
        return names

    def all_reports(self) -> list[PluginReport]:
        """Core-side reports plus whatever other sides report through the hook."""
        reports = list(self.reports.values())
        for impl in self.pm.hook.tensorforge_plugin_reports.get_hookimpls():
            name = self._name_of(impl.plugin)
            try:
                extra = (
                    self.tracer.call(
                        name,
                        "tensorforge_plugin_reports",
                        impl.function,
                        {"host": self} if "host" in impl.argnames else {},
                    )
                    or []
                )
            except Exception as exc:
                reports.append(
                    PluginReport(
                        name + ":reports",
                        "ops",
                        None,
                        None,
                        name,
                        error=f"tensorforge_plugin_reports raised {one_line(exc)}",
                    )
                )
                continue
            reports.extend(r for r in extra if isinstance(r, PluginReport))
        return sorted(reports, key=lambda r: (r.side, r.name))

    def call_add_commands(self, cli) -> None:
        for impl in self.pm.hook.tensorforge_add_commands.get_hookimpls():
            name = self._name_of(impl.plugin)
            try:
                self.tracer.call(name, "tensorforge_add_commands", impl.function, {"cli": cli})
            except Exception as exc:
                self.reports[name] = attrs.evolve(
                    self.reports[name], error=f"tensorforge_add_commands raised {one_line(exc)}"
                )
