"""The steady-state rule of the sustained regime and the host-bound rule, device-neutral: what a
backend's sustained phase applies to its own window medians, what the energy window and the energy
gate read from a measurement's timings, and what captures record (the rule's text).

How "steady" is detected, from the workload's own timings (no clock counter needed): the device
runs the workload back to back in windows of about `window_s`; it is steady once at least `min_s`
of continuous load has passed and the median iteration time of the last `windows` windows agree
within `tolerance` (max / min - 1). After `max_s` without agreement the state is recorded as not
steady and timing goes ahead. A host-bound load (its burst eager p50 at least HOST_BOUND times its
burst graph p50) is steady once `min_s` of it has run: its window medians follow the host's launch
rate, not the device's clock. Why both rules, measured: tf_cuda.sustained (the CUDA backend's
continuous load, which applies them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

# Burst eager p50 / burst graph p50 at or above which a load is host-bound (the eager time is
# the host's); the same threshold benchmarks/vs_do_bench.py labels rows with.
HOST_BOUND = 1.5


def host_bound(eager_s: float | None, graph_s: float | None) -> bool:
    """Whether the host's launches, not the device, set the eager call's time."""
    return bool(eager_s and graph_s and eager_s >= HOST_BOUND * graph_s)


def burst_p50(timings: Iterable[tuple[str | None, str | None, float | None]], mode: str) -> float | None:
    """The burst-regime p50 of one mode among (regime, mode, p50) timings: what the host-bound
    rule reads, in a run before its energy window and in the energy gate from a capture. A timing
    without a regime or mode is burst eager (captures from before the phases)."""
    for regime, m, p50 in timings:
        if (regime or "burst") == "burst" and (m or "eager") == mode and p50:
            return float(p50)
    return None


@attrs.frozen
class SteadyPolicy:
    window_s: float = 0.05
    windows: int = 3
    tolerance: float = 0.01
    min_s: float = 0.3
    max_s: float = 3.0

    def rule(self, host_bound: bool = False) -> str:
        if host_bound:
            return (
                f"host-bound load (burst eager p50 >= {HOST_BOUND:g} x burst graph p50: the host sets the "
                f"eager call's time, so window medians do not show the device's clock): steady once "
                f">= {self.min_s:g} s of continuous load has run"
            )
        return (
            f"steady once >= {self.min_s:g} s of continuous load has run and the median iteration "
            f"times of the last {self.windows} windows of ~{self.window_s * 1e3:g} ms agree within "
            f"{self.tolerance:.0%} (max/min - 1); at most {self.max_s:g} s"
        )


@attrs.frozen
class SteadyState:
    reached: bool
    after_s: float  # continuous load before the timed window
    window_medians_s: tuple[float, ...]  # per window, in order (the approach to steady)
    rule: str


def is_steady(medians: Sequence[float], elapsed_s: float, policy: SteadyPolicy, host_bound: bool = False) -> bool:
    """The detection rule, on the window medians seen so far (module docstring)."""
    if elapsed_s < policy.min_s or not medians:
        return False
    if host_bound:
        return True
    if len(medians) < policy.windows:
        return False
    last = medians[-policy.windows :]
    low = min(last)
    return low > 0 and max(last) / low - 1.0 <= policy.tolerance
