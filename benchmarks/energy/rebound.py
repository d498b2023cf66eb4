"""Offline: the power-limited sustained bound of committed captures recomputed with the power the
probes saw the device draw (tensorforge.energy.model.bound_power_w), and why one energy per FLOP per
math mode cannot put every large GEMM within 5% (docs/energy.md, "The power-limited bound").

Reads only what a capture holds: the probe windows (calibrated.energy.points), the coefficients,
the sustained-probe calibrated bound (predicted.calibrated_sustained), the power-limited bound
the capture predicted, each workload's sustained p50 and its energy window. The power-limited
bound is dynamic floor energy / (P - P_s,low), so with P raised from the enforced limit to
max(limit, peak probe window power) it scales by (limit - P_s,low) / (P - P_s,low): exact
arithmetic on the capture's own figures, no refit.

Columns per large GEMM at the cap (issue 15's scope, as benchmarks/energy/score.py picks them):
  old, new     sustained p50 / sustained bound as the capture predicted it / with bound_power_w
               (the same where the capture already recorded peak_power_w)
  lim          the same with the enforced limit alone (the rule before peak_power_w)
  e_run        the workload's own dynamic energy per FLOP in its energy window:
               (J per execution - P_s,low x seconds per execution) / FLOP  (a diagnosis, never a
               model input: it uses the scored measurement)
  e_low        the floor's lower end for its math mode (what the bound uses)
  P_run        the window's mean power (counter)
  alt          sustained p50 / the bound a TIGHTER rule would give: FLOP x e_win / (P - P_s,low), e_win
               the lowest (P_window - P_s,low) / FLOP rate of the mode's GEMM probe windows (their
               energy per FLOP at their own operating point, DRAM ignored); shown to say why it
               is not used: below 1 means that rule would put the bound above the measurement
  cap          the same question asked more carefully (energy5m): each GEMM probe window's power
               from its power INTEGRAL (counter x (1 + counter_agreement): over 0.3 s the
               counter's edges are off by several %), less the fitted P_s and DRAM term (one
               consistent pair, so P_s's uncertainty cancels where the bound's power is near the
               window's), per FLOP: e_cap; the bound FLOP x min e_cap / (P - P_s) + DRAM. Below 1
               for the batched 32x1024^3 fp16 GEMM in every session (it does more FLOPs per joule
               at the cap than the fp16 8192 probe), above 1.1 for the large bf16 shapes: the
               shapes' own energy per FLOP at the cap spreads wider than the 5% band

  python benchmarks/energy/rebound.py CAPTURE [CAPTURE...]
"""

import sys

from tensorforge.api import parse_json, read_text  # gzip-aware: archived captures are .json.gz

LARGE_GEMM_FLOPS = 1e10


def _sustained_bounds(doc):
    rows = ((doc.get("predicted") or {}).get("calibrated_sustained") or {}).get("workloads") or []
    return {w["name"]: w.get("latency_s") for w in rows}


def main(paths):
    print(
        f"{'workload':34s} {'mode':5s} {'old':>6s} {'new':>6s} {'lim':>6s} {'e_run':>9s} {'e_low':>9s} {'run/low':>7s} {'P_run':>6s} {'alt':>6s} {'cap':>6s}"
    )
    for path in paths:
        doc = parse_json(read_text(path, "capture"), f"capture {path}")
        energy = (doc.get("calibrated") or {}).get("energy") or {}
        c = energy.get("coefficients") or {}
        points = energy.get("points") or []
        if not c or not points:
            print(f"{path}: no energy calibration")
            continue
        limit, ps_low = c["power_limit_w"], c["static_w_low"]
        peak = max(p["joules"] / p["seconds"] for p in points if p["seconds"] > 0)
        power = max(limit, peak)
        # what the capture's own bound used: the limit alone before peak_power_w was recorded
        used = max(limit, c["peak_power_w"]) if c.get("peak_power_w") else limit
        scale = (used - ps_low) / (power - ps_low)
        e_win: dict[str, float] = {}
        for p in points:
            modes_p = [m for m, f in (p.get("flops") or {}).items() if f]
            if len(modes_p) == 1 and p["seconds"] > 0 and not p.get("dram_bytes", 0) > 1e11 * p["seconds"] * 1e9:
                rate = p["flops"][modes_p[0]] / p["seconds"]
                if rate > 1e14:  # a compute-bound square GEMM
                    e = (p["joules"] / p["seconds"] - ps_low) / rate
                    e_win[modes_p[0]] = min(e, e_win.get(modes_p[0], e))
        e_cap: dict[str, float] = {}
        for p in points:
            modes_p = [m for m, f in (p.get("flops") or {}).items() if f]
            if len(modes_p) == 1 and p["seconds"] > 0 and p.get("dram_bytes", 0) / p["seconds"] < 1e12:
                rate = p["flops"][modes_p[0]] / p["seconds"]
                if rate > 1e14:
                    watts = p["joules"] * (1 + (p.get("counter_agreement") or 0.0)) / p["seconds"]
                    dyn = watts - c["static_w"] - c["joules_per_dram_byte"] * p["dram_bytes"] / p["seconds"]
                    e_cap[modes_p[0]] = min(dyn / rate, e_cap.get(modes_p[0], dyn / rate))
        print(
            f"# {path}: limit {limit:g} W, peak probe window {peak:.1f} W, P_s,low {ps_low:.1f} W, bound x {scale:.4f}"
        )
        windows = (doc.get("diagnostic") or {}).get("windows") or {}
        predicted = {
            w["name"]: w for w in ((doc.get("predicted") or {}).get("calibrated") or {}).get("workloads") or []
        }
        sustained = _sustained_bounds(doc)
        for name, m in doc["measured"]["workloads"].items():
            e = m.get("energy") or {}
            pe = (((doc.get("predicted") or {}).get("energy") or {}).get("workloads") or {}).get(name) or {}
            ops = (predicted.get(name) or {}).get("operators") or []
            flops = sum(op.get("flops") or 0 for op in ops)
            capped = dict((windows.get(name) or {}).get("clock_event_fractions") or []).get("SwPowerCap", 0) > 0.5
            p50s = [t["stats"]["p50"] for t in m.get("modes") or [] if t.get("regime") == "sustained"]
            plb = pe.get("power_limited_bound_s")
            dram = (pe.get("floor_terms") or {}).get("dram_bytes") or 0.0
            if not (name.startswith("gemm_") and flops >= LARGE_GEMM_FLOPS and capped and p50s and plb):
                continue
            p50 = min(p50s)
            cal = sustained.get(name)
            old = p50 / pe["sustained_bound_s"]
            new = p50 / max(b for b in (cal, plb * scale) if b is not None)
            lim = p50 / max(b for b in (cal, plb * (used - ps_low) / (limit - ps_low)) if b is not None)
            modes = {op.get("math_mode") for op in ops}
            mode = modes.pop() if len(modes) == 1 else "mixed"
            e_low = c["joules_per_flop_low"].get(mode)
            e_run = (
                (e["joules_per_execution"] - ps_low * e["seconds_per_execution"]) / flops
                if e.get("available")
                else None
            )
            print(
                f"{name:34s} {mode:5s} {old:6.3f} {new:6.3f} {lim:6.3f} {e_run or 0:9.3e} {e_low or 0:9.3e} "
                f"{(e_run / e_low if e_run and e_low else 0):7.3f} {e.get('mean_power_w') or 0:6.0f} "
                f"{(p50 / (flops * e_win[mode] / (power - ps_low)) if mode in e_win else 0):6.3f} "
                f"{(p50 / ((flops * e_cap[mode] + c['joules_per_dram_byte'] * dram) / (power - c['static_w'])) if mode in e_cap else 0):6.3f}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
