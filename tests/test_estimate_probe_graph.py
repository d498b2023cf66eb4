"""The estimate-terms probe times CUDA items twice, eagerly and as a CUDA graph (the regime the
evaluation scores), through the session's measurement phases; the fit then uses the graph sample
against the estimate's device time and the eager one for the host. A fake session stands in for
the device: what is checked is the plumbing, that each sample lands under its own key and that a
session without phases (the host CPU) keeps the eager sample alone."""

import contextlib

from tensorforge_measure.calibrate import estimate_probes
from tensorforge_measure.measure.phases import ModeTiming, PhaseResult
from tensorforge_measure.measure.stats import summarize
from tensorforge_measure.measure.timing import TimedSamples


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


class _GraphOnlyPhases:
    """Phases that honour plan.eager as cuda_modes.CudaPhases does."""

    def __init__(self, plan):
        self.plan = plan

    def burst(self):
        timings = [ModeTiming("burst", "graph", _timed(3e-6), "graph")]
        if self.plan.eager:
            timings.insert(0, ModeTiming("burst", "eager", _timed(5e-6), "eager"))
        return PhaseResult(tuple(timings))


class _CudaGraphOnly(_CudaLike):
    @contextlib.contextmanager
    def phases(self, fn, plan):
        self.plans.append(plan)
        yield _GraphOnlyPhases(plan)


def test_an_item_timed_as_a_graph_alone_has_no_eager_sample():
    session = _CudaGraphOnly()
    row = estimate_probes._timed(session, lambda: None, 0.1, graph=True, eager=False)
    assert not session.plans[0].eager
    assert row["graph_p50_s"] == 3e-6 and "p50_s" not in row


def test_each_group_is_timed_in_the_modes_its_fit_reads():
    from tensorforge.estimate.probe_plan import CUDA_PLAN, timing_modes

    assert timing_modes("launch") == ("eager", "graph")  # eager launch cost and the device's
    assert timing_modes("host") == ("eager",)  # the host's time per kernel
    assert timing_modes("train-host") == ("eager",)  # autograd's and the optimizer's host costs
    groups = {item.group for item in CUDA_PLAN} - {"launch", "host", "train-host", "graph"}
    assert groups and all(timing_modes(g) == ("graph",) for g in groups)


def test_a_plan_subset_keeps_only_the_samples_the_plan_takes():
    from tensorforge.estimate.probe_plan import ProbeItem, subset_to_plan

    plan = (
        ProbeItem(name="launch:chain1", group="launch", op="add_chain", elements=256),
        ProbeItem(name="gemm:g", group="gemm", spec="gemm:m=8,n=8,k=8,dtype=bf16"),
    )
    points = [
        {"name": "launch:chain1", "group": "launch", "p50_s": 4e-6, "graph_p50_s": 1.5e-6},
        {"name": "gemm:g", "group": "gemm", "p50_s": 9e-6, "min_s": 8e-6, "graph_p50_s": 3e-6},
        {"name": "gemm:dropped", "group": "gemm", "p50_s": 9e-6, "graph_p50_s": 3e-6},
    ]
    kept = subset_to_plan(points, plan)
    assert [r["name"] for r in kept] == ["launch:chain1", "gemm:g"]
    assert kept[0]["p50_s"] == 4e-6  # launch chains keep their eager sample
    assert "p50_s" not in kept[1] and "min_s" not in kept[1] and kept[1]["graph_p50_s"] == 3e-6


def test_gemm_rates_of_graph_only_points_come_from_the_fastest_replay():
    from tensorforge_measure.calibrate.sweep_rates import sweep_gemm_rates

    rates = sweep_gemm_rates(
        [{"name": "g", "group": "gemm", "spec": "gemm:m=1000,n=1000,k=1000,dtype=bf16", "graph_min_s": 1e-5}]
    )
    rate, name, sample = rates["bf16"]
    assert sample == "graph_min_s" and name == "g" and abs(rate - 2e9 / 1e-5) < 1
