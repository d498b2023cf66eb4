"""Which execution a workload's energy window runs, and the window of device-graph replays
(device-neutral: a session that captures graphs offers `graph_replays(fn, calls)`, e.g. the CUDA
backend's CUDA graphs, tf_cuda.graph_window.cuda_replays).

Why: an energy window of eager calls, queued, lasts as long as the slower of the device and the
host's Python launches. For a host-bound workload (burst eager p50 >= HOST_BOUND x burst graph p50,
the rule of measure/cuda_sustained.py: the tiny GEMM, the eager decode steps) that is the host:
its joules per execution followed the VM host's speed (the window's time per kernel over the
probe's 0.60-1.82x over nine H200 runs), the estimate could not
predict them, and the energy gate had to say NO VERDICT. Serving runs such steps as CUDA graphs.
So a host-bound workload whose latency timings captured a graph gets a window of graph replays:
one graph of K unrolled calls (no L2 flush: the eager window has none), K such that one replay is
~GRAPH_TARGET_S of device time, replays queued as the eager window's chunks are
(measure.QueuedSteps; executions = K x completed replays). One host call then launches K
executions' kernels, so the device sets the pace and the window measures the device's energy per
execution. Everything else keeps the eager window: where the device is slower than the host the
two windows run the same kernels back to back.

Host-paced in a queue, not only in the burst timings (2026-12-01): the burst rule reads the
eager call's time after a flush, which hides the host's dispatch (the flush gives the host time to
get ahead). conv_resnet50_3x3 (18.6 us a call on the H200, one cuDNN call) read 1.1-1.2x there, yet
its queued eager windows ran 22-39 us a call over eleven runs, its power 354-547 W, its joules per
execution following the host's speed, the counter and the power integral 1.5-5.7% apart (the worst
windows of all) and the energy gate at NO VERDICT. So where the burst rule says eager, the window
first measures the host itself (`host_launch_s`: chunks of eager calls, each chunk waited on before
the next, only the launching timed) and replays a graph where one launch takes at least
PACE_BOUND of the burst graph p50: a queue the host barely outruns empties whenever the host
stalls (the VM's host ran the same call 1.2-2.1x slower from run to run).

The graph's memory: the capture's private pool holds what the K unrolled calls allocate; tensors
freed inside the capture are reused by later calls of it, so it holds about one call's
activations, not K. It is measured (`graph_pool_bytes`) and a capture above MAX_POOL_BYTES is
dropped for the eager window, as is a capture that fails; the record says why.
"""

from __future__ import annotations

import functools
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from tensorforge_measure.measure.steady import HOST_BOUND, host_bound
from tensorforge_measure.measure.steady import burst_p50 as timings_p50

GRAPH = "graph"
EAGER = "eager"
# one replay's device time: long enough that the host's one launch per replay (a few us) is far
# shorter than the device's work, short enough that the queue's 2 ms chunks hold one replay each
GRAPH_TARGET_S = 0.002
# unrolled calls per graph at most: the tiny GEMM (2.6 us graph-timed on the H200) needs ~770 for
# 2 ms; a capture of 1024 kernels takes milliseconds
MAX_GRAPH_CALLS = 1024
# the capture's private pool at most (~1 call's activations where freed tensors are reused; the
# eager decode step's are a few MiB): above it the graph is dropped and the window runs eager calls
MAX_POOL_BYTES = 1 << 30

# eager windows need the host to launch a call in at most this share of the device's time for it
# (module docstring): headroom for the host's stalls, so the queue never empties
PACE_BOUND = 0.6
# how long the host's launches are timed (chunks of ~CHUNK_S of device work, at least PACE_CHUNKS)
PACE_S = 0.02
PACE_CHUNKS = 3
# a call this long on the device is never host-paced in practice (hundreds of launches a call would
# be needed): no pace check, no time spent
PACE_MAX_CALL_S = 0.5e-3

GRAPH_HOW = (
    "replayed as a CUDA graph of {calls} unrolled calls (captured for this window, no L2 flush), the replays "
    "queued on the device in chunks of ~{chunk_ms:g} ms, each followed by an event, at most ~{ahead_ms:g} ms of "
    "work ahead (executions completed = {calls} x replays whose event completed): the device's pace, not the "
    "host's"
)


@attrs.frozen
class WindowChoice:
    """The execution an energy window runs, and why."""

    execution: str  # GRAPH or EAGER
    reason: str
    graph_call_s: float | None = None  # the burst graph p50 (device time of one call)
    calls: int | None = None  # unrolled calls per graph (GRAPH only)
    host_launch_s: float | None = None  # the host's launch time per eager call, where it was measured


def burst_p50(fields: Mapping[str, Any], mode: str) -> float | None:
    """The burst-regime p50 of one mode among a measurement's timings (its primary timing and
    `modes`), from the fields `run` collects before the energy window."""
    primary = (fields.get("regime"), fields.get("mode"), getattr(fields.get("stats"), "p50", None))
    return timings_p50([primary, *((t.regime, t.mode, t.stats.p50) for t in fields.get("modes") or ())], mode)


def graph_calls(call_s: float) -> int:
    """Unrolled calls per graph: one replay ~GRAPH_TARGET_S of device time, 1..MAX_GRAPH_CALLS."""
    return max(1, min(MAX_GRAPH_CALLS, math.ceil(GRAPH_TARGET_S / max(float(call_s), 1e-9))))


def host_launch_s(
    fn: Callable[[], Any],
    synchronize: Callable[[], None],
    graph_call_s: float,
    clock: Callable[[], float] = time.perf_counter,
    seconds: float = PACE_S,
) -> float | None:
    """MEASURED: the host's seconds to launch one eager call, queued: chunks of ~CHUNK_S of device
    work, each waited on before the next (so the device's queue never fills and blocks a launch),
    only the launching timed; the median chunk's per-call time, under the window's thread switch
    interval (the power sampler shares the interpreter there). None where nothing ran."""
    from tensorforge_measure.energy.measure import CHUNK_S, SWITCH_S
    from tensorforge_measure.energy.window import calls_per_chunk

    calls = calls_per_chunk(graph_call_s, CHUNK_S)
    per_call: list[float] = []
    switch = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_S)
    try:
        fn()  # one untimed call: whatever a first call sets up is not the host's pace
        synchronize()
        start = clock()
        while len(per_call) < PACE_CHUNKS or clock() - start < seconds:
            t = clock()
            for _ in range(calls):
                fn()
            per_call.append((clock() - t) / calls)
            synchronize()
    finally:
        sys.setswitchinterval(switch)
    return statistics.median(per_call) if per_call else None


def choose(
    fields: Mapping[str, Any], graphs: bool, host_s: Callable[[float], float | None] | None = None
) -> WindowChoice:
    """Graph replays for a host-bound workload whose latency timings captured a graph, or one whose
    host launches a call in >= PACE_BOUND of its burst graph p50 (`host_s(graph_p50)`: the host's
    launch time, measured where the burst rule says eager; module docstring); eager calls
    otherwise. `graphs`: whether the backend can capture one here."""
    eager, graph = burst_p50(fields, "eager"), burst_p50(fields, "graph")
    record = fields.get("graph")
    if eager is None or graph is None:
        why = getattr(record, "reason", None) if record is not None and not record.captured else None
        return WindowChoice(EAGER, "no burst graph timing" + (f" ({why})" if why else "") + ": eager calls")
    ratio = f"burst eager p50 {eager * 1e6:.4g} us / burst graph p50 {graph * 1e6:.4g} us = {eager / graph:.2f}"
    if not host_bound(eager, graph):
        launch = host_s(graph) if host_s is not None and graphs and graph <= PACE_MAX_CALL_S else None
        if launch is None:
            return WindowChoice(EAGER, f"device-paced ({ratio} < {HOST_BOUND:g}): eager calls", graph)
        pace = (
            f"{ratio} < {HOST_BOUND:g}, but the host launches one eager call in {launch * 1e6:.4g} us, "
            f"{launch / graph:.2f} x the burst graph p50"
        )
        if launch < PACE_BOUND * graph:
            return WindowChoice(
                EAGER, f"device-paced ({pace} < {PACE_BOUND:g}): eager calls", graph, host_launch_s=launch
            )
        return WindowChoice(
            GRAPH,
            f"host-paced in a queue ({pace} >= {PACE_BOUND:g}): CUDA-graph replays, the device's pace",
            graph,
            graph_calls(graph),
            host_launch_s=launch,
        )
    if not graphs:
        return WindowChoice(EAGER, f"host-bound ({ratio}) but this backend captures no CUDA graph: eager calls", graph)
    return WindowChoice(
        GRAPH,
        f"host-bound ({ratio} >= {HOST_BOUND:g}): CUDA-graph replays, the device's pace",
        graph,
        graph_calls(graph),
    )


class GraphCaptureError(Exception):
    """A device graph could not be captured (or was dropped, e.g. its pool too large); the
    message says why. Raised by a session's graph capabilities (Session.graph_replays)."""


@attrs.frozen
class Replays:
    """A captured graph of `calls` unrolled calls: `replay()` launches them all."""

    replay: Callable[[], Any]
    calls: int
    pool_bytes: int | None


def energy_window(
    fn: Callable[[], Any],
    fields: Mapping[str, Any],
    measure: Callable[..., Any],
    replays: Callable[[Callable[[], Any], int], Any] | None,
    eager_per_call_s: float | None,
    synchronize: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Any:
    """The workload's energy window in the execution `choose` picks: `measure(fn, per_call_s,
    **kw)` is measure.measure_energy with everything else bound (the counter, the event factory);
    `replays(fn, calls)` a context manager yielding Replays (the session's graph_replays), None
    where the backend captures no graph; `synchronize` waits for the device (the host's launch
    time is measured with it; None: not measured, the burst rule alone decides). The
    EnergyMeasurement says which execution ran and why; a graph that cannot be captured falls
    back to the eager window and says why."""
    from tensorforge_measure.energy.measure import AHEAD_S, CHUNK_S

    host_s = functools.partial(host_launch_s, fn, synchronize, clock=clock) if synchronize is not None else None
    choice = choose(fields, replays is not None, host_s)
    launch = {"host_launch_s": choice.host_launch_s} if choice.host_launch_s is not None else {}
    if choice.execution == GRAPH and replays is not None and choice.calls and choice.graph_call_s:
        try:
            with replays(fn, choice.calls) as graph:
                how = GRAPH_HOW.format(calls=graph.calls, chunk_ms=CHUNK_S * 1e3, ahead_ms=AHEAD_S * 1e3)
                m = measure(graph.replay, graph.calls * choice.graph_call_s, executions_per_call=graph.calls, how=how)
            return attrs.evolve(
                m,
                execution=GRAPH,
                execution_reason=choice.reason,
                graph_calls=graph.calls,
                graph_pool_bytes=graph.pool_bytes,
                **launch,
            )
        except GraphCaptureError as exc:
            choice = WindowChoice(EAGER, f"{choice.reason}; but the graph failed ({exc}): eager calls")
    m = measure(fn, eager_per_call_s)
    return attrs.evolve(m, execution=EAGER, execution_reason=choice.reason, **launch)
