"""Calibrating in `tensorforge run`: the stored or fresh calibration, the estimate's coefficients
fitted to it (beside the sustained probes where it can), the cool-down after fresh probes, and the
calibrated predictions it gives (the sustained bound, PREDICTED energy)."""

import time

import attrs

from tensorforge.api import one_line
from tensorforge_measure.calibrate import store as calibration
from tensorforge_measure.calibrate.probe_evidence import weakness
from tensorforge_measure.capture.model import Unavailable as UnavailableSection
from tensorforge_measure.capture.sections.calibrated import Calibrated, Calibration
from tensorforge_measure.progress import Relay
from tensorforge_measure.run.plan import Planning


class Calibrating(Planning):
    """The run's calibration and what it calibrates."""

    def _calibrate(self, session) -> Calibration | None:
        opts = self.opts
        stored = None if opts.recalibrate else calibration.load(session.info.fingerprint)
        if stored is not None:
            weak = weakness(stored.evidence)
            self.say(
                f"reusing calibration of {stored.measured_at} for {session.info.fingerprint}"
                + (f": its evidence is insufficient ({weak}); --recalibrate measures it again" if weak else "")
            )
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
            weak = weakness(cal.evidence)
            self.say(
                "calibrated: "
                + ", ".join(f"{name} {probe.duration_s:.1f} s" for name, probe in cal.probes.items())
                + (f"; evidence insufficient, stored so ({weak})" if weak else "")
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

    def _energy_prediction(self, cal, calibrated_pred, device_target) -> None:
        """PREDICTED energy from the calibration's energy coefficients and the calibrated bound."""
        from tensorforge_measure.run.energy_prediction import energy_prediction

        prediction, note = energy_prediction(cal, calibrated_pred, device_target, self.sustained_pred)
        if self.predicted is not None:
            self.predicted = attrs.evolve(self.predicted, energy=prediction, energy_note=note)


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
