from . import hookspec


@hookspec
def tensorforge_add_commands(cli):
    """Add subcommands to the ``tensorforge`` command line.

    ``cli`` is the root :class:`click.Group`; call ``cli.add_command(command)``. Import heavy
    dependencies inside the command body, not at module level, so that ``--help`` and the
    other commands stay fast and the Core never imports them. Return nothing.
    """


@hookspec
def tensorforge_plugin_reports():
    """Describe plugins that a side other than the Core loads (the Ops side does this).

    Return a list of :class:`tensorforge.plugins.PluginReport` for ``list-plugins`` to show,
    or None. This is how a host that wraps the Core reports its own plugins without the Core
    importing it.
    """
