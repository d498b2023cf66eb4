"""The estimate beside the bound: never below it (property-based, over shapes, targets and
coefficients), terms that add up, the library tile menus and alignment rules it maps onto, and
the basis it says it stands on."""

import math

import attrs
import pytest
from estimate_points import generated_points
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorforge.bound.model import predict
from tensorforge.estimate.basis import coefficients_for
from tensorforge.estimate.results import DEVICE_TERMS, TERMS
from tensorforge.estimate.shipped import shipped
from tensorforge.hardware.target import Ceilings
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve_spec

TARGETS = ("h200", "rtx3050-laptop")


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def _predict(host, target, specs, ceilings=None, estimate=True):
    chosen = [resolve_spec(host, s) for s in specs]
    return predict(chosen, host.target(target), host.mappings(), None, ceilings, estimate=estimate)


def _check(w):
    e = w.estimate
    assert e is not None
    assert e.bound_s == w.latency_s
    assert e.device_s >= e.bound_s and e.eager_s >= e.device_s
    assert all(v >= 0 for v in e.terms.values())
    device_terms = sum(v for k, v in e.terms.items() if k in DEVICE_TERMS)
    assert math.isclose(e.bound_s + device_terms, e.device_s, rel_tol=1e-9, abs_tol=1e-15)
    assert math.isclose(e.device_s + e.terms["host_overhead"], e.eager_s, rel_tol=1e-9, abs_tol=1e-15)
    for op, bound_op in zip(e.operators, w.operators):
        assert op.estimate_s >= bound_op.latency_s * (1 - 1e-12)


dims = st.integers(min_value=1, max_value=20000)
fractions = st.floats(min_value=0.05, max_value=1.5)


def _coefficients(draw_fraction, base):
    """Random but valid coefficients: every efficiency and fixed cost varied at once."""
    f = draw_fraction
    return attrs.evolve(
        base,
        kernel=attrs.evolve(
            base.kernel,
            launch_s=f() * 5e-6,
            harness_s=f() * 5e-6,
            host_per_kernel_s=f() * 3e-5,
            host_slack_s=f() * 1e-4,
        ),
        gemm=attrs.evolve(
            base.gemm,
            mainloop_efficiency={m: f() for m in base.gemm.mainloop_efficiency},
            feed_bytes_per_clock=f() * 300,
            tile_overhead_s=f() * 3e-6,
            stream_efficiency=f(),
            unaligned_efficiency=f(),
        ),
        conv=attrs.evolve(
            base.conv,
            kxk_efficiency=f(),
            pointwise_efficiency=f(),
            fp32_efficiency=f(),
            unaligned_efficiency=f(),
            depthwise_bandwidth_efficiency=f(),
            depthwise_compute_efficiency=f(),
            depthwise_fixed_s=f() * 6e-6,
            # the tiled, overlapping tap term (0 < tile: on; a tile of 0 is the older term)
            kxk_tap_channels=f() * 150,
            kxk_tap_tile=16384.0 * round(f()),
            kxk_tap_overlap=1.0 + 3 * f(),
            fp32_tap_channels=f() * 100,
        ),
        attention=attrs.evolve(
            base.attention, prefill_efficiency=f(), causal_efficiency=f(), decode_bandwidth_efficiency=f()
        ),
        stream=attrs.evolve(base.stream, bandwidth_efficiency={k: f() for k in base.stream.bandwidth_efficiency}),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    m=dims,
    n=dims,
    k=dims,
    batch=st.integers(1, 8),
    dtype=st.sampled_from(["bf16", "fp16", "fp32"]),
    ta=st.booleans(),
    target=st.sampled_from(TARGETS),
    data=st.data(),
)
def test_gemm_estimate_never_below_the_bound(host, m, n, k, batch, dtype, ta, target, data):
    coeffs = _coefficients(lambda: data.draw(fractions), shipped()["nvidia-sm90"])
    spec = f"gemm:m={m},n={n},k={k},batch={batch},dtype={dtype},transpose_a={'true' if ta else 'false'}"
    (w,) = _predict(host, target, [spec], estimate=coeffs).workloads
    _check(w)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(1, 32),
    c=st.integers(1, 512),
    hw=st.integers(7, 128),
    k=st.integers(1, 512),
    r=st.sampled_from([1, 3, 5, 7]),
    stride=st.sampled_from([1, 2]),
    depthwise=st.booleans(),
    dtype=st.sampled_from(["bf16", "fp32"]),
    target=st.sampled_from(TARGETS),
    data=st.data(),
)
def test_conv_estimate_never_below_the_bound(host, n, c, hw, k, r, stride, depthwise, dtype, target, data):
    coeffs = _coefficients(lambda: data.draw(fractions), shipped()["nvidia-sm90"])
    k, groups = (c, c) if depthwise else (k, 1)
    spec = (
        f"conv2d:n={n},c={c},h={hw},w={hw},k={k},r={r},s={r},stride={stride},padding={r // 2},"
        f"groups={groups},dtype={dtype}"
    )
    (w,) = _predict(host, target, [spec], estimate=coeffs).workloads
    _check(w)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(1, 32),
    kv_heads=st.sampled_from([1, 2, 4, 8]),
    group=st.sampled_from([1, 2, 4]),
    q=st.integers(1, 4096),
    kv=st.integers(1, 8192),
    d=st.sampled_from([64, 128, 256]),
    causal=st.booleans(),
    target=st.sampled_from(TARGETS),
    data=st.data(),
)
def test_attention_estimate_never_below_the_bound(host, batch, kv_heads, group, q, kv, d, causal, target, data):
    coeffs = _coefficients(lambda: data.draw(fractions), shipped()["nvidia-sm90"])
    q_len, kv_len = (1, kv) if q < 64 else (q, q)
    spec = (
        f"sdpa:batch={batch},heads={kv_heads * group},kv_heads={kv_heads},q_len={q_len},"
        f"kv_len={kv_len},head_dim={d},causal={'true' if causal else 'false'}"
    )
    (w,) = _predict(host, target, [spec], estimate=coeffs).workloads
    _check(w)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    phase=st.sampled_from(["prefill", "decode"]),
    layers=st.integers(1, 4),
    batch=st.integers(1, 16),
    seq=st.integers(1, 1024),
    mlp=st.sampled_from(["gated", "gelu"]),
    target=st.sampled_from(TARGETS),
    data=st.data(),
)
def test_transformer_estimate_never_below_the_bound(host, phase, layers, batch, seq, mlp, target, data):
    coeffs = _coefficients(lambda: data.draw(fractions), shipped()["nvidia-sm90"])
    shape = f"seq={seq},phase=prefill" if phase == "prefill" else f"seq=1,phase=decode,context={seq}"
    spec = f"transformer:hidden=512,layers={layers},heads=8,kv_heads=2,batch={batch},mlp={mlp},{shape}"
    (w,) = _predict(host, target, [spec], estimate=coeffs).workloads
    _check(w)


def test_every_default_workload_of_every_target_has_both_numbers(host):
    for target in TARGETS:
        pred = _predict(host, target, host.default_suite())
        assert pred.estimate_basis and pred.estimate_basis_kind
        for w in pred.workloads:
            _check(w)


def test_calibrated_ceilings_give_an_estimate_above_the_calibrated_bound(host):
    ceilings = Ceilings(
        origin="calibrated",
        compute={"bf16": 7.9e14, "fp16": 7.6e14, "tf32": 4.0e14, "fp32": 5.1e13},
        dram_bytes_per_s=4.2e12,
    )
    for w in _predict(host, "h200", host.default_suite(), ceilings).workloads:
        _check(w)


def test_an_unaligned_gemm_runs_on_the_fallback_menu_and_pays_for_it(host):
    aligned, odd = _predict(host, "h200", ["gemm:m=4096,n=4096,k=4096", "gemm:m=4097,n=4097,k=4097"]).workloads
    assert aligned.estimate.terms["alignment_padding"] == 0
    assert odd.estimate.terms["alignment_padding"] > 0
    assert odd.estimate.operators[0].mapping.startswith("nvidia-sm75")  # no TMA: older kernels
    assert aligned.estimate.operators[0].mapping.startswith("nvidia-sm90")
    assert any("16 bytes" in note for note in odd.estimate.operators[0].notes)
    # a transposed operand changes which dimension must be aligned
    (t,) = _predict(host, "h200", ["gemm:m=4097,n=4096,k=4096,transpose_a=true"]).workloads
    assert t.estimate.terms["alignment_padding"] > 0


def test_the_fit_recovers_coefficients_it_generated(host):
    """Probe times generated by the model with known coefficients are fitted back to them (the
    stages and the searches find the truth when the data holds it)."""
    from tensorforge.estimate.fit import fit_coefficients

    ceilings = Ceilings(
        origin="calibrated",
        compute={"bf16": 7.9e14, "fp16": 7.6e14, "tf32": 4.0e14, "fp32": 5.1e13},
        dram_bytes_per_s=4.2e12,
    )
    base = shipped()["nvidia-sm90"]
    truth = attrs.evolve(
        base,
        kernel=attrs.evolve(base.kernel, launch_s=2.5e-6, harness_s=1.5e-6),
        conv=attrs.evolve(base.conv, pointwise_efficiency=0.6),
        attention=attrs.evolve(base.attention, decode_bandwidth_efficiency=0.5),
    )
    bound, points = generated_points(host, ("conv-pointwise", "attn-decode"), ceilings, truth, regime="eager")
    chains = [{"name": f"c{n}", "group": "launch", "kernels": n, "p50_s": 1.5e-6 + n * 2.5e-6} for n in (1, 2, 4)]
    fitted, report = fit_coefficients(base, host.target("h200"), bound.ceilings, chains, points, "test")
    assert fitted.basis_kind == "calibrated" and fitted.basis == "test"
    assert math.isclose(fitted.kernel.launch_s, 2.5e-6, rel_tol=1e-6)
    assert math.isclose(fitted.conv.pointwise_efficiency, 0.6, rel_tol=1e-3)
    assert math.isclose(fitted.attention.decode_bandwidth_efficiency, 0.5, rel_tol=2e-2)
    assert report["summary"]["median_ape"] < 1e-3
    assert report["stages"]["gemm"]["status"].startswith("not probed")


def test_a_host_bound_launch_chain_does_not_set_the_launch_cost():
    """The final H200 calibration of 2026-11-30 ran eager chains of 1, 2, 4, 8 tiny adds in 3.6,
    5.9, 18.8, 25.3 us: the chain of 4 waited for the host. The launch cost comes from the chains
    that lie on the line of the shortest two (2.3 us a kernel), not 5.3 us through all three."""
    from tensorforge.estimate.fit import fit_launch

    harness, launch = fit_launch([(1, 3.584e-6), (2, 5.92e-6), (4, 18.752e-6), (8, 25.344e-6)])
    assert math.isclose(launch, 2.336e-6, rel_tol=1e-3)
    assert math.isclose(harness, 1.248e-6, rel_tol=1e-2)
    # device-bound chains all count (the earlier calibration: 4.0, 6.5, 10.7 us; 8 host-bound)
    harness, launch = fit_launch([(1, 4.0e-6), (2, 6.5e-6), (4, 10.69e-6), (8, 39.42e-6)])
    assert 2.0e-6 < launch < 2.4e-6


def test_the_host_fit_never_makes_a_lone_kernel_wait_for_the_host(host):
    """Host points that alone would fit no flush head start (slack 0) cannot make a one-kernel
    probe wait for the host: the one-kernel launch chain bounds per-kernel host time - slack."""
    from tensorforge.estimate.fit import WorkloadPoint, fit_coefficients
    from tensorforge.estimate.probe_plan import CUDA_PLAN

    ceilings = Ceilings(
        origin="calibrated",
        compute={"bf16": 7.9e14, "fp16": 7.6e14, "tf32": 4.0e14, "fp32": 5.1e13},
        dram_bytes_per_s=4.2e12,
    )
    base = shipped()["nvidia-sm90"]
    items = [i for i in CUDA_PLAN if i.group == "host"]
    chosen = [resolve_spec(host, i.spec) for i in items]
    bound = predict(chosen, host.target("h200"), host.mappings(), None, ceilings, estimate=False)
    measured = (353.1e-6, 1061.7e-6, 902.3e-6)  # the final H200 calibration's host points
    points = [
        WorkloadPoint(i.name, i.group, wp, tuple(k.operators(w.params)), k, w.params, t)
        for i, (w, k), wp, t in zip(items, chosen, bound.workloads, measured)
    ]
    chains = [
        {"name": f"c{n}", "group": "launch", "kernels": n, "p50_s": t}
        for n, t in ((1, 3.584e-6), (2, 5.92e-6), (4, 18.752e-6), (8, 25.344e-6))
    ]
    fitted, _ = fit_coefficients(base, host.target("h200"), bound.ceilings, chains, points, "test")
    k = fitted.kernel
    assert k.host_per_kernel_s - k.host_slack_s <= 3.584e-6 + 1e-12


def test_a_three_channel_stem_is_padded(host):
    (stem,) = _predict(host, "h200", ["conv_stem_7x7"]).workloads
    op = stem.estimate.operators[0]
    assert stem.estimate.terms["alignment_padding"] > 0
    assert any("padded to 8" in note for note in op.notes)


# kernels per call in a PyTorch profiler trace of these probe workloads on an H200 (the trace's
# result file is in git history at the tag lab-archive-2026-12: benchmarks/results/h200-probe-kernels.json)
TRACED_KERNELS = {
    "transformer:hidden=256,layers=1,heads=4,kv_heads=2,intermediate=704,batch=1,seq=1,phase=decode,context=64": 24,
    "transformer:hidden=256,layers=3,heads=4,kv_heads=2,intermediate=704,batch=1,seq=1,phase=decode,context=64": 70,
    "transformer:hidden=256,layers=2,heads=4,kv_heads=4,intermediate=1024,batch=1,seq=16,phase=prefill,"
    "mlp=gelu,norm=layernorm,rope=false": 23,
    "gemm:m=1024,n=1024,k=16384,dtype=bf16": 2,  # nvjet ..._splitK_ + splitKreduce_kernel
    "gemm:m=1,n=6144,k=6144,dtype=bf16": 1,
    "sdpa:batch=4,heads=16,kv_heads=16,q_len=1,kv_len=8192,head_dim=128,causal=false": 2,  # + lean_reduction
    "sdpa:batch=64,heads=8,kv_heads=2,q_len=1,kv_len=1024,head_dim=128,causal=false": 1,
    "sdpa:batch=2,heads=16,kv_heads=16,q_len=2048,kv_len=2048,head_dim=128,causal=false": 2,  # Memset + kernel
    "conv2d:n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,padding=1,groups=1,dtype=fp32": 4,  # NCHW conversions
    "conv2d:n=16,c=256,h=28,w=28,k=128,r=1,s=1,stride=1,padding=0,groups=1,dtype=fp32": 3,  # (1x1: no filter one)
}


def test_kernel_counts_follow_the_h200_traces(host):
    """The estimate launches as many kernels as the PyTorch profiler saw on an H200 for the same
    probe workloads: a decode layer is 23 kernels (norm, QKV, RoPE as cat + neg + two muls + add
    per rotated tensor, two cache appends, attention, O projection, two residual adds, norm, up,
    silu, mul, down), cuDNN prefill attention a Memset and its kernel, split-K a reduction."""
    for spec, kernels in TRACED_KERNELS.items():
        (w,) = _predict(host, "h200", [spec]).workloads
        assert w.estimate.kernels == kernels, spec


def test_host_overhead_is_eager_only_and_shows_for_short_kernels(host):
    (decode, large) = _predict(host, "h200", ["transformer_decode", "gemm_large_square"]).workloads
    assert decode.estimate.terms["host_overhead"] > 0  # ~100 short kernels from Python
    # one long kernel hides the host: eager costs only its launch latency and event pair over a
    # graph sample's
    k = coefficients_for(host.target("h200")).kernel
    assert large.estimate.terms["host_overhead"] == pytest.approx(
        k.launch_s - k.device_launch_s + k.harness_s - k.device_harness_s
    )


def test_the_basis_is_said_never_guessed(host, tmp_path):
    h200 = coefficients_for(host.target("h200"))
    assert h200.basis_kind == "carried-over" and h200.family == "nvidia-sm90"
    laptop = coefficients_for(host.target("rtx3050-laptop"))
    # no coefficients shipped for the laptop's family: the nearest family's stand in, and the
    # basis says so, naming both families, then where the stand-in's coefficients came from
    assert laptop.basis_kind == "carried-over-other-family"
    stand_in = laptop.family
    assert stand_in != "nvidia-sm86" and stand_in in shipped() and "nvidia-sm86" not in shipped()
    head, said, tail = laptop.basis.partition("(none shipped for it")
    assert said and "nvidia-sm86" in head and stand_in in head
    assert "nearest family" in tail and tail.endswith(shipped()[stand_in].basis)
    calibrated = h200.relabel("calibrated", "calibrated on a test device")
    assert coefficients_for(host.target("h200"), calibrated) is calibrated
    # a target file can declare its own
    from tensorforge.hardware.target_dump import dump_target
    from tensorforge.hardware.target_file import load_target_file

    declared = attrs.evolve(host.target("h200"), name="my-h200", estimate=h200.relabel("declared", "by hand"))
    path = tmp_path / "t.toml"
    path.write_text(dump_target(declared), encoding="utf-8")
    loaded = load_target_file(path)
    assert loaded == declared
    assert coefficients_for(loaded).basis == "by hand"


def test_a_broken_declared_estimate_is_one_line(host, tmp_path):
    from tensorforge.errors import TensorForgeError
    from tensorforge.hardware.target_dump import dump_target
    from tensorforge.hardware.target_file import load_target_file

    declared = attrs.evolve(
        host.target("h200"), name="my-h200", estimate=shipped()["nvidia-sm90"].relabel("declared", "x")
    )
    text = dump_target(declared).replace("stream_efficiency = ", "stream_efficiency = -")
    path = tmp_path / "t.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TensorForgeError) as err:
        load_target_file(path)
    assert "[estimate]" in str(err.value) and "stream_efficiency" in str(err.value)
    assert "\n" not in str(err.value)


def test_terms_are_named_and_documented():
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "estimate.md").read_text(encoding="utf-8")
    for term in TERMS:
        assert f"`{term}`" in doc, term


def test_causal_block_sums_are_closed_form_and_exact():
    """The causal attention estimate sums padded key blocks in O(block size), not O(sequence):
    equal to the brute-force sum, and a 10^8-token prefill costs no memory."""
    import random
    import tracemalloc

    from tensorforge.bound.mappings.base import ceil_div
    from tensorforge.estimate.operators import _ceil_sum, _padded_prefix_sum

    rng = random.Random(7)
    for _ in range(300):
        a, step = rng.randint(0, 500), rng.choice([16, 64, 96, 128])
        n, div = rng.randint(0, 300), rng.choice([32, 64, 128])
        assert _ceil_sum(a, step, n, div) == sum(-(-(a + j * step) // div) for j in range(1, n + 1))
        off, tq, q, tkv = rng.randint(0, 300), rng.choice([64, 128]), rng.randint(1, 2000), rng.choice([64, 128])
        assert _padded_prefix_sum(off, tq, q, tkv, 1) == sum(
            ceil_div(off + min((j + 1) * tq, q), tkv) * tkv for j in range(ceil_div(q, tq))
        )
    host = PluginHost()
    tracemalloc.start()
    (w,) = _predict(host, "h200", ["sdpa:batch=1,heads=8,q_len=100000000,head_dim=128"]).workloads
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 32 << 20 and math.isfinite(w.estimate.device_s)


def _swept_curve(op="all_reduce", ranks=2):
    """A curve as the sweep makes it: knots from fastest samples, medians 3% above them."""
    from tensorforge.workloads.collectives import bus_factor, fit_ceiling

    sizes = [3 * 1024 << i for i in range(21)]
    fastest = [(s, 9e-6 + bus_factor(op, ranks) * s / 340e9) for s in sizes]
    return fit_ceiling(op, ranks, fastest, typical=[(s, t * 1.03) for s, t in fastest])


@given(
    op=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"]), k=st.integers(10, 33)
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_collective_s_estimate_is_the_sweep_median_and_never_below_the_bound(host, op, k):
    from tensorforge.workloads.collectives import ceiling_key

    curve = _swept_curve(op)
    ceilings = Ceilings(
        origin="calibrated",
        compute={"bf16": 7.9e14, "fp32": 5.1e13},
        dram_bytes_per_s=4.2e12,
        collectives={ceiling_key(op, 2): curve},
    )
    (w,) = _predict(host, "h200x2", [f"collective:op={op},bytes={1 << k},dtype=bf16"], ceilings).workloads
    _check(w)
    (o,) = w.estimate.operators
    assert o.mapping == f"the {op} sweep's median at {1 << k} B over 2 ranks"
    assert w.estimate.label == "PREDICTED estimate" and w.latency_s == curve.seconds(1 << k)  # labelled: not a bound
    expected = curve.expected_s(1 << k)
    # the operator's device time and the harness the workload adds give back the sweep's median
    if expected - w.estimate.bound_s > 1e-5:
        assert w.estimate.device_s == pytest.approx(expected, rel=0.02)


def test_a_curve_without_medians_leaves_the_collective_at_bound_plus_launch(host):
    import attrs as _attrs

    from tensorforge.workloads.collectives import ceiling_key

    curve = _attrs.evolve(_swept_curve(), typical=())
    ceilings = Ceilings(
        origin="calibrated",
        compute={"bf16": 7.9e14, "fp32": 5.1e13},
        dram_bytes_per_s=4.2e12,
        collectives={ceiling_key("all_reduce", 2): curve},
    )
    (w,) = _predict(host, "h200x2", ["all_reduce_64m"], ceilings).workloads
    _check(w)
    assert w.estimate.operators[0].mapping == "no estimate model: bound + kernel launches"


def test_the_large_gemm_stage_sets_the_mainloop_rate_from_long_compute_bound_probes(host):
    """Stage gemm-large refits the mainloop rate from the GEMM probes that ran long and near the
    ceiling alone (the closing H200 session's joint fit left it low: large GEMMs 3-6% slow). From
    probe times the model made with a known rate, a start 10% off comes back to it, one rate for
    bf16 and fp16 (the 16-bit modes of stage gemm); a small GEMM never joins the stage."""
    from tensorforge.estimate.fit import Fitter, _compute_bound, _fit_large_gemms

    ceilings = Ceilings(
        origin="calibrated",
        compute={"bf16": 8.2e14, "fp16": 7.9e14, "tf32": 4.0e14, "fp32": 5.1e13},
        dram_bytes_per_s=4.2e12,
    )
    base = shipped()["nvidia-sm90"]
    rate = {**base.gemm.mainloop_efficiency, "bf16": 0.99, "fp16": 0.99}
    truth = attrs.evolve(base, gemm=attrs.evolve(base.gemm, mainloop_efficiency=rate))
    bound, points = generated_points(host, ("gemm",), ceilings, truth)
    target = host.target("h200")
    large = [p for p in points if _compute_bound(p, bound.ceilings)]
    assert 5 <= len(large) < len(points)
    assert not any(p.name.endswith("m=48,n=64,k=64,dtype=bf16") for p in large)
    low = {**truth.gemm.mainloop_efficiency, "bf16": 0.9, "fp16": 0.9}
    start = attrs.evolve(truth, gemm=attrs.evolve(truth.gemm, mainloop_efficiency=low))
    f = Fitter(start, target, bound.ceilings)
    _fit_large_gemms(f, points, [], bound.ceilings)
    eff = f.c.gemm.mainloop_efficiency
    assert math.isclose(eff["bf16"], 0.99, rel_tol=5e-3) and eff["fp16"] == eff["bf16"]
    assert f.report["gemm-large:bf16+fp16"]["points"] == len(large)
    # a CPU family keeps stage gemm's rate (blocked GEMMs, no wave-quantized tile menu)
    cpu = Fitter(attrs.evolve(start, family="cpu-x86-64"), target, bound.ceilings)
    _fit_large_gemms(cpu, points, [], bound.ceilings)
    assert cpu.c.gemm.mainloop_efficiency == low and "gemm-large" in cpu.report


def test_shallow_filter_taps_lower_a_kxk_convolution_rate(host):
    """conv.kxk_tap_channels: a 3x3 convolution over 64 channels pays the im2col gather on more
    of its K than one over 512; a channel-padded stem runs another engine and is not touched."""
    fitted = shipped()["nvidia-sm90"]
    base = attrs.evolve(fitted, conv=attrs.evolve(fitted.conv, kxk_tap_channels=0.0))  # the term off
    taps = attrs.evolve(fitted, conv=attrs.evolve(fitted.conv, kxk_tap_channels=64.0))
    specs = [
        "conv2d:n=32,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,padding=1,groups=1,dtype=bf16",
        "conv2d:n=64,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,padding=1,groups=1,dtype=bf16",
        "conv2d:n=8,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,padding=3,groups=1,dtype=bf16",
    ]
    chosen = [resolve_spec(host, s) for s in specs]
    target = host.target("h200")

    def compute_terms(c):
        pred = predict(chosen, target, host.mappings(), None, None, estimate=c)
        for w in pred.workloads:
            _check(w)
        return [w.estimate.device_s for w in pred.workloads]

    plain, shallow = compute_terms(base), compute_terms(taps)
    # 64 channels lose more than 512 (whose small tiles may be held by their operand feed anyway)
    assert shallow[0] / plain[0] > shallow[1] / plain[1] >= 1.0 and shallow[0] / plain[0] > 1.2
    assert shallow[2] == plain[2]  # the padded stem's rate is conv.unaligned_efficiency's
