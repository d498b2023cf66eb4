"""tensorforge.testing, the helpers plugin authors use in their own tests: each check passes
for the shipped plugins and fails, with a message naming the culprit, for each way a kind or
a target can be wrong. (The pytest fixtures run from outside the repository in
test_external_plugins.py, as a plugin author would use them.)"""

import attrs
import pytest

from tensorforge.bound.mappings.base import MappingStrategy, finish
from tensorforge.hardware.target import MemoryLevel, OperatingPoint, PEArray, Target
from tensorforge.hookspecs import hookimpl
from tensorforge.host.plugin_host import PluginHost
from tensorforge.testing import (
    REFERENCE_TARGET,
    PluginCheckError,
    assert_loaded,
    check_mapping_strategy,
    check_target,
    check_workload_kind,
    fresh_host,
)
from tensorforge.workloads.kinds import WorkloadKind
from tensorforge.workloads.problems import MatmulProblem, Operator, StreamProblem, Tensor

pytestmark = pytest.mark.usefixtures("clean_plugin_env")


@attrs.frozen
class P:
    n: int = attrs.field(default=1000, metadata={"min": 1})
    label: str = "x"


def stream(flops=1000.0, nbytes=4000):
    return Operator(
        "scale", StreamProblem(flops=flops, read_tensors=(Tensor("x", nbytes),), write_tensors=(Tensor("y", nbytes),))
    )


class Good(WorkloadKind):
    name = "scale"
    description = "y = a * x"
    params_type = P
    presets = {"scale_small": {"n": 10}, "scale_big": {"n": 10**6}}
    default_suite = ("scale_small",)

    def operators(self, p):
        return (
            Operator(
                "scale",
                StreamProblem(
                    flops=float(p.n), read_tensors=(Tensor("x", 4 * p.n),), write_tensors=(Tensor("y", 4 * p.n),)
                ),
            ),
        )


def kind_with(**overrides):
    """A Good subclass with some attributes (or operators) replaced."""
    operators = overrides.pop("operators", None)
    attributes = dict(overrides)
    if operators is not None:
        attributes["operators"] = lambda self, p: operators
    return type("Variant", (Good,), attributes)()


# -- workload kinds ------------------------------------------------------------------------------


def test_shipped_workload_kinds_pass(host):
    for name in host.names("workloads"):
        predictions = check_workload_kind(host.workload_kind(name))
        assert len(predictions) == len(host.workload_kind(name).presets)


def test_a_good_kind_passes_and_returns_predictions():
    small, big = check_workload_kind(Good())
    assert small.flops == 10 and big.flops == 10**6 and big.latency_s > small.latency_s
    (only,) = check_workload_kind(Good(), [{"n": "5"}], target=REFERENCE_TARGET)
    assert only.spec == "scale:n=5"


@pytest.mark.parametrize(
    "kind, params, message",
    [
        (kind_with(operators=()), None, "workload 'scale', params #1: operators() returned nothing"),
        (
            kind_with(operators=(stream(flops=-1.0),)),
            None,
            "workload 'scale', params #1, operator 'scale': flops must be a finite number >= 0, got -1.0",
        ),
        (
            kind_with(operators=(stream(flops=float("nan")),)),
            None,
            "workload 'scale', params #1, operator 'scale': flops must be a finite number >= 0, got nan",
        ),
        (
            kind_with(operators=(stream(flops=0.0),)),
            None,
            "workload 'scale', params #1: the workload does no arithmetic and moves nothing between devices (total FLOPs 0.0)",
        ),
        (
            kind_with(operators=(stream(nbytes=4.5),)),
            None,
            "workload 'scale', params #1, operator 'scale': tensor 'x' must have an integer nbytes >= 0, got 4.5",
        ),
        (
            kind_with(operators=(stream(nbytes=-4),)),
            None,
            "workload 'scale', params #1, operator 'scale': tensor 'x' must have an integer nbytes >= 0, got -4",
        ),
        (
            kind_with(operators=(Operator("scale", stream().problem, count=0),)),
            None,
            "workload 'scale', params #1, operator 'scale': count must be an integer >= 1, got 0",
        ),
        (
            kind_with(operators=("matmul",)),
            None,
            "workload 'scale', params #1: operators() returned a str; expected tensorforge.workloads.problems.Operator",
        ),
        (
            kind_with(
                operators=(
                    Operator(
                        "mm",
                        MatmulProblem(1, 8, 8, 8, "fp4", 1, 1, 1, Tensor("a", 64), Tensor("b", 64), Tensor("c", 64)),
                    ),
                )
            ),
            None,
            "workload 'scale', params #1, operator 'mm': math_mode must be one of fp32, tf32, fp16, fp16_acc16, "
            "bf16, fp8, int8, got 'fp4'",
        ),
        (kind_with(name="Scale"), None, "workload kind name 'Scale' must be a non-empty lowercase string"),
        (kind_with(description=""), None, "workload 'scale': needs a description (shown by `tensorforge workloads`)"),
        (kind_with(params_type=dict), None, "workload 'scale': params_type must be an attrs class, got <class 'dict'>"),
        (
            kind_with(default_suite=("scale_huge",)),
            None,
            "workload 'scale': default_suite names unknown preset 'scale_huge'",
        ),
        (
            kind_with(presets={}, default_suite=()),
            None,
            "workload 'scale': no presets and no params given: nothing to check",
        ),
        (Good(), [{"n": 0}], "workload 'scale', params #1: scale: n must be >= 1, got 0"),
        (
            Good(),
            [{"label": "a,b"}],
            "workload 'scale', params #1: its spec 'scale:label=a,b' does not parse "
            "back: scale:label=a,b: expected key=value, got 'b'",
        ),
        ("scale", None, "'scale' is not an instance of a tensorforge.workloads.kinds.WorkloadKind subclass"),
    ],
)
def test_each_malformed_kind_is_named(kind, params, message):
    with pytest.raises(PluginCheckError) as info:
        check_workload_kind(kind, params)
    assert str(info.value) == message
    assert isinstance(info.value, AssertionError)  # plain pytest failures


@attrs.frozen
class Odd:
    """A problem type no built-in mapping handles."""

    flops: float = 1.0
    math_mode: str = "fp32"

    def reads(self):
        return ()

    def writes(self):
        return ()


class OddMapping(MappingStrategy):
    name = "odd"
    problem_types = (Odd,)

    def explore(self, problem, machine, residency):
        return finish(
            self.name,
            tile={},
            split=1,
            tiles=1,
            concurrent=1,
            waves=1,
            traffic={},
            compute_s=1e-6,
            memory_terms={},
            candidates=1,
        )


def test_a_problem_type_needs_its_mapping():
    kind = kind_with(operators=(Operator("odd", Odd()),))
    with pytest.raises(
        PluginCheckError,
        match=r"^workload 'scale': the model cannot predict it: workload 'scale#1', "
        r"operator 'odd': no installed mapping strategy handles Odd$",
    ):
        check_workload_kind(kind)
    assert check_workload_kind(kind, mappings=[OddMapping()])[0].latency_s == 1e-6


# -- targets -------------------------------------------------------------------------------------


def target(**changes):
    base = dict(
        name="toy",
        description="toy accelerator",
        pe_array=PEArray(4, "PE", {"fp32": 16, "bf16": 64}),
        sram=(MemoryLevel("smem", 64 * 1024, "per_unit", 64), MemoryLevel("l2", 1 << 20, "shared")),
        dram_capacity_bytes=1 << 30,
        operating_points=(OperatingPoint("base", 1000, 100e9),),
        default_operating_point="base",
        sources={
            "pe_array.units": "a",
            "pe_array.flops_per_clock": "b",
            "dram_capacity_bytes": "c",
            "operating_points": "d",
            "sram.smem": "e",
            "sram.l2": "f",
        },
    )
    base.update(changes)
    return Target(**base)


def test_shipped_targets_and_the_reference_target_pass(host):
    for name in host.names("targets"):
        check_target(host.target(name))
    check_target(target())
    check_target(REFERENCE_TARGET, require_sources=False)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"pe_array": PEArray(0, "PE", {"fp32": 16})}, "target 'toy': pe_array.units must be >= 1, got 0"),
        ({"name": "Toy"}, "target name 'Toy' must be a non-empty lowercase string"),
        ({"description": ""}, "target 'toy': needs a description"),
        (
            {"sources": {"pe_array.units": "a", "sram.smem": " "}},
            "target 'toy': no source for pe_array.flops_per_clock, dram_capacity_bytes, operating_points, sram.smem, "
            "sram.l2 (sources[...] says where each datasheet figure comes from)",
        ),
        (
            {"operating_points": (OperatingPoint("base", 1000, 100e9), OperatingPoint("hot", 1e308, 100e9))},
            "target 'toy': flops_per_clock[bf16] x units x clock at operating point 'hot' (x 1 devices) "
            "is not a finite rate",
        ),
        ({"notes": ("fine", None)}, "TOML cannot hold a NoneType"),
    ],
)
def test_each_malformed_target_is_named(changes, message):
    with pytest.raises((PluginCheckError, TypeError)) as info:
        check_target(target(**changes))
    assert str(info.value) == message


def test_finer_source_keys_count_for_their_figure():
    check_target(
        target(
            sources={
                "pe_array.units": "a",
                "pe_array.flops_per_clock.bf16": "b",
                "pe_array.flops_per_clock.fp32": "b",
                "dram_capacity_bytes": "c",
                "operating_points.clock": "d",
                "operating_points.dram_bandwidth": "d",
                "sram.per_unit": "e",
                "sram.shared": "f",
            }
        )
    )
    with pytest.raises(PluginCheckError, match=r"no source for operating_points \("):
        check_target(
            target(
                sources={
                    "pe_array.units": "a",
                    "pe_array.flops_per_clock": "b",
                    "dram_capacity_bytes": "c",
                    "operating_pointsX": "d",
                    "sram.per_unit": "e",
                    "sram.l2": "f",
                }
            )
        )


def test_sources_can_be_waived_for_a_hypothetical_target():
    check_target(target(sources={}), require_sources=False)


# -- hosts ---------------------------------------------------------------------------------------


class RegistersToy:
    @staticmethod
    @hookimpl
    def tensorforge_register_targets(register):
        register(target())


class RegistersScale:
    @staticmethod
    @hookimpl
    def tensorforge_register_workloads(register):
        register(Good())


def test_fresh_host_holds_only_the_given_plugins_plus_what_predictions_need():
    host = fresh_host(RegistersToy, ("named", RegistersScale))
    assert sorted(host.reports) == ["RegistersToy", "builtin-mappings", "named", "reference-target"]
    assert host.names("targets") == ["reference", "toy"] and host.names("workloads") == ["scale"]
    assert assert_loaded(host, "RegistersToy").registered == {"targets": ("toy",)}
    from tensorforge.api import run_prediction

    assert run_prediction(host, "toy", ["scale_small"]).workloads[0].flops == 10


def test_fresh_host_with_entry_points_is_the_installed_set_plus_yours():
    host = fresh_host(RegistersToy, entry_points=True)
    assert set(PluginHost().reports) | {"RegistersToy"} == set(host.reports)
    assert "reference" not in host.names("targets")


def test_assert_loaded_names_what_is_wrong():
    host = fresh_host(
        (
            "bad",
            type("Bad", (), {"tensorforge_register_targets": staticmethod(hookimpl(lambda register: register("toy")))}),
        )
    )
    with pytest.raises(PluginCheckError, match=r"^plugin 'bad' is broken: plugin 'bad' registered a str as a target"):
        assert_loaded(host, "bad")
    with pytest.raises(
        PluginCheckError,
        match=r"^plugin 'nope' is not loaded; loaded: bad, builtin-mappings, "
        r"reference-target$",
    ):
        assert_loaded(host, "nope")


# -- check_mapping_strategy ----------------------------------------------------------------------


def _gemm(m=1000, n=700, k=300):
    e = 2
    return MatmulProblem(
        batch=1,
        m=m,
        n=n,
        k=k,
        math_mode="bf16",
        a_elem_bytes=e,
        b_elem_bytes=e,
        c_elem_bytes=e,
        a=Tensor("A", m * k * e),
        b=Tensor("B", k * n * e),
        c=Tensor("C", m * n * e),
    )


def _machine():
    from tensorforge.bound.mappings.base import Machine

    return Machine(
        units=132,
        unit_sram_bytes=228 * 1024,
        unit_sram_bytes_per_s=1e13,
        cache_bytes=50 << 20,
        cache_bytes_per_s=1e14,
        dram_bytes_per_s=4.8e12,
        compute={"bf16": 1e15, "fp32": 6e13},
    )


def test_check_mapping_strategy_passes_the_shipped_strategies():
    from tensorforge.bound.mappings.matmul import TiledMatmul, VectorMatmul

    choices = check_mapping_strategy(TiledMatmul(), _gemm(), _machine())
    assert [c.search for c in choices] == ["exhaustive", "relaxation", "relaxation", "relaxation", "relaxation"]
    assert check_mapping_strategy(VectorMatmul(), _gemm(), _machine())[0].search == "exhaustive"


def test_check_mapping_strategy_names_an_unsound_search():
    from tensorforge.bound.mappings.matmul import TiledMatmul

    class FirstN(TiledMatmul):  # the best of the first N, as if it were the minimum
        def explore(self, problem, machine, residency):
            evaluated = self.evaluate(problem, machine, residency, self.candidates(problem, machine))
            return attrs.evolve(evaluated.choice(int(evaluated.order[0])), search="exhaustive")

    with pytest.raises(PluginCheckError, match="'tiled-matmul': lowering the limit from 1000 to 64 raised the bound"):
        check_mapping_strategy(FirstN(), _gemm(), _machine())

    class Unlabelled(MappingStrategy):
        name = "odd"
        problem_types = (MatmulProblem,)

        def explore(self, problem, machine, residency):
            return attrs.evolve(
                finish(
                    self.name,
                    tile={},
                    split=1,
                    tiles=1,
                    concurrent=1,
                    waves=1,
                    traffic={},
                    compute_s=1.0,
                    memory_terms={"dram": 0.5},
                    candidates=1,
                ),
                search="guessed",
            )

    with pytest.raises(PluginCheckError, match="'odd': search 'guessed' is not one of"):
        check_mapping_strategy(Unlabelled(), _gemm(), _machine())
