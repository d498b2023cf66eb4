"""Core hook specifications, all in this one module (pluggy project 'tensorforge', entry-point group 'tensorforge').

Plugins implement these with `tensorforge.hookspecs.hookimpl`. Registration hooks hand the
plugin a `register` callback rather than collecting return values, so the host validates
types, names and duplicates in one place and names the plugin in every error.

The specs are typed, as tox types its hooks: a plugin that annotates its implementation with
the same types (`register: RegisterWorkload`) is checked by mypy against what the host calls.
"""

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

import click
import pluggy

from tensorforge.bound.mappings.base import MappingStrategy
from tensorforge.hardware.target import Target
from tensorforge.workloads.kinds import WorkloadKind

if TYPE_CHECKING:
    from tensorforge.host.plugin_host import PluginHost, PluginReport

PROJECT = "tensorforge"
ENTRY_POINT_GROUP = "tensorforge"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

# The callbacks the registration hooks receive: call one with each thing to register.
RegisterWorkload: TypeAlias = Callable[[WorkloadKind], None]
RegisterTarget: TypeAlias = Callable[[Target], None]
RegisterMapping: TypeAlias = Callable[[MappingStrategy], None]


# The hook through which workload plugins register their kinds (GEMM, Conv2D, ...).


@hookspec
def tensorforge_register_workloads(register: RegisterWorkload) -> None:
    """Register workload kinds.

    Call ``register(kind)`` once per kind, where ``kind`` is an instance of a subclass of
    :class:`tensorforge.workloads.kinds.WorkloadKind` with a unique lowercase ``name`` (e.g. 'gemm'),
    its ``params_type``, ``presets`` and ``default_suite``. Preset names must be unique across
    all installed plugins. What only a kind knows it answers as a method (defaults in the base
    class): ``estimate_class(params)``, one of
    :data:`tensorforge.estimate.classes.CLASSES` (the estimate's scoring), and
    ``tokens(params)``, tokens one execution processes or None (joules per token). Methods of
    the registered kind rather than hooks of their own: each answer belongs to one kind, so the
    Core asks that kind instead of recognising it by name. Return nothing.
    """


# The hook through which target plugins register hardware targets.


@hookspec
def tensorforge_register_targets(register: RegisterTarget) -> None:
    """Register hardware targets.

    Call ``register(target)`` once per target, where ``target`` is a
    :class:`tensorforge.hardware.target.Target` with a unique name (e.g. 'rtx3050-laptop'), its PE
    array, SRAM levels, DRAM capacity, operating points and the source of every datasheet
    figure in ``sources``. Return nothing.
    """


# The hook through which mapping strategies register (the Core's own among them).


@hookspec
def tensorforge_register_mappings(register: RegisterMapping) -> None:
    """Register mapping strategies.

    Call ``register(strategy)`` once per strategy, where ``strategy`` is an instance of
    :class:`tensorforge.bound.mappings.base.MappingStrategy`: a unique ``name``, the problem types it
    maps (``problem_types``), and ``explore(problem, machine, residency)`` returning a
    :class:`tensorforge.bound.mappings.base.MappingChoice` whose latency is a lower bound over the
    strategy's whole mapping space, evaluating at most ``machine.max_candidates`` candidates,
    chosen deterministically, with ``search`` saying how ("exhaustive", "relaxation" when the
    limit cut the search, "unstated"). :class:`tensorforge.bound.mappings.search.GridStrategy` does
    this for any finite grid. Return nothing.
    """


# Hooks of the command line: plugins add commands, and a side that wraps the Core (Ops) reports its own plugins to `list-plugins`.


@hookspec
def tensorforge_add_commands(cli: click.Group) -> None:
    """Add subcommands to the ``tensorforge`` command line.

    Call ``cli.add_command(command)`` with click commands defined at module level; options the
    Core's commands share (``--target``, ``--workload``/``--suite``, ``--operating-point``) are
    in :mod:`tensorforge.api` so they read the same everywhere, and a command reaches the Core's
    plugin host with ``tensorforge.api.pass_host`` (or ``core_host(ctx)``). The host calls this
    once per command line, after the root options chose the plugins; a name the Core's own
    commands use stays theirs. Import heavy dependencies inside the command body, not at
    module level, so that ``--help`` and the other commands stay fast and the Core never
    imports them. Return nothing.
    """


@hookspec
def tensorforge_plugin_reports(host: "PluginHost") -> list["PluginReport"] | None:
    """Describe plugins that a side other than the Core loads (the Ops side does this).

    ``host`` is the Core's :class:`tensorforge.host.plugin_host.PluginHost`: keep per-host state with
    ``host.companion(key, build)`` and load with ``host.options``, so the other side loads once
    per process and selects the same plugins. Return a list of
    :class:`tensorforge.host.plugin_host.PluginReport` for ``list-plugins`` to show, or None. This is
    how a host that wraps the Core reports its own plugins without the Core importing it.
    """


# What the host adds to its plugin manager (one module holds every spec).
SPEC_MODULES = (sys.modules[__name__],)
