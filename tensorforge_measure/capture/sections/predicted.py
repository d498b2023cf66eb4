"""PREDICTED: the Core's analytical output, with datasheet ceilings and, where the measuring
device was calibrated, with its calibrated ceilings. The Core's own result classes are used as
they are, so the capture holds exactly what `tensorforge predict --json` would print."""

import attrs

from tensorforge.api import Prediction
from tensorforge_measure.capture.fields import const, field, optional
from tensorforge_measure.capture.sections.energy import EnergyPrediction


@attrs.frozen(kw_only=True)
class Predicted:
    """PREDICTED: lower bounds from datasheet ceilings and, where calibrated, from measured ones."""

    label: str = const("PREDICTED", "the section's label")
    analytical: Prediction = field("lower bounds from the target's datasheet ceilings")
    calibrated: Prediction | None = field(
        "lower bounds from the measuring device's calibrated ceilings; null when there are none "
        "(calibrated_note says why)"
    )
    calibrated_target: str | None = field(
        "the target the calibrated bounds describe (the measuring device's target, which may "
        "differ from the predicted one)"
    )
    calibrated_note: str | None = field("why there is no calibrated prediction; null when there is one")
    calibrated_sustained: Prediction | None = optional(
        "lower bounds from the sustained regime's calibrated ceilings (the bound sustained timings are checked against)"
    )
    calibrated_sustained_note: str | None = optional("why there is no sustained-regime bound")
    energy: EnergyPrediction | None = optional(
        "energy per execution: the FLOOR (sound) and the ESTIMATE (expected) per workload, from the "
        "calibrated energy coefficients (docs/energy.md); absent without an energy calibration"
    )
    energy_note: str | None = optional("why there is no energy prediction")
