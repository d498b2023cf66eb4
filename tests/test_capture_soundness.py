"""Soundness on real data: the calibrated lower bound is <= the fastest sample of every
workload in every committed capture (captures/*.json).

A lower bound must hold for every run, not only for the median, so this is checked with no
tolerance, twice: against the bound the capture recorded, and against the bound the current
Core computes from the capture's own CALIBRATED ceilings (for targets that do not depend on
the machine running the tests; host-cpu is read from /proc, so its captures are checked on
their recorded bound only). A model change that raises a bound above a real measurement
fails here.

Known exceptions are listed one by one in KNOWN_BELOW with the measured margin, as strict
expected failures: they are real findings, not noise to hide. All are large compute-bound
GEMMs on the H200 whose fastest sample beats the calibrated bound by 0.06-1.0%: the capture's
compute ceiling is 2n^3 / *p10* time of the best probe size, and single iterations run faster
than the probe's p10. A ceiling from the probe's fastest sample would be the sound choice; the
captures must be made again once calibration does that. When a capture is replaced and the
bound holds, the strict xfail turns into a failure, and the entry must go.

h200-estimate-eval's five are a different finding, 2.2-5.1% below: its ceilings were measured
right after the estimate's 30-s probe sweep had heated the device (bf16 760 TFLOP/s against 799
in the other sessions), so its calibrated bound is too high. Calibration now runs that sweep after
the burst ceiling probes and before the sustained ones (CalibrationProbe.order and .regime).

host-cpu-estimate-eval's four are a third: on the 2-core VM, oneDNN's fp32 convolutions ran up
to 1.9x the best fp32 matmul rate the probe measured (the 3x3 one is consistent with Winograd,
which does fewer multiplications than the FLOPs the model counts), and one decode attention beat
the copy bandwidth probe by 3% on a busy machine. A FLOP-counting bound needs a ceiling that
covers such algorithms (a convolution probe, or Winograd's multiply count) before it holds for
convolutions on CPUs.

The two-H200 captures (h200x2-*) no longer add any: the earlier ones listed their 4 KiB all-reduce
(a floor from the p10 of host-bound samples, 17-19% above the fastest sample). The captures made
on 2026-11-30 at 12:57 UTC take the curve from each swept size's fastest sample less an
allowance, at sizes none of the suite uses, with the device-side wait before the start line (a
sample is device time): every fastest sample lies 1.8-12.6% above its bound.

The final H200 captures (h200-final-*, h200-estimate-eval-final) add eight of a fourth kind: their
ceiling was already the matmul-ceiling probe's fastest sample (bf16 783, fp16 755 TFLOP/s), yet
other shapes run faster (the estimate sweep's 7168^3 bf16 point at 814 TFLOP/s by its p10; a
held-out 8192x4096x8192 fp16 GEMM at 779). Calibration now takes each mode's ceiling as the highest
rate any of its probes observed, the sweep's GEMM points included (tensorforge_ops/calibrate/
sweep_rates.py), and the sweep has a 7168^3 fp16 point. Recomputed offline from these captures' own
data (benchmarks/ceiling_check.py, the sweep's p10 as the older points hold no fastest sample) the
seven bf16 entries clear, by 1.8-3.5%; the fp16 one stays (-3.2%: no fp16 point of that sweep ran
faster than the square probe), which the new fp16 sweep point addresses in a new capture.
"""

import functools
from pathlib import Path

from committed import capture_stem, committed, load_json
import pytest

from tensorforge.ceilings_file import ceilings_from_data
from tensorforge.model import predict
from tensorforge.plugins import PluginHost
from tensorforge.suite import resolve_spec
from tensorforge_ops.capture.versions import upgrade
from tensorforge_ops.capture.compare import fastest_sample as _fastest
from tensorforge_ops.capture.convert import converter
from tensorforge_ops.capture.sections.measured import WorkloadMeasurement

ROOT = Path(__file__).resolve().parent.parent
# the committed captures, and the runs a device session left among the benchmark results
CAPTURES = committed(ROOT / "captures") + committed(ROOT / "benchmarks" / "results", "*-run")
MACHINE_DEPENDENT_TARGETS = {"host-cpu"}

# (capture, workload) -> fastest sample / recorded calibrated bound - 1, measured in that capture.
KNOWN_BELOW = {
    ("h200-default-run", "gemm_large_square"): -0.0006,
    ("h200-rerun-reused-calibration", "gemm_large_square"): -0.0011,
    ("h200-square-gemm-sweep", "gemm:m=4096,n=4096,k=4096,dtype=bf16"): -0.0050,
    ("h200-square-gemm-sweep", "gemm:m=6144,n=6144,k=6144,dtype=bf16"): -0.0078,
    ("h200-square-gemm-sweep", "gemm_large_square"): -0.0033,
    ("h200-square-gemm-sweep-no-cooldown", "gemm:m=16384,n=16384,k=16384,dtype=bf16"): -0.0023,
    ("h200-square-gemm-sweep-no-cooldown", "gemm:m=6144,n=6144,k=6144,dtype=bf16"): -0.0096,
    ("h200-square-gemm-sweep-no-cooldown", "gemm_large_square"): -0.0042,
    ("rtx3050-laptop-measured-on-h200", "gemm_large_square"): -0.0034,
    ("h200-estimate-eval", "gemm-large-4096-bf16"): -0.0443,
    ("h200-estimate-eval", "gemm-large-llama3-ffn-up"): -0.0513,
    ("h200-estimate-eval", "gemm-large-8192x4096x8192-fp16"): -0.0312,
    ("h200-estimate-eval", "gemm-large-10240"): -0.0220,
    ("h200-estimate-eval", "gemm-transposed-a-4096"): -0.0382,
    ("host-cpu-estimate-eval", "conv-1x1-c256-k128"): -0.2353,
    ("host-cpu-estimate-eval", "conv-3x3-c64"): -0.4800,
    ("host-cpu-estimate-eval", "conv-stem-7x7"): -0.3010,
    ("host-cpu-estimate-eval", "sdpa-decode-b8-2048"): -0.0328,
    # the final H200 session (2026-11-30): compute ceiling = matmul-ceiling's fastest sample (bf16
    # 783, fp16 755 TFLOP/s), below rates other shapes reach; see the docstring's last paragraph
    ("h200-final-run", "gemm_large_square"): -0.0051,
    ("h200-final-rerun-1", "gemm_large_square"): -0.0067,
    ("h200-final-rerun-2", "gemm_large_square"): -0.0070,
    ("h200-estimate-eval-final", "gemm-large-4096-bf16"): -0.0152,
    ("h200-estimate-eval-final", "gemm-large-llama3-ffn-up"): -0.0091,
    ("h200-estimate-eval-final", "gemm-large-8192x4096x8192-fp16"): -0.0317,
    ("h200-estimate-eval-final", "gemm-large-10240"): -0.0212,
    ("h200-estimate-eval-final", "gemm-transposed-a-4096"): -0.0148,
    # the closing session of 2026-11-30 (20:05 UTC): an fp32 (CUDA-core) GEMM's fastest sample at
    # the fp32 ceiling the probe's fastest sample gave (50.7 TFLOP/s), 0.006% faster: the ceiling
    # is one probe shape's best, and another shape can match it within timing resolution
    ("h200-2026-11-30-2005-estimate-eval", "gemm-large-fp32-2048"): -0.0001,
    # the same shape in the 2026-12-01 02:34 UTC session, 0.13% faster than the same 50.7 TFLOP/s
    # fp32 ceiling: the probe's best fp32 rate is not the device's best for every shape
    ("h200-2026-12-01-0234-estimate-eval", "gemm-large-fp32-2048"): -0.0013,
}


def fastest_sample(row: dict) -> float:
    """The fastest sample of a measured workload, as the document records it."""
    return _fastest(converter.structure(row, WorkloadMeasurement))


# Kept for the next few cases: the cases run capture by capture (parametrize keeps CASES' order),
# and reading one archived capture is most of a case's time (3,400 cases; the tests only read it).
@functools.lru_cache(maxsize=4)
def _load(path):
    """The capture in the current layout (a version-1 document is upgraded first, as readers do)."""
    return upgrade(load_json(path), str(path))


def measured_workloads():
    """(capture, workload name, its index in the calibrated prediction) for every workload
    that was measured and has a calibrated bound."""
    cases = []
    for path in CAPTURES:
        doc = _load(path)
        cal = doc["predicted"].get("calibrated")
        if not cal or not doc["measured"].get("available"):
            continue
        for i, w in enumerate(cal["workloads"]):
            m = doc["measured"]["workloads"].get(w["name"], {})
            if m.get("status") == "ok":
                cases.append((path, w["name"], i))
    return cases


def _param(path, name, i):
    known = KNOWN_BELOW.get((capture_stem(path), name))
    marks = (
        [
            pytest.mark.xfail(
                strict=True,
                reason=f"fastest sample {known * 100:+.2f}% vs the calibrated "
                "bound: a ceiling below a rate the device reaches (see module docstring)",
            )
        ]
        if known
        else []
    )
    return pytest.param(path, name, i, marks=marks, id=f"{capture_stem(path)}:{name}")


CASES = [_param(*c) for c in measured_workloads()]


def test_every_committed_capture_is_checked():
    assert {c.values[0] for c in CASES} == set(CAPTURES)
    assert len(CASES) >= 40
    listed = {(capture_stem(c.values[0]), c.values[1]) for c in CASES}
    assert set(KNOWN_BELOW) <= listed


@pytest.mark.parametrize("path, name, index", CASES)
def test_recorded_calibrated_bound_is_at_most_the_fastest_sample(path, name, index):
    doc = _load(path)
    bound = doc["predicted"]["calibrated"]["workloads"][index]["latency_s"]
    fastest = fastest_sample(doc["measured"]["workloads"][name])
    assert fastest >= bound, (
        f"{path.name}: {name}: fastest sample {fastest!r} s < calibrated bound {bound!r} s "
        f"({(fastest / bound - 1) * 100:+.3f}%)"
    )


@pytest.fixture(scope="module")
def host():
    return PluginHost()


@pytest.mark.usefixtures("clean_plugin_env")
@pytest.mark.parametrize("path, name, index", CASES)
def test_current_core_bound_from_the_captures_ceilings_is_at_most_the_fastest_sample(host, path, name, index):
    doc = _load(path)
    cal = doc["predicted"]["calibrated"]
    if cal["target"] in MACHINE_DEPENDENT_TARGETS:
        pytest.skip(f"target {cal['target']} is read from the machine running the tests")
    workload = resolve_spec(host, cal["workloads"][index]["spec"])
    recorded = [op["name"] for op in cal["workloads"][index]["operators"]]
    if [op.name for op in workload[1].operators(workload[0].params)] != recorded:
        # the spec means another workload today (a config file now supplies a field, e.g. the
        # vocabulary that adds an LM head): comparing bounds of different workloads proves nothing
        pytest.skip(f"{name}: its spec decomposes differently today than when it was measured")
    ceilings = ceilings_from_data(doc["calibrated"]["ceilings"], f"{path.name} CALIBRATED")
    pred = predict(
        [workload],
        host.target(cal["target"]),
        host.mappings(),
        operating_point=cal["operating_point"],
        ceilings=ceilings,
    )
    bound = pred.workloads[0].latency_s
    fastest = fastest_sample(doc["measured"]["workloads"][name])
    assert pred.bound == "calibrated" and pred.workloads[0].search == "exhaustive"
    assert fastest >= bound, (
        f"{path.name}: {name}: fastest sample {fastest!r} s < current calibrated bound "
        f"{bound!r} s ({(fastest / bound - 1) * 100:+.3f}%)"
    )


def test_known_exceptions_state_their_true_margin():
    """The margins quoted in KNOWN_BELOW are the captures' own numbers (to 0.01%)."""
    by_stem = {capture_stem(p): _load(p) for p in CAPTURES}
    for (stem, name), margin in KNOWN_BELOW.items():
        doc = by_stem[stem]
        bound = next(w for w in doc["predicted"]["calibrated"]["workloads"] if w["name"] == name)["latency_s"]
        assert fastest_sample(doc["measured"]["workloads"][name]) / bound - 1 == pytest.approx(margin, abs=1e-4)
