"""The estimate's fit in a process of its own, while the sustained probes keep the device busy.

Why: the fit (tensorforge.estimate.fit, ~6 s of pure host work on an H200's host) needs only the
burst probes' results (the estimate-terms points and the burst ceilings), and the sustained
probes that follow them (~10 s) need the device, not the host: run one after the other, the
device idled through the fit. Why a process, not a thread: the fit holds the interpreter lock
for its whole run, and the probes' host loop must keep queueing work so the device never idles
inside a sustained window. The result is the one the run would have fitted itself (same
points, same ceilings, same function); if the process cannot start or fails, the run fits inline
and says so.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from typing import Any

from tensorforge.api import one_line
from tensorforge_measure.calibrate.estimate_fit import fit_estimate, probe_points


def _fit(document: dict[str, Any], target, ceilings, operating_point: str | None) -> dict[str, Any] | None:
    from tensorforge.api import PluginHost

    return fit_estimate(document, PluginHost(), target, ceilings, operating_point)


class BackgroundFit:
    """One fit running in a spawned process; `result()` waits for it."""

    def __init__(self, calibration, target, ceilings, operating_point: str | None):
        from tensorforge_measure.capture.convert import to_document

        self.target_name, self.operating_point = target.name, operating_point
        self.points = probe_points(calibration)
        # spawn, never fork: the parent holds a CUDA context, which a forked child must not inherit
        self._pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        self._future = self._pool.submit(_fit, to_document(calibration), target, ceilings, operating_point)

    @classmethod
    def start(cls, calibration, target, ceilings, operating_point: str | None) -> BackgroundFit | None:
        """A running fit, or None where there is nothing to fit (no estimate-terms points)."""
        if target is None or ceilings is None or not probe_points(calibration):
            return None
        return cls(calibration, target, ceilings, operating_point)

    def matches(self, calibration, target, operating_point: str | None) -> bool:
        """Whether this fit is the one the finished calibration asks for (same points, target
        and operating point)."""
        return (
            target is not None
            and target.name == self.target_name
            and operating_point == self.operating_point
            and probe_points(calibration) == self.points
        )

    def result(self) -> tuple[dict[str, Any] | None, str | None]:
        """(the fit's result, None) or (None, why the background fit gave none)."""
        try:
            return self._future.result(), None
        except Exception as exc:  # a process that died or could not start: the run fits inline
            return None, one_line(exc)
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def cancel(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
