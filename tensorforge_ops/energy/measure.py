"""One energy window on a GPU, as the capture records it: the counter edge to edge (window.py),
instantaneous power integrated over the same edges (nvml_power.py), the host CPU's RAPL
counter read at the same edges (rapl.py). Used by `run` for every workload and by the energy
calibration probe for each of its windows.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import attrs

from ..capture.sections.energy import CounterRecord, EnergyMeasurement, HostEnergy, PowerIntegration
from .nvml_power import PowerSampler
from .rapl import Rapl
from .window import CounterWindow, calls_per_chunk, counter_window, integrate

COUNTER_SOURCE = "nvmlDeviceGetTotalEnergyConsumption (mJ since the driver loaded)"
DEFAULT_MIN_S = 0.3
CHUNK_S = 0.002

METHOD = (
    "the workload ran back to back in chunks of ~{chunk_ms:g} ms of calls (then a synchronize), no cache "
    "flush; the energy counter was read after every chunk, and the window runs from one counter update "
    "(the start edge, the device already loaded) to the first update after >= {min_s:g} s (the end edge); "
    "joules = counter difference, executions = those completed between the edges; instantaneous power was "
    "sampled on a thread and integrated over the same edges as a cross-check. A window of its own, after "
    "the latency timings and the telemetry windows."
)


@attrs.frozen
class Window:
    counter: CounterWindow
    integration: PowerIntegration | None
    host: HostEnergy | None


def counter_record(window: CounterWindow, source: str = COUNTER_SOURCE, unit_j: float = 0.001) -> CounterRecord:
    return CounterRecord(
        source=source,
        unit_j=unit_j,
        smallest_step_j=window.smallest_step_j(),
        update_interval_s=window.update_interval_s(),
        updates=max(0, len(window.ticks) - 1),
    )


def _integration(samples, window: CounterWindow, source: str) -> PowerIntegration | None:
    if not window.ok or window.start_s is None or window.end_s is None:
        return None
    inside = [t for t, _ in samples.instant if window.start_s <= t <= window.end_s]
    if not inside:
        return None
    gaps = [b - a for a, b in zip(inside, inside[1:])]
    joules = integrate(samples.instant, window.start_s, window.end_s)
    averaged = [w for t, w in samples.averaged if window.start_s <= t <= window.end_s]
    return PowerIntegration(
        source=source,
        samples=len(inside),
        period_s=statistics.median(gaps) if gaps else None,
        joules=joules,
        counter_agreement=(joules / window.joules - 1) if joules is not None and window.joules else None,
        averaged_power_w=statistics.fmean(averaged) if averaged else None,
    )


def take_window(
    run_chunk: Callable[[], int],
    power: Any,
    *,
    min_s: float = DEFAULT_MIN_S,
    max_s: float = 2.0,
    rapl: Rapl | None = None,
    rapl_reason: str | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Window:
    """One window: the counter edge to edge, power integrated over it, RAPL at its edges."""
    edges: dict[str, tuple[int, ...] | None] = {}

    def on_edge(which: str) -> None:
        if rapl is not None:
            edges[which] = rapl.read_uj()

    instant = power.instant_w if power.instant_source else power.averaged_w  # (the fallback is said below)
    source = power.instant_source or "nvmlDeviceGetPowerUsage (the instantaneous field is not supported here)"
    with PowerSampler(instant, power.averaged_w, clock=clock) as sampler:
        counter = counter_window(run_chunk, power.joules, min_s=min_s, max_s=max_s, on_edge=on_edge, clock=clock)
    integration = _integration(sampler.samples(), counter, source)
    host: HostEnergy | None = None
    if rapl is None:  # no reason: the host is not measured beside this counter at all
        host = HostEnergy(available=False, reason=rapl_reason) if rapl_reason else None
    elif counter.ok and edges.get("start") and edges.get("end") and counter.seconds:
        joules = rapl.joules_between(edges["start"], edges["end"])  # type: ignore[arg-type]
        host = HostEnergy(
            available=True,
            reason=None,
            source=rapl.source,
            joules=joules,
            joules_per_execution=joules / counter.executions if counter.executions else None,
            mean_power_w=joules / counter.seconds,
        )
    else:
        host = HostEnergy(available=False, reason="RAPL could not be read at both edges of the window")
    return Window(counter=counter, integration=integration, host=host)


def chunk_runner(fn: Callable[[], Any], synchronize: Callable[[], None], per_call_s: float | None) -> Callable[[], int]:
    calls = calls_per_chunk(per_call_s, CHUNK_S)

    def run_chunk() -> int:
        for _ in range(calls):
            fn()
        synchronize()
        return calls

    return run_chunk


def unavailable(reason: str, min_s: float = DEFAULT_MIN_S) -> EnergyMeasurement:
    return EnergyMeasurement(
        available=False,
        reason=reason,
        regime="sustained",
        method=METHOD.format(chunk_ms=CHUNK_S * 1e3, min_s=min_s),
        executions=None,
        window_s=None,
        joules=None,
        joules_per_execution=None,
        seconds_per_execution=None,
        mean_power_w=None,
        counter=None,
        integration=None,
    )


def measure_energy(
    fn: Callable[[], Any],
    synchronize: Callable[[], None],
    power: Any,
    per_call_s: float | None,
    *,
    min_s: float = DEFAULT_MIN_S,
    tokens: int | None = None,
    rapl: Rapl | None = None,
    rapl_reason: str | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> EnergyMeasurement:
    """A workload's MEASURED energy window (module docstring). `power`: an NvmlPower, or a
    RaplCounter where the host CPU is the measured device."""
    window = take_window(
        chunk_runner(fn, synchronize, per_call_s), power, min_s=min_s, rapl=rapl, rapl_reason=rapl_reason, clock=clock
    )
    c = window.counter
    if not c.ok or not c.executions or not c.seconds or c.joules is None:
        return attrs.evolve(unavailable(c.reason or "no execution completed inside the window", min_s))
    per_exec = c.joules / c.executions
    return EnergyMeasurement(
        available=True,
        reason=None,
        regime="sustained",
        method=METHOD.format(chunk_ms=CHUNK_S * 1e3, min_s=min_s),
        executions=c.executions,
        window_s=c.seconds,
        joules=c.joules,
        joules_per_execution=per_exec,
        seconds_per_execution=c.seconds / c.executions,
        mean_power_w=c.joules / c.seconds,
        samples_j=c.per_execution_samples() or None,
        tokens_per_execution=tokens,
        joules_per_token=per_exec / tokens if tokens else None,
        counter=counter_record(c, getattr(power, "counter_source", COUNTER_SOURCE), getattr(power, "unit_j", 0.001)),
        integration=window.integration,
        power_limit_w=power.enforced_limit_w(),
        host_cpu=window.host,
    )
