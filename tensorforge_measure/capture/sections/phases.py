"""MEASURED additions of the measurement phases: every timing beside the primary one with its
regime and mode, the CUDA-graph capture's outcome, the steady state of the sustained regime, and
the trace window's per-operator statistics (eager calls and graph replays).

Regimes: 'burst' (short stretches on a cool device), 'sustained' (continuous, after the device
reached its steady clock), 'single' (a device whose regimes collapse to one). Modes: 'eager'
(host included) and 'graph' (CUDA-graph replay: device time)."""

import attrs

from tensorforge_measure.capture.fields import field, measured_values, optional
from tensorforge_measure.measure.stats import SampleStats


@attrs.frozen(kw_only=True)
class ModeTimingRecord:
    """One timing of the workload in one regime and mode, with its raw samples."""

    regime: str = field("'burst', 'sustained' or 'single'")
    mode: str = field("'eager' (host included) or 'graph' (CUDA-graph replay: device time)")
    samples_s: tuple[float, ...] = field("every sample, in order", "s", validator=measured_values())
    stats: SampleStats = field("summary statistics of samples_s (verify recomputes them)")
    stop_reason: str = field("why timing stopped: 'stable', 'max_iters' (a fixed window) or 'budget'")
    warmup_iters: int = field("untimed calls (or replay pairs) before the first sample", "count")
    flush_bytes: int = field("bytes zeroed before each call to evict the L2 (0: none)", "B")
    method: str = field("exactly how this timing was taken")


@attrs.frozen(kw_only=True)
class GraphRecord:
    """Whether the workload was captured as a CUDA graph, and how graph calls were timed."""

    captured: bool = field("true when graph timings exist")
    reason: str | None = field("why there is no graph mode (capture failed, no CUDA); null when captured")
    method: str | None = field("how a graph call is timed; null when not captured")
    calls_per_replay: int | None = field("unrolled calls in the burst graph; null when not captured", "count")
    launch_state: str | None = optional(
        "the launch state the graph timings belong to: 'paired' (every warm-up and capture on one side "
        "stream per device: on the H200 the lower launch level, ~0.10 us per kernel boundary; "
        "docs/measurement.md, 'The two levels, traced'); absent in older captures or when not captured"
    )
    idle_per_activity_s: float | None = optional(
        "evidence of the launch level: the trace window's graph replays, idle time between activities "
        "per call / activities per call (H200 decode step: ~0.1 us lower level, ~0.45 us upper); "
        "absent without a traced graph",
        "s",
    )


@attrs.frozen(kw_only=True)
class SteadyRecord:
    """How the sustained regime's steady clock was reached before its timings."""

    reached: bool = field("false when the time limit came first (the timing went ahead anyway)")
    after_s: float = field("continuous load before the timed window", "s")
    window_medians_s: tuple[float, ...] = field("median call time of each load window, in order", "s")
    rule: str = field("the detection rule, in words")


@attrs.frozen(kw_only=True)
class KernelRecord:
    """One kernel (or memset, memcpy; on a CPU a framework op) of an operator."""

    name: str = field("as the profiler names it (library kernels keep their names, e.g. nvjet_sm90_...)")
    kind: str = field("'kernel', 'memset', 'memcpy' or 'cpu_op'")
    count: int = field("executions per call of the workload (median over the traced calls)", "count")
    p50_s: float = field("median duration of one execution", "s")
    total_p50_s: float = field("median over traced calls of its summed duration", "s")


@attrs.frozen(kw_only=True)
class OperatorTraceRecord:
    """One Core operator in the trace window, p50 over the traced calls."""

    operator: str = field("the Core operator's name, or '(unattributed)'")
    activities: int = field("kernels (CPU: framework ops) per call", "count")
    busy_p50_s: float = field("their summed durations", "s")
    gap_p50_s: float = field("idle device time before each of them (stream order), summed", "s")
    time_p50_s: float = field("busy + gap: the stream time the operator occupies per call", "s")
    host_p50_s: float | None = field("host time inside its range (eager calls only)", "s")
    kernels: tuple[KernelRecord, ...] = field("its kernels, in first-execution order")


@attrs.frozen(kw_only=True)
class TraceSummaryRecord:
    """Per-operator statistics of one kind of traced call (eager calls or graph replays)."""

    iterations: int = field("traced calls", "count")
    operators: tuple[OperatorTraceRecord, ...] = field("per operator, in first-execution order")
    span_p50_s: float = field("first activity start to last activity end, per call", "s")
    busy_p50_s: float = field("all activities' durations summed, per call", "s")
    gap_p50_s: float = field("idle time between activities, per call", "s")
    lead_in_p50_s: float | None = field("flush end to the call's first activity", "s")
    unattributed_busy_p50_s: float = field("busy time outside every operator range", "s")


@attrs.frozen(kw_only=True)
class OperatorsRecord:
    """The trace window of one workload."""

    source: str | None = field("which summary holds the operators' device time: 'graph replay' or 'eager'")
    iterations: int = field("eager calls traced", "count")
    method: str = field("exactly what the trace window ran")
    notes: tuple[str, ...] = field("why something is missing (graph not matched, no profiler...)")
    eager: TraceSummaryRecord | None = field("eager calls; null when the profiler gave nothing")
    graph: TraceSummaryRecord | None = field("graph replays; null without graph mode")
