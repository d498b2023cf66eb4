"""Energy evaluation: the energy estimate and floor against the device's energy counter (GPU).

Fit and evaluated sets: the energy coefficients are fitted on the energy probe's windows alone
(idle, a launch-bound mix, a copy larger than L2, a skinny and square GEMMs; the points are listed
in the result); they are scored on benchmarks/eval/h200-energy-heldout.toml, shapes no energy
probe ran, each large enough to be well above the counter's resolution.

Per workload: MEASURED joules per execution (NVML's total-energy counter over the energy window),
the PREDICTED estimate and floor, the estimate's error and the floor verdict (a measurement below
the floor says the floor is not sound). Summary: median and p90 |error|, how many within 10%, floor
violations.

    python benchmarks/energy_eval.py [--target h200] [--out benchmarks/results/energy_eval.json]
    python benchmarks/energy_eval.py --capture CAPTURE   (score a capture with energy windows; no GPU)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _result

NAME = "energy_eval"
ROOT = _result.ROOT
SUITE = "benchmarks/eval/h200-energy-heldout.toml"
RUN_FLAGS = ["--no-trace", "--budget", "1", "--force"]
WITHIN = 0.10

COLUMNS = [
    ("workload", "workload"),
    ("measured_j", "MEASURED J"),
    ("estimate_j", "ESTIMATE J"),
    ("floor_j", "floor J"),
    ("estimate_error", "estimate error", "%"),
    ("floor_verdict", "floor"),
]
LABELS = {
    "measured_j": "MEASURED: joules per execution, the device's energy counter over the energy window",
    "estimate_j": "PREDICTED: energy estimate per execution (device-time estimate for a graph window)",
    "floor_j": "PREDICTED: energy floor per execution (a lower bound)",
    "estimate_error": "DERIVED: (estimate - measured) / measured",
    "estimate_abs_error_median": "DERIVED: median |estimate error| over the workloads",
    "estimate_abs_error_p90": "DERIVED: 90th percentile of |estimate error|",
    "within_10pct": "DERIVED: workloads whose |estimate error| <= 10%",
    "floor_violations": "DERIVED: workloads measured below the PREDICTED floor",
}


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def score(doc: dict) -> tuple[list[dict], dict]:
    """Rows and summary from a capture's comparison (what `run` and `verify` computed)."""
    rows = []
    for name, w in sorted(((doc.get("comparison") or {}).get("workloads") or {}).items()):
        e = w.get("energy") or {}
        if e.get("measured_j") is None:
            continue
        err = e.get("estimate_error")
        rows.append(
            {
                "workload": name,
                "measured_j": round(e["measured_j"], 6),
                "estimate_j": None if e.get("estimate_j") is None else round(e["estimate_j"], 6),
                "floor_j": None if e.get("floor_j") is None else round(e["floor_j"], 6),
                "estimate_error": None if err is None else round(err, 4),
                "floor_verdict": e.get("floor_verdict") or "",
                "estimate_basis": e.get("estimate_basis") or "eager window",
            }
        )
    errors = [abs(r["estimate_error"]) for r in rows if r["estimate_error"] is not None]
    summary = {
        "workloads": len(rows),
        "estimate_abs_error_median": round(statistics.median(errors), 4) if errors else None,
        "estimate_abs_error_p90": round(_p90(errors), 4) if errors else None,
        "within_10pct": sum(e <= WITHIN for e in errors),
        "floor_violations": sum(r["floor_verdict"] == "FLOOR VIOLATION" for r in rows),
    }
    return rows, summary


def fit_words(doc: dict) -> str:
    energy = (doc.get("calibrated") or {}).get("energy") or {}
    points = [p.get("name") for p in energy.get("points") or [] if p.get("name")]
    device = (doc.get("calibrated") or {}).get("device") or "the device"
    when = str((doc.get("calibrated") or {}).get("measured_at") or "")[:10]
    return f"the energy probe's windows on {device} {when}: {', '.join(points) or 'not recorded'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="h200")
    parser.add_argument("--capture", help="score this capture instead of measuring (no GPU needed)")
    parser.add_argument("--keep-capture", help="where to keep the capture the run measured")
    _result.out_option(parser, NAME)
    args = parser.parse_args()
    from tensorforge.api import TensorForgeError, read_document

    with tempfile.TemporaryDirectory() as folder:
        if args.capture:
            path = Path(args.capture)
        else:
            _result.need_gpus(1, "energy_eval")
            path = Path(args.keep_capture or Path(folder) / "energy-eval.json")
            command = ["tensorforge", "run", "--target", args.target, "--suite", SUITE, *RUN_FLAGS, "-o", str(path)]
            print("$ " + " ".join(command), flush=True)
            rc = subprocess.run(command, cwd=ROOT).returncode
            if rc != 0 or not path.exists():
                print(f"energy_eval: `tensorforge run` ended with status {rc}; nothing written", file=sys.stderr)
                return 1
        try:
            doc = read_document(str(path), "capture")
        except TensorForgeError as exc:
            print(f"energy_eval: {exc}", file=sys.stderr)
            return 2
    rows, summary = score(doc)
    if not rows:
        print(f"energy_eval: {path} holds no energy measurement; nothing written", file=sys.stderr)
        return 2
    command = (doc.get("provenance") or {}).get("command") or []
    suites = [command[i + 1] for i, a in enumerate(command[:-1]) if a == "--suite"]
    finished = str((doc.get("provenance") or {}).get("finished_at") or "")[:10]
    result = _result.build(
        NAME,
        ((doc.get("measured") or {}).get("device") or {}).get("name") or "unknown device",
        rows,
        summary,
        LABELS,
        columns=COLUMNS,
        notes=[f"measured {finished} ({'capture ' + path.name if args.capture else 'this run'})"],
        fit=fit_words(doc),
        evaluated=f"{', '.join(suites) or 'the capture suite'}: {len(rows)} workloads no energy probe ran",
        measured_on=finished,
    )
    for r in rows:
        print(f"{r['workload']:34s} measured {r['measured_j']:10.4f} J estimate error {r['estimate_error']:+.1%}")
    print(f"wrote {_result.write(args.out, result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
