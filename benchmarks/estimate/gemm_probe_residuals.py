"""The GEMM probes of a calibration, each with its measured graph p50, the estimate's device time,
the tile the model picks and its terms; and, for the probes whose cuBLAS kernel the H200 traces
name (benchmarks/results/h200-probe-kernels.json), the estimate of THAT tile beside the model's pick.

    python benchmarks/estimate/gemm_probe_residuals.py CALIBRATION_OR_CAPTURE [COEFFICIENTS.json] [--groups gemm,unaligned]

Why it exists: a fitted term can reproduce the probes by choosing tiles the library never runs
(the gsmall session of 2026-12-01: a per-CTA dispatch cost fitted 6.7 ns a CTA and reproduced the
small GEMM probes to 1-6%, but estimated cuBLAS's own 64x8 kernel for 256^3 at 3.72 us against
3.14 us measured); the second table shows that at once. COEFFICIENTS.json is what
`rescore.py --coefficients` wrote; without it, the coefficients the calibration stored.
"""

import argparse
import json
import re
import sys
from pathlib import Path

from tensorforge.api import WorkloadPoint, parse_json, read_text
from tensorforge.estimate import gemm as G
from tensorforge.estimate.coefficients import coefficients_from_data
from tensorforge.estimate.implementation import DEFAULT
from tensorforge.estimate.menus import menu_for
from tensorforge.estimate.model import device_for, estimate_workload
from tensorforge.estimate.operators import _gemm_shape, gemm_menu, gemm_rates
from tensorforge.host.plugin_host import PluginHost
from tensorforge_measure.calibrate.estimate_fit import calibrated_coefficients, probe_points, workload_points

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rescore import calibration_ceilings  # noqa: E402  (benchmarks/estimate/rescore.py, beside this script)

TRACES = str(Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200-probe-kernels.json")


def traced_tiles(path: str = TRACES) -> dict[str, tuple[int, int]]:
    """probe name -> (rows, cols) of the unsplit nvjet tile cuBLAS ran for it (split-K kernels
    left out: the second table compares unsplit configurations)."""
    items = json.load(open(path, encoding="utf-8"))["items"]
    out = {}
    for name, item in items.items():
        for kernel in item["kernels"]:
            m = re.search(r"nvjet_sm90_\w+?_(\d+)x(\d+)_", kernel)
            if m and "splitK" not in kernel:
                out[name] = (int(m.group(1)), int(m.group(2)))
    return out


def load_points(cal, host, target, ceilings, groups):
    """The graph-timed probe points of these groups, as the estimate's fit reads them."""
    rows = [r for r in probe_points(cal) if r["group"] in groups and r.get("spec") and r.get("graph_p50_s")]
    return workload_points(rows, host, target, ceilings)[1]


def traced_time(p: WorkloadPoint, tile, d, c) -> float | None:
    """The estimate's device time of the probe on the traced tile (unsplit), or None."""
    prob = p.operators[0].problem
    s = _gemm_shape(prob, DEFAULT, menu_for(d.family))
    geo = G.geometry(s, gemm_menu(s, d.family), d.units, d.cache_bytes)
    t = G.times(geo, gemm_rates(s, d, c))
    for i in range(len(geo["tm"])):
        if (int(geo["tm"][i]), int(geo["tn"][i])) == tile and geo["split"][i] == 1 and not geo["stream_k"][i]:
            return float(t["total"][i]) + c.kernel.device_harness_s + c.kernel.device_launch_s
    return None


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("calibration")
    ap.add_argument("coefficients", nargs="?")
    ap.add_argument("--groups", default="gemm")
    args = ap.parse_args(argv)
    doc = parse_json(read_text(args.calibration, "calibration"), args.calibration)
    cal = doc["calibrated"] if "calibrated" in doc else doc
    host = PluginHost()
    target = host.target((doc.get("predicted") or {}).get("calibrated_target") or doc["target"])
    ceilings = calibration_ceilings(cal)
    if args.coefficients:
        c = coefficients_from_data(json.load(open(args.coefficients, encoding="utf-8"))["coefficients"], "coefficients")
    else:
        c = calibrated_coefficients(cal, target.name)
    d = device_for(target, ceilings, c)
    points = sorted(load_points(cal, host, target, ceilings, args.groups.split(",")), key=lambda p: p.measured_s)
    tiles = traced_tiles()
    print(f"{'probe':62s} {'graph p50':>10s} {'estimate':>9s}  error  model's mapping")
    traced = []
    for p in points:
        est = estimate_workload(p.prediction, p.operators, p.kind, p.params, d, c)
        err = est.device_s / p.measured_s - 1
        print(
            f"{p.name[:62]:62s} {p.measured_s * 1e6:8.2f}us {est.device_s * 1e6:7.2f}us {err:+6.1%}  {est.operators[0].mapping}"
        )
        if p.name in tiles:
            traced.append((p, tiles[p.name], est.device_s))
    # the kernel names' _h_/_v_ orientation is not decoded here: the tile is shown both ways
    print("\nprobes whose unsplit cuBLAS tile the traces name: the estimate on it (as named / transposed)")
    for p, tile, picked in traced:
        shown = []
        for rows, cols in (tile, tile[::-1]):
            on_tile = traced_time(p, (rows, cols), d, c)
            shown.append(f"{on_tile * 1e6:7.2f}us" if on_tile is not None else "  (none)")
        print(
            f"{p.name[:62]:62s} {p.measured_s * 1e6:8.2f}us  cuBLAS {tile[0]}x{tile[1]}: "
            f"{shown[0]} / {shown[1]}  model's pick: {picked * 1e6:7.2f}us"
        )


if __name__ == "__main__":
    main()
