"""The `torch-cpu` measurement backend: PyTorch on the host CPU with the intra-op thread count
set to the usable physical cores and held there, wall-clock timing per iteration with the
caches flushed between iterations, peak memory as the resident high-water mark.

torch is imported only when a session opens, as in the CUDA backend.
"""

import contextlib
import gc
import hashlib
import json
from collections.abc import Callable
from typing import Any

import attrs

from tensorforge import CPU_PLAN
from tensorforge_measure import DeviceInfo, MeasurementBackend, Prepared, Session, Unavailable
from tf_cpu import peak_rss
from tf_cpu.flush import FlushPlan, flush_cost, measure_pass_rates, nominal_cache_bytes, plan_flush, sweep_sizes
from tf_cpu.isa import host_isa
from tf_cpu.machine import Machine, read_machine
from tf_cpu.target import NAME as TARGET_NAME

# The same evidence rules as torch-cuda: enough raw samples for the gate's significance test.
MIN_SAMPLES = 25
WARMUP_ITERS = 3
MEASURABLE_MODES = ("fp32", "bf16", "fp16")


def cache_bytes(machine: Machine) -> int:
    """All data and unified cache serving the usable CPUs, every instance counted."""
    return nominal_cache_bytes(machine)


def fingerprint(details: dict[str, Any]) -> str:
    """Same CPU model, core count, caches, ISA, thread count and PyTorch -> same fingerprint.
    Clocks and load are left out on purpose: they change between runs on the same machine."""
    keys = (
        "model_name",
        "vendor",
        "family",
        "model",
        "arch",
        "cores",
        "logical_cpus",
        "threads_per_core",
        "caches",
        "vector",
        "flops_per_clock",
        "threads",
        "torch",
    )
    text = json.dumps({k: details.get(k) for k in keys}, sort_keys=True)
    return "cpu-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _read(getter: Callable[[], Any]) -> Any:
    # A flag PyTorch cannot report (older version, mixed legacy/new precision API) is None.
    try:
        return getter()
    except Exception:
        return None


def framework_flags(torch) -> dict[str, Any]:
    """The PyTorch settings that decide which CPU kernels and arithmetic run. Never raises."""
    b = torch.backends
    return {
        "float32_matmul_precision": _read(lambda: str(torch.get_float32_matmul_precision())),
        "mkldnn_enabled": _read(lambda: bool(b.mkldnn.enabled)),
        "mkldnn_matmul_fp32_precision": _read(lambda: str(b.mkldnn.matmul.fp32_precision)),
        "mkldnn_conv_fp32_precision": _read(lambda: str(b.mkldnn.conv.fp32_precision)),
        "num_threads": _read(torch.get_num_threads),
        "num_interop_threads": _read(torch.get_num_interop_threads),
        "cpu_capability": _read(lambda: str(b.cpu.get_cpu_capability())),
        "deterministic_algorithms": _read(lambda: bool(torch.are_deterministic_algorithms_enabled())),
    }


def device_details(torch, machine: Machine, threads: int) -> dict[str, Any]:
    isa = host_isa(machine)
    return {
        "model_name": machine.model_name,
        "vendor": machine.vendor,
        "family": machine.family,
        "model": machine.model,
        "arch": machine.arch,
        "cores": machine.cores,
        "logical_cpus": len(machine.cpus),
        "cpus": list(machine.cpus),
        "threads_per_core": machine.threads_per_core,
        "caches": [[c.level, c.kind, c.size_bytes, len(c.cpus)] for c in machine.caches],
        "vector": isa.vector,
        "flops_per_clock": dict(isa.flops_per_clock),
        "max_mhz": machine.max_mhz,
        "base_mhz": machine.base_mhz,
        "reported_mhz": machine.reported_mhz,
        "memory_bytes": machine.memory_bytes,
        "machine_sources": dict(machine.sources),
        "machine_fallbacks": list(machine.fallbacks),
        "threads": threads,
        "torch": str(torch.__version__),
        "mkldnn_available": _read(lambda: bool(torch.backends.mkldnn.is_available())),
        "mkl_available": _read(lambda: bool(torch.backends.mkl.is_available())),
        "openmp_available": _read(lambda: bool(torch.backends.openmp.is_available())),
        "parallel_info": _read(lambda: torch.__config__.parallel_info().strip().splitlines()),
    }


class TorchCpuSession(Session):
    def __init__(self, machine: Machine):
        import torch

        self.torch = torch
        self.machine = machine
        # One thread per usable physical core: SMT siblings share FMA units, and the target's
        # PE array counts cores. Held fixed for the whole session (see _hold_threads).
        self.threads = max(1, machine.cores)
        torch.set_num_threads(self.threads)
        self.device = torch.device("cpu")
        self.native_modes = tuple(sorted(host_isa(machine).flops_per_clock))
        # Sized from what the cores can hold (a swept measurement, sysfs as the fallback) and
        # its own cost measured once: a flush that dwarfs the workload starves its samples.
        plan = plan_flush(machine, measure_pass_rates(torch, sweep_sizes(machine)))
        self.flush_bytes = plan.bytes
        self._flush = None
        self.flush_plan: FlushPlan = attrs.evolve(plan, seconds_p50=flush_cost(self.flush()))
        details = device_details(torch, machine, self.threads)
        # Not in the fingerprint (its keys are fixed): a rerun may size the flush a little
        # differently on the same machine.
        details["flush"] = attrs.asdict(self.flush_plan)
        self.info = DeviceInfo(
            backend="torch-cpu", name=machine.model_name, fingerprint=fingerprint(details), details=details
        )

    def _hold_threads(self) -> None:
        # A builder or library may change the global thread count; every measurement must run
        # with the count the fingerprint records.
        if self.torch.get_num_threads() != self.threads:
            self.torch.set_num_threads(self.threads)

    @contextlib.contextmanager
    def prepared(self, builder, params, math_mode: str):
        torch = self.torch
        from tensorforge_measure import math_mode as mode_flags

        if math_mode not in MEASURABLE_MODES:
            raise Unavailable(
                f"math mode {math_mode} is not measurable with torch-cpu (measurable: {', '.join(MEASURABLE_MODES)})"
            )
        self._hold_threads()
        fn = None
        try:
            # mode_flags sets float32 matmul precision 'highest' for fp32, so oneDNN may not
            # quietly run fp32 matmuls in bf16.
            with mode_flags(math_mode), torch.inference_mode():
                gc.collect()
                base, why_not = peak_rss.start()
                fn = builder.build(params, self.device)
                fn()
                peak, method = peak_rss.peak_since(base) if why_not is None else (None, why_not)
                yield Prepared(
                    fn=fn, peak_memory_bytes=peak, framework_flags=framework_flags(torch), peak_memory_method=method
                )
        finally:
            del fn
            gc.collect()

    def flush(self):
        from tf_cpu.cpu_timing import make_flush

        if self._flush is None:
            self._flush = make_flush(self.torch, self.flush_bytes)
        return self._flush

    def time(self, fn: Callable[[], Any], budget_s: float):
        from tensorforge_measure import TimingPolicy
        from tf_cpu.cpu_timing import time_cpu

        policy = TimingPolicy(
            warmup_iters=WARMUP_ITERS,
            min_iters=MIN_SAMPLES,
            max_iters=1000,
            target_rel_iqr=0.02,
            budget_s=budget_s,
            flush_bytes=self.flush_bytes,
        )
        self._hold_threads()
        with self.torch.inference_mode():
            return time_cpu(fn, policy, self.flush())

    @contextlib.contextmanager
    def phases(self, fn: Callable[[], Any], plan):
        """The measurement phases of one prepared workload: one regime, eager only (tf_cpu.phases)."""
        from tf_cpu.phases import CpuPhases

        yield CpuPhases(self, fn, plan)

    def contention_meter(self):
        """Other processes' and stolen CPU shares over the usable CPUs from now until the
        returned callable is called (tf_cpu.telemetry.start_meter); None without /proc/stat."""
        from tf_cpu.telemetry import start_meter

        return start_meter(self.machine.cpus)

    def synchronize(self) -> None:
        """CPU operators are synchronous: nothing to wait for."""

    def energy_counter(self):
        """The host CPU is the measured device: RAPL is its energy counter, where readable
        (tf_cpu.rapl), else Unavailable with why not."""
        from tf_cpu.rapl import Rapl, RaplCounter

        rapl, reason = Rapl.open()
        if rapl is None:
            raise Unavailable(f"host CPU: {reason}")
        return RaplCounter(rapl)

    def close(self) -> None:
        self._flush = None
        gc.collect()


class TorchCpuBackend(MeasurementBackend):
    name = "torch-cpu"
    description = (
        "PyTorch on the host CPU: wall-clock timing per iteration, threads fixed to the physical cores, caches flushed"
    )
    framework = "torch"
    targets = (TARGET_NAME,)
    # the estimate's probe plan sized for a few cores (about 10 s on 2), each item timed eagerly
    probe_plan = CPU_PLAN
    probe_item_budget_s = 0.2

    @property
    def default_suite(self):
        """CPU-sized workloads (the shared default suite's GEMMs take seconds per iteration on a
        few cores): a large and a small fp32 GEMM, a memory-bound GEMV, a convolution, a small
        transformer, and a bf16 GEMM where the CPU runs bf16 natively."""
        suite = [
            "gemm:m=2048,n=2048,k=2048,dtype=fp32",
            "gemm:m=512,n=512,k=512,dtype=fp32",
            "gemm:m=1,n=4096,k=4096,dtype=fp32",
            "conv2d:n=1,c=64,h=56,w=56,k=64,r=3,s=3,padding=1,dtype=fp32",
            "transformer:hidden=512,layers=2,heads=8,seq=128,dtype=fp32",
        ]
        if "bf16" in host_isa(read_machine()).flops_per_clock:
            suite.append("gemm:m=1024,n=1024,k=1024,dtype=bf16")
        return tuple(suite)

    def open(self, device_index: int = 0) -> Session:
        if device_index != 0:
            raise Unavailable(f"torch-cpu has one device, the host CPU (device 0); got device {device_index}")
        try:
            import torch  # noqa: F401
        except ImportError as exc:
            raise Unavailable(f"PyTorch is not installed ({exc}); install tensorforge[measure]") from None
        return TorchCpuSession(read_machine())
