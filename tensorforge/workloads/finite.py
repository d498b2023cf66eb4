"""Numbers from users are finite and in range, or refused in one line.

Why: NaN compares false with everything, so a range check written as `value < low` lets it
through, and then it decides quietly: `--telemetry-seconds nan` looped forever (`elapsed < nan`
never ends a loop), `gate --alpha nan` reported a +98% slowdown as PASS (`p < nan` is never
significant), `rightsize --latency-ms nan` ruled every target out. click's FloatRange has the
same gap. Every float option uses `FiniteFloat`, and every float read from a file goes through
`finite_number`; values that cross into policy code are checked again by their attrs
validators (`finite_in`), so a caller of the Python API gets the same refusal.
"""

from __future__ import annotations

import math
from typing import Any

import click

from tensorforge.errors import TensorForgeError


def _range_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    return " and ".join(parts)


def out_of_range(
    value: Any, low: float | None = None, high: float | None = None, low_open: bool = False, high_open: bool = False
) -> str | None:
    """Why `value` is not a finite number in the range, or None when it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be a number, got {value!r}"
    if not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    if low is not None and (value < low or (low_open and value == low)):
        return f"must be {_range_text(low, high, low_open, high_open)}, got {value!r}"
    if high is not None and (value > high or (high_open and value == high)):
        return f"must be {_range_text(low, high, low_open, high_open)}, got {value!r}"
    return None


def finite_number(
    value: Any,
    where: str,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """`value` as a float, or a TensorForgeError '{where} must be ...' (for values read from files)."""
    why = out_of_range(value, low, high, low_open, high_open)
    if why is not None:
        raise TensorForgeError(f"{where} {why}")
    return float(value)


def finite_in(low: float | None = None, high: float | None = None, low_open: bool = False, high_open: bool = False):
    """An attrs validator: the field is a finite number in the range (ValueError otherwise)."""

    def validate(_inst, attribute, value):
        why = out_of_range(value, low, high, low_open, high_open)
        if why is not None:
            raise ValueError(f"{attribute.name} {why}")

    return validate


class FiniteFloat(click.FloatRange):
    """click.FloatRange that also refuses NaN (and says 'finite' for infinities)."""

    name = "finite float"

    def convert(self, value, param, ctx):
        try:
            given = float(value)  # '1e400' is a float too: inf
        except (TypeError, ValueError):
            given = 0.0  # not a number at all: click's own message
        if not math.isfinite(given):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number
