"""Measuring in `tensorforge run`: each workload built, rested, timed in its phases, with its
telemetry window, then its energy window (energy_window.py); DIAGNOSTIC from the windows."""

import time

import attrs

from tensorforge.api import one_line
from tensorforge_measure.api import Unavailable
from tensorforge_measure.capture.convert import converter
from tensorforge_measure.capture.model import Unavailable as UnavailableSection
from tensorforge_measure.capture.sections.diagnostic import Diagnostic, TelemetryWindow
from tensorforge_measure.capture.sections.measured import (
    FailedMeasurement,
    Measurement,
    RankMeasurement,
    WorkloadMeasurement,
)
from tensorforge_measure.capture.telemetry_window import window_from_source
from tensorforge_measure.progress import advance, plan
from tensorforge_measure.run.calibrate import Calibrating
from tensorforge_measure.run.energy_window import EnergyWindows
from tensorforge_measure.run.workload_measurement import measure_phases


class Measuring(Calibrating, EnergyWindows):
    """The run's measurements, workload by workload."""

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
        source = self.ops.one_for("telemetry", opts.backend) if opts.telemetry else None
        sources = [source] if source is not None else []
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

    def _window(self, source, session, run_once) -> TelemetryWindow:
        try:
            return window_from_source(source.collect(session, run_once, self.opts.telemetry_s))
        except Exception as exc:  # a telemetry source's failure costs its window, never the run
            return TelemetryWindow(available=False, reason=one_line(exc))
