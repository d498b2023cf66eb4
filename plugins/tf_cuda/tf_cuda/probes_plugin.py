"""The torch-cuda backend's calibration probes as the objects the probes hook registers: the
burst-regime ceilings, the kernel floors, then the sustained-regime ceilings (last, because they
leave the device hot).

Why apart from cuda_probes.py: these classes are imported whenever the Ops plugins load (even
for `list-plugins`), the probe functions import torch; the classes reach them only in `run`.
"""

import time

from tensorforge_measure import CalibrationProbe, ProbeResult


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
        from tf_cuda.probes import probe_matmul

        start = time.perf_counter()
        compute, details, spread = {}, {}, {}
        for mode in self.modes:
            probe = probe_matmul(mode, device=session.device)
            compute[mode] = probe.best_flops_per_s
            spread[mode] = probe.fastest_spread
            details[mode] = {"best_n": probe.best_n, "method": probe.method, "points": [list(p) for p in probe.points]}
            if probe.long_k:
                details[mode]["long_k"] = [[list(shape), rate] for shape, rate in probe.long_k]
        return ProbeResult(
            name=self.name,
            method="square matmul size sweep per math mode, and long-K GEMMs in the tensor-core modes, "
            "in the burst regime (<= 5 ms stretches at <= 50% duty, as workloads' burst timings); "
            "rate = 2mnk / fastest sample; best shape wins",
            compute=compute,
            details=details,
            duration_s=time.perf_counter() - start,
            fastest_spread=spread,
        )


class CopyBandwidthProbe(CalibrationProbe):
    name = "copy-bandwidth"
    backend = "torch-cuda"

    def run(self, session) -> ProbeResult:
        from tf_cuda.probes import default_copy_bytes, probe_copy

        probe, seconds = _timed(lambda: probe_copy(default_copy_bytes(session.device), device=session.device))
        return ProbeResult(
            name=self.name,
            method=probe.method,
            dram_bytes_per_s=probe.bytes_per_s,
            details={"buffer_bytes": probe.buffer_bytes},
            duration_s=seconds,
            fastest_spread={"dram": probe.fastest_spread},
            dram_patterns={"copy": probe.bytes_per_s},
        )


class StreamBandwidthProbe(CalibrationProbe):
    """A DRAM stream that only reads, or only writes (probes_stream.py): beside the copy, so the
    DRAM ceiling is the fastest any access pattern reached."""

    backend = "torch-cuda"

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.name = f"{pattern}-bandwidth"

    def run(self, session) -> ProbeResult:
        from tf_cuda.probes_stream import probe_stream

        probe, seconds = _timed(lambda: probe_stream(self.pattern, device=session.device))
        return ProbeResult(
            name=self.name,
            method=probe.method,
            dram_bytes_per_s=probe.bytes_per_s,
            details={"buffer_bytes": probe.buffer_bytes, "points": [list(p) for p in probe.points]},
            duration_s=seconds,
            fastest_spread={"dram": probe.fastest_spread},
            dram_patterns={self.pattern: probe.bytes_per_s},
        )


class KernelFloorsProbe(CalibrationProbe):
    """Floors, each named for what it is (cuda_floors): device-side kernel interval, duration and
    gap from graph replays of trivial kernels; the event-timed eager floor; the host call
    interval. launch_floor_s stays the eager event floor, as captures before it had it."""

    name = "kernel-floors"
    backend = "torch-cuda"

    def run(self, session) -> ProbeResult:
        from tf_cuda.floors import probe_floors

        floors, seconds = _timed(lambda: probe_floors(session.device))
        named = {
            k: getattr(floors, k)
            for k in (
                "kernel_interval_s",
                "kernel_duration_s",
                "kernel_gap_s",
                "eager_event_floor_s",
                "host_call_interval_s",
            )
            if getattr(floors, k) is not None
        }
        return ProbeResult(
            name=self.name,
            method="; ".join(f"{k}: {m}" for k, m in floors.methods),
            launch_floor_s=floors.eager_event_floor_s,
            floors=named,
            details={"notes": list(floors.notes)},
            duration_s=seconds,
        )


class MatmulCeilingSustainedProbe(CalibrationProbe):
    """The matmul sweep again, each size timed after the device is steady under continuous load."""

    name = "matmul-ceiling-sustained"
    backend = "torch-cuda"
    regime = "sustained"
    # fp32 (CUDA cores) is left out to keep calibration short: no default workload runs it, and
    # its sustained bound then uses the burst ceiling, which is looser but still a lower bound
    # (to_ceilings says so in the ceilings' source)
    modes = ("tf32", "fp16", "bf16")

    def run(self, session) -> ProbeResult:
        from tf_cuda.probes_sustained import probe_matmul_sustained

        start = time.perf_counter()
        compute, details = {}, {}
        flush_bytes = getattr(session, "flush_bytes", 0)
        for mode in self.modes:
            probe = probe_matmul_sustained(mode, device=session.device, flush_bytes=flush_bytes)
            compute[mode] = probe.best_flops_per_s
            # flush_bytes: the cap bound charges each call's flush (tensorforge.bound.cap_bound)
            details[mode] = {
                "best_n": probe.best_n,
                "method": probe.method,
                "points": [list(p) for p in probe.points],
                "flush_bytes": flush_bytes,
            }
        return ProbeResult(
            name=self.name,
            regime="sustained",
            compute=compute,
            details=details,
            method="square matmul size sweep per math mode, sustained regime, each call after the "
            "workloads' L2 flush; rate = 2n^3 / fastest sample of a continuous window after steady; best size wins",
            duration_s=time.perf_counter() - start,
        )


class CopyBandwidthSustainedProbe(CalibrationProbe):
    name = "copy-bandwidth-sustained"
    backend = "torch-cuda"
    regime = "sustained"

    def run(self, session) -> ProbeResult:
        from tf_cuda.probes_sustained import probe_copy_sustained

        probe, seconds = _timed(lambda: probe_copy_sustained(device=session.device))
        return ProbeResult(
            name=self.name,
            regime="sustained",
            method=probe.method,
            dram_bytes_per_s=probe.bytes_per_s,
            details={"buffer_bytes": probe.buffer_bytes},
            duration_s=seconds,
            dram_patterns={"copy": probe.bytes_per_s},
        )


class StreamBandwidthSustainedProbe(CalibrationProbe):
    """The read stream in the sustained regime (probes_stream.probe_stream_sustained)."""

    backend = "torch-cuda"
    regime = "sustained"

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.name = f"{pattern}-bandwidth-sustained"

    def run(self, session) -> ProbeResult:
        from tf_cuda.probes_stream import probe_stream_sustained

        probe, seconds = _timed(lambda: probe_stream_sustained(self.pattern, device=session.device))
        return ProbeResult(
            name=self.name,
            regime="sustained",
            method=probe.method,
            dram_bytes_per_s=probe.bytes_per_s,
            details={"buffer_bytes": probe.buffer_bytes, "points": [list(p) for p in probe.points]},
            duration_s=seconds,
            dram_patterns={self.pattern: probe.bytes_per_s},
        )


class EnergyProbe(CalibrationProbe):
    """Energy coefficients (static power, J per FLOP per math mode, J per DRAM byte) from probe
    windows under NVML's energy counter, and the enforced power limit (cuda_energy_probes)."""

    name = "energy"
    backend = "torch-cuda"
    regime = "sustained"
    order = 200  # last of all: its GEMM windows run at the power cap

    def run(self, session) -> ProbeResult:
        from tensorforge_measure import calibration_time as now
        from tensorforge_measure import capture_document as to_document
        from tf_cuda.energy_probes import probe_energy

        calibration, seconds = _timed(
            lambda: probe_energy(session.device, session.info.name, session.info.fingerprint, now())
        )
        return ProbeResult(
            name=self.name,
            regime="sustained",
            method=calibration.method,
            details={"energy": to_document(calibration)},
            duration_s=seconds,
        )
