"""Offline, DIAGNOSTIC: the counter-vs-integral agreement of each traced energy window with its
edges put on the counter's own regular update grid instead of the polled update instants
(docs/energy.md, "Sizing the window": what the 23:44 session's trace showed).

Under load the polled instants of the counter's updates jitter by 6-13 ms (SD of the intervals;
0.2 ms at idle), so an edge timed at its poll can be off by ~10 ms: ~2% of a 0.5 s window. The
updates themselves come every 100.0 ms (idle windows: 99.9-100.1 ms, SD <= 0.2 ms). Here every
update inside the window votes for the grid's phase (mean of t_k - k x PERIOD_S); the edges are
the grid's instants of the start and end updates, so the window is a whole number of periods,
and the instantaneous power is integrated over it. Not used by `run` yet: found after the
session, on that session's trace.

  python benchmarks/energy/grid_edges.py TRACE.jsonl[.gz] [FIRST [LAST]]   (window indices)
"""

import gzip
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from trace_lumps import _integral, updates  # noqa: E402

PERIOD_S = 0.1000  # the H200's counter (idle windows of the trace)


def main(path, first=0, last=10**9):
    opener = gzip.open if path.endswith(".gz") else open
    rows = []
    with opener(path, "rt", encoding="utf-8") as f:
        windows = [json.loads(x) for x in f if x.strip()]
    for i, w in enumerate(windows):
        if not first <= i <= last or not w.get("ok") or not w.get("ticks") or w.get("counter_agreement") is None:
            continue
        ups, inst = updates(w), sorted(w["instant"])
        j0, j1 = w["ticks"][0][1], w["ticks"][-1][1]
        at = {j: t for t, j, _ in ups}
        if j0 not in at or j1 not in at:
            continue
        inside = [t for t, j, _ in ups if at[j0] - 1e-9 <= t <= at[j1] + 1e-9]
        ks = [round((t - at[j0]) / PERIOD_S) for t in inside]
        phase = statistics.fmean(t - k * PERIOD_S for t, k in zip(inside, ks))
        n = round((at[j1] - at[j0]) / PERIOD_S)
        e = _integral(inst, phase, phase + n * PERIOD_S)
        if e is None:
            continue
        grid = e / (j1 - j0) - 1
        rows.append((w["counter_agreement"], grid))
        print(
            f"{i:3d} {(j1 - j0) / (n * PERIOD_S):5.0f} W {n:3d} updates  polled edges {w['counter_agreement'] * 100:5.1f}%"
            f"  grid edges {grid * 100:5.1f}%"
        )
    polled = sum(abs(a) <= 0.02 for a, _ in rows)
    grid = sum(abs(g) <= 0.02 for _, g in rows)
    print(f"within 2%: polled edges {polled} of {len(rows)}, grid edges {grid} of {len(rows)}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]))
