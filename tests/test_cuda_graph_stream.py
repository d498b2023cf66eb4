"""The graph harness warms a workload up on the stream it then captures it on (why: on an H200 a
graph of the decode step replayed with 0.45 us between kernels when the warm-up had run on another
side stream, 0.10 us when on the capture stream; docs/measurement.md, "The two levels, traced").
Checked on the CPU with a stand-in for torch.cuda that records which stream each step used; and the
burst pairs' device-side head start (the spin queued before each pair)."""

from __future__ import annotations

import contextlib
import functools
import types

from tf_cuda import graph as cuda_graph
from tf_cuda.backend import TorchCudaSession


class _Stream:
    made = 0

    def __init__(self, device=None):
        _Stream.made += 1
        self.name = f"side{_Stream.made}"

    def wait_stream(self, other):
        pass


def _fake_torch(log: list):
    current = ["default"]

    @contextlib.contextmanager
    def stream(s):
        before, current[0] = current[0], s.name
        try:
            yield
        finally:
            current[0] = before

    class Graph:
        def replay(self):
            log.append(("replay", current[0]))

    @contextlib.contextmanager
    def graph(g, stream=None):
        log.append(("capture", stream.name if stream is not None else "torch default capture stream"))
        before, current[0] = current[0], stream.name if stream is not None else "?"
        try:
            yield
        finally:
            current[0] = before

    cuda = types.SimpleNamespace(
        Stream=_Stream,
        stream=stream,
        CUDAGraph=Graph,
        graph=graph,
        current_stream=lambda device=None: _Stream(),
        synchronize=lambda device=None: None,
        Event=lambda enable_timing=False: types.SimpleNamespace(record=lambda: None),
    )
    return types.SimpleNamespace(cuda=cuda), current


def test_warm_up_and_capture_share_one_stream(monkeypatch):
    monkeypatch.setattr(cuda_graph, "_CAPTURE_STREAMS", {})
    log: list = []
    torch, current = _fake_torch(log)
    fn = lambda: log.append(("fn", current[0]))  # noqa: E731

    cuda_graph.warm_up(torch, fn, "cuda:0")
    calls = cuda_graph.GraphCalls(torch, fn, lambda: log.append(("flush", current[0])), 2, "cuda:0")

    warm = [s for what, s in log[: cuda_graph.WARMUP_CALLS]]
    assert log[: cuda_graph.WARMUP_CALLS] == [("fn", warm[0])] * cuda_graph.WARMUP_CALLS
    captures = [s for what, s in log if what == "capture"]
    assert captures == [warm[0], warm[0]]  # the workload graph and the flushes' graph
    assert warm[0] != "default"
    # captured calls ran on that stream too, [flush -> fn] twice
    inside = log[cuda_graph.WARMUP_CALLS + 1 : cuda_graph.WARMUP_CALLS + 5]
    assert inside == [("flush", warm[0]), ("fn", warm[0])] * 2
    assert calls.calls == 2


def test_one_capture_stream_per_device(monkeypatch):
    monkeypatch.setattr(cuda_graph, "_CAPTURE_STREAMS", {})
    torch, _ = _fake_torch([])
    first = cuda_graph.capture_stream(torch, "cuda:0")
    assert cuda_graph.capture_stream(torch, "cuda:0") is first
    assert cuda_graph.capture_stream(torch, "cuda:1") is not first


def test_a_graph_states_its_launch_state():
    torch, _ = _fake_torch([])
    calls = cuda_graph.GraphCalls(torch, lambda: None, lambda: None, 1, "cuda:0")
    assert calls.launch_state == cuda_graph.LAUNCH_STATE == "paired"
    assert "paired" in calls.method


def test_a_burst_pair_queues_only_graph_replays_and_events(monkeypatch):
    """No eager kernel between replays: a device-side spin there moved the decode step's graph to
    the upper launch level on an H200 (2026-11-30); the warm pair adds the untimed flushes only."""
    monkeypatch.setattr(cuda_graph, "_CAPTURE_STREAMS", {})
    log: list = []
    torch, _ = _fake_torch(log)
    torch.cuda._sleep = lambda cycles: log.append(("spin", cycles))
    calls = cuda_graph.GraphCalls(torch, lambda: None, lambda: None, 2, "cuda:0")
    log.clear()
    calls.queue_pair(warm=True)
    assert [what for what, _ in log] == ["replay", "replay", "replay"]  # flushes, then work, flushes
    log.clear()
    calls.queue_pair(warm=False)
    assert [what for what, _ in log] == ["replay", "replay"]


class _Tensor:
    def __init__(self, log: list, current: list):
        self.log, self.current = log, current

    def add_(self, value):
        self.log.append(("add_", self.current[0]))
        return self


def test_paired_graph_warms_and_captures_on_the_capture_stream(monkeypatch):
    monkeypatch.setattr(cuda_graph, "_CAPTURE_STREAMS", {})
    log: list = []
    torch, current = _fake_torch(log)
    shared = cuda_graph.capture_stream(torch, "cuda:0").name
    cuda_graph.paired_graph(
        torch, lambda: log.append(("warm", current[0])), lambda: log.append(("body", current[0])), "cuda:0"
    )
    assert log == [("warm", shared), ("capture", shared), ("body", shared)]


class _Device:
    type = "cuda"

    def __str__(self):
        return "cuda:0"


def test_the_calibration_graphs_are_paired_too(monkeypatch):
    """Kernel floors and the estimate's kernel chains run in the same process before the workloads:
    they warm up and capture on the workloads' capture stream, never on a fresh pool stream or on
    torch's default capture stream."""
    from tf_cuda import floors as cuda_floors

    from tensorforge_measure.calibrate import estimate_probes

    monkeypatch.setattr(cuda_graph, "_CAPTURE_STREAMS", {})
    log: list = []
    torch, current = _fake_torch(log)
    torch.randn = lambda *shape, device=None: _Tensor(log, current)
    shared = cuda_graph.capture_stream(torch, "cuda:0").name

    cuda_floors._graph_of_trivial_kernels(torch, _Tensor(log, current), "cuda:0")
    item = types.SimpleNamespace(elements=8, kernels=4)
    # the probe asks the session for its graph; the torch-cuda session's own method answers
    session = types.SimpleNamespace(torch=torch, device=_Device())
    session.graph_of = functools.partial(TorchCudaSession.graph_of, session)
    estimate_probes._graph_fn(session, torch, item, _Device())

    streams = {s for what, s in log}
    assert streams == {shared}, log
    assert [what for what, _ in log].count("capture") == 2
    assert len(log) == (1 + 1 + cuda_floors.GRAPH_KERNELS) + (3 + 1 + 4)
