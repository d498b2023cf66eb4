"""SIGTERM and SIGHUP handled like Ctrl-C, so a cancelled run leaves what it gathered.

Why: Ctrl-C (SIGINT) raises KeyboardInterrupt, which `run` catches to write
`NAME.incomplete.json`; SIGTERM (CI cancellation, `timeout`, `kill`) and SIGHUP (a closed
terminal) killed the process outright and left nothing. Inside `signals_as_interrupts()` they
raise `Interrupted`, a KeyboardInterrupt that remembers the signal, so the same handler runs;
the command then exits with 128 + the signal number, as a shell reports a killed process.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

HANDLED = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


class Interrupted(KeyboardInterrupt):
    """A KeyboardInterrupt raised for a signal other than SIGINT."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_status(exc: BaseException) -> int:
    """128 + the signal number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + int(getattr(exc, "signum", signal.SIGINT))


def signal_name(exc: BaseException) -> str:
    return signal.Signals(int(getattr(exc, "signum", signal.SIGINT))).name


def _raise(signum, _frame):
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """SIGTERM and SIGHUP raise Interrupted inside the block (main thread only: Python delivers
    signals there; elsewhere the block changes nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise) for s in HANDLED}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def signals_ignored() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP ignored inside the block: writing the incomplete capture must
    not be cut short by a second signal (`timeout -k`, an impatient second Ctrl-C)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = (signal.SIGINT,) + HANDLED
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in signals}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
