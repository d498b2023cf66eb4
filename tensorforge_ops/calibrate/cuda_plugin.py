"""The torch-cuda backend's calibration probes as the objects the probes hook registers.

Why apart from cuda_probes.py: these classes are imported whenever the Ops plugins load (even
for `list-plugins`), the probe functions import torch; the classes reach them only in `run`.
"""

import time

from ..api import CalibrationProbe, ProbeResult


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


class MatmulCeilingProbe(CalibrationProbe):
    """Best sustained square-matmul rate per math mode over a size sweep."""
    name = "matmul-ceiling"
    backend = "torch-cuda"
    modes = ("fp32", "tf32", "fp16", "bf16")

    def run(self, session) -> ProbeResult:
        from .cuda_probes import probe_matmul
        start = time.perf_counter()
        compute, details = {}, {}
        for mode in self.modes:
            probe = probe_matmul(mode, device=session.device)
            compute[mode] = probe.best_flops_per_s
            details[mode] = {"best_n": probe.best_n, "method": probe.method,
                             "points": [list(p) for p in probe.points]}
        return ProbeResult(name=self.name, method="square matmul size sweep per math mode; "
                           "rate = 2n^3 / p10 time; best size wins", compute=compute,
                           details=details, duration_s=time.perf_counter() - start)


class CopyBandwidthProbe(CalibrationProbe):
    name = "copy-bandwidth"
    backend = "torch-cuda"

    def run(self, session) -> ProbeResult:
        from .cuda_probes import default_copy_bytes, probe_copy
        probe, seconds = _timed(lambda: probe_copy(default_copy_bytes(session.device), device=session.device))
        return ProbeResult(name=self.name, method=probe.method, dram_bytes_per_s=probe.bytes_per_s,
                           details={"buffer_bytes": probe.buffer_bytes}, duration_s=seconds)


class LaunchFloorProbe(CalibrationProbe):
    name = "launch-floor"
    backend = "torch-cuda"

    def run(self, session) -> ProbeResult:
        from .cuda_probes import probe_launch_floor
        probe, seconds = _timed(lambda: probe_launch_floor(device=session.device))
        return ProbeResult(name=self.name, method=probe.method, launch_floor_s=probe.seconds,
                           duration_s=seconds)
