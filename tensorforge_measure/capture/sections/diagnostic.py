"""DIAGNOSTIC: telemetry from a separate execution window after each workload's timing. Context
for a reader; never an input to a verdict, and never proof of a bottleneck.

Every telemetry source (NVML, host CPU, a plugin's) records its window in its own shape; the
capture wraps it in one envelope that every reader understands: whether the window exists, a
one-line headline written by the source, and the clock-event reasons where the source reports
them. The source's own record is kept whole in `data`.
"""

from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge_measure.capture.fields import const, field, optional


@attrs.frozen(kw_only=True)
class TelemetryWindow:
    """One workload's telemetry window, in the envelope every reader understands."""

    available: bool = field("true when the window was sampled")
    reason: str | None = field("why the window is unavailable; null when available")
    headline: str | None = optional("one line the source wrote about the window (clocks, power, load)")
    clock_event_fractions: tuple[tuple[str, float], ...] | None = optional(
        "(reason, fraction of samples) for each clock-event reason the device reported (NVML's "
        "SwPowerCap, HwSlowdown...); absent for sources that report none",
        "1",
    )
    data: Mapping[str, Any] = field("the source's own record of the window (samples, summary, versions)", factory=dict)
    regime: str | None = optional("the regime the window held: 'burst', 'sustained' or 'single'")


@attrs.frozen(kw_only=True)
class Diagnostic:
    """DIAGNOSTIC: a telemetry window per workload, from one source."""

    label: str = const("DIAGNOSTIC", "the section's label")
    available: bool = field("true when at least one window was sampled")
    reason: str | None = field("why no window was sampled; null when available")
    source: str = field("the telemetry source, e.g. 'nvml' or 'host-cpu'")
    caveat: str = field("what the numbers are, and that they decide nothing (the source's own words)")
    window: str = field("when the windows ran relative to the timing")
    windows: Mapping[str, TelemetryWindow] = field(
        "per workload name: its telemetry window (after the sustained timings: continuous load)"
    )
    burst_windows: Mapping[str, TelemetryWindow] | None = optional(
        "per workload name: its window after the burst timings (the burst pattern: <= 5 ms of calls, "
        "then an equal rest)"
    )
