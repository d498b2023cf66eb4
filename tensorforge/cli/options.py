"""What the commands of the command line share: the plugins of one invocation, and the
options several commands take.

The options are declared once here, so `predict`, `run` and `rightsize` (the last two come
from the Ops side through tensorforge.api) spell and explain `--target`, `--workload`,
`--suite`, `--operating-point`, `--wide` and `--json` the same way, and complete target and
preset names in the shell the same way (`tensorforge completion`). The plugins are loaded once per invocation,
after click has parsed the root options that choose them; every command reaches them through
`pass_host` or `core_host`, never through a global.
"""

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import attrs
import click

from tensorforge.host.options import PluginOptions
from tensorforge.host.plugin_host import PluginHost

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


@attrs.define
class CliState:
    """One command line's plugins: the Core host, built on first use with the root options'
    selection (or by the factory a test hands to make_cli), and the commands plugins add."""

    options: PluginOptions
    factory: Callable[[], PluginHost] | None = None
    _host: PluginHost | None = attrs.field(default=None, init=False)
    _commands: dict[str, click.Command] | None = attrs.field(default=None, init=False)

    @property
    def host(self) -> PluginHost:
        if self._host is None:
            self._host = self.factory() if self.factory is not None else PluginHost(options=self.options)
        return self._host

    def plugin_commands(self) -> dict[str, click.Command]:
        """The commands plugins add through tensorforge_add_commands, collected once."""
        if self._commands is None:
            collector = click.Group("tensorforge")
            self.host.call_add_commands(collector)
            self._commands = dict(collector.commands)
        return self._commands


def core_host(ctx: click.Context | None = None) -> PluginHost:
    """The Core's plugin host of the running command line (the current click context's)."""
    context = ctx if ctx is not None else click.get_current_context()
    state = context.find_object(CliState)
    if state is None:
        raise RuntimeError("core_host() is only available inside the tensorforge command line")
    return state.host


def pass_host(command: Callable[Concatenate[PluginHost, P], R]) -> Callable[P, R]:
    """Decorator: call the command with the Core's plugin host as its first argument."""

    @functools.wraps(command)
    def with_host(*args: P.args, **kwargs: P.kwargs) -> R:
        return command(core_host(), *args, **kwargs)

    return with_host


# -- shell completion --------------------------------------------------------------------------
# Completion runs in a fresh process for every Tab: it loads the installed plugins (a fraction of
# a second), and never fails loudly (a broken plugin costs its names, not the shell's prompt).


def _installed(kind: str) -> list[str]:
    try:
        host = PluginHost(options=PluginOptions.from_env())
        if kind == "targets":
            return list(host.names("targets"))
        names: list[str] = []
        for name in host.names("workloads"):
            workload_kind = host.workload_kind(name)
            names += [f"{name}:"] + sorted(workload_kind.presets)
        return names
    except Exception:  # noqa: BLE001 - completion must never print a traceback into the prompt
        return []


def complete_target(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Installed target names; a path (anything with '/' or '.') completes as a file."""
    from click.shell_completion import CompletionItem

    if "/" in incomplete or incomplete.startswith("."):
        return [CompletionItem(incomplete, type="file")]
    return [CompletionItem(n) for n in _installed("targets") if n.startswith(incomplete)]


def complete_workload(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Preset names and workload kinds (as 'kind:' to start an inline spec)."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(n) for n in _installed("workloads") if n.startswith(incomplete)]


# -- options -----------------------------------------------------------------------------------


def _target(required: bool, help: str) -> Callable[[F], F]:
    # No explicit default: click then reports a missing required --target itself.
    return click.option("--target", "-t", "target_name", required=required, shell_complete=complete_target, help=help)


def target_option(command: F) -> F:
    """--target/-t: an installed target or a target file."""
    return _target(True, "Target name (see `targets list`) or a target file (./my-npu.toml; see `targets show`).")(
        command
    )


def optional_target_option(what_it_chooses: str) -> Callable[[F], F]:
    """--target/-t where a command can do without one; the help says what the target chooses."""
    return _target(False, what_it_chooses)


def wide_option(command: F) -> F:
    """--wide: every table in full, whatever the terminal's width."""
    return click.option(
        "--wide",
        is_flag=True,
        help="Print every column in full, however wide (default: fit tables to the terminal; "
        "files and pipes always get full columns).",
    )(command)


def json_option(what: str) -> Callable[[F], F]:
    """--json: the same information as deterministic JSON (sorted keys), for machines."""

    def decorate(command: F) -> F:
        return click.option(
            "--json", "as_json", is_flag=True, help=f"Print {what} as JSON (sorted keys, byte-stable) instead of text."
        )(command)

    return decorate


def workload_options(default: str) -> Callable[[F], F]:
    """--workload/-w and --suite; `default` says what runs when neither is given."""

    def decorate(command: F) -> F:
        command = click.option(
            "--suite",
            "suites",
            multiple=True,
            type=click.Path(dir_okay=False),
            help="A TOML or JSON suite file of [[workload]] tables. Repeatable.",
        )(command)
        return click.option(
            "--workload",
            "-w",
            "specs",
            multiple=True,
            shell_complete=complete_workload,
            help="Preset name, preset with overrides (gemm_tiny:dtype=fp16) or inline spec "
            f"(gemm:m=8192,n=8192,k=8192,dtype=bf16). Repeatable. Default: {default}.",
        )(command)

    return decorate


def operating_point_option(command: F) -> F:
    """--operating-point/-p: one of the target's operating points."""
    return click.option(
        "--operating-point", "-p", default=None, help="Target operating point (default: the target's)."
    )(command)


def output_options(what: str, default: str) -> Callable[[F], F]:
    """--output/-o and --force, for every command that writes a file (tensorforge/files/output.py has
    the rule); `what` names the file ('prediction', 'report'), `default` says where it goes
    without -o."""

    def decorate(command: F) -> F:
        command = click.option(
            "--force",
            is_flag=True,
            help=f"Replace an existing {what} file (it is never replaced otherwise).",
        )(command)
        return click.option(
            "--output",
            "-o",
            default=None,
            metavar="PATH",
            help=f"Where to write the {what}: a file (written atomically; an existing file only with "
            f"--force), '-' for standard output, or a device such as /dev/null (written in "
            f"place). Default: {default}.",
        )(command)

    return decorate
