"""Hooks of the command line: plugins add commands, and a side that wraps the Core (Ops)
reports its own plugins to `list-plugins`."""

from typing import TYPE_CHECKING

import click

from . import hookspec

if TYPE_CHECKING:
    from ..plugins import PluginHost, PluginReport


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

    ``host`` is the Core's :class:`tensorforge.plugins.PluginHost`: keep per-host state with
    ``host.companion(key, build)`` and load with ``host.options``, so the other side loads once
    per process and selects the same plugins. Return a list of
    :class:`tensorforge.plugins.PluginReport` for ``list-plugins`` to show, or None. This is
    how a host that wraps the Core reports its own plugins without the Core importing it.
    """
