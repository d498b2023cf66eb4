"""PREDICTED results: attrs values that serialise to deterministic JSON."""

from typing import Any

import attrs

from tensorforge.bound.mappings.base import MappingChoice
from tensorforge.estimate.results import WorkloadEstimate
from tensorforge.hardware.target import Ceilings

LABEL = "PREDICTED"


@attrs.frozen
class OperatorPrediction:
    name: str
    count: int
    problem_type: str
    problem: dict[str, Any]
    math_mode: str
    ceiling_origin: str  # 'datasheet' or 'calibrated': which rate timed this operator
    flops: float  # all `count` executions
    compulsory_bytes: float  # each tensor of the operator read or written once, x count
    mapping: MappingChoice  # one execution
    compute_s: float  # x count
    memory_s: float
    latency_s: float  # the cold bound (Prediction.cache_states)
    bottleneck: str
    # The warm bound (a call repeated without a cache flush, Prediction.cache_states): its mapping
    # of one execution (its notes say what it assumed) and its memory time and latency x count.
    # None in predictions made before warm bounds.
    warm_mapping: MappingChoice | None = None
    warm_memory_s: float | None = None
    warm_latency_s: float | None = None


@attrs.frozen
class WorkloadPrediction:
    name: str
    kind: str
    spec: str
    flops: float
    compulsory_bytes: float  # workload inputs read once + final outputs written once
    footprint_bytes: int
    fits_in_memory: bool
    compute_s: float
    memory_s: float
    latency_s: float  # the lower bound
    bottleneck: str
    candidates: int
    search: str  # 'exhaustive' (every operator's minimum) or 'relaxation' (some cut)
    operators: tuple[OperatorPrediction, ...]
    # The expected latency beside the bound (tensorforge.estimate); never the bound itself.
    estimate: WorkloadEstimate | None = None
    # The warm bound beside the cold `latency_s`: the sum of its operators' (Prediction.cache_states).
    warm_latency_s: float | None = None

    @property
    def arithmetic_intensity(self) -> float:
        return self.flops / self.compulsory_bytes if self.compulsory_bytes else float("inf")


@attrs.frozen
class Prediction:
    label: str
    bound: str  # 'analytical' (datasheet ceilings) or 'calibrated'
    target: str
    operating_point: str
    clock_mhz: float
    ceilings: Ceilings
    max_candidates_per_operator: int
    candidates: int
    search: str  # 'exhaustive', or 'relaxation' when --max-candidates cut a search
    workloads: tuple[WorkloadPrediction, ...]
    notes: tuple[str, ...] = ()
    # Where the estimate's coefficients come from (None: no estimate was made).
    estimate_basis: str | None = None
    estimate_basis_kind: str | None = None
    # the measurement protocol the estimate is shown for (`predict --protocol`, results.PROTOCOLS);
    # None: both the device (graph-flushed) and the eager (eager-flushed) estimates
    estimate_protocol: str | None = None
    # 'burst' (a short run at the boost clock) or 'sustained' (a long-running job: every call at the
    # rate the board's power limit allows; `predict --regime`); None: no estimate was made
    estimate_regime: str | None = None
    # Which cache state each bound assumes, by the field that holds it ('latency_s': cold,
    # 'warm_latency_s': warm; tensorforge.bound.warm.CACHE_STATES); empty before warm bounds.
    cache_states: dict[str, str] = attrs.field(factory=dict)

    def workload(self, name: str) -> WorkloadPrediction | None:
        return next((w for w in self.workloads if w.name == name), None)
