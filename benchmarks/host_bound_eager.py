"""Why a host-bound eager call's time spreads: the decode step and the tiny GEMM, both harnesses,
in one process, condition by condition.

On the H200 the default decode step (~1.3 ms of Python and launches against 0.37 ms of device
time) read 1.22-2.36 ms eager between rounds seconds apart in bench_vs_do_bench.py and 1.28-3.60
ms in `run`'s sustained windows; the 2.6 us GEMM 5.4-6.1 us (and 26 us once). Each block below
times one harness once (ours: the sustained regime's continuous load and window,
measure/cuda_sustained.py, on a short steadying load; do_bench: triton.testing.do_bench, median),
in pairs whose order alternates, and records beside the figure what the host did meanwhile:

* host seconds per call of the window (perf_counter around the queueing loop) and the device's
  wall per call (first start event to last end event / calls: the device idles when the host is
  slower);
* the thread's CPU seconds (time.thread_time) over the block's wall seconds, its involuntary
  context switches and the CPU it ran on before and after (/proc/thread-self/stat);
* the host's speed just before the block: nanoseconds per iteration of a fixed pure-Python loop;
* the system's steal ticks (/proc/stat: time the hypervisor ran something else on our vCPUs);
* time spent in garbage collections during the block (gc.callbacks).

Conditions, in this order (the profiler ones last: CUPTI's state outlasts the session):
  base (collector on, no pinning); gc_off; gc_off_pinned (the thread pinned to the CPU it is on);
  thread_5ms (a Python thread polling NVML every 5 ms, as bench --clocks does); idle_0.3s / spin_0.3s
  before each block (an idle host wakes slower?); tiny GEMM: flush buffers at other addresses, and
  do_bench with its own 256 MiB buffer or ours; after_profiler (a trace-window-like profiler session,
  CUPTI torn down or not as TEARDOWN_CUPTI says), twice.
`--part no-teardown` (run it with TEARDOWN_CUPTI=0): base, one profiler session, after_profiler.

Usage: python benchmarks/host_bound_eager.py [--part main|no-teardown] [--out diag.json]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def spin_ns(n: int = 20000) -> float:
    """Nanoseconds per iteration of a fixed pure-Python loop: the host's speed for Python now."""
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i ^ 3
    return (time.perf_counter() - t0) / n * 1e9


def cpu_now() -> int | None:
    try:
        with open("/proc/thread-self/stat") as handle:
            text = handle.read()
        return int(text[text.rindex(")") + 2 :].split()[36])  # field 39: the CPU last run on
    except (OSError, ValueError, IndexError):
        return None


def steal_ticks() -> int | None:
    try:
        with open("/proc/stat") as handle:
            fields = handle.readline().split()
        return int(fields[8])  # cpu user nice system idle iowait irq softirq steal
    except (OSError, ValueError, IndexError):
        return None


def involuntary_switches() -> int:
    return resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)).ru_nivcsw


class GcClock:
    """Seconds and count of garbage collections while installed."""

    def __init__(self):
        self.seconds, self.count, self._t0 = 0.0, 0, None
        gc.callbacks.append(self._cb)

    def _cb(self, phase, info):
        if phase == "start":
            self._t0 = time.perf_counter()
        elif self._t0 is not None:
            self.seconds += time.perf_counter() - self._t0
            self.count += 1
            self._t0 = None


def environment() -> dict:
    info: dict = {"cpu_count": os.cpu_count(), "affinity": sorted(os.sched_getaffinity(0))}
    with contextlib.suppress(OSError):
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        info["model"] = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), None)
        info["mhz"] = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("cpu MHz")][:16]
    gov = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    info["governor"] = gov.read_text().strip() if gov.exists() else "no cpufreq in this kernel"
    with contextlib.suppress(OSError):
        info["loadavg"] = Path("/proc/loadavg").read_text().strip()
        info["threads"] = sorted(
            Path(f"/proc/self/task/{t}/comm").read_text().strip() for t in os.listdir("/proc/self/task")
        )
    info["TEARDOWN_CUPTI"] = os.environ.get("TEARDOWN_CUPTI")
    with contextlib.suppress(Exception):
        import torch

        info["torch_intra_op_threads"] = torch.get_num_threads()
    info["python_threads"] = [t.name for t in threading.enumerate()]
    return info


def cpu_survey(cpus, reps: int = 3) -> dict:
    """Pure-Python loop speed on each CPU (the thread pinned to it), best of reps, twice over."""
    keep = os.sched_getaffinity(0)
    out = {}
    try:
        for _sweep in range(2):
            for c in cpus:
                os.sched_setaffinity(0, {c})
                spin_ns(2000)
                out.setdefault(c, []).append(round(min(spin_ns(5000) for _ in range(reps)), 2))
    finally:
        os.sched_setaffinity(0, keep)
    return out


class Harnesses:
    def __init__(self, torch, triton_testing, flush, buffer):
        self.torch, self.tt, self.flush, self.buffer = torch, triton_testing, flush, buffer

    def ours(self, fn, window_s: float) -> dict:
        from tf_cuda.sustained import ContinuousLoad, SteadyPolicy, per_call_wall_s, reach_steady

        load = ContinuousLoad(self.flush, 0.03)
        policy = SteadyPolicy(window_s=0.03, min_s=0.06, max_s=0.5)
        _, pending, per_call = reach_steady(load, fn, 1e-3, policy, host_bound=True)
        calls = load.calls_for(per_call, window_s)
        t0 = time.perf_counter()
        pairs = load.queue(fn, calls)
        host = (time.perf_counter() - t0) / calls
        load.read(pending)
        samples = load.read(pairs)
        return {
            "median_s": statistics.median(samples),
            "calls": calls,
            "host_s_per_call": host,
            "device_wall_s_per_call": per_call_wall_s(pairs),
        }

    def ref(self, fn, window_s: float, patched: bool = True) -> dict:
        from bench_vs_do_bench import reference_flush

        with reference_flush(self.buffer, patched) as taken:
            t0 = time.perf_counter()
            ms = self.tt.do_bench(fn, warmup=25, rep=window_s * 1e3, return_mode="median")
            wall = time.perf_counter() - t0
        return {"median_s": ms * 1e-3, "wall_s": wall, "flush": "ours" if taken else "triton's"}


def block(h: Harnesses, who: str, fn, window_s: float, gcc: GcClock, pre=None, **kw) -> dict:
    if pre is not None:
        kind, seconds = pre
        if kind == "idle":
            time.sleep(seconds)
        else:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                pass
    before = {
        "cpu": cpu_now(),
        "spin_ns": spin_ns(),
        "nivcsw": involuntary_switches(),
        "steal": steal_ticks(),
        "gc_s": gcc.seconds,
        "gc_n": gcc.count,
    }
    t0, c0 = time.perf_counter(), time.thread_time()
    out = (h.ours if who == "ours" else h.ref)(fn, window_s, **kw)
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    steal = steal_ticks()
    out.update(
        who=who,
        cpu_before=before["cpu"],
        cpu_after=cpu_now(),
        spin_ns=round(before["spin_ns"], 2),
        thread_cpu_over_wall=round(cpu / wall, 3) if wall > 0 else None,
        nivcsw=involuntary_switches() - before["nivcsw"],
        steal_ticks=(steal - before["steal"]) if steal is not None and before["steal"] is not None else None,
        gc_s=gcc.seconds - before["gc_s"],
        gc_n=gcc.count - before["gc_n"],
    )
    return out


def pairs(h, fn, n, window_s, gcc, pre=None, **kw) -> list[dict]:
    out = []
    for i in range(n):
        for who in ("ours", "ref") if i % 2 == 0 else ("ref", "ours"):
            out.append(block(h, who, fn, window_s, gcc, pre, **({} if who == "ours" else kw)))
    return out


def summary(blocks: list[dict]) -> dict:
    ours = [b["median_s"] for b in blocks if b["who"] == "ours"]
    ref = [b["median_s"] for b in blocks if b["who"] == "ref"]
    s: dict = {
        "ours_us": [round(x * 1e6, 2) for x in ours],
        "ref_us": [round(x * 1e6, 2) for x in ref],
        "spin_ns": [b["spin_ns"] for b in blocks],
        "cpus": sorted({b["cpu_before"] for b in blocks} | {b["cpu_after"] for b in blocks}, key=str),
        "gc_s": round(sum(b["gc_s"] for b in blocks), 4),
        "nivcsw": sum(b["nivcsw"] for b in blocks),
        "steal_ticks": sum(b["steal_ticks"] or 0 for b in blocks),
        "thread_cpu_over_wall": [b["thread_cpu_over_wall"] for b in blocks],
        "host_us_per_call_ours": [round(b["host_s_per_call"] * 1e6, 2) for b in blocks if b["who"] == "ours"],
        "device_wall_us_per_call_ours": [
            round(b["device_wall_s_per_call"] * 1e6, 2) for b in blocks if b["who"] == "ours"
        ],
    }
    if ours and ref:
        s["ratio"] = round(statistics.median(ours) / statistics.median(ref), 4)
        s["pair_ratios"] = [round(o / r, 4) for o, r in zip(ours, ref)]
        s["spread_ours"] = round(max(ours) / min(ours) - 1, 4)
        s["spread_ref"] = round(max(ref) / min(ref) - 1, 4)
    return s


def correlations(conditions: dict) -> dict:
    """Across every decode block of every condition: how the block's median follows the host's
    Python speed just before it (spin_ns) and the thread's share of its wall time on a CPU."""
    blocks = [b for c in conditions.values() for b in c["blocks"].get("decode", [])]

    def r(xs, ys):
        if len(xs) < 3:
            return None
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sx = sum((x - mx) ** 2 for x in xs) ** 0.5
        sy = sum((y - my) ** 2 for y in ys) ** 0.5
        return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / (sx * sy), 3) if sx and sy else None

    med = [b["median_s"] for b in blocks]
    return {
        "blocks": len(blocks),
        "median_vs_spin_ns": r([b["spin_ns"] for b in blocks], med),
        "median_vs_thread_cpu_share": r([b["thread_cpu_over_wall"] or 0 for b in blocks], med),
        "median_us_range": [round(min(med) * 1e6, 1), round(max(med) * 1e6, 1)] if med else None,
        "spin_ns_range": [min(b["spin_ns"] for b in blocks), max(b["spin_ns"] for b in blocks)] if blocks else None,
    }


@contextlib.contextmanager
def condition(gc_off: bool = False, pin: bool = False, thread_period_s: float | None = None):
    from tensorforge_measure.measure.host_state import gc_paused

    keep = os.sched_getaffinity(0)
    stop = threading.Event()
    sampler = None
    if thread_period_s is not None:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)

        def poll():
            while not stop.is_set():
                pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
                pynvml.nvmlDeviceGetPowerUsage(handle)
                stop.wait(thread_period_s)

        sampler = threading.Thread(target=poll, daemon=True)
        sampler.start()
    try:
        if pin:
            os.sched_setaffinity(0, {cpu_now() or 0})
        with gc_paused() if gc_off else contextlib.nullcontext():
            yield
    finally:
        os.sched_setaffinity(0, keep)
        stop.set()
        if sampler is not None:
            sampler.join()


def burst_rests(session, fn, device, budget_s: float = 0.4, repeats: int = 2) -> dict:
    """The burst eager timing (cuda_timing.time_cuda) of fn, its rests slept (the harness) or spun."""
    from tf_cuda import timing as cuda_timing

    from tensorforge_measure.measure.host_state import gc_paused

    real_sleep = time.sleep

    def spin(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    out: dict = {"slept": [], "spun": []}
    for _ in range(repeats):
        for how in ("slept", "spun"):
            policy = session.timing_policy(budget_s)
            try:
                if how == "spun":
                    cuda_timing.time.sleep = spin
                with gc_paused():
                    timed = cuda_timing.time_cuda(fn, policy, device)
            finally:
                cuda_timing.time.sleep = real_sleep
            out[how].append(round(timed.stats.p50 * 1e6, 1))
    return out


def profiler_session(torch, fn, flush, graph) -> float:
    """What a trace window does (measure/trace_window.py): eager calls after the flush and graph
    replays under the profiler (CPU + CUDA activity), the trace exported and read. Its seconds."""
    from tensorforge_measure.measure.trace_window import _calls, export

    t0 = time.perf_counter()

    def run():
        _calls(fn, flush, 3, True, 0.5)()
        _calls(graph.replay, None, 2, False, 0.5)()

    export(run, cuda=True)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("main", "no-teardown"), default="main")
    parser.add_argument("--window", type=float, default=0.1)
    parser.add_argument("--out", default="host-bound-eager.json")
    args = parser.parse_args()

    import torch
    import triton.testing as triton_testing
    from tf_cuda.graph import capture, warm_up
    from tf_cuda.timing import flush_step

    from tensorforge.host.plugin_host import PluginHost
    from tensorforge.workloads.suite import resolve
    from tensorforge_measure.host import OpsHost

    t_start = time.perf_counter()
    doc: dict = {"part": args.part, "environment": environment(), "conditions": {}}
    gcc = GcClock()
    spin_ns(20000)  # the loop's first run is slower (the interpreter specialises it)

    def save():
        Path(args.out).write_text(json.dumps(doc, indent=1, sort_keys=True, default=str))

    core, ops = PluginHost(), OpsHost()
    session = ops.backend("torch-cuda").open(0)
    doc["environment"]["TEARDOWN_CUPTI_after_open"] = os.environ.get("TEARDOWN_CUPTI")
    if args.part == "main":
        doc["cpu_survey_ns"] = cpu_survey(sorted(os.sched_getaffinity(0)))
    save()
    device = session.device
    flush = flush_step(torch, session.flush_bytes, device)
    h = Harnesses(torch, triton_testing, flush, flush.__self__)
    fns = {}
    with contextlib.ExitStack() as stack:
        for workload, _ in resolve(core, ("transformer_decode", "gemm_tiny")):
            builder = ops.builder(workload.kind, "torch-cuda")
            prepared = stack.enter_context(
                session.prepared(builder, workload.params, getattr(workload.params, "math_mode", "fp32"))
            )
            fns[workload.name] = prepared.fn
        stack.enter_context(torch.inference_mode())
        decode, tiny = fns["transformer_decode"], fns["gemm_tiny"]
        warm_up(torch, decode, device)
        graph = capture(torch, decode, flush, 1, device)
        for fn in (decode, tiny):
            for _ in range(5):
                fn()
        torch.cuda.synchronize()
        w = args.window

        def run(name, decode_pairs, tiny_pairs=0, pre=None, **cond):
            t0 = time.perf_counter()
            blocks = {}
            with condition(**cond):
                blocks["decode"] = pairs(h, decode, decode_pairs, w, gcc, pre)
                if tiny_pairs:
                    blocks["tiny"] = pairs(h, tiny, tiny_pairs, w / 2, gcc, pre)
            doc["conditions"][name] = {
                "settings": {**cond, "pre": pre},
                "summary": {k: summary(v) for k, v in blocks.items()},
                "blocks": blocks,
                "seconds": round(time.perf_counter() - t0, 2),
            }
            save()
            s = doc["conditions"][name]["summary"]
            print(
                f"{name:24s} "
                + " | ".join(
                    f"{k}: ours {statistics.median(v['ours_us']):8.1f} ref {statistics.median(v['ref_us']):8.1f} "
                    f"ratio {v['ratio']:.4f} spread {v['spread_ours'] * 100:4.1f}/{v['spread_ref'] * 100:4.1f}% "
                    f"spin {statistics.median(v['spin_ns']):.1f} ns cpus {v['cpus']} gc {v['gc_s'] * 1e3:.1f} ms "
                    f"nivcsw {v['nivcsw']} steal {v['steal_ticks']}"
                    for k, v in s.items()
                ),
                flush=True,
            )

        if args.part == "no-teardown":
            run("base", 3, 2, gc_off=True)
            doc["profiler_s"] = [profiler_session(torch, decode, flush, graph)]
            run("after_profiler_no_teardown", 3, 2, gc_off=True)
            doc["profiler_s"].append(profiler_session(torch, decode, flush, graph))
            run("after_profiler_no_teardown_2", 2, 0, gc_off=True)
        else:
            run("base", 3, 2)
            run("gc_off", 3, 2, gc_off=True)
            run("gc_off_pinned", 3, 0, gc_off=True, pin=True)
            run("thread_5ms", 2, 0, gc_off=True, thread_period_s=0.005)
            run("idle_0.3s_before", 2, 0, pre=("idle", 0.3), gc_off=True)
            run("spin_0.3s_before", 2, 0, pre=("spin", 0.3), gc_off=True)
            # the burst regime's eager timing (<= 5 ms stretches, then an equal rest): rests slept as
            # the harness does, or spun (the host kept running, the device resting alike)
            doc["burst_eager_rests"] = burst_rests(session, decode, device)
            print("decode burst eager p50 (us), rests slept / spun:", doc["burst_eager_rests"], flush=True)
            save()
            # the tiny GEMM: does its mode follow the flush buffer (address), and do_bench's own?
            tiny_flush = []
            for pad_mib in (0, 1, 7, 33):
                pad = torch.empty(pad_mib * 2**20 + 4096, dtype=torch.uint8, device=device)
                other = flush_step(torch, session.flush_bytes, device)
                h2 = Harnesses(torch, triton_testing, other, other.__self__)
                tiny_flush.append(
                    {
                        "pad_mib": pad_mib,
                        "address_mod_2mib": other.__self__.data_ptr() % (2 * 2**20),
                        "ours_us": [round(h2.ours(tiny, 0.02)["median_s"] * 1e6, 3) for _ in range(2)],
                    }
                )
                del pad, other, h2
            doc["tiny_flush_buffers"] = tiny_flush
            with condition(gc_off=True):
                doc["tiny_do_bench_flush"] = {
                    "patched_ours": [round(h.ref(tiny, w / 2, True)["median_s"] * 1e6, 3) for _ in range(3)],
                    "triton_own": [round(h.ref(tiny, w / 2, False)["median_s"] * 1e6, 3) for _ in range(3)],
                }
            print("tiny GEMM, ours per flush buffer:", tiny_flush, flush=True)
            print("tiny GEMM, do_bench's flush:", doc["tiny_do_bench_flush"], flush=True)
            save()
            doc["profiler_s"] = [profiler_session(torch, decode, flush, graph)]
            run("after_profiler", 3, 2, gc_off=True)
            doc["profiler_s"].append(profiler_session(torch, decode, flush, graph))
            run("after_profiler_2", 2, 0, gc_off=True)
        print("profiler sessions (s):", [round(x, 2) for x in doc.get("profiler_s", [])], flush=True)
        graph.close()
    doc["correlation"] = correlations(doc["conditions"])
    print("across every decode block:", doc["correlation"], flush=True)
    doc["seconds"] = round(time.perf_counter() - t_start, 1)
    save()
    print(f"done in {doc['seconds']} s; TEARDOWN_CUPTI={os.environ.get('TEARDOWN_CUPTI')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
