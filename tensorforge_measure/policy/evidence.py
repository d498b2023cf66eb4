"""Reading captures as evidence: a capture counts only when it verifies (digest, canonical
bytes, consistency) and reads as this TensorForge's capture schema (upgraded if older)."""

from pathlib import Path
from typing import TYPE_CHECKING

import attrs
from tensorforge_measure.telemetry.clock_events import SLOWDOWN_REASONS

from tensorforge.api import TensorForgeError
from tensorforge_measure.capture.document import check
from tensorforge_measure.capture.model import Capture
from tensorforge_measure.capture.sections.diagnostic import Diagnostic
from tensorforge_measure.capture.sections.measured import Measured

if TYPE_CHECKING:
    from tensorforge_measure.capture.origin import Origin
    from tensorforge_measure.capture.trust import Trust


@attrs.frozen
class Evidence:
    """A verified capture, the file it came from, and who signed it."""

    path: str
    capture: Capture
    origin: str = "unsigned"  # trusted | untrusted | unsigned (invalid never verifies)
    origin_detail: str = "unsigned: nothing shows who produced it"


def load_evidence(path, role: str, trust: "Trust | None" = None) -> Evidence:
    """A verified capture, or a TensorForgeError naming the file and what is wrong with it.
    With `trust` requiring it, also one signed by a trusted key (capture/trust.py)."""
    from tensorforge_measure.capture.trust import check_trust

    path = Path(path)
    what = f"{role} capture {path}"

    def refuse_untrusted(origin: "Origin") -> None:
        # before the body is parsed: an untrusted document costs a read, nothing more
        if origin.status == "invalid":  # a forged or re-made seal: the integrity verdict
            raise TensorForgeError(f"{what} does not verify: {origin.detail}")
        why = trust.refusal(what, origin.status, origin.detail) if trust is not None else None
        if why is not None:
            raise TensorForgeError(why)

    required = trust is not None and trust.required
    report, capture = check(
        path, trust.fingerprints if trust is not None else None, refuse_untrusted if required else None
    )
    if not report.ok or capture is None:
        raise TensorForgeError(f"{role} capture {path} does not verify: {report.problems[0]}")
    check_trust(trust, what, report)
    return Evidence(str(path), capture, report.origin, report.origin_detail)


def slowdowns(capture: Capture, workload: str) -> list[tuple[str, float]]:
    """(reason, fraction) pairs of hardware/thermal slowdown in the telemetry window of the regime
    the workload's primary timing was taken in (the burst window where one exists)."""
    diag = capture.diagnostic
    window = None
    if isinstance(diag, Diagnostic):
        row = capture.measured.workloads.get(workload) if isinstance(capture.measured, Measured) else None
        regime = getattr(row, "regime", None) or "burst"
        burst = (diag.burst_windows or {}).get(workload)
        window = burst if regime == "burst" and burst is not None else diag.windows.get(workload)
    fractions = (window.clock_event_fractions if window else None) or ()
    return [(r, f) for r, f in fractions if r in SLOWDOWN_REASONS and f > 0]
