"""One energy window on a GPU, as the capture records it: the counter edge to edge (window.py),
the edges on the counter's own update grid (its period measured once at idle, the phase fitted
to the window's updates: window.grid_edges; under load each update's polled instant jitters by
~10 ms), instantaneous power integrated over the same edges (the backend's counter, e.g.
tf_cuda's NVML), the host CPU's counter read where the step loop saw the edges (a
HostEnergyCounter, e.g. tf_cpu's RAPL). Used by `run` for every workload and
by the energy calibration probe for each of its windows.
"""

from __future__ import annotations

import collections
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import attrs

from tensorforge_measure.api import HostEnergyCounter
from tensorforge_measure.capture.sections.energy import CounterRecord, EnergyMeasurement, HostEnergy, PowerIntegration
from tensorforge_measure.energy.sampler import PowerSampler
from tensorforge_measure.energy.window import (
    CounterWindow,
    calls_per_chunk,
    counter_window,
    cumulative,
    grid_edges,
    integrate,
    refine_edges,
)

COUNTER_SOURCE = "nvmlDeviceGetTotalEnergyConsumption (mJ since the driver loaded)"
# 4 updates of the H200's 100 ms counter: with edges polled every ~2-3 ms (each known to about
# 1.5 ms) the window's length is known to < 1%, inside the 2% the power integration must agree to;
# ten workloads' windows with their settling and edge waits stay under ~7 s
DEFAULT_MIN_S = 0.4
# load before the start edge may fall: the interval the start edge closes must be loaded, not
# partly idle (a window that opened with the ramp disagreed with the integral by 8% on the H200)
SETTLE_S = 0.1
# where a caller asks for it (measure_energy's long_s), past min_s the window runs on, update by
# update up to long_s, while the counter's own per-update spread (window.update_spread, one
# standard deviation of the window's edge error if the updates' joules were lumpy) is above
# SPREAD_TARGET. OFF by default: in an H200 session (2026-11-30, on) the windows that missed 2% had
# small spreads (gemm_large_square -4.0% at 0.68%); the error was the polled update instants'
# jitter under load, not lumpy joules (docs/energy.md, "Sizing the window")
SPREAD_TARGET = 0.008
LONG_S = 1.2
# `run`'s windows span at least this many counter updates (`--energy-updates`): each update
# interval is one sample of joules per execution, and the energy gate asks for 10 (its
# --min-samples), the latency gate's evidence rule. At 0.4 s a 100 ms counter gave 4-5 samples and
# the gate NO VERDICT for every workload (H200, 2026-12-01); 10 updates make it ~1.0 s there, a fast
# counter (RAPL) none longer. UPDATES_MAX_S: a slower counter's window ends at the first update after
# this long with what it has (fewer samples: NO VERDICT), so a window never runs away
DEFAULT_MIN_UPDATES = 10
UPDATES_MAX_S = 1.5
# DIAGNOSTIC: where set, every window appends one JSON line of its raw polls to this file (the
# counter's values and the instantaneous power, each with its time on the window's clock, and the
# edges): what the counter's per-update lumps were studied on; never read by TensorForge itself
TRACE_ENV = "TENSORFORGE_ENERGY_TRACE"
CHUNK_S = 0.002
SWITCH_S = 0.0005
# past the end edge plus the field's lag, the polls go on this long: the grid's end edge can lie a
# few ms after the instant the step loop saw the end update (its phase is the updates' mean)
LAG_MARGIN_S = 0.015

METHOD = (
    "the workload ran back to back, {how}, no cache flush; "
    "the energy counter was read between steps, and the window runs from one counter update "
    "(the start edge, after >= {settle_s:g} s of load) to the first update after >= {min_s:g} s{updates} (the end edge){longer}; "
    "a thread polled the counter and instantaneous power every few ms; {edges}; "
    "joules = counter difference (whole updates), executions = those completed between the edges (interpolated "
    "on the step loop's log at the edge times); instantaneous power integrated over the same edges (NVML's "
    "instantaneous field shifted later by its lag behind the counter, integration.field_lag_s) is the "
    "cross-check: it proves the two readings count the same energy over that interval, not when the interval "
    "lay to better than the edges' timing. A window of its own, after the latency timings and the telemetry windows."
)
GRID_EDGES = (
    "the edges sit on the counter's own update grid: its period measured once at idle (where its updates are "
    "regular), the phase fitted to the updates polled inside the window (robustly: an update further off than 4 x "
    "their jitter plus its half poll gap is left out, counter.grid_fit says which), the window a whole number of "
    "periods (under load each update's polled instant jitters by ~10 ms; where no idle period is known or the "
    "updates do not keep one grid, the edges are the polled update instants and counter.grid_fit says why)"
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
        update_spread=window.update_spread(),
        update_interval_s=window.update_interval_s(),
        updates=max(0, len(window.ticks) - 1),
        edges_from=window.edges_from,
        edge_resolution_s=window.edge_resolution_s,
        grid_period_s=window.grid_period_s,
        grid_fit=window.grid_fit,
    )


def _integration(samples, window: CounterWindow, source: str, lag_s: float | None = None) -> PowerIntegration | None:
    """The field integrated over the window's edges, shifted later by `lag_s` (its lag behind the
    counter, nvml_power.FIELD_LAG_S) where the samples cover the shifted interval; the unshifted
    agreement is kept beside it."""
    if not window.ok or window.start_s is None or window.end_s is None:
        return None

    def agreement(j: float | None) -> float | None:
        return (j / window.joules - 1) if j is not None and window.joules else None

    unshifted = integrate(samples.instant, window.start_s, window.end_s)
    shifted = integrate(samples.instant, window.start_s + lag_s, window.end_s + lag_s) if lag_s else None
    lag = lag_s if shifted is not None else None
    start, end = window.start_s + (lag or 0.0), window.end_s + (lag or 0.0)
    inside = [t for t, _ in samples.instant if start <= t <= end]
    joules = shifted if lag else unshifted
    if joules is None:
        return None
    gaps = [b - a for a, b in zip(inside, inside[1:])]
    averaged = [w for t, w in samples.averaged if window.start_s <= t <= window.end_s]
    return PowerIntegration(
        source=source + (f", shifted {lag * 1e3:g} ms later (the field's lag behind the counter)" if lag else ""),
        samples=len(inside),
        period_s=statistics.median(gaps) if gaps else None,
        joules=joules,
        counter_agreement=agreement(joules),
        averaged_power_w=statistics.fmean(averaged) if averaged else None,
        field_lag_s=lag,
        unshifted_agreement=agreement(unshifted) if lag else None,
    )


def take_window(
    step: Callable[[], int],
    power: Any,
    *,
    min_s: float = DEFAULT_MIN_S,
    max_s: float = 2.0,
    rapl: HostEnergyCounter | None = None,
    rapl_reason: str | None = None,
    clock: Callable[[], float] = time.perf_counter,
    settle_s: float = 0.0,
    spread_target: float | None = None,
    long_s: float | None = None,
    min_updates: int | None = None,
) -> Window:
    """One window: the counter edge to edge, power integrated over it, RAPL at its edges
    (`spread_target`, `long_s`, `min_updates`: window.counter_window)."""
    edges: dict[str, tuple[int, ...] | None] = {}
    read_at: dict[str, float] = {}

    def on_edge(which: str) -> None:
        if rapl is not None:
            edges[which] = rapl.read_uj()
            read_at[which] = clock()

    instant = power.instant_w if power.instant_source else power.averaged_w  # (the fallback is said below)
    # the instantaneous field's lag behind the counter (nvml_power.FIELD_LAG_S), where it is integrated
    lag = getattr(power, "field_lag_s", None) if power.instant_source else None
    source = power.instant_source or "nvmlDeviceGetPowerUsage (the instantaneous field is not supported here)"
    # the sampler's thread must get the interpreter every few ms even while the step loop launches
    # (Python's default switch interval, 5 ms, would be the edges' resolution at worst)
    # the counter's update period, measured at idle the first time (the caller has nothing running)
    # (only where the counter's clock is the window's: a period timed on another clock is no grid)
    grid = (
        power.grid_period()
        if callable(getattr(power, "grid_period", None)) and clock is getattr(power, "clock", None)
        else None
    )
    period = getattr(grid, "period_s", None)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_S)
    try:
        if getattr(power, "fields_ok", False) and clock is getattr(power, "clock", None):
            # one NVML call a poll (counter and instantaneous power, driver-timestamped), and the
            # step loop reads the sampler's latest counter value instead of calling NVML itself
            sampler = PowerSampler(instant, power.averaged_w, clock=clock, both=power.read_both)
            read_joules = sampler.latest_joules
            source = f"{source}, read with NVML_FI_DEV_ENERGY in one nvmlDeviceGetFieldValues call (driver timestamps)"
        else:
            sampler = PowerSampler(instant, power.averaged_w, clock=clock, counter=power.joules)
            read_joules = power.joules
        with sampler:
            counter = counter_window(
                step,
                read_joules,
                min_s=min_s,
                max_s=max(max_s, (long_s or 0.0) + 1.0, UPDATES_MAX_S + 1.0 if min_updates else 0.0),
                on_edge=on_edge,
                clock=clock,
                settle_s=settle_s,
                spread_target=spread_target,
                long_s=long_s,
                min_updates=min_updates,
                updates_max_s=UPDATES_MAX_S if min_updates else None,
            )
            if lag and counter.ok and counter.end_s is not None:
                # the field shows the window's last interval ~lag after the end edge: keep the
                # load as it was and the polls going until then (executions after the edge are
                # not counted; ~0.08 s a window)
                until = counter.end_s + lag + LAG_MARGIN_S
                while clock() < until:
                    step()
    finally:
        sys.setswitchinterval(switch)
    samples = sampler.samples()
    counter = refine_edges(counter, sorted(samples.counter))
    polled = counter
    counter = grid_edges(counter, sorted(samples.counter), period, getattr(grid, "sd_s", None))
    integration = _integration(samples, counter, source, lag)
    _trace(counter, samples, integration, polled, period)
    host: HostEnergy | None = None
    if rapl is None:  # no reason: the host is not measured beside this counter at all
        host = HostEnergy(available=False, reason=rapl_reason) if rapl_reason else None
    elif counter.ok and edges.get("start") and edges.get("end") and read_at["end"] > read_at["start"]:
        # RAPL is read where the step loop saw the edges (not at the polled times): its power over
        # its own interval, carried onto the window's time and executions
        joules = rapl.joules_between(edges["start"], edges["end"])  # type: ignore[arg-type]
        watts = joules / (read_at["end"] - read_at["start"])
        executions = counter.executions_exact or counter.executions
        host = HostEnergy(
            available=True,
            reason=None,
            source=rapl.source,
            joules=joules,
            joules_per_execution=watts * counter.seconds / executions if executions and counter.seconds else None,
            mean_power_w=watts,
        )
    else:
        host = HostEnergy(available=False, reason="RAPL could not be read at both edges of the window")
    return Window(counter=counter, integration=integration, host=host)


def _trace(
    counter: CounterWindow,
    samples: Any,
    integration: PowerIntegration | None,
    polled: CounterWindow | None = None,
    period_s: float | None = None,
) -> None:
    path = os.environ.get(TRACE_ENV)
    if not path:
        return
    line = {
        "ok": counter.ok,
        "start_s": counter.start_s,
        "end_s": counter.end_s,
        "joules": counter.joules,
        "executions": counter.executions_exact or counter.executions,
        "counter_agreement": integration.counter_agreement if integration else None,
        "field_lag_s": integration.field_lag_s if integration else None,
        "unshifted_agreement": integration.unshifted_agreement if integration else None,
        "edges_from": counter.edges_from,
        "grid_period_s": period_s,
        "polled_start_s": polled.start_s if polled else None,
        "polled_end_s": polled.end_s if polled else None,
        "ticks": [[t.t_s, t.joules, t.executions] for t in counter.ticks],
        "counter": [list(p) for p in samples.counter],
        "instant": [list(p) for p in samples.instant],
        "averaged": [list(p) for p in samples.averaged],
    }
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
    except OSError:  # a diagnostic trace never costs the window
        pass


SYNC_HOW = "in chunks of ~{chunk_ms:g} ms of calls, each followed by a synchronize"
QUEUED_HOW = (
    "queued on the device in chunks of ~{chunk_ms:g} ms of calls, each followed by an event, at most "
    "~{ahead_ms:g} ms of work ahead (executions completed = chunks whose event completed)"
)
AHEAD_S = 0.03


def chunk_runner(fn: Callable[[], Any], synchronize: Callable[[], None], per_call_s: float | None) -> Callable[[], int]:
    """Steps of synchronous chunks (a device whose calls return when done, or a test's fake)."""
    calls = calls_per_chunk(per_call_s, CHUNK_S)

    def run_chunk() -> int:
        for _ in range(calls):
            fn()
        synchronize()
        return calls

    return cumulative(run_chunk)


class QueuedSteps:
    """Steps that keep the device busy while the host reads counters: chunks of calls, each
    followed by an event, up to AHEAD_S of work queued; a step tops the queue up, waits for the
    oldest chunk only when the queue is full, and returns the executions whose chunk's event has
    completed. `event()` makes a recordable event (torch.cuda.Event: record(), query(),
    synchronize()). `executions_per_call`: executions one call of fn runs (a CUDA graph of K
    unrolled calls: K; graph_window.py)."""

    def __init__(
        self, fn: Callable[[], Any], event: Callable[[], Any], per_call_s: float | None, executions_per_call: int = 1
    ):
        self.fn, self.event = fn, event
        self.per_call = max(1, int(executions_per_call))
        self.calls = calls_per_chunk(per_call_s, CHUNK_S)
        chunk_s = self.calls * per_call_s if per_call_s else CHUNK_S
        self.depth = max(2, min(64, round(AHEAD_S / max(chunk_s, 1e-6))))
        self.pending: collections.deque[Any] = collections.deque()
        self.done = 0

    def _retire(self, wait: bool) -> None:
        if wait and self.pending:
            self.pending[0].synchronize()
        while self.pending and self.pending[0].query():
            self.pending.popleft()
            self.done += self.calls * self.per_call

    def __call__(self) -> int:
        self._retire(wait=len(self.pending) >= self.depth)
        while len(self.pending) < self.depth:
            for _ in range(self.calls):
                self.fn()
            ev = self.event()
            ev.record()
            self.pending.append(ev)
        self._retire(wait=False)
        return self.done

    def drain(self) -> None:
        while self.pending:
            self.pending.popleft().synchronize()


def _method(
    how: str,
    min_s: float,
    settle_s: float,
    long_s: float | None,
    edges: str = GRID_EDGES,
    min_updates: int | None = None,
) -> str:
    updates = (
        f" spanning >= {min_updates} of its updates (one sample of joules per execution each; at most the first "
        f"update after {UPDATES_MAX_S:g} s)"
        if min_updates
        else ""
    )
    longer = (
        f", run on update by update up to >= {long_s:g} s while the counter's per-update spread put the "
        f"window's edge error above {SPREAD_TARGET:.1%}"
        if long_s is not None and long_s > min_s
        else ""
    )
    return METHOD.format(how=how, min_s=min_s, settle_s=settle_s, longer=longer, edges=edges, updates=updates)


def unavailable(reason: str, min_s: float = DEFAULT_MIN_S) -> EnergyMeasurement:
    return EnergyMeasurement(
        available=False,
        reason=reason,
        regime="sustained",
        method=_method(SYNC_HOW.format(chunk_ms=CHUNK_S * 1e3), min_s, SETTLE_S, None),
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
    rapl: HostEnergyCounter | None = None,
    rapl_reason: str | None = None,
    clock: Callable[[], float] = time.perf_counter,
    event: Callable[[], Any] | None = None,
    settle_s: float = SETTLE_S,
    long_s: float | None = None,
    min_updates: int | None = None,
    executions_per_call: int = 1,
    how: str | None = None,
) -> EnergyMeasurement:
    """A workload's MEASURED energy window (module docstring). `power`: the session's energy
    counter (Session.energy_counter: tf_cuda's NVML, tf_cpu's RAPL where the host CPU is the
    measured device). `rapl`: the host CPU's counter read beside it (HostEnergyCounter), if any. `event`: a device event factory
    (torch.cuda.Event) to keep executions queued (QueuedSteps); None: synchronous chunks.
    `long_s`: how far past `min_s` a window whose counter updates are lumpy may run (e.g. LONG_S);
    None (the default): the window ends at the first update after `min_s`. `min_updates`: the
    window also spans at least this many counter updates (`run`: DEFAULT_MIN_UPDATES, the energy
    gate's samples; window.counter_window). `executions_per_call`, `how`: a call of `fn` that runs
    several executions (a CUDA graph's replay, queued: graph_window.py) and what the method string
    says of it (default: QUEUED_HOW)."""
    long_s = long_s if long_s is not None and long_s > min_s else None
    if event is not None:
        queued = QueuedSteps(fn, event, per_call_s, executions_per_call)
        step: Callable[[], int] = queued
        how = how or QUEUED_HOW.format(chunk_ms=CHUNK_S * 1e3, ahead_ms=AHEAD_S * 1e3)
    else:
        queued, step = None, chunk_runner(fn, synchronize, per_call_s)
        how = how or SYNC_HOW.format(chunk_ms=CHUNK_S * 1e3)
    synchronize()  # nothing queued: the counter's period is measured at idle the first time (take_window)
    try:
        window = take_window(
            step,
            power,
            min_s=min_s,
            rapl=rapl,
            rapl_reason=rapl_reason,
            clock=clock,
            settle_s=settle_s,
            spread_target=SPREAD_TARGET if long_s is not None else None,
            long_s=long_s,
            min_updates=min_updates,
        )
    finally:
        if queued is not None:
            queued.drain()
    method = _method(how, min_s, settle_s, long_s, min_updates=min_updates)
    c = window.counter
    if not c.ok or not c.executions or not c.seconds or c.joules is None:
        return attrs.evolve(unavailable(c.reason or "no execution completed inside the window", min_s), method=method)
    executions = c.executions_exact or c.executions
    per_exec = c.joules / executions
    return EnergyMeasurement(
        available=True,
        reason=None,
        regime="sustained",
        method=method,
        executions=round(executions),
        executions_exact=c.executions_exact,
        settle_s=settle_s,
        window_s=c.seconds,
        joules=c.joules,
        joules_per_execution=per_exec,
        seconds_per_execution=c.seconds / executions,
        mean_power_w=c.joules / c.seconds,
        samples_j=c.per_execution_samples() or None,
        tokens_per_execution=tokens,
        joules_per_token=per_exec / tokens if tokens else None,
        counter=counter_record(c, getattr(power, "counter_source", COUNTER_SOURCE), getattr(power, "unit_j", 0.001)),
        integration=window.integration,
        power_limit_w=power.enforced_limit_w(),
        host_cpu=window.host,
    )
