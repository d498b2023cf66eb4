"""Where a workload was captured as a CUDA graph, its burst eager timing (context beside the
device-time headline) gets at most PhasePlan.eager_beside_graph_budget_s; without a graph the eager
timing is the headline and keeps the whole --budget. Checked with the timing functions replaced, so
only the budgets handed to them are looked at."""

from __future__ import annotations

import types

from tf_cuda import modes as cuda_modes

from tensorforge_measure.measure.phases import PhasePlan
from tensorforge_measure.measure.stats import summarize
from tensorforge_measure.measure.timing import TimedSamples, TimingPolicy


def _timed() -> TimedSamples:
    xs = (1e-3, 1.1e-3, 1.2e-3)
    return TimedSamples(samples_s=xs, stats=summarize(xs), stop_reason="budget", warmup_iters=1, flush_bytes=0)


def _burst(monkeypatch, graph: bool, budget_s: float) -> list[tuple[str, float]]:
    asked: list[tuple[str, float]] = []
    monkeypatch.setattr(cuda_modes, "flush_step", lambda torch, nbytes, device: None)
    monkeypatch.setattr(cuda_modes, "flush_seconds", lambda torch, step, device: 0.0)
    monkeypatch.setattr(
        cuda_modes, "time_cuda", lambda fn, policy, dev: asked.append(("eager", policy.budget_s)) or _timed()
    )
    monkeypatch.setattr(
        cuda_modes, "time_graph_burst", lambda g, policy: asked.append(("graph", policy.budget_s)) or _timed()
    )
    session = types.SimpleNamespace(
        torch=None, device="cuda:0", flush_bytes=0, timing_policy=lambda b: TimingPolicy(budget_s=b)
    )
    phases = cuda_modes.CudaPhases(session, lambda: None, PhasePlan(budget_s=budget_s, trace=False))
    if graph:
        phases.graph = types.SimpleNamespace(method="graph", close=lambda: None)
    phases.burst()
    return asked


def test_eager_beside_a_graph_gets_the_smaller_budget(monkeypatch):
    plan = PhasePlan()
    assert plan.eager_beside_graph_budget_s < plan.budget_s
    assert _burst(monkeypatch, True, 2.0) == [
        ("eager", plan.eager_beside_graph_budget_s),
        ("graph", plan.graph_budget_s),
    ]


def test_without_a_graph_eager_keeps_the_whole_budget(monkeypatch):
    assert _burst(monkeypatch, False, 2.0) == [("eager", 2.0)]


def test_a_smaller_budget_asked_for_is_kept(monkeypatch):
    assert _burst(monkeypatch, True, 0.3)[0] == ("eager", 0.3)
