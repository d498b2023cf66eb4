"""MEASURED: per-iteration latency samples of each workload on a real device, with what a
reader needs to trust them (stopping reason, warm-up, flush, framework flags, peak memory).

A workload's row is a `Measurement` (status 'ok': samples exist) or a `FailedMeasurement`
(status 'failed': only the reason). The split is the point: a measured number cannot exist
without the samples it summarises.
"""

from typing import Any
from collections.abc import Mapping

import attrs

from ...measure.stats import SampleStats
from ..fields import const, field, optional


@attrs.frozen(kw_only=True)
class MeasuringDevice:
    """The device the workloads were timed on."""
    name: str = field("the device's own name for itself, e.g. 'NVIDIA H200'")
    fingerprint: str = field(
        "stable across runs on the same device and software stack; calibrations are stored by it "
        "and the gate compares only equal fingerprints")
    details: Mapping[str, Any] = field(
        "what the backend reports about the device and its software (backend-specific: versions, "
        "memory, caches, threads...)")


@attrs.frozen(kw_only=True)
class Measurement:
    """A workload that was measured: the raw samples and what summarises them."""
    status: str = const("ok", "'ok': this workload was measured")
    reason: None = field("always null for a measured workload", default=None)
    math_mode: str = field("math mode that ran (fp32, tf32, fp16, bf16...)")
    samples_s: tuple[float, ...] = field("every timed iteration, in order", "s")
    stats: SampleStats = field("summary statistics of samples_s (verify recomputes them)")
    stop_reason: str = field("why timing stopped: 'stable' (spread small enough), 'max_iters' or 'budget'")
    warmup_iters: int = field("untimed iterations before the first sample", "count")
    flush_bytes: int = field("bytes written before each iteration to evict caches (0: no flush)", "B")
    peak_memory_bytes: int | None = field(
        "peak device memory of building and running the workload once; null when the backend "
        "cannot see it", "B")
    peak_memory_method: str | None = optional("how peak_memory_bytes was obtained (devices differ)")
    framework_flags: Mapping[str, Any] = field(
        "framework settings in force that change which arithmetic and kernels run (backend-specific)")
    throughput_flops_per_s: float | None = field("predicted FLOPs / measured p50", "FLOP/s")
    throughput_bytes_per_s: float | None = field("compulsory bytes / measured p50", "B/s")


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
