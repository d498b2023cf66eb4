"""cattrs (un)structuring and canonical JSON: sorted keys, shortest round-trip floats, so the
same inputs give byte-identical documents."""

import json
import math
from typing import Any

import cattrs

converter = cattrs.Converter()


def _clean(value: Any) -> Any:
    """JSON has no inf/nan: write them as strings rather than emitting invalid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else ("-inf" if value < 0 else "nan")
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def to_data(value: Any) -> Any:
    return _clean(converter.unstructure(value))


def canonical_json(data: Any, indent: int = 2) -> str:
    return json.dumps(_clean(data), sort_keys=True, indent=indent, allow_nan=False, ensure_ascii=False) + "\n"
