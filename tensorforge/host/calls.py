"""Calls into plugin code during a prediction, each turned into a PluginError naming the plugin
when it raises or returns the wrong thing.

Why: registration is validated once by the host, but a workload kind's `operators()` and
`footprint_bytes()` and a mapping strategy's `explore()` run on every prediction. A kind whose
`operators()` raised, or returned a list of strings, ended `predict` in the plugin's traceback
(or a confusing AttributeError deep in the model). Here the call is made, its result checked
for the shape the model relies on, and any failure reported in one line that names the kind or
strategy and the module it comes from, so the user knows which package to blame.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tensorforge.errors import PluginError, TensorForgeError, one_line
from tensorforge.workloads.problems import Operator, Tensor


def _who(what: str, name: str, obj: Any) -> str:
    return f"{what} {name!r} ({type(obj).__module__})"


def operators_of(kind, params, workload_name: str) -> tuple[Operator, ...]:
    """kind.operators(params), checked: a sequence of Operator whose problems read and write
    Tensors and have a math mode and finite FLOPs."""
    who = _who("workload kind", getattr(kind, "name", "?"), kind)
    try:
        result = kind.operators(params)
    except TensorForgeError:
        raise  # the plugin's own one-line refusal of these params
    except Exception as exc:
        raise PluginError(f"{who}: operators() raised {one_line(exc)} (workload {workload_name!r})") from None
    if isinstance(result, (str, bytes)) or not isinstance(result, Sequence):
        raise PluginError(
            f"{who}: operators() returned a {type(result).__name__}; expected a tuple of tensorforge.workloads.problems.Operator"
        )
    for index, op in enumerate(result):
        problem = _operator_problem(op, index)
        if problem is not None:
            raise PluginError(f"{who}: operators() item {index}: {problem}")
    return tuple(result)


def _operator_problem(op: Any, index: int) -> str | None:
    if not isinstance(op, Operator):
        return f"a {type(op).__name__}, not a tensorforge.workloads.problems.Operator"
    if not isinstance(op.name, str) or not op.name:
        return f"operator name must be a non-empty string, got {op.name!r}"
    if isinstance(op.count, bool) or not isinstance(op.count, int) or op.count < 1:
        return f"operator {op.name!r}: count must be an integer >= 1, got {op.count!r}"
    problem = op.problem
    try:
        tensors = tuple(problem.reads()) + tuple(problem.writes())
        flops = problem.flops
        mode = problem.math_mode
    except Exception as exc:
        return f"operator {op.name!r}: its problem {type(problem).__name__} is unusable ({one_line(exc)})"
    if not all(isinstance(t, Tensor) and isinstance(t.nbytes, int) and t.nbytes >= 0 for t in tensors):
        return f"operator {op.name!r}: reads()/writes() must give Tensors with nbytes >= 0"
    if isinstance(flops, bool) or not isinstance(flops, (int, float)) or not math.isfinite(flops) or flops < 0:
        return f"operator {op.name!r}: flops must be a finite number >= 0, got {flops!r}"
    if not isinstance(mode, str) or not mode:
        return f"operator {op.name!r}: math_mode must be a string, got {mode!r}"
    return None


def footprint_of(kind, params, workload_name: str) -> int:
    """kind.footprint_bytes(params), checked: an integer >= 0."""
    who = _who("workload kind", getattr(kind, "name", "?"), kind)
    try:
        footprint = kind.footprint_bytes(params)
    except TensorForgeError:
        raise
    except Exception as exc:
        raise PluginError(f"{who}: footprint_bytes() raised {one_line(exc)} (workload {workload_name!r})") from None
    if (
        isinstance(footprint, bool)
        or not isinstance(footprint, (int, float))
        or not math.isfinite(footprint)
        or footprint < 0
    ):
        raise PluginError(f"{who}: footprint_bytes() must return an integer >= 0, got {footprint!r}")
    return int(footprint)


def explore_with(strategy, problem, machine, residency):
    """strategy.explore(...), with a raise turned into a PluginError naming the strategy."""
    try:
        return strategy.explore(problem, machine, residency)
    except TensorForgeError:
        raise
    except Exception as exc:
        who = _who("mapping strategy", getattr(strategy, "name", "?"), strategy)
        raise PluginError(f"{who}: explore() raised {one_line(exc)} on {type(problem).__name__}") from None
