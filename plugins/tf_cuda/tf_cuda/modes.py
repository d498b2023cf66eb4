"""Every way a workload is timed on a CUDA device, in the order that keeps the regimes apart:

burst phase (cool device, short stretches at <= 50% duty, as the burst probes ran):
  eager calls, then replays of the call captured as a CUDA graph, then the trace window;
sustained phase (after the device reaches its steady clock under continuous load):
  a continuous do_bench-like window of eager calls, then one of graph replays, queued behind the
  steady-state load so the device never idles between them.

Each timing is a ModeTiming labelled with its regime ('burst' | 'sustained') and mode ('eager'
| 'graph'); every call is preceded by the same L2 flush. Why the phases in this order: the
sustained phase leaves the device hot and power-capped, so burst timings must come first.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from tensorforge_measure import ModeTiming, PhasePlan, PhaseResult, TimedSamples, TimingPolicy, gc_paused
from tf_cuda.graph import GraphCalls
from tf_cuda.sustained import ContinuousLoad, as_timed, host_bound, reach_steady
from tf_cuda.timing import flush_step, time_cuda


def flush_seconds(torch, step: Callable[[], Any] | None, device, calls: int = 5) -> float:
    """Device time of one flush (to size continuous windows of flush + call)."""
    if step is None:
        return 0.0
    step()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        step()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3 / calls


# Untimed replay pairs go on past the policy's warm-up count until the last STEADY_PAIRS agree
# within STEADY_SPREAD (max / min - 1), for at most WARMUP_SHARE of the budget. Why: after the idle
# moment before a workload the device runs its first milliseconds slow; five pairs of the decode
# step are ~2.5 ms, and in an H200 rerun (2026-12-01) its first two timed samples read 445 and 415 us
# against a p50 of 386 us (relative IQR 1.64%, against a limit of 2%).
STEADY_PAIRS = 3
STEADY_SPREAD = 0.02
WARMUP_SHARE = 0.25


def warm_until_steady(graph, at_least: int, max_s: float) -> int:
    """Untimed replay pairs: at least `at_least`, then until the last STEADY_PAIRS agree within
    STEADY_SPREAD or `max_s` has passed. Returns how many ran (the capture's warmup_iters)."""
    import time

    t0 = time.perf_counter()
    recent: list[float] = []
    ran = 0
    while True:
        recent = (recent + [graph.read_pair(graph.queue_pair(warm=True))])[-STEADY_PAIRS:]
        ran += 1
        steady = len(recent) == STEADY_PAIRS and max(recent) <= (1 + STEADY_SPREAD) * min(recent)
        if ran >= at_least and (steady or time.perf_counter() - t0 >= max_s):
            return ran


def time_graph_burst(graph, policy: TimingPolicy) -> TimedSamples:
    """Burst-regime timing of graph calls: one sample per replay pair (cuda_graph.GraphCalls);
    after each pair the host rests so timed work stays <= max_duty of wall time; the same
    stopping rule as time_cuda."""
    import time

    from tensorforge_measure import should_stop, summarize

    t0 = time.perf_counter()
    warmup = warm_until_steady(graph, max(1, policy.warmup_iters), WARMUP_SHARE * policy.budget_s)
    samples: list[float] = []
    stop = None
    while stop is None:
        start = time.perf_counter()
        samples.append(graph.read_pair(graph.queue_pair(warm=True)))
        if policy.max_duty < 1:
            time.sleep((time.perf_counter() - start) * (1.0 / policy.max_duty - 1.0))
        stop = should_stop(samples, policy, time.perf_counter() - t0)
    return TimedSamples(
        samples_s=tuple(samples),
        stats=summarize(samples),
        stop_reason=stop,
        warmup_iters=warmup,
        flush_bytes=policy.flush_bytes,
    )


class CudaPhases:
    """One prepared workload's timings on a TorchCudaSession (see the module docstring)."""

    MAX_GRAPH_CALLS = 64  # unrolled calls per graph
    FLUSH_REPLAYS = 5  # flush-alone replays timed in the sustained window (their median is subtracted)

    def __init__(self, session, fn: Callable[[], Any], plan: PhasePlan):
        self.session, self.fn, self.plan = session, fn, plan
        torch = session.torch
        self.flush = flush_step(torch, session.flush_bytes, session.device)
        self.flush_s = flush_seconds(torch, self.flush, session.device)
        self.graph: GraphCalls | None = None
        self.graph_note: str | None = None
        self.graph_call_s: float | None = None  # device time of one graph call
        self.burst_eager_s: float | None = None
        # wall seconds per step (capture, burst eager, burst graph, trace, steady, sustained
        # windows): what the run log reports, so a run's time can be accounted for
        self.seconds: dict[str, float] = {}

    @property
    def host_bound(self) -> bool:
        """Whether the burst timings showed the host setting the eager call's time."""
        return host_bound(self.burst_eager_s, self.graph_call_s if self.graph is not None else None)

    @property
    def replay(self) -> Callable[[], Any] | None:
        return self.graph.replay if self.graph is not None else None

    def capture(self) -> None:
        """First a graph of one call (to learn its device time), then of as many calls as keep a
        replay pair within one burst stretch."""
        from tf_cuda.graph import GraphCaptureError, capture, warm_up

        torch, dev = self.session.torch, self.session.device
        t0 = time.perf_counter()
        try:
            warm_up(torch, self.fn, dev)
            graph = capture(torch, self.fn, self.flush, 1, dev)
            self.graph_call_s = min(graph.read_pair(graph.queue_pair(warm=True)) for _ in range(3))
            stretch = self.session.timing_policy(1.0).burst_s / 2
            calls = max(1, min(self.MAX_GRAPH_CALLS, int(stretch / (self.graph_call_s + self.flush_s))))
            if calls > 1:
                graph.close()
                graph = capture(torch, self.fn, self.flush, calls, dev)
        except GraphCaptureError as exc:
            self.graph_note = f"CUDA graph capture failed: {exc}"
            return
        finally:
            self.seconds["capture"] = time.perf_counter() - t0
        self.graph = graph

    def close(self) -> None:
        if self.graph is not None:
            self.graph.close()
        self.graph = None

    def burst(self) -> PhaseResult:
        dev = self.session.device
        budget = self.plan.budget_s
        if self.graph is not None:  # the eager sample is context beside the graph's (PhasePlan)
            budget = min(budget, self.plan.eager_beside_graph_budget_s)
        policy = self.session.timing_policy(budget)
        method = (
            "burst regime: per call flush L2 -> start event -> {what} -> end event, stretches of "
            f"<= {policy.burst_s * 1e3:g} ms at <= {policy.max_duty:.0%} duty; stop when >= "
            f"{policy.min_iters} samples have rel. IQR <= {policy.target_rel_iqr:.0%}, "
            f"at {policy.max_iters} samples or at the budget"
        )
        timings: list[ModeTiming] = []
        notes: list[str] = [self.graph_note] if self.graph_note else []
        if self.plan.eager or self.graph is None:  # never no timing at all
            t0 = time.perf_counter()
            with gc_paused():  # a collection inside a host-bound call is host time (host_state.py)
                eager = time_cuda(self.fn, policy, dev)
            self.burst_eager_s = eager.stats.p50
            self.seconds["burst eager"] = time.perf_counter() - t0
            timings.append(ModeTiming("burst", "eager", eager, method.format(what="fn()")))
        if self.graph is not None:
            t0 = time.perf_counter()
            with gc_paused():
                graph = time_graph_burst(self.graph, self.session.timing_policy(self.plan.graph_budget_s))
            self.graph_call_s = graph.stats.p50
            self.seconds["burst graph"] = time.perf_counter() - t0
            timings.append(
                ModeTiming(
                    "burst",
                    "graph",
                    graph,
                    "burst regime: replay pairs, each followed by an "
                    f"equal rest (<= {policy.max_duty:.0%} duty), same stopping rule; " + self.graph.method,
                )
            )
        trace = None
        if self.plan.trace:
            from tensorforge_measure import trace_cuda

            t0 = time.perf_counter()
            trace = trace_cuda(
                self.fn, self.graph, self.flush, self.plan.trace_iterations, self.graph_note, pace=policy.max_duty
            )
            self.seconds["trace"] = time.perf_counter() - t0
        return PhaseResult(tuple(timings), tuple(notes), None, trace)

    def sustained(self) -> PhaseResult:
        with gc_paused():  # the steadying load and both windows (host_state.py)
            return self._sustained()

    def _sustained(self) -> PhaseResult:
        plan = self.plan
        load = ContinuousLoad(self.flush, plan.steady.window_s)
        guess = (self.burst_eager_s or 1e-4) + self.flush_s
        t0 = time.perf_counter()
        state, pending, per_call = reach_steady(load, self.fn, guess, plan.steady, host_bound=self.host_bound)
        t1 = time.perf_counter()
        eager_pairs = load.queue(self.fn, load.calls_for(per_call, plan.sustained_window_s))
        calls = self.graph
        flush_replays: list[tuple] = []
        work_replays: list[tuple] = []
        if calls is not None:
            # The flushes alone first (their time, to subtract; they also keep the device busy
            # while the host launches the first workload replay), then the workload replays
            # back to back: the same continuous [flush -> fn] load do_bench_cudagraph replays.
            # Why not alternating pairs as in the burst phase: under a power cap the clock follows
            # the average power, and every other replay being a memory-bound flush run made the
            # load lighter than the one do_bench_cudagraph times. With the loads now alike by
            # construction, the H200's power-capped GEMMs still read 2.1-2.4% faster than the
            # reference (tf32 375 vs 384 us): the pairs were not the whole difference
            # (docs/measurement.md, "Against triton").
            if calls.flushes is not None:
                flush_replays = [calls.queue_replay(flushes=True) for _ in range(self.FLUSH_REPLAYS)]
            replay_s = calls.calls * ((self.graph_call_s or 1e-4) + self.flush_s)
            work_replays = [calls.queue_replay() for _ in range(max(10, int(plan.sustained_window_s / replay_s)))]
        load.read(pending)
        eager = as_timed(load.read(eager_pairs), self.session.flush_bytes)
        graph = (
            as_timed(calls.read_replays(work_replays, flush_replays), self.session.flush_bytes)
            if calls is not None
            else None
        )
        self.seconds["steady"] = t1 - t0
        self.seconds["sustained windows"] = time.perf_counter() - t1
        method = (
            "sustained regime: after continuous load until {steady}, one continuous window of "
            f"~{plan.sustained_window_s * 1e3:g} ms of {{what}} with one synchronisation at its end "
            "(as triton.testing.do_bench)"
        )
        reached = "steady (host-bound load: " + state.rule.split(": ")[-1] + ")" if self.host_bound else "steady"
        method = method.replace("{steady}", reached if state.reached else "the time limit (NOT steady)")
        timings = [
            ModeTiming("sustained", "eager", eager, method.format(what="flush L2 -> start event -> fn() -> end event"))
        ]
        if graph is not None and calls is not None:
            timings.append(
                ModeTiming(
                    "sustained",
                    "graph",
                    graph,
                    method.format(what="graph replays of the unrolled [L2 flush -> fn], back to back")
                    + f"; sample = (T_fn - T_flush) / {calls.calls}, T_flush the median of "
                    f"{self.FLUSH_REPLAYS} replays of the {calls.calls} flushes alone queued just before"
                    + "; queued behind the eager window",
                )
            )
        notes = [] if state.reached else [f"sustained: not steady after {state.after_s:.2f} s ({state.rule})"]
        return PhaseResult(tuple(timings), tuple(notes), state, None)


@contextlib.contextmanager
def cuda_phases(session, fn: Callable[[], Any], plan: PhasePlan) -> Iterator[CudaPhases]:
    """The phases of one prepared workload, with its CUDA graph captured for the block."""
    torch = session.torch
    with torch.inference_mode():
        phases = CudaPhases(session, fn, plan)
        try:
            if plan.graph:
                phases.capture()
            else:
                phases.graph_note = "graph mode not requested"
            yield phases
        finally:
            phases.close()
            del phases
            torch.cuda.synchronize(session.device)
            torch.cuda.empty_cache()
