"""Every Core hook spec is documented and exercised here, through a plugin that implements it."""

import inspect
import json
import re
from pathlib import Path

import attrs
import click
import pytest
from click.testing import CliRunner

from tensorforge import hookspecs
from tensorforge.api import run_prediction
from tensorforge.bound.mappings.base import MappingStrategy, finish
from tensorforge.cli.main import make_cli
from tensorforge.errors import TensorForgeError
from tensorforge.hardware.target import MemoryLevel, OperatingPoint, PEArray, Target
from tensorforge.hookspecs import hookimpl
from tensorforge.host.plugin_host import PluginHost, PluginReport
from tensorforge.testing import command_names
from tensorforge.workloads.kinds import WorkloadKind
from tensorforge.workloads.problems import Operator, StreamProblem, Tensor

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

KNOWN_HOOKS = {
    "tensorforge_register_workloads",
    "tensorforge_register_targets",
    "tensorforge_register_mappings",
    "tensorforge_add_commands",
    "tensorforge_plugin_reports",
}


def _spec_functions():
    """(module, name, function) for every function marked as a hook spec."""
    marker = f"{hookspecs.PROJECT}_spec"
    return [
        (module, name, fn)
        for module in hookspecs.SPEC_MODULES
        for name, fn in inspect.getmembers(module, inspect.isfunction)
        if hasattr(fn, marker)
    ]


def host_with(*plugins, load_entry_points=True) -> PluginHost:
    return PluginHost(load_entry_points=load_entry_points, extra_plugins=tuple((p.PLUGIN_NAME, p) for p in plugins))


# -- the specs themselves ----------------------------------------------------------------------


def test_the_plugin_manager_knows_exactly_the_documented_hooks():
    pm = PluginHost(load_entry_points=False).pm
    with_spec = {name for name, caller in vars(pm.hook).items() if getattr(caller, "spec", None)}
    assert with_spec == KNOWN_HOOKS
    assert {name for _, name, _ in _spec_functions()} == KNOWN_HOOKS


@pytest.mark.parametrize("module, name, fn", _spec_functions(), ids=lambda v: getattr(v, "__name__", ""))
def test_each_hook_spec_has_a_docstring_for_plugin_authors(module, name, fn):
    doc = inspect.getdoc(fn)
    assert doc and len(doc) > 80, f"{module.__name__}.{name} needs a docstring"
    # the docstring says what to return, and names every argument
    assert "return" in doc.lower()
    for arg in inspect.signature(fn).parameters:
        assert f"``{arg}``" in doc or arg in doc


def test_each_hook_is_exercised_by_a_core_test():
    """A hook nobody tests is a hook nobody knows works: each is implemented by a plugin in
    some tests/test_core_*.py (a `def <hook>(`, as a plugin author writes it)."""
    sources = "\n".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.glob("test_core_*.py"))
    for hook in KNOWN_HOOKS:
        assert re.search(rf"\bdef {hook}\(", sources), hook


def test_hookimpl_and_hookspec_markers_belong_to_the_core_project():
    assert hookspecs.PROJECT == hookspecs.ENTRY_POINT_GROUP == "tensorforge"
    assert hookspecs.hookimpl.project_name == hookspecs.hookspec.project_name == "tensorforge"


# -- the three registration hooks, through one plugin ------------------------------------------


@attrs.frozen
class ScaleParams:
    n: int = attrs.field(metadata={"min": 1})


@attrs.frozen
class ConstProblem:
    """A problem type only the test's own mapping strategy knows."""

    seconds: float
    math_mode: str = "fp32"
    flops: float = 0.0

    def reads(self):
        return ()

    def writes(self):
        return ()


class Scale(WorkloadKind):
    name = "scale"
    description = "y = a * x, streamed"
    params_type = ScaleParams
    presets = {"scale_small": {"n": 1000}}
    default_suite = ("scale_small",)

    def operators(self, p):
        return (
            Operator(
                "scale",
                StreamProblem(
                    flops=float(p.n), read_tensors=(Tensor("x", 4 * p.n),), write_tensors=(Tensor("y", 4 * p.n),)
                ),
            ),
            Operator("fixed", ConstProblem(seconds=1e-6)),
        )


class ConstMapping(MappingStrategy):
    name = "const"
    problem_types = (ConstProblem,)

    def explore(self, problem, machine, residency):
        return finish(
            self.name,
            tile={},
            split=1,
            tiles=1,
            concurrent=1,
            waves=1,
            traffic={},
            compute_s=problem.seconds,
            memory_terms={},
            candidates=1,
        )


TOY = Target(
    name="toy-4pe",
    description="four processing elements",
    pe_array=PEArray(4, "PE", {"fp32": 16}),
    sram=(MemoryLevel("smem", 16 * 1024, "per_unit"),),
    dram_capacity_bytes=1 << 30,
    operating_points=(OperatingPoint("base", 1000, 4e9),),
    default_operating_point="base",
)


class RegistersAll:
    """A plugin implementing all three registration hooks."""

    PLUGIN_NAME = "registers-all"

    @staticmethod
    @hookimpl
    def tensorforge_register_workloads(register):
        register(Scale())

    @staticmethod
    @hookimpl
    def tensorforge_register_targets(register):
        register(TOY)

    @staticmethod
    @hookimpl
    def tensorforge_register_mappings(register):
        register(ConstMapping())


def test_registration_hooks_register_a_workload_a_target_and_a_mapping():
    host = host_with(RegistersAll, load_entry_points=False)
    assert host.broken() == []
    assert host.reports["registers-all"].registered == {
        "workloads": ("scale",),
        "targets": ("toy-4pe",),
        "mappings": ("const",),
    }
    assert host.reports["registers-all"].hooks == (
        "tensorforge_register_mappings",
        "tensorforge_register_targets",
        "tensorforge_register_workloads",
    )
    assert host.reports["registers-all"].distribution is None


def test_what_the_registration_hooks_registered_predicts_with_the_builtin_mappings():
    host = host_with(RegistersAll)
    assert "scale_small" in host.default_suite()
    pred = run_prediction(host, "toy-4pe", ["scale_small", "scale:n=10"])
    assert pred.workload("scale:n=10").flops == 10.0
    scale = pred.workload("scale_small")
    assert scale is not None
    stream, fixed = scale.operators
    # streaming: 1000 flops at 4 PE * 16 flop/clk * 1 GHz = 64e9 FLOP/s; 8000 bytes at 4 GB/s.
    assert stream.mapping.strategy == "streaming"
    assert stream.compute_s == 1000 / 64e9
    assert stream.memory_s == 8000 / 4e9
    # the test's own strategy timed the problem type only it knows
    assert fixed.mapping.strategy == "const" and fixed.latency_s == 1e-6
    assert scale.latency_s == 8000 / 4e9 + 1e-6


# -- tensorforge_add_commands ------------------------------------------------------------------


class AddsCommands:
    PLUGIN_NAME = "adds-commands"

    @staticmethod
    @hookimpl
    def tensorforge_add_commands(cli):
        @click.command("hello")
        @click.option("--name", default="world")
        @click.pass_obj
        def hello(state, name):
            """Greet, and count the installed targets (proves the host is shared)."""
            click.echo(f"hello {name}; targets: {', '.join(state.host.names('targets'))}")

        @click.command("fail")
        def fail():
            """Fail the way a user's mistake fails."""
            raise TensorForgeError("fail: the plugin's command found a bad input")

        cli.add_command(hello)
        cli.add_command(fail)


class AddCommandsRaises:
    PLUGIN_NAME = "add-commands-raises"

    @staticmethod
    @hookimpl
    def tensorforge_add_commands(cli):
        raise RuntimeError("click too old")


def test_add_commands_adds_a_command_the_cli_runs():
    cli = make_cli(lambda: host_with(AddsCommands))
    assert {"hello", "fail", "predict", "list-plugins"} <= command_names(cli)
    result = CliRunner().invoke(cli, ["hello", "--name", "forge"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("hello forge; targets: ")
    assert "rtx3050-laptop" in result.stdout
    help_text = CliRunner().invoke(cli, ["--help"]).stdout
    assert re.search(r"^\s+hello\s+Greet, and count", help_text, re.MULTILINE)
    row = [l for l in CliRunner().invoke(cli, ["list-plugins"]).stdout.splitlines() if l.startswith("adds-commands")]
    assert len(row) == 1 and "add_commands" in row[0]


def test_a_plugin_command_error_is_one_line_and_exit_2():
    cli = make_cli(lambda: host_with(AddsCommands))
    result = CliRunner().invoke(cli, ["fail"])
    assert result.exit_code == 2
    assert result.stderr == "error: fail: the plugin's command found a bad input\n"
    assert result.stdout == ""


def test_add_commands_that_raises_marks_that_plugin_and_the_cli_still_works():
    host = host_with(AddCommandsRaises, AddsCommands)
    cli = make_cli(lambda: host)
    assert "hello" in command_names(cli)  # the commands are collected: the hooks ran
    assert host.reports["add-commands-raises"].error == "tensorforge_add_commands raised RuntimeError: click too old"
    assert host.reports["adds-commands"].error is None
    assert CliRunner().invoke(cli, ["hello"]).exit_code == 0
    result = CliRunner().invoke(cli, ["predict", "-t", "rtx3050-laptop", "-w", "gemm_tiny"])
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        "warning: plugin 'add-commands-raises' is not loaded: "
        "tensorforge_add_commands raised RuntimeError: click too old"
    ]


# -- tensorforge_plugin_reports ----------------------------------------------------------------

OPS_REPORT = PluginReport(
    name="zz-measure-backend",
    side="ops",
    distribution="tf-measure",
    version="9.9.1",
    module="tf_measure.backend",
    hooks=("ops_register_backends",),
    registered={"backends": ("fake-cuda",)},
)


class ReportsOps:
    PLUGIN_NAME = "reports-ops"

    @staticmethod
    @hookimpl
    def tensorforge_plugin_reports():
        return [OPS_REPORT, "not a report: ignored"]


class ReportsNone:
    PLUGIN_NAME = "reports-none"

    @staticmethod
    @hookimpl
    def tensorforge_plugin_reports():
        return None


class ReportsRaise:
    PLUGIN_NAME = "reports-raise"

    @staticmethod
    @hookimpl
    def tensorforge_plugin_reports():
        raise OSError("ops registry unreadable")


def test_plugin_reports_are_listed_by_list_plugins():
    host = host_with(ReportsOps, ReportsNone)
    assert OPS_REPORT in host.all_reports()
    assert "not a report: ignored" not in host.all_reports()
    cli = make_cli(lambda: host)
    result = CliRunner().invoke(cli, ["list-plugins"])
    assert result.exit_code == 0
    (row,) = [l for l in result.stdout.splitlines() if l.startswith("zz-measure-backend")]
    assert row.split()[:4] == ["zz-measure-backend", "ops", "tf-measure", "9.9.1"]
    assert "ops_register_backends" in row and "backends: fake-cuda" in row
    data = json.loads(CliRunner().invoke(cli, ["list-plugins", "--json"]).stdout)
    (entry,) = [r for r in data if r["name"] == "zz-measure-backend"]
    assert entry == {
        "name": "zz-measure-backend",
        "side": "ops",
        "distribution": "tf-measure",
        "version": "9.9.1",
        "module": "tf_measure.backend",
        "hooks": ["ops_register_backends"],
        "registered": {"backends": ["fake-cuda"]},
        "error": None,
        "warnings": [],
    }
    # core rows first, then ops rows; each side sorted by name
    keys = [(r["side"], r["name"]) for r in data]
    assert keys == sorted(keys)


def test_plugin_reports_that_raise_are_listed_with_the_error():
    host = host_with(ReportsRaise, ReportsOps)
    reports = {r.name: r for r in host.all_reports()}
    failed = reports["reports-raise:reports"]
    assert (failed.side, failed.module) == ("ops", "reports-raise")
    assert failed.error == "tensorforge_plugin_reports raised OSError: ops registry unreadable"
    assert OPS_REPORT in reports.values()  # the others still report
    result = CliRunner().invoke(make_cli(lambda: host), ["list-plugins"])
    assert result.exit_code == 0
    (row,) = [l for l in result.stdout.splitlines() if l.startswith("reports-raise:reports")]
    assert "ERROR: tensorforge_plugin_reports raised OSError: ops registry unreadable" in row


def test_a_math_mode_the_target_lacks_is_one_clear_error():
    # toy-4pe declares only fp32: a bf16 GEMM cannot be timed on it (before: a KeyError).
    host = host_with(RegistersAll)
    with pytest.raises(TensorForgeError) as info:
        run_prediction(host, "toy-4pe", ["gemm_tiny"])
    assert str(info.value) == (
        "workload 'gemm_tiny': target 'toy-4pe' declares no bf16 rate (operator 'matmul'); known modes: fp32"
    )
