"""Offline check of the calibrated compute ceiling 'highest rate any calibration probe of the mode
observed' (tensorforge_measure/calibrate/sweep_rates.py) on stored captures: the bound recomputed
from each capture's own CALIBRATED data, with the ceilings as recorded and with each mode raised
to the estimate sweep's fastest GEMM rate, against the measured fastest sample and p50.

    python benchmarks/ceiling_check.py CAPTURE.json [CAPTURE.json ...]

Captures made before the sweep recorded its fastest sample ('min_s') give the p10 sample, a
slower one: the corrected ceiling printed is then a floor of the one calibration now computes.
Nothing is written into the captures (their digests stay valid).
"""

import sys

from tensorforge.api import parse_json, read_text  # gzip-aware: archived captures are .json.gz
from tensorforge.bound.model import predict
from tensorforge.hardware.ceilings_file import ceilings_from_data
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve_spec
from tensorforge_measure.calibrate.estimate_fit import probe_points
from tensorforge_measure.calibrate.sweep_rates import sweep_gemm_rates
from tensorforge_measure.capture.convert import converter
from tensorforge_measure.capture.sections.measured import WorkloadMeasurement
from tensorforge_measure.commands.evaluate import measured_time
from tensorforge_measure.compare.workload import fastest_sample

LARGE = ("gemm_large", "gemm-large")


def check(path: str, host: PluginHost) -> None:
    doc = parse_json(read_text(path, "capture"), f"capture {path}")
    cal = doc["predicted"]["calibrated"]
    data = doc["calibrated"]["ceilings"]
    old = ceilings_from_data(data, f"{path} CALIBRATED")
    rates = sweep_gemm_rates(probe_points(doc["calibrated"]) or [])
    compute = dict(data["compute"])
    print(f"{path}")
    for mode, (rate, point, sample) in sorted(rates.items()):
        was = float(compute.get(mode, 0.0))
        setter = "estimate-terms " + point if rate > was else "matmul-ceiling"
        print(
            f"  {mode}: matmul-ceiling {was / 1e12:.1f} TFLOP/s, sweep {rate / 1e12:.1f} ({point}, {sample})"
            f" -> ceiling {max(rate, was) / 1e12:.1f}, set by {setter}"
        )
        compute[mode] = max(rate, was)
    new = ceilings_from_data({**data, "compute": compute}, f"{path} CALIBRATED, sweep-raised")
    target = host.target(cal["target"])
    rows, below = [], {"old": [0, 0], "new": [0, 0]}
    for w in cal["workloads"]:
        m = doc["measured"]["workloads"].get(w["name"]) or {}
        timed = measured_time(m)
        if not timed:
            continue
        fastest = fastest_sample(converter.structure(m, WorkloadMeasurement))
        chosen = [resolve_spec(host, w["spec"])]
        b_old = predict(chosen, target, host.mappings(), cal["operating_point"], old).workloads[0].latency_s
        b_new = predict(chosen, target, host.mappings(), cal["operating_point"], new).workloads[0].latency_s
        for key, b in (("old", b_old), ("new", b_new)):
            below[key][0] += fastest < b
            below[key][1] += timed[0] < b
        if fastest < b_old or fastest < b_new or any(s in w["name"] for s in LARGE):
            rows.append((w["name"], timed[0], fastest, b_old, b_new))
    for key in ("old", "new"):
        print(
            f"  bound above the fastest sample: {below[key][0]}, above the p50: {below[key][1]} "
            f"({'recorded ceilings' if key == 'old' else 'sweep-raised ceilings'})"
        )
    print(
        f"  {'workload':34s} {'p50':>10s} {'fastest':>10s} {'bound':>10s} {'raised':>10s}"
        f"  fastest/bound-1 (before -> after)  p50/bound-1 (before -> after)"
    )
    for name, p50, fastest, b_old, b_new in rows:
        print(
            f"  {name:34s} {p50 * 1e6:10.2f} {fastest * 1e6:10.2f} {b_old * 1e6:10.2f} {b_new * 1e6:10.2f}"
            f"  {(fastest / b_old - 1) * 100:+6.2f}% -> {(fastest / b_new - 1) * 100:+6.2f}%"
            f"            {(p50 / b_old - 1) * 100:+6.2f}% -> {(p50 / b_new - 1) * 100:+6.2f}%"
        )


def main(argv=None) -> None:
    host = PluginHost()
    for path in argv if argv is not None else sys.argv[1:]:
        check(path, host)


if __name__ == "__main__":
    main()
