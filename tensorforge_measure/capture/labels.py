"""The five labels, once: the capture section each one names, what it claims, and where its
numbers come from. Every reader (verify, summary, report, export sinks) takes them from here."""

import attrs


@attrs.frozen
class Label:
    name: str  # as shown to people: 'MEASURED'
    section: str  # the capture's key for it: 'measured'
    meaning: str
    source: str


LABELS: tuple[Label, ...] = (
    Label(
        "PREDICTED",
        "predicted",
        "Analytical Core output derived from workload, mapping, traffic and timing assumptions.",
        "the Core, deterministic, no device",
    ),
    Label(
        "MEASURED",
        "measured",
        "Physical PyTorch latency, throughput and device memory from this device.",
        "a measurement backend on a real device",
    ),
    Label(
        "CALIBRATED",
        "calibrated",
        "Empirical compute and memory-copy ceilings measured by dedicated probes.",
        "calibration probes on the same device",
    ),
    Label(
        "DIAGNOSTIC",
        "diagnostic",
        "Telemetry context from a separate execution window.",
        "a telemetry source; never used for a verdict",
    ),
    Label(
        "POLICY",
        "policy",
        "Decisions that exist only when their required evidence exists.",
        "policies reading the above",
    ),
)

BY_SECTION: dict[str, Label] = {label.section: label for label in LABELS}
