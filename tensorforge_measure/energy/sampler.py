"""Power and energy-counter samples taken on a thread of their own beside an energy window,
device-neutral: it polls whatever callables the device's counter offers (NVML's on a GPU, a
backend's own elsewhere), timed with the window's clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import attrs


@attrs.frozen
class PowerSamples:
    instant: tuple[tuple[float, float], ...]  # (clock s, W)
    averaged: tuple[tuple[float, float], ...]
    counter: tuple[tuple[float, float], ...] = ()  # (clock s, J): the energy counter, polled


class PowerSampler:
    """Samples instantaneous (and, every tenth sample, averaged) power on a thread of its own,
    timed with the same clock as the energy window, for the integration cross-check; and, given
    `counter`, polls the energy counter in the same loop, so the window's edges (the counter's
    updates) are timed to within a poll, not to within one of the step loop's steps
    (window.refine_edges)."""

    def __init__(
        self,
        instant: Callable[[], float | None],
        averaged: Callable[[], float | None] | None = None,
        period_s: float = 0.002,
        clock: Callable[[], float] = time.perf_counter,
        counter: Callable[[], float | None] | None = None,
        both: Callable[[], tuple[tuple[float, float] | None, tuple[float, float] | None]] | None = None,
    ):
        self.instant, self.averaged, self.period_s, self.clock = instant, averaged, period_s, clock
        self.counter, self.both = counter, both
        self._latest: float | None = None
        self._first = threading.Event()
        self._instant: list[tuple[float, float]] = []
        self._averaged: list[tuple[float, float]] = []
        self._counter: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="power-sampler", daemon=True)

    def _run(self) -> None:
        i = 0
        while True:
            if self.both is not None:  # one call, the driver's timestamps (NvmlPower.read_both)
                c, p = self.both()
                if c is not None:
                    self._counter.append(c)
                    self._latest = c[1]
                if p is not None:
                    self._instant.append(p)
                self._first.set()
            elif self.counter is not None:
                t = self.clock()
                j = self.counter()
                if j is not None:
                    self._counter.append(((t + self.clock()) / 2, j))
            if self.both is None:
                t = self.clock()
                w = self.instant()
                if w is not None:
                    self._instant.append(((t + self.clock()) / 2, w))
            if self.averaged is not None and i % 10 == 0:
                a = self.averaged()
                if a is not None:
                    self._averaged.append((self.clock(), a))
            i += 1
            if self._stop.wait(self.period_s):
                return

    def _one(self) -> None:
        if self.both is not None:
            c, p = self.both()
            if c is not None:
                self._counter.append(c)
            if p is not None:
                self._instant.append(p)
            return
        w = self.instant()
        if w is not None:
            self._instant.append((self.clock(), w))

    def latest_joules(self) -> float | None:
        """The counter as last polled by this thread (with `both`): what the step loop reads
        instead of calling NVML itself, so the two threads never queue on the driver; waits for
        the first poll."""
        self._first.wait(1.0)
        return self._latest

    def __enter__(self) -> PowerSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._one()  # one after the window's end edge, so the integral covers it

    def samples(self) -> PowerSamples:
        return PowerSamples(instant=tuple(self._instant), averaged=tuple(self._averaged), counter=tuple(self._counter))
