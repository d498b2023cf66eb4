"""How capture fields are declared: what each one means, its unit, and whether it may be left out.

Why metadata on the fields themselves: the published JSON Schema (docs/capture.schema.json) and
the field reference in docs/capture.md are generated from it, so a field cannot be added
without saying what it is, and the documents cannot drift from the classes (a test regenerates
both). Fields made with `optional()` are left out of the document when they are None; that is
how a field is added without breaking captures written before it existed.
"""

import math
from typing import Any

import attrs

DOC, UNIT, CONST, OMIT = "doc", "unit", "const", "omit_when_none"


class Mismatch(ValueError):
    """A value the capture schema does not allow; its message says what was expected."""


def field(doc: str, unit: str | None = None, **kwargs: Any) -> Any:
    """A field that is always written (None as null)."""
    return attrs.field(metadata={DOC: doc, UNIT: unit}, **kwargs)


def optional(doc: str, unit: str | None = None, **kwargs: Any) -> Any:
    """A field left out of the document when None: absent in older captures, or not known."""
    return attrs.field(default=None, metadata={DOC: doc, UNIT: unit, OMIT: True}, **kwargs)


def const(value: Any, doc: str) -> Any:
    """A field with one allowed value (a section's label, a row's status): it says what the
    object is, so a reader (and the schema) can tell the variants of a section apart."""

    def _is(_inst: Any, attribute: "attrs.Attribute[Any]", given: Any) -> None:
        if given != value:
            raise Mismatch(f"{attribute.name} must be {value!r}, got {given!r}")

    return attrs.field(default=value, validator=_is, metadata={DOC: doc, UNIT: None, CONST: value})


def _bad_sample(value: Any) -> bool:
    return isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0


def measured_values() -> Any:
    """Validator of raw samples (durations, joules): each a finite number >= 0. Checked when a
    capture is read: a sealed capture with a sample of -1 or inf once made verify, gate,
    report, rightsize and export raise ValueError from the statistics, and `gate` exit 1,
    which means REGRESSION. (No samples at all is a state every reader handles: no statistic.)"""

    def check(_inst: Any, attribute: "attrs.Attribute[Any]", given: Any) -> None:
        if given is None:
            return
        nested = bool(given) and isinstance(given[0], tuple)
        for row_index, row in enumerate(given if nested else (given,)):
            where = f"{attribute.name}[{row_index}]" if nested else attribute.name
            for index, value in enumerate(row):
                if _bad_sample(value):
                    raise Mismatch(f"{where}[{index}] is {value!r}: every sample is a finite number >= 0")

    return check
