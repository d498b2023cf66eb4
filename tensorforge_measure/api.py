"""What Ops plugins implement (backends, builders, probes, telemetry, policies) and the values
that cross the boundary between them and the runner."""

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

import attrs

if TYPE_CHECKING:  # api.py is imported by every Ops plugin; these only by their readers
    from tensorforge_measure.capture.model import Capture
    from tensorforge_measure.capture.sections.diagnostic import TelemetryWindow
    from tensorforge_measure.measure.timing import TimedSamples


class Unavailable(Exception):
    """A backend, probe or telemetry source cannot run here; the message says why."""


@attrs.frozen
class DeviceInfo:
    backend: str
    name: str  # as the device reports it, e.g. 'NVIDIA H200'
    fingerprint: str  # stable across runs on the same device + software stack
    details: Mapping[str, Any] = attrs.field(factory=dict)


class Session:
    """An open device. Backends subclass this.

    Optional capabilities, asked for by name (a session without one is measured without it, and
    the measuring side never asks which backend it is):

    * ``phases(fn, plan)``: the burst and sustained phases (tensorforge_measure.measure.phases).
    * ``synchronize()``: wait for the device's queued work.
    * ``energy_counter()``: the device's energy counter for the energy windows (what
      tensorforge_measure.energy.measure.measure_energy reads: ``joules()``, ``instant_w()``,
      ``averaged_w()``, ``enforced_limit_w()``, ``counter_source``, ``unit_j``,
      ``instant_source``; optionally ``grid_period()``, ``clock``, ``fields_ok``/``read_both``,
      ``field_lag_s`` and ``close()``), or :class:`Unavailable` with why there is none.
    * ``queue_event()``: a recordable device event (``record()``, ``query()``,
      ``synchronize()``), so an energy window keeps executions queued while the host reads the
      counter; without it the window runs synchronous chunks.
    * ``graph_replays(fn, calls)``: a context manager yielding
      :class:`tensorforge_measure.energy.execution.Replays`, one captured device graph of
      ``calls`` unrolled ``fn()`` (raises
      :class:`tensorforge_measure.energy.execution.GraphCaptureError` where capture fails):
      host-bound energy windows and the estimate probe's warm sample replay it.
    * ``graph_of(warm, body)``: one device graph of ``body`` captured after ``warm`` ran, as a
      replay callable (the estimate probe's launch-graph items).
    * ``replay_times(replay, replays)``: device seconds of each of ``replays`` back-to-back
      calls of ``replay`` after one untimed call.
    * ``contention_meter()``: a zero-argument callable started now that, called later, returns
      the CPU shares other work took since (``other_processes_pct``, ``steal_pct``; None where
      unreadable), or None where the session cannot tell. Calibration judges each probe by it
      (tensorforge_measure.calibrate.probe_evidence).
    """

    info: DeviceInfo
    device: Any = None

    def prepared(self, builder: "WorkloadBuilder", params: Any, math_mode: str) -> AbstractContextManager["Prepared"]:
        """Context manager yielding a Prepared workload (inputs allocated, one run done)."""
        raise NotImplementedError

    def time(self, fn: Callable[[], Any], budget_s: float) -> "TimedSamples":
        """Per-iteration timing; returns a tensorforge_measure.measure.timing.TimedSamples."""
        raise NotImplementedError

    def close(self) -> None:
        pass


@attrs.frozen
class Prepared:
    fn: Callable[[], Any]
    peak_memory_bytes: int | None  # None when the backend cannot see it (method says why)
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
    # The backend `run` and `calibrate` use for a target no backend claims (at most one installed
    # backend declares it; the CUDA backend does).
    fallback: bool = False
    # The estimate's probe plan (tensorforge.estimate.probe_plan.ProbeItem, e.g. tensorforge.api's
    # CUDA_PLAN or CPU_PLAN) its estimate-terms probe sweeps on this backend, and the timing budget
    # of each item (seconds): the backend picks, the measuring side never chooses by its name.
    probe_plan: tuple[Any, ...] = ()
    probe_item_budget_s: float = 0.3
    # Whether the host CPU's energy counter (tensorforge_measure_register_host_energy) is read at
    # the edges of this backend's energy windows, beside its device's own counter (a GPU's).
    host_energy_beside: bool = False

    def open(self, device_index: int = 0) -> Session:
        raise NotImplementedError


class HostEnergyCounter(Protocol):
    """The host CPU's energy counter, read at the edges of a device's energy window (RAPL on Linux).
    ``read_uj()`` is one reading (None where it failed); ``joules_between(start, end)`` the joules
    between two readings (wraps undone); ``source`` says what was read."""

    source: str

    def read_uj(self) -> tuple[int, ...] | None: ...

    def joules_between(self, start: tuple[int, ...], end: tuple[int, ...]) -> float: ...


class HostEnergySource:
    """Where the host CPU's energy counter comes from (registered through
    tensorforge_measure_register_host_energy): ``open()`` returns a :class:`HostEnergyCounter`
    or raises :class:`Unavailable` with the reason (e.g. readable by root only)."""

    name: str = ""
    description: str = ""

    def open(self) -> HostEnergyCounter:
        raise NotImplementedError


class WorkloadBuilder:
    kind: str = ""  # Core workload kind name
    backend: str = ""  # one backend by name, or
    framework: str = ""  # every backend of this framework (e.g. 'torch')

    @property
    def name(self) -> str:
        return f"{self.kind}@{self.backend or self.framework}"

    def build(self, params: Any, device: Any) -> Callable[[], Any]:
        raise NotImplementedError


@attrs.frozen
class ProbeResult:
    name: str
    method: str
    compute: Mapping[str, float] = attrs.field(factory=dict)  # FLOP/s per math mode
    dram_bytes_per_s: float | None = None
    launch_floor_s: float | None = None
    details: Mapping[str, Any] = attrs.field(factory=dict)
    duration_s: float = 0.0
    # Calibrated collective curves (tensorforge.workloads.collectives.CollectiveCeiling as data) by
    # ceiling_key, from a sweep over several devices; empty for single-device probes.
    collectives: Mapping[str, Any] = attrs.field(factory=dict)
    # The regime the probe ran in: 'burst' (short stretches on a cool device), 'sustained'
    # (continuous, after the device reached its steady clock) or 'single' (a device whose regimes
    # collapse to one, e.g. the host CPU). Ceilings are kept per regime.
    regime: str = attrs.field(default="burst", validator=attrs.validators.in_(("burst", "sustained", "single")))
    # Kernel floors by name (seconds), each named for what it measures (see docs/measurement.md).
    floors: Mapping[str, float] = attrs.field(factory=dict)
    # Relative IQR of the samples behind the headline figures (the widest of them), so the
    # calibration can judge the probe's evidence; None: the probe does not say.
    spread: float | None = None
    # The relative spread of the fastest samples behind each rate, by ceiling (a math mode, or
    # 'dram'): calibrate/margin.py makes it the rate's margin; absent: the margin's floor alone.
    fastest_spread: Mapping[str, float] = attrs.field(factory=dict)
    # The rate each memory access pattern reached ('copy': bytes read + written, 'read': a stream
    # that only reads, 'write': one that only writes); dram_bytes_per_s is the highest of them.
    dram_patterns: Mapping[str, float] = attrs.field(factory=dict)


class CalibrationProbe:
    name: str = ""
    backend: str = ""
    # 'sustained' probes run after all others (they leave the device hot); see ProbeResult.regime
    regime: str = "burst"
    # Within a regime, probes run in ascending order (ties: registration order). Ceiling probes
    # keep 0; a long burst sweep that heats the device sets a higher order so it runs after them:
    # on an H200 the bf16 ceiling measured right after the estimate's 30 s sweep came out 5% low
    # (760 vs 799 TFLOP/s) and the bound then undercut three GEMMs.
    order: int = 0
    # Whether calibration may run the probe again when its evidence is insufficient (a contended
    # or noisy attempt; calibrate/probe_evidence.py). A long sweep sets False: judged, not repeated.
    repeatable: bool = True

    def run(self, session: Session) -> ProbeResult:
        raise NotImplementedError


class TelemetrySource:
    name: str = ""
    backend: str = ""
    # Shown with every window of this source: what the numbers are, and that they decide nothing.
    caveat: str = (
        "telemetry is diagnostic context from a separate execution window; "
        "it does not prove a bottleneck and never decides a verdict."
    )

    def collect(
        self, session: Session, run_once: Callable[[], Any], duration_s: float
    ) -> "TelemetryWindow | Mapping[str, Any]":
        """The window: a TelemetryWindow, or the source's own JSON-ready record (see the hook spec)."""
        raise NotImplementedError


NO_VERDICT = "NO VERDICT"
# What a policy may declare it needs: the captures a command hands it, and the labelled
# sections that must hold evidence in each capture it is handed.
POLICY_EVIDENCE = ("candidate", "baseline", "captures", "MEASURED", "CALIBRATED", "DIAGNOSTIC")
# The commands that run policies: `gate BASELINE CANDIDATE`, `report CAPTURE [--baseline]`,
# `rightsize ... [--capture ...]`.
POLICY_COMMANDS = ("gate", "report", "rightsize")


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


def _named(_inst: Any, attribute: Any, value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a verdict needs a non-empty {attribute.name}")


@attrs.frozen
class Verdict:
    """One POLICY verdict. A verdict other than NO VERDICT exists only with its evidence: it
    names what it was decided on, or it cannot be made."""

    policy: str = attrs.field(validator=_named)
    subject: str  # what it is about: a workload, a target ('' for the whole)
    verdict: str = attrs.field(validator=_named)  # e.g. PASS, REGRESSION, MEETS, or NO VERDICT
    reason: str = attrs.field(validator=_named)  # why, in one line; for NO VERDICT what is missing
    evidence: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    fails: bool = False  # true: this verdict fails a gate (exit status 1)
    record: Any = attrs.field(default=None, eq=False)  # the policy's own typed result, for its command

    @evidence.validator
    def _evidence(self, _attribute: Any, value: tuple[str, ...]) -> None:
        if self.verdict != NO_VERDICT and not [e for e in value if isinstance(e, str) and e.strip()]:
            raise ValueError(
                f"verdict {self.verdict!r} of policy {self.policy!r} names no evidence; "
                "a verdict exists only with its evidence"
            )
        if self.fails and self.verdict == NO_VERDICT:
            raise ValueError("NO VERDICT cannot fail a gate: it decides nothing")


@attrs.frozen
class PolicyRequest:
    """What a command hands a policy: the verified captures (each a
    tensorforge_measure.policy.evidence.Evidence: path + typed capture), the Core host for policies
    that predict, and settings keyed by policy name."""

    command: str
    candidate: Any = None  # gate's CANDIDATE, report's CAPTURE
    baseline: Any = None  # gate's BASELINE, report's --baseline
    captures: tuple[Any, ...] = ()  # rightsize's --capture evidence
    core: Any = None
    settings: Mapping[str, Any] = attrs.field(factory=dict)


class Policy:
    """A POLICY plugin. `requires` names the evidence it needs (from POLICY_EVIDENCE); the
    commands call `decide` only when that evidence exists and otherwise show NO VERDICT with what
    is missing. `commands` says which commands run it (POLICY_COMMANDS)."""

    name: str = ""
    description: str = ""
    requires: tuple[str, ...] = ()
    commands: tuple[str, ...] = ("gate", "report")

    def decide(self, request: PolicyRequest) -> Sequence[Verdict]:
        """Verdicts (tensorforge_measure.api.Verdict, policy=self.name) from the request's evidence."""
        raise NotImplementedError


@attrs.frozen
class ExportResult:
    """What a sink did with a capture: where it went, or why it did not."""

    sink: str
    ok: bool
    location: str | None = None  # e.g. an MLflow run URI
    error: str | None = None  # one line, shown to the user when ok is False


class CaptureSink:
    """Somewhere captures are sent after they are written (experiment trackers and the like).
    `export` must not raise for an unreachable or rejecting destination: it returns
    ExportResult(ok=False, error=...) and the capture on disk stays the record."""

    name: str = ""
    description: str = ""

    def export(
        self, capture: "Capture", capture_path: str, report_html: str | None, options: Mapping[str, str]
    ) -> ExportResult:
        """`capture` is the typed, verified capture (tensorforge_measure.capture.model.Capture);
        `capture_path` the file it was read from, which is the record to store."""
        raise NotImplementedError
