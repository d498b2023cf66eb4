"""The torch-cpu backend's measurement phases: one regime and one mode.

Why one regime: CPU timing is continuous (no duty cycle) and the CPU path has no power-capped
clock that separates a burst from sustained load, so burst and sustained collapse to 'single'
and the capture says so. Why one mode: CUDA graphs do not exist on the CPU; eager is the only
mode. The trace window still attributes the CPU time to the Core's operators (profiler CPU
activity: the framework ops inside each operator's range).
"""

from tensorforge_measure import ModeTiming, PhasePlan, PhaseResult

SINGLE_REGIME_NOTE = (
    "regimes collapse to one ('single') on torch-cpu: timing is continuous and no "
    "power-capped clock separates burst from sustained load"
)
NO_GRAPH_NOTE = "graph mode: no CUDA graphs on the CPU; eager is the only mode"


class CpuPhases:
    graph = None
    replay = None
    graph_note = NO_GRAPH_NOTE

    def __init__(self, session, fn, plan: PhasePlan):
        self.session, self.fn, self.plan = session, fn, plan

    def burst(self) -> PhaseResult:
        """The only phase: eager timing in the single regime, then the trace window."""
        timed = self.session.time(self.fn, self.plan.budget_s)
        method = (
            "single regime: per call flush caches -> perf_counter -> fn() -> perf_counter, back to "
            "back; stop when the spread is small, at the sample limit or at the budget"
        )
        trace = None
        if self.plan.trace:
            from tensorforge_measure import trace_cpu

            with self.session.torch.inference_mode():
                trace = trace_cpu(self.fn, self.session.flush(), self.plan.trace_iterations)
        return PhaseResult(
            (ModeTiming("single", "eager", timed, method),), (SINGLE_REGIME_NOTE, NO_GRAPH_NOTE), None, trace
        )

    def sustained(self):
        """None: the CPU's regimes collapse to one (see burst)."""
        return None
