"""From a PyTorch profiler trace (Chrome trace JSON, as `export_chrome_trace` writes it) to the
time each Core operator takes: which kernels it ran, how many, how long per iteration, and the
idle gaps between them.

Why the Chrome trace rather than the profiler's Python objects: it is the profiler's documented
export, holds every device activity with its start, duration and the correlation id that ties
it to the host call that launched it, and can be written by fake traces in tests.

How a kernel finds its operator: kernel -> correlation id -> the host launch (runtime or driver
API call) -> the innermost operator range (op_ranges.PREFIX + name) around the launch on the
launching thread; the enclosing ITERATION range says which call of the workload it belongs to.
A backward pass runs on autograd's own thread per device while the calling thread waits inside
the ITERATION range: a launch on a thread with no ITERATION range around it belongs to the
iteration whose range (on any thread) holds its time.
Kernels replayed from a CUDA graph were launched by one cudaGraphLaunch inside no operator
range; they get their operators from the sequence of an eager iteration of the same function
(same kernel names in the same order), or stay unattributed with the reason.

On the CPU the activities are the top-level framework ops (cpu_op) inside each operator range:
they run on the calling thread, so their durations are the operator's time.
"""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from tensorforge_measure.measure.op_ranges import FLUSH, ITERATION, operator_of

DEVICE_CATEGORIES = {"kernel": "kernel", "gpu_memset": "memset", "gpu_memcpy": "memcpy"}
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
UNATTRIBUTED = "(unattributed)"


class TraceError(ValueError):
    """The trace cannot be read or holds nothing to attribute; the message says why."""


@attrs.frozen
class HostSpan:
    name: str
    start_us: float
    dur_us: float
    thread: str

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us


@attrs.frozen
class Activity:
    """One execution on the device (kernel, memset, memcpy) or one top-level CPU op."""

    name: str
    kind: str  # kernel | memset | memcpy | cpu_op
    start_us: float
    dur_us: float
    operator: str | None  # None: outside every operator range (or a graph not matched)
    iteration: int | None  # index of the enclosing ITERATION range, None outside
    in_flush: bool = False
    launch: str = ""  # the host call that launched it (cudaLaunchKernel, cudaGraphLaunch, ...)

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us


@attrs.frozen
class Iteration:
    index: int
    activities: tuple[Activity, ...]  # in start order
    host_s: Mapping[str, float]  # time inside each operator range on the host
    lead_in_s: float | None = None  # idle device time from the flush's end to the first activity
    # True when the lead-in is device time of the call (a graph call after its in-graph flush):
    # it is then the first activity's gap. An eager call's lead-in is the host's launch delay.
    lead_is_gap: bool = False


class _Ranges:
    """Annotation ranges of one thread, for 'innermost range containing t' queries."""

    def __init__(self, spans: Iterable[HostSpan]):
        self.spans = sorted(spans, key=lambda s: (s.start_us, -s.dur_us))
        self.starts = [s.start_us for s in self.spans]

    def innermost(self, t: float, accept) -> HostSpan | None:
        # Ranges on one thread nest or are disjoint, so the latest-starting range that still
        # contains t is the innermost one; walk back from the last start <= t.
        i = bisect.bisect_right(self.starts, t) - 1
        while i >= 0:
            span = self.spans[i]
            if span.start_us <= t <= span.end_us and accept(span.name):
                return span
            i -= 1
        return None


def _events(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    events = doc.get("traceEvents") if isinstance(doc, Mapping) else None
    if not isinstance(events, list):
        raise TraceError("not a Chrome trace: no 'traceEvents' list")
    return [
        e
        for e in events
        if isinstance(e, Mapping)
        and e.get("ph") == "X"
        and isinstance(e.get("ts"), (int, float))
        and isinstance(e.get("dur"), (int, float))
    ]


def _correlation(event: Mapping[str, Any]) -> int | None:
    args = event.get("args") or {}
    value = args.get("correlation")
    return int(value) if isinstance(value, (int, float)) else None


def _host_structures(events):
    annotations: dict[str, list[HostSpan]] = defaultdict(list)
    launches: dict[int, HostSpan] = {}
    for e in events:
        cat = e.get("cat")
        if cat == "user_annotation":
            annotations[str(e.get("tid"))].append(
                HostSpan(str(e.get("name")), float(e["ts"]), float(e["dur"]), str(e.get("tid")))
            )
        elif cat in LAUNCH_CATEGORIES:
            corr = _correlation(e)
            if corr is not None:
                launches[corr] = HostSpan(str(e.get("name")), float(e["ts"]), float(e["dur"]), str(e.get("tid")))
    return annotations, launches


def _iteration_index(annotations: Mapping[str, list[HostSpan]]) -> dict[tuple[str, float], int]:
    spans = sorted(
        (s for spans in annotations.values() for s in spans if s.name == ITERATION), key=lambda s: s.start_us
    )
    return {(s.thread, s.start_us): i for i, s in enumerate(spans)}


def _any_thread(annotations) -> _Ranges:
    """The ITERATION ranges of every thread (which iteration a time falls in, whatever the thread)."""
    return _Ranges(s for spans in annotations.values() for s in spans if s.name == ITERATION)


def _host_times(annotations, index) -> dict[int, dict[str, float]]:
    """Seconds inside each operator range per iteration, on the host."""
    out: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    anywhere = _any_thread(annotations)
    for spans in annotations.values():
        ranges = _Ranges(s for s in spans if s.name == ITERATION)
        for s in spans:
            op = operator_of(s.name)
            if op is None:
                continue
            it = ranges.innermost(s.start_us, lambda n: n == ITERATION)
            if it is None and not ranges.spans:  # a thread of no call of its own (autograd's)
                it = anywhere.innermost(s.start_us, lambda n: n == ITERATION)
            if it is not None:
                out[index[(it.thread, it.start_us)]][op] += s.dur_us * 1e-6
    return out


def device_iterations(doc: Mapping[str, Any]) -> list[Iteration]:
    """Device activities of a CUDA trace grouped by traced iteration, each with its operator."""
    events = _events(doc)
    annotations, launches = _host_structures(events)
    index = _iteration_index(annotations)
    if not index:
        raise TraceError(f"the trace has no {ITERATION!r} range: nothing marks the traced calls")
    by_thread = {t: _Ranges(spans) for t, spans in annotations.items()}
    anywhere = _any_thread(annotations)
    calling = {t for t, spans in annotations.items() if any(s.name == ITERATION for s in spans)}
    grouped: dict[int, list[Activity]] = defaultdict(list)
    flushes: list[Activity] = []
    for e in events:
        kind = DEVICE_CATEGORIES.get(str(e.get("cat")))
        if kind is None:
            continue
        launch = launches.get(_correlation(e)) if _correlation(e) is not None else None
        operator = iteration = None
        in_flush = False
        if launch is not None:
            ranges = by_thread.get(launch.thread)
            it = ranges.innermost(launch.start_us, lambda n: n == ITERATION) if ranges else None
            if it is None and launch.thread not in calling:  # autograd's thread, inside a call
                it = anywhere.innermost(launch.start_us, lambda n: n == ITERATION)
            iteration = index.get((it.thread, it.start_us)) if it else None
            op = ranges.innermost(launch.start_us, lambda n: operator_of(n) is not None) if ranges else None
            operator = operator_of(op.name) if op is not None and (it is None or op.start_us >= it.start_us) else None
            in_flush = ranges is not None and ranges.innermost(launch.start_us, lambda n: n == FLUSH) is not None
        activity = Activity(
            str(e.get("name")),
            kind,
            float(e["ts"]),
            float(e["dur"]),
            operator,
            iteration,
            in_flush,
            launch.name if launch else "",
        )
        if in_flush:
            flushes.append(activity)
        elif iteration is not None:
            grouped[iteration].append(activity)
    host = _host_times(annotations, index)
    flush_ends = sorted(f.end_us for f in flushes)
    out = []
    for i in sorted(grouped):
        acts = tuple(sorted(grouped[i], key=lambda a: a.start_us))
        lead = None
        k = bisect.bisect_right(flush_ends, acts[0].start_us) - 1
        if k >= 0:
            lead = max(0.0, acts[0].start_us - flush_ends[k]) * 1e-6
        out.append(Iteration(i, acts, dict(host.get(i, {})), lead))
    return out


def cpu_iterations(doc: Mapping[str, Any]) -> list[Iteration]:
    """Top-level CPU ops of a CPU trace grouped by traced iteration, each with its operator."""
    events = _events(doc)
    annotations, _ = _host_structures(events)
    index = _iteration_index(annotations)
    if not index:
        raise TraceError(f"the trace has no {ITERATION!r} range: nothing marks the traced calls")
    ops_by_thread: dict[str, list[HostSpan]] = defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op":
            ops_by_thread[str(e.get("tid"))].append(
                HostSpan(str(e.get("name")), float(e["ts"]), float(e["dur"]), str(e.get("tid")))
            )
    grouped: dict[int, list[Activity]] = defaultdict(list)
    for thread, ops in ops_by_thread.items():
        ranges = _Ranges(annotations.get(thread, ()))
        ops.sort(key=lambda s: (s.start_us, -s.dur_us))
        outer_end = -1.0
        for op in ops:
            if op.start_us < outer_end:  # nested inside the previous top-level op
                continue
            outer_end = op.end_us
            it = ranges.innermost(op.start_us, lambda n: n == ITERATION)
            if it is None:
                continue
            rng = ranges.innermost(op.start_us, lambda n: operator_of(n) is not None)
            name = operator_of(rng.name) if rng is not None and rng.start_us >= it.start_us else None
            grouped[index[(it.thread, it.start_us)]].append(
                Activity(op.name, "cpu_op", op.start_us, op.dur_us, name, index[(it.thread, it.start_us)])
            )
    host = _host_times(annotations, index)
    return [
        Iteration(i, tuple(sorted(grouped[i], key=lambda a: a.start_us)), dict(host.get(i, {})))
        for i in sorted(grouped)
    ]


def sequence(iteration: Iteration) -> tuple[tuple[str, str | None], ...]:
    """(activity name, operator) in execution order: the template a graph replay is matched to."""
    return tuple((a.name, a.operator) for a in iteration.activities)


def apply_template(
    iterations: Sequence[Iteration], template: Sequence[tuple[str, str | None]], calls: int = 1, prefix: int = 0
) -> tuple[list[Iteration], str | None]:
    """Give graph-replayed activities the operators of an eager iteration's sequence.

    Each traced replay holds `calls` calls, each `prefix` activities (the in-graph L2 flush)
    followed by the call's own; a replay is split into one Iteration per call, whose lead-in is
    the idle time from the end of its prefix to its first activity. Returns the calls with
    operators set and None, or the replays unchanged and the reason they could not be matched.
    """
    names = [n for n, _ in template]
    chunk = prefix + len(names)
    out = []
    for it in iterations:
        acts = it.activities
        if len(acts) != calls * chunk:
            return list(iterations), (
                f"a graph replay ran {len(acts)} device activities, expected "
                f"{calls} x ({prefix} + {len(names)}) from the eager call"
            )
        for j in range(calls):
            pre, body = acts[j * chunk : j * chunk + prefix], acts[j * chunk + prefix : (j + 1) * chunk]
            got = [a.name for a in body]
            if got != names:
                first = next(i for i, (a, b) in enumerate(zip(got, names)) if a != b)
                return list(iterations), (
                    f"a graph replay's kernels differ from the eager call's at #{first}: "
                    f"{got[first][:60]!r} vs {names[first][:60]!r}"
                )
            lead = max(0.0, body[0].start_us - pre[-1].end_us) * 1e-6 if pre and body else it.lead_in_s
            out.append(
                Iteration(
                    it.index * calls + j,
                    tuple(attrs.evolve(a, operator=op) for a, (_, op) in zip(body, template)),
                    {},
                    lead,
                    lead_is_gap=bool(pre),
                )
            )
    return out, None


# -- statistics over iterations ---------------------------------------------------------------


@attrs.frozen
class KernelStats:
    name: str
    kind: str
    count: int  # per iteration (median over iterations)
    p50_s: float  # median duration of one execution
    total_p50_s: float  # median over iterations of this kernel's summed duration


@attrs.frozen
class OperatorTrace:
    """One operator's measured device (or CPU) time per iteration, p50 over iterations."""

    operator: str
    activities: int  # kernels (or CPU ops) per iteration, median
    busy_p50_s: float  # summed durations of its activities
    gap_p50_s: float  # idle time before each of its activities (stream order), summed
    time_p50_s: float  # busy + gap: the stream time it occupies
    host_p50_s: float | None  # host time inside its range (eager iterations only)
    kernels: tuple[KernelStats, ...]


@attrs.frozen
class TraceSummary:
    iterations: int
    operators: tuple[OperatorTrace, ...]  # in first-execution order
    span_p50_s: float  # first activity start to last activity end, per iteration
    busy_p50_s: float  # all activities' durations summed
    gap_p50_s: float  # idle time between activities, summed
    lead_in_p50_s: float | None  # flush end -> first activity (launch latency into the call)
    unattributed_busy_p50_s: float  # activities outside every operator range


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def summarize_iterations(iterations: Sequence[Iteration]) -> TraceSummary:
    """Per-operator statistics: each operator's busy time, gaps and kernels, p50 over iterations.

    The gap before an activity is the idle time since the latest end of anything before it in
    the same iteration. The first activity's gap is the lead-in when that is device time (a
    graph call after its in-graph flush), else none (an eager call's lead-in is the host's
    launch delay, kept apart as lead_in). So per iteration the operators' times add up to the
    span (plus a graph call's lead-in) exactly.
    """
    if not iterations:
        raise TraceError("no traced iteration executed any device activity")
    per_op: dict[str, dict[str, list[float]]] = {}
    kernel_durs: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    kernel_totals: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    kernel_counts: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    order: list[str] = []
    kernel_order: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    spans, busies, gaps, leads, unattributed = [], [], [], [], []
    for it in iterations:
        acts = it.activities
        if not acts:
            continue
        sums: dict[str, dict[str, float]] = defaultdict(lambda: {"busy": 0.0, "gap": 0.0, "n": 0})
        ktot: dict[tuple[str, str, str], float] = defaultdict(float)
        kcnt: dict[tuple[str, str, str], int] = defaultdict(int)
        last_end = acts[0].start_us
        if it.lead_is_gap and it.lead_in_s:
            last_end -= it.lead_in_s * 1e6  # the first activity's gap is the lead-in
        for a in acts:
            op = a.operator or UNATTRIBUTED
            if op not in per_op:
                per_op[op] = {"busy": [], "gap": [], "n": [], "host": []}
                order.append(op)
            key = (op, a.name, a.kind)
            if key not in kernel_durs:
                kernel_order[op].append(key)
            gap = max(0.0, a.start_us - last_end)
            last_end = max(last_end, a.end_us)
            sums[op]["busy"] += a.dur_us * 1e-6
            sums[op]["gap"] += gap * 1e-6
            sums[op]["n"] += 1
            kernel_durs[key].append(a.dur_us * 1e-6)
            ktot[key] += a.dur_us * 1e-6
            kcnt[key] += 1
        for op in per_op:
            s = sums.get(op, {"busy": 0.0, "gap": 0.0, "n": 0})
            per_op[op]["busy"].append(s["busy"])
            per_op[op]["gap"].append(s["gap"])
            per_op[op]["n"].append(s["n"])
            if op in it.host_s:
                per_op[op]["host"].append(it.host_s[op])
        for key in kernel_durs:
            kernel_totals[key].append(ktot.get(key, 0.0))
            kernel_counts[key].append(kcnt.get(key, 0))
        spans.append((last_end - acts[0].start_us) * 1e-6)
        busies.append(sum(a.dur_us for a in acts) * 1e-6)
        gaps.append(spans[-1] - busies[-1])
        unattributed.append(sums[UNATTRIBUTED]["busy"] if UNATTRIBUTED in sums else 0.0)
        if it.lead_in_s is not None:
            leads.append(it.lead_in_s)
    operators = []
    for op in order:
        d = per_op[op]
        kernels = tuple(
            KernelStats(
                name,
                kind,
                int(round(_median(kernel_counts[(o, name, kind)]))),
                _median(kernel_durs[(o, name, kind)]),
                _median(kernel_totals[(o, name, kind)]),
            )
            for (o, name, kind) in kernel_order[op]
        )
        busy, gap = _median(d["busy"]), _median(d["gap"])
        times = [b + g for b, g in zip(d["busy"], d["gap"])]
        operators.append(
            OperatorTrace(
                op,
                int(round(_median(d["n"]))),
                busy,
                gap,
                _median(times),
                _median(d["host"]) if d["host"] else None,
                kernels,
            )
        )
    return TraceSummary(
        len(spans),
        tuple(operators),
        _median(spans),
        _median(busies),
        _median([max(0.0, g) for g in gaps]),
        _median(leads) if leads else None,
        _median(unattributed),
    )
