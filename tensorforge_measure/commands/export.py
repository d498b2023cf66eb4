"""`tensorforge export`: send an existing, verified capture to sinks such as MLflow."""

import sys

import click

from tensorforge.api import PluginHost, pass_host
from tensorforge_measure import host as hosts


@click.command("export")
@click.argument("capture", type=click.Path(dir_okay=False))
@click.option("--to", "sink_names", multiple=True, required=True, help="Sink name (see list-plugins).")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help="An option for the sinks.")
@pass_host
def export_command(core: PluginHost, capture: str, sink_names: tuple[str, ...], options: tuple[str, ...]) -> None:
    """Send an existing, verified capture to sinks such as MLflow. Exit 0 when every sink took
    it, 1 when one failed (named in one line), 2 for bad input."""
    from tensorforge_measure.policy.evidence import load_evidence
    from tensorforge_measure.run.export import export_all, parse_options, resolve_sinks

    sinks = resolve_sinks(hosts.ops_host(core), sink_names)
    evidence = load_evidence(capture, "export")
    results = export_all(
        sinks, evidence.capture, capture, parse_options(options), lambda line: click.echo(line, err=True)
    )
    if not all(r.ok for r in results):
        sys.exit(1)
