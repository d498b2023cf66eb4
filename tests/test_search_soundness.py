"""The bound is the minimum over the mapping space, so a cut search must never raise it.

Property-based (hypothesis, derandomized so every run checks the same examples) over random
shapes, dtypes, residencies and machines (1 to 20,000 units, with and without cache and SRAM
bandwidths, SRAM so small that only a handful of tiles fit), for every shipped grid strategy:

* the bound returned at any limit is <= the latency of every mapping of the full space
  (evaluated all at once, and for spaces of up to 24 one by one: brute force);
* lowering the limit never raises the bound;
* when the limit covers the space the bound is exactly the minimum, labelled "exhaustive";
  when it does not, it is labelled "relaxation".

`test_mutant_that_keeps_the_first_n_is_caught` runs the very same property against the
explorer as it was before this fix (evaluate the first N candidates, keep the best): hypothesis
finds a counterexample, so these tests would catch that regression.

The closed-form causal sums of the attention mapping are checked against a per-block
reference (the old array implementation, written as a loop), and the whole-workload
properties run on the shipped targets' default suites, including `--max-candidates 1`.
"""

import math

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tensorforge.bound.mappings.attention import PARTIAL_BYTES as ATTN_PARTIAL
from tensorforge.bound.mappings.attention import FlashAttention, floor_sum
from tensorforge.bound.mappings.base import EXHAUSTIVE, MAX_CANDIDATES, RELAXATION, Machine, Residency, ceil_div
from tensorforge.bound.mappings.matmul import TiledMatmul
from tensorforge.bound.mappings.search import GridStrategy
from tensorforge.bound.model import machine_for, operator_residency, predict, workload_residency
from tensorforge.hardware.target import datasheet_ceilings
from tensorforge.host.plugin_host import PluginHost
from tensorforge.testing import check_mapping_strategy
from tensorforge.workloads.precision import ELEMENT_TYPE
from tensorforge.workloads.problems import AttentionProblem, MatmulProblem, Tensor
from tensorforge.workloads.suite import resolve_spec

SETTINGS = {
    "derandomize": True,
    "deadline": None,
    "database": None,
    "print_blob": False,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
MODES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}


# -- random inputs -----------------------------------------------------------------------------


@st.composite
def machines(draw):
    units = draw(st.one_of(st.sampled_from([1, 2, 3, 4, 16, 20, 108, 132, 4096]), st.integers(1, 20_000)))
    unit_rate = draw(st.floats(1e8, 1e13))
    return Machine(
        units=units,
        unit_sram_bytes=draw(st.sampled_from([2048, 4096, 16 * 1024, 64 * 1024, 100 * 1024, 228 * 1024])),
        unit_sram_bytes_per_s=draw(st.one_of(st.none(), st.floats(1e9, 1e13))),
        cache_bytes=draw(st.sampled_from([0, 1 << 20, 2 << 20, 60 << 20])),
        cache_bytes_per_s=draw(st.one_of(st.none(), st.floats(1e10, 1e14))),
        dram_bytes_per_s=draw(st.floats(1e9, 1e13)),
        compute={
            mode: units * unit_rate * factor
            for mode, factor in zip(MODES, draw(st.lists(st.floats(0.25, 64), min_size=5, max_size=5)))
        },
    )


sizes = st.one_of(st.integers(1, 300), st.integers(1, 20_000))


@st.composite
def matmul_cases(draw):
    mode = draw(st.sampled_from(list(MODES)))
    e = MODES[mode]
    batch = draw(st.one_of(st.just(1), st.integers(1, 64)))
    m, n, k = draw(sizes), draw(sizes), draw(sizes)
    a_bytes = batch * m * k * e // draw(st.sampled_from([1, 1, 9]))  # implicit-GEMM conv: smaller A
    p = MatmulProblem(
        batch=batch,
        m=m,
        n=n,
        k=k,
        math_mode=mode,
        a_elem_bytes=e,
        b_elem_bytes=e,
        c_elem_bytes=e,
        a=Tensor("A", a_bytes),
        b=Tensor("B", batch * k * n * e),
        c=Tensor("C", batch * m * n * e),
    )
    residency = Residency(
        resident=frozenset(draw(st.sets(st.sampled_from(["A", "B"])))),
        no_writeback=frozenset(draw(st.sets(st.just("C")))),
    )
    return p, draw(machines()), residency


@st.composite
def attention_cases(draw):
    mode = draw(st.sampled_from(["fp16", "bf16", "fp32", "fp8"]))
    e = MODES[mode]
    batch, kv_heads, group = draw(st.integers(1, 8)), draw(st.integers(1, 8)), draw(st.sampled_from([1, 1, 2, 4, 8]))
    kv_len = draw(st.one_of(st.integers(1, 600), st.integers(1, 40_000)))
    q_len = draw(st.one_of(st.just(1), st.just(kv_len), st.integers(1, kv_len)))
    d = draw(st.sampled_from([32, 64, 80, 128, 256]))
    heads = kv_heads * group
    q, kv = batch * heads * q_len * d * e, batch * kv_heads * kv_len * d * e
    p = AttentionProblem(
        batch=batch,
        heads=heads,
        kv_heads=kv_heads,
        q_len=q_len,
        kv_len=kv_len,
        head_dim=d,
        causal=draw(st.booleans()),
        math_mode=mode,
        elem_bytes=e,
        q=Tensor("q", q),
        k=Tensor("k", kv),
        v=Tensor("v", kv),
        o=Tensor("o", q),
    )
    residency = Residency(
        resident=frozenset(draw(st.sets(st.sampled_from(["q", "k", "v"])))),
        no_writeback=frozenset(draw(st.sets(st.just("o")))),
    )
    return p, draw(machines()), residency


# -- the property ------------------------------------------------------------------------------


def assert_sound(strategy, problem, machine, residency, limit, lower):
    """Every claim of a sound bounded search, for one problem, machine and pair of limits:
    tensorforge.testing.check_mapping_strategy, the check plugin authors run on theirs."""
    check_mapping_strategy(strategy, problem, machine, residency, limits=(limit, lower), brute_force_up_to=24)


limits = st.integers(1, 6000).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n)))


def soundness_property(make_strategy, cases, max_examples=80, **extra):
    """The property above as a hypothesis test over `cases`, for the strategy `make_strategy()`."""

    @settings(max_examples=max_examples, **SETTINGS, **extra)
    @given(case=cases, limits=limits)
    def check(case, limits):
        assert_sound(make_strategy(), *case, *limits)

    return check


test_tiled_matmul_bound_is_sound_at_any_limit = soundness_property(TiledMatmul, matmul_cases())
test_flash_attention_bound_is_sound_at_any_limit = soundness_property(FlashAttention, attention_cases())


@settings(max_examples=60, **SETTINGS)
@given(case=matmul_cases(), limits=st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n))))
def test_small_spaces_checked_one_mapping_at_a_time(case, limits):
    """With SRAM for one 16x16 tile per unit and at most 3 units the space holds at most
    8 splits x 3 wave blocks: it is enumerated by brute force, one mapping per evaluation."""
    p, machine, residency = case
    machine = attrs.evolve(machine, units=min(machine.units, 3), unit_sram_bytes=2 * 32 * 32 * p.a_elem_bytes)
    assert len(TiledMatmul().space(p, machine)[0]) <= 24
    assert_sound(TiledMatmul(), p, machine, residency, *limits)


class KeepFirstN(TiledMatmul):
    """The explorer before this fix: evaluate the first `max_candidates` candidates and return
    the best of them. It even labels its search correctly, so only the bound itself can give
    it away."""

    def explore(self, problem, machine, residency):
        size = len(self.space(problem, machine)[0])
        grid = self.candidates(problem, machine)
        evaluated = self.evaluate(problem, machine, residency, grid)
        return attrs.evolve(
            evaluated.choice(int(evaluated.order[0])),
            search=EXHAUSTIVE if len(grid[0]) == size else RELAXATION,
            space=size,
            candidates=len(grid[0]),
        )


def test_mutant_that_keeps_the_first_n_is_caught():
    # no shrinking: finding one counterexample is the point, a minimal one is not needed
    check = soundness_property(
        KeepFirstN, matmul_cases(), report_multiple_bugs=False, phases=[Phase.explicit, Phase.generate]
    )
    with pytest.raises(AssertionError, match="exceeds the latency|raised the bound"):
        check()


def test_the_issues_cases():
    """An 8192^3 bf16 GEMM on H200-like units, cut at 50 candidates: the old explorer's 'bound'
    was the best of the first 50 (16x16 tiles, 4x the minimum, 2.9x the measured time); now it
    is a relaxation just below the minimum. 4096 units give tiled-matmul a 5,200-candidate space:
    the default limit covers it (exact minimum), the old default of 4096 gives a relaxation."""
    p = MatmulProblem(
        batch=1,
        m=8192,
        n=8192,
        k=8192,
        math_mode="bf16",
        a_elem_bytes=2,
        b_elem_bytes=2,
        c_elem_bytes=2,
        a=Tensor("A", 2 << 26),
        b=Tensor("B", 2 << 26),
        c=Tensor("C", 2 << 26),
    )
    h200 = PluginHost().target("h200")
    h200_machine = machine_for(h200, datasheet_ceilings(h200))
    wide = Machine(
        units=4096,
        unit_sram_bytes=228 * 1024,
        unit_sram_bytes_per_s=None,
        cache_bytes=60 << 20,
        cache_bytes_per_s=None,
        dram_bytes_per_s=4.8e12,
        compute={"bf16": 4096 * 4096 * 1.98e9},
    )
    for machine, cut_at in ((h200_machine, 50), (wide, 4096)):
        size = len(TiledMatmul().space(p, machine)[0])
        assert cut_at < size <= MAX_CANDIDATES
        exact = TiledMatmul().explore(p, machine, Residency())
        assert exact.search == EXHAUSTIVE and exact.candidates == size
        cut = TiledMatmul().explore(p, attrs.evolve(machine, max_candidates=cut_at), Residency())
        first_n = KeepFirstN().explore(p, attrs.evolve(machine, max_candidates=cut_at), Residency())
        assert cut.search == RELAXATION and cut.latency_s <= exact.latency_s <= first_n.latency_s
        assert cut.latency_s >= 0.99 * exact.latency_s  # loose, not useless, on this shape
        if cut_at == 50:
            assert first_n.latency_s > 3 * exact.latency_s


def test_every_shipped_space_fits_the_default_limit():
    """The default limit is exhaustive for every accepted target (units up to 2^31 - 1)."""
    from tensorforge.workloads.limits import MAX_UNITS

    for units in (1, 132, 4096, MAX_UNITS):
        machine = Machine(
            units=units,
            unit_sram_bytes=1 << 30,
            unit_sram_bytes_per_s=None,
            cache_bytes=0,
            cache_bytes_per_s=None,
            dram_bytes_per_s=1e12,
            compute={"bf16": 1e15},
        )
        p = MatmulProblem(
            batch=1,
            m=1 << 20,
            n=1 << 20,
            k=1 << 20,
            math_mode="bf16",
            a_elem_bytes=2,
            b_elem_bytes=2,
            c_elem_bytes=2,
            a=Tensor("A", 1),
            b=Tensor("B", 1),
            c=Tensor("C", 1),
        )
        assert len(TiledMatmul().space(p, machine)[0]) <= MAX_CANDIDATES
    assert (
        len(
            FlashAttention().space(
                AttentionProblem(
                    batch=1,
                    heads=8,
                    kv_heads=1,
                    q_len=1,
                    kv_len=1 << 20,
                    head_dim=8,
                    causal=False,
                    math_mode="bf16",
                    elem_bytes=2,
                    q=Tensor("q", 1),
                    k=Tensor("k", 1),
                    v=Tensor("v", 1),
                    o=Tensor("o", 1),
                ),
                Machine(
                    units=1,
                    unit_sram_bytes=1 << 30,
                    unit_sram_bytes_per_s=None,
                    cache_bytes=0,
                    cache_bytes_per_s=None,
                    dram_bytes_per_s=1e12,
                    compute={"bf16": 1e15},
                ),
            )[0]
        )
        <= MAX_CANDIDATES
    )


# -- attention's closed form against the per-block reference -------------------------------------


@settings(max_examples=300, **SETTINGS)
@given(n=st.integers(0, 3000), m=st.integers(1, 5000), a=st.integers(0, 5000), b=st.integers(0, 10**6))
def test_floor_sum_matches_the_plain_sum(n, m, a, b):
    assert int(floor_sum(np.array([n]), np.array([m]), np.array([a]), np.array([b]))[0]) == sum(
        (a * i + b) // m for i in range(n)
    )


def reference_attention(p: AttentionProblem, machine: Machine, residency: Residency, tq, tkv, split, pack):
    """One candidate, block by block, as the explorer computed it before the closed form."""
    d, e, units = p.head_dim, p.elem_bytes, machine.units
    group = p.heads // p.kv_heads
    rows, groups = (p.q_len * group, p.batch * p.kv_heads) if pack else (p.q_len, p.batch * p.heads)
    blocks = ceil_div(rows, tq)
    visible = [p.kv_len - p.q_len + min((j + 1) * tq, p.q_len) if p.causal else p.kv_len for j in range(blocks)]
    kv_pad = [ceil_div(ceil_div(v, split), tkv) * tkv for v in visible]
    flops = [4.0 * tq * kp * d for kp in kv_pad]
    sram = [(tq * d + 2.0 * kp * d) * e for kp in kv_pad]
    items = groups * split * blocks
    waves = ceil_div(items, units)
    uniform = len(set(flops)) == 1
    total = groups * split * sum(flops)
    compute = (waves * max(flops) if uniform else max(total / units, max(flops))) / machine.unit_rate(p.math_mode)
    # the softmax beside the matrix units (the same for every candidate)
    compute = max(
        compute, machine.vector_time(p.softmax_flops, p.softmax_exps, ELEMENT_TYPE.get(p.math_mode, p.math_mode))
    )
    unit_sram = groups * split * sum(sram)
    out = (ATTN_PARTIAL * split if split > 1 else e) * float(groups * rows * d)
    dram = sum(0.0 if t.name in residency.resident else float(t.nbytes) for t in (p.q, p.k, p.v))
    dram += 0.0 if p.o.name in residency.no_writeback else float(p.o.nbytes)
    dram += 2 * out if split > 1 and out > machine.cache_bytes else 0.0
    terms = [dram / machine.dram_bytes_per_s]
    if machine.cache_bytes_per_s:
        terms.append((unit_sram + out) / machine.cache_bytes_per_s)
    if machine.unit_sram_bytes_per_s:
        terms.append(
            (waves * max(sram) if uniform else max(unit_sram / units, max(sram))) / machine.unit_sram_bytes_per_s
        )
    return max(compute, max(terms))


@settings(max_examples=120, **SETTINGS)
@given(case=attention_cases())
def test_attention_closed_form_matches_the_per_block_reference(case):
    p, machine, residency = case
    space = FlashAttention().space(p, machine)
    latency = FlashAttention().evaluate(p, machine, residency, space).latency
    picks = sorted({0, len(space[0]) - 1, len(space[0]) // 2, len(space[0]) // 3})
    for i in picks:
        expected = reference_attention(p, machine, residency, *(int(a[i]) for a in space))
        assert math.isclose(latency[i], expected, rel_tol=1e-12), (i, [int(a[i]) for a in space])


def test_attention_memory_and_time_do_not_grow_with_the_sequence():
    """10^9 keys: the closed form allocates nothing per query block (the old per-block arrays
    took ~300 MB per million tokens)."""
    import tracemalloc

    p = AttentionProblem(
        batch=1,
        heads=8,
        kv_heads=8,
        q_len=10**9,
        kv_len=10**9,
        head_dim=64,
        causal=True,
        math_mode="bf16",
        elem_bytes=2,
        q=Tensor("q", 1),
        k=Tensor("k", 1),
        v=Tensor("v", 1),
        o=Tensor("o", 1),
    )
    machine = Machine(
        units=132,
        unit_sram_bytes=228 * 1024,
        unit_sram_bytes_per_s=None,
        cache_bytes=60 << 20,
        cache_bytes_per_s=None,
        dram_bytes_per_s=4.8e12,
        compute={"bf16": 1e15, "fp32": 6e13},
    )
    tracemalloc.start()
    choice = FlashAttention().explore(p, machine, Residency())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20
    assert choice.compute_s >= p.flops / 1e15 and math.isfinite(choice.latency_s)


# -- whole workloads on the shipped targets -------------------------------------------------------

pytestmark = pytest.mark.usefixtures("clean_plugin_env")
SHIPPED = ("h200", "rtx3050-laptop", "host-cpu")


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def default_suite(host, target_name):
    """What `predict`/`run` use by default: the plugins' suite, or host-cpu's CPU-sized one."""
    if target_name == "host-cpu":
        from tf_cpu.backend import TorchCpuBackend

        names = TorchCpuBackend().default_suite
    else:
        names = host.default_suite()
    return [resolve_spec(host, n) for n in names]


def exhaustive_minimum(problem, strategies, machine, residency) -> float:
    """The minimum over every mapping of every strategy that maps `problem`: grid strategies
    evaluate their whole space at once, the others (one candidate each) explore."""
    best = math.inf
    for s in strategies:
        if isinstance(problem, s.problem_types):
            if isinstance(s, GridStrategy):
                best = min(
                    best, float(s.evaluate(problem, machine, residency, s.space(problem, machine)).latency.min())
                )
            else:
                best = min(best, s.explore(problem, machine, residency).latency_s)
    return best


@pytest.mark.parametrize("target_name", SHIPPED)
def test_max_candidates_1_gives_a_valid_looser_bound_on_every_default_workload(host, target_name):
    target, strategies = host.target(target_name), host.mappings()
    suite = default_suite(host, target_name)
    exact = predict(suite, target, strategies)
    one = predict(suite, target, strategies, max_candidates=1)
    assert exact.search == EXHAUSTIVE and one.search == RELAXATION
    machine = machine_for(target, exact.ceilings)
    for (workload, kind), w_exact, w_one in zip(suite, exact.workloads, one.workloads):
        assert 0 < w_one.latency_s <= w_exact.latency_s, workload.name
        assert w_exact.search == EXHAUSTIVE and w_one.candidates <= w_exact.candidates
        operators = kind.operators(workload.params)
        shared = workload_residency(operators, machine.cache_bytes)
        for op, o_exact, o_one in zip(operators, w_exact.operators, w_one.operators):
            assert 0 < o_one.latency_s <= o_exact.latency_s, (workload.name, op.name)
            # the default bound is exactly the minimum over every mapping of every strategy
            brute = exhaustive_minimum(op.problem, strategies, machine, operator_residency(op.problem, shared))
            assert o_exact.latency_s == brute * op.count, (workload.name, op.name)
            if o_one.mapping.search == RELAXATION:
                assert o_one.mapping.space > 1 and o_one.mapping.notes[0].startswith("search cut at 1 of")


@settings(max_examples=40, **SETTINGS)
@given(target_name=st.sampled_from(SHIPPED + ("wide",)), data=st.data())
def test_lowering_the_limit_never_raises_a_workload_bound(host, target_name, data):
    spec = data.draw(
        st.one_of(
            st.builds(
                "gemm:m={},n={},k={},batch={},dtype={}".format,
                sizes,
                sizes,
                sizes,
                st.integers(1, 8),
                st.sampled_from(["fp32", "bf16", "fp16"]),
            ),
            st.builds(
                "conv2d:n={},c={},h={},w={},k={},r={},s={},padding={},dtype=fp32".format,
                st.integers(1, 8),
                st.integers(1, 256),
                st.integers(3, 64),
                st.integers(3, 64),
                st.integers(1, 256),
                st.sampled_from([1, 3]),
                st.sampled_from([1, 3]),
                st.integers(0, 1),
            ),
            st.builds(
                "transformer:hidden={},layers=1,heads={},seq={},dtype=fp32".format,
                st.sampled_from([256, 512]),
                st.sampled_from([4, 8]),
                st.integers(1, 3000),
            ),
        )
    )
    target = wide_target() if target_name == "wide" else host.target(target_name)
    limit = data.draw(st.integers(1, 6000))
    lower = data.draw(st.integers(1, limit))
    suite = [resolve_spec(host, spec)]
    at = lambda n: predict(suite, target, host.mappings(), max_candidates=n).workloads[0]
    exact, bound, looser = at(MAX_CANDIDATES), at(limit), at(lower)
    assert looser.latency_s <= bound.latency_s <= exact.latency_s
    for o_looser, o_bound, o_exact in zip(looser.operators, bound.operators, exact.operators):
        assert o_looser.latency_s <= o_bound.latency_s <= o_exact.latency_s, o_bound.name


def wide_target():
    """A 4096-unit target: tiled-matmul's space (5,200) is larger than the old default limit."""
    from tensorforge.hardware.target import MemoryLevel, OperatingPoint, PEArray, Target

    return Target(
        name="wide",
        description="synthetic",
        pe_array=PEArray(4096, "PE", {"fp32": 128, "bf16": 1024, "fp16": 1024}),
        sram=(MemoryLevel("smem", 228 * 1024, "per_unit", 128), MemoryLevel("l2", 64 << 20, "shared", 4096)),
        dram_capacity_bytes=1 << 40,
        operating_points=(OperatingPoint("base", 1500, 8e12),),
        default_operating_point="base",
    )
