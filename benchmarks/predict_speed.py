"""Prediction speed: each installed target's default suite predicted with mapping exploration (the
bound and the estimate, as `tensorforge predict` does), in-process, on this CPU.

Per target: the suite's workloads, the mapping candidates the search evaluated, the best and median
wall time over --repeat cold runs (the estimate's GEMM geometry cache cleared before each, as in a
new process; interpreter start-up and plugin loading not included) and candidates per second. The
suite is the target's default one; a target without a rate for the Core default suite's math modes
(the host CPUs: no tf32) gets the CPU-sized suite of its measuring backend. The estimate's
evaluation suite (benchmarks/eval/h200-suite.toml, 66 workloads) on h200 is one more row.

    python benchmarks/predict_speed.py [--repeat 10] [--out benchmarks/results/predict_speed.json]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import _result

NAME = "predict_speed"
EVAL_SUITE = Path(__file__).resolve().parent / "eval" / "h200-suite.toml"


def suites(host):
    """(target, suite label, workloads) for every installed target, then the evaluation suite."""
    from tensorforge.api import TensorForgeError, resolve, run_prediction

    default = resolve(host, ())
    cpu_suite = None
    for name in host.names("targets"):
        try:
            run_prediction(host, name, workloads=default, max_candidates=1, estimate=False)
            yield name, "Core default suite", default
        except TensorForgeError:
            if cpu_suite is None:
                from tensorforge_measure.host import OpsHost

                cpu_suite = resolve(host, tuple(OpsHost().backend("torch-cpu").default_suite))
            yield name, "CPU-sized suite (torch-cpu backend)", cpu_suite
    yield "h200", "benchmarks/eval/h200-suite.toml", resolve(host, (), (str(EVAL_SUITE),))


def time_suite(host, target: str, workloads, repeat: int) -> dict:
    from tensorforge.api import run_prediction
    from tensorforge.estimate import gemm

    times, pred = [], None
    for _ in range(repeat):
        gemm.geometry.cache_clear()
        start = time.perf_counter()
        pred = run_prediction(host, target, workloads=workloads)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    return {
        "workloads": len(workloads),
        "candidates": pred.candidates,
        "search": getattr(pred, "search", "bounded"),
        "best_ms": round(min(times) * 1e3, 2),
        "median_ms": round(median * 1e3, 2),
        "candidates_per_s": round(pred.candidates / median),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="cold runs per suite (default 10)")
    _result.out_option(parser, NAME)
    args = parser.parse_args()
    from tensorforge.api import PluginHost

    host = PluginHost()
    rows = []
    for target, label, workloads in suites(host):
        row = {"target": target, "suite": label, **time_suite(host, target, workloads, args.repeat)}
        rows.append(row)
        print(
            f"{target:15s} {label:36s} {row['workloads']:3d} workloads {row['candidates']:7d} candidates "
            f"best {row['best_ms']:8.2f} ms median {row['median_ms']:8.2f} ms",
            flush=True,
        )
    slowest = max(rows, key=lambda r: r["median_ms"])
    doc = _result.build(
        NAME,
        _result.cpu_words(),
        rows,
        {
            "slowest_suite_median_ms": slowest["median_ms"],
            "slowest_suite": f"{slowest['target']}, {slowest['suite']}",
            "repeat": args.repeat,
        },
        {
            "best_ms": "MEASURED wall time of one whole-suite prediction, fastest of the cold runs",
            "median_ms": "MEASURED wall time of one whole-suite prediction, median of the cold runs",
            "candidates": "PREDICTED: mapping candidates the bounded exploration evaluated",
            "candidates_per_s": "DERIVED: candidates / median_ms",
            "slowest_suite_median_ms": "MEASURED: the largest median_ms of the rows",
        },
        columns=[
            ("target", "target"),
            ("suite", "suite"),
            ("workloads", "workloads"),
            ("candidates", "candidates"),
            ("search", "search"),
            ("best_ms", "best ms"),
            ("median_ms", "median ms"),
            ("candidates_per_s", "candidates/s"),
        ],
        notes=["in-process, one thread; bound and estimate, as `tensorforge predict`; no device needed"],
    )
    print(f"wrote {_result.write(args.out, doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
