"""Calibration probe order: sustained probes last (they leave the device hot), and among the
others ascending `order`, so the estimate's long burst sweep (order 100) runs after the burst
ceiling probes and before the sustained ones; ties keep registration order. The estimate's
fitted coefficients are stored as the regime its sweep ran in."""

from types import SimpleNamespace

import attrs

from tensorforge_measure.api import CalibrationProbe, ProbeResult
from tensorforge_measure.calibrate import store as calibration
from tensorforge_measure.calibrate.estimate_fit import probe_regime
from tensorforge_measure.calibrate.estimate_probes import EstimateTermsProbe


class Probe(CalibrationProbe):
    def __init__(self, name, regime="burst", order=0, ran=None):
        self.name, self.regime, self.order, self.ran = name, regime, order, ran

    def run(self, session):
        self.ran.append(self.name)
        compute = {} if self.order else {"fp32": 1e12}
        return ProbeResult(
            name=self.name,
            method="test",
            compute=compute,
            regime=self.regime,
            dram_bytes_per_s=None if self.order else 1e11,
            details={"points": []} if self.order else {},
        )


def session():
    return SimpleNamespace(info=SimpleNamespace(fingerprint="fp", name="dev", details={}))


def test_sustained_last_and_the_estimate_sweep_after_the_burst_ceilings():
    ran: list[str] = []
    probes = [
        Probe("sweep", order=100, ran=ran),
        Probe("matmul-sustained", "sustained", ran=ran),
        Probe("matmul", ran=ran),
        Probe("copy", ran=ran),
    ]
    cal = calibration.run_probes(session(), probes)
    assert ran == ["matmul", "copy", "sweep", "matmul-sustained"]
    assert probe_regime(cal) == "burst"
    assert calibration.regimes(cal) == ["burst", "sustained"]


def test_the_shipped_estimate_probe_is_ordered_after_ceilings_in_its_backend_regime():
    assert EstimateTermsProbe("torch-cuda").order > 0 and EstimateTermsProbe("torch-cuda").regime == "burst"
    # a one-regime device's sweep is that regime's: no empty 'burst' ceilings appear beside it
    ran: list[str] = []
    cpu = [Probe("cpu-matmul", "single", ran=ran), Probe("cpu-sweep", "single", order=100, ran=ran)]
    cal = calibration.run_probes(session(), cpu)
    assert ran == ["cpu-matmul", "cpu-sweep"]
    assert calibration.regimes(cal) == ["single"]
    assert cal.ceilings.compute == {"fp32": 1e12 * (1 + calibration.COMPUTE_ALLOWANCE)}
    assert probe_regime(cal) == "single"
    assert EstimateTermsProbe("torch-cpu", regime="single").regime == "single"


class RateProbe(CalibrationProbe):
    def __init__(self, name, compute, order=0):
        self.name, self.compute, self.order, self.regime = name, compute, order, "burst"

    def run(self, session):
        return ProbeResult(name=self.name, method="test", compute=self.compute, dram_bytes_per_s=1e11)


def test_a_modes_ceiling_is_the_highest_rate_any_probe_observed_plus_the_allowance():
    """The estimate sweep runs after matmul-ceiling; a faster GEMM rate it saw raises the mode's
    ceiling, a slower one never lowers it (a bound on a lower ceiling is unsound); the ceiling lies
    COMPUTE_ALLOWANCE above that best rate, in every regime, and the calibration says so, while
    each probe's record keeps the rate it observed."""
    probes = [
        RateProbe("matmul-ceiling", {"bf16": 7.83e14, "fp16": 7.55e14}),
        RateProbe("estimate-terms", {"bf16": 8.14e14, "fp16": 7.25e14}, order=100),
    ]
    cal = calibration.run_probes(session(), probes)
    up = 1 + calibration.COMPUTE_ALLOWANCE
    assert 0 < calibration.COMPUTE_ALLOWANCE <= 0.03 and cal.compute_allowance == calibration.COMPUTE_ALLOWANCE
    assert cal.ceilings.compute == {"bf16": 8.14e14 * up, "fp16": 7.55e14 * up}
    assert cal.ceilings_by_regime["burst"].compute == cal.ceilings.compute
    assert cal.probes["estimate-terms"].compute["bf16"] == 8.14e14  # which probe set it, as observed


def test_sweep_gemm_rates_take_each_modes_fastest_gemm_point():
    from tensorforge_measure.calibrate.sweep_rates import sweep_gemm_rates

    points = [
        {
            "group": "gemm",
            "name": "a",
            "spec": "gemm:m=7168,n=7168,k=7168,dtype=bf16",
            "p10_s": 9.0e-4,
            "min_s": 8.8e-4,
        },
        {"group": "gemm", "name": "b", "spec": "gemm:m=3072,n=3072,k=3072,dtype=bf16", "p10_s": 7.7e-5},
        {"group": "gemm", "name": "c", "spec": "gemm:m=2048,n=2048,k=512,dtype=fp16,batch=8", "p10_s": 5.7e-5},
        {
            "group": "gemm-mode",
            "name": "d",
            "spec": "gemm:m=3072,n=3072,k=3072,dtype=fp32,math_mode=tf32",
            "p10_s": 1.8e-4,
        },
        {"group": "gemm", "name": "e", "spec": "gemm:m=64,n=64,k=64,dtype=fp32", "p10_s": 1e-9},  # mode unknown
        {"group": "conv-kxk", "name": "f", "spec": "conv2d:n=1,c=3,h=8,w=8,k=8,r=3,s=3", "p10_s": 1e-9},
    ]
    rates = sweep_gemm_rates(points)
    assert set(rates) == {"bf16", "fp16", "tf32"}
    assert rates["bf16"] == (2 * 7168**3 / 8.8e-4, "a", "min_s")
    assert rates["fp16"][0] == 2 * 2048 * 2048 * 512 * 8 / 5.7e-5
    assert rates["tf32"][1:] == ("d", "p10_s")


def test_the_estimate_fit_reads_the_sweep_not_a_stream_probes_points():
    """The read/write stream probes keep [bytes, rate] pairs under details['points'] and run
    before the estimate sweep: the fit must find the sweep's rows (on an H200 it read the stream's
    pairs and failed with "'list' object has no attribute 'get'", so every GPU run fell back to
    the shipped coefficients)."""
    from tensorforge_measure.calibrate.estimate_fit import probe_points

    class Stream(RateProbe):
        def run(self, session):
            return ProbeResult(name=self.name, method="t", dram_bytes_per_s=1e11, details={"points": [[1 << 20, 1e11]]})

    class Sweep(RateProbe):
        def run(self, session):
            rows = [{"group": "gemm", "name": "a", "spec": "gemm:m=64,n=64,k=64", "p50_s": 1e-5}]
            return ProbeResult(name=self.name, method="t", compute={"bf16": 1e14}, details={"points": rows})

    cal = calibration.run_probes(session(), [Stream("read-bandwidth", {}), Sweep("estimate-terms", {}, order=100)])
    assert list(cal.probes) == ["read-bandwidth", "estimate-terms"]
    assert probe_points(cal) == [{"group": "gemm", "name": "a", "spec": "gemm:m=64,n=64,k=64", "p50_s": 1e-5}]


def test_every_stream_op_of_the_plan_builds_and_runs_on_the_cpu():
    """Each streaming op a probe plan names (softmax and the extra row lengths included) has a
    builder that runs: a name the builder does not know would fail only on the device."""
    import torch

    from tensorforge.estimate.probe_plan import CUDA_PLAN, STREAM_OPS
    from tensorforge_measure.calibrate.estimate_probes import _stream_fn

    ops = {item.op for item in CUDA_PLAN if item.group == "stream"}
    assert "row_softmax" in ops and ops <= set(STREAM_OPS)
    for item in CUDA_PLAN:
        if item.group == "stream" and item.op in ops:
            ops.discard(item.op)
            small = attrs.evolve(item, elements=4 * item.width, dtype="fp32")
            _stream_fn(torch, small, "cpu")()
    assert not ops
