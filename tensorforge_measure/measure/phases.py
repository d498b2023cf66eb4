"""What a backend's measurement phases produce, device-neutral: timings labelled with their
regime and mode, the plan that says which phases run, and what each phase returns.

Regimes: 'burst' (short stretches on a cool device, as the burst probes ran), 'sustained'
(continuous execution after the device reached its steady clock), 'single' (a device whose
regimes collapse to one, such as the host CPU: timing is continuous and no power-capped clock
separates the two). Modes: 'eager' (the framework's own calls, host included) and 'graph'
(CUDA-graph replays: device time alone).

A backend's session offers `phases(fn, plan)`, a context manager yielding an object with
`burst()` and `sustained()` (each a PhaseResult); a backend without it is timed the old way,
one burst eager timing through `Session.time`.
"""

from __future__ import annotations

from typing import Any

import attrs
from tensorforge_measure.measure.steady import SteadyPolicy, SteadyState

from tensorforge_measure.measure.timing import TimedSamples

REGIMES = ("burst", "sustained", "single")
MODES = ("eager", "graph")


@attrs.frozen
class ModeTiming:
    regime: str = attrs.field(validator=attrs.validators.in_(REGIMES))
    mode: str = attrs.field(validator=attrs.validators.in_(MODES))
    timed: TimedSamples
    method: str


@attrs.frozen
class PhasePlan:
    budget_s: float = 2.0  # burst eager timing (the existing --budget)
    graph_budget_s: float = 1.0  # burst graph timing
    # burst eager timing where a graph was captured: the eager p50 is then context (host overhead)
    # beside the device-time headline, and only the host-bound and the large GEMMs' eager samples
    # ran to the budget (2.0 s each of a default H200 run's ~33 s of workloads, rel. IQR 4-44%
    # whatever the budget); a run must stay under 90 s (issue 12) on a host whose Python speed
    # varies ~2x (docs/measurement.md, "Host-bound eager rows")
    eager_beside_graph_budget_s: float = 1.0
    graph: bool = True
    # burst eager timing; False = graph replays only (a calibration sweep whose fit reads only the
    # device-time samples: the eager one would double each item's time for nothing)
    eager: bool = True
    trace: bool = True
    trace_iterations: int = 5
    sustained: bool = True
    steady: SteadyPolicy = SteadyPolicy()
    sustained_window_s: float = 0.1  # do_bench's default rep is 100 ms


@attrs.frozen
class PhaseResult:
    timings: tuple[ModeTiming, ...]
    notes: tuple[str, ...] = ()  # e.g. why the graph mode is missing
    steady: SteadyState | None = None
    trace: Any = None  # trace_window.WorkloadTrace
