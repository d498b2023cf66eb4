"""Re-fit a capture's collective sweep with the current curve (tensorforge.collectives.fit_ceiling
on each swept size's fastest sample) and compare it with the capture's own measurements.

This is analysis of data already recorded, not a measurement: it shows what today's calibrated
bound would have said about the workloads that capture measured, next to the bound the capture
recorded (made with the code of its day). Usage:
    python benchmarks/refit_collectives.py captures/h200x2-default-run.json
"""

import json
import sys

from tensorforge.collectives import ceiling_key, fit_ceiling
from tensorforge.units import seconds
from tensorforge_ops.capture.compare import fastest_sample


def main(path: str) -> None:
    doc = json.load(open(path, encoding="utf-8"))
    sweep = doc["calibrated"]["probes"]["collective-sweep"]["details"]
    n = sweep["world_size"]
    curves = {}
    for op, data in sweep["ops"].items():
        points = data["points"]
        curves[ceiling_key(op, n)] = fit_ceiling(
            op, n, [(p["bytes"], p["min_s"]) for p in points], eager_floor_s=points[0]["p50_s"]
        )
    recorded = {w["name"]: w for w in doc["predicted"]["calibrated"]["workloads"]}
    print(f"{path}: {n} ranks; recorded bound (capture) vs re-fit bound (current curve), against the measured p50")
    print(
        f"{'workload':22} {'bytes':>11} {'p50':>10} {'recorded':>10} {'APE':>6} {'re-fit':>10} {'APE':>6} {'fastest vs re-fit':>18}"
    )
    for name, m in doc["measured"]["workloads"].items():
        w = recorded.get(name)
        if m.get("status") != "ok" or not w or w["kind"] != "collective":
            continue
        problem = w["operators"][0]["problem"]
        curve = curves.get(ceiling_key(problem["op"], n))
        if curve is None:
            continue
        bound, p50 = curve.seconds(problem["bytes"]), m["stats"]["p50"]
        print(
            f"{name:22} {problem['bytes']:>11} {seconds(p50):>10} {seconds(w['latency_s']):>10} "
            f"{abs(w['latency_s'] - p50) / p50 * 100:5.1f}% {seconds(bound):>10} {abs(bound - p50) / p50 * 100:5.1f}% "
            f"{(fastest_sample(m) / bound - 1) * 100:+17.2f}%"
        )
    for key, c in sorted(curves.items()):
        print(
            f"{key}: beta {c.bus_bytes_per_s / 1e9:.1f} GB/s, alpha {seconds(c.latency_s)}, floor "
            f"{seconds(c.floor_s)}, eager small message (median) {seconds(c.eager_floor_s)}"
        )


if __name__ == "__main__":
    main(sys.argv[1])
