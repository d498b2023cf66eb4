"""Offline, DIAGNOSTIC: what the counter-vs-integral disagreement of each traced energy window is
made of (issue 15, "counter and power integration agree within 2%"; docs/energy.md, "The e8int
work"), from the raw polls that TENSORFORGE_ENERGY_TRACE writes.

Per window, each candidate cause measured on its own:

* sampling: the instantaneous field's polls thinned to one every >= 20 ms (the worst gaps seen at
  the cap, where the step loop holds the interpreter lock) and integrated again, and the
  trapezoid against the exact integral of the field's staircase; the field itself is refreshed
  only every ~100 ms (`refresh`: its refresh period in the window, and `offset`: how far its
  refreshes lie before the counter's updates), so polls every 5 or 20 ms see the same readings;
* edges: the polled update instants against the grid edges, and both grid edges moved by 3 ms
  (the phase's standard error at the cap);
* lag: counter and field over the same interval, the field unshifted against the field shifted
  later by LAG (its lag behind the counter's updates: the joules an update publishes show in the
  field ~LAG later); on the window less its last update, where the trace has the field's polls
  for the shifted interval (a window traced before e8int stops polling at its end edge);
* what remains after the shift: the field's readings against the counter's, update by update
  (SD of their ratio), and the counter's own lumps (SD of its per-update power).

LAG is taken from the PROBE windows only (the first 13 lines of a `run --recalibrate` trace), of
the OTHER traces given (leave one out), never from the windows scored: where the per-update SD of
field / counter is smallest over the probes' loaded updates.

  python benchmarks/energy/integral_error.py TRACE.jsonl.gz [TRACE2 ...] [--lag=70]
  (--lag=MS: that lag for every trace instead, e.g. the built one on a trace written since e8int)
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tensorforge_measure.energy.window import integrate, update_instants  # noqa: E402

PROBES = 13  # a `run --recalibrate` trace: the energy probe's windows come first
LAGS = [x / 1000 for x in range(30, 111, 5)]
THIN_S = 0.020
EDGE_SHIFT_S = 0.003
LOADED_W = 300.0


def load(path: str) -> list[dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(x) for x in f if x.strip()]


def usable(w: dict) -> bool:
    return bool(w.get("ok") and w.get("joules") and len(w.get("ticks") or ()) >= 4)


def period_of(w: dict) -> float:
    return w.get("grid_period_s") or 0.09995  # the 23:44 trace predates the grid: its idle period


def grid_updates(w: dict) -> list[tuple[float, float]]:
    """(grid instant, counter J) of the window's updates, phase at the median offset."""
    p = period_of(w)
    ups = update_instants(w["counter"])
    t0 = ups[0][0]
    ks = [round((t - t0) / p) for t, _ in ups]
    phase = statistics.median(t - k * p for (t, _), k in zip(ups, ks))
    return [(phase + k * p, v) for (_, v), k in zip(ups, ks)]


def refreshes(instant: list) -> list[float]:
    pts = sorted(instant)
    return [(a[0] + b[0]) / 2 for a, b in zip(pts, pts[1:]) if b[1] != a[1]]


def circular_phase(ts: list[float], p: float) -> float:
    s = sum(math.sin(2 * math.pi * t / p) for t in ts)
    c = sum(math.cos(2 * math.pi * t / p) for t in ts)
    return (math.atan2(s, c) / (2 * math.pi) * p) % p


def staircase(instant: list, a: float, b: float) -> float | None:
    """The exact integral of the field as a staircase (each reading held until the next one is
    polled, the change at the midpoint of the two polls): what the trapezoid approximates."""
    pts = sorted(instant)
    if not pts or pts[0][0] > a or pts[-1][0] < b:
        return None
    steps = [pts[0]] + [((x[0] + y[0]) / 2, y[1]) for x, y in zip(pts, pts[1:]) if y[1] != x[1]]
    total = 0.0
    for (t, v), nxt in zip(steps, steps[1:] + [(pts[-1][0], 0.0)]):
        lo, hi = max(a, t), min(b, nxt[0])
        if hi > lo:
            total += (hi - lo) * v
    return total


def per_update_ratios(w: dict, lag: float) -> list[float]:
    g = grid_updates(w)
    p = period_of(w)
    inst = sorted(tuple(x) for x in w["instant"])
    out = []
    for (ta, ja), (tb, jb) in zip(g, g[1:]):
        if round((tb - ta) / p) != 1:
            continue
        e = integrate(inst, ta + lag, tb + lag)
        if e:
            out.append(e / (jb - ja) - 1)
    return out


def watts(w: dict) -> float:
    return w["joules"] / (w["end_s"] - w["start_s"])


def best_lag(windows: list[dict]) -> tuple[float, float]:
    ratios: dict[float, list[float]] = {lag: [] for lag in LAGS}
    for w in windows:
        if not usable(w) or watts(w) < LOADED_W:
            continue
        # the same updates for every lag: those whose shifted interval the polls cover for all
        per = [per_update_ratios(w, lag) for lag in LAGS]
        n = min(len(r) for r in per)
        for lag, r in zip(LAGS, per):
            ratios[lag].extend(r[:n])
    lag = min(LAGS, key=lambda x: statistics.pstdev(ratios[x]) if len(ratios[x]) > 2 else 9.0)
    return lag, statistics.pstdev(ratios[lag]) if len(ratios[lag]) > 1 else float("nan")


def pct(x: float | None) -> str:
    return f"{x * 100:+6.2f}%" if x is not None else "     - "


def rel(e: float | None, j: float) -> float | None:
    return e / j - 1 if e else None


def analyse(path: str, lag: float) -> dict:
    ws = load(path)
    print(f"\n## {path}  (LAG {lag * 1e3:.0f} ms)")
    print(
        "  i     W  upd polls gap50/max ms | as run   polled edg  grid+-3ms  | thin20ms  trapez-stair | "
        "refresh offset | short: unshifted  shifted | SD f/c@LAG counter-SD"
    )
    rows = []
    for i, w in enumerate(ws):
        if not usable(w):
            continue
        a, b, j = w["start_s"], w["end_s"], w["joules"]
        if not w.get("grid_period_s"):  # traced before e6grid (polled edges): put them on the grid
            a = min(grid_updates(w), key=lambda u: abs(u[0] - a))[0]
            b = min(grid_updates(w), key=lambda u: abs(u[0] - b))[0]
        inst = sorted(tuple(x) for x in w["instant"])
        inside = [t for t, _ in inst if a <= t <= b]
        gaps = [y - x for x, y in zip(inside, inside[1:])] or [0.0]
        as_run = rel(integrate(inst, a, b), j)
        start, end = w.get("polled_start_s") or w["start_s"], w.get("polled_end_s") or w["end_s"]
        polled = rel(integrate(inst, start, end), j)
        moved = [rel(integrate(inst, a + s, b + s), j) for s in (-EDGE_SHIFT_S, EDGE_SHIFT_S)]
        edge3 = max((abs(m - as_run) for m in moved if m is not None and as_run is not None), default=None)
        thin, last = [], -1.0
        for t, v in inst:
            if t - last >= THIN_S:
                thin.append((t, v))
                last = t
        if thin[-1] != inst[-1]:
            thin.append(inst[-1])
        thinned = rel(integrate(thin, a, b), j)
        stair = rel(staircase(inst, a, b), j)
        p = period_of(w)
        fr = [t for t in refreshes(inst) if a - p <= t <= b + p]
        slope = (
            statistics.median((y - x) / max(1, round((y - x) / p)) for x, y in zip(fr, fr[1:])) if len(fr) > 2 else None
        )
        g = grid_updates(w)
        offset = (circular_phase([t for t, _ in g], 0.1) - circular_phase(fr, 0.1)) % 0.1 if len(fr) > 1 else None
        # the window less its last update: the field has polls past its end for the shift
        # (the counter at the grid instant one period before the end: an update polled there;
        # a host-bound window's step log can miss one, so not its ticks)
        ticks = w["ticks"]
        b2 = b - p
        before = min(g, key=lambda u: abs(u[0] - b2))
        j2 = before[1] - ticks[0][1] if abs(before[0] - b2) < p / 4 else None
        unshifted = rel(integrate(inst, a, b2), j2) if j2 else None
        shifted = rel(integrate(inst, a + lag, b2 + lag), j2) if j2 else None
        # the whole window shifted by LAG, where the polls cover it (a trace written since e8int:
        # the polls go on past the end edge for the field's lag)
        full = rel(integrate(inst, a + lag, b + lag), j)
        ratios = per_update_ratios(w, lag)
        cw = [(jb - ja) / (tb - ta) for (ta, ja), (tb, jb) in zip(g, g[1:]) if round((tb - ta) / p) == 1]
        csd = statistics.pstdev(cw) / statistics.fmean(cw) if len(cw) > 1 else None
        row = dict(
            i=i,
            w=watts(w),
            updates=len(ticks) - 1,
            samples=len(inside),
            as_run=as_run,
            polled=polled,
            edge3=edge3,
            thin=None if thinned is None or as_run is None else thinned - as_run,
            stair=None if stair is None or as_run is None else as_run - stair,
            unshifted=unshifted,
            shifted=shifted,
            full=full,
            ratio_sd=statistics.pstdev(ratios) if len(ratios) > 1 else None,
            counter_sd=csd,
        )
        rows.append(row)
        print(
            f"{i:3d} {row['w']:5.0f} {len(ticks) - 1:4d} {len(inside):5d} {statistics.median(gaps) * 1e3:5.1f}/{max(gaps) * 1e3:4.1f}"
            f" | {pct(as_run)} {pct(polled)} {pct(edge3)}  | {pct(row['thin'])} {pct(row['stair'])}  |"
            f" {(slope or 0) * 1e3:6.1f} {(offset or 0) * 1e3:5.0f}  | {pct(unshifted)} {pct(shifted)} |"
            f" {pct(row['ratio_sd'])} {pct(csd)} | whole window shifted {pct(full)}"
        )

    def rms(key: str, only=lambda r: True) -> str:
        v = [r[key] for r in rows if r[key] is not None and only(r)]
        return f"{math.sqrt(statistics.fmean(x * x for x in v)) * 100:.2f}% (n {len(v)})" if v else "-"

    def within(key: str) -> str:
        v = [r[key] for r in rows if r[key] is not None]
        return f"{sum(abs(x) <= 0.02 for x in v)} of {len(v)}"

    loaded = lambda r: r["w"] >= LOADED_W  # noqa: E731
    print(
        f"  RMS over loaded windows: as run {rms('as_run', loaded)}; thinning to 20 ms changes it by "
        f"{rms('thin', loaded)}; trapezoid vs staircase {rms('stair', loaded)}; edges moved 3 ms "
        f"{rms('edge3', loaded)}; on the window less its last update: unshifted {rms('unshifted', loaded)}, "
        f"shifted {lag * 1e3:.0f} ms {rms('shifted', loaded)}; per-update SD field/counter at the lag "
        f"{rms('ratio_sd', loaded)}, the counter's own per-update SD {rms('counter_sd', loaded)}"
    )
    groups = [
        ("< 300 W", lambda r: r["w"] < 300),
        ("300-650 W", lambda r: 300 <= r["w"] < 650),
        (">= 650 W (the cap)", lambda r: r["w"] >= 650),
        ("3-5 updates", lambda r: r["updates"] <= 5),
        (">= 10 updates", lambda r: r["updates"] >= 10),
    ]
    for name, only in groups:
        if any(only(r) for r in rows):
            print(
                f"  {name:18s}: as run {rms('as_run', only)}; less the last update unshifted {rms('unshifted', only)}, "
                f"shifted {rms('shifted', only)}; SD f/c per update {rms('ratio_sd', only)}"
            )
    print(
        f"  within 2% (all windows, probes included): as run {within('as_run')}; polled edges {within('polled')}; "
        f"less the last update: unshifted {within('unshifted')}, shifted {within('shifted')}; "
        f"the whole window shifted (where polled past its end) {within('full')}"
    )
    return {"rows": rows}


def main(args: list[str]) -> None:
    fixed = [float(a.split("=", 1)[1]) / 1e3 for a in args if a.startswith("--lag=")]
    paths = [a for a in args if not a.startswith("--lag=")]
    probes = {p: load(p)[:PROBES] for p in paths}
    for p in paths:
        own_lag, own_sd = best_lag(probes[p])
        others = [w for q in paths if q != p for w in probes[q]]
        lag, sd = best_lag(others) if others else (own_lag, own_sd)
        if fixed:  # the lag as built (nvml_power.FIELD_LAG_S), e.g. on a trace written since e8int
            lag = fixed[0]
            print(
                f"\n# {p}: lag as given {lag * 1e3:.0f} ms; its own probes' {own_lag * 1e3:.0f} ms ({own_sd * 100:.2f}%)"
            )
            analyse(p, lag)
            continue
        print(
            f"\n# {p}: lag from the OTHER traces' probe windows {lag * 1e3:.0f} ms (per-update SD {sd * 100:.2f}%);"
            f" its own probes' {own_lag * 1e3:.0f} ms ({own_sd * 100:.2f}%)"
        )
        analyse(p, lag)


if __name__ == "__main__":
    main(sys.argv[1:])
