"""Why the decode step replays at ~373 or ~403-408 us per step as a CUDA graph: traced (issue 12).

On the H200 (2026-11-30) the default decode transformer replayed as a graph ran at one of two
levels in either harness (ours, triton's do_bench_cudagraph), with or without the L2 flush, and
the extra time was idle gaps between the graph's ~101 kernels (0.42 against 0.1 us). This script
runs recipes, each in a fresh process (the level depended on the process's history), that capture
the step in the ways the two harnesses do and in variants of them (side-stream replay, flush left
out of the graph, memory placement shifted, cache emptied after a large capture, graph debug dump),
time every graph two ways (replays queued back to back; triton's way, a synchronisation before
each replay) and trace replays of it with the PyTorch profiler (CUDA activity: kernels inside
graphs are recorded). Per kernel it keeps name, grid, block, registers, shared memory, duration
and the gap before the next, and per graph the busy time and gap time per step; the parent then
diffs the fastest and the slowest traced graph kernel by kernel.

Usage: python benchmarks/graph_level_trace.py --out DIR [-w transformer_decode] [--recipes a,b]
       [--deadline 150]   (the next call: --recipes with the names in NEXT)
       python benchmarks/graph_level_trace.py --fake --out DIR   (the logic, on a CPU-only host)
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

# Each recipe is the steps one fresh process runs, in order. Step words:
#   warm: 3 warm-up calls on a fresh side stream (PyTorch's documented recipe; what
#       CudaPhases.capture does)
#   warm_harness: the warm-up calls on the stream this script captures `ours` on
#   triton_s: as `triton`, but captured on the stream of its warm-up calls
#   ours NAME N flush|noflush [side]: cuda_graph.GraphCalls of N unrolled [flush -> fn] (the
#       run's capture), replayed on the current stream, or on a side stream with `side`
#   triton NAME N flush|noflush: as do_bench_cudagraph: inside a new side stream, fn once, 5 calls,
#       a graph of N unrolled calls captured and replayed on that stream
#   time NAME / trace NAME / dot NAME / drop NAME / empty_cache / pad MIB / debug (graphs captured
#       from here on keep their cudaGraph_t so `dot` can dump it)
RECIPES: dict[str, list[str]] = {
    # the run's path, then triton's graph in the same process, then the run's graph re-timed (does
    # a held fast graph turn slow: process/device state) and a new one captured (graph property)
    "run": [
        "warm",
        "ours one 1 flush",
        "drop one",
        "ours run 5 flush",
        "time run",
        "trace run",
        "triton tri 87 flush",
        "time tri",
        "trace tri",
        "time run",
        "trace run",
        "ours run2 5 flush",
        "time run2",
        "trace run2",
    ],
    # triton first in a fresh process, then the run's capture
    "triton_first": [
        "triton tri 87 flush",
        "time tri",
        "trace tri",
        "warm",
        "ours run 5 flush",
        "time run",
        "trace run",
    ],
    # graph_size_order.py's first graph (read 407 us at 17:26): warm-up, 1 call, no flush
    "size_order": ["warm", "ours nf1 1 noflush", "time nf1", "trace nf1", "ours nf87 87 noflush", "time nf87"],
    # graph_flush_subtraction.py's first graph (read 374 us): no warm-up, 1 call, no flush, then 5
    "noflush_first": ["ours nf1 1 noflush", "time nf1", "trace nf1", "ours nf5 5 noflush", "time nf5", "trace nf5"],
    "side_replay": ["warm", "ours run 5 flush side", "time run", "trace run"],
    "flush_left_out": ["warm", "ours run 5 noflush", "time run", "trace run"],
    "placement_shift": ["pad 1027", "warm", "ours run 5 flush", "time run", "trace run"],
    "empty_cache_after_triton": [
        "triton tri 87 flush",
        "time tri",
        "drop tri",
        "empty_cache",
        "warm",
        "ours run 5 flush",
        "time run",
        "trace run",
    ],
    "triton_5": ["triton tri 5 flush", "time tri", "trace tri"],
    # next: what in the run's lead-in keeps it on the lower level although it warms up on a side
    # stream (not run yet; the 18:56 UTC call ran the recipes above and `dot`, `triton_5`)
    "flush_then_warm": ["flush5", "warm", "ours run 5 flush", "time run", "trace run"],
    "warm_on_default_stream": ["warm_default", "ours run 5 flush", "time run", "trace run"],
    "side_stream_other_work": ["side_noop", "ours run 5 flush", "time run", "trace run"],
    # the run's calibration replays graphs of trivial kernels (kernel floors) before any workload
    "tiny_graph_then_warm": ["tiny_graph", "warm", "ours run 5 flush", "time run", "trace run"],
    # is it the pairing of warm-up and capture streams (19:18 UTC: a warm-up on the default stream,
    # or other work on a side stream, kept the lower level; the workload on a side stream did not)?
    "harness": ["warm_harness", "ours run 5 flush", "time run", "trace run"],
    "harness_after_side_warm": ["warm", "warm_harness", "ours run 5 flush", "time run", "trace run"],
    "triton_same_stream": ["triton_s tri 87 flush", "time tri", "trace tri"],
    # 23:30 UTC: with warm-up and capture paired, the decode step's BURST graph (replay pairs with
    # rests, behind a device-side spin) read 374 us for 2-3 samples and ~409 us from then on, while
    # back-to-back replays and the trace window stayed at ~374. Which part of the burst loop does it:
    # the rests, the spin, the eager calls before the capture (the run's order)? Answer (23:50 UTC,
    # benchmarks/results/h200-2026-11-30-2350-burst-level.*): the spin (an eager kernel between
    # replays); the harness has none since. (At 23:50 the spin was the harness's and `nospin` removed it.)
    "burst_paired": ["warm_harness", "ours run 5 flush", "time run", "burst run spin", "time run", "trace run"],
    "burst_paired_norest": ["warm_harness", "ours run 5 flush", "burst run spin norest", "time run"],
    "burst_paired_nospin": ["warm_harness", "ours run 5 flush", "burst run", "time run", "trace run"],
    "burst_paired_nospin_norest": ["warm_harness", "ours run 5 flush", "burst run norest", "time run"],
    "burst_after_eager": ["eager 40", "warm_harness", "ours run 5 flush", "burst run spin", "time run", "trace run"],
    "burst_unpaired_nospin": ["warm", "ours run 5 flush", "burst run", "time run", "trace run"],
    # the graphs' nodes, edges and kernel attributes (cudaGraphDebugDotPrint) at both levels; on torch
    # 2.11 (H200, 18:56 UTC) CUDAGraph.debug_dump wrote no file: the step records the error
    "dot": [
        "debug",
        "warm",
        "ours run 5 flush",
        "time run",
        "dot run",
        "triton tri 5 flush",
        "time tri",
        "dot tri",
    ],
}
# The order of the 18:56 UTC call on the H200 (its log and results: benchmarks/results/
# h200-2026-11-30-1856-graph-level-trace.*); `--recipes` picks others (the NEXT ones).
DEFAULT_ORDER = (
    "run",
    "triton_first",
    "size_order",
    "noflush_first",
    "side_replay",
    "flush_left_out",
    "placement_shift",
    "empty_cache_after_triton",
    "dot",
    "triton_5",
)
NEXT = (
    "noflush_first",
    "size_order",
    "flush_then_warm",
    "warm_on_default_stream",
    "side_stream_other_work",
    "tiny_graph_then_warm",
)
DEVICE_KINDS = {"kernel", "gpu_memset", "gpu_memcpy"}
KEEP_ARGS = ("grid", "block", "registers per thread", "shared memory", "stream", "blocks per SM", "graph node id")
BURST_SAMPLES = 40  # per `burst` step: the 23:30 switch came after 2-3 samples
TRACED_REPLAYS = 2  # the second replay is analysed: the first starts from an idle device


# ----------------------------------------------------------------------------- trace analysis
def device_events(trace: dict) -> list[dict]:
    """Kernels, memsets and memcpys of a Chrome trace (torch profiler export), in start order."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and e.get("cat") in DEVICE_KINDS]
    return sorted(events, key=lambda e: float(e["ts"]))


def replay_kernels(events: list[dict], replays: int) -> list[dict]:
    """The last replay's device events, each with its gap to the next (us; None for the last)."""
    if not events:
        return []
    # an uneven count (an event the profiler dropped) still leaves the last replay's tail
    last = events[-(len(events) // replays) :]
    rows = []
    for i, e in enumerate(last):
        end = float(e["ts"]) + float(e["dur"])
        nxt = float(last[i + 1]["ts"]) - end if i + 1 < len(last) else None
        args = e.get("args", {})
        rows.append(
            {
                "name": e["name"],
                "kind": e["cat"],
                "dur_us": float(e["dur"]),
                "gap_after_us": nxt,
                **{k: args[k] for k in KEEP_ARGS if k in args},
            }
        )
    return rows


def summarise(rows: list[dict], calls: int) -> dict:
    """Per step: kernels, busy and gap time; gaps grouped by the kernel that follows them."""
    gaps = [r["gap_after_us"] for r in rows if r["gap_after_us"] is not None]
    by_next: dict[str, list[float]] = {}
    for r, nxt in zip(rows, rows[1:]):
        by_next.setdefault(short(nxt["name"]), []).append(r["gap_after_us"])
    return {
        "events_per_replay": len(rows),
        "events_per_step": len(rows) / calls,
        "busy_per_step_us": sum(r["dur_us"] for r in rows) / calls,
        "gaps_per_step_us": sum(gaps) / calls,
        "gap_median_us": statistics.median(gaps) if gaps else None,
        "gap_p90_us": sorted(gaps)[int(0.9 * (len(gaps) - 1))] if gaps else None,
        "kinds": sorted({r["kind"] for r in rows}),
        "streams": sorted({str(r.get("stream")) for r in rows}),
        "gap_by_next_kernel_us": {k: round(statistics.mean(v), 3) for k, v in sorted(by_next.items())},
    }


def short(name: str) -> str:
    return name if len(name) <= 90 else name[:87] + "..."


def signature(r: dict) -> tuple:
    return (r["name"], str(r.get("grid")), str(r.get("block")), r.get("registers per thread"), r.get("shared memory"))


def diff(fast: dict, slow: dict) -> dict:
    """Kernel-by-kernel comparison of two traced graphs' first steps (same names, order, launch
    shapes?) and where the gaps grow."""
    a, b = fast["kernels"], slow["kernels"]
    per = int(round(fast["summary"]["events_per_step"]))
    per_b = int(round(slow["summary"]["events_per_step"]))
    a_step, b_step = a[:per], b[:per_b]
    same_sequence = [signature(r) for r in a_step] == [signature(r) for r in b_step]
    rows = []
    for i, (x, y) in enumerate(zip(a_step, b_step)):
        rows.append(
            {
                "i": i,
                "fast": short(x["name"]),
                "slow": short(y["name"]) if y["name"] != x["name"] else "=",
                "dur_fast_us": x["dur_us"],
                "dur_slow_us": y["dur_us"],
                "gap_fast_us": x["gap_after_us"],
                "gap_slow_us": y["gap_after_us"],
                "launch_differs": signature(x) != signature(y),
            }
        )
    grown = sorted(
        (r for r in rows if r["gap_fast_us"] is not None and r["gap_slow_us"] is not None),
        key=lambda r: r["gap_slow_us"] - r["gap_fast_us"],
        reverse=True,
    )
    return {
        "fast": fast["label"],
        "slow": slow["label"],
        "same_kernel_sequence": same_sequence,
        "events_per_step": [per, per_b],
        "busy_per_step_us": [fast["summary"]["busy_per_step_us"], slow["summary"]["busy_per_step_us"]],
        "gaps_per_step_us": [fast["summary"]["gaps_per_step_us"], slow["summary"]["gaps_per_step_us"]],
        "gap_median_us": [fast["summary"]["gap_median_us"], slow["summary"]["gap_median_us"]],
        "launch_shape_differences": [r for r in rows if r["launch_differs"]][:20],
        "largest_gap_growth": grown[:15],
        "rows": rows,
    }


def dot_summary(text: str) -> dict:
    """Node types, edge count and kernel-attribute words of a cudaGraphDebugDotPrint dump."""
    import re

    kinds: dict[str, int] = {}
    for m in re.finditer(r"label=\"\{?\s*([A-Z_]+)", text):
        kinds[m.group(1)] = kinds.get(m.group(1), 0) + 1
    words = {}
    for w in ("programmatic", "Programmatic", "priority", "cluster", "accessPolicyWindow", "cooperative", "memSync"):
        words[w] = text.count(w)
    return {"node_labels": kinds, "edges": text.count("->"), "attribute_words": words, "chars": len(text)}


# ----------------------------------------------------------------------------- the child (device)
class Held:
    """One captured graph (and its flush-alone graph), with the stream it is replayed on."""

    def __init__(self, work, flushes, calls: int, stream, kind: str):
        self.work, self.flushes, self.calls, self.stream, self.kind = work, flushes, calls, stream, kind


def child(recipe: str, out: Path, workload: str) -> dict:
    import contextlib

    import torch
    from tf_cuda import graph as cuda_graph
    from tf_cuda.timing import flush_step
    from torch.profiler import ProfilerActivity, profile

    from tensorforge.host.plugin_host import PluginHost
    from tensorforge.workloads.suite import resolve
    from tensorforge_measure.host import OpsHost

    debug = [False]

    def capture_graph(body, stream=None):
        g = torch.cuda.CUDAGraph()
        if debug[0]:
            g.enable_debug_mode()
        with torch.cuda.graph(g, stream=stream):
            body()
        return g

    core, ops = PluginHost(), OpsHost()
    session = ops.backend("torch-cuda").open(0)
    # The run's GraphCalls, captured here on one stream of this script's (+ debug mode). Why not
    # torch's default capture stream: the `warm_harness` step warms up on this same stream, the
    # pairing tried in the harness at 20:05 UTC (benchmarks/results/h200-2026-11-30-2005-*).
    cap_stream = torch.cuda.Stream(session.device)
    cuda_graph._capture = lambda _torch, body, _stream: capture_graph(body, cap_stream)
    ((wl, _),) = resolve(core, (workload,))
    builder = ops.builder(wl.kind, "torch-cuda")
    mode = getattr(wl.params, "math_mode", "fp32")
    flush = flush_step(torch, session.flush_bytes, session.device)
    result: dict = {"recipe": recipe, "steps": [], "device": session.info.name, "torch": torch.__version__}
    held: dict[str, Held] = {}
    pads = []
    steps = RECIPES[recipe]
    while steps and steps[0].startswith("pad"):
        pads.append(torch.empty(int(steps[0].split()[1]) * 2**20 + 4096 * 3 + 256, dtype=torch.uint8, device="cuda"))
        result["steps"].append({"step": steps[0]})
        steps = steps[1:]

    def on(h: Held):
        return torch.cuda.stream(h.stream) if h.stream is not None else contextlib.nullcontext()

    def time_graph(h: Held) -> dict:
        def med(graph, reps, sync_each):
            if graph is None:
                return 0.0
            with on(h):
                graph.replay()
                evs = []
                for _ in range(reps):
                    e = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                    if sync_each:
                        torch.cuda.synchronize()
                    e[0].record()
                    graph.replay()
                    e[1].record()
                    evs.append(e)
            torch.cuda.synchronize()
            return statistics.median(s.elapsed_time(t) * 1e3 for s, t in evs)  # us

        row = {}
        for label, sync_each, reps in (("back_to_back", False, 20), ("sync_each_as_triton", True, 10)):
            work, alone = med(h.work, reps, sync_each), med(h.flushes, max(5, reps // 2), sync_each)
            row[f"{label}_per_step_us"] = (work - alone) / h.calls
            row[f"{label}_flush_alone_us"] = alone
        if h.kind == "ours":
            gc = h.work_obj
            with on(h):
                pairs = [gc.read_pair(gc.queue_pair(warm=True)) * 1e6 for _ in range(15)]
            row["our_pairs_per_step_us"] = statistics.median(pairs)
        return row

    def trace_graph(h: Held, name: str) -> dict:
        with on(h):
            h.work.replay()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            with on(h):
                for _ in range(TRACED_REPLAYS):
                    h.work.replay()
            torch.cuda.synchronize()
        path = out / f"{recipe}-{name}-{len(result['steps'])}.trace.json"
        prof.export_chrome_trace(str(path))
        text = path.read_text()
        trace = json.loads(text)
        path.unlink()
        if h.calls <= 5:  # the raw trace of small graphs is kept (compressed) as evidence
            with gzip.open(str(path) + ".gz", "wt") as handle:
                handle.write(text)
        rows = replay_kernels(device_events(trace), TRACED_REPLAYS)
        keep = rows if h.calls <= 5 else rows[: int(2 * len(rows) / h.calls) + 1]
        return {"summary": summarise(rows, h.calls), "kernels": keep}

    with session.prepared(builder, wl.params, mode) as prepared:
        fn = prepared.fn

        def warm_on(stream) -> None:
            """The warm-up calls on `stream`, ordered after and before the current stream's work."""
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(cuda_graph.WARMUP_CALLS):
                    fn()
            torch.cuda.current_stream().wait_stream(stream)
            torch.cuda.synchronize()

        def run_step(words: list[str], step: str, rec: dict) -> None:
            if words[0] == "warm":  # PyTorch's documented recipe: a fresh side stream, not the capture's
                warm_on(torch.cuda.Stream(session.device))
            elif words[0] == "warm_harness":  # warm-up on the stream the graphs are captured on
                warm_on(cap_stream)
            elif words[0] == "flush5":  # as CudaPhases times the flush before its capture
                for _ in range(5):
                    flush()
                torch.cuda.synchronize()
            elif words[0] == "warm_default":  # the warm-up calls, on the current (default) stream
                for _ in range(cuda_graph.WARMUP_CALLS):
                    fn()
                torch.cuda.synchronize()
            elif words[0] == "side_noop":  # other work on a side stream, not the workload
                side, x = torch.cuda.Stream(), torch.zeros(1, device=session.device)
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    x.add_(1)
                torch.cuda.current_stream().wait_stream(side)
                torch.cuda.synchronize()
            elif words[0] == "tiny_graph":  # a graph of 100 trivial kernels, replayed, as the floors probe
                x = torch.zeros(1, device=session.device)
                g = capture_graph(lambda: [x.add_(1) for _ in range(100)])
                for _ in range(10):
                    g.replay()
                torch.cuda.synchronize()
            elif words[0] == "debug":
                debug[0] = True
            elif words[0] == "ours":
                name, calls, fl = words[1], int(words[2]), words[3] == "flush"
                gc = cuda_graph.capture(torch, fn, flush if fl else None, calls, session.device)
                h = Held(gc.work, gc.flushes, calls, torch.cuda.Stream() if "side" in words[4:] else None, "ours")
                h.work_obj = gc
                held[name] = h
            elif words[0] in ("triton", "triton_s"):  # triton_s: captured on its own warm-up stream
                name, calls, fl = words[1], int(words[2]), words[3] == "flush"
                stream = torch.cuda.Stream()
                on_cap = stream if words[0] == "triton_s" else None
                with torch.cuda.stream(stream):
                    fn()
                    for _ in range(5):
                        fn()
                    torch.cuda.synchronize()
                    work = capture_graph(lambda: [(flush() if fl else None, fn()) for _ in range(calls)], on_cap)
                    flushes = capture_graph(lambda: [flush() for _ in range(calls)], on_cap) if fl else None
                    torch.cuda.synchronize()
                held[name] = Held(work, flushes, calls, stream, "triton")
            elif words[0] == "eager":  # eager calls on the current stream, as the burst eager regime
                for _ in range(int(words[1])):
                    fn()
                    torch.cuda.synchronize()
            elif words[0] == "burst":  # the harness's burst loop, every sample kept (in order)
                gc = held[words[1]].work_obj
                spin_cycles = 0
                if "spin" in words[2:]:  # the 23:30 harness's head start: 3 x the host's launch of both graphs
                    t0 = time.perf_counter()
                    gc.work.replay()
                    gc.flushes.replay()
                    spin_cycles = int(3 * (time.perf_counter() - t0) * 2e9)
                    torch.cuda.synchronize()
                samples = []
                for _ in range(BURST_SAMPLES):
                    t0 = time.perf_counter()
                    if spin_cycles:
                        torch.cuda._sleep(spin_cycles)
                    samples.append(gc.read_pair(gc.queue_pair(warm=True)) * 1e6)
                    if "norest" not in words[2:]:
                        time.sleep(time.perf_counter() - t0)  # the burst regime's max_duty 0.5
                rec["burst_samples_us"] = [round(x, 1) for x in samples]
                rec["burst_p50_per_step_us"] = statistics.median(samples)
                rec["burst_first3_per_step_us"] = statistics.median(samples[:3])
                rec["burst_last10_per_step_us"] = statistics.median(samples[-10:])
                rec["spin_cycles"] = spin_cycles
            elif words[0] == "time":
                rec.update(time_graph(held[words[1]]))
            elif words[0] == "trace":
                traced = trace_graph(held[words[1]], words[1])
                traced["label"] = f"{recipe}:{step}#{len(result['steps'])}"
                rec["traced"] = traced
            elif words[0] == "dot":
                h = held[words[1]]
                path = out / f"{recipe}-{words[1]}.dot"
                h.work.debug_dump(str(path))
                text = path.read_text()
                rec["dot"] = dot_summary(text)
                with gzip.open(str(path) + ".gz", "wt") as handle:
                    handle.write(text)
                path.unlink()
            elif words[0] == "drop":
                held.pop(words[1])
                torch.cuda.synchronize()
            elif words[0] == "empty_cache":
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            else:
                raise ValueError(f"unknown step {step!r}")

        for step in steps:
            words = step.split()
            t0 = time.perf_counter()
            rec: dict = {"step": step}
            try:
                run_step(words, step, rec)
            except Exception as exc:  # the rest of the recipe still runs; the error is kept
                rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
            rec["seconds"] = round(time.perf_counter() - t0, 3)
            result["steps"].append(rec)
            print(f"  {recipe}: {step}: " + line(rec), flush=True)
            (out / f"{recipe}.json").write_text(json.dumps(result, indent=1))
        held.clear()
    session.close()
    return result


def line(rec: dict) -> str:
    parts = [f"{k.replace('_per_step_us', '')} {v:.1f} us/step" for k, v in rec.items() if k.endswith("per_step_us")]
    if "traced" in rec:
        s = rec["traced"]["summary"]
        parts.append(
            f"traced: {s['events_per_step']:.1f} events/step, busy {s['busy_per_step_us']:.1f} us, gaps "
            f"{s['gaps_per_step_us']:.1f} us/step (median gap {s['gap_median_us'] or 0:.3f} us), kinds {s['kinds']}, "
            f"streams {s['streams']}"
        )
    if "dot" in rec:
        parts.append(f"dot: {rec['dot']}")
    if "error" in rec:
        parts.append(f"ERROR {rec['error']}")
    return "; ".join(parts) or f"{rec.get('seconds', 0):.2f} s"


# ----------------------------------------------------------------------------- fake child (CPU)
def fake_child(recipe: str, out: Path) -> dict:
    """The same result shape from a synthetic trace: fast graphs 0.1 us gaps, triton's 0.42 us."""
    result: dict = {"recipe": recipe, "steps": [], "device": "fake", "torch": "none"}
    for step in RECIPES[recipe]:
        words = step.split()
        rec: dict = {"step": step}
        slow = "tri" in step or recipe in ("size_order", "triton_first")
        if words[0] == "time":
            rec["back_to_back_per_step_us"] = 405.0 if slow else 372.0
        if words[0] == "trace":
            gap = 0.42 if slow else 0.1
            events, ts = [], 0.0
            for _ in range(TRACED_REPLAYS):
                for k in range(101):
                    events.append(
                        {
                            "ph": "X",
                            "cat": "kernel",
                            "name": f"k{k % 7}",
                            "ts": ts,
                            "dur": 3.6,
                            "args": {"grid": [1, 1, 1]},
                        }
                    )
                    ts += 3.6 + gap
            rows = replay_kernels(device_events({"traceEvents": events}), TRACED_REPLAYS)
            rec["traced"] = {"summary": summarise(rows, 1), "kernels": rows, "label": f"{recipe}:{step}"}
        result["steps"].append(rec)
    return result


# ----------------------------------------------------------------------------- the parent
def traced_graphs(results: list[dict]) -> list[dict]:
    found = []
    for res in results:
        for rec in res.get("steps", []):
            if "traced" in rec:
                found.append(rec["traced"])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--workload", "-w", default="transformer_decode")
    parser.add_argument("--recipes", default=",".join(DEFAULT_ORDER))
    parser.add_argument("--deadline", type=float, default=150.0, help="seconds for all recipes together")
    parser.add_argument("--child")
    parser.add_argument("--fake", action="store_true", help="synthetic traces, no torch (checks the logic)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.child:
        res = fake_child(args.child, out) if args.fake else child(args.child, out, args.workload)
        (out / f"{args.child}.json").write_text(json.dumps(res, indent=1))
        return 0
    unknown = [r for r in args.recipes.split(",") if r not in RECIPES]
    if unknown:
        print(f"error: unknown recipe(s) {', '.join(unknown)}; known: {', '.join(RECIPES)}", file=sys.stderr)
        return 2
    start, results = time.monotonic(), []
    for recipe in args.recipes.split(","):
        left = args.deadline - (time.monotonic() - start)
        if left < 8:
            print(f"{recipe}: skipped, {left:.0f} s left of the deadline", flush=True)
            results.append({"recipe": recipe, "skipped": "deadline"})
            continue
        print(f"{recipe}: {RECIPES[recipe]}", flush=True)
        cmd = [sys.executable, __file__, "--child", recipe, "--out", str(out), "-w", args.workload]
        try:
            proc = subprocess.run(cmd + (["--fake"] if args.fake else []), timeout=left, text=True, capture_output=True)
            sys.stdout.write(proc.stdout)
            path = out / f"{recipe}.json"
            if proc.returncode == 0 and path.exists():
                results.append(json.loads(path.read_text()))
            else:
                tail = (proc.stderr or "").strip().splitlines()[-3:]
                print(f"{recipe}: FAILED (exit {proc.returncode}): {tail}", flush=True)
                results.append({"recipe": recipe, "error": tail})
        except subprocess.TimeoutExpired:
            print(f"{recipe}: timed out", flush=True)
            results.append({"recipe": recipe, "error": "timeout"})
        write_report(out, results)
    write_report(out, results)
    return 0


def write_report(out: Path, results: list[dict]) -> None:
    report: dict = {"results": results, "diffs": []}
    # graphs with and without the flush kernel differ by one event per step: diff like with like
    groups: dict[int, list[dict]] = {}
    for g in traced_graphs(results):
        if g["summary"]["events_per_step"]:
            groups.setdefault(round(g["summary"]["events_per_step"]), []).append(g)
    per_step = lambda g: g["summary"]["busy_per_step_us"] + g["summary"]["gaps_per_step_us"]  # noqa: E731
    for graphs in groups.values():
        if len(graphs) < 2:
            continue
        fast, slow = min(graphs, key=per_step), max(graphs, key=per_step)
        d = diff(fast, slow)
        report["diffs"].append(d)
        print(
            f"diff: fastest {fast['label']} vs slowest {slow['label']}: same kernel sequence "
            f"{d['same_kernel_sequence']}, busy {d['busy_per_step_us'][0]:.1f} vs {d['busy_per_step_us'][1]:.1f} us, "
            f"gaps {d['gaps_per_step_us'][0]:.1f} vs {d['gaps_per_step_us'][1]:.1f} us per step, launch-shape "
            f"differences {len(d['launch_shape_differences'])}",
            flush=True,
        )
    (out / "graph-level-trace.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    sys.exit(main())
