"""`tensorforge run`: predict, then (where a device is present) calibrate, measure, collect
telemetry, compare, and produce one capture document.

Without a device every section is still present: PREDICTED is filled and MEASURED,
CALIBRATED and DIAGNOSTIC say "unavailable" with the reason.
"""

import functools
import platform
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

import attrs

from tensorforge import __version__
from tensorforge.api import TensorForgeError, finite_in, one_line, predict, resolve
from tensorforge_measure.api import TelemetrySource, Unavailable
from tensorforge_measure.calibrate import store as calibration
from tensorforge_measure.capture.convert import converter
from tensorforge_measure.capture.model import Capture
from tensorforge_measure.capture.model import Unavailable as UnavailableSection
from tensorforge_measure.capture.sections.calibrated import Calibrated, Calibration
from tensorforge_measure.capture.sections.comparison import Comparison
from tensorforge_measure.capture.sections.diagnostic import Diagnostic, TelemetryWindow
from tensorforge_measure.capture.sections.measured import (
    FailedMeasurement,
    Measured,
    Measurement,
    MeasuringDevice,
    RankMeasurement,
    WorkloadMeasurement,
)
from tensorforge_measure.capture.sections.policy import PolicyRecord, RecordedBoundCheck
from tensorforge_measure.capture.sections.predicted import Predicted
from tensorforge_measure.capture.sections.provenance import HostRecord, PluginRecord, Provenance
from tensorforge_measure.capture.telemetry_window import window_from_source
from tensorforge_measure.compare.row import comparison_row, energy_floor_violations, violations
from tensorforge_measure.progress import Relay, advance, plan
from tensorforge_measure.run.workload_measurement import measure_phases

# What DIAGNOSTIC says of telemetry until the backend's telemetry source says its own.
CAVEAT = TelemetrySource.caveat


@attrs.frozen
class RunOptions:
    target: str
    specs: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    operating_point: str | None = None
    backend: str | None = None  # None: the backend that claims the target, else the fallback backend
    device_index: int = 0
    recalibrate: bool = False
    telemetry: bool = True
    # Finite and in range, or refused: a NaN telemetry window never ended (elapsed < NaN).
    # 0.3 s: the sustained window follows >= 0.5 s of continuous, steady load (steady detection
    # and the timed windows), so 6 samples at 50 ms show its clock and clock-event reasons; at
    # 0.5 s the ten workloads spent 2 s more on it (docs/measurement.md, "Run time")
    telemetry_s: float = attrs.field(default=0.3, validator=finite_in(0))
    budget_s: float = attrs.field(default=2.0, validator=finite_in(0, low_open=True))
    # Idle seconds after the calibration probes and before each workload's timing. Why: right
    # after ~2 s of probe matmuls an H200 timed a 4096^3 bf16 GEMM at 200 us for its whole
    # window, against 177 us when measured first (power-management state left by the probes).
    cooldown_s: float = attrs.field(default=2.0, validator=finite_in(0))
    rest_s: float = attrs.field(default=0.2, validator=finite_in(0))
    # Measurement modes (backends with phases, tensorforge_measure.measure.phases): CUDA-graph replay,
    # the sustained regime and the per-operator trace window.
    graph: bool = True
    sustained: bool = True
    trace: bool = True
    trace_iterations: int = 5
    # The energy window per workload (docs/energy.md): the device's energy counter, edge to edge,
    # around >= energy_s of back-to-back executions, after the latency timings.
    energy: bool = True
    energy_s: float = attrs.field(default=0.4, validator=finite_in(0, low_open=True))
    # ... and spanning >= energy_updates of the counter's updates: one sample of J per execution
    # each, what the energy gate compares (its default --min-samples: 10); 0: energy_s alone
    energy_updates: int = attrs.field(
        default=10, validator=attrs.validators.and_(attrs.validators.instance_of(int), attrs.validators.ge(0))
    )
    command: tuple[str, ...] = ()


class Run:
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

    def say(self, message: str) -> None:
        self.progress(f"[{time.perf_counter() - self.t0:6.1f}s] {message}")

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
        sources = self.ops.for_backend("telemetry", backend.name)
        self.caveat = getattr(sources[0], "caveat", CAVEAT) if sources else CAVEAT
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

    # -- steps -----------------------------------------------------------------------------
    def _provenance(self) -> Provenance:
        reports = self.core.all_reports()
        return Provenance(
            tensorforge_version=__version__,
            plugins=tuple(
                PluginRecord(name=r.name, side=r.side, distribution=r.distribution, version=r.version, error=r.error)
                for r in reports
            ),
            host=HostRecord(
                hostname=socket.gethostname(), platform=platform.platform(), python=platform.python_version()
            ),
            command=tuple(self.opts.command) or tuple(sys.argv),
            started_at=calibration.now(),
        )

    def _finish(self) -> None:
        assert self.provenance is not None  # set before anything is measured
        self.provenance = attrs.evolve(
            self.provenance, finished_at=calibration.now(), duration_s=round(time.perf_counter() - self.t0, 3)
        )

    def _open(self):
        opts = self.opts
        reason = None
        backend = self.ops.backend(opts.backend)  # an unknown name is the user's error: exit 2
        try:
            # a backend for systems of several devices opens for the target (how many, which kind)
            session = (
                backend.open_for(self.target, opts.device_index)
                if hasattr(backend, "open_for")
                else backend.open(opts.device_index)
            )
        except Unavailable as exc:
            reason = str(exc)
        except Exception as exc:  # a broken backend plugin must not stop the prediction
            reason = f"backend {opts.backend!r} failed to open: {one_line(exc)}"
        if reason is not None:
            self.say(f"no measurement: {reason}")
            self.measured = UnavailableSection(label="MEASURED", reason=reason)
            self.calibrated = UnavailableSection(label="CALIBRATED", reason=reason)
            self.diagnostic = UnavailableSection(label="DIAGNOSTIC", reason=reason, caveat=self.caveat)
            if self.predicted is not None:
                self.predicted = attrs.evolve(self.predicted, calibrated_note=f"no calibration: {reason}")
            return None
        self.say(f"device: {session.info.name} ({session.info.fingerprint})")
        self.measured = Measured(
            backend=str(opts.backend),
            device=MeasuringDevice(
                name=session.info.name, fingerprint=session.info.fingerprint, details=dict(session.info.details)
            ),
            workloads={},
        )
        return session

    def _calibrate(self, session) -> Calibration | None:
        opts = self.opts
        stored = None if opts.recalibrate else calibration.load(session.info.fingerprint)
        if stored is not None:
            self.say(f"reusing calibration of {stored.measured_at} for {session.info.fingerprint}")
            cal, reused = stored, True
        else:
            probes = self.ops.for_backend("probes", opts.backend)
            if not probes:
                self.calibrated = UnavailableSection(
                    label="CALIBRATED", reason=f"no calibration probes installed for {opts.backend}"
                )
                return None
            cal = calibration.run_probes(
                session, probes, Relay(self.say, self.progress), before_sustained=self._start_fit(session)
            )
            reused = False
            calibration.save(cal)
            self.say(
                "calibrated: " + ", ".join(f"{name} {probe.duration_s:.1f} s" for name, probe in cal.probes.items())
            )
            # The device rests cooldown_s before the first workload; the host's work in between
            # (the estimate's fit, the calibrated predictions) counts toward it (_cool_down).
            if opts.cooldown_s:
                self.cool_until = time.perf_counter() + opts.cooldown_s
        self.calibrated = Calibrated(
            **attrs.asdict(cal, recurse=False),
            reused=reused,
            stored_at=str(calibration.store_path(session.info.fingerprint)),
        )
        return cal

    def _start_fit(self, session):
        """The callback run_probes calls before the first sustained probe: it starts the
        estimate's fit on the burst probes' results in a process of its own (background_fit.py),
        so the host fits while the device runs the sustained probes."""

        def start(provisional) -> None:
            from tensorforge_measure.calibrate.background_fit import BackgroundFit

            try:
                device_target = self._device_target(self.target, session.info.name)
                point = self.opts.operating_point if device_target is self.target else None
                self.background_fit = BackgroundFit.start(
                    provisional, device_target, calibration.to_ceilings(provisional), point
                )
            except Exception as exc:  # no process to be had: the fit runs inline after the probes
                self.say(f"  estimate fit not started beside the probes ({one_line(exc)}): fitting after them")
            if self.background_fit is not None:
                self.say("fitting the estimate's coefficients to the probe sweeps, beside the sustained probes")

        return start

    def _background_fit_result(self, cal, device_target, point):
        """The background fit's result when it is the fit this calibration asks for, else None."""
        fit, self.background_fit = self.background_fit, None
        if fit is None:
            return None
        if not fit.matches(cal, device_target, point):
            fit.cancel()
            return None
        waited = time.perf_counter()
        fitted, why = fit.result()
        waited = time.perf_counter() - waited
        if waited >= 0.1:  # host time the device idles through (it counts toward the cool-down)
            self.say(f"  waited {waited:.1f} s for the background fit to finish")
        if why:
            self.say(f"  background fit failed ({why}): fitting here")
        return fitted

    def _cool_down(self) -> None:
        """The rest after fresh calibration probes (RunOptions.cooldown_s), less the host time
        already spent since they ended: the device idles either way, and the fit of the
        estimate (~6 s on an H200's host) no longer adds to it."""
        if self.cool_until is None:
            return
        left = self.cool_until - time.perf_counter()
        self.cool_until = None
        self.say(f"cooling down {max(left, 0.0):.1f} s more after the probes ({self.opts.cooldown_s:g} s in all)")
        if left > 0:
            time.sleep(left)

    def _predict(self, workloads, target, mappings, point, ceilings, estimate):
        """The bound with the estimate beside it; an estimate that fails costs the estimate (said
        in the notes), never the bound or the run."""
        try:
            return predict(workloads, target, mappings, point, ceilings, estimate=estimate)
        except TensorForgeError:
            raise
        except Exception as exc:
            self.say(f"estimate failed, bound only: {one_line(exc)}")
            pred = predict(workloads, target, mappings, point, ceilings, estimate=False)
            return attrs.evolve(pred, notes=pred.notes + (f"no estimate: {one_line(exc)}",))

    def _estimate_coefficients(self, cal, device_target, ceilings, point):
        """The estimate's coefficients calibrated on this device: fitted from the calibration's
        estimate-terms probe points once, then stored with the calibration."""
        from tensorforge_measure.calibrate.estimate_fit import calibrated_coefficients, fit_estimate

        if (cal.estimate or {}).get("target") != device_target.name:
            fitted = self._background_fit_result(cal, device_target, point)
            if fitted is None:
                self.say("fitting the estimate's coefficients to the probe sweeps")
                fitted = fit_estimate(cal, self.core, device_target, ceilings, point)
            if fitted is not None:
                if "error" in fitted:
                    self.say(f"  estimate fit failed: {fitted['error']}")
                cal = attrs.evolve(cal, estimate=fitted)
                calibration.save(cal)
                if isinstance(self.calibrated, Calibrated):
                    self.calibrated = attrs.evolve(self.calibrated, estimate=fitted)
        try:
            return calibrated_coefficients(cal, device_target.name)
        except Exception as exc:
            self.say(f"  stored estimate coefficients unusable: {one_line(exc)}")
            return None

    def _device_target(self, target, device_name: str):
        if target.matches_device(device_name):
            return target
        for name in self.core.names("targets"):
            candidate = self.core.target(name)
            if candidate.matches_device(device_name):
                return candidate
        return None

    @staticmethod
    def _calibrated_note(ceilings, device_target, device_name: str) -> str | None:
        if ceilings is None:
            return "calibration did not produce compute and memory ceilings"
        if device_target is None:
            return f"no installed target describes the measuring device {device_name!r}"
        return None

    def _energy_prediction(self, cal, calibrated_pred, device_target) -> None:
        """PREDICTED energy from the calibration's energy coefficients and the calibrated bound."""
        from tensorforge_measure.run.energy_prediction import energy_prediction

        prediction, note = energy_prediction(cal, calibrated_pred, device_target, self.sustained_pred)
        if self.predicted is not None:
            self.predicted = attrs.evolve(self.predicted, energy=prediction, energy_note=note)

    def _open_power(self, session):
        """The energy counter for the energy windows, or why there is none: the session's own
        (`session.energy_counter()`: NVML's on a CUDA device, RAPL where the host CPU is the
        device measured), whatever the backend is called."""
        if not self.opts.energy:
            return None, "energy windows disabled (--no-energy)"
        own = getattr(session, "energy_counter", None)
        if own is None:
            return None, f"the {self.opts.backend} backend's sessions have no energy counter"
        try:
            return own(), None
        except Unavailable as exc:
            return None, str(exc)

    def _open_host_energy(self):
        """The host CPU's counter, read beside the device's where the backend declares
        `host_energy_beside` (the first source the host-energy hook registered), or why not."""
        if not (self.opts.energy and getattr(self.backend, "host_energy_beside", False)):
            return None, None
        sources = self.ops.values("host_energy")
        if not sources:
            return None, "no host energy counter installed (tensorforge_measure_register_host_energy)"
        try:
            return sources[0].open(), None
        except Unavailable as exc:
            return None, str(exc)
        except Exception as exc:  # a broken host-energy plugin costs the host's joules, not the run
            return None, f"host energy source {sources[0].name!r} failed: {one_line(exc)}"

    def _measure(self, session, workloads, analytical) -> dict[str, WorkloadMeasurement]:
        self.power, self.power_reason = self._open_power(session)
        self.rapl, self.rapl_reason = self._open_host_energy()
        try:
            return self._measure_all(session, workloads, analytical)
        finally:
            if self.power is not None and hasattr(self.power, "close"):
                self.power.close()

    def _measure_all(self, session, workloads, analytical) -> dict[str, WorkloadMeasurement]:
        opts = self.opts
        sources = self.ops.for_backend("telemetry", opts.backend) if opts.telemetry else []
        results: dict[str, WorkloadMeasurement] = {}
        windows: dict[str, TelemetryWindow] = {}
        burst_windows: dict[str, TelemetryWindow] = {}
        plan(self.progress, len(workloads), "workloads")
        self._cool_down()
        for i, (workload, _kind) in enumerate(workloads, 1):
            self.say(f"measuring {workload.name} ({i}/{len(workloads)})")
            predicted = analytical.workload(workload.name)
            row = results[workload.name] = self._measure_one(
                session, workload, predicted, sources, windows, burst_windows
            )
            # kept current, so an interruption writes every workload measured so far
            self.measured = attrs.evolve(self.measured, workloads=dict(results))
            if isinstance(row, Measurement):
                others = "; ".join(f"{t.regime} {t.mode} {t.stats.p50 * 1e3:.4g} ms" for t in row.modes or ())
                self.say(
                    f"  p50 {row.stats.p50 * 1e3:.4g} ms ({row.regime or 'burst'} {row.mode or 'eager'}) "
                    f"over {row.stats.n} samples ({row.stop_reason})" + (f"; {others}" if others else "")
                )
            else:
                self.say(f"  failed: {row.reason}")
            advance(self.progress)
        if not opts.telemetry:
            self.diagnostic = UnavailableSection(
                label="DIAGNOSTIC", reason="telemetry disabled (--no-telemetry)", caveat=self.caveat
            )
        elif not sources:
            self.diagnostic = UnavailableSection(
                label="DIAGNOSTIC", caveat=self.caveat, reason=f"no telemetry source installed for {opts.backend}"
            )
        else:
            available = any(w.available for w in windows.values())
            reasons = sorted({w.reason or "" for w in windows.values()} - {""})
            self.diagnostic = Diagnostic(
                available=available,
                reason=None if available else ("; ".join(reasons) or "no window collected"),
                source=sources[0].name,
                caveat=self.caveat,
                window=(
                    "a separate execution window after latency timing, per workload and regime: 'windows' "
                    "after the sustained timings (continuous load; on a one-regime device, after its "
                    "timings), 'burst_windows' after the burst ones (<= 5 ms stretches at 50% duty)"
                ),
                windows=windows,
                burst_windows=burst_windows or None,
            )
        return results

    def _plan(self):
        from tensorforge_measure.measure.phases import PhasePlan

        opts = self.opts
        return PhasePlan(
            budget_s=opts.budget_s,
            graph_budget_s=min(1.0, opts.budget_s),
            graph=opts.graph,
            trace=opts.trace,
            trace_iterations=opts.trace_iterations,
            sustained=opts.sustained,
        )

    def _measure_one(self, session, workload, predicted, sources, windows, burst_windows) -> WorkloadMeasurement:
        opts = self.opts
        math_mode = getattr(workload.params, "math_mode", None) or "fp32"
        builder = self.ops.builder(workload.kind, opts.backend)
        if builder is None:
            return FailedMeasurement(
                math_mode=math_mode,
                reason=f"no builder for workload kind {workload.kind!r} on backend {opts.backend!r}",
            )
        seconds: dict[str, float] = {}  # wall seconds per step, for the run log
        t0 = time.perf_counter()
        try:
            with session.prepared(builder, workload.params, math_mode) as prepared:
                seconds["prepare"] = time.perf_counter() - t0
                rest = time.perf_counter()
                self._rest()
                seconds["rest"] = time.perf_counter() - rest
                if hasattr(session, "phases"):
                    fields, by_regime = measure_phases(
                        session, prepared, self._plan(), sources[0] if sources else None, opts.telemetry_s, seconds
                    )
                    if "burst" in by_regime:
                        burst_windows[workload.name] = by_regime.pop("burst")
                    if by_regime:
                        windows[workload.name] = next(iter(by_regime.values()))
                else:  # a backend without phases: one burst eager timing, as before phases existed
                    timed = session.time(prepared.fn, opts.budget_s)
                    fields = {
                        "samples_s": tuple(timed.samples_s),
                        "stats": timed.stats,
                        "stop_reason": timed.stop_reason,
                        "warmup_iters": timed.warmup_iters,
                        "flush_bytes": timed.flush_bytes,
                    }
                    if sources:
                        windows[workload.name] = self._window(sources[0], session, prepared.fn)
                t1 = time.perf_counter()
                energy = self._energy_window(session, prepared, fields, workload)
                seconds["energy"] = time.perf_counter() - t1
                self.load_ended = time.perf_counter()
            self._say_steps(seconds, time.perf_counter() - t0)
        except KeyboardInterrupt:
            raise
        except Unavailable as exc:
            self.load_ended = time.perf_counter()
            return FailedMeasurement(math_mode=math_mode, reason=str(exc))
        except Exception as exc:  # OOM, unsupported dtype, a builder bug: recorded, suite goes on
            self.load_ended = time.perf_counter()
            reason = one_line(exc)
            if "out of memory" in reason.lower():
                reason = "CUDA out of memory: " + reason
            return FailedMeasurement(math_mode=math_mode, reason=reason)
        if energy is not None:
            fields["energy"] = energy
        p50 = fields["stats"].p50
        # what a backend measured beyond the samples (torch-distributed: every rank's samples, the
        # result check, the per-operator window), checked against the capture's classes
        ranks = (
            converter.structure(session.measurement_details(), RankMeasurement)
            if hasattr(session, "measurement_details")
            else None
        )
        return Measurement(
            ranks=ranks,
            math_mode=math_mode,
            **fields,
            peak_memory_bytes=prepared.peak_memory_bytes,
            peak_memory_method=getattr(prepared, "peak_memory_method", "") or None,
            framework_flags=dict(prepared.framework_flags),
            throughput_flops_per_s=predicted.flops / p50 if p50 > 0 else None,
            throughput_bytes_per_s=predicted.compulsory_bytes / p50 if p50 > 0 else None,
        )

    def _rest(self) -> None:
        """Let the previous workload's continuous load (its sustained, telemetry and energy
        windows) fade before the burst timings: rest_s of idle device since that load ended. The
        host's work in between (freeing the previous workload, building this one and its one
        untimed call) counts toward it, as toward the cool-down after the probes: the device is
        idle or nearly so either way, and the host's 0.1-0.2 s per workload no longer add to it."""
        left = self.opts.rest_s
        if self.load_ended is not None:
            left -= time.perf_counter() - self.load_ended
        if left > 0:
            time.sleep(left)

    def _say_steps(self, seconds: dict[str, float], whole_s: float) -> None:
        """Where one workload's wall time went (docs/measurement.md, "Run time")."""
        if seconds:
            steps = ", ".join(f"{step} {took:.2f}" for step, took in seconds.items())
            self.say(f"  took {whole_s:.2f} s: {steps}")

    def _energy_window(self, session, prepared, fields, workload):
        """MEASURED energy: a window of its own after the timings and telemetry (docs/energy.md);
        None where no counter is open and energy windows are off; its failure costs the window."""
        from tensorforge_measure.energy.execution import energy_window
        from tensorforge_measure.energy.measure import measure_energy, unavailable

        if not self.opts.energy:
            return None
        counter = self.power
        if counter is None:
            return unavailable(str(self.power_reason), self.opts.energy_s)
        # the host CPU beside the device: its counter at the same edges, where the backend asks
        beside = bool(getattr(self.backend, "host_energy_beside", False))
        sustained = [t.stats.p50 for t in fields.get("modes") or () if t.regime == "sustained" and t.mode == "eager"]
        per_call = sustained[0] if sustained else fields["stats"].p50
        tokens = self._tokens(workload)
        queue_event = getattr(session, "queue_event", None)
        measure = functools.partial(
            measure_energy,
            synchronize=getattr(session, "synchronize", lambda: None),
            power=counter,
            min_s=self.opts.energy_s,
            min_updates=self.opts.energy_updates or None,
            tokens=tokens,
            # on a device with events the executions stay queued while the host reads the counter
            event=queue_event if callable(queue_event) else None,
            rapl=self.rapl if beside else None,
            rapl_reason=self.rapl_reason if beside else None,
        )
        # a host-bound workload's window replays a device graph of it, at the device's pace, where
        # the session captures graphs (energy/execution.py)
        replays = getattr(session, "graph_replays", None)
        replays = replays if callable(replays) else None
        try:
            m = energy_window(
                prepared.fn,
                fields,
                lambda fn, per, **kw: measure(fn, per_call_s=per, **kw),
                replays,
                per_call,
                # the host's launch time decides too where a graph is possible (graph_window.py)
                synchronize=getattr(session, "synchronize", None) if replays is not None else None,
            )
            if m.execution == "graph" or "graph failed" in (m.execution_reason or ""):
                self.say(f"  energy window: {m.execution} ({m.execution_reason})")
            return m
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            return unavailable(f"energy window failed: {one_line(exc)}", self.opts.energy_s)

    def _tokens(self, workload) -> int | None:
        """Tokens one execution of `workload` processes, as its kind answers (WorkloadKind.tokens);
        None where the kind counts none or its answer fails (the joules per token go unsaid)."""
        try:
            tokens = self.core.workload_kind(workload.kind).tokens(workload.params)
        except Exception:
            return None
        return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else None

    def _window(self, source, session, run_once) -> TelemetryWindow:
        try:
            return window_from_source(source.collect(session, run_once, self.opts.telemetry_s))
        except Exception as exc:  # a telemetry source's failure costs its window, never the run
            return TelemetryWindow(available=False, reason=one_line(exc))

    def _sustained_bound(self, cal, workloads, device_target, mappings, same_device, note, coefficients=None) -> None:
        """The calibrated bound of the sustained regime, from the sustained probes' ceilings, and
        beside it the burst-calibrated estimate carried onto those ceilings (sustained_estimate)."""
        if note is not None or cal is None:
            self.sustained_note = note or "no calibration"
        elif "sustained" not in calibration.regimes(cal):
            self.sustained_note = "the calibration has no sustained-regime ceilings (recalibrate)"
        else:
            ceilings = calibration.to_ceilings(cal, "sustained")
            point = self.opts.operating_point if same_device else None
            estimate = sustained_estimate(coefficients) if coefficients is not None else True
            self.sustained_pred = self._predict(workloads, device_target, mappings, point, ceilings, estimate)
            self.sustained_note = None
        if self.predicted is not None and "sustained" in (calibration.regimes(cal) if cal else []):
            self.predicted = attrs.evolve(
                self.predicted, calibrated_sustained=self.sustained_pred, calibrated_sustained_note=self.sustained_note
            )

    def _compare(self, analytical, calibrated_pred, measurements, same_device, device_target, session) -> None:
        target = self.header["target"]
        if session is None:
            device_note = "no measuring device"
        elif same_device:
            device_note = None
        else:
            device_note = (
                f"measured on {session.info.name}, which is not target {target}: "
                "APE is computed only on the predicted device"
            )
        cal_note = (self.predicted.calibrated_note if self.predicted else None) or "no calibrated bound"
        rows = {}
        windows = self.diagnostic.windows if isinstance(self.diagnostic, Diagnostic) else {}
        energy = self.predicted.energy if self.predicted else None
        for w in analytical.workloads:
            cal = calibrated_pred.workload(w.name) if calibrated_pred else None
            sustained = self.sustained_pred.workload(w.name) if self.sustained_pred else None
            rows[w.name] = comparison_row(
                w,
                cal,
                sustained,
                measurements.get(w.name),
                same_device,
                device_note,
                cal_note,
                self.sustained_note,
                windows.get(w.name),
                energy.workloads.get(w.name) if energy else None,
            )
        self.comparison = Comparison(
            same_device=same_device,
            device_note=device_note,
            calibrated_target=device_target.name if device_target else None,
            workloads=rows,
            # every regime and mode against its own regime's bound, and every operator against its own
            **dict(zip(("bound_violations", "regime_bound_violations", "operator_bound_violations"), violations(rows))),
            energy_floor_violations=energy_floor_violations(rows),
        )
        self.policy = PolicyRecord(
            bound_checks={
                n: RecordedBoundCheck(
                    verdict=r.bound_check.verdict, evidence=("MEASURED p50", "CALIBRATED lower bound")
                )
                for n, r in rows.items()
            },
            note="bound checks only; regression and right-sizing verdicts come from policy commands reading captures",
        )


def sustained_estimate(coefficients):
    """The estimate of the sustained regime: the burst-calibrated coefficients on the sustained
    ceilings. Rates are stored as fractions of the ceilings in force, so compute and bandwidth
    terms scale by the calibrated sustained/burst ceiling ratio; fixed costs (launches, harness,
    prologues) stay as calibrated in burst. The basis says so: no probe ran in this regime."""
    return coefficients.relabel(
        coefficients.basis_kind,
        f"{coefficients.basis}; sustained regime: burst-calibrated coefficients on the sustained "
        "ceilings (rates scaled by the calibrated sustained/burst ceiling ratio, fixed costs as in "
        "burst; no estimate probe ran sustained)",
    )
