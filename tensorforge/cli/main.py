"""The `tensorforge` command line: the root group, which assembles the Core's commands (one
module each under tensorforge/cli/commands/) and adds the plugins' commands.

`make_cli` only assembles the root. Plugins are loaded once per command line, after click
has parsed the root options that select them (`--plugins`, `--disable-plugins`,
`--trace-hooks`): the selection travels as one PluginOptions value to the Core's plugin host
and from there to the Ops side's, so a disabled plugin is never imported and nothing is
loaded twice.
"""

import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from tensorforge import __version__
from tensorforge.cli.commands.targets import targets
from tensorforge.cli.lazy_command import LazyCommand
from tensorforge.cli.options import CliState
from tensorforge.errors import TensorForgeError, shorten
from tensorforge.host.options import DISABLE, ONLY, TRACE, PluginOptions
from tensorforge.host.plugin_host import PluginHost

# Each Core command by name, where it lives and the first sentence of its help: its module (and
# what it imports: the screen, the output rules, its options) loads only when it runs or shows its
# own help, as the Ops side's commands do (tensorforge_measure/core_plugin.py). A test holds each
# sentence equal to the command's own. `targets` is a group, and what walks the command tree
# (shell completion, help) looks for groups by type: it is imported as it is, a small module.
list_plugins, predict, workloads = (
    LazyCommand(name, f"tensorforge.cli.commands.{where}", summary)
    for name, where, summary in (
        (
            "list-plugins",
            "list_plugins:list_plugins",
            "List installed plugins: distribution, version, side (core/ops), hooks implemented, what each "
            "registered, and the error of any plugin that failed to load.",
        ),
        ("predict", "predict:predict", "Predict the lower-bound latency of workloads on a target (PREDICTED)."),
        (
            "workloads",
            "workloads:workloads",
            "List workload kinds, their parameters and presets (* = in the default suite).",
        ),
    )
)
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
        except click.MissingParameter as exc:
            # `run` without -t: name what -t takes, in the same line
            if exc.param is not None and exc.param.name == "target_name" and not exc.message:
                names = ", ".join(self.state(ctx).host.names("targets"))
                raise click.MissingParameter(
                    f"Targets: {names} (or a target file).", ctx=exc.ctx, param=exc.param
                ) from None
            raise


def make_cli(host_factory: Callable[[], PluginHost] | None = None) -> click.Group:
    """The root command. Without `host_factory` each command line loads the installed plugins
    with the root options' selection; tests hand in a factory of a prepared host instead
    (the selection options then have nothing to select)."""
    return TensorForgeGroup(host_factory)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: every error a user can cause ends in one line and a status."""
    args = sys.argv[1:] if argv is None else list(argv)
    nul = next((a for a in args if "\0" in a), None)
    if nul is not None:  # a caller's argv (a shell's cannot hold one); click's os.stat would raise
        click.echo(f"error: argument {nul!r}: the path contains a NUL byte", err=True)
        sys.exit(2)
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
