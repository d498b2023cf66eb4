"""The estimate of one execution in a window of calls back to back with no L2 flush between them
(an energy window), from the flushed estimate that every latency figure is in.

Why: every timed call (workloads and the estimate's probes alike) follows an L2 flush, so the
estimate's device time holds the flush's aftermath: cold misses and the flush's dirty lines
written back while the call reads. An energy window runs its calls back to back without it. On
an H200 (2026-12-01) the windows ran 0.7 us (the 64^3 GEMM) to 6 us (decode GEMMs
streaming >100 MB) faster per execution than the flushed graph p50, and the energy estimate, on
the flushed time, came out 36% high for the tiny GEMM and 8-14% for a small convolution.

What is calibrated: selected probe items are timed both ways (probe_plan.warm_timed: the flushed
graph sample and a graph of the same calls unrolled without flushes), and per class of operator
the saving (flushed - warm) is fitted: a cap and a share of a short call's time, below
(EstimateCoefficients.warm_saving_s, warm_saving_share). The
classes follow the bound's operator: in H200 probes (2026-12-01), read-dominated memory-bound
operators (GEMVs and skinny decode GEMMs, decode attention) saved 3-9 us a call whatever their
size (19-268 MB), other memory-bound ones (elementwise, norms, copies over 100 MB) ~1 us, and
compute-bound ones ~0.4-1.5 us below 50 us a call (above it the saving is lost in the samples'
noise, +-4 us on 0.3-1 ms GEMMs, so the compute items timed warm are short ones).

One execution saves the LARGEST saving among its operators' classes, not their sum: the flush
comes once per execution. On the H200 the 4-layer decode steps (12-16 read-dominated GEMMs and
attentions each) saved 5-6 us per step in their windows, one read-class saving, not sixteen.

A short call saves a SHARE of its time, not the class's whole saving (2026-12-01): the
flush's aftermath slows a call only while it reads, so a call shorter than the aftermath saves
about a fixed share of itself. In one H200 session's probes the one-tile GEMMs (2.6-4.0 us) saved
0.37-0.67 us (14-17%) where the memory class's median was 1.05 us, and the 64^3 GEMM's window
estimate came out 12% short; the read class's savings rose with the call up to ~32 us (3.1 us at
10.7 us, 5.4-6.2 at 20-28 us) and stayed ~7-9 us above. So per class the saving is
min(cap, share x the call's flushed time): `fit_warm` takes the share as the median of saving /
time over the calls below the knee (cap / share) and the cap as the median saving above it,
alternating until they settle (leave-one-out over that session's 73 pairs: mean error 0.96 / 0.76 /
1.12 us for compute / memory / read, was 0.98 / 0.85 / 1.46 with the class median alone). A class
with fewer than MIN_PAIRS pairs on either side of its knee keeps the median alone (no share).
"""

from collections.abc import Iterable, Mapping

# a GEMM reading at least this many operand bytes per byte written is a read stream (gemm.py)
from tensorforge.estimate.gemm import READ_DOMINATED

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


# alternations of the cap / share fit at most (it settles in 2-4 on the H200's pairs)
FIT_ROUNDS = 20


def _cap_and_share(points: list[tuple[float, float]]) -> tuple[float, float | None]:
    """(cap, share) of one class's (flushed seconds, saving seconds) pairs (module docstring);
    share None where either side of the knee has fewer than MIN_PAIRS pairs."""
    import statistics  # the fit's only: a prediction imports this module, and statistics costs ms

    cap = statistics.median(s for _, s in points)
    share = statistics.median(s / t for t, s in points)
    for _ in range(FIT_ROUNDS):
        if not (share > 0 and cap > 0):
            return cap, None
        knee = cap / share
        below = [s / t for t, s in points if t < knee]
        above = [s for t, s in points if t >= knee]
        if len(below) < MIN_PAIRS or len(above) < MIN_PAIRS:
            return statistics.median(s for _, s in points), None
        settled = (statistics.median(above), statistics.median(below))
        if settled == (cap, share):
            break
        cap, share = settled
    return cap, share


def fit_warm(pairs: Iterable[tuple[str, float, float]]) -> tuple[dict[str, float], dict[str, float]]:
    """Per class, from its (class, flushed, warm) probe pairs: the saving's cap (seconds, never
    below 0) and the share of a short call's time it saves (module docstring); a class with fewer
    than MIN_PAIRS pairs is left out (no saving), one without enough on both sides of its knee
    gets its median saving and no share."""
    by_class: dict[str, list[tuple[float, float]]] = {}
    for cls, flushed, warm in pairs:
        if flushed > 0 and warm > 0:
            by_class.setdefault(cls, []).append((float(flushed), float(flushed) - float(warm)))
    caps: dict[str, float] = {}
    shares: dict[str, float] = {}
    for cls, points in sorted(by_class.items()):
        if len(points) < MIN_PAIRS:
            continue
        cap, share = _cap_and_share(points)
        caps[cls] = max(0.0, cap)
        if share is not None and caps[cls] > 0:
            shares[cls] = share
    return caps, shares


def window_saving(
    classes: Iterable[str],
    savings: Mapping[str, float],
    shares: Mapping[str, float] | None = None,
    device_s: float | None = None,
) -> float:
    """What one execution of operators of these classes saves in a window without flushes: the
    largest of their classes' savings, each at most its share of the execution's flushed device
    time where the class has one (module docstring); 0 where none is calibrated."""
    shares = shares or {}

    def saving(c: str) -> float:
        cap = float(savings.get(c, 0.0))
        share = shares.get(c)
        return cap if share is None or device_s is None else min(cap, float(share) * float(device_s))

    return max((saving(c) for c in classes), default=0.0)
