"""The two tests the regression gate combines: Mann-Whitney U on the raw samples, and a
bootstrap confidence interval on the ratio of medians. numpy only (no scipy dependency)."""

import math
from collections.abc import Sequence

import numpy as np


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test: (U of x, p-value), normal approximation with tie and
    continuity corrections (the gate requires >= 10 samples per side, where it is accurate)."""
    a, b = np.asarray(x, float), np.asarray(y, float)
    n1, n2 = a.size, b.size
    both = np.concatenate([a, b])
    order = both.argsort(kind="mergesort")
    ranks = np.empty(both.size)
    sorted_values = both[order]
    # average ranks for ties
    start = 0
    while start < both.size:
        stop = start
        while stop + 1 < both.size and sorted_values[stop + 1] == sorted_values[start]:
            stop += 1
        ranks[order[start : stop + 1]] = (start + stop) / 2.0 + 1.0
        start = stop + 1
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2.0
    mean = n1 * n2 / 2.0
    _, counts = np.unique(both, return_counts=True)
    n = n1 + n2
    tie = (counts**3 - counts).sum() / (n * (n - 1)) if n > 1 else 0.0
    var = n1 * n2 / 12.0 * ((n + 1) - tie)
    if var <= 0:
        return float(u1), 1.0
    z = (abs(u1 - mean) - 0.5) / math.sqrt(var)
    return float(u1), float(min(1.0, 2.0 * _normal_sf(max(z, 0.0))))


def bootstrap_ratio_ci(
    baseline: Sequence[float], candidate: Sequence[float], *, resamples: int, confidence: float, seed: int
) -> tuple[float, float]:
    """Percentile bootstrap interval of median(candidate) / median(baseline). Deterministic for
    a given seed (the gate derives it from the two captures' digests)."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(baseline, float), np.asarray(candidate, float)
    ia = rng.integers(0, a.size, size=(resamples, a.size))
    ib = rng.integers(0, b.size, size=(resamples, b.size))
    ratios = np.median(b[ib], axis=1) / np.median(a[ia], axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    return float(low), float(high)
