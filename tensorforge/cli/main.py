"""The `tensorforge` command line: the Core's commands, and the root group that adds the
plugins' commands.

Every command is defined at module level, so it can be imported and invoked on its own;
`make_cli` only assembles the root. Plugins are loaded once per command line, after click
has parsed the root options that select them (`--plugins`, `--disable-plugins`,
`--trace-hooks`): the selection travels as one PluginOptions value to the Core's plugin host
and from there to the Ops side's, so a disabled plugin is never imported and nothing is
loaded twice.
"""

import sys
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import click

from tensorforge import __version__
from tensorforge.cli.options import (
    CliState,
    complete_target,
    json_option,
    operating_point_option,
    output_options,
    pass_host,
    target_option,
    wide_option,
    workload_options,
)
from tensorforge.cli.screen import PLAIN, Screen, detect
from tensorforge.errors import TensorForgeError, shorten
from tensorforge.files.output import STDOUT, claim, write_output
from tensorforge.files.serialize import canonical_json, to_data
from tensorforge.host.options import DISABLE, ONLY, TRACE, PluginOptions
from tensorforge.host.plugin_host import PluginHost, PluginReport


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


# -- list-plugins ------------------------------------------------------------------------------


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
        screen.table(["plugin", "side", "distribution", "hooks", "registered"], [_plugin_row(r) for r in reports])
    )


# -- predict -----------------------------------------------------------------------------------


@click.command()
@target_option
@workload_options(default="every plugin's default suite")
@operating_point_option
@click.option(
    "--ceilings",
    "ceilings_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Calibrated ceilings: a calibration document (`tensorforge calibrate --json "
    "> cal.json`) or a capture (its CALIBRATED section); gives a 'calibrated' "
    "lower bound. Refused unless measured on a device the target describes.",
)
@click.option(
    "--force-ceilings",
    is_flag=True,
    help="Use --ceilings even if they were measured on another device (or name none); "
    "the prediction then says whose ceilings it used.",
)
@click.option(
    "--max-candidates",
    type=click.IntRange(1, 1_000_000),
    default=None,
    help="Evaluate at most N mapping candidates per operator and strategy (default "
    "16384: every shipped mapping space, an exhaustive search). A lower N that cuts "
    "a space gives a labelled relaxation: a looser bound, never a higher one.",
)
@click.option("--detail", is_flag=True, help="Show every operator of every workload.")
@json_option("the prediction")
@wide_option
@output_options("prediction", "standard output")
@pass_host
def predict(
    host: PluginHost,
    target_name: str,
    specs: tuple[str, ...],
    suites: tuple[str, ...],
    operating_point: str | None,
    ceilings_path: str | None,
    force_ceilings: bool,
    max_candidates: int | None,
    detail: bool,
    as_json: bool,
    wide: bool,
    output: str | None,
    force: bool,
) -> None:
    """Predict the lower-bound latency of workloads on a target (PREDICTED).

    Per workload: FLOPs, compulsory bytes, chosen mapping (tile, waves), compute time,
    memory time, the lower bound, the bottleneck term, and which ceilings were used.
    """
    from tensorforge.api import run_prediction
    from tensorforge.cli.render import memory_level_names, prediction_text
    from tensorforge.hardware.ceilings_file import load_ceilings

    warn_broken(host)
    if force_ceilings and not ceilings_path:
        raise TensorForgeError("--force-ceilings applies to --ceilings, which was not given")
    if output and output != STDOUT:
        claim(output, "prediction", force).release()  # refused before the work, not after
    ceilings = load_ceilings(ceilings_path, host.target(target_name), force_ceilings) if ceilings_path else None
    target = host.target(target_name)
    estimate: object = True
    if ceilings_path:  # a calibration or capture with the estimate's calibrated coefficients
        from tensorforge.estimate.store import coefficients_in_document

        estimate = coefficients_in_document(ceilings_path, target.name) or True
    pred = run_prediction(
        host, target_name, specs, suites, operating_point, ceilings, max_candidates, estimate=estimate
    )
    to_file = bool(output) and output != STDOUT
    screen = PLAIN if (to_file or as_json) else detect(wide)
    text = (
        canonical_json(to_data(pred))
        if as_json
        else prediction_text(pred, detail, screen, memory_level_names(target)) + "\n"
    )
    emit(text, output, "prediction", force, screen)


# -- targets -----------------------------------------------------------------------------------


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
    screen = detect(wide)
    screen.echo(screen.table(["target", "PE array", "DRAM", "DRAM bw", "peak", "operating points (*default)"], rows))


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
    target = host.target(name)
    if fmt == "json" or as_json:
        click.echo(canonical_json(to_data(target)), nl=False)
        return
    from tensorforge.hardware.target_dump import dump_target

    click.echo(dump_target(target, _target_origin(host, name)), nl=False)


# -- workloads ---------------------------------------------------------------------------------


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
    kinds = [_workload_data(host, name) for name in host.names("workloads")]
    if as_json:
        click.echo(canonical_json(kinds), nl=False)
        return
    screen = detect()
    for kind in kinds:
        screen.echo(f"{kind['name']}: {kind['description']}")
        screen.echo(screen.wrap(f"  parameters: {', '.join(kind['parameters'])}", "    "))
        for preset, spec in kind["presets"].items():
            mark = "*" if preset in kind["default_suite"] else " "
            screen.echo(screen.wrap(f"  {mark} {preset}: {spec}", "      "))


CORE_COMMANDS: tuple[click.Command, ...] = (list_plugins, predict, targets, workloads)


# -- the root ----------------------------------------------------------------------------------

ROOT_HELP = """TensorForge: how fast can this run, how fast does it run, and can I trust either?

Predicts an analytical lower bound (PREDICTED) for ML workloads on hardware targets,
and, with the Ops side, measures them on a real device (MEASURED), calibrates ceilings
(CALIBRATED), records telemetry (DIAGNOSTIC) and decides only with evidence (POLICY).
Workloads, targets and mappings come from plugins: see `tensorforge list-plugins`.
"""


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"tensorforge, version {__version__}")
        ctx.exit()


def _root_options() -> list[click.Parameter]:
    # Eager, so that they are parsed before --help lists the plugins' commands.
    return [
        click.Option(
            ["--version"],
            is_flag=True,
            expose_value=False,
            is_eager=True,
            callback=_show_version,
            help="Show the version and exit.",
        ),
        click.Option(
            ["--plugins", "only"],
            metavar="NAMES",
            is_eager=True,
            help=f"Load only these plugins (entry-point names, comma-separated); overrides {ONLY}.",
        ),
        click.Option(
            ["--disable-plugins", "disable"],
            metavar="NAMES",
            is_eager=True,
            help=f"Never load these plugins (comma-separated); overrides {DISABLE}.",
        ),
        click.Option(
            ["--trace-hooks", "trace"],
            is_flag=True,
            is_eager=True,
            help=f"Print each plugin load and hook call with its duration on stderr; as {TRACE}=1.",
        ),
    ]


class TensorForgeGroup(click.Group):
    """The root command: the Core's commands plus those the plugins add, looked up once the
    root options are parsed. Turns a user-caused TensorForgeError into one line on stderr and
    exit status 2, for every command (plugins' too), also under click's CliRunner."""

    def __init__(self, host_factory: Callable[[], PluginHost] | None = None) -> None:
        super().__init__(
            "cli",
            commands=CORE_COMMANDS,
            params=_root_options(),
            help=ROOT_HELP,
            context_settings={"help_option_names": ["-h", "--help"]},
        )
        self.host_factory = host_factory

    def state(self, ctx: click.Context) -> CliState:
        """This invocation's plugins, created on first use from the parsed root options."""
        root = ctx.find_root()
        if not isinstance(root.obj, CliState):
            options = PluginOptions.from_env().overridden(
                root.params.get("only"), root.params.get("disable"), bool(root.params.get("trace"))
            )
            root.obj = CliState(options, self.host_factory)
        return root.obj

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        # Plugins add their commands before any command runs (a plugin whose hook fails is
        # then reported as broken by every command); the Core's commands keep their names.
        plugin_commands = self.state(ctx).plugin_commands()
        return self.commands.get(cmd_name) or plugin_commands.get(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(self.state(ctx).plugin_commands()))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except TensorForgeError as exc:
            click.echo(f"error: {shorten(str(exc))}", err=True)
            ctx.exit(2)


def make_cli(host_factory: Callable[[], PluginHost] | None = None) -> click.Group:
    """The root command. Without `host_factory` each command line loads the installed plugins
    with the root options' selection; tests hand in a factory of a prepared host instead
    (the selection options then have nothing to select)."""
    return TensorForgeGroup(host_factory)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: every error a user can cause ends in one line and a status."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        # Outside standalone mode click returns the exit code of ctx.exit() instead of exiting.
        code = make_cli().main(args=args, prog_name="tensorforge", standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except TensorForgeError as exc:
        click.echo(f"error: {shorten(str(exc))}", err=True)
        sys.exit(2)
    except click.exceptions.NoArgsIsHelpError as exc:
        # `tensorforge` alone asks what there is: the help, as `--help` prints it, not an error.
        click.echo(exc.ctx.get_help() if exc.ctx else exc.format_message())
        sys.exit(0)
    except click.exceptions.Abort as exc:
        # click turns a KeyboardInterrupt (Ctrl-C, or SIGTERM/SIGHUP during `run`) into Abort
        from tensorforge.host.interrupts import exit_status, signal_name

        cause = exc.__cause__ if isinstance(exc.__cause__, KeyboardInterrupt) else None
        try:
            click.echo(f"interrupted ({signal_name(cause)})" if cause else "aborted", err=True)
        except OSError:  # SIGHUP: the terminal may be gone
            pass
        sys.exit(exit_status(cause) if cause else 130)
    except click.ClickException as exc:
        # One line naming the culprit; `--help` is one flag away.
        click.echo(f"error: {shorten(exc.format_message())}", err=True)
        sys.exit(2)
    except KeyboardInterrupt as exc:
        # Ctrl-C 130, SIGTERM 143, SIGHUP 129: as a shell reports a process a signal ended.
        from tensorforge.host.interrupts import exit_status, signal_name

        try:
            click.echo(f"interrupted ({signal_name(exc)})", err=True)
        except OSError:  # SIGHUP: the terminal may be gone
            pass
        sys.exit(exit_status(exc))
