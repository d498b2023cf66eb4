"""The PyTorch CUDA measurement backend ('torch-cuda'): sessions on a real device, workload
preparation with peak-memory accounting, per-iteration CUDA-event timing with L2 flushes.

torch is imported only when a session opens, so a machine without PyTorch still runs
`tensorforge run` (MEASURED says why it is unavailable).
"""

import contextlib
import gc
import hashlib
import json
import os
from collections.abc import Callable
from typing import Any

from tensorforge import CUDA_PLAN
from tensorforge_measure import DeviceInfo, MeasurementBackend, Prepared, Session, Unavailable

# Several times the L2, so every timed iteration starts with operands in DRAM.
FLUSH_L2_MULTIPLE = 4
MIN_FLUSH_BYTES = 64 << 20
MEASURABLE_MODES = ("fp32", "tf32", "fp16", "bf16")
# Enough raw samples for a significance test between captures, still a short burst (on an
# H200 a sustained load reaches the power cap within a few hundred ms).
MIN_SAMPLES = 25
# Burst regime: timed work in stretches of <= 5 ms with equal rests, so the samples describe
# the kernel at the clocks the calibration probes saw, not a GPU sliding into its power cap.
# Sustained behaviour is what the DIAGNOSTIC telemetry window shows.
MAX_DUTY = 0.5


def fingerprint(info: dict) -> str:
    """Same GPU model, memory, driver and library stack -> same fingerprint. Calibrations are
    stored per fingerprint because a driver or cuBLAS change can move the ceilings."""
    keys = (
        "device_name",
        "compute_capability",
        "multiprocessor_count",
        "total_memory_bytes",
        "l2_cache_bytes",
        "driver",
        "torch",
        "cuda_runtime",
        "cudnn",
    )
    text = json.dumps({k: info.get(k) for k in keys}, sort_keys=True)
    return "cuda-" + hashlib.sha256(text.encode()).hexdigest()[:16]


class TorchCudaSession(Session):
    def __init__(self, device_index: int):
        import torch

        from tensorforge_measure import TEARDOWN_CUPTI
        from tf_cuda.timing import versions

        self.torch = torch
        if not torch.cuda.is_available():
            raise Unavailable(
                "no CUDA device: torch.cuda.is_available() is False "
                f"(torch {torch.__version__}, CUDA build {torch.version.cuda})"
            )
        if device_index >= torch.cuda.device_count():
            raise Unavailable(f"CUDA device {device_index} does not exist ({torch.cuda.device_count()} visible)")
        self.device = torch.device("cuda", device_index)
        torch.cuda.set_device(self.device)
        details = versions(self.device)
        # Whether the profiler detaches CUPTI after each session (host_state.py): recorded, not set.
        # Left attached (Kineto's default), eager timings after a profiler session ran 2.9x slower
        # on the H200 (decode step 3.7 vs 1.3 ms); TEARDOWN_CUPTI=1 is the candidate fix, not yet
        # run on the device, so the harness does not turn it on by itself.
        details["profiler_teardown_cupti"] = os.environ.get(TEARDOWN_CUPTI)
        self.l2_bytes = int(details.get("l2_cache_bytes") or 0)
        self.info = DeviceInfo(
            backend="torch-cuda", name=str(details["device_name"]), fingerprint=fingerprint(details), details=details
        )
        # Every prepared workload ends with gc.collect() (tensors caught in reference cycles must
        # be freed before the allocator's cache is emptied). A full collection walks every object
        # the process holds: with torch and the plugins loaded, ~190k objects, 0.1-0.2 s a time,
        # once per estimate-terms item (~100) and per workload: seconds of a run spent on objects
        # that live as long as the process. Freezing them (gc.freeze) moves them out of the
        # collector's generations, so a collection walks only what was made since the session
        # opened; close() hands them back. The survivors of each workload's collection are frozen
        # too (prepared()): the profiler's first session imports torch._dynamo, sympy and FSDP
        # (~200k more objects), after which every collection took ~58 ms (95 of them, 5.5 s of an
        # H200 run, cProfile, 2026-12-01). What survives a full collection with the
        # workload's callable gone is state the process keeps (modules, the flush buffer, results).
        gc.freeze()
        self._frozen = True

    @property
    def flush_bytes(self) -> int:
        return max(FLUSH_L2_MULTIPLE * self.l2_bytes, MIN_FLUSH_BYTES)

    @contextlib.contextmanager
    def prepared(self, builder, params, math_mode: str):
        torch = self.torch
        from tensorforge_measure import framework_flags
        from tensorforge_measure import math_mode as mode_flags

        if math_mode not in MEASURABLE_MODES:
            raise Unavailable(
                f"math mode {math_mode} is not measurable with torch-cuda (measurable: {', '.join(MEASURABLE_MODES)})"
            )
        fn = None
        try:
            with mode_flags(math_mode), torch.inference_mode():
                torch.cuda.synchronize(self.device)
                torch.cuda.empty_cache()
                base = torch.cuda.memory_allocated(self.device)
                torch.cuda.reset_peak_memory_stats(self.device)
                fn = builder.build(params, self.device)
                fn()
                torch.cuda.synchronize(self.device)
                peak = torch.cuda.max_memory_allocated(self.device) - base
                yield Prepared(
                    fn=fn,
                    peak_memory_bytes=int(peak),
                    framework_flags=framework_flags(),
                    peak_memory_method="torch.cuda.max_memory_allocated after build + one "
                    "run, minus memory_allocated before the build",
                )
        finally:
            del fn
            gc.collect()
            if self._frozen:
                gc.freeze()
            torch.cuda.empty_cache()

    def timing_policy(self, budget_s: float):
        """The burst-regime timing policy of this session (eager calls and graph replays alike)."""
        from tensorforge_measure import TimingPolicy

        return TimingPolicy(
            warmup_iters=5,
            min_iters=MIN_SAMPLES,
            max_iters=1000,
            target_rel_iqr=0.02,
            budget_s=budget_s,
            flush_bytes=self.flush_bytes,
            max_duty=MAX_DUTY,
        )

    def time(self, fn: Callable[[], Any], budget_s: float):
        from tf_cuda.timing import time_cuda

        with self.torch.inference_mode():
            return time_cuda(fn, self.timing_policy(budget_s), self.device)

    def phases(self, fn: Callable[[], Any], plan):
        """Context manager: the burst and sustained phases of one prepared workload, eager and
        CUDA-graph modes (tf_cuda.modes)."""
        from tf_cuda.modes import cuda_phases

        return cuda_phases(self, fn, plan)

    def synchronize(self) -> None:
        self.torch.cuda.synchronize(self.device)

    # -- what the measuring side asks of a session by name (tensorforge_measure.api.Session) ----
    def energy_counter(self):
        """NVML's energy counter of this device, or Unavailable with NVML's reason."""
        from tf_cuda.nvml_power import NvmlPower

        power, reason = NvmlPower.open(self.device.index or 0)
        if power is None:
            raise Unavailable(str(reason))
        return power

    def queue_event(self):
        """A CUDA event: the energy window keeps executions queued while the host reads the counter."""
        return self.torch.cuda.Event()

    def graph_replays(self, fn: Callable[[], Any], calls: int):
        """A CUDA graph of `calls` unrolled fn() (tf_cuda.graph_window.cuda_replays)."""
        from tf_cuda.graph_window import cuda_replays

        return cuda_replays(self.torch, fn, calls, device=self.device)

    def graph_of(self, warm: Callable[[], Any], body: Callable[[], Any]) -> Callable[[], Any]:
        """One CUDA graph of body, captured after warm ran on the capture stream: its replay."""
        from tf_cuda.graph import paired_graph

        return paired_graph(self.torch, warm, body, self.device).replay

    def replay_times(self, replay: Callable[[], Any], replays: int) -> list[float]:
        """Device seconds of each of `replays` back-to-back replays, after one untimed replay,
        between CUDA events recorded after each."""
        torch = self.torch
        events = [torch.cuda.Event(enable_timing=True) for _ in range(replays + 1)]
        replay()
        events[0].record()
        for event in events[1:]:
            replay()
            event.record()
        events[-1].synchronize()
        return [a.elapsed_time(b) * 1e-3 for a, b in zip(events, events[1:])]

    def close(self) -> None:
        if getattr(self, "_frozen", False):
            gc.unfreeze()
            self._frozen = False


class TorchCudaBackend(MeasurementBackend):
    name = "torch-cuda"
    description = "PyTorch on a CUDA device: CUDA-event timing per iteration, L2 flushed"
    framework = "torch"
    fallback = True  # `run` measures a target no backend claims on the GPU
    probe_plan = CUDA_PLAN
    # CUDA items are timed as CUDA graphs (tensorforge_measure.calibrate.estimate_probes)
    probe_item_budget_s = 0.1
    host_energy_beside = True  # the host CPU's joules beside the GPU's, where readable

    def open(self, device_index: int = 0) -> Session:
        try:
            import torch  # noqa: F401
        except ImportError as exc:
            raise Unavailable(f"PyTorch is not installed ({exc}); install tensorforge[measure]") from None
        return TorchCudaSession(device_index)
