"""Offline, DIAGNOSTIC: the lag between the NVML energy counter and the instantaneous power field,
from a trace of energy windows (TENSORFORGE_ENERGY_TRACE; docs/energy.md, "The e6grid session").

Every update of the loaded windows (> 300 W) is put on the counter's grid (period 99.9 ms, the
phase fitted per window); each update's joules are compared with the instantaneous field
integrated over the same grid interval shifted by L (-100..+100 ms), over the same updates for
every L: the SD of the ratio is smallest where the two readings line up. Then the lag is taken
from the probe windows alone (the first 13 of a `run --recalibrate` trace) and the workload windows
(13-34: the default and held-out suites) are compared at it, their last update dropped so the
shifted interval stays inside the sampled range.

  python benchmarks/energy/field_lag.py TRACE.jsonl[.gz]
"""

import gzip
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tensorforge_measure.energy.window import integrate, update_instants

ws = [json.loads(l) for l in gzip.open(sys.argv[1], "rt") if l.strip()]
P = 0.0999
sets = []
for i, w in enumerate(ws):
    if not w.get("ok"):
        continue
    ups = update_instants(w["counter"])
    inst = sorted(tuple(p) for p in w["instant"])
    if len(ups) < 4:
        continue
    t0 = ups[0][0]
    ks = [round((t - t0) / P) for t, _ in ups]
    ph = statistics.fmean(t - k * P for (t, _), k in zip(ups, ks))
    g = [(ph + k * P, v) for (t, v), k in zip(ups, ks)]
    watts = (g[-1][1] - g[0][1]) / (g[-1][0] - g[0][0])
    if watts < 300:
        continue
    sets.append((i, g, inst, w))
Ls = [x / 1000 for x in range(-100, 101, 10)]
# per-update ratios, same updates for all L
res = {L: [] for L in Ls}
for _i, g, inst, _w in sets:
    for (ta, ja), (tb, jb) in zip(g, g[1:]):
        es = [integrate(inst, ta + L, tb + L) for L in Ls]
        if all(es):
            for L, e in zip(Ls, es):
                res[L].append((jb - ja) / e)
for L in Ls:
    print(
        f"{L * 1e3:+5.0f} ms: per-update SD {statistics.stdev(res[L]) * 100:5.2f}% mean {statistics.fmean(res[L]):.4f} n={len(res[L])}"
    )
# window-level agreement with shift, for workload windows 13-34 on grid edges
for L in (0.0, 0.02, 0.04, 0.05, 0.06, 0.08):
    ok = 0
    n = 0
    for _i, w in enumerate(ws[13:35], 13):
        ups = update_instants(w["counter"])
        inst = sorted(tuple(p) for p in w["instant"])
        a, b = w["start_s"], w["end_s"]
        e = integrate(inst, a + L, b + L)
        if e is None:
            continue
        n += 1
        ok += abs(e / w["joules"] - 1) <= 0.02
    print("shift", L, "workload windows within 2%:", ok, "of", n)
print("--- lag from the probe windows only (0-12)")
resp = {L: [] for L in Ls}
for i, g, inst, _w in sets:
    if i > 12:
        continue
    for (ta, ja), (tb, jb) in zip(g, g[1:]):
        es = [integrate(inst, ta + L, tb + L) for L in Ls]
        if all(es):
            for L, e in zip(Ls, es):
                resp[L].append((jb - ja) / e)
best = min(Ls, key=lambda L: statistics.stdev(resp[L]) if len(resp[L]) > 2 else 9)
for L in Ls:
    print(f"  {L * 1e3:+5.0f} ms: SD {statistics.stdev(resp[L]) * 100:5.2f}% n={len(resp[L])}")
print("best lag from probes", best)
for L in (0.0, best, 0.05, 0.055, 0.06):
    ok = n = 0
    rows = []
    for i, w in enumerate(ws[13:35], 13):
        ups = update_instants(w["counter"])
        inst = sorted(tuple(p) for p in w["instant"])
        t0 = ups[0][0]
        P2 = w.get("grid_period_s") or P
        ks = [round((t - t0) / P2) for t, _ in ups]
        ph = statistics.fmean(t - k * P2 for (t, _), k in zip(ups, ks))
        g = [(ph + k * P2, v) for (t, v), k in zip(ups, ks)]
        j0 = w["ticks"][0][1]
        j1 = w["ticks"][-1][1]
        gg = [x for x in g if j0 <= x[1] <= j1]
        # drop the last update so the shifted interval stays inside the sampled range
        a, va = gg[0]
        b, vb = gg[-2] if L > 0 else gg[-1]
        e = integrate(inst, a + L, b + L)
        if e is None:
            rows.append((i, None))
            continue
        n += 1
        r = e / (vb - va) - 1
        ok += abs(r) <= 0.02
        rows.append((i, round(r * 100, 2)))
    print(f"shift {L * 1e3:.0f} ms (last update dropped where shifted): within 2%: {ok} of {n}", rows)
