"""The estimate-terms probe times CUDA items twice, eagerly and as a CUDA graph (the regime the
evaluation scores), through the session's measurement phases; the fit then uses the graph sample
against the estimate's device time and the eager one for the host. A fake session stands in for
the device: what is checked is the plumbing, that each sample lands under its own key and that a
session without phases (the host CPU) keeps the eager sample alone."""

import contextlib

from tensorforge_ops.calibrate import estimate_probes
from tensorforge_ops.measure.phases import ModeTiming, PhaseResult
from tensorforge_ops.measure.stats import summarize
from tensorforge_ops.measure.timing import TimedSamples


def _timed(seconds):
    samples = [seconds] * 30
    return TimedSamples(
        samples_s=samples, stats=summarize(samples), stop_reason="stable", warmup_iters=1, flush_bytes=0
    )


class _Phases:
    def burst(self):
        return PhaseResult(
            (
                ModeTiming("burst", "eager", _timed(5e-6), "eager"),
                ModeTiming("burst", "graph", _timed(3e-6), "graph"),
            )
        )


class _CudaLike:
    def __init__(self):
        self.plans = []

    @contextlib.contextmanager
    def phases(self, fn, plan):
        self.plans.append(plan)
        yield _Phases()

    def time(self, fn, budget):
        raise AssertionError("a session with phases is timed through them")


class _CpuLike:
    def time(self, fn, budget):
        return _timed(7e-6)


def test_a_session_with_phases_gives_the_eager_and_the_graph_sample():
    session = _CudaLike()
    row = estimate_probes._timed(session, lambda: None, 0.2, graph=True)
    assert row["p50_s"] == 5e-6 and row["graph_p50_s"] == 3e-6
    plan = session.plans[0]
    assert plan.graph and not plan.trace and not plan.sustained  # burst only: the probe's regime
    assert plan.graph_budget_s == estimate_probes.GRAPH_BUDGET_S


def test_without_phases_or_graph_only_the_eager_sample():
    row = estimate_probes._timed(_CpuLike(), lambda: None, 0.2, graph=True)
    assert row["p50_s"] == 7e-6 and "graph_p50_s" not in row
