"""CALIBRATED: the ceilings dedicated probes measured on the device, and how.

`Calibration` is also the document stored per device fingerprint (and reused by later runs);
the capture's section is that document plus whether it was reused and where it is stored.
"""

from typing import Any
from collections.abc import Mapping

import attrs

from ..fields import const, field


@attrs.frozen(kw_only=True)
class CalibratedCeilings:
    """The ceilings all probes add up to: what the calibrated lower bound divides by."""
    compute: Mapping[str, float] = field("sustained compute rate per math mode (the best a probe reached)", "FLOP/s")
    dram_bytes_per_s: float | None = field("memory-copy bandwidth, bytes read + written", "B/s")
    launch_floor_s: float | None = field(
        "host-side interval of a trivial eager operation (not part of the lower bound)", "s")


@attrs.frozen(kw_only=True)
class ProbeRecord:
    """What one probe found, and exactly how."""
    method: str = field("exactly what the probe ran and how it reduced the timings to one number")
    duration_s: float = field("how long the probe ran", "s")
    compute: Mapping[str, float] = field("compute ceilings it found, per math mode", "FLOP/s")
    dram_bytes_per_s: float | None = field("memory bandwidth it found", "B/s")
    launch_floor_s: float | None = field("launch floor it found", "s")
    details: Mapping[str, Any] = field("probe-specific detail (sizes swept, points, buffers)")


@attrs.frozen(kw_only=True)
class Calibration:
    """A calibration of one device, as stored per fingerprint (and reused by later runs)."""
    label: str = const("CALIBRATED", "the section's label")
    fingerprint: str = field("fingerprint of the calibrated device")
    device: str = field("name of the calibrated device")
    device_details: Mapping[str, Any] = field("what the backend reported about the device (backend-specific)")
    measured_at: str = field("when the probes started (ISO 8601, UTC)")
    finished_at: str = field("when they finished (ISO 8601, UTC)")
    tensorforge_version: str = field("version of tensorforge that ran the probes")
    ceilings: CalibratedCeilings = field("the ceilings all probes add up to")
    probes: Mapping[str, ProbeRecord] = field("per probe name: what it found and how")
    failed_probes: Mapping[str, str] = field("per probe name: why it failed")


@attrs.frozen(kw_only=True)
class Calibrated(Calibration):
    """CALIBRATED: the calibration the run used, and whether it was reused."""
    available: bool = const(True, "true: ceilings were calibrated on the measuring device")
    reason: None = field("always null when available", default=None)
    reused: bool = field("true when a stored calibration of this fingerprint was reused rather than measured now")
    stored_at: str = field("where the calibration is stored on the machine that ran the capture")
