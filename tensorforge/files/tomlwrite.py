"""The little TOML writing TensorForge needs: scalars, lists of scalars, keys, inline tables.

Python reads TOML (tomllib) but does not write it, and a dependency for this much is not
worth having. Every value written here reads back through tomllib as the same Python value:
floats use `repr` (the shortest string that round-trips), ints stay ints.
"""

import math
import re
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:  # other control characters must be escaped
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def key(name: str) -> str:
    return name if _BARE_KEY.match(name) else string(name)


def value(item: Any) -> str:
    """One TOML value. Raises TypeError for what TOML cannot hold (None, arbitrary objects)."""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int):
        return str(item)
    if isinstance(item, float):
        if math.isnan(item):
            return "nan"
        if math.isinf(item):
            return "inf" if item > 0 else "-inf"
        return repr(item)
    if isinstance(item, str):
        return string(item)
    if isinstance(item, (list, tuple)):
        return "[" + ", ".join(value(v) for v in item) + "]"
    if isinstance(item, dict):
        return "{" + ", ".join(f"{key(str(k))} = {value(v)}" for k, v in item.items()) + "}"
    raise TypeError(f"TOML cannot hold a {type(item).__name__}")


def assignment(name: str, item: Any, comment: str = "") -> str:
    line = f"{key(name)} = {value(item)}"
    return f"{line}  # {comment}" if comment else line
