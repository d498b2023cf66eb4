"""The estimate as values: per operator and per workload, a waterfall of named terms from the
bound to the expected time. Every term is >= 0 and they add up exactly, so
estimate = bound + sum(terms) >= bound holds by construction."""

from collections.abc import Mapping

import attrs

LABEL = "PREDICTED estimate"

# Waterfall order and what each term explains (docs/estimate.md says more).
TERMS = {
    "tile_wave_quantization": "the library's tile menu: padded edge tiles and the last, partial wave "
    "(vs the bound's free choice of tile)",
    "compute_efficiency": "main-loop rate of the realistic tile, operand feed of small tiles, per-tile "
    "pipeline fill and epilogue, convolution and attention kernel efficiency",
    "achieved_bandwidth": "memory at the bandwidth each access pattern achieves, with the bytes the "
    "implementation really moves (extra passes, layout copies)",
    "alignment_padding": "leading dimensions not a multiple of 16 bytes (fallback kernels) and "
    "channel padding of convolutions",
    "power_limit": "a board whose power limit cannot feed its clock's rate: calls long enough for the "
    "limit to act run at the rate it allows",
    "kernel_launches": "fixed cost of every kernel on the device (minimum duration and gap)",
    "timing_harness": "once per timed call: the event pair and the first kernel's start after the cache flush",
    "host_overhead": "eager only: host time (Python and framework dispatch) the device waits for",
}
DEVICE_TERMS = tuple(t for t in TERMS if t != "host_overhead")


@attrs.frozen
class OperatorEstimate:
    name: str
    count: int
    kernels: int  # per execution
    mapping: str  # the realistic configuration, e.g. '256x128 stream-K, ...'
    bound_s: float  # x count: the operator's share of the bound
    estimate_s: float  # x count: expected device time
    terms: Mapping[str, float]  # x count; they sum to estimate_s - bound_s
    implementation: str  # 'declared by the workload plugin' or 'default for <type>'
    notes: tuple[str, ...] = ()


@attrs.frozen
class WorkloadEstimate:
    """bound_s is the same number as the workload's lower bound; device_s the expected device
    time (kernels back to back, as a CUDA-graph replay or a timed single kernel sees them);
    eager_s adds the host overhead of launching the kernels one by one from Python.
    warm_saving_s: what one execution saves in a window of executions back to back without the
    L2 flush every timed call has (warm.py; 0 where not calibrated): `window_s`.
    calls: the framework calls one execution makes from Python (each a host dispatch; a library
    call may launch several kernels: a split-K GEMM's reduction); 0: not counted (kernels)."""

    label: str
    bound_s: float
    device_s: float
    eager_s: float
    kernels: int
    terms: Mapping[str, float]  # device terms + host_overhead; device ones sum to device_s - bound_s
    operators: tuple[OperatorEstimate, ...]
    warm_saving_s: float = 0.0
    calls: int = 0
    # eager, one call timed without an L2 flush before it (the same inputs every call) and the
    # device idle when it is issued: the host's dispatch of the first kernel is exposed in full
    # (no flush for it to hide behind). The protocol of published operator measurements (an
    # event pair or a wall clock + synchronize around one eager call); 0 = not computed (older
    # captures): eager_s serves.
    eager_warm_s: float = 0.0

    @property
    def window_s(self) -> float:
        """The device time of one execution in a window without flushes (an energy window),
        never below the bound."""
        return window_seconds(self.device_s, self.bound_s, self.warm_saving_s)

    def estimate_for(self, regime: str) -> float:
        return self.eager_s if regime == "eager" else self.device_s

    def for_protocol(self, protocol: str) -> float:
        """The estimate of a measurement taken with `protocol` (PROTOCOLS)."""
        if protocol == "eager-warm":
            return self.eager_warm_s or self.eager_s
        if protocol == "graph-warm":
            return self.window_s
        return self.eager_s if protocol == "eager-flushed" else self.device_s


# How a measurement was taken, and so which estimate it is compared with (`predict --protocol`).
PROTOCOLS = {
    "graph-flushed": "the device time of one call after an L2 flush, back-to-back kernels (a CUDA-graph "
    "replay or an event-timed kernel): TensorForge's own harness, the default",
    "eager-flushed": "one eager call from Python after an L2 flush (TensorForge's eager samples)",
    "graph-warm": "one call's device time in a run of calls without flushes (operands left in L2)",
    "eager-warm": "one eager call, no flush, the device idle when it is issued (an event pair or a "
    "wall clock + synchronize around one call: NeuSight's, LLMCompass's and most scripts' protocol)",
}


def window_seconds(device_s: float, bound_s: float, warm_saving_s: float) -> float:
    """One execution's device time without the L2 flush: the flushed time less the warm saving,
    never below the bound (WorkloadEstimate.window_s; tensorforge.energy.model.window_time for an
    estimate read back from a capture)."""
    return max(float(bound_s), float(device_s) - float(warm_saving_s))


def add_terms(parts) -> dict[str, float]:
    total = {name: 0.0 for name in TERMS}
    for part in parts:
        for name, value in part.items():
            total[name] += value
    return total
