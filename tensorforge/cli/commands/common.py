"""What the Core's commands share: warnings about plugins, and where a command's text goes."""

import click

from tensorforge.cli.screen import PLAIN, Screen
from tensorforge.files.output import STDOUT, write_output
from tensorforge.host.plugin_host import PluginHost


def warn_broken(host: PluginHost) -> None:
    for report in host.broken():
        click.echo(f"warning: plugin {report.name!r} is not loaded: {report.error}", err=True)
    for line in host.selection_problems():
        click.echo(f"warning: {line}", err=True)


def emit(text: str, output: str | None, what: str, force: bool = False, screen: Screen = PLAIN) -> None:
    """`text` to standard output (in colour on a terminal), or to `output` by the one rule for
    written files (tensorforge/files/output.py)."""
    if output and output != STDOUT:
        written = write_output(output, text, what, force)
        click.echo(f"wrote {written}", err=True)
    else:
        screen.echo(text, nl=False)
