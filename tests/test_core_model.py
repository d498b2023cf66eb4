"""The analytical model: invariants on a small synthetic target, and hand-worked values for
tile and wave quantization, streaming, attention, residency, calibrated ceilings, HF configs
and convolution-as-GEMM."""

import json
from pathlib import Path

import attrs
import pytest

import tensorforge.bound.mappings.matmul as matmul_module
from tensorforge.bound.mappings.attention import FlashAttention
from tensorforge.bound.mappings.base import MAX_CANDIDATES, Machine, Residency
from tensorforge.bound.mappings.matmul import TiledMatmul, VectorMatmul
from tensorforge.bound.mappings.streaming import Streaming
from tensorforge.bound.model import predict
from tensorforge.errors import TensorForgeError
from tensorforge.files.serialize import canonical_json, to_data
from tensorforge.hardware.target import Ceilings, MemoryLevel, OperatingPoint, PEArray, Target, datasheet_ceilings
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.kinds import Workload, WorkloadKind
from tensorforge.workloads.problems import AttentionProblem, MatmulProblem, Operator, StreamProblem, Tensor
from tensorforge.workloads.suite import resolve_spec

HF = Path(__file__).resolve().parent / "fixtures" / "hf"

pytestmark = pytest.mark.usefixtures("clean_plugin_env")


@pytest.fixture(scope="module")
def host():
    return PluginHost()


@pytest.fixture(scope="module")
def strategies(host):
    return host.mappings()


def toy_target(
    units=4, fp32=64, bf16=256, dram_bw=100e9, smem=64 * 1024, smem_bpc=128, l2=256 * 1024, l2_bpc=512, name="toy"
) -> Target:
    """4 processing units at 1 GHz: bf16 4*256*1e9 = 1.024 TFLOP/s, fp32 256 GFLOP/s."""
    sram = [MemoryLevel("smem", smem, "per_unit", smem_bpc)]
    if l2:
        sram.append(MemoryLevel("l2", l2, "shared", l2_bpc))
    return Target(
        name=name,
        description="synthetic",
        pe_array=PEArray(units, "PE", {"fp32": fp32, "bf16": bf16}),
        sram=tuple(sram),
        dram_capacity_bytes=1 << 34,
        operating_points=(OperatingPoint("base", 1000, dram_bw),),
        default_operating_point="base",
    )


def workloads(host, *specs):
    return [resolve_spec(host, s) for s in specs]


def latencies(host, strategies, target, *specs, **kw):
    pred = predict(workloads(host, *specs), target, strategies, **kw)
    return [w.latency_s for w in pred.workloads]


def gemm_problem(m, n, k, elem=4, mode="fp32", batch=1) -> MatmulProblem:
    return MatmulProblem(
        batch=batch,
        m=m,
        n=n,
        k=k,
        math_mode=mode,
        a_elem_bytes=elem,
        b_elem_bytes=elem,
        c_elem_bytes=elem,
        a=Tensor("A", batch * m * k * elem),
        b=Tensor("B", batch * k * n * elem),
        c=Tensor("C", batch * m * n * elem),
    )


def machine(units=4, unit_flops=1e9, dram=1e15, cache=0, max_candidates=MAX_CANDIDATES, **kw) -> Machine:
    """Rates chosen for round numbers: each unit does 1 GFLOP/s in fp32, 1 TFLOP/s in bf16."""
    return Machine(
        units=units,
        unit_sram_bytes=64 * 1024,
        unit_sram_bytes_per_s=kw.get("sram_bw"),
        cache_bytes=cache,
        cache_bytes_per_s=kw.get("cache_bw"),
        dram_bytes_per_s=dram,
        compute={"fp32": units * unit_flops, "bf16": units * unit_flops * 1000},
        max_candidates=max_candidates,
    )


@pytest.fixture
def single_tile(monkeypatch):
    """Restrict TiledMatmul's grid to 64x64 output tiles, k-slices of 32, no split-K."""
    monkeypatch.setattr(matmul_module, "TILE_MN", (64,))
    monkeypatch.setattr(matmul_module, "TILE_K", (32,))
    monkeypatch.setattr(matmul_module, "SPLITS", (1,))


# -- invariants --------------------------------------------------------------------------------

SIZES = [1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257, 500, 1000, 1024, 1025, 2048, 4097]


@pytest.mark.parametrize("dim", ["m", "n", "k"])
@pytest.mark.parametrize("other", [64, 1024])
def test_more_flops_never_predicts_less_time(host, strategies, dim, other):
    fixed = {d: other for d in "mnk" if d != dim}
    specs = ["gemm:" + ",".join(f"{d}={v}" for d, v in sorted({**fixed, dim: s}.items())) for s in SIZES]
    times = latencies(host, strategies, toy_target(), *specs)
    assert all(b >= a for a, b in zip(times, times[1:])), list(zip(SIZES, times))
    assert times[-1] > times[0]


SHAPES = [
    "gemm:m=1,n=4096,k=4096",
    "gemm:m=129,n=129,k=64",
    "gemm:m=2048,n=2048,k=2048",
    "gemm:m=1000,n=77,k=3000",
    "conv_resnet50_1x1",
    "conv2d:n=2,c=16,h=32,w=32,k=32,padding=1",
    "transformer_decode",
    "transformer:hidden=512,layers=2,heads=8,kv_heads=2,seq=256",
]


def test_more_dram_bandwidth_never_predicts_more_time(host, strategies):
    runs = [latencies(host, strategies, toy_target(dram_bw=bw), *SHAPES) for bw in (1e9, 25e9, 100e9, 400e9, 3e12)]
    for shape, times in zip(SHAPES, zip(*runs)):
        assert all(b <= a for a, b in zip(times, times[1:])), (shape, times)
        assert times[-1] < times[0], shape  # every shape moves some DRAM bytes


def test_more_compute_rate_never_predicts_more_time(host, strategies):
    runs = [latencies(host, strategies, toy_target(bf16=r, fp32=r // 4), *SHAPES) for r in (16, 64, 256, 1024, 8192)]
    for shape, times in zip(SHAPES, zip(*runs)):
        assert all(b <= a for a, b in zip(times, times[1:])), (shape, times)


def test_more_units_never_predicts_more_time(host, strategies):
    runs = [latencies(host, strategies, toy_target(units=u), *SHAPES) for u in (1, 2, 3, 4, 8, 16)]
    for shape, times in zip(SHAPES, zip(*runs)):
        assert all(b <= a for a, b in zip(times, times[1:])), (shape, times)


def test_prediction_is_deterministic_and_independent_of_strategy_order(host, strategies):
    chosen = workloads(host, *SHAPES)
    one = canonical_json(to_data(predict(chosen, toy_target(), strategies)))
    two = canonical_json(to_data(predict(workloads(host, *SHAPES), toy_target(), list(reversed(strategies)))))
    assert one == two
    data = json.loads(one)
    assert data["label"] == "PREDICTED" and data["bound"] == "analytical" and data["target"] == "toy"


def test_latency_is_max_of_compute_and_memory_per_operator_summed(host, strategies):
    pred = predict(workloads(host, "transformer_prefill", "gemm_tiny"), toy_target(), strategies)
    for w in pred.workloads:
        for op in w.operators:
            assert op.latency_s == max(op.compute_s, op.memory_s)
            assert op.bottleneck == ("compute" if op.compute_s >= op.memory_s else "memory")
            if op.problem_type == "MatmulProblem":  # flops are for all `count` executions
                q = op.problem
                assert op.flops == op.count * 2.0 * q["batch"] * q["m"] * q["n"] * q["k"]
        assert w.latency_s == pytest.approx(sum(o.latency_s for o in w.operators), rel=1e-12)
        assert w.flops == pytest.approx(sum(o.flops for o in w.operators), rel=1e-12)


# -- bounded exploration -----------------------------------------------------------------------


def test_exploration_respects_max_candidates():
    p = gemm_problem(1000, 1000, 1000, elem=2, mode="bf16")
    full = TiledMatmul().candidates(p, machine())
    size = len(full[0])
    assert 100 < size <= MAX_CANDIDATES
    assert TiledMatmul().explore(p, machine(), Residency()).candidates == size
    for bound in (1, 7, 50):
        m = machine(max_candidates=bound)
        bounded = TiledMatmul().candidates(p, m)
        assert len(bounded[0]) == bound
        # the first `bound` candidates of the same deterministic enumeration
        assert all((b == f[:bound]).all() for b, f in zip(bounded, full))
        assert TiledMatmul().explore(p, m, Residency()).candidates == bound
    attention = AttentionProblem(
        batch=1,
        heads=8,
        kv_heads=8,
        q_len=512,
        kv_len=512,
        head_dim=64,
        causal=True,
        math_mode="bf16",
        elem_bytes=2,
        q=Tensor("q", 1),
        k=Tensor("k", 1),
        v=Tensor("v", 1),
        o=Tensor("o", 1),
    )
    assert FlashAttention().explore(attention, machine(max_candidates=9), Residency()).candidates == 9


def test_predict_records_and_applies_the_bound(host, strategies):
    pred = predict(
        workloads(host, "gemm_large_square", "transformer_decode"), toy_target(), strategies, max_candidates=5
    )
    assert pred.max_candidates_per_operator == 5
    for w in pred.workloads:
        for op in w.operators:
            # at most 5 per strategy that can map it: tiled (<= 5) + vector (1) for a matmul
            assert 1 <= op.mapping.candidates <= (6 if op.problem_type == "MatmulProblem" else 5)
    assert pred.candidates == sum(w.candidates for w in pred.workloads)
    wide = predict(workloads(host, "gemm_large_square"), toy_target(), strategies)
    narrow = predict(workloads(host, "gemm_large_square"), toy_target(), strategies, max_candidates=5)
    # a cut search gives a relaxation, never a higher bound (tests/test_search_soundness.py)
    assert narrow.workloads[0].latency_s <= wide.workloads[0].latency_s
    assert (wide.search, narrow.search) == ("exhaustive", "relaxation")


def test_best_of_the_grid_is_no_worse_than_any_one_candidate(monkeypatch):
    p = gemm_problem(3000, 1000, 777, elem=2, mode="bf16")
    m = machine(dram=50e9, cache=1 << 20, cache_bw=400e9, sram_bw=100e9)
    best = TiledMatmul().explore(p, m, Residency()).latency_s
    for tm, tn, tk, split in [(64, 64, 32, 1), (128, 256, 64, 1), (16, 16, 32, 4), (256, 128, 32, 3)]:
        monkeypatch.setattr(matmul_module, "TILE_MN", tuple(sorted({tm, tn})))
        monkeypatch.setattr(matmul_module, "TILE_K", (tk,))
        monkeypatch.setattr(matmul_module, "SPLITS", (split,))
        assert best <= TiledMatmul().explore(p, m, Residency()).latency_s


# -- tile and wave quantization, worked by hand -------------------------------------------------


def test_tile_and_wave_quantization_hand_worked(single_tile):
    # M = N = 129, K = 64, fp32 (4 B), 4 units at 1 GFLOP/s each, 64x64 tiles, k-slice 32:
    #   tiles  = ceil(129/64) * ceil(129/64) = 3 * 3 = 9     (the 129th row/col pads a whole tile)
    #   waves  = ceil(9 / 4) = 3                              (the last wave runs 1 of 4 units)
    #   kpad   = ceil(64 / 32) * 32 = 64
    #   compute_s = waves * 2*tm*tn*kpad / unit_rate = 3 * 2*64*64*64 / 1e9 = 1.572864e-3 s
    # against 2*129*129*64 / 4e9 = 0.532512e-3 s of useful work: quantization costs ~2.95x.
    p = gemm_problem(129, 129, 64)
    choice = TiledMatmul().explore(p, machine(), Residency())
    assert choice.tile == {"m": 64, "n": 64, "k": 32}
    assert (choice.tiles, choice.concurrent, choice.waves, choice.split) == (9, 4, 3, 1)
    assert choice.compute_s == 1.572864e-3
    assert p.flops / 4e9 == 0.532512e-3
    assert choice.candidates == 3  # one tile shape x wave-block rows (1, 2, 4)
    # Per-level traffic, by hand:
    #   unit SRAM: 9 tiles * (64 + 64) * 64 * 4 B = 294912 B
    #   cache->unit: that + the 9 output tiles 64*64*4 B = 147456 B -> 442368 B
    #   DRAM (no cache to reuse panels in): A and B are 129*64*4 = 33024 B each, C 129*129*4 =
    #   66564 B written once. Operands are re-read once per block of the 4 concurrent tiles:
    #     1x3 block (64x129 outputs):  A once, B ceil(129/64) = 3 times  -> 4 * 33024
    #     2x2 block (128x128 outputs): A ceil(129/128) = 2, B 2 times    -> 4 * 33024
    #     3x2 block (129x128 outputs): A 2 times, B once                 -> 3 * 33024  (best)
    #   so DRAM = 3 * 33024 + 66564 = 165636 B.
    assert choice.traffic == {"unit_sram": 294912.0, "cache_to_unit": 442368.0, "dram": 165636.0}
    assert choice.notes == ("wave block 3x2 tiles (129x128 outputs)",)
    assert (choice.latency_s, choice.bottleneck) == (choice.compute_s, "compute")
    # the same mapping with 1 MB/s of DRAM: memory-bound, memory_s = 165636 / 1e6
    slow = TiledMatmul().explore(p, machine(dram=1e6), Residency())
    assert (slow.memory_s, slow.memory_level, slow.bottleneck) == (0.165636, "dram", "memory")
    assert slow.latency_s == 0.165636


def test_wave_quantization_one_tile_more_doubles_compute(single_tile):
    # 128x128 -> 2*2 = 4 tiles = 1 wave on 4 units; 129x128 -> 3*2 = 6 tiles = 2 waves.
    full = TiledMatmul().explore(gemm_problem(128, 128, 64), machine(), Residency())
    over = TiledMatmul().explore(gemm_problem(129, 128, 64), machine(), Residency())
    assert (full.tiles, full.waves, over.tiles, over.waves) == (4, 1, 6, 2)
    assert full.compute_s == 2 * 64 * 64 * 64 / 1e9
    assert over.compute_s == 2 * full.compute_s
    # and 8 units take the 6 tiles in one wave again
    assert TiledMatmul().explore(gemm_problem(129, 128, 64), machine(units=8), Residency()).compute_s == full.compute_s


def test_split_k_padding_hand_worked(monkeypatch):
    # K = 100 split 3 ways with k-slices of 32: ceil(100/3) = 34 -> kpad = 64 per split.
    # tiles = 1*1*3 = 3 -> 1 wave; compute = 2*64*64*64 / 1e9.
    monkeypatch.setattr(matmul_module, "TILE_MN", (64,))
    monkeypatch.setattr(matmul_module, "TILE_K", (32,))
    monkeypatch.setattr(matmul_module, "SPLITS", (3,))
    choice = TiledMatmul().explore(gemm_problem(64, 64, 100), machine(), Residency())
    assert (choice.split, choice.tiles, choice.waves) == (3, 3, 1)
    assert choice.compute_s == 2 * 64 * 64 * 64 / 1e9


@pytest.mark.parametrize("m, n, k", [(1000, 1000, 1000), (129, 4000, 96), (1, 8192, 8192), (4097, 33, 70)])
def test_returned_choice_obeys_the_quantization_formulas(m, n, k):
    p = gemm_problem(m, n, k, elem=2, mode="bf16")
    mach = machine(units=6)
    c = TiledMatmul().explore(p, mach, Residency())
    tm, tn, tk = c.tile["m"], c.tile["n"], c.tile["k"]
    ceil = lambda a, b: -(-a // b)
    kpad = ceil(ceil(k, c.split), tk) * tk
    assert c.tiles == ceil(m, tm) * ceil(n, tn) * c.split
    assert c.waves == ceil(c.tiles, 6)
    assert c.concurrent == min(6, c.tiles)
    assert c.compute_s == pytest.approx(c.waves * 2 * tm * tn * kpad / mach.unit_rate("bf16"), rel=1e-15)
    assert c.compute_s >= p.flops / mach.compute["bf16"]  # padding only ever adds work


def test_vector_matmul_has_no_tile_padding():
    p = gemm_problem(129, 1, 9, elem=2, mode="bf16")
    c = VectorMatmul().explore(p, machine(dram=1e9), Residency())
    assert c.compute_s == p.flops / 4e9  # the fp32 vector rate
    assert c.memory_s == (p.a.nbytes + p.b.nbytes + p.c.nbytes) / 1e9


# -- streaming ---------------------------------------------------------------------------------


@pytest.mark.parametrize("flops, dram_bw", [(1e6, 100e9), (1e3, 100e9), (5e5, 1e10)])
def test_streaming_is_max_of_vector_time_and_dram_time_exactly(flops, dram_bw):
    p = StreamProblem(
        flops=flops, read_tensors=(Tensor("x", 4_000_000), Tensor("w", 1024)), write_tensors=(Tensor("y", 2_000_000),)
    )
    m = machine(dram=dram_bw)
    c = Streaming().explore(p, m, Residency())
    bytes_moved = 4_000_000 + 1024 + 2_000_000
    assert c.compute_s == flops / 4e9
    assert c.memory_s == bytes_moved / dram_bw
    assert c.latency_s == max(flops / 4e9, bytes_moved / dram_bw)
    assert c.traffic["dram"] == bytes_moved
    # a resident input and a consumed-on-chip output cost no DRAM
    on_chip = Streaming().explore(p, m, Residency(resident=frozenset({"x"}), no_writeback=frozenset({"y"})))
    assert on_chip.traffic["dram"] == 1024 and on_chip.memory_s == 1024 / dram_bw
    # with a timed shared cache, every touched byte crosses it
    cached = Streaming().explore(p, machine(dram=dram_bw, cache=1 << 30, cache_bw=1e9), Residency())
    assert cached.memory_s == max(bytes_moved / dram_bw, bytes_moved / 1e9)


# -- attention ---------------------------------------------------------------------------------


def _attention(b=2, h=8, kv=2, q=100, kv_len=100, d=64, causal=True, e=2):
    return AttentionProblem(
        batch=b,
        heads=h,
        kv_heads=kv,
        q_len=q,
        kv_len=kv_len,
        head_dim=d,
        causal=causal,
        math_mode="bf16",
        elem_bytes=e,
        q=Tensor("q", b * h * q * d * e),
        k=Tensor("k", b * kv * kv_len * d * e),
        v=Tensor("v", b * kv * kv_len * d * e),
        o=Tensor("o", b * h * q * d * e),
    )


def test_attention_flops():
    # causal prefill: each of q queries sees itself and those before: q(q+1)/2 pairs, 4*d each
    assert _attention(q=100, kv_len=100).flops == 4 * 2 * 8 * 64 * 100 * 101 / 2
    assert _attention(q=100, kv_len=100, causal=False).flops == 4 * 2 * 8 * 64 * 100 * 100
    # decode: 1 query at the end of 2049 keys sees all of them
    assert _attention(q=1, kv_len=2049).flops == 4 * 2 * 8 * 64 * 2049
    # chunked prefill: 4 new queries after 10 cached keys see 11, 12, 13, 14 keys
    assert _attention(q=4, kv_len=14).visible_pairs == 11 + 12 + 13 + 14


def test_transformer_prefill_attention_flops(host, strategies):
    # transformer_prefill: batch 4, seq 2048, 16 heads of 128, 4 layers, causal
    (w,) = predict(workloads(host, "transformer_prefill"), toy_target(), strategies).workloads
    (attention,) = [o for o in w.operators if o.name == "attention"]
    assert attention.count == 4
    assert attention.flops == 4 * (4 * 4 * 16 * 128 * 2048 * 2049 / 2)


def test_decode_with_gqa_reads_the_kv_cache(host, strategies):
    # transformer_decode: batch 8, 4 KV heads of 128, 2048 cached + 1 new token, bf16:
    # K cache = V cache = 8 * 4 * 2049 * 128 * 2 B = 16785408 B. Q and O stay in the 2 MiB L2
    # (produced and consumed in the layer), so attention's DRAM traffic is exactly K + V.
    target = PluginHost().target("rtx3050-laptop")
    pred = predict(workloads(host, "transformer_decode", "transformer_decode:kv_heads=16"), target, strategies)
    gqa, mha = ([o for o in w.operators if o.name == "attention"][0] for w in pred.workloads)
    cache_bytes = 8 * 4 * 2049 * 128 * 2
    assert gqa.problem["k"] == {"name": "k_cache", "nbytes": cache_bytes}
    assert gqa.mapping.traffic["dram"] == 2 * cache_bytes
    assert gqa.bottleneck == "memory"
    assert gqa.memory_s >= 2 * cache_bytes / 192e9
    # 16 KV heads (no grouping) read 4x the cache
    assert mha.mapping.traffic["dram"] == 4 * gqa.mapping.traffic["dram"]
    assert gqa.flops == mha.flops == 4 * (4 * 8 * 16 * 128 * 2049)  # layers * per-layer


# -- residency ---------------------------------------------------------------------------------


class TwoStep(WorkloadKind):
    """x -> produce -> t -> consume -> y: t is an intermediate of `t_bytes`."""

    name = "twostep"

    def operators(self, t_bytes):
        return (
            Operator(
                "produce",
                StreamProblem(flops=1.0, read_tensors=(Tensor("x", 4096),), write_tensors=(Tensor("t", t_bytes),)),
            ),
            Operator(
                "consume",
                StreamProblem(flops=1.0, read_tensors=(Tensor("t", t_bytes),), write_tensors=(Tensor("y", 1024),)),
            ),
        )


@pytest.mark.parametrize("l2, resident", [(1 << 20, True), (32 * 1024, False)])
def test_intermediate_costs_dram_only_when_it_does_not_fit_in_l2(strategies, l2, resident):
    t = 64 * 1024
    (w,) = predict([(Workload("two", "twostep", t, "twostep"), TwoStep())], toy_target(l2=l2), strategies).workloads
    produce, consume = w.operators
    if resident:
        assert (produce.mapping.traffic["dram"], consume.mapping.traffic["dram"]) == (4096, 1024)
    else:
        assert (produce.mapping.traffic["dram"], consume.mapping.traffic["dram"]) == (4096 + t, t + 1024)
    assert w.compulsory_bytes == 4096 + 1024  # inputs once + final outputs once, either way


@pytest.mark.parametrize("l2", [64 << 20, 1024])
def test_transformer_activations_stay_on_chip_when_they_fit(host, strategies, l2):
    # tokens T = 2 * 64 = 128, intermediate 1376 (gated: up is 2 * 1376 wide), bf16:
    #   up = 128 * 2752 * 2 = 704512 B, mlp_act = 128 * 1376 * 2 = 352256 B
    spec = f"transformer:config={HF / 'llama'},batch=2,seq=64"
    (w,) = predict(workloads(host, spec), toy_target(l2=l2), strategies).workloads
    act = [o for o in w.operators if o.name == "mlp_act"][0]
    up = [o for o in w.operators if o.name == "mlp_up"][0]
    expected_act = 0.0 if l2 > 1 << 20 else 704512 + 352256
    assert act.mapping.traffic["dram"] == expected_act
    # weights always come from DRAM: 512 * 2752 * 2 B of w_up at least
    assert up.mapping.traffic["dram"] >= 512 * 2752 * 2


# -- ceilings ----------------------------------------------------------------------------------


def test_calibrated_ceilings_label_the_bound_and_each_operator(host, strategies):
    target = host.target("rtx3050-laptop")
    sheet = datasheet_ceilings(target)
    calibrated = Ceilings(origin="calibrated", compute={"bf16": 10e12}, dram_bytes_per_s=150e9, source="probe run 1")
    chosen = workloads(host, "gemm_large_square", "transformer_decode")
    pred = predict(chosen, target, strategies, ceilings=calibrated)
    assert pred.bound == "calibrated" and pred.ceilings.origin == "calibrated"
    assert pred.ceilings.compute["bf16"] == 10e12
    assert pred.ceilings.dram_bytes_per_s == 150e9
    # datasheet rates fill the modes calibration did not measure, and say so
    assert pred.ceilings.compute["fp32"] == sheet.compute["fp32"] == 16 * 256 * 1740e6
    assert pred.ceilings.compute_origin == {m: "datasheet" for m in sheet.compute if m != "bf16"}
    gemm, decode = pred.workloads
    assert {o.ceiling_origin for o in gemm.operators} == {"calibrated"}
    origins = {o.name: o.ceiling_origin for o in decode.operators}
    assert origins["qkv_proj"] == origins["attention"] == origins["mlp_down"] == "calibrated"
    assert origins["norm_attn"] == origins["mlp_act"] == "datasheet"  # fp32 vector work
    # same mapping, slower calibrated rate: compute time scales by the rate ratio
    analytical = predict(chosen, target, strategies)
    assert analytical.bound == "analytical"
    assert {o.ceiling_origin for w in analytical.workloads for o in w.operators} == {"datasheet"}
    a, c = analytical.workloads[0].operators[0], gemm.operators[0]
    assert a.mapping.tile == c.mapping.tile
    assert c.compute_s == pytest.approx(a.compute_s * sheet.compute["bf16"] / 10e12, rel=1e-12)


def test_calibrating_every_mode_leaves_no_datasheet_origin(host, strategies):
    target = host.target("rtx3050-laptop")
    sheet = datasheet_ceilings(target)
    full = Ceilings(
        origin="calibrated",
        compute=dict(sheet.compute),
        dram_bytes_per_s=1e11,
        vector=dict(sheet.vector),
        special=dict(sheet.special),
    )
    pred = predict(workloads(host, "transformer_decode"), target, strategies, ceilings=full)
    assert {o.ceiling_origin for o in pred.workloads[0].operators} == {"calibrated"}
    # calibrated fp32 scales the vector rates (calibrated origin) ...
    no_vector = attrs.evolve(full, vector={}, special={})
    pred = predict(workloads(host, "transformer_decode"), target, strategies, ceilings=no_vector)
    assert {o.ceiling_origin for o in pred.workloads[0].operators} == {"calibrated"}
    # ... and without it vector work stays on datasheet rates
    tensor_only = attrs.evolve(no_vector, compute={k: v for k, v in full.compute.items() if k != "fp32"})
    pred = predict(workloads(host, "transformer_decode"), target, strategies, ceilings=tensor_only)
    origins = {o.name: o.ceiling_origin for o in pred.workloads[0].operators}
    assert origins["mlp_act"] == origins["norm_attn"] == "datasheet"
    assert origins["attention"] == origins["mlp_up"] == "calibrated"


def test_invalid_ceilings_are_rejected(host, strategies):
    bad = Ceilings(origin="calibrated", compute={"bf16": 0.0}, dram_bytes_per_s=1e11)
    with pytest.raises(TensorForgeError, match=r"^calibrated ceilings: compute\[bf16\] must be > 0$"):
        predict(workloads(host, "gemm_tiny"), host.target("rtx3050-laptop"), strategies, ceilings=bad)


def test_datasheet_ceilings_follow_the_operating_point(host):
    target = host.target("rtx3050-laptop")
    assert datasheet_ceilings(target, "35w").compute["bf16"] == 16 * 512 * 1057e6
    assert datasheet_ceilings(target).compute["bf16"] == 16 * 512 * 1740e6
    assert datasheet_ceilings(target).dram_bytes_per_s == 192e9


# -- transformer from a Hugging Face config ----------------------------------------------------


def test_llama_style_config(host):
    kind = host.workload_kind("transformer")
    p = kind.parse({"config": str(HF / "llama"), "seq": 16})  # a folder finds config.json
    assert (p.hidden, p.layers, p.heads, p.kv_heads, p.head_dim, p.intermediate) == (512, 2, 8, 2, 64, 1376)
    assert (p.mlp, p.norm) == ("gated", "rmsnorm")
    assert p.config == str(HF / "llama" / "config.json")
    ops = {o.name: o for o in kind.operators(p)}
    assert ops["qkv_proj"].problem.n == (8 + 2 * 2) * 64  # GQA: 2 KV heads
    assert ops["mlp_up"].problem.n == 2 * 1376  # gate and up together
    assert ops["norm_attn"].problem.flops == 4 * 16 * 512  # rmsnorm: 4 per element
    assert ops["attention"].problem.kv_heads == 2 and ops["attention"].count == 2


def test_gpt2_style_config(host, tmp_path):
    kind = host.workload_kind("transformer")
    p = kind.parse({"config": "config.json", "seq": 32, "rope": "false"}, base_dir=HF / "gpt2")
    assert (p.hidden, p.layers, p.heads, p.kv_heads, p.head_dim, p.intermediate) == (256, 3, 4, 4, 64, 1024)
    assert (p.mlp, p.norm, p.rope) == ("gelu", "layernorm", False)
    ops = {o.name: o for o in kind.operators(p)}
    assert "rope" not in ops
    assert ops["mlp_up"].problem.n == 1024
    assert ops["mlp_act"].problem.flops == 8 * 32 * 1024  # tanh-gelu: 8 per element
    assert ops["norm_mlp"].problem.flops == 7 * 32 * 256  # layernorm: 7 per element


def test_explicit_fields_override_the_config_and_nested_text_config(host, tmp_path):
    kind = host.workload_kind("transformer")
    assert kind.parse({"config": str(HF / "llama"), "layers": 1}).layers == 1
    nested = tmp_path / "config.json"
    nested.write_text(
        json.dumps(
            {
                "model_type": "llava",
                "text_config": {
                    "model_type": "mistral",
                    "hidden_size": 256,
                    "num_hidden_layers": 1,
                    "num_attention_heads": 4,
                    "num_key_value_heads": 1,
                },
            }
        )
    )
    p = kind.parse({"config": str(tmp_path)})
    assert (p.hidden, p.kv_heads, p.mlp, p.norm, p.intermediate) == (256, 1, "gated", "rmsnorm", 1024)


# -- conv2d as an implicit GEMM ----------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, pq",
    [
        # P = (H + 2*pad - dil*(R-1) - 1) // stride + 1
        ({"n": 32, "c": 3, "h": 224, "w": 224, "k": 64, "r": 7, "s": 7, "stride": 2, "padding": 3}, (112, 112)),
        ({"n": 1, "c": 8, "h": 32, "w": 32, "k": 8, "r": 3, "s": 3, "dilation": 2}, (28, 28)),  # 32-4-1+1
        (
            {"n": 1, "c": 8, "h": 17, "w": 20, "k": 8, "r": 3, "s": 1, "stride": 2, "padding": 2, "dilation": 2},
            (9, 12),
        ),  # (17+4-4-1)//2+1 = 9; (20+4-0-1)//2+1 = 12
        ({"n": 1, "c": 8, "h": 5, "w": 5, "k": 8, "r": 5, "s": 5}, (1, 1)),
    ],
)
def test_conv_output_size(host, fields, pq):
    p = host.workload_kind("conv2d").parse(fields)
    assert (p.p, p.q) == pq


def test_conv_implicit_gemm_dims(host):
    kind = host.workload_kind("conv2d")
    p = kind.parse({"n": 32, "c": 3, "h": 224, "w": 224, "k": 64, "r": 7, "s": 7, "stride": 2, "padding": 3})
    (op,) = kind.operators(p)
    g = op.problem
    # M = N*P*Q, N_gemm = K, K_gemm = C*R*S; A is the input activation, not the im2col matrix
    assert (g.batch, g.m, g.n, g.k) == (1, 32 * 112 * 112, 64, 3 * 7 * 7)
    assert g.flops == 2 * 32 * 112 * 112 * 64 * 147
    assert (g.a.nbytes, g.b.nbytes, g.c.nbytes) == (32 * 3 * 224 * 224 * 2, 64 * 3 * 49 * 2, 32 * 64 * 112 * 112 * 2)
    assert g.a.nbytes < g.m * g.k * 2


def test_grouped_and_depthwise_conv_dims(host):
    kind = host.workload_kind("conv2d")
    (grouped,) = kind.operators(kind.parse({"n": 2, "c": 64, "h": 8, "w": 8, "k": 128, "groups": 4, "padding": 1}))
    assert (grouped.problem.batch, grouped.problem.m, grouped.problem.n, grouped.problem.k) == (4, 2 * 64, 32, 16 * 9)
    _, depthwise = host.preset("conv_depthwise_3x3")
    (dw,) = kind.operators(kind.parse(depthwise))
    assert (dw.problem.batch, dw.problem.m, dw.problem.n, dw.problem.k) == (256, 32 * 56 * 56, 1, 9)
    # and a thin per-group GEMM is not charged tensor-tile padding: the vector mapping wins
    (w,) = predict(workloads(host, "conv_depthwise_3x3"), host.target("rtx3050-laptop"), host.mappings()).workloads
    assert w.operators[0].mapping.strategy == "vector-matmul"
