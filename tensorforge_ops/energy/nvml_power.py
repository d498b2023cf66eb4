"""The GPU's energy counter and power readings through NVML (the `nvidia-ml-py` module `pynvml`).

What each reading is, by NVIDIA's NVML API reference:
* nvmlDeviceGetTotalEnergyConsumption: energy in mJ since the driver was last reloaded (Volta and
  newer). The unit is 1 mJ; how often the value changes is the device's, measured per window.
* the field NVML_FI_DEV_POWER_INSTANT (nvmlDeviceGetFieldValues): instantaneous power in mW, the
  reading that can be integrated over a window of a few hundred ms;
* nvmlDeviceGetPowerUsage: on Ampere (except GA100) and newer, power averaged over 1 s, so its
  integral over a short window lags the load; recorded as context, never integrated.
* nvmlDeviceGetEnforcedPowerLimit: the power limit in force, mW.

A fake module with the same functions drives the unit tests; every figure in the docs comes
from a real device.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from collections.abc import Callable

import attrs

FIELD_POWER_INSTANT = 186  # NVML_FI_DEV_POWER_INSTANT (nvml.h; pynvml 13 defines the same)


def _value(field: Any) -> float | None:
    """A field value's number by its declared type; None when NVML returned an error for it."""
    if getattr(field, "nvmlReturn", 0) != 0:
        return None
    kind = getattr(field, "valueType", 1)
    v = field.value
    return float(
        {0: lambda: v.dVal, 1: lambda: v.uiVal, 2: lambda: v.ulVal, 3: lambda: v.ullVal, 4: lambda: v.sllVal}.get(
            kind, lambda: v.siVal
        )()
    )


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # NVMLError.__str__ calls back into the library
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class NvmlPower:
    """One GPU's energy counter and power readings; `open` says why not where NVML cannot."""

    def __init__(self, nvml: Any, handle: Any):
        self.nvml, self.handle = nvml, handle
        self.instant_source = "NVML field NVML_FI_DEV_POWER_INSTANT (instantaneous power)"
        if self.instant_w() is None:  # older drivers: the averaged reading, said so where it is used
            self.instant_source = ""

    @classmethod
    def open(cls, device_index: int = 0, nvml: Any = None) -> tuple[NvmlPower | None, str | None]:
        if nvml is None:
            try:
                import pynvml as nvml  # type: ignore[no-redef]
            except ImportError:
                return None, "pynvml not installed (pip install nvidia-ml-py)"
        try:
            nvml.nvmlInit()
        except Exception as exc:
            return None, f"nvmlInit failed: {_describe(exc)}"
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(device_index)
            nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        except Exception as exc:
            _shutdown(nvml)
            return None, f"NVML has no energy counter for device {device_index}: {_describe(exc)}"
        return cls(nvml, handle), None

    def joules(self) -> float | None:
        try:
            return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1000.0
        except Exception:
            return None

    def instant_w(self) -> float | None:
        try:
            fields = self.nvml.nvmlDeviceGetFieldValues(self.handle, [FIELD_POWER_INSTANT])
            mw = _value(fields[0])
        except Exception:
            return None
        return None if mw is None else mw / 1000.0

    def averaged_w(self) -> float | None:
        try:
            return self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0
        except Exception:
            return None

    def enforced_limit_w(self) -> float | None:
        try:
            return self.nvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1000.0
        except Exception:
            return None

    def close(self) -> None:
        _shutdown(self.nvml)


def _shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:
        pass


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
    ):
        self.instant, self.averaged, self.period_s, self.clock = instant, averaged, period_s, clock
        self.counter = counter
        self._instant: list[tuple[float, float]] = []
        self._averaged: list[tuple[float, float]] = []
        self._counter: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="power-sampler", daemon=True)

    def _run(self) -> None:
        i = 0
        while True:
            if self.counter is not None:
                t = self.clock()
                j = self.counter()
                if j is not None:
                    self._counter.append(((t + self.clock()) / 2, j))
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
        w = self.instant()
        if w is not None:
            self._instant.append((self.clock(), w))

    def __enter__(self) -> PowerSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._one()  # one after the window's end edge, so the integral covers it

    def samples(self) -> PowerSamples:
        return PowerSamples(instant=tuple(self._instant), averaged=tuple(self._averaged), counter=tuple(self._counter))
