"""The plan of `tensorforge run`: the suite's prediction, the provenance, the device that
measures (if any) and which installed target describes it."""

import platform
import socket
import sys

import attrs

from tensorforge import __version__
from tensorforge.api import TensorForgeError, one_line, predict
from tensorforge_measure.api import Unavailable
from tensorforge_measure.calibrate import store as calibration
from tensorforge_measure.capture.model import Unavailable as UnavailableSection
from tensorforge_measure.capture.sections.measured import Measured, MeasuringDevice
from tensorforge_measure.capture.sections.provenance import HostRecord, PluginRecord, Provenance
from tensorforge_measure.run.state import RunState


class Planning(RunState):
    """The run's plan: what is predicted, where it is measured, and the record of both."""

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
            self.say("no measurement: PREDICTED only (the summary says why)")  # the reason: said once, there
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
