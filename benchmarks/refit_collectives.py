"""Re-fit a capture's collective sweep with the current curve (tensorforge.workloads.collectives.fit_ceiling
on each swept size's fastest sample) and compare it with the capture's own measurements.

This is analysis of data already recorded, not a measurement: it shows what today's calibrated
bound would have said about the workloads that capture measured, next to the bound the capture
recorded (made with the code of its day). Usage:
    python benchmarks/refit_collectives.py captures/h200x2-default-run.json.gz
"""

import sys

from tf_distributed.probes import eager_small_message_s

from tensorforge.api import parse_json, read_text  # gzip-aware: archived captures are .json.gz
from tensorforge.cli.units import seconds
from tensorforge.workloads.collectives import ceiling_key, fit_ceiling


def fastest(measured: dict) -> float:
    """The fastest sample of a measured workload as the capture stores it."""
    return min(measured.get("samples_s") or [measured["stats"]["min"]])


def main(path: str, hold_out: bool = False) -> None:
    doc = parse_json(read_text(path, "capture"), f"capture {path}")
    sweep = doc["calibrated"]["probes"]["collective-sweep"]["details"]
    n = sweep["world_size"]
    recorded = {w["name"]: w for w in doc["predicted"]["calibrated"]["workloads"]}
    used = {
        (w["operators"][0]["problem"]["op"], w["operators"][0]["problem"]["bytes"])
        for w in recorded.values()
        if w["kind"] == "collective"
    }
    curves = {}
    for op, data in sweep["ops"].items():
        points = [p for p in data["points"] if not (hold_out and (op, p["bytes"]) in used)]
        curves[ceiling_key(op, n)] = fit_ceiling(
            op,
            n,
            [(p["bytes"], p["min_s"]) for p in points],
            eager_floor_s=eager_small_message_s(points[0]),
            interpolation="step" if doc["measured"]["device"]["details"].get("device_kind") == "cpu" else "chord",
            typical=[(p["bytes"], p["p50_s"]) for p in points],
        )
    if hold_out:
        print("hold-out: the fit leaves out every swept size a measured collective used")
    print(f"{path}: {n} ranks; recorded bound (capture) vs re-fit bound (current curve), against the measured p50")
    print(
        f"{'workload':22} {'bytes':>11} {'p50':>10} {'recorded':>10} {'APE':>6} {'re-fit':>10} {'APE':>6} {'fastest vs re-fit':>18} {'sweep median':>12} {'APE':>6}"
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
        expected = max(bound, curve.expected_s(problem["bytes"]) or 0.0)  # the estimate's collective term
        print(
            f"{name:22} {problem['bytes']:>11} {seconds(p50):>10} {seconds(w['latency_s']):>10} "
            f"{abs(w['latency_s'] - p50) / p50 * 100:5.1f}% {seconds(bound):>10} {abs(bound - p50) / p50 * 100:5.1f}% "
            f"{(fastest(m) / bound - 1) * 100:+17.2f}% {seconds(expected):>12} {abs(expected - p50) / p50 * 100:5.1f}%"
        )
    for key, c in sorted(curves.items()):
        print(
            f"{key}: beta {c.bus_bytes_per_s / 1e9:.1f} GB/s, alpha {seconds(c.latency_s)}, floor "
            f"{seconds(c.floor_s)}, eager small call, host-bound {seconds(c.eager_floor_s)}"
        )


if __name__ == "__main__":
    main(sys.argv[1], hold_out="--hold-out" in sys.argv[2:])
