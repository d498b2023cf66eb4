"""Print a capture's comparison as a Markdown table (for the docs), from the capture alone.
Usage: python benchmarks/capture_table.py CAPTURE.json"""

import sys

from tensorforge_measure.capture.document import read_capture
from tensorforge_measure.capture.sections.calibrated import Calibrated


def fmt(seconds):
    if seconds is None:
        return "-"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.2f} µs"
    return f"{seconds * 1e9:.1f} ns"


def pct(value):
    return "-" if value is None else f"{value * 100:.1f}%"


def main(path: str) -> int:
    capture = read_capture(path)
    rows = capture.comparison.workloads if capture.comparison else {}
    print(
        "| workload | PREDICTED analytical | calibrated lower bound | MEASURED p50 | APE (calibrated) "
        "| APE (analytical) | predicted bottleneck | bound check |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for w in capture.predicted.analytical.workloads:
        r = rows[w.name]
        print(
            f"| {w.name} | {fmt(r.predicted_analytical_s)} | {fmt(r.predicted_calibrated_s)} | "
            f"{fmt(r.measured_p50_s)} | {pct(r.ape_calibrated)} | {pct(r.ape_analytical)} | "
            f"{w.bottleneck} | {r.bound_check.verdict} |"
        )
    if isinstance(capture.calibrated, Calibrated):
        c = capture.calibrated.ceilings
        print(
            "\nceilings: "
            + ", ".join(f"{m} {v / 1e12:.1f} TFLOP/s" for m, v in sorted(c.compute.items()))
            + f"; copy {(c.dram_bytes_per_s or 0) / 1e12:.2f} TB/s; launch floor {fmt(c.launch_floor_s)}"
        )
    violations = capture.comparison.bound_violations if capture.comparison else ()
    print(f"run took {capture.provenance.duration_s} s; bound violations: {', '.join(violations) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
