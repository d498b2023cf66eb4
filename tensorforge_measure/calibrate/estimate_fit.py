"""The estimate's coefficients from a calibration document: the raw points of the estimate-terms
probe, predicted (bound only) on the device's target, handed to the Core's fit. The result is
stored in the calibration under 'estimate' (coefficients + how well each stage reproduced its
own probes), so a reused calibration needs no refit."""

from collections.abc import Mapping
from typing import Any

from tensorforge.api import (
    EAGER_GROUPS,
    Ceilings,
    EstimateCoefficients,
    Target,
    WorkloadPoint,
    coefficients_for,
    coefficients_from_data,
    fit_coefficients,
    one_line,
    predict,
    resolve_spec,
    to_data,
)


def _get(obj: Any, key: str) -> Any:
    """A calibration is a typed Calibration in the run, a JSON document on disk: read either."""
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def _estimate_probe(calibration: Any) -> Any:
    """The probe whose points are workload specs (the estimate-terms sweep). Why not the first
    probe with a list of points: the read and write stream probes keep theirs as [bytes, rate]
    pairs, and in a run's own order they come first: the GPU fit read them and failed."""
    for probe in (_get(calibration, "probes") or {}).values():
        points = (_get(probe, "details") or {}).get("points")
        if isinstance(points, list) and all(isinstance(p, Mapping) for p in points):
            return probe
    return None


def probe_points(calibration: Any) -> list[dict[str, Any]] | None:
    probe = _estimate_probe(calibration)
    return None if probe is None else (_get(probe, "details") or {})["points"]


def probe_regime(calibration: Any) -> str:
    """The regime the estimate-terms sweep ran in (burst on a GPU, single on a one-regime device;
    burst for calibrations from before regimes): the fitted coefficients are that regime's."""
    probe = _estimate_probe(calibration)
    return (_get(probe, "regime") if probe is not None else None) or "burst"


def workload_points(results, core, target: Target, ceilings: Ceilings, operating_point: str | None = None):
    """(the bound's prediction of the probe items, their WorkloadPoints) from a sweep's result rows:
    the host stages (probe_plan.EAGER_GROUPS) read the eager sample; every other point its graph sample where it has one (a
    CUDA item may have no eager sample: probe_plan.timing_modes), else its eager one."""
    measured = [
        r
        for r in results
        if r.get("spec") and (r.get("p50_s") if r["group"] in EAGER_GROUPS else r.get("graph_p50_s") or r.get("p50_s"))
    ]
    resolved = [resolve_spec(core, r["spec"]) for r in measured]
    bound = predict(resolved, target, core.mappings(), operating_point, ceilings, estimate=False)
    points = [
        WorkloadPoint(
            name=r["name"],
            group=r["group"],
            prediction=wp,
            operators=tuple(kind.operators(w.params)),
            kind=kind,
            params=w.params,
            # the graph sample where there is one (the device-time regime the evaluation scores),
            # except for the host stages, whose points measure the eager host
            measured_s=float(
                r["graph_p50_s"] if r.get("graph_p50_s") and r["group"] not in EAGER_GROUPS else r["p50_s"]
            ),
            regime="graph" if r.get("graph_p50_s") and r["group"] not in EAGER_GROUPS else "eager",
            warm_s=float(r["warm_p50_s"]) if r.get("warm_p50_s") and r.get("graph_p50_s") else None,
        )
        for r, (w, kind), wp in zip(measured, resolved, bound.workloads)
    ]
    return bound, points


def fit_estimate(
    calibration: Any, core, target: Target, ceilings: Ceilings, operating_point: str | None = None
) -> dict[str, Any] | None:
    """{'coefficients', 'report', 'target', 'regime'} or {'error', 'target', 'regime'}; None without
    estimate probe points. `ceilings` are those of the regime the sweep ran in (the calibration's
    base ceilings: burst, or a one-regime device's single regime)."""
    results = probe_points(calibration)
    if not results:
        return None
    regime = probe_regime(calibration)
    try:
        bound, points = workload_points(results, core, target, ceilings, operating_point)
        base = coefficients_for(target)
        basis = (
            f"calibrated on {_get(calibration, 'device')} at {_get(calibration, 'measured_at')} "
            f"({_get(calibration, 'fingerprint')})"
        )
        coefficients, report = fit_coefficients(base, target, bound.ceilings, results, points, basis, operating_point)
    except Exception as exc:  # a fit that fails leaves the bound and the shipped basis intact
        return {"error": one_line(exc), "target": target.name, "regime": regime}
    return {"coefficients": to_data(coefficients), "report": report, "target": target.name, "regime": regime}


def calibrated_coefficients(calibration: Any, target_name: str) -> EstimateCoefficients | None:
    section = (_get(calibration, "estimate") if calibration is not None else None) or {}
    if section.get("target") != target_name or "coefficients" not in section:
        return None
    return coefficients_from_data(section["coefficients"], "calibrated estimate coefficients")
