"""`tensorforge workloads`: workload kinds, their parameters and presets."""

from typing import Any

import attrs
import click

from tensorforge.cli.options import json_option, pass_host
from tensorforge.cli.screen import detect
from tensorforge.host.plugin_host import PluginHost


def _workload_data(host: PluginHost, name: str) -> dict[str, Any]:
    kind = host.workload_kind(name)
    return {
        "name": name,
        "description": kind.description,
        "parameters": [f.name for f in attrs.fields(kind.params_type)],
        "presets": {p: kind.spec(kind.parse(kind.presets[p])) for p in sorted(kind.presets)},
        "default_suite": sorted(kind.default_suite),
    }


@click.command()
@json_option("the kinds, their parameters and presets")
@pass_host
def workloads(host: PluginHost, as_json: bool) -> None:
    """List workload kinds, their parameters and presets (* = in the default suite)."""
    from tensorforge.files.serialize import canonical_json

    kinds = [_workload_data(host, name) for name in host.names("workloads")]
    if as_json:
        click.echo(canonical_json(kinds), nl=False)
        return
    screen = detect()
    for kind in kinds:
        screen.echo(screen.wrap(f"{kind['name']}: {kind['description']}"))
        screen.echo(screen.wrap(f"  parameters: {', '.join(kind['parameters'])}", "    "))
        for preset, spec in kind["presets"].items():
            mark = "*" if preset in kind["default_suite"] else " "
            screen.echo(screen.wrap(f"  {mark} {preset}: {spec}", "      "))
