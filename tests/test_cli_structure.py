"""The command line, plainly: every command is module-level and importable, the options
several commands share are declared once, plugin selection travels as one value (never
through the environment), the Ops side's plugins load once per process, the Ops side uses the
Core only through tensorforge.api, every command has its own typed module, and no function of
the command modules is longer than 60 lines."""

import ast
import json
import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import tensorforge.cli.main
import tensorforge.hookspecs
from tensorforge.cli.main import make_cli
from tensorforge.cli.options import CliState, core_host
from tensorforge.host.options import PluginOptions
from tensorforge.host.plugin_host import PluginHost

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

REPO = Path(__file__).resolve().parent.parent
MAX_FUNCTION_LINES = 60


def _sources(package: str):
    return sorted((REPO / package).rglob("*.py"))


# -- module-level commands ---------------------------------------------------------------------


# The command modules of both sides: the root group, one module per command, and the Ops side's
# hook implementations that add its commands.
COMMAND_MODULES = (
    [REPO / "tensorforge" / "cli" / "main.py"]
    + sorted((REPO / "tensorforge" / "cli" / "commands").glob("*.py"))
    + sorted((REPO / "tensorforge_measure" / "commands").glob("*.py"))
    + [REPO / "tensorforge_measure" / "core_plugin.py"]
)
CORE_COMMANDS = {"list-plugins": "list_plugins", "predict": "predict", "targets": "targets", "workloads": "workloads"}
OPS_COMMANDS = {
    "run": "run",
    "calibrate": "calibrate",
    "verify": "verify",
    "export": "export",
    "gate": "gate",
    "rightsize": "rightsize",
    "report": "report",
    "evaluate": "evaluate",
}


def _functions(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_function_of_the_command_modules_is_longer_than_60_lines():
    """Counted from the docstring (or first statement) to the end: a command's parameter list
    mirrors its options, one line each, and is declared by its decorators."""
    lengths = {
        f"{path.relative_to(REPO)}:{node.name}": node.end_lineno - node.body[0].lineno + 1
        for path in COMMAND_MODULES
        for node in _functions(path)
    }
    assert len(lengths) > 20, "too few functions found: the check would pass vacuously"
    too_long = {name: n for name, n in lengths.items() if n > MAX_FUNCTION_LINES}
    assert too_long == {}


def test_every_command_function_is_fully_typed():
    untyped = [
        f"{path.relative_to(REPO)}:{node.name}"
        for path in COMMAND_MODULES
        for node in _functions(path)
        if node.returns is None
        or any(
            a.annotation is None and a.arg not in ("self", "cls")
            for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        )
    ]
    assert untyped == []


def test_one_module_per_command(host):
    """Every command of the root lives in its own module: the Core's under tensorforge/cli/commands/,
    the Ops side's under tensorforge_measure/commands/."""
    commands = make_cli(lambda: host).commands | CliState(PluginOptions(), lambda: host).plugin_commands()
    # a LazyCommand stands for its real command until it runs
    real = {name: getattr(command, "real", command) for name, command in commands.items()}
    where = {name: real[name].callback.__module__ for name in {**CORE_COMMANDS, **OPS_COMMANDS}}
    assert where == {
        **{name: f"tensorforge.cli.commands.{module}" for name, module in CORE_COMMANDS.items()},
        **{name: f"tensorforge_measure.commands.{module}" for name, module in OPS_COMMANDS.items()},
    }


def test_every_core_command_is_module_level_and_runs_on_its_own(host):
    """A command imported from tensorforge.cli.main runs without the root group: it needs only the
    invocation's plugins (CliState) as click's context object."""
    state = CliState(PluginOptions(), lambda: host)
    for name in ("list_plugins", "predict", "targets", "workloads"):
        assert isinstance(getattr(tensorforge.cli.main, name), click.Command), name
    result = CliRunner().invoke(tensorforge.cli.main.predict, ["-t", "h200", "-w", "gemm_tiny", "--json"], obj=state)
    assert result.exit_code == 0, result.output
    assert [w["name"] for w in json.loads(result.stdout)["workloads"]] == ["gemm_tiny"]
    result = CliRunner().invoke(tensorforge.cli.main.targets, ["list"], obj=state)
    assert result.exit_code == 0 and "h200" in result.stdout
    # the same command objects serve every root that make_cli builds
    assert make_cli().commands["predict"] is make_cli(lambda: host).commands["predict"] is tensorforge.cli.main.predict


def test_the_ops_commands_are_module_level_too():
    from tensorforge_measure.commands import calibrate, evaluate, export, gate, report, rightsize, run, verify

    for command in (
        run.run,
        calibrate.calibrate,
        verify.verify,
        export.export_command,
        gate.gate,
        rightsize.rightsize,
        report.report,
        evaluate.evaluate_command,
    ):
        assert isinstance(command, click.Command)


def test_core_host_outside_a_command_line_is_a_clear_error():
    with pytest.raises(RuntimeError, match="only available inside the tensorforge command line"):
        with click.Context(click.Command("x")):
            core_host()


def test_a_plugin_cannot_replace_a_core_command(host):
    class Hijack:
        @staticmethod
        @tensorforge.hookspecs.hookimpl
        def tensorforge_add_commands(cli):
            cli.add_command(click.Command("predict", callback=lambda: click.echo("hijacked")))

    hijacking = PluginHost(extra_plugins=(("hijack", Hijack),))
    result = CliRunner().invoke(make_cli(lambda: hijacking), ["predict", "-t", "h200", "-w", "gemm_tiny"])
    assert result.exit_code == 0 and "hijacked" not in result.stdout and "gemm_tiny" in result.stdout


# -- options declared once ---------------------------------------------------------------------

# option -> the parameter name the shared declaration gives it
SHARED = {"--target": "target_name", "--workload": "specs", "--suite": "suites", "--operating-point": "operating_point"}


def _declarations(option: str):
    """Where `option` is declared as a click option for the same parameter (a string literal
    in a call of an `option`/`Option` function), across the Core and the Ops side. (`report
    --workload` names the one workload a report explains: another option, another name.)"""
    found = []
    for path in _sources("tensorforge") + _sources("tensorforge_measure"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "option",
                "Option",
            ):
                names = [a.value for a in node.args if isinstance(a, ast.Constant)]
                names += [
                    v.value for a in node.args if isinstance(a, ast.List) for v in a.elts if isinstance(v, ast.Constant)
                ]
                dest = [n for n in names if not n.startswith("-")]
                if option in names and dest in ([], [SHARED[option]]):
                    found.append(path.relative_to(REPO).as_posix())
    return found


@pytest.mark.parametrize("option", SHARED)
def test_shared_options_are_declared_once(option):
    assert _declarations(option) == ["tensorforge/cli/options.py"]


def _params(cli, *path):
    ctx = click.Context(cli)
    command = cli
    for name in path:
        command = command.get_command(ctx, name)
    return {p.opts[0]: p for p in command.params if isinstance(p, click.Option)}


def test_predict_run_and_rightsize_explain_the_shared_options_alike(host):
    cli = make_cli(lambda: host)
    predict, run, rightsize = (_params(cli, name) for name in ("predict", "run", "rightsize"))
    for option in ("--target", "--suite", "--operating-point"):
        assert predict[option].help == run[option].help, option
    assert predict["--suite"].help == rightsize["--suite"].help
    assert "--target" not in rightsize  # it takes --targets, a list, instead
    for params in (predict, run, rightsize):
        assert params["--workload"].help.startswith("Preset name, preset with overrides")
        assert (params["--workload"].name, params["--suite"].name) == ("specs", "suites")


# -- plugin selection: one value, never the environment ----------------------------------------


def test_root_options_never_touch_the_environment(monkeypatch):
    before = dict(os.environ)
    seen = {}

    def spy(**kwargs):
        host = PluginHost(**kwargs)
        seen["options"] = host.options
        return host

    monkeypatch.setattr(tensorforge.cli.options, "PluginHost", spy)
    result = CliRunner().invoke(
        make_cli(),
        ["--plugins", "gemm,rtx3050,builtin-mappings", "--disable-plugins", "gemm", "--trace-hooks", "workloads"],
    )
    assert result.exit_code == 0, result.output
    assert dict(os.environ) == before
    assert seen["options"] == PluginOptions(
        only=frozenset({"gemm", "rtx3050", "builtin-mappings"}), disabled=frozenset({"gemm"}), trace=True
    )
    assert result.stdout == ""  # gemm is disabled: no workload kinds at all


def test_command_line_options_override_the_environment(monkeypatch):
    monkeypatch.setenv("TENSORFORGE_DISABLE", "gemm")
    monkeypatch.setenv("TENSORFORGE_SLOW_IMPORT_S", "5")
    env = PluginOptions.from_env()
    assert env.overridden() == env
    assert env.overridden(disable="conv2d") == PluginOptions(disabled=frozenset({"conv2d"}), slow_import_s=5.0)
    assert env.overridden(only="a, b", trace=True) == PluginOptions(
        only=frozenset({"a", "b"}), disabled=frozenset({"gemm"}), trace=True, slow_import_s=5.0
    )
    result = CliRunner().invoke(make_cli(), ["workloads"])
    assert "gemm:" not in result.stdout and "conv2d:" in result.stdout
    result = CliRunner().invoke(make_cli(), ["--disable-plugins", "conv2d", "workloads"])
    assert "gemm:" in result.stdout and "conv2d:" not in result.stdout


def test_the_ops_side_loads_the_core_selection():
    from tensorforge_measure.host import ops_host

    core = PluginHost(options=PluginOptions(disabled=frozenset({"gemm-torch"})))
    ops = ops_host(core)
    assert ops.options == core.options
    assert "gemm-torch" not in ops.reports and "conv2d-torch" in ops.reports


# -- the Ops side loads once -------------------------------------------------------------------


@pytest.fixture
def count_ops_hosts(monkeypatch):
    from tensorforge_measure.host import OpsHost

    built = []
    original = OpsHost.__init__

    def counting(self, *args, **kwargs):
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(OpsHost, "__init__", counting)
    return built


def test_run_loads_the_ops_plugins_once(count_ops_hosts, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no device: PREDICTED only, quickly
    out = tmp_path / "cap.json"
    result = CliRunner().invoke(
        make_cli(),
        [
            "run",
            "-t",
            "rtx3050-laptop",
            "-w",
            "gemm_tiny",
            "--backend",
            "torch-cuda",
            "--cooldown",
            "0",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    # `run` needs the Ops host for its backends and again for the capture's provenance
    assert len(count_ops_hosts) == 1
    plugins = {p["name"]: p for p in json.loads(out.read_text(encoding="utf-8"))["provenance"]["plugins"]}
    assert plugins["torch-cuda"]["side"] == "ops"


def test_list_plugins_loads_the_ops_plugins_once(count_ops_hosts):
    result = CliRunner().invoke(make_cli(), ["list-plugins", "--json"])
    assert result.exit_code == 0
    assert len(count_ops_hosts) == 1


def test_one_ops_host_per_core_host():
    from tensorforge_measure.host import ops_host

    core, other = PluginHost(), PluginHost()
    assert ops_host(core) is ops_host(core)
    assert ops_host(other) is not ops_host(core)
    assert {r.name for r in core.all_reports() if r.side == "ops"} == set(ops_host(core).reports)


# -- the Ops side uses the Core's API ----------------------------------------------------------

# tensorforge.host.lazy: the PEP 562 loader both public surfaces share; importing it through
# tensorforge.api would load the whole Core with `import tensorforge_measure`. Likewise
# tensorforge.cli.lazy_command, which core_plugin uses so that a command line does not load the
# whole Core to list the Ops side's commands.
ALLOWED_CORE_MODULES = {
    "tensorforge",
    "tensorforge.api",
    "tensorforge.hookspecs",
    "tensorforge.host.lazy",
    "tensorforge.cli.lazy_command",
}


def test_lazy_commands_summarise_themselves_as_the_real_ones(host):
    """The first sentence main.py and core_plugin give each Core and Ops command is the one its
    help starts with: `tensorforge --help` shows the same line before and after the command's
    module is imported."""
    from tensorforge.cli.main import CORE_COMMANDS
    from tensorforge_measure.core_plugin import COMMANDS

    for command in [c for c in CORE_COMMANDS if hasattr(c, "real")] + list(COMMANDS):
        for limit in (30, 45, 60, 80, 200):
            assert command.get_short_help_str(limit) == command.real.get_short_help_str(limit), command.name


def test_ops_imports_the_core_only_through_its_api():
    reached = []
    for path in _sources("tensorforge_measure"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and node.module
                and node.module.split(".")[0] == "tensorforge"
                and node.module not in ALLOWED_CORE_MODULES
            ):
                reached.append(f"{path.relative_to(REPO)}: from {node.module} import ...")
            if isinstance(node, ast.Import):
                reached += [
                    f"{path.relative_to(REPO)}: import {a.name}"
                    for a in node.names
                    if a.name.split(".")[0] == "tensorforge" and a.name not in ALLOWED_CORE_MODULES
                ]
            if isinstance(node, ast.ImportFrom) and node.module == "tensorforge":
                reached += [
                    f"{path.relative_to(REPO)}: from tensorforge import {a.name}"
                    for a in node.names
                    if a.name != "__version__"
                ]
    assert reached == []


def test_ops_touches_no_private_state_of_the_core_hosts():
    private = ("_registered", "_broken_hint", "_get", "_presets", "_companions")
    touched = [
        f"{path.relative_to(REPO)}:{node.lineno} .{node.attr}"
        for path in _sources("tensorforge_measure")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr in private
    ]
    assert touched == []


def test_the_api_lists_what_it_exports():
    import tensorforge.api as api

    assert sorted(api.__all__) == sorted(set(api.__all__))
    for name in api.__all__:
        assert hasattr(api, name), name
