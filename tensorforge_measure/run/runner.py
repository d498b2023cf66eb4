"""`tensorforge run`: predict, then (where a device is present) calibrate, measure, collect
telemetry, compare, and produce one capture document.

Without a device every section is still present: PREDICTED is filled and MEASURED,
CALIBRATED and DIAGNOSTIC say "unavailable" with the reason.

The steps, one module each: plan.py, calibrate.py, measure.py, energy_window.py, finish.py;
the state they share: state.py.
"""

import time
from collections.abc import Callable
from typing import Any

import attrs

from tensorforge.api import resolve
from tensorforge_measure.api import TelemetrySource
from tensorforge_measure.calibrate import store as calibration
from tensorforge_measure.capture.model import Capture
from tensorforge_measure.capture.model import Unavailable as UnavailableSection
from tensorforge_measure.capture.sections.comparison import Comparison
from tensorforge_measure.capture.sections.measured import WorkloadMeasurement
from tensorforge_measure.capture.sections.policy import PolicyRecord
from tensorforge_measure.capture.sections.predicted import Predicted
from tensorforge_measure.capture.sections.provenance import Provenance
from tensorforge_measure.run.finish import Finishing
from tensorforge_measure.run.measure import Measuring
from tensorforge_measure.run.state import RunOptions

# What DIAGNOSTIC says of telemetry until the backend's telemetry source says its own.
CAVEAT = TelemetrySource.caveat


class Run(Measuring, Finishing):
    """One run's state, so an interruption can still write what was gathered: the sections
    are typed values replaced as the run proceeds, and `capture()` assembles them at any time."""

    def __init__(self, core, ops, opts: RunOptions, progress: Callable[[str], None]):
        self.core, self.ops, self.opts, self.progress = core, ops, opts, progress
        self.t0 = time.perf_counter()
        self.caveat = CAVEAT  # the telemetry source's own, once the backend is known
        self.started = False
        self.complete = False
        self.header: dict[str, Any] = {}
        self.provenance: Provenance | None = None
        self.predicted: Predicted | None = None
        self.measured: Any = UnavailableSection(label="MEASURED", reason="not started")
        self.calibrated: Any = UnavailableSection(label="CALIBRATED", reason="not started")
        self.diagnostic: Any = UnavailableSection(label="DIAGNOSTIC", reason="not started", caveat=CAVEAT)
        self.policy = PolicyRecord(bound_checks={})
        self.comparison: Comparison | None = None
        self.sustained_pred: Any = None  # the calibrated bound of the sustained regime
        self.sustained_note: str | None = "no device"
        self.backend: Any = None  # the registered backend, once chosen (what it declares)
        self.power: Any = None  # the device's energy counter while measuring (session.energy_counter())
        self.power_reason: str | None = None
        self.rapl: Any = None  # the host CPU's counter beside it (tensorforge_measure_register_host_energy)
        self.rapl_reason: str | None = None
        self.cool_until: float | None = None  # when the rest after fresh probes ends (_cool_down)
        self.background_fit: Any = None  # the estimate's fit beside the sustained probes, if started
        self.load_ended: float | None = None  # when the last workload's last window ended (_rest)

    def capture(self) -> Capture:
        """What the run has gathered so far, as a capture (complete once `execute` returned)."""
        if self.provenance is None or self.predicted is None:
            raise RuntimeError("nothing to capture before the prediction ran (Run.started is False)")
        return Capture(
            complete=self.complete,
            provenance=self.provenance,
            predicted=self.predicted,
            measured=self.measured,
            calibrated=self.calibrated,
            diagnostic=self.diagnostic,
            policy=self.policy,
            comparison=self.comparison,
            **self.header,
        )

    def execute(self) -> Capture:
        opts = self.opts
        target = self.core.target(opts.target)
        # Which backend measures, decided before the suite: a backend may bring a suite sized
        # for its device (the default suite's 8192^3 GEMMs would take minutes on a CPU).
        backend = self.ops.backend(opts.backend or self.ops.default_backend(target))
        self.opts = opts = attrs.evolve(opts, backend=backend.name)
        self.backend = backend
        self.target = target
        source = self.ops.one_for("telemetry", backend.name)  # a shipped source wins (host.py)
        self.caveat = getattr(source, "caveat", CAVEAT) if source is not None else CAVEAT
        self.diagnostic = attrs.evolve(self.diagnostic, caveat=self.caveat)
        # a backend may size its suite for the target (torch-distributed: for N devices)
        own_suite = (
            backend.default_suite_for(target) if hasattr(backend, "default_suite_for") else backend.default_suite
        )
        if not (opts.specs or opts.suites) and own_suite:
            self.say(f"no workloads named: the {backend.name} backend's default suite")
            workloads = resolve(self.core, tuple(own_suite))
        else:
            workloads = resolve(self.core, opts.specs, opts.suites)
        mappings = self.core.mappings()
        self.say(f"predicting {len(workloads)} workloads on {target.name}")
        analytical = self._predict(workloads, target, mappings, opts.operating_point, None, True)
        # the whole description, so a capture of a target given as a file stays reproducible
        self.header = {
            "target": target.name,
            "operating_point": analytical.operating_point,
            "target_description": target,
        }
        self.provenance = self._provenance()
        self.predicted = Predicted(
            analytical=analytical, calibrated=None, calibrated_target=None, calibrated_note="no device"
        )
        self.started = True
        session = self._open()
        calibrated_pred, device_target, same_device = None, None, False
        measurements: dict[str, WorkloadMeasurement] = {}
        if session is not None:
            try:
                cal = self._calibrate(session)
                device_target = self._device_target(target, session.info.name)
                same_device = device_target is target
                ceilings = calibration.to_ceilings(cal) if cal else None
                note = self._calibrated_note(ceilings, device_target, session.info.name)
                coefficients = None
                if ceilings is not None and device_target is not None:
                    point = opts.operating_point if same_device else None
                    coefficients = self._estimate_coefficients(cal, device_target, ceilings, point)
                    calibrated_pred = self._predict(
                        workloads, device_target, mappings, point, ceilings, coefficients or True
                    )
                    note = None
                self.predicted = attrs.evolve(
                    self.predicted,
                    calibrated=calibrated_pred,
                    calibrated_target=device_target.name if device_target else None,
                    calibrated_note=note,
                )
                self._sustained_bound(cal, workloads, device_target, mappings, same_device, note, coefficients)
                self._energy_prediction(cal, calibrated_pred, device_target)
                measurements = self._measure(session, workloads, analytical)
            finally:
                if self.background_fit is not None:  # started, never asked for (no calibrated bound)
                    self.background_fit.cancel()
                session.close()
        self._compare(analytical, calibrated_pred, measurements, same_device, device_target, session)
        self.complete = True
        self._finish()
        return self.capture()
