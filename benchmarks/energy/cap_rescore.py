"""Offline: the sustained regime's bound of committed captures recomputed with the current code
(capture/energy_prediction.sustained_bound, the cap bound of tensorforge.bound.cap_bound included), from
what each capture holds: its calibration (the sustained matmul probe's points, the energy
coefficients), its predictions and each workload's sustained p50. No refit, no scored figure
enters a coefficient: the cap bound reads the probe alone.

Per workload with >= 1e10 compute-bound FLOPs and a sustained timing (every class, not only the
large GEMMs of issue 15's target): sustained p50 / bound now (which bound binds) and as the capture
recorded it. A ratio below 1 is a bound above the measurement. The summary counts issue 15's large
GEMMs (benchmarks/energy/score.py's choice: gemm_*, >= 1e10 FLOP, at the cap) within [1, 1.05].

    python benchmarks/energy/cap_rescore.py CAPTURE [CAPTURE...] [--margin M]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from rescore import _ns, coefficients  # noqa: E402

from tensorforge.api import CAP_MARGIN, cap_bound_s, flops_by_mode, parse_json, read_text, workload_energy  # noqa: E402
from tensorforge_measure.run import energy_prediction as ep

LARGE_FLOPS = 1e10


def at_cap(doc, name) -> bool:
    windows = (doc.get("diagnostic") or {}).get("windows") or {}
    return dict((windows.get(name) or {}).get("clock_event_fractions") or []).get("SwPowerCap", 0) > 0.5


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("captures", nargs="+")
    ap.add_argument(
        "--margin", type=float, default=CAP_MARGIN, help="another margin than CAP_MARGIN (a sensitivity check)"
    )
    args = ap.parse_args(argv)
    large_n = large_ok = above = large_above = 0
    above_by: dict[str, int] = {}
    for path in args.captures:
        doc = parse_json(read_text(path, "capture"), f"capture {path}")
        if not ((doc.get("calibrated") or {}).get("energy") or {}).get("coefficients"):
            print(f"# {path}: no energy calibration")
            continue
        c = coefficients(doc)
        cap = ep.cap_calibration_of(doc["calibrated"], c, args.margin)
        if cap is None:
            print(f"# {path}: no sustained matmul probe points")
            continue
        per = {m: " ".join(f"{e * 1e13:.3f}" for _, e in s) for m, s in cap.per_size.items()}
        print(
            f"# {path}: P_cap {cap.power_w:.1f} W, P_s {cap.static_w:.1f} W, flush {cap.flush_s * 1e6:.1f} us "
            f"{cap.flush_j * 1e3:.1f} mJ; e at the cap x1e13 J/FLOP per size {per}"
        )
        cache = doc["predicted"]["energy"]["cache_bytes"]
        calibrated = {w["name"]: w for w in doc["predicted"]["calibrated"]["workloads"]}
        sustained = {w["name"]: w for w in (doc["predicted"].get("calibrated_sustained") or {}).get("workloads") or []}
        stored = doc["predicted"]["energy"]["workloads"]
        for name, comp in doc["comparison"]["workloads"].items():
            s = (comp.get("regimes") or {}).get("sustained") or {}
            p50 = s.get("graph_p50_s") or s.get("measured_p50_s")
            if not p50 or name not in calibrated:
                continue
            w = _ns(calibrated[name])
            sw = _ns(sustained[name]) if name in sustained else None
            flops = flops_by_mode(w)
            if sum(flops.values()) < LARGE_FLOPS:
                continue
            est = getattr(w, "estimate", None)
            e = workload_energy(w, c, cache, getattr(est, "eager_s", None), getattr(est, "device_s", None), None, sw)
            bound, src = ep.sustained_bound(w, sw, e.power_limited_bound_s, {}, cap_bound_s(flops, cap))
            old = (stored.get(name) or {}).get("sustained_bound_s")
            ratio = p50 / bound
            large = name.startswith("gemm_") and at_cap(doc, name)
            above += ratio < 1
            if ratio < 1:
                above_by[src] = above_by.get(src, 0) + 1
            if large:
                large_n += 1
                large_ok += 1 <= ratio <= 1.05
                large_above += ratio < 1
            flag = " BOUND ABOVE" if ratio < 1 else (" (large, within 5%)" if large and ratio <= 1.05 else "")
            was = f"{p50 / old:.3f}" if old else "-"
            print(f"  {name:34s} {ratio:6.3f} ({src}); recorded {was}{flag}")
    print(
        f"\nbounds above the measurement: {above} {above_by or ''}; large GEMMs at the cap within [1, 1.05]: {large_ok} of {large_n} "
        f"({large_above} above)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
