"""Each calibrated ceiling with a margin measured from the probes' own spread.

Why: a ceiling is a rate from a probe's fastest sample, and a later run's fastest sample of the
same work lands a little faster or slower by chance. A bound built on the bare maximum then
fails by noise: on an H200 an fp32 4096^3 GEMM's fastest sample ran 0.2% below its bound, a
16 MiB all-reduce 0.5%. How far the fastest sample can move is read from the probe itself: the
relative spread of its FASTEST fastest samples, (t_FASTEST - t_1) / t_1, is a few gaps between
the order statistics at the fast end, where a fresh minimum falls (a conservative reading: the
expected move of the minimum is about one such gap).

A ceiling is then the highest of rate x (1 + max(floor, spread)) over every probe of its mode or
access pattern in its regime, so a probe that reached a slightly lower rate with a wider spread
still lifts the ceiling past what it could reach next time. The floor covers what one run's
samples cannot show: compute rates move by about 1% between runs (store.COMPUTE_ALLOWANCE says
where that was measured). The calibration records each ceiling's margin over the highest
observed rate (Calibration.margins), and every probe's own rates and spreads stay in its record.
"""

from collections.abc import Iterable, Sequence

# The fastest samples whose relative spread is a probe's margin.
FASTEST = 5


def fastest_spread(samples: Sequence[float]) -> float:
    """(t_k - t_1) / t_1 over the k = min(FASTEST, n) fastest samples; 0 with fewer than two
    samples or a zero fastest time (no spread can be read)."""
    ordered = sorted(float(s) for s in samples)
    if len(ordered) < 2 or not ordered[0] > 0:
        return 0.0
    return (ordered[min(FASTEST, len(ordered)) - 1] - ordered[0]) / ordered[0]


def ceiling(observations: Iterable[tuple[float, float]], floor: float = 0.0) -> tuple[float, float]:
    """(ceiling, margin) from (rate, spread) observations of one mode or pattern: ceiling =
    max(rate x (1 + max(floor, spread))); margin = ceiling / the highest rate - 1."""
    seen = [(float(rate), max(float(floor), float(spread or 0.0))) for rate, spread in observations]
    if not seen:
        raise ValueError("a ceiling needs at least one observed rate")
    top = max(rate * (1.0 + margin) for rate, margin in seen)
    best = max(rate for rate, _ in seen)
    return top, top / best - 1.0
