"""`tensorforge targets list|show`: the installed hardware targets."""

import click

from tensorforge.cli.options import complete_target, json_option, pass_host, wide_option
from tensorforge.host.plugin_host import PluginHost


OPERATING_POINTS = "operating points (*default)"


@click.group()
def targets() -> None:
    """Inspect installed hardware targets."""


@targets.command("list")
@json_option("every target's full description (as `targets show --json`)")
@wide_option
@pass_host
def targets_list(host: PluginHost, as_json: bool, wide: bool) -> None:
    """List targets with their PE array, memory and operating points."""
    from tensorforge.cli.units import binary_bytes, si
    from tensorforge.hardware.target import datasheet_ceilings

    if as_json:
        from tensorforge.files.serialize import canonical_json, to_data  # cattrs: only for JSON

        click.echo(canonical_json([to_data(host.target(n)) for n in host.names("targets")]), nl=False)
        return
    rows = []
    for name in host.names("targets"):
        t = host.target(name)
        c = datasheet_ceilings(t)
        best = max(c.compute.items(), key=lambda kv: kv[1])
        system = f"{t.devices} x " if t.devices > 1 else ""  # a system: per-device figures
        rows.append(
            [
                name,
                f"{system}{t.pe_array.units} {t.pe_array.unit_name}",
                binary_bytes(t.dram_capacity_bytes),
                si(c.dram_bytes_per_s, "B/s"),
                f"{best[0]} {si(best[1], 'FLOP/s')}",
                ", ".join(p.name + ("*" if p.name == t.default_operating_point else "") for p in t.operating_points),
            ]
        )
    from tensorforge.cli.screen import detect  # the root imports this module: the screen on first use

    screen = detect(wide)
    # One line per target, so the names read down the first column: at 80 columns the operating
    # points (which `targets show` and --wide give) make way rather than wrap every h200 row.
    headers = ["target", "PE array", "DRAM", "DRAM bw", "peak", OPERATING_POINTS]
    screen.echo(screen.table(headers, rows, optional=(OPERATING_POINTS,), one_line=True))


def _target_origin(host: PluginHost, name: str) -> str:
    """Where a shown target comes from: the plugin (and its distribution) or the file."""
    owner = host.owner("targets", name)
    if not owner:
        return f"read from {name}"
    report = host.reports.get(owner)
    dist = f" ({report.distribution} {report.version})" if report and report.distribution else ""
    return f"registered by plugin {owner!r}{dist}"


@targets.command("show")
@click.argument("name", shell_complete=complete_target)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["toml", "json"]),
    default="toml",
    show_default=True,
    help="toml: the target file format that `--target FILE` reads back; json: the same fields as data.",
)
@json_option("the target (the same as --format json)")
@pass_host
def targets_show(host: PluginHost, name: str, fmt: str, as_json: bool) -> None:
    """Print a target's full description with the source of every figure.

    NAME is an installed target or a target file. The TOML output is a target file: save it,
    edit it, and pass it to `predict --target ./FILE.toml`.
    """
    from tensorforge.files.serialize import canonical_json, to_data

    target = host.target(name)
    if fmt == "json" or as_json:
        click.echo(canonical_json(to_data(target)), nl=False)
        return
    from tensorforge.hardware.target_dump import dump_target

    click.echo(dump_target(target, _target_origin(host, name)), nl=False)
