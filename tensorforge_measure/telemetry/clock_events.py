"""Clock-event reasons as captures record them: the names of the bits a device reports when it
runs below its requested clock, which of them mean the hardware slowed itself down, and the
one-line headline of a window that carries them.

Device-neutral on purpose: policies, reports and the evidence-quality rules read these names from
captures on machines without NVML; the CUDA backend's telemetry decodes its masks with the same
table (tf_cuda.telemetry imports it from here).
"""

from collections.abc import Mapping
from typing import Any

# Bit values copied from nvidia-ml-py 13.615.71 pynvml.py (nvmlClocksEventReason* and the
# older nvmlClocksThrottleReason* names share the same bits). BoardLimit and Reliability only
# exist under the Throttle names there, but a driver may still set them, so they are named too.
CLOCK_EVENT_REASONS: tuple[tuple[int, str], ...] = (
    (0x001, "GpuIdle"),
    (0x002, "ApplicationsClocksSetting"),
    (0x004, "SwPowerCap"),
    (0x008, "HwSlowdown"),
    (0x010, "SyncBoost"),
    (0x020, "SwThermalSlowdown"),
    (0x040, "HwThermalSlowdown"),
    (0x080, "HwPowerBrakeSlowdown"),
    (0x100, "DisplayClockSetting"),
    (0x200, "BoardLimit"),
    (0x400, "Reliability"),
)

# Clock-event reasons that mean the hardware slowed itself down. SwPowerCap is left out on
# purpose: a GPU under sustained load reaches its power cap routinely (the H200 here did in
# every large GEMM's telemetry window), and `run` measures in a burst regime that avoids it.
SLOWDOWN_REASONS = ("HwSlowdown", "HwThermalSlowdown", "SwThermalSlowdown", "HwPowerBrakeSlowdown")


def headline(summary: Mapping[str, Any]) -> str:
    """One line about a window: median SM clock and power, and the clock-event reasons seen
    (GpuIdle left out: the gaps between iterations, not a limit)."""
    reasons = (
        ", ".join(f"{r} {f * 100:.0f}%" for r, f in summary.get("reason_fractions") or [] if r != "GpuIdle") or "none"
    )
    return (
        f"SM {summary.get('sm_clock_mhz_median')} MHz median, {summary.get('power_w_median')} W median, "
        f"clock-event reasons seen: {reasons}"
    )


def set_bits(mask: int) -> list[int]:
    """The bits set in a clock-event mask, lowest first."""
    return [1 << i for i in range(mask.bit_length()) if mask >> i & 1]


def decode_reasons(mask: int) -> tuple[str, ...]:
    """Names of the bits set in a clock-event mask, in bit order; unknown bits are kept visible."""
    names_by_bit = dict(CLOCK_EVENT_REASONS)
    return tuple(names_by_bit.get(bit, f"Unknown(0x{bit:x})") for bit in set_bits(mask))
