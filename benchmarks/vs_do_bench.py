"""The harness against triton's do_bench: TensorForge's torch-cuda timings and triton.testing's on
the same workloads, same device, one process (GPU; docs/measurement.md, "Against triton").

Per workload, --rounds rounds, order alternating (ours first, then the reference first, ...):
* eager: TensorForge's sustained eager window (continuous load until the clock is steady, L2
  flush, an event pair per call) against do_bench(return_mode='median'), which is also called
  right after the same steadying load and zeroes our harness's flush buffer (reference_flush), so
  both time the same sequence. One do_bench call without the load ("cold") is kept beside.
* graph: TensorForge's sustained graph window against do_bench_cudagraph run on `flush + fn` minus
  `flush` alone (do_bench_cudagraph does not flush L2), in our harness's launch state (paired: its
  warm-up stream is our capture stream; nothing of its timing loop changes).
* host-bound rows (burst eager p50 >= 1.5 x graph p50) run --host-bound-rounds rounds back to back
  without the idle rest and are judged on the median of their per-round pair ratios.
Every row is judged by the same 2%. --deadline shares the time among the rows.

    python benchmarks/vs_do_bench.py [-w SPEC ...] [--rounds 5] [--deadline 240] [--out ...]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys

import _result

NAME = "vs_do_bench"
TOLERANCE = 0.02
# do_bench_cudagraph calls fn once to warm up and 5 times to estimate its time before capture
CUDAGRAPH_CALLS_BEFORE_CAPTURE = 6
HOST_BOUND = 1.5  # burst eager p50 / burst graph p50 at or above which the eager time is the host's


def _cudagraph_ms(triton_testing, torch, fn, rep_ms, paired: bool = False):
    """do_bench_cudagraph's median (ms per call), the number of calls its graph unrolled, and the
    launch state it ran in.

    paired=False: triton unmodified. triton 3.6's python/triton/testing.py, do_bench_cudagraph:
    `with torch.cuda.stream(torch.cuda.Stream()):` fn() once and 5 times for its estimate, then
    `with torch.cuda.graph(g):` n unrolled calls, i.e. the warm-up on a NEW pool stream and the
    capture on torch.cuda.graph's default capture stream (one pool stream taken at its first use):
    on the H200 the upper launch level for the decode step (docs/measurement.md, "The two levels,
    traced"). The state reads 'unpaired' unless the pool's round robin (32 streams) happened to
    hand the warm-up the capture stream itself ('paired by the pool's count'), which is checked.
    paired=True: the same function, with its warm-up stream equal to its capture stream, our
    harness's launch state: for the call only, torch.cuda.Stream() returns our harness's capture
    stream (cuda_graph.capture_stream) and torch.cuda.graph.default_capture_stream is that stream,
    both restored after. Nothing of triton's timing loop changes."""
    from tf_cuda.graph import capture_stream

    count = [0]
    warm_stream: list = []  # the stream of the first call (do_bench_cudagraph's warm-up)

    def counted():
        if not count[0]:
            warm_stream.append(torch.cuda.current_stream())
        count[0] += 1
        return fn()

    original_stream, original_default = torch.cuda.Stream, torch.cuda.graph.default_capture_stream
    if paired:
        shared = capture_stream(torch, torch.device("cuda", torch.cuda.current_device()))
        torch.cuda.Stream = lambda *a, **k: shared
        torch.cuda.graph.default_capture_stream = shared
    try:
        with torch.cuda.stream(torch.cuda.Stream()):
            try:
                ms = float(triton_testing.do_bench_cudagraph(counted, rep=rep_ms, return_mode="median"))
            except TypeError:  # older Triton: no return_mode (mean of its retries)
                ms = float(triton_testing.do_bench_cudagraph(counted, rep=rep_ms))
        capture = torch.cuda.graph.default_capture_stream
    finally:
        if paired:
            torch.cuda.Stream = original_stream
            torch.cuda.graph.default_capture_stream = original_default
    if not warm_stream or capture is None:
        state = "unknown"
    elif warm_stream[0] == capture:
        state = "paired" if paired else "paired by the pool's count"
    else:
        state = "unpaired"
    return ms, count[0] - CUDAGRAPH_CALLS_BEFORE_CAPTURE, state


def graph_rep_ms(eager_call_s: float) -> float:
    """rep for the reference: ~100 eager calls, within 20-100 ms (see the module docstring)."""
    return min(100.0, max(20.0, 100 * eager_call_s * 1e3))


class TimePlan:
    """Equal shares of what is left of --deadline for the rows still to run (the coordinator's box:
    the closing session's 150 s ran out before the transformer rows)."""

    def __init__(self, seconds: float | None):
        import time

        self.end = None if seconds is None else time.perf_counter() + seconds

    def share(self, rows_left: int) -> float | None:
        import time

        if self.end is None:
            return None
        return max(0.0, self.end - time.perf_counter()) / max(1, rows_left)


REST_S = [0.0]  # idle seconds before each harness's steadying load (--rest)


def _rest() -> None:
    """Idle the device before a harness's steadying load, so each section starts from a like
    history. Why: under the power cap the clock also follows the temperature, which keeps rising
    for seconds of load after the 1% steady rule is met, so whichever harness ran second in a
    round read slower (H200, 2026-11-30 closing session, tf32: ours 380.8 / 380.8 us when first,
    384.8 when second; do_bench_cudagraph 382.0 when first, 391.0 / 409.6 when second)."""
    import time

    if REST_S[0] > 0:
        time.sleep(REST_S[0])


def _settle(phases, rest: bool = True):
    """The continuous load TensorForge's sustained phase starts with, until steady; drained.
    rest: idle first (_rest), as before every compared section; the diagnostics skip it."""
    if rest:
        _rest()
    from tf_cuda.sustained import ContinuousLoad, reach_steady

    from tensorforge_measure.measure.host_state import gc_paused

    load = ContinuousLoad(phases.flush, phases.plan.steady.window_s)
    with gc_paused():  # as in the harness's own sustained phase
        state, pending, _ = reach_steady(
            load,
            phases.fn,
            (phases.burst_eager_s or 1e-4) + phases.flush_s,
            phases.plan.steady,
            host_bound=phases.host_bound,
        )
        load.read(pending)
    return state.reached


@contextlib.contextmanager
def reference_flush(buffer, use: bool = True):
    """do_bench with our harness's flush buffer: for the block, triton's
    `runtime.driver.active.get_empty_cache_for_benchmark()` returns `buffer` (int32, the harness's
    4 x L2) instead of a fresh 256 MiB int32 buffer, so both harnesses time the same sequence
    (zero the same buffer, start event, fn, end event); do_bench's loop is untouched. Why: in a
    host-bound call the flush is the host's head start inside each sample (the device runs it while
    the host launches fn), so a different flush size is a different sample (docs/measurement.md,
    "Host-bound eager rows"). Yields a list that holds one entry per do_bench call that took the
    buffer (empty: the patch did not reach triton, which then flushed its own)."""
    taken: list = []
    driver = None
    if use and buffer is not None:
        try:
            import triton

            driver = triton.runtime.driver.active
            if not hasattr(driver, "get_empty_cache_for_benchmark"):
                driver = None
        except Exception:
            driver = None
    if driver is None:
        yield taken
        return

    def ours():
        taken.append(int(buffer.numel()) * int(buffer.element_size()))
        return buffer

    driver.get_empty_cache_for_benchmark = ours
    try:
        yield taken
    finally:
        del driver.get_empty_cache_for_benchmark


def flush_buffer(phases):
    """The tensor our harness's flush zeroes (cuda_timing.flush_step's bound zero_), or None."""
    return getattr(phases.flush, "__self__", None)


def host_bound_verdict(ours: list[float], ref: list[float], tolerance: float = 0.02) -> dict:
    """A host-bound eager row judged by the 2% of every other row on the median of its per-round
    pair ratios (round i of each harness ran back to back with the other, order alternating), with
    the ratio of the two harnesses' medians and each one's spread over its rounds (max / min - 1)
    beside it. Why the pairs decide: a host-bound call is timed at the host's rate, and that rate
    steps between rounds (H200 VM, 2026-12-01 05:03: the tiny GEMM read 5.28 or 5.86 us in both
    harnesses, spreads 11.5% and 10.8%); a drift over seconds reaches both members of a pair alike,
    where a ratio of medians over 4-8 rounds depends on how many rounds of each harness fell in
    which step (0.961 there, pair median 0.997). Not chosen for its figure: in the 04:41 session
    the decode step's pair median was the worse of the two (1.154 against 1.058)."""
    pairs = [o / r for o, r in zip(ours, ref) if r > 0]
    ratio = statistics.median(ours) / statistics.median(ref) if ours and ref and statistics.median(ref) > 0 else None
    ordered = sorted(pairs)
    out = {
        "ratio": ratio,
        "rounds": len(pairs),
        "pair_ratios": pairs,
        "pair_ratio_median": statistics.median(pairs) if pairs else None,
        "pair_ratio_iqr": (ordered[(3 * len(ordered)) // 4] - ordered[len(ordered) // 4])
        if len(ordered) >= 4
        else None,
        "ours_spread": max(ours) / min(ours) - 1 if ours and min(ours) > 0 else None,
        "reference_spread": max(ref) / min(ref) - 1 if ref and min(ref) > 0 else None,
        "tolerance": tolerance,
    }
    out["judged_on"] = "pair_ratio_median"
    out["within"] = bool(pairs) and abs(out["pair_ratio_median"] - 1) <= tolerance
    return out


def compare_one(session, prepared, args, triton_testing, torch, share_s=None) -> dict:
    """One workload's row. share_s: its time box (TimePlan), None for none: rounds stop when the
    next would not fit (at least one runs)."""
    import time

    from tensorforge_measure.measure.host_state import gc_paused
    from tensorforge_measure.measure.phases import PhasePlan

    row_t0 = time.perf_counter()
    plan = PhasePlan(trace=False, sustained_window_s=args.window)
    row: dict = {}
    with session.phases(prepared.fn, plan) as phases:
        row["burst_p50_s"] = {t.mode: t.timed.stats.p50 for t in phases.burst().timings}
        row["graph_capture"] = phases.graph_note or "ok"
        buffer = flush_buffer(phases)
        with reference_flush(buffer), gc_paused():
            cold = triton_testing.do_bench(prepared.fn, warmup=25, rep=args.window * 1e3, return_mode="median")
        row["do_bench_cold_s"] = cold * 1e-3
        ours_eager, ours_graph, ref, graph_ref, steady, taken_flush = [], [], [], [], [], []
        rep = graph_rep_ms((phases.burst_eager_s or 1e-4) + phases.flush_s)
        hb = bool(phases.host_bound)
        rounds = max(args.rounds, args.host_bound_rounds) if hb else args.rounds
        rested = not hb
        row["rounds_planned"] = rounds

        def run_ours():
            if rested:
                _rest()
            result = phases.sustained()
            steady.append(result.steady.reached)
            for t in result.timings:
                (ours_eager if t.mode == "eager" else ours_graph).append(t.timed.stats.p50)

        def run_ref():
            steady.append(_settle(phases, rest=rested))
            with reference_flush(buffer) as taken, gc_paused():
                ms = triton_testing.do_bench(prepared.fn, warmup=25, rep=args.window * 1e3, return_mode="median")
            ref.append(ms * 1e-3)
            taken_flush.extend(taken)
            if phases.graph is not None and not args.skip_graph_reference:
                flush = phases.flush
                steady.append(_settle(phases))
                both, _, state = _cudagraph_ms(
                    triton_testing, torch, lambda: (flush(), prepared.fn()), rep, paired=True
                )
                alone, _, _ = _cudagraph_ms(triton_testing, torch, flush, 20.0, paired=True)
                graph_ref.append((both - alone) * 1e-3)
                row["reference_launch_state"] = state

        for r in range(rounds):
            round_t0 = time.perf_counter()
            for step in (run_ours, run_ref) if r % 2 == 0 else (run_ref, run_ours):
                step()
            row["rounds_run"] = r + 1
            if share_s is not None and r + 1 < rounds:
                took = time.perf_counter() - round_t0
                if time.perf_counter() - row_t0 + 1.1 * took > share_s:
                    row["time_plan"] = f"stopped after {r + 1} of {rounds} rounds (time box {share_s:.0f} s)"
                    break
        burst_graph = row["burst_p50_s"].get("graph")
        row.update(
            host_bound=bool(burst_graph) and row["burst_p50_s"]["eager"] >= HOST_BOUND * burst_graph,
            rounds_rested=rested,
            steady_reached=all(steady),
            sustained_eager_p50_s=ours_eager,
            do_bench_median_s=ref,
            eager_ratio=statistics.median(ours_eager) / statistics.median(ref),
            reference_flush="ours" if taken_flush and len(taken_flush) == len(ref) else "triton's own",
        )
        if row["host_bound"]:
            verdict = host_bound_verdict(ours_eager, ref)
            row["host_bound_verdict"] = verdict
            row["eager_within"] = verdict["within"]
        else:
            row["eager_within"] = abs(row["eager_ratio"] - 1) <= TOLERANCE
        if graph_ref and ours_graph:
            reference = statistics.median(graph_ref)
            row.update(
                sustained_graph_p50_s=ours_graph,
                cudagraph_reference_s=graph_ref,
                graph_ratio=statistics.median(ours_graph) / reference if reference > 0 else None,
            )
            row["graph_within"] = row["graph_ratio"] is not None and abs(row["graph_ratio"] - 1) <= TOLERANCE
    return row


def table_row(workload, row: dict) -> dict:
    """The result file's row: medians over the rounds, the ratios and verdicts."""
    out = {
        "workload": workload.name,
        "kind": workload.kind,
        "host_bound": row["host_bound"],
        "rounds": row["rounds_run"],
        "ours_eager_us": round(statistics.median(row["sustained_eager_p50_s"]) * 1e6, 3),
        "do_bench_us": round(statistics.median(row["do_bench_median_s"]) * 1e6, 3),
        "eager_ratio": round(row["eager_ratio"], 4),
        "eager_within_2pct": row["eager_within"],
        "ours_graph_us": None,
        "do_bench_cudagraph_us": None,
        "graph_ratio": None,
        "graph_within_2pct": None,
        "detail": row,
    }
    if row.get("graph_ratio") is not None:
        out.update(
            ours_graph_us=round(statistics.median(row["sustained_graph_p50_s"]) * 1e6, 3),
            do_bench_cudagraph_us=round(statistics.median(row["cudagraph_reference_s"]) * 1e6, 3),
            graph_ratio=round(row["graph_ratio"], 4),
            graph_within_2pct=row["graph_within"],
        )
    if row["host_bound"]:
        out["eager_ratio"] = round(row["host_bound_verdict"]["pair_ratio_median"], 4)
    return out


COLUMNS = [
    ("workload", "workload"),
    ("host_bound", "host-bound"),
    ("rounds", "rounds"),
    ("ours_eager_us", "ours eager us"),
    ("do_bench_us", "do_bench us"),
    ("eager_ratio", "eager ratio"),
    ("ours_graph_us", "ours graph us"),
    ("do_bench_cudagraph_us", "do_bench_cudagraph us"),
    ("graph_ratio", "graph ratio"),
]
LABELS = {
    "ours_eager_us": "MEASURED: TensorForge's sustained eager p50, median over the rounds",
    "do_bench_us": "MEASURED: triton do_bench(return_mode='median') after the same steadying load, median over rounds",
    "eager_ratio": "DERIVED: ours / do_bench (host-bound rows: the median of the per-round pair ratios)",
    "ours_graph_us": "MEASURED: TensorForge's sustained CUDA-graph p50 (flushes subtracted), median over rounds",
    "do_bench_cudagraph_us": "MEASURED: do_bench_cudagraph(flush + fn) - do_bench_cudagraph(flush), paired launch state",
    "graph_ratio": "DERIVED: ours graph / do_bench_cudagraph reference",
    "within": "DERIVED: rows whose ratio is within 2% of 1",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", "-w", action="append", default=[], help="workload spec (default: default suite)")
    parser.add_argument("--window", type=float, default=0.1, help="seconds per timed window (do_bench rep)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--host-bound-rounds", type=int, default=8)
    parser.add_argument("--rest", type=float, default=1.0, help="idle seconds before each harness's steadying load")
    parser.add_argument("--skip-graph-reference", action="store_true", help="leave do_bench_cudagraph out")
    parser.add_argument("--deadline", type=float, default=None, help="seconds for the whole comparison")
    _result.out_option(parser, NAME)
    args = parser.parse_args()
    torch = _result.need_gpus(1, "vs_do_bench")
    try:
        import triton.testing as triton_testing
    except ImportError:
        print("vs_do_bench needs triton (triton.testing): not installed; nothing written", file=sys.stderr)
        return 2
    from tensorforge.api import PluginHost, resolve
    from tensorforge_measure.host import OpsHost

    REST_S[0] = max(0.0, args.rest)
    core, ops = PluginHost(), OpsHost()
    session = ops.backend("torch-cuda").open(0)
    plan = TimePlan(args.deadline)
    workloads = resolve(core, tuple(args.workload))
    rows = []
    for i, (workload, _) in enumerate(workloads):
        builder = ops.builder(workload.kind, "torch-cuda")
        mode = getattr(workload.params, "math_mode", "fp32")
        with session.prepared(builder, workload.params, mode) as prepared:
            row = compare_one(session, prepared, args, triton_testing, torch, share_s=plan.share(len(workloads) - i))
        rows.append(table_row(workload, row))
        r = rows[-1]
        print(
            f"{r['workload']:24s} eager ours {r['ours_eager_us']:10.3f} us do_bench {r['do_bench_us']:10.3f} us "
            f"ratio {r['eager_ratio']:.4f}"
            + (f" | graph ratio {r['graph_ratio']:.4f}" if r["graph_ratio"] is not None else " | graph not compared"),
            flush=True,
        )
    eager = [abs(r["eager_ratio"] - 1) for r in rows]
    graph = [abs(r["graph_ratio"] - 1) for r in rows if r["graph_ratio"] is not None]
    summary = {
        "workloads": len(rows),
        "eager_within_2pct": sum(bool(r["eager_within_2pct"]) for r in rows),
        "graph_within_2pct": sum(bool(r["graph_within_2pct"]) for r in rows),
        "graph_compared": len(graph),
        "largest_eager_deviation": round(max(eager), 4) if eager else None,
        "largest_graph_deviation": round(max(graph), 4) if graph else None,
    }
    import triton

    doc = _result.build(
        NAME,
        _result.gpu_words(torch),
        rows,
        summary,
        LABELS,
        columns=COLUMNS,
        notes=[
            f"torch {torch.__version__}, triton {triton.__version__}; window {args.window} s, rounds {args.rounds} "
            f"(host-bound {args.host_bound_rounds}), rest {args.rest} s; tolerance 2%",
            "'detail' in each row keeps every round's figures",
        ],
    )
    print(f"wrote {_result.write(args.out, doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
