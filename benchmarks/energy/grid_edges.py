"""Offline, DIAGNOSTIC: the counter-vs-integral agreement of each traced energy window with its
edges at the polled update instants and on the counter's own update grid, the latter by the code
`run` uses (tensorforge_measure/energy/window.py: measure_period, grid_edges; docs/energy.md, "Edges
on the grid, built").

A trace written before e6grid (TENSORFORGE_ENERGY_TRACE) has windows with polled edges: the
period is measured here on one idle window's polls (IDLE, by index; the trace's first idle
window right after a load can be irregular) and the grid put on every window. A trace written
since has the grid edges already (edges_from, grid_period_s) and the polled ones beside them
(polled_start_s, polled_end_s): both are integrated here.

  python benchmarks/energy/grid_edges.py TRACE.jsonl[.gz] [IDLE]   (IDLE: index, default 1)
"""

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tensorforge_measure.energy.window import CounterTick, CounterWindow, grid_edges, integrate, measure_period  # noqa: E402


def _window(w):
    ticks = tuple(CounterTick(t, j, e) for t, j, e in w["ticks"])
    return CounterWindow(
        ok=True,
        reason=None,
        joules=w["joules"],
        executions=int(w["executions"]),
        start_s=w.get("polled_start_s") or w["start_s"],
        end_s=w.get("polled_end_s") or w["end_s"],
        ticks=ticks,
        chunks=0,
        progress=tuple((t, e) for t, _, e in w["ticks"]),
    )


def main(path, idle=1):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        windows = [json.loads(x) for x in f if x.strip()]
    measured = measure_period(windows[idle]["counter"]) if idle < len(windows) else None
    print(f"# period: as recorded where a window has one, else from window {idle}'s polls: {measured}")
    rows = []
    for i, w in enumerate(windows):
        if not w.get("ok") or not w.get("ticks") or not w.get("joules"):
            continue
        polls = [tuple(p) for p in w["counter"]]
        inst = sorted(tuple(p) for p in w["instant"])
        win = _window(w)
        period = w.get("grid_period_s") or (measured.period_s if measured else None)
        g = grid_edges(win, polls, period)
        polled = integrate(inst, win.start_s, win.end_s)
        grid = integrate(inst, g.start_s, g.end_s) if g.grid_period_s else None
        a = polled / w["joules"] - 1 if polled else None
        b = grid / w["joules"] - 1 if grid else None
        rows.append((a, b))
        pct = lambda x: f"{x * 100:6.2f}%" if x is not None else "     -"  # noqa: E731
        print(
            f"{i:3d} {w['joules'] / (g.seconds or 1):5.0f} W {len(w['ticks']) - 1:3d} updates"
            f"  polled edges {pct(a)}  grid edges {pct(b)}"
            + (f"  phase SE {g.edge_resolution_s * 1e3:.1f} ms" if g.grid_period_s and g.edge_resolution_s else "")
        )
    n = len(rows)
    print(
        f"within 2%: polled edges {sum(a is not None and abs(a) <= 0.02 for a, _ in rows)} of {n}, "
        f"grid edges {sum(b is not None and abs(b) <= 0.02 for _, b in rows)} of {n} "
        f"(on the grid: {sum(b is not None for _, b in rows)})"
    )


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
