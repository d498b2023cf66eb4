"""What every step of `tensorforge run` reads and writes: the run's options and one run's state
(the Run in runner.py holds it; each step in run/ is a part of that class), and its log line."""

import time
from collections.abc import Callable
from typing import Any

import attrs

from tensorforge.api import finite_in
from tensorforge_measure.capture.sections.comparison import Comparison
from tensorforge_measure.capture.sections.policy import PolicyRecord
from tensorforge_measure.capture.sections.predicted import Predicted
from tensorforge_measure.capture.sections.provenance import Provenance


@attrs.frozen
class RunOptions:
    target: str
    specs: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    operating_point: str | None = None
    backend: str | None = None  # None: the backend that claims the target, else the fallback backend
    device_index: int = 0
    recalibrate: bool = False
    telemetry: bool = True
    # Finite and in range, or refused: a NaN telemetry window never ended (elapsed < NaN).
    # 0.3 s: the sustained window follows >= 0.5 s of continuous, steady load (steady detection
    # and the timed windows), so 6 samples at 50 ms show its clock and clock-event reasons; at
    # 0.5 s the ten workloads spent 2 s more on it (docs/measurement.md, "Run time")
    telemetry_s: float = attrs.field(default=0.3, validator=finite_in(0))
    budget_s: float = attrs.field(default=2.0, validator=finite_in(0, low_open=True))
    # Idle seconds after the calibration probes and before each workload's timing. Why: right
    # after ~2 s of probe matmuls an H200 timed a 4096^3 bf16 GEMM at 200 us for its whole
    # window, against 177 us when measured first (power-management state left by the probes).
    cooldown_s: float = attrs.field(default=2.0, validator=finite_in(0))
    rest_s: float = attrs.field(default=0.2, validator=finite_in(0))
    # Measurement modes (backends with phases, tensorforge_measure.measure.phases): CUDA-graph replay,
    # the sustained regime and the per-operator trace window.
    graph: bool = True
    sustained: bool = True
    trace: bool = True
    trace_iterations: int = 5
    # The energy window per workload (docs/energy.md): the device's energy counter, edge to edge,
    # around >= energy_s of back-to-back executions, after the latency timings.
    energy: bool = True
    energy_s: float = attrs.field(default=0.4, validator=finite_in(0, low_open=True))
    # ... and spanning >= energy_updates of the counter's updates: one sample of J per execution
    # each, what the energy gate compares (its default --min-samples: 10); 0: energy_s alone
    energy_updates: int = attrs.field(
        default=10, validator=attrs.validators.and_(attrs.validators.instance_of(int), attrs.validators.ge(0))
    )
    command: tuple[str, ...] = ()


class RunState:
    """The attributes Run.__init__ sets (runner.py), declared once for the steps that use them."""

    core: Any
    ops: Any
    opts: RunOptions
    progress: Callable[[str], None]
    t0: float
    caveat: str
    started: bool
    complete: bool
    header: dict[str, Any]
    provenance: Provenance | None
    predicted: Predicted | None
    measured: Any
    calibrated: Any
    diagnostic: Any
    policy: PolicyRecord
    comparison: Comparison | None
    sustained_pred: Any
    sustained_note: str | None
    backend: Any
    target: Any
    power: Any
    power_reason: str | None
    rapl: Any
    rapl_reason: str | None
    cool_until: float | None
    background_fit: Any
    load_ended: float | None

    def say(self, message: str) -> None:
        self.progress(f"[{time.perf_counter() - self.t0:6.1f}s] {message}")
