"""A command whose module is imported only when it runs, completes or shows its own help.

Why: `tensorforge --help` lists every command with a one-line summary, and a plugin adds its
commands before any command runs. Importing each command's module for that cost most of the
start-up: the measuring side's commands import the whole predicting side (tensorforge.api) and
more, to print one line each. A LazyCommand carries its name and the first sentence of its help;
everything else comes from the real command, imported on first use (a test holds the sentence
equal to the real command's)."""

from importlib import import_module
from typing import Any

import click


class LazyCommand(click.Command):
    """`name`, summarised by `summary` (the first sentence of its help), found at `where`
    ('package.module:attribute') when anything but the summary is asked for."""

    def __init__(self, name: str, where: str, summary: str) -> None:
        super().__init__(name, add_help_option=False)
        self.where = where
        self.summary = summary
        self._real: click.Command | None = None

    @property
    def real(self) -> click.Command:
        if self._real is None:
            module, _, attribute = self.where.partition(":")
            self._real = getattr(import_module(module), attribute)
        return self._real

    # click's __init__ sets these; the real command's are the ones that count
    @property
    def params(self) -> list[click.Parameter]:
        return self.real.params

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        pass

    @property
    def help(self) -> str | None:
        return self.real.help

    @help.setter
    def help(self, value: str | None) -> None:
        pass

    def get_short_help_str(self, limit: int = 45) -> str:
        # shortened by click's own rule, as the real command's help would be
        return click.Command(self.name, help=self.summary).get_short_help_str(limit)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any):
        return self.real.make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        return self.real.invoke(ctx)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        return self.real.get_params(ctx)

    def get_usage(self, ctx: click.Context) -> str:
        return self.real.get_usage(ctx)

    def get_help(self, ctx: click.Context) -> str:
        return self.real.get_help(ctx)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        return self.real.shell_complete(ctx, incomplete)

    def to_info_dict(self, ctx: click.Context) -> dict[str, Any]:
        return self.real.to_info_dict(ctx)
