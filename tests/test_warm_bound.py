"""Cold and warm bounds: the warm bound (a call repeated without a cache flush) is sound.

Property-based (hypothesis, derandomized) over random shapes, residencies and machines:

* per strategy: the warm bound at any limit is <= every mapping's warm time (the soundness
  check plugin authors run, on a warm residency), and <= the cold bound, mapping by mapping;
* per workload, on the shipped targets and one that declares its L2 bandwidth: warm <= cold
  for the workload and for each operator; each operator's warm bound is exactly the minimum
  over every mapping's warm time; the workload's is the larger of its operators' summed and
  the cold bound less twice the cache at the DRAM rate.

Then the arithmetic of `dram_bytes`, the notes, the generic relaxation for a strategy that
does not model warmth, and what `predict` shows (JSON always, text only with --detail).
"""

import json

import attrs
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search_soundness import (
    SETTINGS,
    attention_cases,
    exhaustive_minimum,
    matmul_cases,
    sizes,
    wide_target,
)

from tensorforge.bound.mappings.attention import FlashAttention
from tensorforge.bound.mappings.base import Machine, MappingChoice, MappingStrategy, Residency, dram_bytes
from tensorforge.bound.mappings.matmul import TiledMatmul, VectorMatmul
from tensorforge.bound.mappings.streaming import Streaming
from tensorforge.bound.model import machine_for, operator_residency, predict, workload_residency
from tensorforge.bound.warm import CACHE_STATES
from tensorforge.host.plugin_host import PluginHost
from tensorforge.testing import check_mapping_strategy
from tensorforge.workloads.problems import MatmulProblem, StreamProblem, Tensor
from tensorforge.workloads.suite import resolve_spec

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

limits = st.integers(1, 3000).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n)))


def warm(residency: Residency) -> Residency:
    return attrs.evolve(residency, warm=True)


def check_grid(strategy, case, limits):
    p, machine, residency = case
    # the warm bound <= every warm mapping, at any limit (brute force for small spaces)
    warm_choices = check_mapping_strategy(strategy, p, machine, warm(residency), limits=limits, brute_force_up_to=24)
    cold_choices = [
        strategy.explore(p, attrs.evolve(machine, max_candidates=n), residency) for n in sorted(limits)[::-1]
    ]
    for w, c in zip(warm_choices, cold_choices):
        assert w.latency_s <= c.latency_s
    # mapping by mapping: warmth never makes one slower
    space = strategy.space(p, machine)
    cold = strategy.evaluate(p, machine, residency, space).latency
    hot = strategy.evaluate(p, machine, warm(residency), space).latency
    assert np.all(hot <= cold)


@settings(max_examples=25, **SETTINGS)
@given(case=matmul_cases(), limits=limits)
def test_tiled_matmul_warm_bound_is_below_every_warm_mapping_and_the_cold_bound(case, limits):
    check_grid(TiledMatmul(), case, limits)


@settings(max_examples=25, **SETTINGS)
@given(case=attention_cases(), limits=limits)
def test_flash_attention_warm_bound_is_below_every_warm_mapping_and_the_cold_bound(case, limits):
    check_grid(FlashAttention(), case, limits)


@settings(max_examples=25, **SETTINGS)
@given(case=matmul_cases())
def test_one_mapping_strategies_warm_is_below_cold(case):
    p, machine, residency = case
    stream = StreamProblem(
        math_mode=p.math_mode if p.math_mode in ("fp32", "fp16", "bf16") else "fp32",
        flops=float(p.flops) / 100,
        read_tensors=(p.a, p.b),
        write_tensors=(p.c,),
    )
    for strategy, problem in ((VectorMatmul(), p), (Streaming(), stream)):
        cold = strategy.explore(problem, machine, residency)
        hot = strategy.explore(problem, machine, warm(residency))
        assert hot.latency_s <= cold.latency_s
        assert (
            hot.traffic["dram"] == dram_bytes(*_reads_writes(problem, residency), machine, warm(residency))
            or machine.cache_bytes == 0
            and hot == cold
        )


def _reads_writes(problem, residency):
    if isinstance(problem, MatmulProblem):
        reads = sum(float(t.nbytes) for t in (problem.a, problem.b) if t.name not in residency.resident)
        return reads, 0.0 if problem.c.name in residency.no_writeback else float(problem.c.nbytes)
    reads = sum(float(t.nbytes) for t in problem.read_tensors if t.name not in residency.resident)
    return reads, sum(float(t.nbytes) for t in problem.write_tensors if t.name not in residency.no_writeback)


# -- whole workloads --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def specs():
    return st.one_of(
        st.builds(
            "gemm:m={},n={},k={},batch={},dtype={}".format,
            sizes,
            sizes,
            sizes,
            st.integers(1, 8),
            st.sampled_from(["fp32", "bf16"]),
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
            "transformer:hidden={},layers={},heads={},{},dtype=fp32".format,
            st.sampled_from([256, 512, 2048]),
            st.integers(1, 4),
            st.sampled_from([4, 8]),
            st.one_of(
                st.builds("seq={}".format, st.integers(1, 3000)),
                st.builds("batch={},phase=decode,context={}".format, st.integers(1, 64), st.integers(1, 8192)),
            ),
        ),
        st.builds("softmax:rows={},cols={},dtype=fp32".format, st.integers(1, 70_000), st.integers(1, 70_000)),
    )


@settings(max_examples=25, **SETTINGS)
@given(target_name=st.sampled_from(("h200", "rtx3050-laptop", "host-cpu", "wide")), spec=specs())
def test_workload_warm_bound_is_sound(host, target_name, spec):
    target = wide_target() if target_name == "wide" else host.target(target_name)
    suite = [resolve_spec(host, spec)]
    pred = predict(suite, target, host.mappings(), estimate=False)
    assert pred.cache_states == CACHE_STATES
    (w,) = pred.workloads
    machine = machine_for(target, pred.ceilings)
    assert w.warm_latency_s <= w.latency_s
    assert w.warm_latency_s >= sum(o.warm_latency_s for o in w.operators)
    assert w.warm_latency_s >= w.latency_s - 2.0 * machine.cache_bytes / machine.dram_bytes_per_s
    operators = suite[0][1].operators(suite[0][0].params)
    shared = workload_residency(operators, machine.cache_bytes)
    for op, o in zip(operators, w.operators):
        assert o.warm_latency_s <= o.latency_s, op.name
        # exactly the minimum over every mapping's warm time, of every strategy
        residency = warm(operator_residency(op.problem, shared))
        assert o.warm_latency_s == exhaustive_minimum(op.problem, host.mappings(), machine, residency) * op.count


def test_declared_cache_bandwidth_floors_the_warm_bound():
    """With the L2's bandwidth declared, bytes the cache holds are timed at it; without, they
    have no memory floor, and the operator's note says so."""
    p = StreamProblem(
        math_mode="fp32", flops=1.0, read_tensors=(Tensor("x", 40 << 20),), write_tensors=(Tensor("y", 40 << 20),)
    )
    base = Machine(
        units=132,
        unit_sram_bytes=228 * 1024,
        unit_sram_bytes_per_s=None,
        cache_bytes=60 << 20,
        cache_bytes_per_s=None,
        dram_bytes_per_s=4e12,
        compute={"fp32": 6e13},
    )
    bare = Streaming().explore(p, base, Residency(warm=True))
    assert bare.traffic["dram"] == 0.0 and bare.latency_s == bare.compute_s
    assert "no memory floor at all" in bare.notes[-1]
    with_l2 = Streaming().explore(p, attrs.evolve(base, cache_bytes_per_s=1e13), Residency(warm=True))
    assert with_l2.memory_level == "cache_to_unit" and with_l2.latency_s == (80 << 20) / 1e13
    assert "timed at the cache's bandwidth" in with_l2.notes[-1]
    assert Streaming().explore(p, base, Residency()).notes == ()  # cold: no note


def test_dram_bytes_arithmetic():
    m = Machine(
        units=1,
        unit_sram_bytes=1,
        unit_sram_bytes_per_s=None,
        cache_bytes=100,
        cache_bytes_per_s=None,
        dram_bytes_per_s=1.0,
        compute={"fp32": 1.0},
    )
    assert dram_bytes(250, 70, m, Residency()) == 320
    assert dram_bytes(250.0, 70.0, m, Residency(warm=True)) == 150.0  # 250 - 100 + 0
    assert dram_bytes(250.0, 170.0, m, Residency(warm=True)) == 220.0  # 150 + 70
    assert list(dram_bytes(np.array([50.0, 300.0]), 120.0, m, Residency(warm=True))) == [20.0, 220.0]
    assert dram_bytes(250.0, 70.0, attrs.evolve(m, cache_bytes=0), Residency(warm=True)) == 320.0


class ColdOnly(MappingStrategy):
    """A third party's strategy written before warm bounds: it ignores Residency.warm."""

    name = "cold-only"
    problem_types = (MatmulProblem,)

    def explore(self, p, machine, residency):
        dram = float(p.a.nbytes + p.b.nbytes + p.c.nbytes)
        return MappingChoice(
            strategy=self.name,
            tile={},
            split=1,
            tiles=1,
            concurrent=1,
            waves=1,
            traffic={"dram": dram},
            compute_s=1e-6,
            memory_s=dram / machine.dram_bytes_per_s,
            memory_level="dram",
            latency_s=max(1e-6, dram / machine.dram_bytes_per_s),
            bottleneck="memory",
            candidates=1,
        )


def test_a_strategy_that_does_not_model_warmth_gets_a_sound_relaxation(host):
    target = host.target("h200")
    suite = [resolve_spec(host, "gemm:m=16,n=8192,k=16384,dtype=bf16")]
    pred = predict(suite, target, [ColdOnly()], estimate=False)
    (o,) = pred.workloads[0].operators
    machine = machine_for(target, pred.ceilings)
    dram = o.mapping.traffic["dram"]
    assert o.warm_mapping.traffic["dram"] == dram - 2 * machine.cache_bytes
    assert o.warm_latency_s == max(1e-6, (dram - 2 * machine.cache_bytes) / machine.dram_bytes_per_s)
    assert "does not model a warm cache" in o.warm_mapping.notes[-1]


def test_predict_shows_the_warm_bound_in_json_and_with_detail_only(host):
    from tensorforge.cli.main import make_cli

    cli = make_cli(lambda: host)
    run = lambda *a: CliRunner().invoke(cli, ["predict", "-t", "h200", "-w", "conv_resnet50_1x1", *a])
    data = json.loads(run("--json").stdout)
    (w,) = data["workloads"]
    assert 0 < w["warm_latency_s"] < w["latency_s"]
    assert w["operators"][0]["warm_latency_s"] == w["warm_latency_s"]
    assert set(data["cache_states"]) == {"latency_s", "warm_latency_s"}
    assert data["cache_states"]["latency_s"].startswith("cold")
    plain, detail = run().output, run("--detail").output
    assert "warm" not in plain
    assert "lower bound: cold" in detail and "warm_latency_s: warm" in detail
