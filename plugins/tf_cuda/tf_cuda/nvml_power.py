"""The GPU's energy counter and power readings through NVML (the `nvidia-ml-py` module `pynvml`).

What each reading is, by NVIDIA's NVML API reference:
* nvmlDeviceGetTotalEnergyConsumption: energy in mJ since the driver was last reloaded (Volta and
  newer). The unit is 1 mJ; how often the value changes is the device's, measured per window.
* the field NVML_FI_DEV_POWER_INSTANT (nvmlDeviceGetFieldValues): instantaneous power in mW, the
  reading that can be integrated over a window of a few hundred ms;
* nvmlDeviceGetPowerUsage: on Ampere (except GA100) and newer, power averaged over 1 s, so its
  integral over a short window lags the load; recorded as context, never integrated.
* nvmlDeviceGetEnforcedPowerLimit: the power limit in force, mW.
* the field NVML_FI_DEV_ENERGY: the same counter (mJ) as a field value. Read with the
  instantaneous power in ONE nvmlDeviceGetFieldValues call (`read_both`), each value carrying
  the driver's CPU timestamp (us since 1970, nvmlFieldValue_t.timestamp), the counter's edges
  and the power samples are timed on the driver's clock by the same call: a poll that waited
  for the interpreter lock after NVML returned no longer shifts either (on the H200's host two
  separate calls and the lock made a poll pass take 5-14 ms; docs/energy.md).

A fake module with the same functions drives the unit tests; every figure in the docs comes
from a real device.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


# the sampler thread is device-neutral (it polls callables); re-exported for this module's readers
from tensorforge_measure import PowerSampler, PowerSamples  # noqa: F401

FIELD_POWER_INSTANT = 186  # NVML_FI_DEV_POWER_INSTANT (nvml.h; pynvml 13 defines the same)
FIELD_ENERGY = 191  # NVML_FI_DEV_ENERGY: total energy consumption, mJ since the driver loaded
# a driver timestamp is believed when it falls inside the call, or at most this long before it
# (a value the driver cached a little earlier); otherwise the host's midpoint of the call stands
TIMESTAMP_BEFORE_S = 0.05
TIMESTAMP_AFTER_S = 0.002
# How far the instantaneous field lags the energy counter's updates (docs/energy.md, "MEASURED:
# the energy window"): NVML_FI_DEV_POWER_INSTANT is not sampled power but a reading refreshed every
# ~100 ms (the H200's: a staircase of 100 ms steps, on a refresh grid of its own that drifts
# against the counter's), and the energy an update of the counter publishes shows in the field's
# readings ~70 ms later. Integrated over the counter's own edges, the field therefore counts ~70 ms
# of the interval before the window and misses ~70 ms of its last: wherever power differs between
# a window's two ends (the settle transient, the cap's regulation) the two disagreed by up to 3-9%.
# Measured offline, never on a scored window: the lag that makes field and counter agree best
# update by update over the PROBE windows of three traced H200 sessions (2026-11-30 and 2026-12-01;
# 66 loaded updates; 55-80 ms per session, 70 ms pooled, the minimum flat from 60 to 80 ms;
# the analysis script is kept at the lab-archive-2026-12 tag). A device whose field behaves otherwise shows it in the
# record: the window keeps the unshifted agreement beside the shifted one.
FIELD_LAG_S = 0.07


def epoch_offset(clock: Callable[[], float] = time.perf_counter, wall: Callable[[], float] = time.time) -> float:
    """wall-clock seconds minus `clock` seconds, from the tightest of a few bracketed reads: what
    maps a driver timestamp (us since 1970) onto the window's clock."""
    best: tuple[float, float] | None = None
    for _ in range(5):
        a = clock()
        w = wall()
        b = clock()
        if best is None or b - a < best[0]:
            best = (b - a, w - (a + b) / 2)
    assert best is not None
    return best[1]


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


# the counter's update period per GPU (its NVML UUID), measured once per process: `run
# --recalibrate` opens NVML twice (the energy probe, then the run's windows), and measuring it again
# at the run's first window cost ~0.5 s of idle polling (part of what the run's windows of
# 10 updates spend instead)
_PERIODS: dict[str, Any] = {}


class NvmlPower:
    """One GPU's energy counter and power readings; `open` says why not where NVML cannot."""

    def __init__(self, nvml: Any, handle: Any):
        self.nvml, self.handle = nvml, handle
        self.instant_source = "NVML field NVML_FI_DEV_POWER_INSTANT (instantaneous power)"
        if self.instant_w() is None:  # older drivers: the averaged reading, said so where it is used
            self.instant_source = ""
        self.clock: Callable[[], float] = time.perf_counter
        self.sleep: Callable[[float], None] = time.sleep  # (grid_period's polls; a test's simulated time)
        self.offset_s = epoch_offset(self.clock)
        # both fields in one call, the energy field the same counter as the function's: then the
        # sampler's polls feed the window's edges and its power samples (read_both)
        self.fields_ok = bool(self.instant_source) and self._energy_field_matches()
        # the instantaneous field is integrated shifted later by its lag behind the counter; the
        # averaged reading (the fallback) is a 1 s average, not shifted
        self.field_lag_s: float | None = FIELD_LAG_S if self.instant_source else None
        self._grid: Any = None  # the counter's update period, measured once at idle (grid_period)
        self._grid_tries = 0

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

    def _energy_field_matches(self) -> bool:
        """The field NVML_FI_DEV_ENERGY reads the same counter (a read between two reads of
        nvmlDeviceGetTotalEnergyConsumption lies between them) and carries timestamps."""
        try:
            before = self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
            counter, power = self.read_both()
            after = self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        except Exception:
            return False
        return counter is not None and power is not None and before / 1000.0 <= counter[1] <= after / 1000.0

    def _stamped(self, field: Any, lo: float, hi: float) -> tuple[float, float] | None:
        value = _value(field)
        if value is None:
            return None
        stamp = getattr(field, "timestamp", 0) or 0
        t = stamp / 1e6 - self.offset_s
        if not (lo - TIMESTAMP_BEFORE_S <= t <= hi + TIMESTAMP_AFTER_S):
            t = (lo + hi) / 2  # no believable driver timestamp: the call's midpoint on the host
        return t, value

    def read_both(self) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
        """((clock s, J) of the energy counter, (clock s, W) of instantaneous power) from ONE
        nvmlDeviceGetFieldValues call, each timed by the driver's timestamp mapped onto
        `self.clock` (module docstring); None for a value NVML did not return."""
        lo = self.clock()
        try:
            fields = self.nvml.nvmlDeviceGetFieldValues(self.handle, [FIELD_ENERGY, FIELD_POWER_INSTANT])
        except Exception:
            return None, None
        hi = self.clock()
        counter = self._stamped(fields[0], lo, hi)
        power = self._stamped(fields[1], lo, hi)
        return (
            None if counter is None else (counter[0], counter[1] / 1000.0),
            None if power is None else (power[0], power[1] / 1000.0),
        )

    def _counter_at(self) -> tuple[float, float] | None:
        """(clock s, J): the counter, timed by the driver where the field reads work, else at the
        call's midpoint."""
        if self.fields_ok:
            return self.read_both()[0]
        t = self.clock()
        j = self.joules()
        return None if j is None else ((t + self.clock()) / 2, j)

    def grid_period(self) -> Any:
        """The counter's update period (window.GridPeriod), measured the first time it is asked
        for in this process (per GPU UUID, _PERIODS), by polling the counter for ~0.45 s: the caller asks while nothing runs on the device
        (measure_energy synchronises first; the energy probe asks before its idle window), where the
        updates are regular (H200: SD <= 0.2 ms; under load their polled instants jitter by ~10 ms)."""
        key = self._uuid() if self._grid is None else None
        if key is not None and key in _PERIODS:
            self._grid = _PERIODS[key]  # measured by an earlier instance in this process, at idle
        if self._grid is None or (self._grid.period_s is None and self._grid_tries < 3):
            from tensorforge_measure import poll_period

            # a failed measurement (irregular updates right after a load) is tried again at once,
            # the device still idle and the load further behind (an H200 session's GPU test
            # measured it right after 50 warm-up GEMMs, got none, and its 1.5 s window kept the
            # polled edges), then once more at the next window: its windows keep the polled edges
            # meanwhile
            for _ in range(2 if self._grid is None else 1):
                self._grid_tries += 1
                self._grid = poll_period(self._counter_at, clock=self.clock, sleep=self.sleep)
                if self._grid.period_s is not None:
                    break
            key = self._uuid()
            if key is not None and self._grid.period_s is not None:
                _PERIODS[key] = self._grid
        return self._grid

    def _uuid(self) -> str | None:
        try:
            uuid = self.nvml.nvmlDeviceGetUUID(self.handle)
        except Exception:
            return None
        return uuid.decode() if isinstance(uuid, bytes) else str(uuid) if uuid else None

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
