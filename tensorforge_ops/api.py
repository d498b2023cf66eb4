"""What Ops plugins implement (backends, builders, probes, telemetry, policies) and the values
that cross the boundary between them and the runner."""

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Mapping

import attrs

if TYPE_CHECKING:
    from .measure.timing import TimedSamples


class Unavailable(Exception):
    """A backend, probe or telemetry source cannot run here; the message says why."""


@attrs.frozen
class DeviceInfo:
    backend: str
    name: str                    # as the device reports it, e.g. 'NVIDIA H200'
    fingerprint: str             # stable across runs on the same device + software stack
    details: Mapping[str, Any] = attrs.field(factory=dict)


class Session:
    """An open device. Backends subclass this."""
    info: DeviceInfo
    device: Any = None

    def prepared(self, builder: "WorkloadBuilder", params: Any,
                 math_mode: str) -> AbstractContextManager["Prepared"]:
        """Context manager yielding a Prepared workload (inputs allocated, one run done)."""
        raise NotImplementedError

    def time(self, fn: Callable[[], Any], budget_s: float) -> "TimedSamples":
        """Per-iteration timing; returns a tensorforge_ops.measure.timing.TimedSamples."""
        raise NotImplementedError

    def close(self) -> None:
        pass


@attrs.frozen
class Prepared:
    fn: Callable[[], Any]
    peak_memory_bytes: int | None          # None when the backend cannot see it (method says why)
    framework_flags: Mapping[str, Any]
    # How peak memory was obtained (devices differ: allocator bytes on a GPU, resident pages on
    # a CPU); recorded beside the number so nobody compares the two unknowingly.
    peak_memory_method: str = ""


class MeasurementBackend:
    name: str = ""
    description: str = ""
    # Builder family this backend runs (e.g. 'torch'): any builder declaring the same
    # `framework` works here, so one PyTorch builder serves every PyTorch device.
    framework: str = ""
    # Targets this backend measures natively: `run --target T` without --backend picks it.
    targets: tuple[str, ...] = ()
    # Workload specs `run` measures when the user names none (empty: the workload plugins'
    # default suite, which is sized for data-centre GPUs).
    default_suite: tuple[str, ...] = ()

    def open(self, device_index: int = 0) -> Session:
        raise NotImplementedError


class WorkloadBuilder:
    kind: str = ""               # Core workload kind name
    backend: str = ""            # one backend by name, or
    framework: str = ""          # every backend of this framework (e.g. 'torch')

    @property
    def name(self) -> str:
        return f"{self.kind}@{self.backend or self.framework}"

    def build(self, params: Any, device: Any) -> Callable[[], Any]:
        raise NotImplementedError


@attrs.frozen
class ProbeResult:
    name: str
    method: str
    compute: Mapping[str, float] = attrs.field(factory=dict)    # FLOP/s per math mode
    dram_bytes_per_s: float | None = None
    launch_floor_s: float | None = None
    details: Mapping[str, Any] = attrs.field(factory=dict)
    duration_s: float = 0.0


class CalibrationProbe:
    name: str = ""
    backend: str = ""

    def run(self, session: Session) -> ProbeResult:
        raise NotImplementedError


class TelemetrySource:
    name: str = ""
    backend: str = ""
    # Shown with every window of this source: what the numbers are, and that they decide nothing.
    caveat: str = ("telemetry is diagnostic context from a separate execution window; "
                   "it does not prove a bottleneck and never decides a verdict.")

    def collect(self, session: Session, run_once: Callable[[], Any], duration_s: float) -> dict[str, Any]:
        raise NotImplementedError


class Policy:
    name: str = ""
    description: str = ""


@attrs.frozen
class ExportResult:
    """What a sink did with a capture: where it went, or why it did not."""
    sink: str
    ok: bool
    location: str | None = None    # e.g. an MLflow run URI
    error: str | None = None       # one line, shown to the user when ok is False


class CaptureSink:
    """Somewhere captures are sent after they are written (experiment trackers and the like).
    `export` must not raise for an unreachable or rejecting destination: it returns
    ExportResult(ok=False, error=...) and the capture on disk stays the record."""
    name: str = ""
    description: str = ""

    def export(self, capture: dict[str, Any], capture_path: str, report_html: str | None,
               options: Mapping[str, str]) -> ExportResult:
        raise NotImplementedError
