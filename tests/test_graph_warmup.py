"""The burst graph timing's warm-up runs until the device is steady (cuda_modes.warm_until_steady):
after an idle moment the first replays run slow, and those must not become timed samples."""

import time

import pytest
from tf_cuda import modes as cuda_modes


class _Graph:
    """Replay pairs whose times come from a list (the fake device's clock ramp), then steady."""

    def __init__(self, times):
        self.times, self.read = list(times), 0

    def queue_pair(self, warm=False):
        assert warm  # every burst pair replays the flushes alone first
        return None

    def read_pair(self, ev):
        self.read += 1
        return self.times.pop(0) if self.times else 1.0


def test_warm_up_goes_on_until_three_pairs_agree():
    graph = _Graph([1.6, 1.4, 1.2, 1.1, 1.05, 1.0, 1.0, 1.0])
    ran = cuda_modes.warm_until_steady(graph, at_least=2, max_s=60.0)
    # 1.1, 1.05, 1.0 spread 10%; 1.05, 1.0, 1.0 spread 5%; 1.0 x3 steady at the eighth pair
    assert ran == 8 == graph.read


def test_warm_up_runs_at_least_the_policy_count_when_steady_at_once():
    graph = _Graph([])
    assert cuda_modes.warm_until_steady(graph, at_least=5, max_s=60.0) == 5


def test_warm_up_stops_at_its_time_share_when_never_steady(monkeypatch):
    clock = {"t": 0.0}

    def tick():
        clock["t"] += 0.01
        return clock["t"]

    monkeypatch.setattr(time, "perf_counter", tick)
    graph = _Graph([1.0 + (i % 2) * 0.5 for i in range(1000)])  # alternating: never within 2%
    ran = cuda_modes.warm_until_steady(graph, at_least=3, max_s=0.1)
    assert 3 <= ran < 20


def test_the_burst_timing_records_the_pairs_its_warm_up_ran(monkeypatch):
    from tensorforge_measure.measure.timing import TimingPolicy

    monkeypatch.setattr(time, "sleep", lambda s: None)
    graph = _Graph([2.0, 1.5, 1.0])
    policy = TimingPolicy(warmup_iters=1, min_iters=5, max_iters=5, budget_s=10.0, flush_bytes=0)
    timed = cuda_modes.time_graph_burst(graph, policy)
    assert timed.warmup_iters == 5  # 2.0, 1.5, 1.0, 1.0, 1.0: steady after five pairs
    assert timed.samples_s == pytest.approx((1.0,) * 5)
