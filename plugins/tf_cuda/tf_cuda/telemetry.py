"""Diagnostic NVML telemetry, sampled in its own execution window after latency timing.

The workload is re-run in a loop while a background thread samples clocks, power,
temperature, utilisation and clock-event reasons. Sampling perturbs the machine a
little, which is why this never shares a window with the latency measurement, and
why its output is context for a reader, never an input to a verdict.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

# The decoding of clock-event reasons is device-neutral (captures are read without NVML): it lives
# in the measuring side and is re-exported here for this module's readers.
from tensorforge_measure import (  # noqa: F401
    CLOCK_EVENT_REASONS,
    SLOWDOWN_REASONS,
    decode_reasons,
)
from tensorforge_measure import clock_event_bits as set_bits  # noqa: F401
from tensorforge_measure import clock_event_headline as headline  # noqa: F401

CAVEAT = (
    "NVML telemetry is diagnostic context from a separate execution window; "
    "it does not prove a bottleneck and never decides a verdict."
)

# NVML constants, fixed by the C API; repeated here so a fake module in tests need not define them.
_NVML_CLOCK_SM = 1
_NVML_CLOCK_MEM = 2
_NVML_TEMPERATURE_GPU = 0


@attrs.frozen
class TelemetrySample:
    t_s: float  # seconds since the window started
    sm_clock_mhz: int | None
    mem_clock_mhz: int | None
    power_w: float | None
    temperature_c: int | None
    gpu_util_pct: int | None
    mem_util_pct: int | None
    reasons_mask: int | None
    reasons: tuple[str, ...] | None


@attrs.frozen
class TelemetrySummary:
    n_samples: int
    sm_clock_mhz_min: float | None
    sm_clock_mhz_median: float | None
    sm_clock_mhz_max: float | None
    mem_clock_mhz_min: float | None
    mem_clock_mhz_median: float | None
    mem_clock_mhz_max: float | None
    power_w_min: float | None
    power_w_median: float | None
    power_w_max: float | None
    temperature_c_min: float | None
    temperature_c_median: float | None
    temperature_c_max: float | None
    gpu_util_pct_mean: float | None
    mem_util_pct_mean: float | None
    # (reason name, fraction of samples with a known mask in which it was active), bit order.
    reason_fractions: tuple[tuple[str, float], ...]


@attrs.frozen
class TelemetryWindow:
    available: bool
    unavailable_reason: str | None
    device_name: str | None
    device_index: int
    driver_version: str | None
    nvml_version: str | None
    sample_period_s: float
    duration_s: float
    samples: tuple[TelemetrySample, ...]
    energy_j: float | None
    summary: TelemetrySummary | None
    caveat: str = CAVEAT


def _min_med_max(values: Sequence[float | None]) -> tuple[float | None, ...]:
    vals = [v for v in values if v is not None]
    if not vals:
        return (None, None, None)
    return (float(min(vals)), float(statistics.median(vals)), float(max(vals)))


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(statistics.fmean(vals)) if vals else None


def summarize(samples: Sequence[TelemetrySample]) -> TelemetrySummary:
    """Pure reduction of samples; None values (unsupported queries) are skipped, not zeroed."""
    sm = _min_med_max([s.sm_clock_mhz for s in samples])
    mem = _min_med_max([s.mem_clock_mhz for s in samples])
    pw = _min_med_max([s.power_w for s in samples])
    temp = _min_med_max([s.temperature_c for s in samples])

    # Denominator is samples whose mask was read: a failed read is not "reason inactive".
    masked = [s for s in samples if s.reasons_mask is not None]
    counts: dict[int, int] = {}  # keyed by bit so the output is in bit order, unknowns included
    for s in masked:
        for bit in set_bits(s.reasons_mask or 0):  # (not None: filtered above)
            counts[bit] = counts.get(bit, 0) + 1
    fractions = tuple((decode_reasons(bit)[0], counts[bit] / len(masked)) for bit in sorted(counts))
    return TelemetrySummary(
        n_samples=len(samples),
        sm_clock_mhz_min=sm[0],
        sm_clock_mhz_median=sm[1],
        sm_clock_mhz_max=sm[2],
        mem_clock_mhz_min=mem[0],
        mem_clock_mhz_median=mem[1],
        mem_clock_mhz_max=mem[2],
        power_w_min=pw[0],
        power_w_median=pw[1],
        power_w_max=pw[2],
        temperature_c_min=temp[0],
        temperature_c_median=temp[1],
        temperature_c_max=temp[2],
        gpu_util_pct_mean=_mean([s.gpu_util_pct for s in samples]),
        mem_util_pct_mean=_mean([s.mem_util_pct for s in samples]),
        reason_fractions=fractions,
    )


def _try(fn: Callable[..., Any] | None, *args: Any) -> Any:
    # One unsupported (or flaky) query must cost one field, not the window or the sampler thread.
    if fn is None:
        return None
    try:
        return fn(*args)
    except Exception:
        return None


def _text(value: Any) -> str | None:
    # Some pynvml getters return bytes (no convertStrBytes decorator); the record wants str.
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _describe(exc: BaseException) -> str:
    # NVMLError.__str__ calls back into the library, which may itself be what is broken.
    try:
        text = str(exc)
    except Exception:
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _pick_reasons_fn(nvml: Any, handle: Any) -> Callable[[Any], int] | None:
    # The Events name is current; the Throttle name is deprecated but the only one old drivers
    # export. pynvml defines both regardless, so probe by calling rather than by hasattr alone.
    for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
        fn = getattr(nvml, name, None)
        if fn is None:
            continue
        try:
            fn(handle)
            return fn
        except Exception:
            continue
    return None


def _unavailable(reason: str, device_index: int, sample_period_s: float) -> TelemetryWindow:
    return TelemetryWindow(
        available=False,
        unavailable_reason=reason,
        device_name=None,
        device_index=device_index,
        driver_version=None,
        nvml_version=None,
        sample_period_s=sample_period_s,
        duration_s=0.0,
        samples=(),
        energy_j=None,
        summary=None,
    )


def _take_sample(nvml: Any, handle: Any, reasons_fn: Any, t_s: float) -> TelemetrySample:
    g = lambda name: getattr(nvml, name, None)  # noqa: E731 - a fake may lack any function
    power_mw = _try(g("nvmlDeviceGetPowerUsage"), handle)
    util = _try(g("nvmlDeviceGetUtilizationRates"), handle)
    mask = _try(reasons_fn, handle)
    return TelemetrySample(
        t_s=t_s,
        sm_clock_mhz=_try(g("nvmlDeviceGetClockInfo"), handle, _NVML_CLOCK_SM),
        mem_clock_mhz=_try(g("nvmlDeviceGetClockInfo"), handle, _NVML_CLOCK_MEM),
        power_w=None if power_mw is None else power_mw / 1000.0,
        temperature_c=_try(g("nvmlDeviceGetTemperature"), handle, _NVML_TEMPERATURE_GPU),
        gpu_util_pct=getattr(util, "gpu", None),
        mem_util_pct=getattr(util, "memory", None),
        reasons_mask=None if mask is None else int(mask),
        reasons=None if mask is None else decode_reasons(int(mask)),
    )


def collect_window(
    run_once: Callable[[], None],
    *,
    device_index: int = 0,
    duration_s: float = 2.0,
    sample_period_s: float = 0.05,
    synchronize: Callable[[], None] | None = None,
    nvml: Any = None,
) -> TelemetryWindow:
    """Run `run_once` repeatedly for ~duration_s while sampling NVML; see module docstring.

    NVML being absent or unusable yields available=False, never an exception. An exception
    from the workload itself does propagate (after the sampler stops and NVML shuts down):
    it ran during timing, so a failure here is a real bug, not missing telemetry.
    """
    if not sample_period_s > 0:  # a caller bug, not missing telemetry: say so before touching NVML
        raise ValueError(f"sample_period_s must be > 0, got {sample_period_s!r}")
    if nvml is None:
        try:
            import pynvml as nvml  # type: ignore[no-redef]  # lazy: the Core must import without the measure extra
        except ImportError:
            return _unavailable("pynvml not installed (pip install nvidia-ml-py).", device_index, sample_period_s)
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return _unavailable(f"nvmlInit failed: {_describe(exc)}.", device_index, sample_period_s)

    try:
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(device_index)
        except Exception as exc:
            return _unavailable(
                f"NVML could not open device {device_index}: {_describe(exc)}.", device_index, sample_period_s
            )
        device_name = _text(_try(getattr(nvml, "nvmlDeviceGetName", None), handle))
        driver_version = _text(_try(getattr(nvml, "nvmlSystemGetDriverVersion", None)))
        nvml_version = _text(_try(getattr(nvml, "nvmlSystemGetNVMLVersion", None)))
        reasons_fn = _pick_reasons_fn(nvml, handle)
        energy_fn = getattr(nvml, "nvmlDeviceGetTotalEnergyConsumption", None)

        samples: list[TelemetrySample] = []
        stop = threading.Event()
        t0 = time.perf_counter()

        def sampler() -> None:
            # Ticks are scheduled from t0, not from the previous sample, so query latency
            # does not stretch the period (steady rate); missed ticks are skipped, not bunched.
            tick = 0
            while True:
                now = time.perf_counter()
                samples.append(_take_sample(nvml, handle, reasons_fn, now - t0))
                tick = max(tick + 1, int((time.perf_counter() - t0) / sample_period_s) + 1)
                if stop.wait(max(0.0, t0 + tick * sample_period_s - time.perf_counter())):
                    return

        energy_start = _try(energy_fn, handle)
        thread = threading.Thread(target=sampler, name="nvml-telemetry", daemon=True)
        thread.start()
        try:
            # At least one iteration, so even duration_s=0 samples the workload, not idle.
            while True:
                run_once()
                if synchronize is not None:
                    synchronize()  # keep the async GPU queue bounded so the window ends on time
                if time.perf_counter() - t0 >= duration_s:
                    break
        finally:
            elapsed = time.perf_counter() - t0
            stop.set()
            thread.join()
        energy_end = _try(energy_fn, handle)

        energy_j = None
        if energy_start is not None and energy_end is not None and energy_end >= energy_start:
            energy_j = (energy_end - energy_start) / 1000.0  # counter is in mJ
        frozen = tuple(samples)
        return TelemetryWindow(
            available=True,
            unavailable_reason=None,
            device_name=device_name,
            device_index=device_index,
            driver_version=driver_version,
            nvml_version=nvml_version,
            sample_period_s=sample_period_s,
            duration_s=elapsed,
            samples=frozen,
            energy_j=energy_j,
            summary=summarize(frozen),
        )
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass  # shutdown failure cannot invalidate samples already taken


def telemetry_to_dict(window: TelemetryWindow) -> dict[str, Any]:
    """JSON-ready dict: tuples become lists, every leaf is int/float/str/bool/None."""
    return attrs.asdict(window)  # attrs.asdict turns tuples into lists
