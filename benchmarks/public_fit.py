"""Fit the shipped estimate coefficients of the GPU families the project has no device of, from
the public measurements public_import.py imported (role 'fit' rows only: NeuSight's training
GPUs and half of LLMCompass's A100 rows), with the very code that predicts, and write them into
tensorforge/estimate/shipped.json with their provenance in one line.

    python benchmarks/public_fit.py            # fit and print the per-stage report
    python benchmarks/public_fit.py --write    # and write shipped.json

Per family, from the GPU that stands for it (FAMILIES), starting from the calibrated sm90
coefficients for everything the rows cannot say (the CUDA-graph fixed costs, convolution and
attention terms; the basis says so):
  stage host   the fixed cost of one eager call on the source's host (kernel.host_per_kernel_s)
               with the GEMM terms below, Nelder-Mead on the mean squared log error
  stage gemm   fp32 (SIMT) main-loop efficiency, operand feed, tile overhead, streaming efficiency
  stage stream per access pattern, the DRAM efficiency of the vector rows (softmax and
               LayerNorm: 'norm'; add, gelu: 'elementwise'), where the kinds are installed
  stage tc     sm80 only: the tensor-core (bf16/fp16/tf32) main-loop rate from LLMCompass's fit half
Nothing of the evaluation GPUs (H100, L4) or of any 'eval' row is read here.

sm90 keeps its H200 calibration, but its fp32 (SIMT) main-loop rate and operand feed are
refitted from the H200's own fp32 GEMMs timed eager-warm (benchmarks/h200_fp32.py, a grid of
shapes fixed there) with the SIMT menu (menus.SIMT_MODES): the calibration fitted them when fp32
GEMMs were modelled on the tensor-core menu, from three probes.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

import attrs
import numpy as np
import public_rows

from tensorforge.estimate.coefficients import EstimateCoefficients, coefficients_to_data
from tensorforge.estimate.fit import Fitter, _loss, _nelder_mead, _search
from tensorforge.estimate.shipped import DATA as SHIPPED, shipped

# family -> (the GPU whose rows fit it, the tensor-core modes it has)
FAMILIES = {
    "nvidia-sm80": ("NVIDIA A100-PCIE-40GB", ("tf32", "bf16", "fp16")),
    "nvidia-sm70": ("Tesla V100-PCIE-32GB", ("fp16",)),
    "nvidia-sm75": ("Tesla T4", ("fp16",)),
}
GEMM_POINTS = 900  # per family: every second imported fit row of its GPU (a loss evaluation ~0.3 s)
STREAM_POINTS = 600  # per family: every imported vector fit row
PATTERNS = {"softmax": "softmax_rows", "norm": "norm", "elementwise": "elementwise", "activation": "elementwise"}


def _evolve(c: EstimateCoefficients, section: str, **changes) -> EstimateCoefficients:
    return attrs.evolve(c, **{section: attrs.evolve(getattr(c, section), **changes)})


def _with_mode(c: EstimateCoefficients, modes, value: float) -> EstimateCoefficients:
    table = dict(c.gemm.mainloop_efficiency)
    for m in modes:
        table[m] = value
    return _evolve(c, "gemm", mainloop_efficiency=table)


def base_for(family: str) -> EstimateCoefficients:
    """The sm90 coefficients as the starting point, made datasheet-relative (the fit's rates are
    fractions of the target file's datasheet ceilings, so peak and DRAM fractions are 1) and with
    no warm savings (not measured on this family)."""
    c = shipped()["nvidia-sm90"]
    return attrs.evolve(c, family=family, peak_fraction={}, dram_fraction=1.0, warm_saving_s={}, warm_saving_share={})


def fit_nd(f: Fitter, points, params, make, iterations=200) -> dict[str, float]:
    """Nelder-Mead on the logs of params ((name, start, lo, hi), clamped to [lo, hi]); make(c,
    values) gives the coefficients for a list of values."""
    measured = [p.measured_s for p in points]

    def values(x):
        return [min(hi, max(lo, math.exp(v))) for v, (_, _, lo, hi) in zip(x, params)]

    def loss(x):
        return _loss(f.times(points, make(f.c, values(x))), measured)

    start = np.array([math.log(min(hi, max(lo, v0))) for _, v0, lo, hi in params])
    x = _nelder_mead(loss, start, np.full(len(params), 0.5), iterations=iterations)
    x = _nelder_mead(loss, x, np.full(len(params), 0.15), iterations=iterations)
    f.c = make(f.c, values(x))
    return {name: v for (name, _, _, _), v in zip(params, values(x))}


def _apes(f: Fitter, points) -> list[float]:
    return [abs(t - p.measured_s) / p.measured_s for t, p in zip(f.times(points, f.c), points)]


def fit_family(core, family: str, report: dict[str, Any]) -> EstimateCoefficients:
    gpu, tc_modes = FAMILIES[family]
    rows = [r for r in public_rows.rows("neusight") if r["role"] == "fit" and r["gpu"] == gpu]
    gemm_rows = public_rows.every_nth(
        [r for r in rows if public_rows.op_class(r) == "gemm"], GEMM_POINTS, key=lambda r: float(r["latency_s"])
    )
    target, bound, kept, points = public_rows.points(core, gemm_rows, gpu)
    f = Fitter(base_for(family), target, bound.ceilings)
    t0 = time.time()
    params = [
        ("gemm.mainloop_efficiency[fp32]", 0.8, 0.1, 1.0),
        ("gemm.simt_feed_bytes_per_clock", 32.0, 2.0, 400.0),
        ("gemm.tile_overhead_s", 1e-6, 1e-9, 5e-5),
        ("gemm.stream_efficiency", 0.7, 0.1, 1.5),
        ("kernel.host_per_kernel_s", 2e-5, 1e-6, 2e-4),
        ("stream.resident_efficiency", 2.0, 1.0, 10.0),
    ]

    def make(c, v):
        c = _with_mode(c, ("fp32",), v[0])
        c = _evolve(c, "gemm", simt_feed_bytes_per_clock=v[1], tile_overhead_s=v[2], stream_efficiency=v[3])
        c = _evolve(c, "stream", resident_efficiency=v[5])
        return _evolve(c, "kernel", host_per_kernel_s=v[4], harness_s=0.0)

    fitted = fit_nd(f, points, params, make)
    apes = _apes(f, points)
    report[family] = {
        "gpu": gpu,
        "gemm": {
            "points": len(points),
            "fitted": fitted,
            "median_ape": float(np.median(apes)),
            "p90_ape": float(np.percentile(apes, 90)),
            "seconds": round(time.time() - t0, 1),
        },
    }
    fit_streams(core, f, rows, gpu, report[family])
    if family == "nvidia-sm80":
        fit_tensor_cores(core, f, report[family])
    return f.c


def _operand_bytes(p) -> float:
    return float(sum(op.compulsory_bytes / max(1, op.count) for op in p.prediction.operators))


def fit_streams(core, f: Fitter, rows, gpu: str, out: dict[str, Any]) -> None:
    """Per access pattern, the DRAM efficiency from the rows whose bytes are at least twice the
    L2 (they stream from DRAM even without a flush), then the cache-resident rate
    (stream.resident_efficiency) from the rows that fit in half of it: fitted on the small rows
    alone, the pattern rates took the L2's speed (above 1) and the large rows came out fast. Rows
    shorter than a few host dispatches are left out of both: their time is the host's."""
    vec = [r for r in rows if public_rows.op_class(r) != "gemm"]
    if not vec:
        out["stream"] = {"points": 0, "status": "no vector rows imported"}
        return
    chosen = public_rows.every_nth(vec, STREAM_POINTS, key=lambda r: float(r["latency_s"]))
    _, _, kept, points = public_rows.points(core, chosen, gpu)
    if not points:
        out["stream"] = {"points": 0, "status": "the vector workload kinds are not installed"}
        return
    cache = f.device(f.c).cache_bytes
    done: dict[str, Any] = {}
    effs = dict(f.c.stream.bandwidth_efficiency)
    by: dict[str, list] = {}
    floor = 8 * f.c.kernel.host_per_kernel_s  # shorter rows say more about the host than the DRAM
    for p in points:
        if _operand_bytes(p) >= 2 * cache and p.measured_s >= floor:
            by.setdefault(PATTERNS.get(p.group, "elementwise"), []).append(p)
    for pattern, pts in sorted(by.items()):
        measured = [p.measured_s for p in pts]

        def make(x, pattern=pattern):
            table = dict(f.c.stream.bandwidth_efficiency)
            table[pattern] = x
            return attrs.evolve(f.c, stream=attrs.evolve(f.c.stream, bandwidth_efficiency=table))

        best = _search(lambda x: _loss(f.times(pts, make(x)), measured), 0.1, 1.2)
        effs[pattern] = best
        f.c = make(best)
        done[pattern] = {"points": len(pts), "efficiency": best, "median_ape": float(np.median(_apes(f, pts)))}
    small = [p for p in points if _operand_bytes(p) <= 0.5 * cache and p.measured_s > 3 * f.c.kernel.host_per_kernel_s]
    if len(small) >= 8:
        measured = [p.measured_s for p in small]

        def res(x):
            return attrs.evolve(f.c, stream=attrs.evolve(f.c.stream, resident_efficiency=x))

        best = _search(lambda x: _loss(f.times(small, res(x)), measured), 1.0, 10.0)
        f.c = res(best)
        done["resident"] = {"points": len(small), "efficiency": best, "median_ape": float(np.median(_apes(f, small)))}
    out["stream"] = done


def refit_streams(core, family: str, report: dict[str, Any]) -> EstimateCoefficients:
    """Only stage stream, on the family's shipped coefficients (the GEMM stages' fit kept)."""
    gpu = FAMILIES[family][0]
    rows = [r for r in public_rows.rows("neusight") if r["role"] == "fit" and r["gpu"] == gpu]
    shipped_c = shipped()[family]
    target = core.target(public_rows.target_path(gpu))
    _, b0, _, _ = public_rows.points(core, rows[:1], gpu)  # the target's ceilings
    f = Fitter(shipped_c, target, b0.ceilings)
    report[family] = dict(shipped_c.fit)
    fit_streams(core, f, rows, gpu, report[family])
    return f.c


def fit_tensor_cores(core, f: Fitter, out: dict[str, Any]) -> None:
    """LLMCompass's fit half (bf16 on an A100 SXM4 80GB) fixes the tensor-core main-loop rate;
    fp16 and tf32 take the same fraction of their own ceilings (one tensor-core path)."""
    rows = [r for r in public_rows.rows("llmcompass") if r["role"] == "fit"]
    gpu = rows[0]["gpu"]
    target, bound, kept, points = public_rows.points(core, rows, gpu)
    sub = Fitter(f.c, target, bound.ceilings)
    measured = [p.measured_s for p in points]
    best = _search(
        lambda x: _loss(sub.times(points, _with_mode(sub.c, ("bf16", "fp16", "tf32"), x)), measured), 0.3, 1.0
    )
    f.c = _with_mode(f.c, ("bf16", "fp16", "tf32"), best)
    sub.c = f.c
    apes = _apes(sub, points)
    out["tensor_cores"] = {
        "points": len(points),
        "gpu": gpu,
        "fitted": {"gemm.mainloop_efficiency[bf16,fp16,tf32]": best},
        "median_ape": float(np.median(apes)),
    }


# the 4-byte-aligned rate (gemm.partial_aligned_efficiency) was fitted on the tails study set's
# 8 such GEMMs, measured on an H200 (benchmarks/eval/h200-tails.toml), and is kept by this refit
SM90_BASIS = (
    "calibrated on an H200 on 2026-12-01 (driver 580.159.04, torch 2.11.0+cu130, 92 probes as CUDA graphs), "
    "fp32 SIMT rate: benchmarks/h200_fp32.py, 4-byte-aligned GEMM rate: benchmarks/eval/h200-tails.toml"
)
H200_FP32 = public_rows.ROOT / "benchmarks" / "results" / "h200_fp32.json"


def refit_sm90_fp32(core, report: dict[str, Any]) -> EstimateCoefficients:
    """sm90's fp32 (SIMT) main-loop rate and operand feed from the H200's own fp32 GEMMs, timed
    eager-warm (benchmarks/h200_fp32.py), on the datasheet ceilings a target file of the family
    has (the H200's calibration made them achievable: peak_fraction stays); every other sm90
    coefficient is the calibration's."""
    doc = json.loads(H200_FP32.read_text(encoding="utf-8"))
    rows = [{"spec": r["spec"], "latency_s": r["eager_warm_s"], "protocol": "eager-warm"} for r in doc["rows"]]
    target, bound, _, points = public_rows.points(core, rows, "h200")
    f = Fitter(shipped()["nvidia-sm90"], target, bound.ceilings)
    before = _apes(f, points)
    params = [
        ("gemm.mainloop_efficiency[fp32]", min(1.0, f.c.gemm.mainloop_efficiency["fp32"]), 0.3, 1.0),
        ("gemm.simt_feed_bytes_per_clock", f.c.gemm.feed_bytes_per_clock, 2.0, 400.0),
    ]

    def make(c, v):
        return _evolve(_with_mode(c, ("fp32",), v[0]), "gemm", simt_feed_bytes_per_clock=v[1])

    fitted = fit_nd(f, points, params, make)
    after = _apes(f, points)
    report["nvidia-sm90"] = {
        "gpu": f"NVIDIA H200 ({doc['device']}, {H200_FP32.name} of {doc['date']})",
        "fp32": {
            "points": len(points),
            "fitted": fitted,
            "median_ape_before": float(np.median(before)),
            "median_ape": float(np.median(after)),
            "p90_ape": float(np.percentile(after, 90)),
        },
    }
    return f.c


def basis(family: str, report: dict[str, Any]) -> str:
    gpu = FAMILIES[family][0]
    n = report[family]["gemm"]["points"] + sum(
        v.get("points", 0) for v in (report[family].get("stream") or {}).values() if isinstance(v, dict)
    )
    words = f"fitted to {n} public measurements of the {public_rows.SHORT[gpu]} (NeuSight@6945927, eager-warm)"
    if "tensor_cores" in report[family]:
        words += ", tensor cores to 10 of an A100-SXM4 (LLMCompass@2e015fd)"
    return words + "; graph, conv and attention terms of the H200 (sm90)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the fitted families into shipped.json")
    ap.add_argument(
        "--stage",
        choices=["all", "stream"],
        default="all",
        help="stream: refit only the vector-operator stage, from the family's shipped coefficients",
    )
    ap.add_argument(
        "--family", action="append", choices=sorted([*FAMILIES, "nvidia-sm90"]), help="only these (default: all)"
    )
    a = ap.parse_args(argv)
    core = public_rows.host()
    report: dict[str, Any] = {}
    fitted = {}
    for family in a.family or sorted([*FAMILIES, "nvidia-sm90"]):
        if family == "nvidia-sm90":
            fitted[family] = attrs.evolve(refit_sm90_fp32(core, report), basis=SM90_BASIS, fit=report[family])
            print(json.dumps({family: report[family]}, indent=1, default=float))
            continue
        if a.stage == "stream":
            c = refit_streams(core, family, report)
        else:
            c = fit_family(core, family, report)
        fitted[family] = attrs.evolve(c, basis_kind="carried-over", basis=basis(family, report), fit=report[family])
        print(json.dumps({family: report[family]}, indent=1, default=float))
    if a.write:
        table = json.loads(SHIPPED.read_text(encoding="utf-8"))
        for family, c in fitted.items():
            table[family] = coefficients_to_data(c)
        SHIPPED.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {', '.join(sorted(fitted))} into {SHIPPED.relative_to(public_rows.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
