"""One broken plugin never takes the others down: it is listed with its error, the rest work.

Every throwaway plugin here is installed for real: a `<dist>-0.1.dist-info` folder with an
entry_points.txt in group 'tensorforge' on sys.path (the `make_plugin` fixture), so the host
finds it through importlib.metadata exactly as it finds a stranger's plugin."""

import json
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from tensorforge.api import run_prediction
from tensorforge.cli.main import make_cli
from tensorforge.errors import TensorForgeError
from tensorforge.host.plugin_host import PluginHost
from tensorforge.testing import command_names

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

REAL = ("builtin-mappings", "conv2d", "gemm", "rtx3050", "transformer")

HEADER = "from tensorforge.hookspecs import hookimpl\n"

TOY_TARGET = (
    HEADER
    + """
from tensorforge.hardware.target import MemoryLevel, OperatingPoint, PEArray, Target

def toy(name, units=4, flops=None, sram=None, default="base"):
    return Target(
        name=name, description="toy", dram_capacity_bytes=1 << 30,
        pe_array=PEArray(units, "PE", flops or {"fp32": 64, "bf16": 256}),
        sram=sram if sram is not None else (MemoryLevel("smem", 64 * 1024, "per_unit", 64),),
        operating_points=(OperatingPoint("base", 1000, 100e9),), default_operating_point=default)
"""
)


def assert_real_plugins_work(host: PluginHost) -> None:
    """The real plugins are loaded, intact, and a prediction over all three kinds succeeds."""
    for name in REAL:
        assert host.reports[name].error is None, host.reports[name]
    assert host.target("rtx3050-laptop").pe_array.units == 16
    pred = run_prediction(host, "rtx3050-laptop", ["gemm_tiny", "conv_resnet50_1x1", "transformer_decode"])
    assert [w.name for w in pred.workloads] == ["gemm_tiny", "conv_resnet50_1x1", "transformer_decode"]
    assert all(w.latency_s > 0 for w in pred.workloads)


def broken_only(host: PluginHost, name: str) -> str:
    """`name` is the one broken plugin, and what it registered is gone; returns its error."""
    assert [r.name for r in host.broken()] == [name]
    report = host.reports[name]
    assert report.registered == {}
    return report.error


# -- import-time failures ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, error",
    [
        (
            'raise RuntimeError("kaboom: libfoo missing\\nsecond line of detail")',
            "failed to load: RuntimeError: kaboom: libfoo missing",
        ),
        (
            "import tfcore_no_such_module_xyz",
            "failed to load: ModuleNotFoundError: No module named 'tfcore_no_such_module_xyz'",
        ),
        ("import sys\nsys.exit(3)", "failed to load: SystemExit: 3"),
        ("def broken(:\n    pass", "failed to load: SyntaxError: "),
    ],
)
def test_plugin_whose_import_raises(make_plugin, source, error):
    make_plugin("import-fails", source, dist="tf-import-fails")
    host = PluginHost()
    got = broken_only(host, "import-fails")
    assert got.startswith(error) if error.endswith(": ") else got == error
    assert "\n" not in got
    report = host.reports["import-fails"]
    assert (report.distribution, report.version, report.side) == ("tf-import-fails", "0.1", "core")
    assert_real_plugins_work(host)


def test_misspelled_hook_name(make_plugin):
    make_plugin(
        "misspelt",
        HEADER
        + """
@hookimpl
def tensorforge_register_workload(register):   # missing the final 's'
    raise AssertionError("never called")
""",
    )
    host = PluginHost()
    assert broken_only(host, "misspelt") == (
        "unknown hook 'tensorforge_register_workload' (did you mean 'tensorforge_register_workloads'?)"
    )
    assert host.reports["misspelt"].hooks == ("tensorforge_register_workload",)
    assert host.pm.get_plugin("misspelt") is None  # unregistered, so check_pending passes
    assert_real_plugins_work(host)


def test_misspelled_hook_rejects_the_whole_plugin(make_plugin):
    make_plugin(
        "half-right",
        TOY_TARGET
        + """
@hookimpl
def tensorforge_register_targets(register):
    register(toy("toy-half"))

@hookimpl
def tensorforge_register_mapping(register):
    pass
""",
    )
    host = PluginHost()
    assert broken_only(host, "half-right") == (
        "unknown hook 'tensorforge_register_mapping' (did you mean 'tensorforge_register_mappings'?)"
    )
    assert "toy-half" not in host.names("targets")
    assert_real_plugins_work(host)


def test_hookimpl_with_an_argument_not_in_the_spec(make_plugin):
    make_plugin(
        "extra-arg",
        HEADER
        + """
@hookimpl
def tensorforge_register_targets(register, registry):
    pass
""",
    )
    host = PluginHost()
    error = broken_only(host, "extra-arg")
    assert error.startswith(
        "failed to register: PluginValidationError: Plugin 'extra-arg' for hook 'tensorforge_register_targets'"
    )
    # the culprit argument is named, on the same single line
    assert "registry" in error and "\n" not in error
    assert_real_plugins_work(host)


@pytest.mark.parametrize(
    "hook, value, error",
    [
        (
            "tensorforge_register_targets",
            "{'name': 'rtx3050-laptop'}",
            "plugin 'wrong-type' registered a dict as a target; expected tensorforge.hardware.target.Target",
        ),
        (
            "tensorforge_register_workloads",
            "'gemm'",
            "plugin 'wrong-type' registered a str as a workload; expected tensorforge.workloads.kinds.WorkloadKind",
        ),
        (
            "tensorforge_register_mappings",
            "object()",
            "plugin 'wrong-type' registered a object as a mapping; expected tensorforge.bound.mappings.base.MappingStrategy",
        ),
    ],
)
def test_plugin_registers_a_wrong_type(make_plugin, hook, value, error):
    make_plugin(
        "wrong-type",
        HEADER
        + f"""
@hookimpl
def {hook}(register):
    register({value})
""",
    )
    host = PluginHost()
    assert broken_only(host, "wrong-type") == error
    assert_real_plugins_work(host)


IMPOSTOR = (
    TOY_TARGET
    + """
@hookimpl
def tensorforge_register_targets(register):
    register(toy("rtx3050-laptop", units=1))
"""
)


@pytest.mark.parametrize(
    "entry_point",
    ["zz-dup-target", "aa-dup-target"],
    ids=["sorting after the shipped plugin", "sorting before the shipped plugin"],
)
def test_a_shipped_name_is_reserved_whatever_the_entry_point_order(make_plugin, entry_point):
    make_plugin(entry_point, IMPOSTOR)
    host = PluginHost()
    assert broken_only(host, entry_point) == (
        f"plugin {entry_point!r} (distribution tfcore-test-{entry_point} 0.1) registered target "
        "'rtx3050-laptop', a name reserved by the shipped plugin 'rtx3050' (distribution tf-rtx3050 0.1.0)"
    )
    assert_real_plugins_work(host)  # the real 16-SM target, never the impostor's 1 unit


def test_a_name_two_third_party_plugins_register_is_used_by_neither(make_plugin):
    source = (
        TOY_TARGET
        + """
@hookimpl
def tensorforge_register_targets(register):
    register(toy("toy-contested", units=%d))
"""
    )
    make_plugin("contest-b", source % 2)
    make_plugin("contest-a", source % 1)
    host = PluginHost()
    message = (
        "target 'toy-contested' is registered by both plugin 'contest-a' (distribution "
        "tfcore-test-contest-a 0.1) and plugin 'contest-b' (distribution tfcore-test-contest-b 0.1): "
        "neither is used; uninstall one, or leave one out with --disable-plugins"
    )
    assert {r.name: r.error for r in host.broken()} == {"contest-a": message, "contest-b": message}
    assert "toy-contested" not in host.names("targets")
    with pytest.raises(TensorForgeError, match="unknown target 'toy-contested'.*neither is used"):
        host.target("toy-contested")
    assert_real_plugins_work(host)


def test_a_plugin_registering_one_name_twice_is_its_own_error(make_plugin):
    make_plugin(
        "twice",
        TOY_TARGET
        + """
@hookimpl
def tensorforge_register_targets(register):
    register(toy("toy-twice"))
    register(toy("toy-twice"))
""",
    )
    host = PluginHost()
    assert broken_only(host, "twice") == "plugin 'twice' registered target 'toy-twice' twice"


def test_duplicate_preset_name(make_plugin):
    make_plugin(
        "zz-dup-preset",
        HEADER
        + """
import attrs
from tensorforge.workloads.kinds import WorkloadKind

@attrs.frozen
class P:
    m: int = 1

class Other(WorkloadKind):
    name = "other"
    params_type = P
    presets = {"other_ok": {}, "gemm_tiny": {}}
    default_suite = ("other_ok",)

@hookimpl
def tensorforge_register_workloads(register):
    register(Other())
""",
    )
    host = PluginHost()
    assert broken_only(host, "zz-dup-preset") == (
        "plugin 'zz-dup-preset' (distribution tfcore-test-zz-dup-preset 0.1) registered preset 'gemm_tiny', "
        "a name reserved by the shipped plugin 'gemm' (distribution tf-gemm 0.1.0)"
    )
    assert "other" not in host.names("workloads") and "other_ok" not in host.preset_names()
    assert host.preset("gemm_tiny")[0].name == "gemm"
    assert_real_plugins_work(host)


def test_registration_hook_that_raises(make_plugin):
    make_plugin(
        "raises",
        TOY_TARGET
        + """
@hookimpl
def tensorforge_register_targets(register):
    register(toy("toy-before-the-crash"))      # half a plugin is worse than none: dropped
    raise ValueError("cannot parse my board table")
""",
    )
    host = PluginHost()
    assert broken_only(host, "raises") == (
        "tensorforge_register_targets raised ValueError: cannot parse my board table"
    )
    assert "toy-before-the-crash" not in host.names("targets")
    assert_real_plugins_work(host)


@pytest.mark.parametrize(
    "call, error",
    [
        ('toy("toy-zero", units=0)', "target 'toy-zero': pe_array.units must be >= 1, got 0"),
        (
            'toy("toy-mode", flops={"fp32": 64, "fp4": 1})',
            "target 'toy-mode': unknown math mode 'fp4' in flops_per_clock",
        ),
        (
            'toy("toy-nofp32", flops={"bf16": 64})',
            "target 'toy-nofp32': flops_per_clock must declare fp32 (vector work runs there)",
        ),
        ('toy("toy-rate", flops={"fp32": 0})', "target 'toy-rate': flops_per_clock[fp32] must be > 0, got 0"),
        ('toy("toy-nosmem", sram=())', "target 'toy-nosmem': needs a per_unit SRAM level to stage tiles"),
        ('toy("toy-op", default="turbo")', "target 'toy-op': default operating point 'turbo' is not declared"),
        ('toy("Toy-Upper")', None),
    ],
)
def test_target_failing_validation(make_plugin, call, error):
    make_plugin(
        "bad-target",
        TOY_TARGET
        + f"""
@hookimpl
def tensorforge_register_targets(register):
    register({call})
""",
    )
    host = PluginHost()
    got = broken_only(host, "bad-target")
    if error is None:  # names must be lowercase
        assert got == (
            "plugin 'bad-target' registered a target with invalid name 'Toy-Upper' "
            "(must be a non-empty lowercase string)"
        )
    else:
        assert got == f"plugin 'bad-target': {error}"
    assert_real_plugins_work(host)


def test_a_valid_third_party_target_works_next_to_the_real_one(make_plugin):
    make_plugin(
        "good-target",
        TOY_TARGET
        + """
@hookimpl
def tensorforge_register_targets(register):
    register(toy("toy-good"))
""",
        dist="tf-good-target",
    )
    host = PluginHost()
    assert host.broken() == []
    report = host.reports["good-target"]
    assert (report.distribution, report.version, report.registered) == (
        "tf-good-target",
        "0.1",
        {"targets": ("toy-good",)},
    )
    pred = run_prediction(host, "toy-good", ["gemm_tiny"])
    assert pred.target == "toy-good" and pred.workloads[0].latency_s > 0
    assert_real_plugins_work(host)


def test_unknown_target_error_mentions_the_broken_plugin(make_plugin):
    make_plugin(
        "zero-units",
        TOY_TARGET
        + """
@hookimpl
def tensorforge_register_targets(register):
    register(toy("toy-zero", units=0))
""",
    )
    host = PluginHost()
    with pytest.raises(TensorForgeError) as info:
        host.target("toy-zero")
    assert str(info.value).startswith("unknown target 'toy-zero'")
    assert re.search(r"; known: [^;]*\brtx3050-laptop\b", str(info.value))
    assert str(info.value).endswith(
        "; broken plugins: zero-units (plugin 'zero-units': target 'toy-zero': pe_array.units must be >= 1, got 0)"
    )


# -- selecting plugins through the environment -------------------------------------------------

BOOM = 'raise RuntimeError("kaboom")'


def test_tensorforge_plugins_loads_only_the_listed_ones(make_plugin, monkeypatch):
    make_plugin("boom", BOOM)
    monkeypatch.setenv("TENSORFORGE_PLUGINS", " gemm, rtx3050 ,builtin-mappings")
    host = PluginHost()
    assert sorted(host.reports) == ["builtin-mappings", "gemm", "rtx3050"]
    assert host.broken() == []  # 'boom' was never imported
    assert host.names("workloads") == ["gemm"]
    assert run_prediction(host, "rtx3050-laptop").workloads[0].name == "gemm_large_square"
    with pytest.raises(TensorForgeError, match=r"^unknown workload or preset 'conv_resnet50_3x3'"):
        run_prediction(host, "rtx3050-laptop", ["conv_resnet50_3x3"])


def test_tensorforge_disable_blocks_the_listed_ones(make_plugin, monkeypatch):
    make_plugin("boom", BOOM)
    monkeypatch.setenv("TENSORFORGE_DISABLE", "boom, conv2d")
    host = PluginHost()
    assert "boom" not in host.reports and "conv2d" not in host.reports
    assert host.broken() == []
    assert {"builtin-mappings", "gemm", "rtx3050", "transformer"} <= set(host.reports)
    assert not any(name.startswith("conv") for name in host.default_suite())
    assert run_prediction(host, "rtx3050-laptop", ["gemm_tiny", "transformer_decode"]).workloads


def test_without_the_env_vars_the_broken_plugin_is_loaded_and_listed(make_plugin):
    make_plugin("boom", BOOM)
    host = PluginHost()
    assert broken_only(host, "boom") == "failed to load: RuntimeError: kaboom"
    assert_real_plugins_work(host)


# -- through the command line ------------------------------------------------------------------


def test_cli_list_plugins_shows_the_error(make_plugin):
    make_plugin("boom", BOOM, dist="tf-boom")
    result = CliRunner().invoke(make_cli(), ["list-plugins"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[2:]}
    assert "ERROR: failed to load: RuntimeError: kaboom" in rows["boom"]
    assert "tf-boom 0.1" in rows["boom"]
    assert "targets: rtx3050-laptop" in rows["rtx3050"]
    assert "ERROR" not in "".join(rows[name] for name in REAL)

    result = CliRunner().invoke(make_cli(), ["list-plugins", "--json"])
    reports = {r["name"]: r for r in json.loads(result.stdout)}
    assert reports["boom"]["error"] == "failed to load: RuntimeError: kaboom"
    assert reports["boom"]["distribution"] == "tf-boom" and reports["boom"]["registered"] == {}
    assert reports["gemm"]["error"] is None


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_cli_predict_warns_in_one_line_and_succeeds(make_plugin, extra):
    make_plugin("boom", BOOM)
    result = CliRunner().invoke(make_cli(), ["predict", "-t", "rtx3050-laptop", "-w", "gemm_tiny"] + extra)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == ["warning: plugin 'boom' is not loaded: failed to load: RuntimeError: kaboom"]
    if extra:
        assert json.loads(result.stdout)["workloads"][0]["name"] == "gemm_tiny"  # stdout stays clean
    else:
        assert result.stdout.startswith("PREDICTED") and "gemm_tiny" in result.stdout


def test_console_script_predict_warns_in_one_line_and_succeeds(make_plugin, tensorforge_exe, tmp_path):
    make_plugin("boom", BOOM)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if str(tmp_path) in p))
    proc = subprocess.run(
        [str(tensorforge_exe), "predict", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == ["warning: plugin 'boom' is not loaded: failed to load: RuntimeError: kaboom"]
    assert json.loads(proc.stdout)["workloads"][0]["name"] == "gemm_tiny"


def test_a_plugin_that_failed_registration_adds_no_command_and_no_reports(make_plugin):
    # Half a plugin is worse than none: once its registration fails, its other hooks are gone too.
    make_plugin(
        "half-plugin",
        TOY_TARGET
        + """
import click
from tensorforge.host.plugin_host import PluginReport

@hookimpl
def tensorforge_register_targets(register):
    register(toy("toy-zero", units=0))

@hookimpl
def tensorforge_add_commands(cli):
    cli.add_command(click.Command("half-command", callback=lambda: click.echo("ran")))

@hookimpl
def tensorforge_plugin_reports():
    return [PluginReport("half-ops", "ops", None, None, "x")]
""",
    )
    host = PluginHost()
    assert broken_only(host, "half-plugin").startswith("plugin 'half-plugin': target 'toy-zero'")
    cli = make_cli(lambda: host)
    assert "half-command" not in command_names(cli)
    assert "half-ops" not in {r.name for r in host.all_reports()}
    assert CliRunner().invoke(cli, ["half-command"]).exit_code == 2  # no such command
    assert_real_plugins_work(host)


def test_cli_respects_the_selection_env_vars(make_plugin, monkeypatch):
    make_plugin("boom", BOOM)
    # (set before make_cli: the factory loads the plugins, to let them add commands)
    monkeypatch.setenv("TENSORFORGE_DISABLE", "boom,transformer")
    result = CliRunner().invoke(make_cli(), ["list-plugins", "--json"])
    core = {r["name"] for r in json.loads(result.stdout) if r["side"] == "core"}
    assert "boom" not in core and "transformer" not in core and {"gemm", "rtx3050"} <= core
    result = CliRunner().invoke(make_cli(), ["predict", "-t", "rtx3050-laptop", "-w", "gemm_tiny"])
    assert result.exit_code == 0 and result.stderr == ""
    monkeypatch.setenv("TENSORFORGE_PLUGINS", "gemm,rtx3050,builtin-mappings")
    result = CliRunner().invoke(make_cli(), ["list-plugins", "--json"])
    assert [r["name"] for r in json.loads(result.stdout)] == ["builtin-mappings", "gemm", "rtx3050"]


# -- plugin code that fails while predicting, not while registering ----------------------------

BAD_KIND = (
    HEADER
    + """
import attrs
from tensorforge.workloads.problems import MatmulProblem, Operator, Tensor
from tensorforge.workloads.kinds import WorkloadKind

@attrs.frozen
class P:
    m: int = attrs.field(default=8, metadata={{"min": 1}})

def good_op():
    t = Tensor("t", 64)
    return Operator("mm", MatmulProblem(1, 4, 4, 4, "fp32", 4, 4, 4, t, Tensor("u", 64), Tensor("v", 64)))

class Bad(WorkloadKind):
    name = "badkind"
    params_type = P
    presets = {{"badkind_one": {{}}}}

    def operators(self, params):
        {body}

@hookimpl
def tensorforge_register_workloads(register):
    register(Bad())
"""
)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "body, error",
    [
        ('raise RuntimeError("shape table missing")', "operators() raised RuntimeError: shape table missing"),
        ("return None", "operators() returned a NoneType; expected a tuple of tensorforge.workloads.problems.Operator"),
        ('return "mm"', "operators() returned a str; expected a tuple"),
        ('return ["mm"]', "operators() item 0: a str, not a tensorforge.workloads.problems.Operator"),
        ('return (Operator("mm", good_op().problem, count=0),)', "operator 'mm': count must be an integer >= 1, got 0"),
        ('return (Operator("mm", object()),)', "operator 'mm': its problem object is unusable"),
        (
            'import attrs; return (attrs.evolve(good_op(), problem=attrs.evolve(good_op().problem, m=float("nan"))),)',
            "operator 'mm': flops must be a finite number >= 0, got nan",
        ),
    ],
    ids=[
        "operators raises",
        "returns None",
        "returns a string",
        "returns strings",
        "count 0",
        "a problem without reads",
        "NaN flops",
    ],
)
def test_a_workload_kind_that_fails_while_predicting_is_named_in_one_line(make_plugin, body, error):
    make_plugin("bad-kind", BAD_KIND.format(body=body), dist="tf-bad-kind")
    result = CliRunner().invoke(make_cli(), ["predict", "-t", "rtx3050-laptop", "-w", "badkind_one"])
    assert result.exit_code == 2, result.output
    last = result.output.strip().splitlines()[-1]
    module = [m for m in sys.modules if m.startswith("tfcore_plugin_bad_kind")][-1]
    assert last.startswith(f"error: workload kind 'badkind' ({module}): ") and error in last, last
    assert "Traceback" not in result.output
    good = CliRunner().invoke(make_cli(), ["predict", "-t", "rtx3050-laptop", "-w", "gemm_tiny"])
    assert good.exit_code == 0  # the other plugins still predict


def test_every_distribution_under_plugins_is_declared_shipped():
    # the reserved names come from the packaging; a plugin added to plugins/ and left out of
    # pyproject's tensorforge_shipped group would lose its protection silently
    import tomllib
    from pathlib import Path

    from tensorforge.host.plugin_host import shipped_distributions

    root = Path(__file__).resolve().parent.parent
    names = {tomllib.loads(p.read_text())["project"]["name"] for p in root.glob("plugins/*/pyproject.toml")}
    assert names and names <= shipped_distributions()


def test_only_tensorforge_itself_declares_shipped_distributions(monkeypatch):
    import types

    from tensorforge.host import plugin_host

    def entry(name, dist):
        return types.SimpleNamespace(name=name, dist=types.SimpleNamespace(name=dist))

    fake = [entry("tf-gemm", "tensorforge"), entry("evil-targets", "evil-targets")]
    monkeypatch.setattr(
        plugin_host.entry_points, "entry_points", lambda group: fake if group == "tensorforge_shipped" else []
    )
    plugin_host.shipped_distributions.cache_clear()
    try:
        assert plugin_host.shipped_distributions() == {"tensorforge", "tf-gemm"}
    finally:
        plugin_host.shipped_distributions.cache_clear()
