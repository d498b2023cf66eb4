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
from typing import Any, Callable, Iterator, List, Optional, Tuple

import attrs

from .cuda_sustained import ContinuousLoad, SteadyPolicy, SteadyState, as_timed, reach_steady
from .cuda_timing import TimedSamples, TimingPolicy, time_cuda

REGIMES = ("burst", "sustained")
MODES = ("eager", "graph")


@attrs.frozen
class ModeTiming:
    regime: str = attrs.field(validator=attrs.validators.in_(REGIMES))
    mode: str = attrs.field(validator=attrs.validators.in_(MODES))
    timed: TimedSamples
    method: str


@attrs.frozen
class PhasePlan:
    budget_s: float = 2.0                 # burst eager timing (the existing --budget)
    graph_budget_s: float = 1.0           # burst graph timing
    graph: bool = True
    trace: bool = True
    trace_iterations: int = 5
    sustained: bool = True
    steady: SteadyPolicy = SteadyPolicy()
    sustained_window_s: float = 0.1       # do_bench's default rep is 100 ms


@attrs.frozen
class PhaseResult:
    timings: Tuple[ModeTiming, ...]
    notes: Tuple[str, ...] = ()           # e.g. why the graph mode is missing
    steady: Optional[SteadyState] = None
    trace: Any = None                     # trace_window.WorkloadTrace


def flush_step(torch, flush_bytes: int, device) -> Optional[Callable[[], Any]]:
    """The L2 flush time_cuda uses: zero a buffer of flush_bytes in int32 words (as do_bench)."""
    if not flush_bytes:
        return None
    buffer = torch.empty(flush_bytes // 4, dtype=torch.int32, device=device)
    return buffer.zero_


def flush_seconds(torch, step: Optional[Callable[[], Any]], device, calls: int = 5) -> float:
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


class CudaPhases:
    """One prepared workload's timings on a TorchCudaSession (see the module docstring)."""

    def __init__(self, session, fn: Callable[[], Any], plan: PhasePlan):
        self.session, self.fn, self.plan = session, fn, plan
        self.replay: Optional[Callable[[], Any]] = None
        self.graph_note: Optional[str] = None
        self.burst_eager_s: Optional[float] = None
        self.burst_graph_s: Optional[float] = None

    def _policy(self, budget_s: float) -> TimingPolicy:
        return self.session.timing_policy(budget_s)

    def burst(self) -> PhaseResult:
        torch, dev = self.session.torch, self.session.device
        policy = self._policy(self.plan.budget_s)
        method = ("burst regime: per call flush L2 -> start event -> {what} -> end event, stretches of "
                  f"<= {policy.burst_s * 1e3:g} ms at <= {policy.max_duty:.0%} duty; stop when >= "
                  f"{policy.min_iters} samples have rel. IQR <= {policy.target_rel_iqr:.0%}, "
                  f"at {policy.max_iters} samples or at the budget")
        with torch.inference_mode():
            eager = time_cuda(self.fn, policy, dev)
        self.burst_eager_s = eager.stats.p50
        timings: List[ModeTiming] = [ModeTiming("burst", "eager", eager, method.format(what="fn()"))]
        notes: List[str] = []
        if self.replay is not None:
            with torch.inference_mode():
                graph = time_cuda(self.replay, self._policy(self.plan.graph_budget_s), dev)
            self.burst_graph_s = graph.stats.p50
            timings.append(ModeTiming("burst", "graph", graph, method.format(what="graph.replay()")))
        elif self.graph_note:
            notes.append(self.graph_note)
        trace = None
        if self.plan.trace:
            from .trace_window import trace_cuda
            step = flush_step(torch, self.session.flush_bytes, dev)
            with torch.inference_mode():
                trace = trace_cuda(self.fn, self.replay, step, self.plan.trace_iterations, self.graph_note)
            del step
        return PhaseResult(tuple(timings), tuple(notes), None, trace)

    def sustained(self) -> PhaseResult:
        torch, dev, plan = self.session.torch, self.session.device, self.plan
        step = flush_step(torch, self.session.flush_bytes, dev)
        flush_s = flush_seconds(torch, step, dev)
        load = ContinuousLoad(step, plan.steady.window_s)
        guess = (self.burst_eager_s or 1e-4) + flush_s
        with torch.inference_mode():
            state, pending, per_call = reach_steady(load, self.fn, guess, plan.steady)
            eager_pairs = load.queue(self.fn, load.calls_for(per_call, plan.sustained_window_s))
            graph_pairs = None
            if self.replay is not None:
                graph_call = (self.burst_graph_s or self.burst_eager_s or 1e-4) + flush_s
                graph_pairs = load.queue(self.replay, load.calls_for(graph_call, plan.sustained_window_s))
            load.read(pending)
            eager = as_timed(load.read(eager_pairs), self.session.flush_bytes)
            graph = as_timed(load.read(graph_pairs), self.session.flush_bytes) if graph_pairs else None
        method = ("sustained regime: after continuous load until {steady}, one continuous window of "
                  f"~{plan.sustained_window_s * 1e3:g} ms of flush L2 -> start event -> {{what}} -> end event "
                  "with one synchronisation at its end (as triton.testing.do_bench)")
        method = method.replace("{steady}", "steady" if state.reached else "the time limit (NOT steady)")
        timings = [ModeTiming("sustained", "eager", eager, method.format(what="fn()"))]
        if graph is not None:
            timings.append(ModeTiming("sustained", "graph", graph, method.format(what="graph.replay()")))
        notes = [] if state.reached else [f"sustained: not steady after {state.after_s:.2f} s ({state.rule})"]
        return PhaseResult(tuple(timings), tuple(notes), state, None)


@contextlib.contextmanager
def cuda_phases(session, fn: Callable[[], Any], plan: PhasePlan) -> Iterator[CudaPhases]:
    """The phases of one prepared workload, with its CUDA graph captured for the block."""
    phases = CudaPhases(session, fn, plan)
    if not plan.graph:
        phases.graph_note = "graph mode not requested"
        yield phases
        return
    from .cuda_graph import captured
    with session.torch.inference_mode(), captured(fn, session.device) as capture:
        phases.replay, phases.graph_note = capture.replay, capture.reason
        yield phases
