"""Coefficients shipped with TensorForge, per architecture family (shipped.json beside this
file), each written from a real calibration (by a script kept at the lab-archive-2026-12 tag); the `basis`
of each entry says which device, when and how. A target of a family listed there gets them as
its 'carried-over' basis until it is calibrated itself; a family not listed gets the nearest
one, labelled as such.

The default rule for what a family's calibration did not probe: no shipped family has the
train-host probes' host costs of an eager training step (EstimateCoefficients.training), so each
keeps them unmeasured (TrainingHostCosts(): not modelled, every kernel of an eager step charged as
a forward one) and the estimate's basis says so; no figure is carried from another device."""

import json
from functools import lru_cache
from pathlib import Path

from tensorforge.estimate.coefficients import EstimateCoefficients, coefficients_from_shipped

DATA = Path(__file__).with_name("shipped.json")


@lru_cache(maxsize=1)
def shipped() -> dict[str, EstimateCoefficients]:
    table = json.loads(DATA.read_text(encoding="utf-8"))
    return {
        family: coefficients_from_shipped(data, f"shipped estimate coefficients {family} ({DATA.name})")
        for family, data in table.items()
    }
