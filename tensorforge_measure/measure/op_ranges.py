"""Named ranges that tie a builder's code to the Core's operators, so a kernel trace can say
which operator each kernel belongs to.

A builder wraps the code of each Core operator in ``operator_range(name)``, where ``name`` is
the operator's name in the Core's decomposition (``WorkloadKind.operators``); an operator
with ``count`` c (one per layer, say) is entered c times per call. A test holds every shipped
builder to that, one to one.

Why ranges are switched off by default: a profiler annotation (``record_function``) costs
about a microsecond of host time per range, and an eager, host-bound workload would carry
that cost into its timed samples. Outside a trace window ``operator_range`` returns one shared
no-op context (a global read and a call); only the trace window turns the annotations on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager

# Annotation names in a trace are PREFIX + operator name, so they cannot be confused with the
# framework's own ranges (aten::linear, ProfilerStep#3, ...).
PREFIX = "tf.op/"
ITERATION = "tf.iteration"  # one call of the workload inside a trace window
FLUSH = "tf.flush"  # the L2 flush between traced calls (not part of the workload)

_NOOP = contextlib.nullcontext()
_recorder: Callable[[str], ContextManager] | None = None


def operator_range(name: str) -> ContextManager:
    """Context manager marking the code of Core operator `name` (a no-op unless recording)."""
    recorder = _recorder
    return _NOOP if recorder is None else recorder(name)


@contextlib.contextmanager
def recording(recorder: Callable[[str], ContextManager]) -> Iterator[None]:
    """Route operator ranges to `recorder(name)` while the block runs; restore on exit."""
    global _recorder
    previous, _recorder = _recorder, recorder
    try:
        yield
    finally:
        _recorder = previous


def profiler_recorder() -> Callable[[str], ContextManager]:
    """Ranges as PyTorch profiler annotations named PREFIX + operator name."""
    from torch.profiler import record_function

    return lambda name: record_function(PREFIX + name)


@contextlib.contextmanager
def names_entered() -> Iterator[list[str]]:
    """Collect, in order, the operator names entered while the block runs (no profiler): how a
    test checks a builder's ranges against the Core's operators."""
    names: list[str] = []

    def record(name: str) -> ContextManager:
        names.append(name)
        return _NOOP

    with recording(record):
        yield names


def operator_of(annotation: str) -> str | None:
    """The operator name of a trace annotation, or None when it is not an operator range."""
    return annotation[len(PREFIX) :] if annotation.startswith(PREFIX) else None
