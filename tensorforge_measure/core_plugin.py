"""The Ops side's face towards the Core: the hook implementations registered under the Core's
entry-point group. It adds the Ops side's commands (tensorforge_measure/commands/, one module
each) to the CLI and reports the Ops side's plugins to `list-plugins`; torch is imported only
inside command bodies, through the backend.

The Ops side's own plugins load once per Core host (tensorforge_measure/host.py: a companion of
it, with its plugin selection), whichever of list-plugins, `run` and its provenance asks first.
Nothing imports this module but the Core's plugin host: the commands reach the Ops host through
tensorforge_measure.host, never through here."""

import click

from tensorforge.api import PluginHost, PluginReport
from tensorforge.hookspecs import hookimpl
from tensorforge_measure import host as hosts
from tensorforge_measure.commands.calibrate import calibrate
from tensorforge_measure.commands.evaluate import evaluate_command
from tensorforge_measure.commands.export import export_command
from tensorforge_measure.commands.gate import gate
from tensorforge_measure.commands.report import report
from tensorforge_measure.commands.rightsize import rightsize
from tensorforge_measure.commands.run import run
from tensorforge_measure.commands.verify import verify

COMMANDS: tuple[click.Command, ...] = (
    run,
    calibrate,
    verify,
    gate,
    rightsize,
    report,
    export_command,
    evaluate_command,
)


@hookimpl
def tensorforge_plugin_reports(host: PluginHost) -> list[PluginReport]:
    return list(hosts.ops_host(host).reports.values())


@hookimpl
def tensorforge_add_commands(cli: click.Group) -> None:
    for command in COMMANDS:
        cli.add_command(command)
