"""benchmarks/vs_do_bench.py's graph row compares the harnesses in one launch state: triton's
do_bench_cudagraph either unmodified (warm-up on a new pool stream, capture on torch.cuda.graph's
default capture stream) or paired (both on our harness's capture stream, everything restored after).
Checked on the CPU with a stand-in for torch.cuda and a copy of do_bench_cudagraph's stream use
(triton 3.6, python/triton/testing.py); and the time plan that gives every row its share."""

from __future__ import annotations

import contextlib
import types

import pytest
from script_module import load_script
from tf_cuda import graph as cuda_graph

bench = load_script("benchmarks/vs_do_bench.py")


class _Stream:
    pool = 0

    def __init__(self, device=None, priority=0):
        _Stream.pool += 1
        self.name = f"pool{_Stream.pool}"

    def __eq__(self, other):
        return isinstance(other, _Stream) and other.name == self.name

    __hash__ = object.__hash__

    def wait_stream(self, other):
        pass


def _fake_torch(log: list):
    current = [_Stream()]

    @contextlib.contextmanager
    def stream(s):
        before, current[0] = current[0], s
        try:
            yield
        finally:
            current[0] = before

    class graph:  # noqa: N801 - torch.cuda.graph's name
        default_capture_stream = None

        def __init__(self, g, stream=None):
            if stream is None and graph.default_capture_stream is None:
                graph.default_capture_stream = cuda.Stream()
            self.stream = stream if stream is not None else graph.default_capture_stream

        def __enter__(self):
            self.before, current[0] = current[0], self.stream
            log.append(("capture", self.stream.name))

        def __exit__(self, *exc):
            current[0] = self.before

    cuda = types.SimpleNamespace(
        Stream=_Stream,
        stream=stream,
        graph=graph,
        CUDAGraph=lambda: object(),
        current_stream=lambda device=None: current[0],
        current_device=lambda: 0,
    )
    return types.SimpleNamespace(cuda=cuda, device=lambda kind, index: f"{kind}:{index}"), current


def _fake_triton(torch, log: list):
    def do_bench_cudagraph(fn, rep=20, return_mode="mean"):
        # the stream use of triton 3.6's do_bench_cudagraph: warm-up and estimate on a new pool
        # stream, the graph captured with torch.cuda.graph(g) (the default capture stream)
        with torch.cuda.stream(torch.cuda.Stream()):
            fn()
            for _ in range(5):
                fn()
            with torch.cuda.graph(torch.cuda.CUDAGraph()):
                for _ in range(3):
                    fn()
        return 1.0

    return types.SimpleNamespace(do_bench_cudagraph=do_bench_cudagraph)


@pytest.fixture
def fakes(monkeypatch):
    monkeypatch.setattr(cuda_graph, "_CAPTURE_STREAMS", {})
    log: list = []
    torch, current = _fake_torch(log)
    return torch, current, _fake_triton(torch, log), log


def test_paired_reference_warms_up_and_captures_on_our_capture_stream(fakes):
    torch, current, triton, log = fakes
    original = torch.cuda.Stream
    ran_on = []
    ms, calls, state = bench._cudagraph_ms(triton, torch, lambda: ran_on.append(current[0].name), 20.0, paired=True)
    shared = cuda_graph.capture_stream(torch, "cuda:0").name
    assert state == "paired"
    assert set(ran_on) == {shared}  # warm-up, estimate and captured calls
    assert log == [("capture", shared)]
    assert (ms, calls) == (1.0, 3)  # the calls inside the graph (6 before it are not counted)
    # nothing of torch is left patched
    assert torch.cuda.Stream is original
    assert torch.cuda.graph.default_capture_stream is None


def test_unmodified_reference_is_labelled_by_the_streams_it_used(fakes):
    torch, current, triton, log = fakes
    ran_on = []
    _, _, state = bench._cudagraph_ms(triton, torch, lambda: ran_on.append(current[0].name), 20.0)
    assert state == "unpaired"
    warm, captured = ran_on[0], log[0][1]
    assert warm != captured
    # when the pool's round robin hands the warm-up the capture stream itself, the label says so
    torch.cuda.graph.default_capture_stream = _Stream()
    _Stream.pool -= 2  # the next two streams handed: ours around the call, then triton's warm-up
    _, _, state = bench._cudagraph_ms(triton, torch, lambda: None, 20.0)
    assert state == "paired by the pool's count"


def test_the_time_plan_shares_what_is_left_among_the_rows(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("time.perf_counter", lambda: clock[0])
    plan = bench.TimePlan(120.0)
    assert plan.share(10) == pytest.approx(12.0)
    clock[0] += 60.0  # the first rows took half the time
    assert plan.share(2) == pytest.approx(30.0)
    clock[0] += 100.0
    assert plan.share(1) == 0.0  # past the deadline: one round each, nothing more
    assert bench.TimePlan(None).share(3) is None


class _Timed:
    def __init__(self, p50):
        self.stats = types.SimpleNamespace(p50=p50)


class _Graph:
    """GraphCalls' timing surface: every workload replay reads `per_call_s`."""

    def __init__(self, per_call_s, calls=5):
        self.per_call_s, self.calls, self.closed = per_call_s, calls, False

    def queue_replay(self, flushes=False):
        return flushes

    def read_replays(self, work, flushes):
        return [self.per_call_s] * len(work)

    def close(self):
        self.closed = True


class _Phases:
    def __init__(self):
        self.graph = _Graph(372e-6)
        self.graph_note = None
        self.burst_eager_s, self.graph_call_s, self.flush_s, self.host_bound = 2.6e-3, 372e-6, 20e-6, True
        self.flush = lambda: None

    def burst(self):
        timings = [types.SimpleNamespace(mode=m, timed=_Timed(v)) for m, v in (("eager", 2.6e-3), ("graph", 372e-6))]
        return types.SimpleNamespace(timings=timings)

    def sustained(self):
        timings = [types.SimpleNamespace(mode=m, timed=_Timed(v)) for m, v in (("eager", 2.9e-3), ("graph", 373e-6))]
        return types.SimpleNamespace(timings=timings, steady=types.SimpleNamespace(reached=True))


def test_a_time_box_stops_the_rounds_but_keeps_one(fakes, monkeypatch):
    torch, *_ = fakes
    phases = _Phases()
    session = types.SimpleNamespace(phases=lambda fn, plan: contextlib.nullcontext(phases))
    monkeypatch.setattr(bench, "_cudagraph_ms", lambda *a, **k: (0.4, 10, "paired"))
    monkeypatch.setattr(bench, "_settle", lambda phases, rest=True: True)
    triton = types.SimpleNamespace(do_bench=lambda fn, warmup, rep, return_mode: 2.9)
    args = types.SimpleNamespace(window=0.1, rounds=5, host_bound_rounds=0, skip_graph_reference=False)
    row = bench.compare_one(session, types.SimpleNamespace(fn=lambda: None), args, triton, torch, share_s=0.0)
    assert row["rounds_run"] == 1
    assert "stopped after 1 of 5 rounds" in row["time_plan"]
    assert len(row["do_bench_median_s"]) == 1


def test_do_bench_flushes_our_buffer_for_the_block_only(monkeypatch):
    """reference_flush: inside the block triton's get_empty_cache_for_benchmark hands do_bench the
    harness's buffer (same sequence, same size), after it triton's own again; do_bench's loop is
    not touched."""

    class Driver:
        def get_empty_cache_for_benchmark(self):
            return "triton's 256 MiB"

    driver = Driver()
    fake = types.SimpleNamespace(runtime=types.SimpleNamespace(driver=types.SimpleNamespace(active=driver)))
    monkeypatch.setitem(__import__("sys").modules, "triton", fake)
    buffer = types.SimpleNamespace(numel=lambda: 60 * 2**20, element_size=lambda: 4)
    with bench.reference_flush(buffer) as taken:
        assert driver.get_empty_cache_for_benchmark() is buffer
        driver.get_empty_cache_for_benchmark()
    assert taken == [240 * 2**20, 240 * 2**20]
    assert driver.get_empty_cache_for_benchmark() == "triton's 256 MiB"
    with bench.reference_flush(buffer, use=False) as taken:
        assert driver.get_empty_cache_for_benchmark() == "triton's 256 MiB"
    assert taken == []
    monkeypatch.setitem(__import__("sys").modules, "triton", types.SimpleNamespace())  # no driver: unpatched
    with bench.reference_flush(buffer) as taken:
        pass
    assert taken == []


def test_a_host_bound_row_is_judged_by_the_same_two_percent_with_its_pairs():
    ours = [1.31e-3, 2.36e-3, 1.22e-3]  # a decode step's samples (H200, 2026-12-01)
    ref = [1.35e-3, 1.22e-3, 1.28e-3]
    v = bench.host_bound_verdict(ours, ref)
    assert v["ratio"] == pytest.approx(1.31 / 1.28)
    assert not v["within"]
    assert v["pair_ratios"] == [pytest.approx(1.31 / 1.35), pytest.approx(2.36 / 1.22), pytest.approx(1.22 / 1.28)]
    assert v["pair_ratio_iqr"] is None  # fewer than 4 pairs
    assert v["ours_spread"] == pytest.approx(2.36 / 1.22 - 1)
    close = bench.host_bound_verdict([1.0, 1.01, 0.99, 1.0], [1.0, 1.0, 1.0, 1.005])
    assert close["within"] and close["pair_ratio_iqr"] is not None


def test_a_host_bound_row_is_judged_on_its_pairs_when_the_host_steps_between_rounds():
    """An H200's tiny GEMM (2026-12-01): both harnesses stepped between 5.28 and 5.86 us from round to round;
    the ratio of medians (0.961) depends on which rounds fell in which step, the pairs (ran back to
    back, at one host rate) agree within 1%."""
    ours = [5.280e-6, 5.856e-6, 5.888e-6, 5.280e-6]
    ref = [5.760e-6, 5.824e-6, 5.888e-6, 5.312e-6]
    v = bench.host_bound_verdict(ours, ref)
    assert v["ratio"] == pytest.approx(0.9613, abs=1e-4)
    assert v["pair_ratio_median"] == pytest.approx(0.997, abs=1e-3)
    assert v["judged_on"] == "pair_ratio_median" and v["within"]
    # ours 5% slower in every pair: outside, though the steps make the medians look alike
    apart = bench.host_bound_verdict([1.05, 1.26, 1.26, 1.05], [1.0, 1.2, 1.2, 1.2])
    assert apart["pair_ratio_median"] == pytest.approx(1.05) and not apart["within"]


def test_a_host_bound_row_runs_its_rounds_back_to_back(fakes, monkeypatch):
    """Host-bound (burst eager >= 1.5 x graph): --host-bound-rounds rounds, no idle rest before any
    section, the eager comparison alone with --skip-graph-reference, and the row judged by 2%."""
    torch, *_ = fakes
    phases = _Phases()
    session = types.SimpleNamespace(phases=lambda fn, plan: contextlib.nullcontext(phases))
    rests, settles = [], []
    monkeypatch.setattr(bench, "_rest", lambda: rests.append(1))
    monkeypatch.setattr(bench, "_settle", lambda phases, rest=True: settles.append(rest) or True)
    monkeypatch.setattr(bench, "_cudagraph_ms", lambda *a, **k: pytest.fail("graph reference skipped"))
    triton = types.SimpleNamespace(do_bench=lambda fn, warmup, rep, return_mode: 2.9)
    args = types.SimpleNamespace(window=0.1, rounds=2, host_bound_rounds=6, skip_graph_reference=True)
    row = bench.compare_one(session, types.SimpleNamespace(fn=lambda: None), args, triton, torch)
    assert row["rounds_run"] == 6 and row["rounds_planned"] == 6
    assert rests == [] and settles == [False] * 6 and row["rounds_rested"] is False
    assert row["host_bound_verdict"]["ratio"] == pytest.approx(1.0) and row["host_bound_verdict"]["within"]
    assert "graph_ratio" not in row
