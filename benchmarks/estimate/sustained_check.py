"""Score the sustained-regime estimate (burst-calibrated coefficients on the sustained ceilings,
tensorforge_measure.run.runner.sustained_estimate) against a capture that measured both regimes
as CUDA graphs, beside the burst estimate on the burst ceilings.

    python benchmarks/estimate/sustained_check.py CAPTURE.json COEFFICIENTS.json

CAPTURE: a capture whose calibration has both regimes' ceilings and whose workloads were measured
in both regimes in graph mode (e.g. captures/h200-final-run.json.gz); COEFFICIENTS: a fitted file
(rescore.py --coefficients). The coefficients never see the capture's measurements.
"""

import json
import sys

import numpy as np

from tensorforge.api import parse_json, read_text  # gzip-aware: archived captures are .json.gz
from tensorforge.bound.model import predict
from tensorforge.estimate.coefficients import coefficients_from_data
from tensorforge.hardware.target import Ceilings
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve_spec
from tensorforge_measure.run.runner import sustained_estimate


def graph_p50(measured: dict, regime: str) -> float | None:
    for timing in list(measured.get("modes") or []) + [measured]:
        if timing.get("regime") == regime and timing.get("mode") == "graph":
            return float(timing["stats"]["p50"])
    return None


def main(argv=None):
    capture_path, coefficients_path = (argv or sys.argv[1:])[:2]
    doc = parse_json(read_text(capture_path, "capture"), f"capture {capture_path}")
    fitted = json.load(open(coefficients_path, encoding="utf-8"))
    coefficients = coefficients_from_data(fitted.get("coefficients", fitted), coefficients_path)
    host = PluginHost()
    target = host.target(doc["predicted"]["calibrated_target"] or doc["target"])
    specs = [(w["name"], w["spec"]) for w in doc["predicted"]["calibrated"]["workloads"]]
    chosen = [resolve_spec(host, spec) for _, spec in specs]
    by_regime = doc["calibrated"]["ceilings_by_regime"]
    print(f"{capture_path}: graph p50 per regime vs the estimate; coefficients {coefficients.basis}")
    for regime in ("burst", "sustained"):
        c = by_regime[regime]
        ceilings = Ceilings(
            origin="calibrated",
            compute={k: float(v) for k, v in c["compute"].items()},
            dram_bytes_per_s=float(c["dram_bytes_per_s"]),
        )
        estimate = coefficients if regime == "burst" else sustained_estimate(coefficients)
        pred = predict(chosen, target, host.mappings(), None, ceilings, estimate=estimate)
        apes = []
        for (name, _), w in zip(specs, pred.workloads):
            measured = graph_p50(doc["measured"]["workloads"].get(name) or {}, regime)
            if not measured:
                continue
            ape = abs(w.estimate.device_s - measured) / measured
            apes.append(ape)
            print(
                f"  {regime:9s} {name:22s} measured {measured * 1e6:9.1f} us  estimate "
                f"{w.estimate.device_s * 1e6:9.1f} us  APE {ape:6.1%}  bound {w.latency_s * 1e6:9.1f} us"
            )
        if apes:
            print(f"  {regime}: estimate APE median {np.median(apes):.1%}, p90 {np.percentile(apes, 90):.1%}")


if __name__ == "__main__":
    main()
