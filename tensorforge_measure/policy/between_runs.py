"""How far a workload's median moves between runs of unchanged code, and so the effect a gate
verdict needs before it may say REGRESSION or IMPROVEMENT.

Why: the gate's tests (Mann-Whitney, bootstrap of the ratio of medians) compare the samples of
two runs as if each run were the population. They are not: a run also draws its own state
(clocks, memory placement, which SMs, the launch path), and that state shifts every sample of
the run alike. A cross-day A/A on unchanged code (an H200 capture as baseline, a fresh run the
next day as candidate) called `gemm_tiny`, a 2.7 us kernel, 6.0% faster with p = 3e-16: the
kernel moved 162 ns between runs, far more than its samples scatter within one.

The model is the usual one for repeated measurements with a run effect (variance components):
log(median of a run) = log(true time) + b, where b, the run effect, has standard deviation

    sd(t) = sqrt(RELATIVE_SD^2 + (JITTER_S / t)^2)

for a workload of median t: a relative part (clocks and placement scale everything alike) and an
absolute part (a fixed cost of the launch path that does not shrink with the kernel, so it weighs
more the shorter the kernel). The log ratio of two runs of unchanged code then has standard
deviation sqrt(2) * sd(t), and a change is called only when the observed ratio lies beyond the
two-sided alpha quantile of that null as well as beyond the --threshold:

    needed effect = max(threshold, exp(z(1 - alpha/2) * sqrt(2) * sd(t)) - 1)

with t the geometric mean of the two medians (swapping the captures changes nothing). The constants come from the committed H200 runs and the
cross-day A/A: JITTER_S = 120 ns is the gemm_tiny move (162 ns) over sqrt(2) (one A/A difference
estimates sqrt(2) sd), rounded up; RELATIVE_SD = 0.7% is the largest same-day move of a long
workload (transformer_prefill, +1.0%) over sqrt(2). At the default alpha (0.01) this needs 17.8%
of a 2.7 us kernel and 10.1% of a 4.7 us one, and leaves the 5% threshold in force from about
10.5 us up, so longer workloads are judged exactly as before; a true 20% slowdown of a 2.7 us
kernel is still a REGRESSION. A finer verdict on a kernel that short needs a longer workload
(several calls per sample) or a lower --alpha, not a luckier run.

A device's own figures replace them where the user has an A/A pair (two runs of unchanged code on
that device: `gate --aa A B`): fit_run_effect below.
"""

from __future__ import annotations

import math
from statistics import NormalDist

JITTER_S = 120e-9
RELATIVE_SD = 0.007


def run_sd(p50_s: float, jitter_s: float = JITTER_S, relative_sd: float = RELATIVE_SD) -> float:
    """Standard deviation of the run effect on the log of a median of p50_s seconds."""
    if not p50_s > 0:
        return math.inf
    return math.hypot(relative_sd, jitter_s / p50_s)


def needed_effect(
    p50_s: float, alpha: float, threshold: float, jitter_s: float = JITTER_S, relative_sd: float = RELATIVE_SD
) -> float:
    """The relative change of the median a verdict needs: the threshold, or the between-run
    allowance where that is larger (module docstring)."""
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    allowance = math.expm1(z * math.sqrt(2.0) * run_sd(p50_s, jitter_s, relative_sd))
    return max(threshold, allowance)


# workloads of at least this median say the relative part of the run effect; shorter ones its
# fixed part (the jitter dominates below ~20 us: 120 ns is 0.6% of 20 us)
LONG_S = 50e-6


def fit_run_effect(medians: list[tuple[float, float]]) -> tuple[float, float]:
    """(jitter_s, relative_sd) from the medians of the same workloads in two runs of unchanged
    code. One A/A difference d = |log(b / a)| estimates sqrt(2) sd; with a handful of workloads
    the largest is taken, not the mean (a verdict's allowance errs wide): relative_sd from the
    long workloads, jitter_s from the short ones less that relative part. A pair with no long
    (or no short) workload keeps the model's value for that part."""
    long_d = [abs(math.log(b / a)) / math.sqrt(2.0) for a, b in medians if a > 0 and b > 0 and min(a, b) >= LONG_S]
    relative = max(long_d) if long_d else RELATIVE_SD
    jitters = [
        math.sqrt(a * b) * math.sqrt(max(0.0, math.log(b / a) ** 2 / 2.0 - relative**2))
        for a, b in medians
        if a > 0 and b > 0 and min(a, b) < LONG_S
    ]
    jitter = max(jitters) if jitters else JITTER_S
    return jitter, relative
