"""PREDICTED energy of the workloads `predict` predicts: per workload, the FLOOR and the ESTIMATE of
the joules one execution costs (tensorforge.energy.model), and per token where the workload's
kind counts tokens (WorkloadKind.tokens). Never a measurement: `run` measures.

Times (docs/energy.md, "predict"):
* floor: the warm lower bound (executions back to back, no L2 flush between them, as in an energy
  window or a serving loop; never above the cold bound), or the power-limited time where longer;
  the lower ends of the coefficients; DRAM bytes beyond the last-level cache;
* estimate, in two windows: 'graph' (CUDA-graph replays: the estimate's device time without the
  flush, `window_time`) and 'eager' (each execution launched from Python, the window `run` opens
  by default: the estimate's eager time, or, with a calibration's host time per launch, the queued
  model's max(device, host launches)). Without the estimate (bound only) there is no estimate.

A workload whose kind runs it on several devices (WorkloadKind.devices: tensor-parallel ranks,
each running the predicted operators) costs that many times one device's energy; the terms
stay one device's.

Pure arithmetic on the Core's prediction: no device, no torch.
"""

from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge.energy.coefficients import EnergyBasis
from tensorforge.energy.model import LABEL, EnergyCoefficients, EnergyTerms, window_time, workload_energy

TIME_BASIS = (
    "floor: the warm lower bound (executions back to back without an L2 flush) or the power-limited time "
    "where longer, on the coefficients' lower ends; estimate 'graph': the estimate's device time without "
    "the flush (CUDA-graph replays); estimate 'eager': the estimate's eager time (launched one by one from "
    "Python), or with a calibrated host time per launch the slower of device and host launches; x devices "
    "the workload runs on"
)


@attrs.frozen
class WorkloadEnergyFigures:
    """One workload's predicted energy per execution (all its devices) and per token."""

    floor_j: float  # PREDICTED floor: no execution costs less
    graph_estimate_j: float | None  # PREDICTED estimate, CUDA-graph window
    eager_estimate_j: float | None  # PREDICTED estimate, eager window
    devices: int
    tokens: int | None  # tokens one execution processes; None: the kind counts none
    floor_j_per_token: float | None
    graph_estimate_j_per_token: float | None
    eager_estimate_j_per_token: float | None
    power_limited: bool  # the estimate's work would draw more than the power limit
    uncalibrated_modes: tuple[str, ...]  # math modes without a coefficient (0 J/FLOP in the floor)
    note: str | None
    # one device's terms (J; time_s the time the static term used)
    floor_terms: Mapping[str, float]
    graph_estimate_terms: Mapping[str, float] | None
    eager_estimate_terms: Mapping[str, float] | None

    def estimate_j(self, window: str) -> float | None:
        return self.eager_estimate_j if window == "eager" else self.graph_estimate_j

    def estimate_j_per_token(self, window: str) -> float | None:
        return self.eager_estimate_j_per_token if window == "eager" else self.graph_estimate_j_per_token


@attrs.frozen
class PredictedEnergy:
    """The prediction's energy section (`predict --json`: "energy")."""

    label: str
    basis_kind: str | None  # 'calibrated', 'shipped', 'declared'; None: no energy (source says why)
    coefficients_source: str
    coefficients: EnergyCoefficients | None
    cache_bytes: float | None
    time_basis: str
    workloads: Mapping[str, WorkloadEnergyFigures]


def window_of(protocol: str | None) -> str:
    """The energy window matching an estimate protocol: eager for eager-*, else graph."""
    return "eager" if (protocol or "").startswith("eager") else "graph"


def _terms(terms: EnergyTerms) -> dict[str, float]:
    return {
        "static_j": terms.static_j,
        "compute_j": terms.compute_j,
        "dram_j": terms.dram_j,
        "busy_j": terms.busy_j,
        "time_s": terms.time_s,
        "dram_bytes": terms.dram_bytes,
    }


def _per(value: float | None, tokens: int | None) -> float | None:
    return value / tokens if value is not None and tokens else None


def workload_figures(
    workload, coefficients: EnergyCoefficients, cache_bytes: float | None, devices: int = 1, tokens: int | None = None
) -> WorkloadEnergyFigures:
    """The floor and the two estimates of one predicted workload (a WorkloadPrediction)."""
    warm = workload.warm_latency_s
    floored = attrs.evolve(workload, latency_s=min(warm, workload.latency_s)) if warm is not None else workload
    estimate = workload.estimate
    graph_s = window_time(estimate)
    # the burst estimate stands in for the sustained one `run` predicts beside it (capped_time)
    eager = workload_energy(
        floored,
        coefficients,
        cache_bytes,
        estimate.eager_s if estimate is not None else None,
        graph_s,
        graph_s,
        floored,
    )
    graph_terms = eager.device_estimate_terms
    if graph_terms is None and graph_s is not None:  # no queued model: the eager-time model at the graph's time
        graph_terms = workload_energy(floored, coefficients, cache_bytes, graph_s, graph_s).estimate_terms
    n = max(1, int(devices))
    floor_j = eager.floor_j * n
    graph_j = graph_terms.total_j * n if graph_terms is not None else None
    eager_j = eager.estimate_j * n if eager.estimate_j is not None else None
    tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else None
    return WorkloadEnergyFigures(
        floor_j=floor_j,
        graph_estimate_j=graph_j,
        eager_estimate_j=eager_j,
        devices=n,
        tokens=tokens,
        floor_j_per_token=_per(floor_j, tokens),
        graph_estimate_j_per_token=_per(graph_j, tokens),
        eager_estimate_j_per_token=_per(eager_j, tokens),
        power_limited=eager.power_limited,
        uncalibrated_modes=eager.uncalibrated_modes,
        note=eager.estimate_note,
        floor_terms=_terms(eager.floor_terms),
        graph_estimate_terms=_terms(graph_terms) if graph_terms is not None else None,
        eager_estimate_terms=_terms(eager.estimate_terms) if eager.estimate_terms is not None else None,
    )


def predicted_energy(pred, target, basis: EnergyBasis, kinds: Mapping[str, tuple[Any, Any]]) -> PredictedEnergy:
    """The energy section of a Prediction on `target` with `basis`'s coefficients; `kinds`:
    {workload name: (its WorkloadKind, its params)} for devices and tokens."""
    cache = target.cache_level()
    cache_bytes = float(cache.capacity_bytes) if cache is not None else None
    rows: dict[str, WorkloadEnergyFigures] = {}
    if basis.coefficients is not None:
        for w in pred.workloads:
            kind, params = kinds.get(w.name, (None, None))
            devices = kind.devices(params) if kind is not None else 1
            tokens = kind.tokens(params) if kind is not None else None
            rows[w.name] = workload_figures(w, basis.coefficients, cache_bytes, devices, tokens)
    return PredictedEnergy(
        label=LABEL,
        basis_kind=basis.kind,
        coefficients_source=basis.source,
        coefficients=basis.coefficients,
        cache_bytes=cache_bytes,
        time_basis=TIME_BASIS,
        workloads=rows,
    )
