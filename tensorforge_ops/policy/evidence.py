"""Reading captures as evidence: both must verify, and be of the schema this version reads."""

from pathlib import Path
from typing import Any

from tensorforge.api import TensorForgeError

from ..capture.document import SCHEMA, read_capture, verify
from ..telemetry.nvml import SLOWDOWN_REASONS


def load_evidence(path, role: str) -> dict[str, Any]:
    """A verified capture, or a TensorForgeError naming the file and what is wrong with it."""
    path = Path(path)
    doc = read_capture(path)
    if doc.get("schema") != SCHEMA:
        raise TensorForgeError(f"{role} capture {path} has schema {doc.get('schema')!r}; "
                               f"this TensorForge reads {SCHEMA!r}")
    report = verify(path)
    if not report.ok:
        raise TensorForgeError(f"{role} capture {path} does not verify: {report.problems[0]}")
    doc["_path"] = str(path)
    return doc


def slowdowns(doc: dict[str, Any], workload: str):
    """(reason, fraction) pairs of hardware/thermal slowdown in the workload's telemetry window."""
    window = (doc.get("diagnostic", {}).get("windows") or {}).get(workload) or {}
    summary = window.get("summary") or {}
    return [(r, f) for r, f in summary.get("reason_fractions", []) or []
            if r in SLOWDOWN_REASONS and f > 0]
