"""Training steps (phase=train): the measured step against the bound and the estimate, per workload
and per operator (GPU).

Per workload of benchmarks/eval/h200-train.toml (GEMMs and convolutions as layers, with SGD or
AdamW, fp32 master weights, gradient accumulation; forward + backward through autograd, then the
fused optimizer): MEASURED burst p50 as a CUDA graph (device time) and eager, against the PREDICTED
bound and the device and eager estimates; the bound's verdict; MEASURED peak device memory against
the PREDICTED footprint, and the activation memory the step saves for backward. Per operator
(forward, input and weight gradients, casts, accumulation, optimizer): the trace window's device
time against the operator's bound and estimate (`operators` in the result file).

Fit and evaluated sets: the estimate's coefficients come from the calibration probes alone: the
device's from forward kernels and streams, the eager step's host costs (autograd, the optimizer)
from the train-host probes, tiny training steps of shapes no workload here has
(tensorforge.estimate.probe_plan); every workload here is evaluated, none fitted. A calibration
made before the train-host probes existed has no such costs: pass --recalibrate to measure them
(the notes say which the capture had).

    python benchmarks/train_step.py [--target h200] [--recalibrate] [--keep-capture PATH]
    python benchmarks/train_step.py --capture CAPTURE    (score a capture; no GPU)
    python benchmarks/train_step.py --target host-cpu    (a rehearsal on this CPU)
Either writes --out (default benchmarks/results/train_step.json).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _result

NAME = "train_step"
ROOT = _result.ROOT
SUITES = {"h200": "benchmarks/eval/h200-train.toml", "host-cpu": "benchmarks/eval/host-cpu-train.toml"}
# telemetry, the sustained regime and energy windows are other benchmarks' business; the trace
# window stays: it gives the per-operator times
RUN_FLAGS = ["--no-telemetry", "--no-sustained", "--no-energy", "--budget", "1", "--cooldown", "2", "--rest", "0.1"]
RUN_FLAGS += ["--force"]
WITHIN = {"device": 0.05, "eager": 0.10, "memory": 0.10}

COLUMNS = [
    ("workload", "workload"),
    ("measured_graph_s", "MEASURED graph p50 s"),
    ("measured_eager_s", "MEASURED eager p50 s"),
    ("bound_s", "bound s"),
    ("estimate_device_s", "ESTIMATE device s"),
    ("estimate_eager_s", "ESTIMATE eager s"),
    ("device_error", "device error", "%"),
    ("eager_error", "eager error", "%"),
    ("bound_verdict", "bound"),
    ("peak_memory_bytes", "MEASURED peak B"),
    ("footprint_bytes", "PREDICTED footprint B"),
    ("memory_error", "memory error", "%"),
    ("activation_bytes", "PREDICTED activations B"),
]
LABELS = {
    "measured_graph_s": "MEASURED: burst p50 of one step replayed as a CUDA graph (device time), L2 flushed per call",
    "measured_eager_s": "MEASURED: burst p50 of one eager step, L2 flushed per call",
    "bound_s": "PREDICTED: the lower bound of the step (calibrated ceilings where the capture has them)",
    "estimate_device_s": "PREDICTED: the estimate of the step's device time (graph-flushed)",
    "estimate_eager_s": "PREDICTED: the estimate of an eager step (eager-flushed)",
    "device_error": "DERIVED: (estimate device - MEASURED graph p50) / MEASURED graph p50 (same device only)",
    "eager_error": "DERIVED: (estimate eager - MEASURED eager p50) / MEASURED eager p50 (same device only)",
    "bound_verdict": "DERIVED: the capture's bound check (a violation: measured below the bound beyond noise)",
    "peak_memory_bytes": "MEASURED: peak device memory of the build and one step (torch.cuda.max_memory_allocated)",
    "footprint_bytes": "PREDICTED: the step's device memory at its peak (the kind's memory(): inputs, "
    "parameters, gradients, optimizer state, weight copies, saved activations, temporaries)",
    "memory_error": "DERIVED: (footprint - MEASURED peak) / MEASURED peak",
    "activation_bytes": "PREDICTED: what one micro-step keeps for its backward (the kind's activation_bytes())",
    "device_abs_error_median": "DERIVED: median |device error| over the workloads",
    "eager_abs_error_median": "DERIVED: median |eager error| over the workloads",
    "device_within_5pct": "DERIVED: workloads whose |device error| <= 5%",
    "eager_within_10pct": "DERIVED: workloads whose |eager error| <= 10%",
    "memory_within_10pct": "DERIVED: workloads whose |memory error| <= 10%",
    "bound_violations": "DERIVED: workloads measured below the PREDICTED lower bound",
    "operator_measured_s": "MEASURED (operators): the trace window's device time of the operator per step "
    "(busy + gaps; graph replays where matched, else eager calls)",
    "operator_bound_s": "PREDICTED (operators): the operator's bound, all its executions in a step",
    "operator_estimate_s": "PREDICTED (operators): the operator's estimate, all its executions in a step",
}


def _timing(m: dict, mode: str) -> float | None:
    """The burst (or a one-regime device's single) p50 of `mode` in a measured workload."""
    if not m or m.get("status") != "ok":
        return None
    for t in [m, *(m.get("modes") or [])]:
        regime, kind = t.get("regime") or "burst", t.get("mode") or "eager"
        p50 = (t.get("stats") or {}).get("p50")
        if regime in ("burst", "single") and kind == mode and p50:
            return float(p50)
    return None


def _error(predicted: float | None, measured: float | None, same: bool) -> float | None:
    if not same or predicted is None or not measured:
        return None
    return round((predicted - measured) / measured, 4)


def _r(x):
    return None if x is None else round(float(x), 9)


def _traced(m: dict) -> dict[str, float]:
    """Operator -> device time per step from the trace window (graph replays where matched)."""
    window = (m or {}).get("operators") or {}
    summary = window.get("graph") if window.get("source") == "graph replay" else window.get("eager")
    return {o["operator"]: float(o["time_p50_s"]) for o in (summary or {}).get("operators") or []}


def score(doc: dict, core) -> tuple[list[dict], list[dict], dict, str]:
    """(workload rows, operator rows, summary, which prediction) of a capture document."""
    from tensorforge.api import parse_fields

    pred = doc.get("predicted") or {}
    which = "calibrated" if pred.get("calibrated") else "analytical"
    chosen = pred.get(which) or {}
    measured = (doc.get("measured") or {}).get("workloads") or {}
    comparison = doc.get("comparison") or {}
    same = bool(comparison.get("same_device"))
    rows, op_rows = [], []
    for w in chosen.get("workloads") or []:
        m = measured.get(w["name"]) or {}
        kind_name, _, rest = w["spec"].partition(":")
        kind = core.workload_kind(kind_name)
        params = kind.parse({k: v for k, v in parse_fields(rest, w["spec"]).items() if k != "config"})
        saved = getattr(kind, "activation_bytes", None)
        est = w.get("estimate") or {}
        graph, eager = _timing(m, "graph"), _timing(m, "eager") or _timing(m, "single")
        peak = m.get("peak_memory_bytes")
        check = ((comparison.get("workloads") or {}).get(w["name"]) or {}).get("bound_check") or {}
        rows.append(
            {
                "workload": w["name"],
                "measured_graph_s": _r(graph),
                "measured_eager_s": _r(eager),
                "bound_s": _r(w["latency_s"]),
                "estimate_device_s": _r(est.get("device_s")),
                "estimate_eager_s": _r(est.get("eager_s")),
                "device_error": _error(est.get("device_s"), graph, same),
                "eager_error": _error(est.get("eager_s"), eager, same),
                "bound_verdict": check.get("verdict") or ("no verdict: not measured" if not m else ""),
                "peak_memory_bytes": peak,
                "footprint_bytes": w.get("footprint_bytes"),
                "memory_error": _error(w.get("footprint_bytes"), peak, same),
                "activation_bytes": saved(params) if saved else None,
            }
        )
        traced = _traced(m)
        estimates = {o["name"]: o for o in est.get("operators") or []}
        for op in w.get("operators") or []:
            e = estimates.get(op["name"]) or {}
            t = traced.get(op["name"])
            op_rows.append(
                {
                    "workload": w["name"],
                    "operator": op["name"],
                    "count": op["count"],
                    "operator_measured_s": _r(t),
                    "operator_bound_s": _r(op["latency_s"]),
                    "operator_estimate_s": _r(e.get("estimate_s")),
                    "error": _error(e.get("estimate_s"), t, same),
                }
            )

    def errors(key):
        return [abs(r[key]) for r in rows if r[key] is not None]

    summary = {
        "workloads": len(rows),
        "measured": sum(r["measured_graph_s"] is not None or r["measured_eager_s"] is not None for r in rows),
        "device_abs_error_median": round(statistics.median(errors("device_error")), 4)
        if errors("device_error")
        else None,
        "device_within_5pct": sum(e <= WITHIN["device"] for e in errors("device_error")),
        "eager_abs_error_median": round(statistics.median(errors("eager_error")), 4) if errors("eager_error") else None,
        "eager_within_10pct": sum(e <= WITHIN["eager"] for e in errors("eager_error")),
        "memory_within_10pct": sum(e <= WITHIN["memory"] for e in errors("memory_error")),
        "bound_violations": sum("VIOLATION" in (r["bound_verdict"] or "") for r in rows),
    }
    return rows, op_rows, summary, which


def train_host_note(doc: dict) -> str:
    """CALIBRATED: the eager step's host costs the capture's calibration fitted (fit stage
    train-host), or that it has none (a calibration from before the train-host probes)."""
    stage = ((((doc.get("calibrated") or {}).get("estimate") or {}).get("report") or {}).get("stages") or {}).get(
        "train-host"
    ) or {}
    fitted = stage.get("fitted")
    if not fitted:
        return "CALIBRATED: no train-host probes in this calibration: eager steps charged as forward kernels"
    figures = ", ".join(f"{k.removeprefix('training.')} {v * 1e6:.1f} us" for k, v in sorted(fitted.items()))
    spread = f"; probes reproduced to median {stage['median_ape']:.1%}" if "median_ape" in stage else ""
    return (
        f"CALIBRATED host costs of an eager step (train-host probes, {stage.get('points')} points): {figures}{spread}"
    )


def run_on_device(target: str, capture: Path, recalibrate: bool) -> None:
    command = ["tensorforge", "run", "--target", target, "--suite", SUITES[target], *RUN_FLAGS, "-o", str(capture)]
    if recalibrate:
        command.insert(-2, "--recalibrate")
    print("$ " + " ".join(command), flush=True)
    rc = subprocess.run(command, cwd=ROOT).returncode
    if rc != 0 or not capture.exists():
        print(f"train_step: `tensorforge run` ended with status {rc}; nothing written", file=sys.stderr)
        sys.exit(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="h200", choices=sorted(SUITES), help="target measured (default h200)")
    parser.add_argument("--capture", help="score this capture instead of measuring (no GPU needed)")
    parser.add_argument("--recalibrate", action="store_true", help="run the calibration probes even if stored")
    parser.add_argument("--keep-capture", help="where to keep the capture the run measured")
    _result.out_option(parser, NAME)
    args = parser.parse_args()
    from tensorforge.api import PluginHost, TensorForgeError, read_document

    with tempfile.TemporaryDirectory() as folder:
        if args.capture:
            path = Path(args.capture)
        else:
            if args.target != "host-cpu":
                _result.need_gpus(1, "train_step")
            path = Path(args.keep_capture or Path(folder) / "train-step.json")
            run_on_device(args.target, path, args.recalibrate)
        try:
            doc = read_document(str(path), "capture")
            rows, op_rows, summary, which = score(doc, PluginHost())
        except TensorForgeError as exc:
            print(f"train_step: {exc}", file=sys.stderr)
            return 2
    if not summary["measured"]:
        print(f"train_step: {path} holds no measured workload; nothing written", file=sys.stderr)
        return 2
    device = ((doc.get("measured") or {}).get("device") or {}).get("name") or "unknown device"
    finished = str((doc.get("provenance") or {}).get("finished_at") or "")[:10]
    command = (doc.get("provenance") or {}).get("command") or []
    suites = [command[i + 1] for i, a in enumerate(command[:-1]) if a == "--suite"]
    result = _result.build(
        NAME,
        device,
        rows,
        summary,
        LABELS,
        columns=COLUMNS,
        notes=[
            f"measured {finished} ({'capture ' + path.name if args.capture else 'this run'}); {which} bound",
            "one step = grad_accum x (forward + backward through autograd) + the fused optimizer; "
            "the backward starts from a given output gradient (no loss)",
            train_host_note(doc),
        ],
        fit="the calibration probes (forward kernels and streams; tiny eager training steps for the host costs)",
        evaluated=f"{', '.join(suites) or 'the capture suite'}: {len(rows)} training steps",
        operators=op_rows,
        measured_on=finished,
    )
    for r in rows:
        graph = r["measured_graph_s"] is not None
        measured, predicted = (
            (r["measured_graph_s"], r["estimate_device_s"])
            if graph
            else (
                r["measured_eager_s"],
                r["estimate_eager_s"],
            )
        )
        err = r["device_error"] if graph else r["eager_error"]
        print(
            f"{r['workload']:44s} {'graph' if graph else 'eager'} {measured or 0:.6f} s  estimate {predicted or 0:.6f} s"
            + (f"  error {err:+.1%}" if err is not None else "")
            + f"  {r['bound_verdict']}"
        )
    print(f"wrote {_result.write(args.out, result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
