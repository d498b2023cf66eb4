"""Turning user-supplied fields (inline specs, TOML/JSON suites) into validated attrs params.

Workload plugins declare their parameters as an attrs class; each field's `metadata` may hold
`min` (for numbers) or `choices` (for strings). `build_params` converts strings from inline
specs, rejects unknown fields with a suggestion, and names the culprit in every error.
"""

from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge.errors import TensorForgeError, closest

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _coerce(kind: str, field: attrs.Attribute, value: Any) -> Any:
    where = f"{kind}: {field.name}"
    meta = field.metadata
    ftype = field.type
    if isinstance(ftype, str):  # string annotations under `from __future__ import annotations`
        ftype = {"int": int, "float": float, "bool": bool, "str": str}.get(ftype.split("|")[0].strip(), str)
    if value is None:
        if field.default is None:
            return None
        raise TensorForgeError(f"{where} must be given")
    if ftype is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise TensorForgeError(f"{where} must be true or false, got {value!r}")
    if ftype is int:
        if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
            raise TensorForgeError(f"{where} must be an integer, got {value!r}")
        try:
            number = int(value) if not isinstance(value, str) else int(value.strip(), 10)
        except (TypeError, ValueError):
            raise TensorForgeError(f"{where} must be an integer, got {value!r}") from None
        low = meta.get("min")
        if low is not None and number < low:
            raise TensorForgeError(f"{where} must be >= {low}, got {number}")
        return number
    if ftype is float:
        try:
            real = float(value)
        except (TypeError, ValueError):
            raise TensorForgeError(f"{where} must be a number, got {value!r}") from None
        if real != real or real in (float("inf"), float("-inf")):
            raise TensorForgeError(f"{where} must be finite, got {value!r}")
        low = meta.get("min")
        if low is not None and real < low:
            raise TensorForgeError(f"{where} must be >= {low}, got {real}")
        return real
    text = str(value).strip()
    choices = meta.get("choices")
    if choices and text.lower() not in choices:
        raise TensorForgeError(
            f"{where} must be one of {', '.join(choices)}, got {value!r}{closest(text.lower(), choices)}"
        )
    return text.lower() if choices else text


def build_params(kind: str, cls: type, fields: Mapping[str, Any]):
    """An instance of the attrs class `cls` from `fields`, or a TensorForgeError naming the field."""
    known = {f.name: f for f in attrs.fields(cls)}
    for name in fields:
        if name not in known:
            raise TensorForgeError(
                f"{kind}: unknown parameter {name!r}{closest(name, known)}; known: {', '.join(known)}"
            )
    values = {}
    for name, field in known.items():
        if name in fields:
            values[name] = _coerce(kind, field, fields[name])
    try:
        return cls(**values)
    except TypeError as exc:  # a required field missing
        missing = [n for n, f in known.items() if f.default is attrs.NOTHING and n not in values]
        if missing:
            raise TensorForgeError(f"{kind}: missing parameter {missing[0]!r}") from None
        raise TensorForgeError(f"{kind}: {exc}") from None
    except ValueError as exc:  # a cross-field check in the params class
        raise TensorForgeError(f"{kind}: {exc}") from None


def params_spec(kind: str, params) -> str:
    """The canonical inline spec, e.g. 'gemm:m=8192,n=8192,k=8192,dtype=bf16'."""
    from tensorforge.workloads.precision import default_math_mode

    parts = []
    dtype = getattr(params, "dtype", None)
    for field in attrs.fields(type(params)):
        value = getattr(params, field.name)
        if value is None:
            continue
        # dtype is always spelled out (a stored spec must not depend on today's default);
        # the math mode only when it is not the one the dtype implies.
        if field.name == "math_mode" and dtype is not None and value == default_math_mode(dtype):
            continue
        if field.name != "dtype" and value == field.default:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        parts.append(f"{field.name}={value}")
    return f"{kind}:{','.join(parts)}" if parts else kind
