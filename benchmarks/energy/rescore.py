"""Offline: every committed capture's energy ESTIMATE recomputed with the Core's current model
(tensorforge.energy.model.workload_energy), from what the capture holds, and each estimate's error split
into a TIME part and a POWER part.

Why: a capture records the estimate of the code that ran, but the estimate is pure arithmetic on
the capture's PREDICTED workloads (calibrated and sustained, with their estimates) and its
calibration record (the energy probe windows' coefficients, the sustained ceilings), so a change
of the model can be scored on every earlier session without a device. Nothing here is fitted:
the coefficients are the captures' own probe figures, and the scored measurement (MEASURED J per
execution, its window's seconds per execution) only enters the error columns.

Columns per workload:
  err       estimate / measured J per execution - 1 (issue 15: within 10%)
  time      the estimate's time / the window's seconds per execution - 1 (the time part)
  power     (estimate J / its time) / the window's mean power - 1 (the power part);
            (1 + err) = (1 + time) x (1 + power)
  stored    the error of the estimate the capture recorded (the code that ran)
  CAP       the estimate ran at the power cap
  GRAPH     the window replayed a CUDA graph (e8graph): scored against the estimate on the device time
            alone (device_estimate_terms), no host term
  HOST x    the estimate's time is the host's launches (framework calls x the eager-mix probe's host time
            per kernel); x = the window's seconds per execution / kernels over that probe figure
            (1.0: the probe tracked the window's host pace; e7est)

  --vector-flop-j J   a STAND-IN energy per vector-unit FLOP where a calibration has none (before
                      e7est's depthwise window): a sensitivity check, never a result or a coefficient

  python benchmarks/energy/rescore.py [--vector-flop-j J] CAPTURE [CAPTURE...]   (a run and its
                                                               held-out capture may be given together)
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from tensorforge.api import parse_json, read_text  # gzip-aware: archived captures are .json.gz
from tensorforge.energy.model import EnergyCoefficients, host_calls, window_time, workload_energy

FIELDS = (
    "static_w",
    "static_w_low",
    "idle_w",
    "joules_per_dram_byte",
    "joules_per_dram_byte_low",
    "power_limit_w",
    "capped_power_w",
    "busy_w",
    "peak_power_w",
    "busy_below_cap_w",
    "host_s_per_kernel",
    "joules_per_vector_flop",
)


def _ns(value):
    """A capture's JSON as attribute access: what the Core's energy model reads of a prediction."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _ns(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_ns(v) for v in value]
    return value


STAND_IN: dict[str, float] = {}  # --vector-flop-j: joules_per_vector_flop where the record has none


def coefficients(doc) -> EnergyCoefficients:
    c = dict(doc["calibrated"]["energy"]["coefficients"])
    if c.get("joules_per_vector_flop") is None and "vector" in STAND_IN:
        c["joules_per_vector_flop"] = STAND_IN["vector"]
    sustained = ((doc["calibrated"].get("ceilings_by_regime") or {}).get("sustained") or {}).get("compute") or {}
    return EnergyCoefficients(
        **{k: c.get(k) for k in FIELDS},
        joules_per_flop=dict(c["joules_per_flop"]),
        joules_per_flop_low=dict(c["joules_per_flop_low"]),
        capped_rate_flop_s=dict(c.get("capped_rate_flop_s") or {}),
        sustained_rate_flop_s={m: float(r) for m, r in sustained.items() if r},
    )


def rows(path):
    doc = parse_json(read_text(path, "capture"), f"capture {path}")
    if not ((doc.get("calibrated") or {}).get("energy") or {}).get("coefficients"):
        print(f"{path}: no energy calibration")
        return
    c = coefficients(doc)
    cache = doc["predicted"]["energy"]["cache_bytes"]
    calibrated = {w["name"]: w for w in doc["predicted"]["calibrated"]["workloads"]}
    sustained = {w["name"]: w for w in (doc["predicted"].get("calibrated_sustained") or {}).get("workloads") or []}
    stored = doc["predicted"]["energy"]["workloads"]
    for name, m in doc["measured"]["workloads"].items():
        e = m.get("energy") or {}
        if not e.get("available") or name not in calibrated or calibrated[name].get("estimate") is None:
            continue
        w = _ns(calibrated[name])
        sw = _ns(sustained[name]) if name in sustained else None
        s_dev = window_time(sw.estimate) if sw is not None and getattr(sw, "estimate", None) else None
        r = workload_energy(w, c, cache, w.estimate.eager_s, window_time(w.estimate), s_dev, sw)
        kept = stored.get(name) or {}
        # the estimate the capture compared: a graph window's is the device-time one (e8graph)
        was = kept.get("device_estimate_j") if e.get("execution") == "graph" else None
        yield name, e, r, was if was is not None else kept.get("estimate_j"), host_pace(w, c, e, r)


def host_pace(w, c: EnergyCoefficients, e, r) -> float | None:
    """The window's host time per kernel over the probe's, where the estimate's time is the host's
    launches (queued_time took framework calls x host_s_per_kernel); None elsewhere."""
    kernels = host_calls(getattr(w, "estimate", None))
    if not c.host_s_per_kernel or not kernels or r.power_limited:
        return None
    if r.estimate_terms.time_s <= float(window_time(w.estimate) or 0.0) * (1 + 1e-9):
        return None
    return e["seconds_per_execution"] / kernels / c.host_s_per_kernel


def main(paths: list[str]) -> int:
    if paths[:1] == ["--vector-flop-j"]:
        try:
            STAND_IN["vector"] = float(paths[1])
        except (IndexError, ValueError):
            print("--vector-flop-j needs a number of joules per FLOP", file=sys.stderr)
            return 2
        paths = paths[2:]
        print(f"# STAND-IN joules_per_vector_flop {STAND_IN['vector']:g} where a calibration has none (sensitivity)")
    if not paths:
        print("usage: python benchmarks/energy/rescore.py [--vector-flop-j J] CAPTURE [CAPTURE...]", file=sys.stderr)
        return 2
    n = ok = ok_stored = 0
    print(f"{'workload':34s} {'err':>7s} {'time':>7s} {'power':>7s} {'stored':>7s}")
    for path in paths:
        print(f"# {path}")
        for name, e, r, stored, pace in rows(path):
            # a window of CUDA-graph replays (e8graph) is scored against the estimate on the device time
            graph = e.get("execution") == "graph" and r.device_estimate_terms is not None
            measured, t = e["joules_per_execution"], r.device_estimate_terms if graph else r.estimate_terms
            err = t.total_j / measured - 1
            time = t.time_s / e["seconds_per_execution"] - 1
            power = (t.total_j / t.time_s) / e["mean_power_w"] - 1
            was = stored / measured - 1 if stored else None
            n, ok = n + 1, ok + (abs(err) <= 0.10)
            ok_stored += was is not None and abs(was) <= 0.10
            was_text = f"{was * 100:+6.1f}%" if was is not None else "      -"
            print(
                f"{name:34s} {err * 100:+6.1f}% {time * 100:+6.1f}% {power * 100:+6.1f}% {was_text}"
                f"{'  CAP' if r.power_limited else ''}"
                f"{'  GRAPH' if graph else f'  HOST {pace:.2f}' if pace is not None else ''}"
            )
    print(f"\nestimate within 10% of the counter: {ok} of {n} (as the captures recorded it: {ok_stored})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
