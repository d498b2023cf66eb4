"""When a board's power limit slows an operator, and by how much.

A board whose limit cannot feed its clock's rate (a 72 W L4, a 70 W T4) does not slow down at
once: its power controller acts on a running average, so a short call runs at the boost clock
and a long one at the rate the limit allows. NeuSight's published T4 GEMMs (its training rows,
timed as the fastest 5 of 25 synchronised eager calls) show the step: calls under ~1 ms reach
4.3-5.1 TFLOP/s, calls from ~5 ms on sit at 3.2-3.3 TFLOP/s however large
(benchmarks/public/neusight.csv.gz, role 'fit'; the L4's rows, which are evaluated, were not
read for it). So an operator's time is the burst estimate below CAP_FROM_S, the capped estimate
from CAP_FULL_S, and between them a geometric blend. Those call times were read off measured
calls, which run capped where the limit acts, so the blend is weighted by the call's own settled
time (`settle`: the time t with t = blend(burst, capped, weight(t))), not by its burst time. In
the sustained regime (a long-running job) every operator runs capped.

The capped rate itself is energy.model.power_capped: (limit - idle) / the target's declared
energy per FLOP. An estimate figure only: the bound keeps the clock's rate.
"""

import math

import attrs

from tensorforge.energy.model import PowerFigures, power_capped

CAP_FROM_S = 1e-3  # burst below this call time (T4 fit rows: 4.3-5.1 TFLOP/s)
CAP_FULL_S = 5e-3  # capped from this call time on (T4 fit rows: 3.2-3.3 TFLOP/s)


def capped_rates(compute: dict[str, float], power: PowerFigures | None) -> dict[str, float]:
    """The modes whose rate the board's limit lowers, at the rate the limit allows."""
    out = {}
    for mode, rate in compute.items():
        capped = power_capped(rate, mode, power)
        if capped < rate:
            out[mode] = capped
    return out


def cap_weight(burst_s: float, regime: str = "burst", acts_s: float | None = None) -> float:
    """0: the call runs at the boost clock; 1: at the capped rate. `acts_s`: the target's
    power.limit_acts_s, the call time from which the limit acts (default CAP_FROM_S); it is fully
    in force from CAP_FULL_S / CAP_FROM_S times that."""
    if regime == "sustained":
        return 1.0
    start = acts_s or CAP_FROM_S
    full = start * (CAP_FULL_S / CAP_FROM_S)
    if burst_s <= start:
        return 0.0
    if burst_s >= full:
        return 1.0
    return math.log(burst_s / start) / math.log(full / start)


def blend(burst_s: float, capped_s: float, weight: float) -> float:
    """Geometric blend of the two times (never below the burst time)."""
    if weight <= 0.0 or capped_s <= burst_s:
        return burst_s
    if weight >= 1.0:
        return capped_s
    return burst_s ** (1.0 - weight) * capped_s**weight


def settle(burst_s: float, capped_s: float, regime: str = "burst", acts_s: float | None = None) -> float:
    """The call's time where the limit's weight is taken at that time itself: the fixed point of
    t = blend(burst_s, capped_s, cap_weight(t)), between the two (bisection on log t)."""
    if capped_s <= burst_s or regime == "sustained":
        return max(burst_s, capped_s)
    if burst_s <= (acts_s or CAP_FROM_S):  # the blend is the burst time up to there: t = burst_s settles
        return burst_s
    low, high = math.log(burst_s), math.log(capped_s)
    for _ in range(40):  # blend(weight(t)) - t falls as t grows: one crossing
        mid = 0.5 * (low + high)
        t = math.exp(mid)
        if blend(burst_s, capped_s, cap_weight(t, regime, acts_s)) > t:
            low = mid
        else:
            high = mid
    return math.exp(0.5 * (low + high))


def capped_device(device):
    """The same device at its capped rates, or None where the limit slows no mode."""
    if not device.capped:
        return None
    return attrs.evolve(device, compute={**device.compute, **device.capped}, capped={}, limit_acts_s=None)
