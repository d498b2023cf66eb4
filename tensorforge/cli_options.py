"""What the commands of the command line share: the plugins of one invocation, and the
options several commands take.

The options are declared once here, so `predict`, `run` and `rightsize` (the last two come
from the Ops side through tensorforge.api) spell and explain `--target`, `--workload`,
`--suite` and `--operating-point` the same way. The plugins are loaded once per invocation,
after click has parsed the root options that choose them; every command reaches them through
`pass_host` or `core_host`, never through a global.
"""

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import attrs
import click

from .plugin_options import PluginOptions
from .plugins import PluginHost

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


def target_option(command: F) -> F:
    """--target/-t: an installed target or a target file."""
    return click.option(
        "--target", "-t", "target_name", required=True,
        help="Target name (see `targets list`) or a target file (./my-npu.toml; see `targets show`).",
    )(command)


def workload_options(default: str) -> Callable[[F], F]:
    """--workload/-w and --suite; `default` says what runs when neither is given."""
    def decorate(command: F) -> F:
        command = click.option(
            "--suite", "suites", multiple=True, type=click.Path(dir_okay=False),
            help="A TOML or JSON suite file of [[workload]] tables. Repeatable.",
        )(command)
        return click.option(
            "--workload", "-w", "specs", multiple=True,
            help="Preset name, preset with overrides (gemm_tiny:dtype=fp16) or inline spec "
                 f"(gemm:m=8192,n=8192,k=8192,dtype=bf16). Repeatable. Default: {default}.",
        )(command)
    return decorate


def operating_point_option(command: F) -> F:
    """--operating-point/-p: one of the target's operating points."""
    return click.option("--operating-point", "-p", default=None,
                        help="Target operating point (default: the target's).")(command)


def output_options(what: str, default: str) -> Callable[[F], F]:
    """--output/-o and --force, for every command that writes a file (tensorforge/output.py has
    the rule); `what` names the file ('prediction', 'report'), `default` says where it goes
    without -o."""
    def decorate(command: F) -> F:
        command = click.option(
            "--force", is_flag=True,
            help=f"Replace an existing {what} file (it is never replaced otherwise).",
        )(command)
        return click.option(
            "--output", "-o", default=None, metavar="PATH",
            help=f"Where to write the {what}: a file (written atomically; an existing file only with "
                 f"--force), '-' for standard output, or a device such as /dev/null (written in "
                 f"place). Default: {default}.",
        )(command)
    return decorate
