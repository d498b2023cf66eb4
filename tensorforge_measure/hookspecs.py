"""Ops hook specifications (pluggy project 'tensorforge_measure', entry-point group 'tensorforge_measure').

A new device, backend, probe or telemetry source installs as a separate package that
implements these. Workload plugins register their PyTorch builders here, from a module the
Core side never imports.
"""

from collections.abc import Callable
from typing import TypeAlias

import pluggy

from tensorforge_measure.api import (
    CalibrationProbe,
    CaptureSink,
    HostEnergySource,
    MeasurementBackend,
    Policy,
    TelemetrySource,
    WorkloadBuilder,
)

PROJECT = "tensorforge_measure"
ENTRY_POINT_GROUP = "tensorforge_measure"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

# The callbacks the registration hooks receive (typed as tox types its hooks, so mypy checks a
# plugin that annotates its implementation with them).
RegisterBackend: TypeAlias = Callable[[MeasurementBackend], None]
RegisterBuilder: TypeAlias = Callable[[WorkloadBuilder], None]
RegisterProbe: TypeAlias = Callable[[CalibrationProbe], None]
RegisterTelemetry: TypeAlias = Callable[[TelemetrySource], None]
RegisterSink: TypeAlias = Callable[[CaptureSink], None]
RegisterPolicy: TypeAlias = Callable[[Policy], None]
RegisterHostEnergy: TypeAlias = Callable[[HostEnergySource], None]


@hookspec
def tensorforge_measure_register_backends(register: RegisterBackend) -> None:
    """Register measurement backends.

    Call ``register(backend)`` with an instance of
    :class:`tensorforge_measure.api.MeasurementBackend` (unique ``name``, e.g. 'torch-cuda').
    Its ``open(device_index)`` returns a session on a real device or raises
    :class:`tensorforge_measure.api.Unavailable` with the reason. Optional attributes:
    ``framework`` (builders of that framework run on it, e.g. 'torch'), ``targets`` (target
    names it measures natively, so ``run --target`` picks it without ``--backend``) and
    ``default_suite`` (workload specs ``run`` measures when none are named), ``fallback`` (the
    backend for a target no backend claims), ``probe_plan`` and ``probe_item_budget_s`` (what
    its estimate-terms probe sweeps) and ``host_energy_beside`` (the host CPU's counter is read
    beside its device's). What the measuring side needs of an open device it asks of the session
    by name (:class:`tensorforge_measure.api.Session`: ``energy_counter()``, ``queue_event()``,
    ``graph_replays(fn, calls)`` ...), never by the backend's name: attributes of what the plugin
    registers rather than hooks of their own, because they belong to one backend or one open
    device and are checked where it is registered. Return nothing.
    """


@hookspec
def tensorforge_measure_register_builders(register: RegisterBuilder) -> None:
    """Register workload builders: how a workload kind runs on a backend.

    Call ``register(builder)`` with a :class:`tensorforge_measure.api.WorkloadBuilder` whose
    ``kind`` names a Core workload kind (e.g. 'gemm') and either ``backend`` names one backend
    or ``framework`` a family of them (e.g. 'torch': every backend whose ``framework`` is
    'torch'; a builder for the backend by name wins over the framework's). Its
    ``build(params, device)`` allocates random inputs (never zeros) on ``device`` and returns a
    zero-argument callable that executes the workload once, with each Core operator's code
    inside ``tensorforge_measure.measure.op_ranges.operator_range(name)`` (the operator's name in
    the Core's decomposition) so the trace window can attribute kernels to it. Return nothing.
    """


@hookspec
def tensorforge_measure_register_probes(register: RegisterProbe) -> None:
    """Register calibration probes (CALIBRATED ceilings).

    Call ``register(probe)`` with a :class:`tensorforge_measure.api.CalibrationProbe` (unique
    ``name``, the ``backend`` it runs on); ``run(session)`` returns a
    :class:`tensorforge_measure.api.ProbeResult` with compute ceilings per math mode, memory-copy
    bandwidth and/or launch floor, named floors, the method used and the ``regime`` it ran in
    ('burst', 'sustained' or 'single'; probes whose class says 'sustained' run last).
    Return nothing.
    """


@hookspec
def tensorforge_measure_register_telemetry(register: RegisterTelemetry) -> None:
    """Register telemetry sources (DIAGNOSTIC, never used for a verdict).

    Call ``register(source)`` with a :class:`tensorforge_measure.api.TelemetrySource`;
    ``collect(session, run_once, duration_s)`` runs the workload in its own window while
    sampling, and returns a
    :class:`tensorforge_measure.capture.sections.diagnostic.TelemetryWindow` (``available``,
    ``reason``, a one-line ``headline``, ``clock_event_fractions`` where the device reports
    clock-event reasons, the source's own record in ``data``), or a JSON-ready mapping with
    ``available``, ``reason`` when false, and optionally ``headline``, which the runner wraps
    by the rule in ``tensorforge_measure.capture.telemetry_window``. Return nothing.
    """


@hookspec
def tensorforge_measure_register_sinks(register: RegisterSink) -> None:
    """Register capture sinks (where captures go after they are written, e.g. MLflow).

    Call ``register(sink)`` with a :class:`tensorforge_measure.api.CaptureSink` (unique ``name``).
    ``tensorforge run --export NAME`` and ``tensorforge export CAPTURE --to NAME`` call its
    ``export(capture, capture_path, report_html, options)`` with the typed, verified capture
    (:class:`tensorforge_measure.capture.model.Capture`), which returns an
    :class:`tensorforge_measure.api.ExportResult` and never raises for an unreachable destination.
    Return nothing.
    """


@hookspec
def tensorforge_measure_register_policies(register: RegisterPolicy) -> None:
    """Register policies (POLICY verdicts such as a regression gate or right-sizing).

    Call ``register(policy)`` with a :class:`tensorforge_measure.api.Policy` (unique ``name``,
    ``description``): ``commands`` says which commands run it (``gate``, ``report``,
    ``rightsize``), ``requires`` the evidence it needs (``candidate``, ``baseline``,
    ``captures``, and the labels ``MEASURED``, ``CALIBRATED``, ``DIAGNOSTIC`` that must hold
    evidence). ``decide(request)`` gets a :class:`tensorforge_measure.api.PolicyRequest` (verified,
    typed captures) and returns :class:`tensorforge_measure.api.Verdict` objects, each naming its
    evidence, or "no verdict: <what is missing>". It is asked only when its required evidence
    is present; one that raises costs one warning line. The regression gate and right-sizing
    are registered through this hook too. Return nothing.
    """


@hookspec
def tensorforge_measure_register_host_energy(register: RegisterHostEnergy) -> None:
    """Register where the host CPU's energy counter comes from (e.g. RAPL on Linux).

    Call ``register(source)`` with a :class:`tensorforge_measure.api.HostEnergySource` (unique
    ``name``); its ``open()`` returns a :class:`tensorforge_measure.api.HostEnergyCounter` or raises
    :class:`tensorforge_measure.api.Unavailable` with the reason. ``run`` opens the first one
    installed and reads it at the edges of the energy windows of a backend that declares
    ``host_energy_beside`` (a GPU's: the host's joules beside the device's). A hook of its own,
    not a backend attribute: the host's counter belongs to the host, whichever device is measured,
    so the plugin that knows the host answers it. Return nothing.
    """
