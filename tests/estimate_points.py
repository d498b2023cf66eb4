"""Probe points the estimate's model made itself: the CUDA plan's items of some groups, timed by
the estimate with known ("truth") coefficients, so a fit stage can be asked to recover them."""

from __future__ import annotations

from tensorforge.api import resolve_spec
from tensorforge.estimate.fit import WorkloadPoint
from tensorforge.estimate.model import device_for, estimate_workload
from tensorforge.estimate.probe_plan import CUDA_PLAN
from tensorforge.model import predict


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
