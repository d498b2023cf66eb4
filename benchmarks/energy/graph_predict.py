"""Offline, before a device call: what an energy window of CUDA-graph replays (e8graph) should read
for the workloads `run` now gives one (host-bound by the latency timings' rule: burst eager p50 >=
1.5 x burst graph p50), from what committed captures hold of their EAGER windows.

Two predictions per workload, neither fitted:
  emp    P_s x burst graph p50 + the eager window's dynamic energy per execution (its J per
         execution - P_s x its seconds per execution): the same kernels do the same work whatever
         paces them, so only the static term follows the pace (conv_resnet50_3x3's dynamic energy
         per call was 8.8-9.6 mJ in eight runs at window paces 1.0-2.0x; e7est). emp W = emp / graph p50
  model  the Core's estimate on the device time alone (tensorforge.energy.model: device_estimate_j, the
         queued model without its host term), recomputed from the capture (rescore.py's reading)
Beside them: K (graph_window.graph_calls: unrolled calls for ~2 ms a replay), the eager window's
figures (J per execution, W, its pace over the graph p50) and the estimate the capture compared.

  python benchmarks/energy/graph_predict.py CAPTURE [CAPTURE...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rescore import coefficients, rows  # noqa: E402  (the same reading of a capture)
from tf_cuda.graph_window import graph_calls  # noqa: E402
from tf_cuda.sustained import HOST_BOUND  # noqa: E402

from tensorforge.api import parse_json, read_text  # noqa: E402


def burst_p50(m: dict, mode: str) -> float | None:
    for t in [m, *(m.get("modes") or [])]:
        if (t.get("regime") or "burst") == "burst" and (t.get("mode") or "eager") == mode:
            return t["stats"]["p50"]
    return None


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    print(
        f"{'workload':34s} {'eag/gr':>6s} {'graph us':>8s} {'K':>4s} | {'eager mJ':>9s} {'W':>4s} {'pace':>5s}"
        f" {'est mJ':>8s} | {'emp mJ':>8s} {'emp W':>5s} {'model mJ':>8s} {'model W':>7s}"
    )
    for path in paths:
        doc = parse_json(read_text(path, "capture"), f"capture {path}")
        p_s = coefficients(doc).static_w
        print(f"# {path} (P_s {p_s:.1f} W)")
        estimates = {name: (r, stored) for name, _, r, stored, _ in rows(path)}
        for name, m in doc["measured"]["workloads"].items():
            e = m.get("energy") or {}
            eager, graph = burst_p50(m, "eager"), burst_p50(m, "graph")
            if not e.get("available") or not eager or not graph or eager < HOST_BOUND * graph:
                continue
            dyn = e["joules_per_execution"] - p_s * e["seconds_per_execution"]
            emp = p_s * graph + max(0.0, dyn)
            r, stored = estimates.get(name, (None, None))
            model = r.device_estimate_j if r is not None else None
            model_t = r.device_estimate_terms.time_s if r is not None and r.device_estimate_terms else None
            print(
                f"{name:34s} {eager / graph:6.2f} {graph * 1e6:8.1f} {graph_calls(graph):4d} |"
                f" {e['joules_per_execution'] * 1e3:9.4f} {e['mean_power_w']:4.0f}"
                f" {e['seconds_per_execution'] / graph:5.2f} {(stored or 0) * 1e3:8.4f} |"
                f" {emp * 1e3:8.4f} {emp / graph:5.0f} {(model or 0) * 1e3:8.4f}"
                f" {(model / model_t if model and model_t else 0):7.0f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
