"""Graph mode and the sustained regime against triton, each harness in a fresh process.

Why: on the H200 (2026-11-30, benchmarks/results/h200-2026-11-30-measure3-do-bench.json) the
decode step's graph replay read 371 us in our harness first, then 407 us once more graphs had
been captured in the same process, and do_bench_cudagraph's read 408.6, 449 and 456 us over three
rounds: the per-call time grows with the process's history of captures (idle gaps between the
graph's kernels, 0.42 us against 0.1), in both harnesses alike (in one state they agreed within
0.5%). bench_vs_do_bench.py times both in one process, so whichever ran later carried more
history. Here every section runs in its own process (`bench_vs_do_bench.py --only ours|reference
--rounds 1`), alternating which comes first, so both start from the state a `tensorforge run`
measures from; the ratio is median(ours) / median(reference) over the rounds.

Usage: python benchmarks/bench_graph_isolated.py [-w SPEC ...] [--rounds 3] [--rest 1] [-o out.json]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).with_name("bench_vs_do_bench.py")


def section(spec: str, who: str, rest: float, timeout_s: float) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "row.json"
        proc = subprocess.run(
            [
                sys.executable,
                str(BENCH),
                "-w",
                spec,
                "--rounds",
                "1",
                "--only",
                who,
                "--rest",
                str(rest),
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if proc.returncode != 0 or not out.exists():
            return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
        return json.loads(out.read_text())["rows"][0]


def ratio(ours: list[float], ref: list[float]) -> float | None:
    return statistics.median(ours) / statistics.median(ref) if ours and ref and statistics.median(ref) > 0 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", "-w", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rest", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per section's process")
    parser.add_argument("--output", "-o")
    args = parser.parse_args()
    results = []
    for spec in args.workload:
        got = {"ours": [], "reference": []}
        for r in range(args.rounds):
            for who in ("ours", "reference") if r % 2 == 0 else ("reference", "ours"):
                got[who].append(section(spec, who, args.rest, args.timeout))
        ours_graph = [x for row in got["ours"] for x in row.get("sustained_graph_p50_s", [])]
        ref_graph = [x for row in got["reference"] for x in row.get("cudagraph_reference_s", [])]
        ours_eager = [x for row in got["ours"] for x in row.get("sustained_eager_p50_s", [])]
        ref_eager = [x for row in got["reference"] for x in row.get("do_bench_median_s", [])]
        row = {
            "workload": spec,
            "ours_graph_s": ours_graph,
            "reference_graph_s": ref_graph,
            "graph_ratio": ratio(ours_graph, ref_graph),
            "ours_eager_s": ours_eager,
            "do_bench_s": ref_eager,
            "sustained_ratio": ratio(ours_eager, ref_eager),
            "errors": [row["error"] for rows in got.values() for row in rows if "error" in row],
            "sections": got,
        }
        results.append(row)
        fmt = lambda xs: "/".join(f"{x * 1e6:.1f}" for x in xs)  # noqa: E731
        print(
            f"{spec}: graph ours {fmt(ours_graph)} us vs do_bench_cudagraph+flush {fmt(ref_graph)} us, ratio "
            + (f"{row['graph_ratio']:.4f}" if row["graph_ratio"] else "n/a")
            + f"; sustained eager ours {fmt(ours_eager)} us vs do_bench {fmt(ref_eager)} us, ratio "
            + (f"{row['sustained_ratio']:.4f}" if row["sustained_ratio"] else "n/a")
            + (f"; errors {row['errors']}" if row["errors"] else ""),
            flush=True,
        )
        if args.output:
            Path(args.output).write_text(
                json.dumps({"rounds": args.rounds, "rest_s": args.rest, "rows": results}, indent=2)
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
