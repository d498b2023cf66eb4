"""Probe points the estimate's model made itself: the CUDA plan's items of some groups, timed by
the estimate with known ("truth") coefficients, so a fit stage can be asked to recover them."""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from tensorforge.api import resolve_spec
from tensorforge.bound.model import predict
from tensorforge.estimate.coefficients import EstimateCoefficients, coefficients_from_data
from tensorforge.estimate.fit import WorkloadPoint
from tensorforge.estimate.model import device_for, estimate_workload
from tensorforge.estimate.probe_plan import CUDA_PLAN
from tensorforge.hardware.target import Ceilings

BEFORE_NEW_TERMS = Path(__file__).resolve().parent / "fixtures" / "estimate" / "nvidia-sm90-2026-11-30.json"


def before_new_terms() -> EstimateCoefficients:
    """The nvidia-sm90 coefficients shipped from 2026-11-30 to 2026-12-01 (the
    refit of a 2026-11-30 sweep), frozen here: fitted before the kxk fixed time, the exposed wave share,
    the depthwise fixed time, the 1x1 stream and the warm share existed, so every one of those
    terms holds its default. The tests of a new term start from it ("the older model"), so what is
    shipped can be refitted without moving them."""
    data = json.loads(BEFORE_NEW_TERMS.read_text(encoding="utf-8"))
    return coefficients_from_data(data, f"test coefficients {BEFORE_NEW_TERMS.name}")


# H200-like calibrated ceilings (close to a calibration's; chosen here, not measured) for the fit tests
H200_CEILINGS = Ceilings(
    origin="calibrated",
    compute={"bf16": 8.2e14, "fp16": 7.9e14, "tf32": 4.0e14, "fp32": 5.1e13},
    dram_bytes_per_s=4.26e12,
)


def generated_points(host, groups, ceilings, truth, regime: str = "graph", target: str = "h200"):
    """(the bound prediction, the points): each item's time is the truth's device time ('graph')
    or eager time ('eager'), as the calibration's samples of that regime are."""
    items = [i for i in CUDA_PLAN if i.group in groups]
    chosen = [resolve_spec(host, i.spec) for i in items]
    device_target = host.target(target)
    bound = predict(chosen, device_target, host.mappings(), None, ceilings, estimate=False)
    device = device_for(device_target, bound.ceilings, truth)
    points = []
    for i, (w, k), wp in zip(items, chosen, bound.workloads):
        est = estimate_workload(wp, k.operators(w.params), k, w.params, device, truth)
        seconds = est.device_s if regime == "graph" else est.eager_s
        points.append(WorkloadPoint(i.name, i.group, wp, tuple(k.operators(w.params)), k, w.params, seconds, regime))
    return bound, points


def device_times(host, coefficients, specs, target: str = "h200") -> list[float]:
    """Each spec's estimated device time with these coefficients (datasheet ceilings), checked
    never below its bound."""
    chosen = [resolve_spec(host, s) for s in specs]
    pred = predict(chosen, host.target(target), host.mappings(), None, None, estimate=coefficients)
    for w in pred.workloads:
        assert w.estimate.device_s >= w.latency_s  # never below the bound
    return [w.estimate.device_s for w in pred.workloads]


def with_section(c, section, **changes):
    """Coefficients with some fields of one section (gemm, conv, ...) changed."""
    return attrs.evolve(c, **{section: attrs.evolve(getattr(c, section), **changes)})
