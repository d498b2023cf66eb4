"""The sustained regime's steady-state rule (tf_cuda.sustained): a
device-bound load is steady when its window medians agree; a host-bound load, whose window
medians follow the host's launch rate, is steady once min_s of it has run (and says so)."""

import itertools

import pytest
from tf_cuda.sustained import SteadyPolicy, host_bound, is_steady, reach_steady

POLICY = SteadyPolicy(window_s=0.05, windows=3, tolerance=0.01, min_s=0.3, max_s=3.0)


def test_device_bound_needs_agreeing_medians_after_min_s():
    assert not is_steady([1.0, 1.0, 1.0], 0.2, POLICY)  # too early
    assert not is_steady([1.0, 1.0], 0.5, POLICY)  # too few windows
    assert not is_steady([1.0, 1.05, 1.0], 0.5, POLICY)  # 5% apart
    assert is_steady([1.2, 1.0, 1.005, 1.0], 0.5, POLICY)  # the last three within 1%


def test_host_bound_is_steady_after_min_s_whatever_the_medians():
    jumpy = [6.1e-6, 5.4e-6, 6.1e-6]  # the tiny GEMM's two eager modes
    assert not is_steady(jumpy, 0.5, POLICY)
    assert not is_steady(jumpy, 0.2, POLICY, host_bound=True)  # min_s still holds
    assert is_steady(jumpy, 0.31, POLICY, host_bound=True)
    assert not is_steady([], 1.0, POLICY, host_bound=True)  # nothing ran


@pytest.mark.parametrize(
    ("eager", "graph", "expected"),
    [(2.4e-3, 0.37e-3, True), (37e-6, 21e-6, True), (346e-6, 344e-6, False), (1e-3, None, False), (None, 1e-3, False)],
)
def test_host_bound_threshold(eager, graph, expected):
    assert host_bound(eager, graph) is expected


class _Event:
    def __init__(self, t_ms):
        self.t_ms = t_ms

    def elapsed_time(self, other):
        return other.t_ms - self.t_ms

    def synchronize(self):
        pass


class _Load:
    """Windows of `calls` calls whose per-call times alternate between two host modes."""

    def __init__(self, clock):
        self.clock, self.t_ms, self.modes = clock, 0.0, itertools.cycle([6.1e-3, 5.4e-3])

    def calls_for(self, per_call_s, window_s=None):
        return 10

    def queue(self, fn, calls):
        per_call_ms = next(self.modes)
        pairs = []
        for _ in range(calls):
            pairs.append((_Event(self.t_ms), _Event(self.t_ms + per_call_ms)))
            self.t_ms += per_call_ms
        self.clock.now += 0.05  # each window takes ~50 ms of wall time
        return pairs

    @staticmethod
    def read(pairs):
        return [s.elapsed_time(e) * 1e-3 for s, e in pairs]


class _Clock:
    now = 0.0

    def __call__(self):
        return self.now


def test_reach_steady_host_bound_stops_at_min_s_and_names_its_rule():
    clock = _Clock()
    state, pending, per_call = reach_steady(_Load(clock), None, 1e-5, POLICY, clock, host_bound=True)
    assert state.reached and POLICY.min_s <= state.after_s < POLICY.min_s + 0.1
    assert "host-bound" in state.rule and pending and per_call > 0


def test_reach_steady_device_bound_gives_up_at_max_s_on_jumpy_medians():
    clock = _Clock()
    state, _, _ = reach_steady(_Load(clock), None, 1e-5, POLICY, clock)
    assert not state.reached and state.after_s >= POLICY.max_s and "host-bound" not in state.rule


def test_the_rest_before_a_workload_counts_host_time_since_the_last_load(monkeypatch):
    """RunOptions.rest_s is idle device time since the previous workload's last window ended; the
    host's work in between (freeing it, building the next) counts toward it."""
    from tensorforge_measure.run import runner

    slept, now = [], [100.0]
    monkeypatch.setattr(runner.time, "sleep", slept.append)
    monkeypatch.setattr(runner.time, "perf_counter", lambda: now[0])
    run = runner.Run.__new__(runner.Run)  # only _rest's state
    run.opts, run.load_ended = runner.RunOptions(target="h200", rest_s=0.2), None
    run._rest()  # no load before: the whole rest
    assert slept == [0.2]
    run.load_ended = 99.95  # 50 ms of host work since the last window
    run._rest()
    assert slept[-1] == pytest.approx(0.15)
    run.load_ended = 99.0  # the host's work outlasted the rest
    run._rest()
    assert len(slept) == 2
