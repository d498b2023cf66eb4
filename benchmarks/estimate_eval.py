"""The estimate evaluation: the bound and the estimate scored against measurements, per workload
class (median and p90 APE, bound violations), on shapes no calibration probe measured.

Fit and evaluated sets: the estimate's coefficients are fitted on the calibration probes alone
(tensorforge.estimate.probe_plan; the fit stages and their points are recorded in the result);
they are scored on the evaluation suite benchmarks/eval/h200-suite.toml and the layers of real
networks in benchmarks/eval/h200-networks.toml, whose shapes no probe measures
(tests/test_estimate_eval.py checks the sets are disjoint).

Three ways, one scoring (`tensorforge evaluate`'s own):
  offline (default): from a capture that holds measurements, by default the golden H200 capture
      python benchmarks/estimate_eval.py [--capture examples/captures/h200-estimate-eval-graphfit.json.gz]
  on a device: calibrate afresh, measure the evaluation suite, then score that capture
      python benchmarks/estimate_eval.py --run [--target h200] [--keep-capture PATH]
  (--target host-cpu: the same on this CPU with benchmarks/eval/host-cpu-suite.toml; no GPU)
  a capture's measurements against this commit's prediction: its calibration's fit (redone where
  the capture's fit failed) and its workloads predicted again, here, without a device
      python benchmarks/estimate_eval.py --capture CAPTURE --rescore
Each writes --out (default benchmarks/results/estimate_eval.json).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import _result

NAME = "estimate_eval"
ROOT = _result.ROOT
GOLDEN = ROOT / "examples" / "captures" / "h200-estimate-eval-graphfit.json.gz"
# h200: the first suite's classes, then layers of real networks chosen before the tails were modelled
SUITES = {
    "h200": ("benchmarks/eval/h200-suite.toml", "benchmarks/eval/h200-networks.toml"),
    "host-cpu": ("benchmarks/eval/host-cpu-suite.toml",),
}
# the flags of the golden capture's run (its provenance), with a fresh calibration and no energy windows
RUN_FLAGS = ["--recalibrate", "--no-telemetry", "--no-sustained", "--no-trace", "--no-energy", "--budget", "0.3"]
RUN_FLAGS += ["--cooldown", "2", "--rest", "0.1", "--force"]

COLUMNS = [
    ("group", "group"),
    ("name", "class"),
    ("n", "n"),
    ("bound_ape_median", "bound APE median", "%"),
    ("bound_ape_p90", "bound APE p90", "%"),
    ("estimate_ape_median", "ESTIMATE APE median", "%"),
    ("estimate_ape_p90", "ESTIMATE APE p90", "%"),
    ("bound_violations", "bound violations"),
]
LABELS = {
    "measured": "MEASURED: the capture's p50 per workload (graph replay where recorded, else eager), burst regime",
    "bound_ape_median": "DERIVED: median |PREDICTED bound - MEASURED p50| / MEASURED p50 over the group",
    "bound_ape_p90": "DERIVED: 90th percentile of the bound's APE over the group",
    "estimate_ape_median": "DERIVED: median |PREDICTED estimate - MEASURED p50| / MEASURED p50 over the group",
    "estimate_ape_p90": "DERIVED: 90th percentile of the estimate's APE over the group",
    "bound_violations": "DERIVED: workloads measured below the PREDICTED lower bound (beyond their noise)",
    "fastest_below_bound": "DERIVED: workloads whose fastest MEASURED sample ran below the PREDICTED bound "
    "(no tolerance: the bound's soundness)",
}


def _r(x: float) -> float:
    return round(float(x), 6)


def _fit_words(doc: dict) -> str:
    cal = doc.get("calibrated") or {}
    fit = (((cal.get("estimate") or {}).get("coefficients") or {}).get("fit")) or {}
    stages = fit.get("stages") or {}
    parts = [f"{name} {s['points']}" for name, s in sorted(stages.items()) if s.get("points")]
    device = cal.get("device") or "the device"
    when = str(cal.get("measured_at") or "")[:10]
    return (
        f"the calibration probes (tensorforge.estimate.probe_plan), measured on {device} {when}; "
        f"fit stages and points: {', '.join(parts) or 'not recorded'}"
    )


def _evaluated_words(doc: dict, n: int) -> str:
    command = (doc.get("provenance") or {}).get("command") or []
    suites = [command[i + 1] for i, a in enumerate(command[:-1]) if a == "--suite"]
    return (
        f"{', '.join(suites) or 'the capture suite'}: {n} workloads with a measurement and an estimate, "
        "no shape a calibration probe measured (tests/test_estimate_eval.py)"
    )


def score(doc: dict) -> tuple[list[dict], dict, str]:
    """(rows per class, family and all; summary; source) of a capture document, by `tensorforge
    evaluate`'s scoring."""
    from tensorforge.api import PluginHost
    from tensorforge.api import evaluate_estimates as evaluate
    from tensorforge_measure.compare.evaluation import rows_from_capture

    scored, source = rows_from_capture(doc, PluginHost())
    ev = evaluate(scored)
    rows = []
    for group, scores in (("class", ev.classes), ("family", ev.families), ("all", [ev.overall] if ev.overall else [])):
        for s in scores:
            rows.append(
                {
                    "group": group,
                    "name": s.name,
                    "n": s.n,
                    "bound_ape_median": _r(s.bound_median),
                    "bound_ape_p90": _r(s.bound_p90),
                    "estimate_ape_median": _r(s.estimate_median),
                    "estimate_ape_p90": _r(s.estimate_p90),
                    "bound_violations": s.violations,
                }
            )
    o = ev.overall
    summary = {
        "workloads": o.n,
        "estimate_ape_median": _r(o.estimate_median),
        "estimate_ape_p90": _r(o.estimate_p90),
        "bound_ape_median": _r(o.bound_median),
        "bound_ape_p90": _r(o.bound_p90),
        "bound_violations": o.violations,
        "fastest_below_bound": len(fastest_below(doc)),
        "regimes": sorted({r.regime for r in scored}),
    }
    return rows, summary, source


def fastest_below(doc: dict) -> dict[str, float]:
    """Per workload whose fastest sample ran below its calibrated bound (no tolerance): how far
    below. The fastest sample is the one the capture's comparison checks (every sample of the
    timed regime); the bound is the capture's calibrated prediction (re-predicted by --rescore)."""
    from tensorforge_measure.compare.workload import FASTEST_BELOW

    rows = ((doc.get("comparison") or {}).get("workloads")) or {}
    bounds = {
        w["name"]: float(w["latency_s"])
        for w in ((doc.get("predicted") or {}).get("calibrated") or {}).get("workloads", [])
    }
    out = {}
    for name, row in sorted(rows.items()):
        check = row.get("bound_check") or {}
        fastest = row.get("measured_min_s")
        if fastest and bounds.get(name):
            margin = float(fastest) / bounds[name] - 1.0
        elif check.get("fastest_verdict") == FASTEST_BELOW:
            margin = float(check["fastest_margin"])
        else:
            continue
        if margin < 0:
            out[name] = margin
    return out


def rescored(doc: dict, notes: list[str]) -> dict:
    """The capture with its calibrated prediction made again at this commit: the estimate fitted
    from the capture's own probes by this commit's fit (as a run here would fit them; probes
    added since are missing and their coefficients stay the base's), then `tensorforge predict`
    of the same suites with that calibration. Measurements and comparison stay the capture's."""
    from tensorforge.api import PluginHost
    from tensorforge_measure.calibrate.estimate_fit import fit_estimate
    from tensorforge_measure.calibrate.store import to_ceilings
    from tensorforge_measure.capture.convert import from_document, to_document

    doc = json.loads(json.dumps(doc))
    cal = from_document(doc).calibrated
    section = (doc.get("calibrated") or {}).get("estimate") or {}
    target = PluginHost().target(doc["target"])
    fitted = fit_estimate(to_document(cal), PluginHost(), target, to_ceilings(cal))
    if not fitted or "error" in fitted:
        raise SystemExit(f"estimate_eval: the capture's calibration cannot be fitted: {fitted}")
    doc["calibrated"]["estimate"] = fitted
    if "error" in section:
        notes.append(f"the capture's own estimate fit had failed ({section['error']})")
    notes.append("the estimate fitted again from the capture's probes by this commit's fit")
    command = (doc.get("provenance") or {}).get("command") or []
    suites = []
    for flag, value in zip(command, command[1:]):
        if flag == "--suite":
            suites += ["--suite", value]
    with tempfile.TemporaryDirectory() as folder:
        calibration = Path(folder) / "capture.json"
        calibration.write_text(json.dumps(doc), encoding="utf-8")
        predicted = subprocess.run(
            ["tensorforge", "predict", "--target", doc["target"], *suites, "--ceilings", str(calibration), "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
    if predicted.returncode != 0:
        raise SystemExit(f"estimate_eval: predict failed: {predicted.stderr.strip()}")
    doc["predicted"]["calibrated"] = json.loads(predicted.stdout)
    notes.append("bound and estimate re-predicted at this commit from the capture's calibration (--rescore)")
    return doc


def run_on_device(target: str, capture: Path) -> None:
    suites = [a for suite in SUITES[target] for a in ("--suite", suite)]
    command = ["tensorforge", "run", "--target", target, *suites, *RUN_FLAGS, "-o", str(capture)]
    print("$ " + " ".join(command), flush=True)
    rc = subprocess.run(command, cwd=ROOT).returncode
    if rc != 0 or not capture.exists():
        print(f"estimate_eval: `tensorforge run` ended with status {rc}; nothing written", file=sys.stderr)
        sys.exit(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capture", help=f"score this capture (default: {GOLDEN.relative_to(ROOT)})")
    parser.add_argument("--run", action="store_true", help="calibrate and measure the evaluation suite on a GPU")
    parser.add_argument("--target", default="h200", choices=sorted(SUITES), help="target of --run (default h200)")
    parser.add_argument("--keep-capture", help="with --run: where to keep the capture it measured")
    parser.add_argument(
        "--rescore", action="store_true", help="with --capture: predict its workloads again at this commit"
    )
    _result.out_option(parser, NAME)
    args = parser.parse_args()
    from tensorforge.api import TensorForgeError, read_document

    with tempfile.TemporaryDirectory() as folder:
        if args.run:
            if args.target != "host-cpu":
                _result.need_gpus(1, "estimate_eval --run")
            path = Path(args.keep_capture or Path(folder) / "estimate-eval.json")
            run_on_device(args.target, path)
        else:
            path = Path(args.capture) if args.capture else GOLDEN
        notes: list[str] = []
        try:
            doc = read_document(str(path), "capture")
            if args.rescore:
                doc = rescored(doc, notes)
            rows, summary, source = score(doc)
        except TensorForgeError as exc:
            print(f"estimate_eval: {exc}", file=sys.stderr)
            return 2
    measured = (doc.get("measured") or {}).get("device") or {}
    finished = str((doc.get("provenance") or {}).get("finished_at") or "")[:10]
    shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path.name
    result = _result.build(
        NAME,
        measured.get("name") or "unknown device",
        rows,
        summary,
        LABELS,
        columns=COLUMNS,
        notes=[
            f"measured {finished} ({'this run' if args.run else f'capture {shown}'}); {source}",
            "fastest sample below the bound (no tolerance): "
            + (", ".join(f"{n} ({m:+.2%})" for n, m in fastest_below(doc).items()) or "none"),
            "the bound is a lower bound, the estimate the expected time; APE = |predicted - measured| / measured",
            *notes,
        ],
        fit=_fit_words(doc),
        evaluated=_evaluated_words(doc, summary["workloads"]),
        source=str(shown),
        measured_on=finished,
    )
    for row in rows:
        if row["group"] != "class":
            print(
                f"{row['name']:34s} n={row['n']:3d}  bound APE med {row['bound_ape_median']:6.1%}  "
                f"estimate APE med {row['estimate_ape_median']:6.1%} p90 {row['estimate_ape_p90']:6.1%}"
            )
    print(f"wrote {_result.write(args.out, result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
