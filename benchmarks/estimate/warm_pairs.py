"""The estimate probes timed both ways (flushed graph p50 and warm: no L2 flush, back to back), per
class of operator (tensorforge/estimate/warm.py), from a calibration or a capture: each pair's
saving and the caps and shares the fit makes of them (EstimateCoefficients.warm_saving_s, warm_saving_share).

    python benchmarks/estimate/warm_pairs.py CALIBRATION_OR_CAPTURE [--all]

--all: every pair the calibration holds (an exploratory calibration timed every item warm); by
default only the items the plan times warm (probe_plan.warm_timed), as the fit reads them.
"""

import argparse
import statistics
import sys

from tensorforge.api import parse_json, read_text, resolve_spec, warm_timed
from tensorforge.bound.model import predict
from tensorforge.estimate.warm import fit_warm, warm_class
from tensorforge.host.plugin_host import PluginHost
from tensorforge_measure.calibrate.estimate_fit import probe_points

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from rescore import calibration_ceilings  # noqa: E402  (benchmarks/estimate/rescore.py)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("calibration")
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args(argv)
    doc = parse_json(read_text(args.calibration, "calibration"), args.calibration)
    cal = doc["calibrated"] if "ceilings" not in doc and isinstance(doc.get("calibrated"), dict) else doc
    host = PluginHost()
    target = host.target("h200")
    rows = [
        r
        for r in probe_points(cal) or []
        if r.get("warm_p50_s") and r.get("graph_p50_s") and (args.all or warm_timed(r["group"], r["graph_p50_s"]))
    ]
    spec = [r for r in rows if r.get("spec")]
    chosen = [resolve_spec(host, r["spec"]) for r in spec]
    bound = predict(chosen, target, host.mappings(), None, calibration_ceilings(cal), estimate=False)
    pairs = []
    for r, (w, kind), wp in zip(spec, chosen, bound.workloads):
        classes = {warm_class(op.problem, b.bottleneck) for op, b in zip(kind.operators(w.params), wp.operators)}
        if len(classes) == 1:
            pairs.append((classes.pop(), r))
    pairs += [("memory", r) for r in rows if r["group"] == "stream"]
    for cls in sorted({c for c, _ in pairs}):
        mine = sorted((r for c, r in pairs if c == cls), key=lambda r: r["graph_p50_s"])
        saved = [(r["graph_p50_s"] - r["warm_p50_s"]) * 1e6 for r in mine]
        print(f"{cls}: {len(mine)} pairs, median saving {statistics.median(saved):.2f} us")
        for r, s in zip(mine, saved):
            print(
                f"  {r['name'][:70]:70s} flushed {r['graph_p50_s'] * 1e6:8.2f} warm {r['warm_p50_s'] * 1e6:8.2f} us  saves {s:6.2f}"
            )
    caps, shares = fit_warm((c, r["graph_p50_s"], r["warm_p50_s"]) for c, r in pairs)
    print("fitted warm_saving_s (us):", {c: round(v * 1e6, 3) for c, v in caps.items()})
    print("fitted warm_saving_share:", {c: round(v, 3) for c, v in shares.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
