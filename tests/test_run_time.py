"""Where a run's time goes and what may overlap (issue 12: the whole default run on an H200 within
its time goal without touching the samples):

* the estimate's fit starts on the burst probes' results, before the first sustained probe, in a
  process of its own, and gives exactly the fit the run would have made inline;
* the rest after fresh probes counts the host's work since they ended, never sleeps it twice;
* a CUDA session freezes the objects that outlive it, so the collection after every prepared
  workload walks only what was made since, and hands them back on close;
* the sustained graph window's samples subtract the flush-alone replays' median;
* the burst matmul probe runs at the burst regime's duty.
"""

import gc
import json
from types import SimpleNamespace

from golden import HOST_CPU_ESTIMATE_EVAL, HOST_CPU_RUN, load_json
import pytest

from tensorforge.host.plugin_host import PluginHost
from tensorforge_measure.api import CalibrationProbe, ProbeResult
from tensorforge_measure.calibrate import store as calibration
from tensorforge_measure.calibrate.background_fit import BackgroundFit
from tensorforge_measure.calibrate.estimate_fit import fit_estimate
from tensorforge_measure.capture.convert import converter


class Probe(CalibrationProbe):
    def __init__(self, name, regime="burst", seen=None):
        self.name, self.regime, self.seen = name, regime, seen

    def run(self, session):
        self.seen.append(self.name)
        return ProbeResult(name=self.name, method="test", compute={"fp32": 1e12}, regime=self.regime)


def _session():
    return SimpleNamespace(info=SimpleNamespace(fingerprint="fp", name="dev", details={}))


def test_before_sustained_sees_every_burst_probe_and_runs_once():
    seen: list[str] = []
    provisional = []

    def before(cal):
        provisional.append((sorted(cal.probes), list(seen)))

    probes = [Probe("burst-a", seen=seen), Probe("sus-a", "sustained", seen), Probe("sus-b", "sustained", seen)]
    probes.append(Probe("burst-b", seen=seen))
    cal = calibration.run_probes(_session(), probes, before_sustained=before)
    assert provisional == [(["burst-a", "burst-b"], ["burst-a", "burst-b"])]
    assert sorted(cal.probes) == ["burst-a", "burst-b", "sus-a", "sus-b"]
    # a device without sustained probes never calls it (the fit then runs inline, after them)
    calls = []
    calibration.run_probes(_session(), [Probe("single", "single", [])], before_sustained=calls.append)
    assert calls == []


def _stored_calibration(path):
    data = load_json(path)
    cal = data["calibrated"]
    fields = {a.name: cal[a.name] for a in calibration.Calibration.__attrs_attrs__ if a.name in cal}
    return converter.structure(fields, calibration.Calibration), data["target"]


def test_the_background_fit_is_the_inline_fit():
    cal, target_name = _stored_calibration(HOST_CPU_ESTIMATE_EVAL)
    core = PluginHost()
    target = core.target(target_name)
    ceilings = calibration.to_ceilings(cal)
    fit = BackgroundFit.start(cal, target, ceilings, None)
    assert fit is not None and fit.matches(cal, target, None)
    assert not fit.matches(cal, target, "some-other-point")
    background, why = fit.result()
    assert why is None
    inline = fit_estimate(cal, core, target, ceilings, None)
    assert json.dumps(background, sort_keys=True) == json.dumps(inline, sort_keys=True)
    assert "coefficients" in background


def test_nothing_to_fit_starts_nothing():
    cal, target_name = _stored_calibration(HOST_CPU_RUN)  # no estimate-terms points
    target = PluginHost().target(target_name)
    assert BackgroundFit.start(cal, target, calibration.to_ceilings(cal), None) is None
    assert BackgroundFit.start(cal, None, None, None) is None


def test_the_cooldown_counts_the_host_work_since_the_probes(monkeypatch):
    from tensorforge_measure.run import runner

    clock = {"now": 100.0}
    slept: list[float] = []
    monkeypatch.setattr(runner.time, "perf_counter", lambda: clock["now"])
    monkeypatch.setattr(runner.time, "sleep", slept.append)
    run = runner.Run.__new__(runner.Run)
    run.opts, run.t0, run.progress = runner.RunOptions(target="h200", cooldown_s=2.0), 0.0, lambda m: None
    run.cool_until = 102.0
    clock["now"] = 100.5  # 0.5 s of host work (fit, predictions) since the probes ended
    run._cool_down()
    assert slept == [pytest.approx(1.5)] and run.cool_until is None
    run.cool_until, clock["now"] = 102.0, 108.0  # the fit took longer than the rest: no sleep
    run._cool_down()
    assert slept == [pytest.approx(1.5)]
    run._cool_down()  # nothing pending (a reused calibration): no rest, no message
    assert slept == [pytest.approx(1.5)]


def test_a_cuda_session_hands_frozen_objects_back_on_close():
    from tf_cuda.backend import TorchCudaSession

    session = TorchCudaSession.__new__(TorchCudaSession)  # no device here: only close() is exercised
    gc.freeze()
    session._frozen = True
    assert gc.get_freeze_count() > 0
    session.close()
    assert gc.get_freeze_count() == 0
    session.close()  # twice is harmless


class _Event:
    def __init__(self, t):
        self.t = t

    def elapsed_time(self, end):  # ms, as torch.cuda.Event
        return (end.t - self.t) * 1e3

    def synchronize(self):
        pass


def test_sustained_graph_samples_subtract_the_median_flush_replay():
    from tf_cuda.graph import GraphCalls

    calls = GraphCalls.__new__(GraphCalls)
    calls.calls = 4
    flushes = [(_Event(0.0), _Event(d)) for d in (2e-4, 2e-4, 9e-4)]  # one slow lead-in, median 2e-4
    work = [(_Event(1.0), _Event(1.0 + 4 * 1e-3 + 2e-4)), (_Event(2.0), _Event(2.0 + 4 * 1.1e-3 + 2e-4))]
    assert calls.read_replays(work, flushes) == [pytest.approx(1e-3), pytest.approx(1.1e-3)]
    assert calls.read_replays([], flushes) == []


def test_the_burst_matmul_probe_runs_at_the_burst_duty():
    pytest.importorskip("torch")
    from tf_cuda.backend import MAX_DUTY
    from tf_cuda.probes import BURST_MATMUL_POLICY, PROBE_POLICY

    assert BURST_MATMUL_POLICY.max_duty == MAX_DUTY < 1
    assert BURST_MATMUL_POLICY.burst_s == PROBE_POLICY.burst_s


def test_prepared_frees_the_workloads_cycles_and_freezes_what_survives():
    """prepared() ends with a full collection: a reference cycle the builder made (and that held
    its tensors) is freed, and what survives is frozen, so the next workload's collection does not
    walk the modules the profiler imported lazily (torch_cuda.py: 95 collections cost 5.5 s)."""
    import weakref

    import torch
    from tf_cuda.backend import TorchCudaSession

    class _Cuda:  # the CUDA calls prepared() makes, on a machine without a GPU
        def __getattr__(self, name):
            return {"memory_allocated": lambda d: 0, "max_memory_allocated": lambda d: 0}.get(name, lambda *a: None)

    class _Node:
        pass

    kept: list[object] = []
    made: dict[str, weakref.ref] = {}

    class _Builder:
        def build(self, params, device):
            node = _Node()
            node.self = node  # a cycle: only the collector frees it
            made["cycle"] = weakref.ref(node)
            kept.append([[] for _ in range(1000)])  # tracked containers that outlive the workload
            return lambda: None

    session = TorchCudaSession.__new__(TorchCudaSession)
    session.torch, session.device = SimpleNamespace(cuda=_Cuda(), inference_mode=torch.inference_mode), None
    gc.freeze()
    session._frozen = True
    try:
        before = gc.get_freeze_count()
        with session.prepared(_Builder(), None, "fp32") as prepared:
            prepared.fn()
        assert made["cycle"]() is None  # the cycle was collected before the freeze
        assert gc.get_freeze_count() >= before + 1000  # the survivors were frozen
    finally:
        session.close()
    assert gc.get_freeze_count() == 0
