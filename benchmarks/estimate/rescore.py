"""Refit the estimate's coefficients from a calibration's probe points with the current code, and
score the refitted estimate on a capture's measurements (per class, as `tensorforge evaluate`).

    python benchmarks/estimate/rescore.py CALIBRATION.json|CAPTURE.json CAPTURE.json [--coefficients OUT.json]
        [--json OUT.json] [--rows] [--current-plan]

Why it exists: the device session is short; when the estimate's code changes after a session
(a new term, a corrected kernel count), this re-derives the coefficients from the SAME probe
points (never from the capture's workloads) and scores the SAME measurements again. The capture
itself is not changed (its digest stays valid); the report says which code scored it.
"""

import argparse
import json
import sys

from tensorforge.api import parse_json, read_text  # gzip-aware: archived captures are .json.gz
from tensorforge.bound.model import predict
from tensorforge.estimate.classes import workload_class
from tensorforge.estimate.coefficients import coefficients_from_data
from tensorforge.estimate.evaluation import Row, evaluate
from tensorforge.files.serialize import canonical_json, to_data
from tensorforge.hardware.target import Ceilings
from tensorforge.host.plugin_host import PluginHost
from tensorforge_measure.calibrate.estimate_fit import fit_estimate
from tensorforge_measure.commands.evaluate import _params, evaluation_text, measured_time


def current_plan_subset(cal: dict) -> dict:
    """The calibration with its estimate-terms points cut to the current CUDA plan's items, and
    the eager sample dropped from the items the plan now times as CUDA graphs alone."""
    import copy

    from tensorforge.estimate.probe_plan import CUDA_PLAN, subset_to_plan

    names = {item.name for item in CUDA_PLAN}
    cal = copy.deepcopy(cal)
    for probe in cal["probes"].values():
        points = (probe.get("details") or {}).get("points")
        if not isinstance(points, list):
            continue
        kept = subset_to_plan(points, CUDA_PLAN)
        missing = names - {r["name"] for r in kept}
        if missing:
            print(f"note: {len(missing)} items of the current plan are not in this calibration", file=sys.stderr)
        probe["details"]["points"] = kept
        print(
            f"current plan: {len(kept)} of {len(points)} points; their wall time then: "
            f"{sum(r.get('wall_s', 0) for r in kept):.1f} s of {sum(r.get('wall_s', 0) for r in points):.1f} s",
            file=sys.stderr,
        )
    return cal


def calibration_ceilings(cal: dict) -> Ceilings:
    """The burst ceilings a calibration document (JSON) holds: what its estimate sweep was fitted on."""
    c = cal["ceilings"]
    return Ceilings(
        origin="calibrated",
        compute={k: float(v) for k, v in c["compute"].items()},
        dram_bytes_per_s=float(c["dram_bytes_per_s"]),
        source=f"calibrated on {cal.get('device')} at {cal.get('measured_at')}",
    )


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("calibration")
    ap.add_argument("capture")
    ap.add_argument("--coefficients", help="write the refitted coefficients here")
    ap.add_argument("--json", dest="json_out", help="write the evaluation here")
    ap.add_argument("--rows", action="store_true")
    ap.add_argument(
        "--shipped", metavar="FAMILY", help="score the shipped coefficients of FAMILY instead of refitting (a baseline)"
    )
    ap.add_argument(
        "--current-plan",
        action="store_true",
        help="refit from the calibration's points of the items the current probe plan still runs, "
        "each with only the samples the current plan takes (probe_plan.timing_modes): what a fresh "
        "sweep of the current plan would fit, from the same measurements",
    )
    args = ap.parse_args(argv)

    cal = parse_json(read_text(args.calibration, "calibration"), f"calibration {args.calibration}")
    if "ceilings" not in cal and isinstance(cal.get("calibrated"), dict):
        cal = cal["calibrated"]  # a capture: its CALIBRATED section holds the probe points
    if args.current_plan:
        cal = current_plan_subset(cal)
    doc = parse_json(read_text(args.capture, "capture"), f"capture {args.capture}")
    host = PluginHost()
    target = host.target(doc["predicted"]["calibrated_target"] or doc["target"])
    ceilings = calibration_ceilings(cal)
    if args.shipped:
        from tensorforge.estimate.shipped import shipped

        fitted = {
            "coefficients": to_data(shipped()[args.shipped]),
            "report": {"summary": f"shipped {args.shipped} coefficients, no refit"},
        }
    else:
        fitted = fit_estimate(cal, host, target, ceilings)
    if fitted is None or "error" in fitted:
        sys.exit(f"fit failed: {fitted}")
    coefficients = coefficients_from_data(fitted["coefficients"], "refitted coefficients")
    if args.coefficients:
        with open(args.coefficients, "w", encoding="utf-8") as f:
            f.write(canonical_json(fitted))

    specs = [(w["name"], w["spec"]) for w in doc["predicted"]["analytical"]["workloads"]]
    chosen = []
    for name, spec in specs:
        kind_name, params = _params(host, spec)
        from tensorforge.workloads.kinds import Workload

        kind = host.workload_kind(kind_name)
        chosen.append((Workload(name=name, kind=kind_name, params=params, spec=spec), kind))
    pred = predict(chosen, target, host.mappings(), None, ceilings, estimate=coefficients)
    rows = []
    measured = doc["measured"]["workloads"]
    for (w, kind), wp in zip(chosen, pred.workloads):
        timed = measured_time(measured.get(w.name) or {})
        if not timed:
            continue
        seconds, regime, rel_iqr = timed
        est = wp.estimate
        terms = dict(est.terms)
        if regime != "eager":
            terms.pop("host_overhead", None)
        rows.append(
            Row(
                name=w.name,
                klass=workload_class(kind.name, w.params),
                regime=regime,
                measured_s=seconds,
                bound_s=wp.latency_s,
                estimate_s=est.eager_s if regime == "eager" else est.device_s,
                terms=terms,
                tolerance=max(0.02, rel_iqr),
            )
        )
    ev = evaluate(rows)
    how = (
        f"the shipped {args.shipped} coefficients"
        if args.shipped
        else f"coefficients refitted from the probe points of {args.calibration} by the current code"
    )
    source = f"{args.capture}: measurements re-scored with {how}; basis: {coefficients.basis}"
    print(evaluation_text(ev, source, args.rows), end="")
    print("fit:", json.dumps(fitted["report"]["summary"]))
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            f.write(canonical_json({"source": source, **to_data(ev)}))


if __name__ == "__main__":
    main()
