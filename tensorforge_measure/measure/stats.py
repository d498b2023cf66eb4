"""Summary statistics of timing samples (seconds), numpy only.

Percentiles use numpy's default ('linear') method so anyone can reproduce them with a
plain np.percentile call. rel_iqr is the spread measure the timing loop stops on: unlike
cv it ignores the few slow outliers (preemption, clock changes) every GPU run contains.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import attrs
import numpy as np


@attrs.frozen
class SampleStats:
    n: int
    p10: float
    p50: float
    p90: float
    mean: float
    stdev: float  # sample standard deviation (ddof=1); 0.0 when n == 1
    cv: float  # stdev / mean; 0.0 when all samples are 0
    rel_iqr: float  # (p75 - p25) / p50; 0.0 for no spread, inf when p50 == 0 but p75 > 0
    min: float
    max: float


def _ratio(num: float, den: float) -> float:
    # A zero denominator only happens when samples are all (or mostly) 0 s, e.g. events
    # below timer resolution; no spread means 0, any spread relative to 0 is unbounded.
    if den > 0:
        return num / den
    return 0.0 if num == 0 else math.inf


def summarize(samples: Iterable[float]) -> SampleStats:
    """Statistics of durations in seconds; ValueError on empty, non-finite or negative input."""
    if not isinstance(samples, np.ndarray):
        samples = list(samples)  # accepts generators as well as sequences
    arr = np.asarray(samples, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"samples must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("no samples to summarize")
    if not np.all(np.isfinite(arr)):
        raise ValueError("samples contain NaN or infinity")
    if np.any(arr < 0):
        raise ValueError("samples contain negative durations")

    p10, p25, p50, p75, p90 = (float(v) for v in np.percentile(arr, [10, 25, 50, 75, 90]))
    mean = float(arr.mean())
    stdev = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    # float()/int() everywhere: numpy scalars are not what a JSON encoder expects.
    return SampleStats(
        n=int(arr.size),
        p10=p10,
        p50=p50,
        p90=p90,
        mean=mean,
        stdev=stdev,
        cv=_ratio(stdev, mean),
        rel_iqr=_ratio(p75 - p25, p50),
        min=float(arr.min()),
        max=float(arr.max()),
    )
