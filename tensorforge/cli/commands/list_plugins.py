"""`tensorforge list-plugins`: the installed plugins, their hooks and what each registered."""

import click

from tensorforge.cli.options import json_option, pass_host, wide_option
from tensorforge.cli.screen import detect
from tensorforge.host.plugin_host import PluginHost, PluginReport


def _plugin_row(report: PluginReport) -> list[str]:
    registered = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in sorted(report.registered.items()) if names)
    cell = f"ERROR: {report.error}" if report.error else (registered or "-")
    cell += "".join(f"; WARNING: {w}" for w in report.warnings)
    dist = f"{report.distribution} {report.version}" if report.distribution else "-"
    hooks = ", ".join(h.replace("tensorforge_", "") for h in report.hooks) or "-"
    return [report.name, report.side, dist, hooks, cell]


@click.command("list-plugins")
@json_option("the same information")
@wide_option
@pass_host
def list_plugins(host: PluginHost, as_json: bool, wide: bool) -> None:
    """List installed plugins: distribution, version, side (core/ops), hooks implemented,
    what each registered, and the error of any plugin that failed to load.

    Plugins slower to import than TENSORFORGE_SLOW_IMPORT_S seconds (default 1) are named
    in a warning; they still work.
    """
    from tensorforge.files.serialize import canonical_json, to_data

    reports = host.all_reports()
    for r in reports:
        for warning in r.warnings:
            click.echo(f"warning: plugin {r.name!r} is {warning}", err=True)
    for line in host.selection_problems():
        click.echo(f"warning: {line}", err=True)
    if as_json:
        click.echo(canonical_json(to_data(reports)), nl=False)
        return
    screen = detect(wide)
    screen.echo(
        screen.table(
            ["plugin", "side", "distribution", "hooks", "registered"],
            [_plugin_row(r) for r in reports],
            # hook names are long and never cut: on a narrow screen they give way first
            optional=("hooks", "distribution"),
        )
    )
