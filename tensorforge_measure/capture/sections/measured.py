"""MEASURED: per-iteration latency samples of each workload on a real device, with what a
reader needs to trust them (stopping reason, warm-up, flush, framework flags, peak memory).

A workload's row is a `Measurement` (status 'ok': samples exist) or a `FailedMeasurement`
(status 'failed': only the reason). The split is the point: a measured number cannot exist
without the samples it summarises.
"""

from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge_measure.capture.fields import const, field, measured_values, optional
from tensorforge_measure.capture.sections.energy import EnergyMeasurement
from tensorforge_measure.capture.sections.phases import GraphRecord, ModeTimingRecord, OperatorsRecord, SteadyRecord
from tensorforge_measure.measure.stats import SampleStats


@attrs.frozen(kw_only=True)
class MeasuringDevice:
    """The device the workloads were timed on."""

    name: str = field("the device's own name for itself, e.g. 'NVIDIA H200'")
    fingerprint: str = field(
        "stable across runs on the same device and software stack; calibrations are stored by it "
        "and the gate compares only equal fingerprints"
    )
    details: Mapping[str, Any] = field(
        "what the backend reports about the device and its software (backend-specific: versions, "
        "memory, caches, threads...)"
    )


@attrs.frozen(kw_only=True)
class ResultCheck:
    """A workload run once on known values, its result compared with the known answer."""

    ok: bool = field("true when every rank's result was the known answer")
    per_rank: tuple[str, ...] = field("what each rank checked and found, in rank order")


@attrs.frozen(kw_only=True)
class OperatorTime:
    """One Core operator in a per-operator window of several ranks."""

    operator: str = field("the Core operator's name")
    activities: int = field("times the operator's range is entered in one call", "count")
    time_p50_s: float = field("median over the window's calls of the slowest rank's time in it", "s")
    fastest_rank_p50_s: float = field("median over the calls of the fastest rank's time in it", "s")
    per_rank_p50_s: tuple[float, ...] = field("each rank's median time in it, in rank order", "s")


@attrs.frozen(kw_only=True)
class OperatorTimes:
    """The operators of one mode (eager calls) in the window."""

    operators: tuple[OperatorTime, ...] = field("every operator the window saw, in call order")
    iteration_p50_s: float = field("median over the calls of the slowest rank's whole call", "s")
    coverage: float | None = field(
        "sum of the operators' slowest-rank times over iteration_p50_s (above 1 when the slowest rank "
        "differs from operator to operator)",
        "1",
    )


@attrs.frozen(kw_only=True)
class OperatorWindow:
    """Per-operator time on every rank, in a window of its own after the timing."""

    source: str = field("'eager': the calls the window ran")
    iterations: int = field("calls in the window", "count")
    method: str = field("exactly how the window attributed time to operators")
    notes: tuple[str, ...] = field("what the numbers include that a reader must know")
    eager: OperatorTimes = field("the operators' times in the eager calls")
    graph: None = field("always null: the window runs eager calls only", default=None)


@attrs.frozen(kw_only=True)
class RankMeasurement:
    """A workload run on several devices at once, one process each (the torch-distributed backend)."""

    ranks: int = field("processes (devices) that ran it", "count")
    aggregation: str = field("how samples_s follows from the ranks' samples")
    per_rank_samples_s: tuple[tuple[float, ...], ...] = field(
        "every rank's samples of the same iterations, in rank order", "s", validator=measured_values()
    )
    per_rank_p50_s: tuple[float, ...] = field("each rank's median", "s")
    result_check: ResultCheck = field("the workload on known values before timing")
    peak_memory_per_rank_bytes: tuple[int | None, ...] = field("each rank's peak memory", "B")
    peak_memory_per_rank_method: str = field("how each rank's peak memory was obtained")
    operators: OperatorWindow | None = optional("the per-operator window (absent when it did not run)")


@attrs.frozen(kw_only=True)
class Measurement:
    """A workload that was measured: the raw samples and what summarises them."""

    status: str = const("ok", "'ok': this workload was measured")
    reason: None = field("always null for a measured workload", default=None)
    math_mode: str = field("math mode that ran (fp32, tf32, fp16, bf16...)")
    samples_s: tuple[float, ...] = field("every timed iteration, in order", "s", validator=measured_values())
    stats: SampleStats = field("summary statistics of samples_s (verify recomputes them)")
    stop_reason: str = field("why timing stopped: 'stable' (spread small enough), 'max_iters' or 'budget'")
    warmup_iters: int = field("untimed iterations before the first sample", "count")
    flush_bytes: int = field("bytes written before each iteration to evict caches (0: no flush)", "B")
    peak_memory_bytes: int | None = field(
        "peak device memory of building and running the workload once; null when the backend cannot see it", "B"
    )
    peak_memory_method: str | None = optional("how peak_memory_bytes was obtained (devices differ)")
    framework_flags: Mapping[str, Any] = field(
        "framework settings in force that change which arithmetic and kernels run (backend-specific)"
    )
    throughput_flops_per_s: float | None = field("predicted FLOPs / measured p50", "FLOP/s")
    throughput_bytes_per_s: float | None = field("compulsory bytes / measured p50", "B/s")
    ranks: RankMeasurement | None = optional(
        "on several devices: every rank's samples, the result check and the per-operator window"
    )
    # What the measurement phases add (absent in captures written before them: a burst eager timing)
    regime: str | None = optional(
        "regime of the primary timing (samples_s): 'burst' (short stretches on a cool device) or "
        "'single' (a device whose regimes collapse to one); absent: burst"
    )
    mode: str | None = optional(
        "mode of the primary timing: 'graph' (CUDA-graph replay, device time) where the workload was "
        "captured, else 'eager' (host included); absent: eager"
    )
    method: str | None = optional("exactly how the primary timing was taken")
    modes: tuple[ModeTimingRecord, ...] | None = optional(
        "every other timing of the workload, each with its regime and mode (e.g. burst eager, sustained "
        "eager, sustained graph)"
    )
    host_overhead_s: Mapping[str, float] | None = optional(
        "per regime: eager p50 - graph p50, the host's share of an eager call (within noise it may be "
        "negative for kernels long enough to hide the host)",
        "s",
    )
    graph: GraphRecord | None = optional("whether the workload was captured as a CUDA graph, or why not")
    steady: SteadyRecord | None = optional("how the sustained regime's steady clock was reached")
    regimes_note: str | None = optional("set where the device's regimes collapse to one, saying why")
    notes: tuple[str, ...] | None = optional("what else a reader should know about these timings")
    operators: OperatorsRecord | None = optional(
        "the trace window: per Core operator its kernels, their count and time (eager calls and graph replays)"
    )
    energy: EnergyMeasurement | None = optional(
        "the energy window: joules per execution from the device's energy counter (docs/energy.md)"
    )


@attrs.frozen(kw_only=True)
class FailedMeasurement:
    """A workload that could not be measured (out of memory, unsupported dtype, no builder...)."""

    status: str = const("failed", "'failed': no samples exist for this workload")
    math_mode: str = field("math mode that was attempted")
    reason: str = field("why it failed, in one line")


WorkloadMeasurement = Measurement | FailedMeasurement


@attrs.frozen(kw_only=True)
class Measured:
    """MEASURED: the workloads timed on one device by one backend."""

    label: str = const("MEASURED", "the section's label")
    available: bool = const(True, "true: a device was opened and workloads were timed on it")
    reason: None = field("always null when available", default=None)
    backend: str = field("the measurement backend, e.g. 'torch-cuda' or 'torch-cpu'")
    device: MeasuringDevice = field("the device that was measured")
    workloads: Mapping[str, WorkloadMeasurement] = field("per workload name: its measurement or why it failed")
