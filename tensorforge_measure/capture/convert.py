"""Capture objects to JSON-ready data and back, with cattrs.

Why a converter of its own: reading is strict (a key the classes do not know is an error, so a
capture either matches its schema version or is refused in one line), and fields declared with
`fields.optional()` are left out when None. The Core's converter is the starting point, so the
Core's result classes inside PREDICTED come out exactly as `predict --json` writes them.
"""

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.v import format_exception

from tensorforge.api import converter as core_converter
from tensorforge.api import to_data
from tensorforge_measure.capture.fields import OMIT, Mismatch
from tensorforge_measure.capture.model import Capture, Unavailable
from tensorforge_measure.capture.sections.calibrated import Calibrated
from tensorforge_measure.capture.sections.diagnostic import Diagnostic
from tensorforge_measure.capture.sections.measured import FailedMeasurement, Measured, Measurement, WorkloadMeasurement

converter = core_converter.copy(forbid_extra_keys=True)


def _ours(cls: Any) -> bool:
    return attrs.has(cls) and getattr(cls, "__module__", "").startswith("tensorforge_measure.capture")


def _object(data: Any) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise Mismatch(f"expected a JSON object, got {type(data).__name__}")
    return data


def _unstructure_fn(cls: type[Any]) -> Callable[[Any], Any]:
    omit: dict[str, Any] = {f.name: override(omit_if_default=True) for f in attrs.fields(cls) if f.metadata.get(OMIT)}
    return make_dict_unstructure_fn(cls, converter, **omit)


converter.register_unstructure_hook_factory(_ours, _unstructure_fn)


def _structure_fn(cls: type[Any]) -> Callable[[Any, Any], Any]:
    """As strict as the published schema: every field but an optional() one must be present,
    even one whose class has a default for building it in code."""
    base = make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=True)
    required = [f.name for f in attrs.fields(cls) if not f.metadata.get(OMIT)]

    def structure(data: Any, type_: Any) -> Any:
        missing = [name for name in required if name not in _object(data)]
        if missing:
            raise Mismatch(f"required field missing: {', '.join(missing)}")
        return base(data, type_)

    return structure


converter.register_structure_hook_factory(_ours, _structure_fn)


def _either(pick: Callable[[Mapping[str, Any]], type[Any]]) -> Callable[[Any, Any], Any]:
    """A structure hook for a union of section classes, choosing by what the data says."""
    return lambda data, _type: converter.structure(data, pick(_object(data)))


def _by(key: str, choices: Mapping[Any, type[Any]]) -> Callable[[Mapping[str, Any]], type[Any]]:
    def pick(data: Mapping[str, Any]) -> type[Any]:
        value = data.get(key)
        for wanted, cls in choices.items():
            if value is wanted or (isinstance(wanted, str) and value == wanted):
                return cls
        raise Mismatch(
            f"{key} must be one of {', '.join(json.dumps(c) for c in choices)}, got {json.dumps(value, default=repr)}"
        )

    return pick


converter.register_structure_hook(
    WorkloadMeasurement, _either(_by("status", {"ok": Measurement, "failed": FailedMeasurement}))
)
for _section in (Measured, Calibrated):
    converter.register_structure_hook(
        _section | Unavailable, _either(_by("available", {True: _section, False: Unavailable}))
    )
converter.register_structure_hook(
    Diagnostic | Unavailable, _either(lambda d: Diagnostic if "windows" in d else Unavailable)
)


def to_document(value: Any) -> Any:
    """JSON-ready data (infinities as strings, as canonical JSON writes them)."""
    return to_data(converter.unstructure(value))


def _message(exc: BaseException, type_: Any) -> str:
    # a validator's own words ("label must be 'DIAGNOSTIC', got 'MEASURED'") say more than
    # cattrs' generic "invalid value"
    if isinstance(exc, Mismatch) or (type_ is None and isinstance(exc, ValueError) and str(exc)):
        return str(exc)
    return format_exception(exc, type_)


def first_error(exc: Exception, path: str = "capture") -> str:
    """cattrs reports every problem with its path; one line names the first."""
    if isinstance(exc, cattrs.BaseValidationError):
        messages = cattrs.transform_error(exc, path=path, format_exception=_message)
        return messages[0] if messages else str(exc)
    return str(exc)


def from_document(data: Mapping[str, Any]) -> Capture:
    return converter.structure(data, Capture)
