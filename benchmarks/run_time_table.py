"""Where a `tensorforge run`'s wall time went, from its progress log (stderr): the probes' times
(the "calibrated:" line), the gaps between the logged phases, and per workload step (the "took"
lines: prepare, rest, capture, burst eager, burst graph, trace, burst telemetry, steady, sustained
windows, sustained telemetry, energy), summed over the workloads. The figure in
docs/measurement.md ("Run time") comes from it.
Usage: python benchmarks/run_time_table.py RUN.log
"""

import re
import sys
from collections import defaultdict

STAMP = re.compile(r"^\[\s*([0-9.]+)s\] (.*)$")
TOOK = re.compile(r"^\[\s*[0-9.]+s\]\s+took ([0-9.]+) s: (.*)$")


def parse(lines):
    stamps, probes, steps, workloads = [], {}, defaultdict(float), []
    for line in lines:
        line = line.rstrip("\n")
        stamp = STAMP.match(line)
        if not stamp:
            continue
        at, text = float(stamp.group(1)), stamp.group(2)
        stamps.append((at, text))
        took = TOOK.match(line)
        if took:
            workloads.append(float(took.group(1)))
            for part in took.group(2).split(", "):
                name, _, value = part.rpartition(" ")
                steps[name] += float(value)
        elif text.startswith("calibrated: "):
            for part in text[len("calibrated: ") :].split(", "):
                name, value, _ = part.rsplit(" ", 2)
                probes[name] = float(value)
    return stamps, probes, dict(steps), workloads


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.splitlines()[-1], file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1], encoding="utf-8") as handle:
            stamps, probes, steps, workloads = parse(handle)
    except OSError as exc:
        print(f"run_time_table: cannot read {sys.argv[1]}: {exc.strerror}", file=sys.stderr)
        return 2
    if not stamps:
        print(f"run_time_table: {sys.argv[1]} holds no run progress lines", file=sys.stderr)
        return 2
    first_measure = next((t for t, text in stamps if text.startswith("measuring ")), None)
    device = next((t for t, text in stamps if text.startswith("device: ")), None)
    last = stamps[-1][0]
    print(f"{'part':34s} {'seconds':>8s}")
    if device is not None:
        print(f"{'start-up, prediction, device open':34s} {device:8.1f}")
    for name, took in probes.items():
        print(f"{'probe ' + name:34s} {took:8.1f}")
    if probes and first_measure is not None:
        calibrated = next(t for t, text in stamps if text.startswith("calibrated: "))
        print(f"{'after the probes, before workload 1':34s} {first_measure - calibrated:8.1f}")
    if first_measure is not None:
        print(f"{'workloads (' + str(len(workloads)) + ')':34s} {last - first_measure:8.1f}")
        for name, took in sorted(steps.items(), key=lambda kv: -kv[1]):
            print(f"{'  ' + name:34s} {took:8.1f}")
        print(f"{'  (outside the logged steps)':34s} {last - first_measure - sum(steps.values()):8.1f}")
    print(f"{'last progress line':34s} {last:8.1f}")
    if "estimate-terms" in probes:
        print(f"{'all but estimate-terms':34s} {last - probes['estimate-terms']:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
