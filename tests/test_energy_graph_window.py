"""The energy window of CUDA-graph replays (tf_cuda/graph_window.py), on fakes (unit logic
only: every figure in the docs comes from a real device): which execution a workload's window runs
(the host-bound rule of the latency timings, reused), how many calls one graph unrolls, a window of
graph replays on a simulated queue whose host launches are slower than the device (it must read the
device's pace, where eager calls read the host's), the fallback to eager calls when the graph
cannot be had, the estimate the comparison picks for each execution, and the estimate on the
device time alone."""

import contextlib
import functools
import types

import attrs
import pytest
from test_energy_nvml import FakeEvent, FakeNvml, QueueDevice, SimClock
from tf_cuda.graph import GraphCaptureError
from tf_cuda.graph_window import (
    EAGER,
    GRAPH,
    GRAPH_TARGET_S,
    MAX_GRAPH_CALLS,
    PACE_BOUND,
    PACE_MAX_CALL_S,
    Replays,
    choose,
    energy_window,
    graph_calls,
    host_launch_s,
)
from tf_cuda.nvml_power import NvmlPower

from tensorforge_measure.capture.sections.energy import WorkloadEnergyRecord
from tensorforge_measure.compare.energy import DEVICE_GRAPH, QUEUED_EAGER, energy_row
from tensorforge_measure.energy.measure import measure_energy


def _timing(regime, mode, p50):
    return types.SimpleNamespace(regime=regime, mode=mode, stats=types.SimpleNamespace(p50=p50))


def _fields(eager_s, graph_s, captured=True, reason=None):
    """What `run` holds before the energy window: the burst graph p50 as the primary timing (as a
    captured graph makes it) and the burst eager p50 among the modes."""
    if graph_s is None:
        return {
            "stats": types.SimpleNamespace(p50=eager_s),
            "regime": "burst",
            "mode": "eager",
            "modes": (),
            "graph": types.SimpleNamespace(captured=captured, reason=reason),
        }
    return {
        "stats": types.SimpleNamespace(p50=graph_s),
        "regime": "burst",
        "mode": "graph",
        "modes": (_timing("burst", "eager", eager_s), _timing("sustained", "eager", eager_s * 3)),
        "graph": types.SimpleNamespace(captured=captured, reason=reason),
    }


def test_a_host_bound_workload_with_a_graph_gets_graph_replays():
    # an H200's tiny GEMM (2026-12-01): 16.8 us eager, 2.6 us graph-timed (6.46x)
    choice = choose(_fields(16.8e-6, 2.6e-6), graphs=True)
    assert choice.execution == GRAPH and choice.graph_call_s == 2.6e-6
    assert "host-bound" in choice.reason and "6.46" in choice.reason and ">= 1.5" in choice.reason
    assert choice.calls == graph_calls(2.6e-6) == 770  # one replay ~2 ms of device time


def test_the_threshold_is_the_latency_timings_host_bound_rule():
    assert choose(_fields(1.49e-3, 1e-3), graphs=True).execution == EAGER  # below 1.5: device-paced
    device = choose(_fields(1.2e-3, 1e-3), graphs=True)
    assert device.execution == EAGER and "device-paced" in device.reason and "1.20 < 1.5" in device.reason
    assert choose(_fields(1.5e-3, 1e-3), graphs=True).execution == GRAPH


def test_no_graph_timing_or_no_graph_backend_keeps_eager_calls_and_says_why():
    failed = choose(_fields(2e-3, None, captured=False, reason="CUDA graph capture failed: sync"), graphs=True)
    assert failed.execution == EAGER and "no burst graph timing (CUDA graph capture failed: sync)" in failed.reason
    cpu = choose(_fields(16.8e-6, 2.6e-6), graphs=False)
    assert cpu.execution == EAGER and "captures no CUDA graph" in cpu.reason


def test_graph_calls_make_a_replay_of_about_two_ms_within_bounds():
    assert graph_calls(372e-6) == 6  # the decode step: 2.2 ms a replay
    assert graph_calls(5e-3) == 1  # a call longer than the target: one call a graph
    assert graph_calls(1e-9) == MAX_GRAPH_CALLS
    for call_s in (2.6e-6, 40e-6, 372e-6):
        assert GRAPH_TARGET_S <= graph_calls(call_s) * call_s < GRAPH_TARGET_S + call_s


class _GraphDevice(QueueDevice):
    """The simulated queue with a graph replay: one host launch (`replay_host_s`) queues `calls`
    executions' device time."""

    def replays(self, replay_host_s=5e-6, pool_bytes=4096):
        device = self

        @contextlib.contextmanager
        def factory(fn, calls):
            def replay():
                device.clock.t += replay_host_s
                device.busy_until = max(device.busy_until, device.clock.t) + calls * device.per

            yield Replays(replay, calls, pool_bytes)

        return factory


def _measure(clock, dev, watts=300.0):
    power, _ = NvmlPower.open(0, FakeNvml(clock, watts=watts, interval_s=0.1))
    m = functools.partial(
        measure_energy,
        synchronize=lambda: None,
        power=power,
        min_s=0.4,
        min_updates=10,
        clock=clock,
        event=lambda: FakeEvent(dev),
    )
    return lambda fn, per, **kw: m(fn, per_call_s=per, **kw)


def test_a_graph_window_reads_the_devices_pace_where_eager_calls_read_the_hosts():
    """Device 10 us a call, the host 60 us a launch (6x: host-bound). Eager calls: one execution per
    60 us of host time; graph replays: the device's 10 us. At a constant 300 W the joules per
    execution follow the pace: 18 mJ against 3 mJ."""
    fields = _fields(60e-6, 10e-6)
    clock = SimClock()
    dev = _GraphDevice(clock, per_exec_s=10e-6, host_s=60e-6)
    m = energy_window(dev.call, fields, _measure(clock, dev), dev.replays(), 60e-6)
    assert m.available and m.execution == GRAPH and m.graph_calls == 200 and m.graph_pool_bytes == 4096
    assert "host-bound" in m.execution_reason
    assert "CUDA graph of 200 unrolled calls" in m.method and "200 x replays" in m.method
    assert m.seconds_per_execution == pytest.approx(10e-6, rel=0.02)
    assert m.joules_per_execution == pytest.approx(300.0 * 10e-6, rel=0.02)
    assert len(m.samples_j) >= 10 and all(s == pytest.approx(3e-3, rel=0.05) for s in m.samples_j)
    assert m.executions % 200 in (0, 199, 1) or m.executions_exact  # whole replays, interpolated at the edges

    clock2 = SimClock()
    dev2 = _GraphDevice(clock2, per_exec_s=10e-6, host_s=60e-6)
    eager = energy_window(dev2.call, fields, _measure(clock2, dev2), None, 60e-6)
    assert eager.execution == EAGER and "captures no CUDA graph" in eager.execution_reason
    assert eager.seconds_per_execution == pytest.approx(60e-6, rel=0.05)
    assert eager.joules_per_execution == pytest.approx(300.0 * 60e-6, rel=0.05)
    assert "graph" not in eager.method


def test_a_device_paced_workload_keeps_the_eager_window():
    clock = SimClock()
    dev = _GraphDevice(clock, per_exec_s=1e-3, host_s=1e-5)
    called = []

    def replays(fn, calls):  # never asked for
        called.append(calls)
        raise AssertionError("no graph for a device-paced workload")

    m = energy_window(dev.call, _fields(1.05e-3, 1e-3), _measure(clock, dev), replays, 1e-3)
    assert m.execution == EAGER and "device-paced" in m.execution_reason and not called
    assert m.seconds_per_execution == pytest.approx(1e-3, rel=0.03)


def test_a_graph_that_cannot_be_had_falls_back_to_eager_calls_and_says_why():
    clock = SimClock()
    dev = _GraphDevice(clock, per_exec_s=10e-6, host_s=60e-6)

    @contextlib.contextmanager
    def refused(fn, calls):
        raise GraphCaptureError("the graph of 200 calls reserved 2048 MiB (> 1024 MiB)")
        yield  # pragma: no cover

    m = energy_window(dev.call, _fields(60e-6, 10e-6), _measure(clock, dev), refused, 60e-6)
    assert m.available and m.execution == EAGER and m.graph_calls is None
    assert "host-bound" in m.execution_reason and "the graph failed (the graph of 200 calls reserved 2048 MiB" in (
        m.execution_reason
    )
    assert m.seconds_per_execution == pytest.approx(60e-6, rel=0.05)


def _waiter(clock, dev):
    """synchronize() on the simulated queue: the host waits until the device is idle."""
    return lambda: setattr(clock, "t", max(clock.t, dev.busy_until))


def test_the_hosts_launch_time_is_measured_without_the_devices_pace():
    # host-paced: 30 us a launch against 18.6 us on the device (conv_resnet50_3x3's queued windows)
    clock = SimClock()
    dev = QueueDevice(clock, per_exec_s=18.6e-6, host_s=30e-6)
    assert host_launch_s(dev.call, _waiter(clock, dev), 18.6e-6, clock) == pytest.approx(30e-6)
    assert clock.t >= 0.02  # it ran its 20 ms
    # device-paced: the chunks are waited on between, so no launch waits behind a full queue
    clock = SimClock()
    dev = QueueDevice(clock, per_exec_s=1e-3, host_s=10e-6)
    assert host_launch_s(dev.call, _waiter(clock, dev), 1e-3, clock) == pytest.approx(10e-6)


def test_a_queue_the_host_barely_outruns_gets_graph_replays():
    """conv_resnet50_3x3 on the H200: burst eager 22.75 us against graph 18.6 us (1.22, device-paced
    by the burst rule), yet its queued eager windows ran at 22-39 us a call: the host's launch time
    decides."""
    asked = []

    def host(seconds):
        def measure(graph_s):
            asked.append(graph_s)
            return seconds

        return measure

    fields = _fields(22.75e-6, 18.6e-6)
    paced = choose(fields, graphs=True, host_s=host(25e-6))
    assert paced.execution == GRAPH and paced.calls == graph_calls(18.6e-6) and paced.host_launch_s == 25e-6
    assert "host-paced in a queue" in paced.reason and "1.34 x the burst graph p50" in paced.reason
    assert asked == [18.6e-6]
    quick = choose(fields, graphs=True, host_s=host(PACE_BOUND * 18.6e-6 * 0.99))
    assert quick.execution == EAGER and "device-paced" in quick.reason and "< 0.6" in quick.reason
    assert quick.host_launch_s == pytest.approx(PACE_BOUND * 18.6e-6 * 0.99)
    # no graph backend, or a call too long to be host-paced: nothing is measured
    asked.clear()
    assert choose(fields, graphs=False, host_s=host(1.0)).execution == EAGER
    long_call = PACE_MAX_CALL_S * 2
    assert choose(_fields(long_call * 1.2, long_call), graphs=True, host_s=host(1.0)).execution == EAGER
    assert asked == []
    # the burst rule's graph windows need no measurement either
    assert choose(_fields(16.8e-6, 2.6e-6), graphs=True, host_s=host(0.0)).execution == GRAPH and asked == []


def test_a_window_whose_host_is_measured_slower_replays_the_graph_at_the_devices_pace():
    fields = _fields(22.75e-6, 18.6e-6)  # device-paced by the burst rule
    clock = SimClock()
    dev = _GraphDevice(clock, per_exec_s=18.6e-6, host_s=30e-6)
    m = energy_window(dev.call, fields, _measure(clock, dev), dev.replays(), 22e-6, _waiter(clock, dev), clock)
    assert m.execution == GRAPH and "host-paced in a queue" in m.execution_reason
    assert m.host_launch_s == pytest.approx(30e-6)
    assert m.seconds_per_execution == pytest.approx(18.6e-6, rel=0.02)
    # the same workload where the host keeps well ahead: eager calls, the launch time recorded
    clock = SimClock()
    dev = _GraphDevice(clock, per_exec_s=18.6e-6, host_s=8e-6)
    m = energy_window(dev.call, fields, _measure(clock, dev), dev.replays(), 22e-6, _waiter(clock, dev), clock)
    assert m.execution == EAGER and m.host_launch_s == pytest.approx(8e-6)
    assert m.seconds_per_execution == pytest.approx(18.6e-6, rel=0.05)


def _pred(estimate_j=4.0e-4, device_j=1.1e-4):
    return WorkloadEnergyRecord(
        floor_j=5e-5,
        floor_terms={},
        estimate_j=estimate_j,
        estimate_terms=None,
        estimate_note=None,
        device_estimate_j=device_j,
        power_limited_bound_s=None,
        power_limited=False,
        uncalibrated_modes=(),
    )


def _measured(execution, j):
    energy = types.SimpleNamespace(available=True, joules_per_execution=j, execution=execution, reason=None)
    return types.SimpleNamespace(energy=energy, modes=())


def test_the_comparison_picks_the_estimate_that_matches_the_windows_execution():
    graph = energy_row(_pred(), _measured("graph", 1.0e-4))
    assert graph.estimate_j == 1.1e-4 and graph.estimate_basis == DEVICE_GRAPH
    assert graph.estimate_error == pytest.approx(0.1)
    eager = energy_row(_pred(), _measured("eager", 5.0e-4))
    assert eager.estimate_j == 4.0e-4 and eager.estimate_basis == QUEUED_EAGER
    old = energy_row(_pred(), _measured(None, 5.0e-4))  # a capture from before graph windows: eager
    assert old.estimate_basis == QUEUED_EAGER
    # a calibration without the queued model has no device-time estimate: the eager one, said
    no_device = energy_row(_pred(device_j=None), _measured("graph", 1.0e-4))
    assert no_device.estimate_j == 4.0e-4 and "no device-time estimate" in no_device.estimate_basis


def test_an_old_capture_record_reads_without_the_new_fields():
    from tensorforge_measure.capture.convert import converter
    from tensorforge_measure.capture.sections.energy import EnergyMeasurement

    old = {
        "available": True,
        "reason": None,
        "regime": "sustained",
        "method": "m",
        "executions": 10,
        "window_s": 1.0,
        "joules": 1.0,
        "joules_per_execution": 0.1,
        "seconds_per_execution": 0.1,
        "mean_power_w": 1.0,
        "counter": None,
        "integration": None,
    }
    m = converter.structure(old, EnergyMeasurement)
    assert m.execution is None and m.graph_calls is None and m.execution_reason is None
    assert attrs.evolve(m, execution="graph").execution == "graph"


class _FakeCuda:
    """torch.cuda as cuda_replays and cuda_graph.paired_graph use it: streams, a graph that
    records the calls made while capturing and replays them, and a reserved-memory figure that
    grows by `pool_bytes` at each capture."""

    def __init__(self, pool_bytes):
        self.pool_bytes, self.reserved, self.capturing, self.freed = pool_bytes, 1 << 20, None, 0
        cuda = self

        class Graph:
            def __init__(self):
                self.calls = []

            def replay(self):
                for call in self.calls:
                    call()

        class Stream:
            def __init__(self, device=None):
                pass

            def wait_stream(self, other):
                pass

        self.CUDAGraph, self.Stream = Graph, Stream

        @contextlib.contextmanager
        def graph(g, stream=None):
            cuda.capturing = g
            yield
            cuda.capturing = None
            cuda.reserved += cuda.pool_bytes

        @contextlib.contextmanager
        def stream(s):
            yield

        self.graph, self.stream = graph, stream

    def current_stream(self, device=None):
        return self.Stream()

    def synchronize(self, device=None):
        pass

    def memory_reserved(self, device=None):
        return self.reserved

    def empty_cache(self):
        self.freed += 1


@pytest.fixture(autouse=True)
def _own_capture_streams(monkeypatch):
    """The fake torch's streams never reach the module's per-device cache of real ones."""
    from tf_cuda import graph as cuda_graph

    monkeypatch.setattr(cuda_graph, "_CAPTURE_STREAMS", {})


def _fake_torch(pool_bytes):
    return types.SimpleNamespace(cuda=_FakeCuda(pool_bytes), inference_mode=contextlib.nullcontext)


def test_cuda_replays_captures_k_unrolled_calls_and_measures_its_pool():
    from tf_cuda.graph_window import cuda_replays

    torch = _fake_torch(3 << 20)
    ran = []

    def fn():
        if torch.cuda.capturing is not None:
            torch.cuda.capturing.calls.append(lambda: ran.append("replayed"))
        else:
            ran.append("eager")

    with cuda_replays(torch, fn, 5, "cuda:0") as graph:
        assert graph.calls == 5 and graph.pool_bytes == 3 << 20
        assert ran == ["eager"] + ["replayed"] * 5  # the warm-up call, then the check replay
        ran.clear()
        graph.replay()
        assert ran == ["replayed"] * 5
    assert torch.cuda.freed == 1  # the pool is given back when the window ends


def test_cuda_replays_refuses_a_graph_whose_pool_is_too_large_or_whose_capture_fails():
    from tf_cuda.graph_window import MAX_POOL_BYTES, cuda_replays

    torch = _fake_torch(MAX_POOL_BYTES + 1)
    with pytest.raises(GraphCaptureError, match=r"the graph of 4 calls reserved 1024 MiB \(> 1024 MiB\)"):
        with cuda_replays(torch, lambda: None, 4, "cuda:0"):
            pass

    def sync_inside():
        if torch.cuda.capturing is not None:
            raise RuntimeError("operation not permitted when stream is capturing")

    torch = _fake_torch(0)
    with pytest.raises(GraphCaptureError, match="operation not permitted when stream is capturing"):
        with cuda_replays(torch, sync_inside, 4, "cuda:0"):
            pass
