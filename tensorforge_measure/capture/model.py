"""The capture: one versioned document holding the five labelled sections, provenance, the
comparison of predicted with measured, and a digest. Frozen attrs classes, (un)structured by
capture/convert.py; read with capture/document.py.

MEASURED, CALIBRATED and DIAGNOSTIC are either their section or `Unavailable` (with the reason),
so a reader must say which case it handles; `capture.measured.available` tells them apart.
"""

import attrs

from tensorforge.api import Target
from tensorforge_measure.capture.fields import Mismatch, const, field, optional
from tensorforge_measure.capture.labels import BY_SECTION
from tensorforge_measure.capture.sections.calibrated import Calibrated
from tensorforge_measure.capture.sections.comparison import Comparison
from tensorforge_measure.capture.sections.diagnostic import Diagnostic
from tensorforge_measure.capture.sections.measured import Measured
from tensorforge_measure.capture.sections.policy import PolicyRecord
from tensorforge_measure.capture.sections.predicted import Predicted
from tensorforge_measure.capture.sections.provenance import Digest, Provenance

SCHEMA = "tensorforge.capture"
SCHEMA_VERSION = 2


@attrs.frozen(kw_only=True)
class Unavailable:
    """A MEASURED, CALIBRATED or DIAGNOSTIC section whose evidence does not exist here."""

    label: str = field(
        "the section's label (MEASURED, CALIBRATED or DIAGNOSTIC)",
        validator=attrs.validators.in_(("MEASURED", "CALIBRATED", "DIAGNOSTIC")),
    )
    available: bool = const(False, "false: this section holds no evidence")
    reason: str = field("why, in one line (no device, no probes installed, telemetry disabled...)")
    caveat: str | None = optional("DIAGNOSTIC only: the telemetry source's caveat")


def _labelled(instance: "Capture", attribute: "attrs.Attribute[object]", value: object) -> None:
    want = BY_SECTION[attribute.name].name
    if getattr(value, "label", None) != want:
        raise Mismatch(f"section {attribute.name!r} must be labelled {want}, got {getattr(value, 'label', None)!r}")


@attrs.frozen(kw_only=True)
class Capture:
    """One run of `tensorforge run`: the five labelled sections, provenance, the comparison and
    the digest."""

    schema: str = const(SCHEMA, "names the document kind")
    schema_version: int = const(
        SCHEMA_VERSION, "version of this layout; older captures are upgraded when read (docs/capture.md)"
    )
    complete: bool = field("false when the run was interrupted and this is what it had gathered")
    target: str = field("the predicted target's name")
    operating_point: str = field("the target's operating point the prediction used")
    target_description: Target | None = optional(
        "the whole target as predicted, so a capture of a target given as a file stays reproducible "
        "(absent in captures written before it was recorded)"
    )
    provenance: Provenance = field("who, what, where and when")
    predicted: Predicted = field("PREDICTED", validator=_labelled)
    measured: Measured | Unavailable = field("MEASURED, or why not", validator=_labelled)
    calibrated: Calibrated | Unavailable = field("CALIBRATED, or why not", validator=_labelled)
    diagnostic: Diagnostic | Unavailable = field("DIAGNOSTIC, or why not", validator=_labelled)
    policy: PolicyRecord = field("POLICY as recorded by the run (bound checks)", validator=_labelled)
    comparison: Comparison | None = field("PREDICTED against MEASURED; null if the run was interrupted before it")
    digest: Digest | None = optional("integrity record; absent only before the capture is sealed")
