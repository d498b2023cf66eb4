"""Offline: every capped workload's sustained p50 over the sustained bound as a capture recorded
it and as the e6grid rule gives it (tensorforge_measure/run/energy_prediction.sustained_bound:
the burst calibrated bound for calls shorter than the sustained matmul probe's call at its best
size, where the L2 flush before every call leaves a short call a lower duty cycle, and so a
higher clock under the cap, than the probe had). Reads only what the capture holds: the
calibration's probe details, the calibrated burst and sustained predictions, the energy record's
power-limited bound, each workload's sustained timings. Also each workload's sustained p50 over
its burst p50 (how much the cap slowed it).

  python benchmarks/energy/sustained_rule.py CAPTURE [CAPTURE...]
"""

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tensorforge.api import parse_json, read_text  # noqa: E402
from tensorforge_measure.run.energy_prediction import probe_call_s, sustained_bound  # noqa: E402


def _ns(w):
    ops = tuple(SimpleNamespace(math_mode=o["math_mode"], flops=o["flops"]) for o in w.get("operators") or ())
    return SimpleNamespace(latency_s=w["latency_s"], operators=ops, compulsory_bytes=w.get("compulsory_bytes"))


def main(paths):
    for path in paths:
        doc = parse_json(read_text(path, "capture"), f"capture {path}")
        cal = doc["calibrated"]
        probes = {
            k: SimpleNamespace(details=v.get("details") or {}, compute=v.get("compute") or {})
            for k, v in cal["probes"].items()
        }
        calls = probe_call_s(SimpleNamespace(probes=probes))
        pred = doc["predicted"]
        burst = {w["name"]: w for w in pred["calibrated"]["workloads"]}
        sus = {w["name"]: w for w in (pred.get("calibrated_sustained") or {}).get("workloads") or []}
        energy = (pred.get("energy") or {}).get("workloads") or {}
        windows = (doc.get("diagnostic") or {}).get("windows") or {}
        print(
            f"# {path}: probe call at best size " + ", ".join(f"{m} {s * 1e6:.0f} us" for m, s in sorted(calls.items()))
        )
        for name, m in doc["measured"]["workloads"].items():
            capped = dict((windows.get(name) or {}).get("clock_event_fractions") or []).get("SwPowerCap", 0) > 0.5
            p50s = [t["stats"]["p50"] for t in m.get("modes") or [] if t.get("regime") == "sustained"]
            bursts = [t["stats"]["p50"] for t in m.get("modes") or [] if t.get("regime") == "burst"] + (
                [m["stats"]["p50"]] if m.get("regime") == "burst" else []
            )
            e = energy.get(name) or {}
            if not capped or not p50s or name not in burst or not e.get("sustained_bound_s"):
                continue
            p50 = min(p50s)
            new, label = sustained_bound(
                _ns(burst[name]), _ns(sus[name]) if name in sus else None, e.get("power_limited_bound_s"), calls
            )
            print(
                f"  {name:34s} p50 {p50 * 1e6:8.1f} us  sus/burst {p50 / min(bursts):.3f}  recorded {p50 / e['sustained_bound_s']:.3f}"
                f"  e6grid rule {p50 / new:.3f} ({label}){'  BOUND ABOVE THE MEASUREMENT' if p50 < new else ''}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
