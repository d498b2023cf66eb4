"""Offline, DIAGNOSTIC: what the energy counter's per-update lumps are, from the raw polls that
`TENSORFORGE_ENERGY_TRACE` wrote (one JSON line per energy window; docs/energy.md, "Sizing the
window").

Per window (probe windows and workload windows alike, in the order they ran): the counter's
updates as polled (each timed at the midpoint of the two polls that bracket it), the time between
updates (SD: how regular the update instants are, seen through the polls), and each update's
joules against the instantaneous power integrated over the same interval (SD of the ratio: the
per-update lump). Then, over all loaded windows, the ratio's SD when the power is integrated over
intervals shifted by L (-60..+60 ms): a minimum away from 0 would say the counter counts power
that much earlier or later than the instantaneous field reports it; a flat curve says the lumps
are in the counter's content, which no shift or edge timing removes.

  python benchmarks/energy/trace_lumps.py TRACE.jsonl[.gz]
"""

import gzip
import json
import statistics
import sys


def _lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _integral(pts, a, b):
    """Trapezoid of (t, W) over [a, b], ends interpolated; None where the samples do not cover it."""
    if not pts or pts[0][0] > a or pts[-1][0] < b or not b > a:
        return None

    def at(t):
        for (t0, p0), (t1, p1) in zip(pts, pts[1:]):
            if t0 <= t <= t1:
                return p0 if t1 == t0 else p0 + (p1 - p0) * (t - t0) / (t1 - t0)
        return pts[-1][1]

    path = [(a, at(a)), *[(t, p) for t, p in pts if a < t < b], (b, at(b))]
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(path, path[1:]))


def updates(window):
    polls = sorted(window["counter"])
    out = []
    for (t0, j0), (t1, j1) in zip(polls, polls[1:]):
        if j1 > j0:
            out.append(((t0 + t1) / 2, j1, (t1 - t0) / 2))
    return out


def main(path):
    windows = list(_lines(path))
    loaded = []
    print(
        f"{'#':>3s} {'W':>5s} {'upd':>4s} {'gap ms':>6s} {'gap SD':>6s} {'lump SD':>7s} {'agree':>6s}  per-update counter/integral"
    )
    for i, w in enumerate(windows):
        ups = updates(w)
        inst = sorted(w["instant"])
        rows = []
        for (ta, ja, _), (tb, jb, _) in zip(ups, ups[1:]):
            e = _integral(inst, ta, tb)
            if e:
                rows.append((ta, tb, jb - ja, e))
        if len(rows) < 3:
            continue
        gaps = [tb - ta for ta, tb, _, _ in rows]
        ratios = [j / e for _, _, j, e in rows]
        watts = sum(j for _, _, j, _ in rows) / sum(gaps)
        agree = w.get("counter_agreement")
        print(
            f"{i:3d} {watts:5.0f} {len(rows):4d} {statistics.median(gaps) * 1e3:6.1f} {statistics.stdev(gaps) * 1e3:6.1f} "
            f"{statistics.stdev(ratios) * 100:6.1f}% {(agree or 0) * 100:5.1f}%  "
            + " ".join(f"{r:.2f}" for r in ratios[:14])
        )
        if watts > 300:
            loaded.append((rows, inst))
    if not loaded:
        return
    print("\nshift L of the integral (ms) -> SD of counter/integral per update, windows above 300 W:")
    for shift_ms in range(-60, 61, 10):
        ratios = []
        for rows, inst in loaded:
            for ta, tb, j, _ in rows:
                e = _integral(inst, ta + shift_ms / 1e3, tb + shift_ms / 1e3)
                if e:
                    ratios.append(j / e)
        if len(ratios) > 2:
            print(f"  {shift_ms:+4d}: {statistics.stdev(ratios) * 100:5.2f}% over {len(ratios)} updates")


if __name__ == "__main__":
    main(sys.argv[1])
