"""The plain-Python twins of the GEMM searches give bit-identical answers to numpy's
(tensorforge/bound/without_numpy.py says why they exist and when they run).

Property-based (hypothesis, derandomized) over the random shapes, residencies and machines of
tests/test_search_soundness.py, warm and cold, and random GEMM shapes on every family's menu:
the bound's tiled-matmul choice, the estimate's configurations, their times and the one the
library is taken to pick are compared by repr (a float's repr is its exact value, -0.0 too).
In this process numpy is loaded, so the strategies themselves take numpy's path; the twins are
called directly, the policy apart.
"""

import attrs
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search_soundness import SETTINGS, matmul_cases

from tensorforge.bound import without_numpy
from tensorforge.bound.mappings.base import Residency, dram_bytes
from tensorforge.bound.mappings.matmul import TiledMatmul
from tensorforge.bound.mappings.matmul_python import choose
from tensorforge.bound.mappings.search import GridStrategy
from tensorforge.estimate import gemm
from tensorforge.estimate.menus import MENUS, SIMT_MODES


@settings(max_examples=150, **SETTINGS)
@given(case=matmul_cases(), warm=st.booleans(), limit=st.one_of(st.just(16384), st.integers(1, 6000)))
def test_the_tiled_matmul_twin_chooses_what_numpy_chooses(case, warm, limit):
    p, machine, residency = case
    machine = attrs.evolve(machine, max_candidates=limit)
    residency = attrs.evolve(residency, warm=warm)
    strategy = TiledMatmul()
    twin = choose(strategy.name, p, machine, residency)
    size = len(strategy.space(p, machine)[0])
    if size > limit:  # a cut search is numpy's alone (a relaxation)
        assert twin is None
        return
    assert repr(twin) == repr(GridStrategy.explore(strategy, p, machine, residency))


def _gemm_on_an_h200():
    from tensorforge.bound.model import machine_for
    from tensorforge.hardware.target import datasheet_ceilings
    from tensorforge.host.plugin_host import PluginHost
    from tensorforge.workloads.problems import MatmulProblem, Tensor

    target = PluginHost().target("h200")
    machine = machine_for(target, datasheet_ceilings(target, target.operating_point(None).name), 16384)
    size = 4096 * 4096 * 2
    p = MatmulProblem(1, 4096, 4096, 4096, "bf16", 2, 2, 2, Tensor("A", size), Tensor("B", size), Tensor("C", size))
    return p, machine, Residency()


def test_the_twin_runs_only_within_the_budget_and_without_numpy(monkeypatch):
    p, machine, residency = _gemm_on_an_h200()
    monkeypatch.setattr(without_numpy, "_left", 10**9)
    assert without_numpy.take(1) is False  # numpy is loaded here: its path is the faster one
    monkeypatch.delitem(__import__("sys").modules, "numpy")
    assert without_numpy.take(5) is True and without_numpy._left == 10**9 - 5
    assert without_numpy.take(10**9) is False  # beyond what is left
    without_numpy.decline()
    assert without_numpy.take(1) is False
    assert choose("tiled-matmul", p, machine, residency, take=lambda size: False) is None


@settings(max_examples=100, **SETTINGS)
@given(reads=st.floats(0, 1e12), writes=st.floats(0, 1e12), cache=st.sampled_from([0, 1 << 20, 60 << 20]))
def test_warm_dram_bytes_of_scalars_are_numpy_s(reads, writes, cache):
    machine = attrs.evolve(_gemm_on_an_h200()[1], cache_bytes=cache)
    warm = Residency(warm=True)
    expected = np.maximum(np.array([reads]) - float(cache), 0.0) + np.maximum(np.array([writes]) - float(cache), 0.0)
    assert repr(float(dram_bytes(reads, writes, machine, warm))) == repr(float(expected[0]))


@st.composite
def gemm_cases(draw):
    family = draw(st.sampled_from(sorted(MENUS)))
    mode = draw(st.sampled_from(["fp32", "tf32", "fp16", "bf16", "fp8"]))
    e = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}[mode]
    sizes = st.one_of(st.integers(1, 300), st.integers(1, 40_000))
    batch, m, n, k = draw(st.one_of(st.just(1), st.integers(1, 64))), draw(sizes), draw(sizes), draw(sizes)
    shape = gemm.GemmShape(
        batch=batch,
        m=m,
        n=n,
        k=k,
        mode=mode,
        a_elem=e,
        b_elem=e,
        c_elem=e,
        a_bytes=float(batch * m * k * e),
        b_bytes=float(batch * k * n * e),
        c_bytes=float(batch * m * n * e),
        aligned=draw(st.booleans()),
        k_padded=draw(st.sampled_from([0, 0, k + 7])),
    )
    menu = MENUS[family]
    if mode in SIMT_MODES and draw(st.booleans()):
        menu = menu.for_mode(mode, batched=batch > 1)
    units = draw(st.one_of(st.sampled_from([1, 2, 20, 108, 132]), st.integers(1, 5000)))
    cache = draw(st.sampled_from([0.0, float(1 << 20), float(50 << 20)]))
    positive = st.floats(1e-3, 1e15)
    rates = gemm.GemmRates(
        unit_rate=draw(positive),
        efficiency=draw(st.floats(0.05, 1.0)),
        feed_bytes_per_s=draw(st.one_of(st.just(float("inf")), positive)),
        tile_overhead_s=draw(st.floats(0, 1e-5)),
        stream_bytes_per_s=draw(positive),
        launch_s=draw(st.floats(0, 1e-5)),
        prologue_s=draw(st.floats(0, 1e-5)),
        stream_fixed_s=draw(st.floats(0, 1e-5)),
    )
    return shape, menu, units, cache, rates


@settings(max_examples=200, **SETTINGS)
@given(case=gemm_cases())
def test_the_estimate_s_gemm_twin_matches_numpy_column_by_column(case):
    shape, menu, units, cache, rates = case
    arrays = gemm.geometry.__wrapped__(shape, menu, units, cache)  # numpy's: this process has it loaded
    lists = gemm.columns(gemm._configurations(shape, menu, units, cache))
    assert set(lists) == set(arrays)
    for key in arrays:
        assert repr(lists[key]) == repr(arrays[key].tolist()), key
    numpy_times, twin_times = gemm.times(arrays, rates), gemm.times(lists, rates)
    for key in numpy_times:
        assert repr(twin_times[key]) == repr(numpy_times[key].tolist()), key
    if lists["tm"]:
        i = gemm.best(arrays, rates)
        assert gemm.best(lists, rates) == i
        assert gemm.describe(lists, i) == gemm.describe(arrays, i)
        one = gemm.times(gemm.pick(lists, i), rates)
        assert repr({key: v[0] for key, v in one.items()}) == repr({key: v[i] for key, v in twin_times.items()})


def test_the_twin_breaks_ties_as_numpy_does_on_shipped_targets():
    """Small and thin shapes tie on latency and traffic across tiles and splits: the tie-break
    (larger tile, then fewer splits, then the enumeration order) decides, on real targets."""
    from tensorforge.bound.model import machine_for
    from tensorforge.hardware.target import datasheet_ceilings
    from tensorforge.host.plugin_host import PluginHost
    from tensorforge.workloads.problems import MatmulProblem, Tensor

    host, strategy, compared = PluginHost(), TiledMatmul(), 0
    for name in ("h200", "rtx3050-laptop", "host-cpu"):
        target = host.target(name)
        machine = machine_for(target, datasheet_ceilings(target, target.operating_point(None).name), 16384)
        for m, n, k, e in ((1, 64, 4096, 2), (64, 1, 64, 2), (16, 16, 16384, 4), (4096, 4096, 64, 2), (8, 8, 8, 1)):
            p = MatmulProblem(
                1,
                m,
                n,
                k,
                "fp16" if e == 2 else "fp32" if e == 4 else "fp8",
                e,
                e,
                e,
                Tensor("A", m * k * e),
                Tensor("B", k * n * e),
                Tensor("C", m * n * e),
            )
            if p.math_mode not in machine.compute:
                continue
            for residency in (Residency(), Residency(warm=True), Residency(resident=frozenset({"A", "B"}))):
                assert repr(choose(strategy.name, p, machine, residency)) == repr(
                    GridStrategy.explore(strategy, p, machine, residency)
                ), (name, m, n, k, residency)
                compared += 1
    assert compared >= 30
