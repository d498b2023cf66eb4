"""From what a telemetry source returns to the capture's window envelope.

A source may build a `TelemetryWindow` itself, or return its own JSON-ready record (a mapping),
as every source did before the envelope existed. The rule for a record, used for new windows and
for upgrading version-1 captures alike: `available`; the reason from `reason` or
`unavailable_reason`; the source's `headline`; and where the record has NVML's layout (a
`summary` with `reason_fractions`) those fractions become the clock-event reasons and the
headline is the NVML line (median SM clock, power, reasons seen). The whole record, less the
fields moved into the envelope, is kept in `data`.
"""

from collections.abc import Mapping
from typing import Any

from tensorforge_measure.telemetry.clock_events import headline as clock_events_headline

from tensorforge_measure.capture.sections.diagnostic import TelemetryWindow

ENVELOPE_KEYS = ("available", "reason", "unavailable_reason", "headline")


def envelope(record: Mapping[str, Any]) -> dict[str, Any]:
    """The window envelope of a source's record, as JSON-ready data."""
    available = record.get("available") is True
    reason = record.get("reason") or record.get("unavailable_reason")
    out: dict[str, Any] = {
        "available": available,
        "reason": None if available else str(reason or "unavailable (no reason recorded)"),
    }
    summary = record.get("summary")
    nvml: Mapping[str, Any] | None = summary if isinstance(summary, Mapping) and "reason_fractions" in summary else None
    if record.get("headline") is not None:
        out["headline"] = record["headline"]
    elif nvml is not None:
        out["headline"] = clock_events_headline(nvml)
    if nvml is not None:
        out["clock_event_fractions"] = [list(pair) for pair in nvml["reason_fractions"] or []]
    out["data"] = {k: v for k, v in record.items() if k not in ENVELOPE_KEYS}
    return out


def window_from_source(value: TelemetryWindow | Mapping[str, Any]) -> TelemetryWindow:
    if isinstance(value, TelemetryWindow):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"a telemetry source returned {type(value).__name__}, expected a TelemetryWindow or a mapping")
    from tensorforge_measure.capture.convert import converter, to_document

    return converter.structure(to_document(envelope(value)), TelemetryWindow)
