"""Offline: the energy score of captures with the estimate's TIME refitted by the current code from
a calibration's probe points (benchmarks/energy/rescore.py then splits each energy error into its
time and power parts, as for the stored estimates).

    python benchmarks/estimate/energy_refit.py CALIBRATION_OR_CAPTURE CAPTURE [CAPTURE...] [--current-plan]

(--current-plan: the calibration's probe points cut to the current plan's items first, as rescore.py
does: what a calibration of the current plan would have fitted from the same measurements.)

Why: the energy estimate (issue 15) multiplies the estimate's time; when the estimate's model
changes after a device session, this shows what the change does to the energy score on the SAME
measurements, without a device. Each capture's calibrated workloads get the refitted estimate
(device and eager time, kernels, terms); a sustained-regime estimate is scaled by the same factor
as its burst one (the sustained estimate is the burst coefficients on the sustained ceilings:
an approximation, said here). Nothing is written back; patched copies go to a temporary folder.
"""

import copy
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

from tensorforge.api import parse_json, read_text
from tensorforge.bound.model import predict
from tensorforge.estimate.coefficients import coefficients_from_data
from tensorforge.files.serialize import to_data
from tensorforge.host.plugin_host import PluginHost
from tensorforge_measure.calibrate.estimate_fit import fit_estimate
from tensorforge_measure.commands.evaluate import _params

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rescore import calibration_ceilings, current_plan_subset  # noqa: E402  (benchmarks/estimate/rescore.py, beside this script)

ROOT = Path(__file__).resolve().parents[2]


def _energy_rescore():
    spec = importlib.util.spec_from_file_location("energy_rescore", ROOT / "benchmarks" / "energy" / "rescore.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def refit(cal_path: str, current_plan: bool = False):
    doc = parse_json(read_text(cal_path, "calibration"), f"calibration {cal_path}")
    cal = doc["calibrated"] if "ceilings" not in doc and isinstance(doc.get("calibrated"), dict) else doc
    if current_plan:  # the calibration's probe points cut to the current plan's items (rescore.py)
        cal = current_plan_subset(cal)
    host = PluginHost()
    ceilings = calibration_ceilings(cal)
    target_name = (doc.get("predicted") or {}).get("calibrated_target") or doc.get("target") or "h200"
    target = host.target(target_name)
    fitted = fit_estimate(cal, host, target, ceilings)
    if fitted is None or "error" in fitted:
        sys.exit(f"fit failed: {fitted}")
    return host, target, ceilings, coefficients_from_data(fitted["coefficients"], "refitted coefficients")


def patched(path: str, host, target, ceilings, coefficients) -> str:
    doc = parse_json(read_text(path, "capture"), f"capture {path}")
    doc = copy.deepcopy(doc)
    from tensorforge.workloads.kinds import Workload

    chosen = []
    for w in doc["predicted"]["analytical"]["workloads"]:
        kind_name, params = _params(host, w["spec"])
        chosen.append(
            (Workload(name=w["name"], kind=kind_name, params=params, spec=w["spec"]), host.workload_kind(kind_name))
        )
    pred = predict(chosen, target, host.mappings(), None, ceilings, estimate=coefficients)
    new = {w.name: wp.estimate for (w, _), wp in zip(chosen, pred.workloads)}
    factor = {}
    for w in doc["predicted"]["calibrated"]["workloads"]:
        if w.get("estimate") is None or w["name"] not in new:
            continue
        old = float(w["estimate"]["device_s"])
        w["estimate"] = to_data(new[w["name"]])
        factor[w["name"]] = float(w["estimate"]["device_s"]) / old
    for w in (doc["predicted"].get("calibrated_sustained") or {}).get("workloads") or []:
        if w.get("estimate") is not None and w["name"] in factor:
            for key in ("device_s", "eager_s"):
                w["estimate"][key] = float(w["estimate"][key]) * factor[w["name"]]
    out = Path(tempfile.mkdtemp(prefix="energy-refit-")) / Path(path).name.replace(".gz", "")
    out.write_text(json.dumps(doc), encoding="utf-8")
    for name, f in sorted(factor.items()):
        print(f"# {name:34s} estimate device time x {f:.3f}")
    return str(out)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(
            "usage: python benchmarks/estimate/energy_refit.py CALIBRATION_OR_CAPTURE CAPTURE [CAPTURE...]",
            file=sys.stderr,
        )
        return 2
    current = "--current-plan" in argv
    argv = [a for a in argv if a != "--current-plan"]
    fitted = refit(argv[0], current)
    paths = [patched(p, *fitted) for p in argv[1:]]
    print(f"# estimate times refitted by the current code from {argv[0]}")
    return _energy_rescore().main(paths)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
