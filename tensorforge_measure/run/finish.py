"""The finish of `tensorforge run`: PREDICTED against MEASURED per workload (the comparison and the
bound checks), and the provenance's end."""

import time

import attrs

from tensorforge_measure.calibrate import store as calibration
from tensorforge_measure.capture.sections.comparison import Comparison
from tensorforge_measure.capture.sections.diagnostic import Diagnostic
from tensorforge_measure.capture.sections.policy import PolicyRecord, RecordedBoundCheck
from tensorforge_measure.compare.row import comparison_row, energy_floor_violations, violations
from tensorforge_measure.run.state import RunState


class Finishing(RunState):
    """The run's comparison and its end."""

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

    def _finish(self) -> None:
        assert self.provenance is not None  # set before anything is measured
        self.provenance = attrs.evolve(
            self.provenance, finished_at=calibration.now(), duration_s=round(time.perf_counter() - self.t0, 3)
        )
