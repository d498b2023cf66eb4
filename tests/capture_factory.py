"""Captures for tests, made by the real runner with a synthetic backend, in-process.

Why: tests of decisions (gate, verify, bound checks, evidence quality) that edited one
committed GPU capture depended on its figures and broke whenever a GPU session regenerated it.
Here every figure a test relies on is one the test chose (samples per workload, device,
framework flags, telemetry), and everything derived from them is what `run` derives, so the
capture verifies exactly as a real one does.

    cap = make_capture({"gemm_tiny": samples(5e-6)}, home=tmp_path)      # a sealed, signed Capture
    evidence = Evidence("a.json", cap)                                      # for policy code
    path = write(tmp_path / "a.json", cap)                                  # for commands
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from tensorforge.files.serialize import canonical_json
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve_spec
from tensorforge_measure.api import (
    CalibrationProbe,
    DeviceInfo,
    MeasurementBackend,
    Prepared,
    ProbeResult,
    Session,
    TelemetrySource,
    WorkloadBuilder,
)
from tensorforge_measure.capture.convert import to_document
from tensorforge_measure.capture.document import seal
from tensorforge_measure.hookspecs import hookimpl
from tensorforge_measure.host import OpsHost
from tensorforge_measure.measure.stats import summarize
from tensorforge_measure.measure.timing import TimedSamples
from tensorforge_measure.run.runner import Run, RunOptions

CEILINGS = {
    "compute": {"bf16": 600e12, "fp32": 50e12, "tf32": 300e12, "fp16": 600e12},
    "dram_bytes_per_s": 4.0e12,
    "launch_floor_s": 5e-6,
}
_CORE: list[PluginHost] = []


def core() -> PluginHost:
    if not _CORE:
        _CORE.append(PluginHost())
    return _CORE[0]


def samples(center: float, n: int = 25, spread: float = 0.001) -> tuple[float, ...]:
    """Deterministic samples around `center` (relative spread +-5 x `spread`)."""
    return tuple(center * (1 + spread * ((i * 7) % 11 - 5)) for i in range(n))


class SyntheticCounter:
    """An energy counter that counts the synthetic workload's executions: joules = the chosen
    J per execution x executions, updated every 5 executions (a counter with an update interval),
    so an energy window's J per execution is exactly the chosen one on any machine."""

    counter_source = "synthetic counter (executions x chosen J)"
    unit_j = 0.001
    instant_source = ""

    def __init__(self, session):
        self.session = session

    def joules(self):
        per = self.session.factory.energy.get(self.session.current)
        n = self.session.executions
        return None if per is None else per * (n - n % 5)

    def instant_w(self):
        return None

    def averaged_w(self):
        return None

    def enforced_limit_w(self):
        return 700.0


class _Session(Session):
    def __init__(self, factory: _Plugin):
        self.factory = factory
        self.info = DeviceInfo(
            backend="synthetic", name=factory.device_name, fingerprint=factory.fingerprint, details={}
        )
        self.current: Any = None
        self.executions = 0
        if factory.energy is not None:
            self.energy_counter = lambda: SyntheticCounter(self)

    def _call(self):
        self.executions += 1

    @contextlib.contextmanager
    def prepared(self, builder, params, math_mode):
        self.current = params
        yield Prepared(self._call, peak_memory_bytes=1, framework_flags=dict(self.factory.flags))

    def time(self, fn, budget_s):
        chosen = self.factory.by_params[self.current]
        return TimedSamples(chosen, summarize(chosen), "stable", 3, 0)

    def close(self):
        pass


class _Backend(MeasurementBackend):
    name = "synthetic"
    description = "samples chosen by the test"

    def __init__(self, factory):
        self.factory = factory

    def open(self, device_index=0):
        return _Session(self.factory)


class _Builder(WorkloadBuilder):
    backend = "synthetic"

    def __init__(self, kind):
        self.kind = kind

    def build(self, params, device):
        return lambda: None


class _Probe(CalibrationProbe):
    name = "synthetic-probe"
    backend = "synthetic"

    def __init__(self, energy=None):
        self.energy = energy

    def run(self, session):
        return ProbeResult(
            name=self.name,
            method="chosen ceilings",
            compute=dict(CEILINGS["compute"]),
            dram_bytes_per_s=CEILINGS["dram_bytes_per_s"],
            launch_floor_s=CEILINGS["launch_floor_s"],
            duration_s=0.1,
            details={"energy": ENERGY_CALIBRATION} if self.energy is not None else {},
        )


# The energy calibration a capture with `energy` carries: chosen coefficients (docs/energy.md).
ENERGY_COEFFICIENTS = {
    "static_w": 150.0,
    "static_w_low": 100.0,
    "idle_w": 100.0,
    "joules_per_flop": {"bf16": 6e-13, "fp16": 6e-13, "tf32": 1.2e-12},
    "joules_per_flop_low": {"bf16": 5e-13, "fp16": 5e-13, "tf32": 1e-12},
    "joules_per_dram_byte": 5e-11,
    "joules_per_dram_byte_low": 4e-11,
    "power_limit_w": 700.0,
    "power_limit_source": "chosen by the test",
    "source": "synthetic energy calibration",
}
ENERGY_CALIBRATION = {
    "method": "chosen coefficients",
    "coefficients": ENERGY_COEFFICIENTS,
    "error": None,
    "points": [],
    "standard_errors": {},
    "counter": None,
}


class _Telemetry(TelemetrySource):
    name = "synthetic-telemetry"
    backend = "synthetic"

    def __init__(self, factory):
        self.factory = factory

    def collect(self, session, run_once, duration_s):
        record = self.factory.windows.get(session.current)
        if record is None:
            return {"available": False, "reason": "no window chosen"}
        return {"available": True, **record}


class _Plugin:
    def __init__(self, by_params, windows, device_name, fingerprint, flags, calibrate=True, energy=None):
        self.by_params, self.windows, self.calibrate = by_params, windows, calibrate
        self.energy = energy
        self.device_name, self.fingerprint, self.flags = device_name, fingerprint, flags

    @hookimpl
    def tensorforge_measure_register_backends(self, register):
        register(_Backend(self))

    @hookimpl
    def tensorforge_measure_register_builders(self, register):
        for kind in ("gemm", "conv2d", "transformer"):
            register(_Builder(kind))

    @hookimpl
    def tensorforge_measure_register_probes(self, register):
        if self.calibrate:
            register(_Probe(self.energy))

    @hookimpl
    def tensorforge_measure_register_telemetry(self, register):
        register(_Telemetry(self))


def make_capture(
    measured: dict[str, tuple[float, ...]],
    *,
    home: Path,
    target: str = "h200",
    device_name: str = "NVIDIA H200",
    fingerprint: str = "synthetic-1",
    flags: dict | None = None,
    windows: dict[str, dict] | None = None,
    sign: bool = True,
    started_at: str | None = None,
    calibrate: bool = True,
    energy: dict[str, float] | None = None,
):
    """A sealed capture of `measured` (workload spec -> samples) on a synthetic device.
    `windows` (spec -> a telemetry record such as {"summary": {...}}) turns telemetry on;
    `energy` (spec -> joules per execution) the energy windows and the energy calibration."""
    host = core()
    by_params, window_by_params, energy_by_params = {}, {}, {}
    for spec, chosen in measured.items():
        params = resolve_spec(host, spec)[0].params
        by_params[params] = tuple(chosen)
        if energy and spec in energy:
            energy_by_params[params] = energy[spec]
        if windows and spec in windows:
            window_by_params[params] = windows[spec]
    plugin = _Plugin(
        by_params,
        window_by_params,
        device_name,
        fingerprint,
        flags or {"tf32": False},
        calibrate,
        energy_by_params if energy is not None else None,
    )
    ops = OpsHost(load_entry_points=False, extra_plugins=(("synthetic", plugin),))
    assert ops.broken() == [], ops.broken()
    saved = os.environ.get("TENSORFORGE_HOME")
    os.environ["TENSORFORGE_HOME"] = str(home)
    try:
        options = RunOptions(
            target=target,
            specs=tuple(measured),
            backend="synthetic",
            cooldown_s=0.0,
            rest_s=0.0,
            telemetry=windows is not None,
            telemetry_s=0.0,
            recalibrate=True,
            energy=energy is not None,
            energy_s=0.02,
        )
        capture = Run(host, ops, options, progress=lambda line: None).execute()
    finally:
        if saved is None:
            os.environ.pop("TENSORFORGE_HOME", None)
        else:
            os.environ["TENSORFORGE_HOME"] = saved
    if started_at is not None:
        import attrs

        capture = attrs.evolve(capture, provenance=attrs.evolve(capture.provenance, started_at=started_at))
    return seal(capture, home if sign else None)


def write(path: Path, capture) -> Path:
    path.write_text(canonical_json(to_document(capture)), encoding="utf-8")
    return path
