"""What `run` and `calibrate` report while they work: lines of news, and steps (probes,
workloads) that a person watching a terminal sees as a bar with elapsed and remaining time.

The runner and the probes talk to a plain callable (`progress(line)`), as they always did; they
announce steps through `plan` and `advance` here, which do nothing for a callable that is not a
Progress. So tests and plugins that hand in `list.append` keep working, and the bar is purely
presentation: it is drawn (by rich) only when standard error is a terminal. Elsewhere (CI logs,
files, pipes) the timestamped lines are all there is, exactly as before.
"""

import sys
from collections.abc import Callable
from typing import IO, Any

import click

from tensorforge.api import Screen, detect, paint


def plan(progress: Callable[[str], None], steps: int, what: str) -> None:
    """`steps` more steps of `what` lie ahead (probes, workloads)."""
    method = getattr(progress, "plan", None)
    if callable(method) and steps > 0:
        method(steps, what)


def advance(progress: Callable[[str], None]) -> None:
    """One planned step is done."""
    method = getattr(progress, "advance", None)
    if callable(method):
        method()


class Relay:
    """Lines through `say` (which may stamp them), steps to `progress`: what the runner hands
    to the probes, so their lines carry the run's timestamps and their steps reach the bar."""

    def __init__(self, say: Callable[[str], None], progress: Callable[[str], None]) -> None:
        self.say, self.progress = say, progress

    def __call__(self, line: str) -> None:
        self.say(line)

    def plan(self, steps: int, what: str) -> None:
        plan(self.progress, steps, what)

    def advance(self) -> None:
        advance(self.progress)


class LineProgress:
    """Lines on standard error and nothing else: for logs, files and pipes."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream

    def __call__(self, line: str) -> None:
        click.echo(line, err=self.stream is None, file=self.stream)

    def plan(self, steps: int, what: str) -> None:
        pass

    def advance(self) -> None:
        pass

    def close(self) -> None:
        pass


class BarProgress:
    """A bar under the lines of news: steps done of planned, elapsed and remaining time. The
    remaining time is rich's estimate from the pace so far, so it settles after a few steps.

    Redrawn only when something happens (a line, a plan, a step), never by rich's refresh thread:
    that thread would take the interpreter lock ten times a second while samples are being timed,
    and an eager host-bound call's time is Python time (the decode step's eager call spends ~1.8 of
    its ~2 ms on the host)."""

    def __init__(self, stream: IO[str], colour: bool, width: int | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.colour = colour
        # lines are wrapped here, between words, under their time stamp; the terminal would
        # cut them mid-word
        self.screen = Screen(width)
        console = Console(file=stream, highlight=False, no_color=not colour, force_terminal=True)
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            TextColumn("remaining"),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            auto_refresh=False,
        )
        self.task: Any = None

    def __call__(self, line: str) -> None:
        from rich.text import Text

        line = self.screen.wrap(line, " " * (line.find("] ") + 2 if line.startswith("[") else 2))
        text = Text.from_ansi(paint(line)) if self.colour else Text(line)
        self.bar.console.print(text, soft_wrap=True)
        self._redraw()

    def plan(self, steps: int, what: str) -> None:
        if self.task is None:
            self.bar.start()
            self.task = self.bar.add_task(what, total=steps)
        else:
            total = self.bar.tasks[0].total or 0
            self.bar.update(self.task, total=total + steps, description=what)
        self._redraw()

    def advance(self) -> None:
        if self.task is not None:
            self.bar.advance(self.task)
            self._redraw()

    def _redraw(self) -> None:
        if self.task is not None:
            self.bar.refresh()

    def close(self) -> None:
        self.bar.stop()


def for_terminal(stream: IO[str] | None = None) -> LineProgress | BarProgress:
    """A bar when `stream` (standard error by default) is a terminal, else plain lines."""
    stream = stream if stream is not None else sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        return LineProgress()
    screen = detect(stream=stream)
    return BarProgress(stream, screen.colour, screen.width)
