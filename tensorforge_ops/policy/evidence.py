"""Reading captures as evidence: a capture counts only when it verifies (digest, canonical
bytes, consistency) and reads as this TensorForge's capture schema (upgraded if older)."""

from pathlib import Path

import attrs

from tensorforge.api import TensorForgeError

from ..capture.document import check
from ..capture.model import Capture
from ..capture.sections.diagnostic import Diagnostic
from ..telemetry.nvml import SLOWDOWN_REASONS


@attrs.frozen
class Evidence:
    """A verified capture and the file it came from."""
    path: str
    capture: Capture


def load_evidence(path, role: str) -> Evidence:
    """A verified capture, or a TensorForgeError naming the file and what is wrong with it."""
    path = Path(path)
    report, capture = check(path)
    if not report.ok or capture is None:
        raise TensorForgeError(f"{role} capture {path} does not verify: {report.problems[0]}")
    return Evidence(str(path), capture)


def slowdowns(capture: Capture, workload: str) -> list[tuple[str, float]]:
    """(reason, fraction) pairs of hardware/thermal slowdown in the workload's telemetry window."""
    diag = capture.diagnostic
    window = diag.windows.get(workload) if isinstance(diag, Diagnostic) else None
    fractions = (window.clock_event_fractions if window else None) or ()
    return [(r, f) for r, f in fractions if r in SLOWDOWN_REASONS and f > 0]
