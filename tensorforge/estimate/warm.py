"""The estimate of one execution in a window of calls back to back with no L2 flush between them
(an energy window), from the flushed estimate that every latency figure is in.

Why: every timed call (workloads and the estimate's probes alike) follows an L2 flush, so the
estimate's device time holds the flush's aftermath: cold misses and the flush's dirty lines
written back while the call reads. An energy window runs its calls back to back without it. On
the H200 (2026-12-01 11:10 UTC) the windows ran 0.7 us (the 64^3 GEMM) to 6 us (decode GEMMs
streaming >100 MB) faster per execution than the flushed graph p50, and the energy estimate, on
the flushed time, came out 36% high for the tiny GEMM and 8-14% for a small convolution.

What is calibrated: selected probe items are timed both ways (probe_plan.WARM_ITEMS: the flushed
graph sample and a graph of the same calls unrolled without flushes), and per class of operator
the median saving (flushed - warm) is a coefficient (EstimateCoefficients.warm_saving_s). The
classes follow the bound's operator: on the H200 probes of 12:25 UTC, read-dominated memory-bound
operators (GEMVs and skinny decode GEMMs, decode attention) saved 3-9 us a call whatever their
size (19-268 MB), other memory-bound ones (elementwise, norms, copies over 100 MB) ~1 us, and
compute-bound ones ~0.4-1.5 us below 50 us a call (above it the saving is lost in the samples'
noise, +-4 us on 0.3-1 ms GEMMs, so the compute items timed warm are short ones).

One execution saves the LARGEST saving among its operators' classes, not their sum: the flush
comes once per execution. On the H200 the 4-layer decode steps (12-16 read-dominated GEMMs and
attentions each) saved 5-6 us per step in their windows, one read-class saving, not sixteen.
"""

import statistics
from collections.abc import Iterable, Mapping

# a GEMM reading at least this many operand bytes per byte written is a read stream (gemm.py)
from .gemm import READ_DOMINATED

WARM_CLASSES = ("compute", "memory", "read")
# a class's saving is the median of at least this many probe pairs, else it is not calibrated
MIN_PAIRS = 3


def warm_class(problem, bottleneck: str) -> str:
    """'read' (memory-bound, reads >= READ_DOMINATED x writes), 'memory' (other memory-bound) or
    'compute', from the bound's operator: its problem's tensors and its bottleneck."""
    if bottleneck != "memory":
        return "compute"
    try:
        reads = sum(float(t.nbytes) for t in problem.reads())
        writes = sum(float(t.nbytes) for t in problem.writes())
    except (AttributeError, TypeError):
        return "memory"
    return "read" if reads >= READ_DOMINATED * max(writes, 1.0) else "memory"


def fit_savings(pairs: Iterable[tuple[str, float, float]]) -> dict[str, float]:
    """Per class, the median of (flushed - warm) seconds over its (class, flushed, warm) probe
    pairs, never below 0; a class with fewer than MIN_PAIRS pairs is left out (no saving)."""
    by_class: dict[str, list[float]] = {}
    for cls, flushed, warm in pairs:
        if flushed > 0 and warm > 0:
            by_class.setdefault(cls, []).append(float(flushed) - float(warm))
    return {c: max(0.0, statistics.median(d)) for c, d in sorted(by_class.items()) if len(d) >= MIN_PAIRS}


def window_saving(classes: Iterable[str], savings: Mapping[str, float]) -> float:
    """What one execution of operators of these classes saves in a window without flushes: the
    largest of their classes' savings (module docstring); 0 where none is calibrated."""
    return max((float(savings.get(c, 0.0)) for c in classes), default=0.0)
