"""The estimate's calibrated coefficients from the document `predict --ceilings` was given: a
calibration document (its 'estimate' section) or a capture (its CALIBRATED section's). Pure JSON
reading in the Core (it never imports what produced them); a document without them, or fitted
for another target, gives None and the target's own basis applies."""

from tensorforge.errors import TensorForgeError
from tensorforge.estimate.coefficients import EstimateCoefficients, coefficients_from_data
from tensorforge.files.documents import read_json


def coefficients_in_document(path, target_name: str) -> EstimateCoefficients | None:
    try:
        data = read_json(path, "ceilings document")  # the one reader: .json.gz included
    except TensorForgeError:
        return None  # the ceilings reader has already said what is wrong with the file
    if not isinstance(data, dict):
        return None
    section = data.get("estimate")
    if section is None and isinstance(data.get("calibrated"), dict):
        section = data["calibrated"].get("estimate")
    if not isinstance(section, dict) or "coefficients" not in section:
        return None
    if section.get("target") != target_name:
        return None
    return coefficients_from_data(section["coefficients"], f"estimate coefficients in {path}")
