"""Which kernels each calibration probe item launches, from a PyTorch profiler trace (CUDA
activity): names (they tell the library's tile, e.g. nvjet_sm90_tst_256x128_...), count per
call and device time. Evidence for the estimate's tile menus and kernel counts, taken on probe
shapes only (never on an evaluation workload).

    python benchmarks/estimate/probe_kernels.py OUT.json [--calls 3] [--skip EARLIER.json]

--skip: items an earlier trace (this script's output) already holds are left out, so a short
session spends its time on the items added since.
"""

import argparse
import json
import sys
import time
from collections import defaultdict


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--deadline-s", type=float, default=60.0)
    ap.add_argument("--skip", help="leave out the items this earlier output already holds")
    args = ap.parse_args(argv)
    done = set()
    if args.skip:
        with open(args.skip, encoding="utf-8") as f:
            done = {name for name, row in json.load(f)["items"].items() if "error" not in row}

    import torch
    from torch.profiler import ProfilerActivity, profile

    from tensorforge.estimate.probe_plan import CUDA_PLAN, STREAM_OPS
    from tensorforge.host.plugin_host import PluginHost
    from tensorforge.workloads.suite import resolve_spec
    from tensorforge_measure.calibrate.estimate_probes import _chain_fn, _stream_fn
    from tensorforge_measure.host import OpsHost
    from tensorforge_measure.measure.precision import math_mode

    core, ops = PluginHost(), OpsHost()
    device = torch.device("cuda", 0)
    start = time.perf_counter()
    results = {}
    for item in CUDA_PLAN:
        if time.perf_counter() - start > args.deadline_s:
            results[item.name] = {"error": "deadline"}
            continue
        if item.group == "graph" or item.name in done:
            continue
        try:
            mode = "bf16"
            with torch.inference_mode():
                if item.spec:
                    workload, kind = resolve_spec(core, item.spec)
                    mode = getattr(workload.params, "math_mode", None) or "fp32"
                    with math_mode(mode):
                        fn = ops.builder(kind.name, "torch-cuda").build(workload.params, device)
                else:
                    fn = (_chain_fn if item.op == "add_chain" else _stream_fn)(torch, item, device)
                with math_mode(mode):
                    for _ in range(3):
                        fn()
                    torch.cuda.synchronize()
                    with profile(activities=[ProfilerActivity.CUDA]) as prof:
                        for _ in range(args.calls):
                            fn()
                        torch.cuda.synchronize()
            kernels = defaultdict(lambda: [0, 0.0])
            for e in prof.events():
                if getattr(e, "device_type", None) is not None and "CUDA" in str(e.device_type):
                    k = kernels[e.name]
                    k[0] += 1
                    k[1] += float(getattr(e, "device_time", 0.0) or getattr(e, "cuda_time", 0.0) or 0.0)
            results[item.name] = {
                "kernels": {
                    name: {"per_call": c / args.calls, "us_per_call": t / args.calls}
                    for name, (c, t) in sorted(kernels.items())
                },
                "kernels_per_call": sum(c for c, _ in kernels.values()) / args.calls,
            }
            del fn
        except Exception as exc:  # one item's failure is recorded, the rest go on
            results[item.name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        torch.cuda.empty_cache()
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(
            {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "items": results},
            f,
            indent=1,
            sort_keys=True,
        )
    print(f"profiled {len(results)} items in {time.perf_counter() - start:.1f} s -> {args.out}")
    del STREAM_OPS


if __name__ == "__main__":
    sys.exit(main())
