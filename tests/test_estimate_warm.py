"""The estimate's window time (tensorforge/estimate/warm.py): an energy window runs executions back
to back without the L2 flush every timed call has, so each saves its operators' largest class
saving (a short one a share of its time, at most the cap), fitted per class from probes timed
both ways. Figures are chosen by the test or predicted
by the Core (workloads), none measured; the GPU test at the end times a real probe both ways."""

from types import SimpleNamespace as NS

import attrs
import pytest
from estimate_points import H200_CEILINGS, before_new_terms, generated_points

from tensorforge.api import predict, warm_timed
from tensorforge.energy.model import window_time, workload_energy
from tensorforge.errors import TensorForgeError
from tensorforge.estimate.coefficients import coefficients_from_data, coefficients_to_data
from tensorforge.estimate.fit import Fitter, _fit_warm
from tensorforge.estimate.warm import MIN_PAIRS, fit_warm, warm_class, window_saving
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve

SAVINGS = {"compute": 1.2e-6, "memory": 1.0e-6, "read": 6.0e-6}


@pytest.fixture(scope="module")
def host():
    return PluginHost()


@pytest.fixture(scope="module")
def predicted(host):
    names = ("gemm_tiny", "gemm_skinny_decode", "gemm_large_square", "transformer_decode", "conv_resnet50_3x3")
    coefficients = attrs.evolve(before_new_terms(), warm_saving_s=SAVINGS)
    return predict(resolve(host, names), host.target("h200"), host.mappings(), estimate=coefficients)


def test_classes_follow_the_bounds_operator(host, predicted):
    """A skinny GEMM streaming its weights reads far more than it writes ('read'); a decode step's
    norm is memory-bound but writes as much as it reads ('memory'); a large GEMM is 'compute'."""
    workloads = dict(resolve(host, ("gemm_skinny_decode", "transformer_decode", "gemm_large_square")))
    cases = {"gemm_skinny_decode": ("matmul", "read"), "transformer_decode": ("norm_attn", "memory")}
    cases["gemm_large_square"] = ("matmul", "compute")
    for workload, kind in resolve(host, tuple(cases)):
        op_name, cls = cases[workload.name]
        op = next(o for o in kind.operators(workload.params) if o.name == op_name)
        bound = next(o for o in predicted.workload(workload.name).operators if o.name == op_name)
        assert warm_class(op.problem, bound.bottleneck) == cls
    assert len(workloads) == 3
    # a problem without tensors to read is 'memory' when memory-bound, never an error
    assert warm_class(NS(), "memory") == "memory"
    assert warm_class(NS(), "compute") == "compute"


def test_savings_are_per_class_medians_never_negative_and_need_enough_pairs():
    pairs = [("read", 30e-6, 24e-6), ("read", 20e-6, 15e-6), ("read", 50e-6, 43e-6)]
    pairs += [("compute", 300e-6, 304e-6), ("compute", 10e-6, 11e-6), ("compute", 200e-6, 203e-6)]
    pairs += [("memory", 5e-6, 4e-6)] * (MIN_PAIRS - 1)
    pairs += [("read", 0.0, 1e-6)]  # no sample: left out
    got, shares = fit_warm(pairs)
    assert got["read"] == pytest.approx(6e-6)  # median of 6, 5 and 7 us
    assert got["compute"] == 0.0  # the warm calls were slower: no saving, not a negative one
    assert "memory" not in got  # too few pairs: not calibrated
    assert shares == {}  # three pairs cannot put MIN_PAIRS on both sides of a knee: the median alone


def test_a_short_call_saves_a_share_of_its_time_up_to_the_cap():
    """Pairs shaped as the H200's memory class (2026-12-01): one-tile GEMMs of 2.6-4 us saving ~15% of
    themselves, longer calls a capped ~1.5 us (with noise either way): the fit gives the cap and
    the share, and the one-tile call's saving follows its time, not the cap."""
    times = [2.6, 2.7, 2.9, 3.1, 4.0, 6.0, 8.0, 13.6, 18.0, 24.8, 26.4, 35.5, 51.6, 62.0, 80.4, 98.3]
    noise = [0.02, -0.03, 0.01, 0.0, -0.02, 0.03, -0.01, 0.2, -0.1, 0.05, -0.2, 0.1, 0.0, -0.05, 0.15, -0.1]
    pairs = []
    for t, e in zip(times, noise):
        saving = min(1.5, 0.15 * t) + (e if t > 10 else e * 0.1)
        pairs.append(("memory", t * 1e-6, (t - saving) * 1e-6))
    caps, shares = fit_warm(pairs)
    assert caps["memory"] == pytest.approx(1.5e-6, rel=0.05)
    assert shares["memory"] == pytest.approx(0.15, rel=0.05)
    tiny = window_saving(["memory"], caps, shares, 2.84e-6)
    assert tiny == pytest.approx(shares["memory"] * 2.84e-6) and tiny < 0.5e-6
    assert window_saving(["memory"], caps, shares, 40e-6) == caps["memory"]
    # without the execution's time (or the class's share) the cap stands, as before the share
    assert window_saving(["memory"], caps, shares) == caps["memory"]
    assert window_saving(["memory"], caps, {}, 2.84e-6) == caps["memory"]


def test_one_execution_saves_its_largest_class_saving_once():
    assert window_saving(["memory", "read", "read", "compute"], SAVINGS) == pytest.approx(6e-6)
    assert window_saving(["memory", "compute"], SAVINGS) == pytest.approx(1.2e-6)
    assert window_saving(["read"], {}) == 0.0
    assert window_saving([], SAVINGS) == 0.0


def test_the_estimate_carries_the_saving_and_a_window_time_never_below_the_bound(predicted):
    skinny, tiny, big = (predicted.workload(n) for n in ("gemm_skinny_decode", "gemm_tiny", "gemm_large_square"))
    decode = predicted.workload("transformer_decode")
    assert skinny.estimate.warm_saving_s == pytest.approx(6e-6)
    assert skinny.estimate.window_s == pytest.approx(skinny.estimate.device_s - 6e-6)
    # a decode step of many read-dominated operators saves one read-class saving, not one each
    assert decode.estimate.warm_saving_s == pytest.approx(6e-6)
    assert big.estimate.warm_saving_s == pytest.approx(1.2e-6)
    assert tiny.estimate.window_s < tiny.estimate.device_s
    # the latency figures are untouched: the flushed device time is what a timed call takes
    for w in (skinny, tiny, big, decode):
        assert w.estimate.window_s >= w.estimate.bound_s
        assert w.estimate.estimate_for("graph") == w.estimate.device_s
    assert attrs.evolve(tiny.estimate, warm_saving_s=1.0).window_s == tiny.estimate.bound_s


def test_the_estimate_limits_a_short_executions_saving_to_its_share(host):
    shares = {"compute": 0.15, "memory": 0.15, "read": 0.22}
    coefficients = attrs.evolve(before_new_terms(), warm_saving_s=SAVINGS, warm_saving_share=shares)
    chosen = resolve(host, ("gemm_tiny", "gemm_large_square"))
    got = predict(chosen, host.target("h200"), host.mappings(), estimate=coefficients)
    tiny, big = got.workload("gemm_tiny").estimate, got.workload("gemm_large_square").estimate
    assert tiny.device_s < 5e-6  # a few microseconds: below the memory class's knee
    assert tiny.warm_saving_s == pytest.approx(0.15 * tiny.device_s)
    assert big.warm_saving_s == pytest.approx(SAVINGS["compute"])  # a long call: the cap


def test_window_time_reads_a_captures_estimate_with_or_without_the_saving():
    old = NS(device_s=40e-6, bound_s=30e-6)  # a capture from before the warm saving
    assert window_time(old) == 40e-6
    assert window_time(NS(device_s=40e-6, bound_s=30e-6, warm_saving_s=6e-6)) == pytest.approx(34e-6)
    assert window_time(NS(device_s=40e-6, bound_s=38e-6, warm_saving_s=6e-6)) == pytest.approx(38e-6)
    assert window_time(None) is None


def test_the_energy_estimate_of_a_window_uses_the_window_time(predicted):
    """Only the static and busy terms follow the time: the same work, a shorter window."""
    from test_energy_queued import COEFF, L2

    w = predicted.workload("gemm_skinny_decode")
    flushed = workload_energy(w, COEFF, L2, w.estimate.eager_s, w.estimate.device_s)
    warm = workload_energy(w, COEFF, L2, w.estimate.eager_s, window_time(w.estimate))
    assert warm.device_estimate_terms.time_s == pytest.approx(w.estimate.window_s)
    assert warm.device_estimate_j < flushed.device_estimate_j
    assert warm.device_estimate_terms.compute_j == flushed.device_estimate_terms.compute_j


def test_the_warm_stage_recovers_the_savings_it_generated(host):
    """Probe points whose warm samples are the flushed ones less a known saving per class: the
    stage gives each class its saving, and streaming items count as 'memory'."""
    ceilings = H200_CEILINGS
    truth = before_new_terms()
    bound, points = generated_points(host, ("gemm", "attn-decode"), ceilings, truth)
    by_class = {}
    warm_points = []
    for p in points:
        classes = {warm_class(op.problem, b.bottleneck) for op, b in zip(p.operators, p.prediction.operators)}
        cls = classes.pop()
        by_class[cls] = by_class.get(cls, 0) + 1
        warm_points.append(
            attrs.evolve(p, warm_s=p.measured_s - {"compute": 1e-6, "memory": 0.5e-6, "read": 6e-6}[cls])
        )
    assert by_class.get("read", 0) >= MIN_PAIRS and by_class.get("compute", 0) >= MIN_PAIRS
    streams = [{"group": "stream", "graph_p50_s": 60e-6 + i * 1e-6, "warm_p50_s": 59.2e-6 + i * 1e-6} for i in range(4)]
    f = Fitter(truth, host.target("h200"), bound.ceilings)
    _fit_warm(f, streams, warm_points)
    assert f.c.warm_saving_s["read"] == pytest.approx(6e-6)
    assert f.c.warm_saving_s["compute"] == pytest.approx(1e-6)
    # the memory class: the generated memory-bound GEMMs' 0.5 us and the streams' 0.8 us
    assert f.c.warm_saving_s["memory"] == pytest.approx(0.5e-6) or 0.5e-6 < f.c.warm_saving_s["memory"] <= 0.8e-6
    # only the pairs the plan times warm: the generated points of <= 100 us, and the streams
    timed = [p for p in warm_points if warm_timed(p.group, p.measured_s)]
    assert 0 < len(timed) < len(warm_points)
    assert f.report["warm"]["points"] == len(timed) + len(streams)
    # without warm samples the stage says so and leaves no saving
    g = Fitter(truth, host.target("h200"), bound.ceilings)
    _fit_warm(g, [], points)
    assert g.c.warm_saving_s == {} and g.report["warm"]["points"] == 0


def test_savings_round_trip_and_bad_values_are_refused():
    c = attrs.evolve(before_new_terms(), warm_saving_s=SAVINGS)
    assert coefficients_from_data(coefficients_to_data(c), "x").warm_saving_s == SAVINGS
    data = coefficients_to_data(c)
    data["warm_saving_s"] = {"read": -1e-6}
    with pytest.raises(TensorForgeError, match="warm_saving_s"):
        coefficients_from_data(data, "calibration")
    # older coefficients without the field: no saving
    data.pop("warm_saving_s")
    assert coefficients_from_data(data, "x").warm_saving_s == {}
    shared = attrs.evolve(c, warm_saving_share={"memory": 0.15})
    assert coefficients_from_data(coefficients_to_data(shared), "x").warm_saving_share == {"memory": 0.15}
    data = coefficients_to_data(shared)
    data["warm_saving_share"] = {"memory": 0.0}
    with pytest.raises(TensorForgeError, match="warm_saving_share"):
        coefficients_from_data(data, "calibration")
    data.pop("warm_saving_share")  # before the share: the cap whatever the time
    assert coefficients_from_data(data, "x").warm_saving_share == {}


def test_which_probe_items_are_timed_warm():
    assert warm_timed("gemm", 20e-6) and warm_timed("stream", 100e-6)
    assert not warm_timed("gemm", 300e-6)  # too long: the saving is lost in its noise
    assert not warm_timed("launch", 5e-6)  # the launch chains are no operator class
    assert not warm_timed("gemm", None) and not warm_timed("gemm", 0.0)


@pytest.mark.gpu
def test_a_probe_timed_warm_on_a_cuda_device_runs_no_slower_than_flushed():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from tf_cuda.backend import TorchCudaBackend

    from tensorforge_measure.calibrate.estimate_probes import _warm, _with_warm

    session = TorchCudaBackend().open(0)  # the warm window is the session's own graph replays
    device = session.device
    w = torch.randn(6144, 6144, device=device, dtype=torch.bfloat16)
    x = torch.randn(1, 6144, device=device, dtype=torch.bfloat16)
    fn = lambda: torch.matmul(x, w)  # noqa: E731  (a GEMV streaming 75 MB: the 'read' class)
    fn()
    row = _warm(session, fn, 30e-6)
    assert row["warm_calls"] >= 2 and 1e-6 < row["warm_p50_s"] < 1e-3
    # a long item is not timed warm, a short one is, and its row says so
    assert "warm_p50_s" not in _with_warm(session, {"group": "gemm", "graph_p50_s": 1e-3}, fn, True)
    assert "warm_p50_s" in _with_warm(session, {"group": "gemm", "graph_p50_s": 30e-6}, fn, True)
