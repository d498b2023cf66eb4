"""Plugin selection for reproducibility and debugging: `--plugins` / `--disable-plugins`
(TENSORFORGE_PLUGINS / TENSORFORGE_DISABLE), a trace of every plugin load and hook call
(`--trace-hooks`, TENSORFORGE_TRACE), and slow imports named in a warning
(TENSORFORGE_SLOW_IMPORT_S)."""

import json
import os
import re
import sys

import pytest
from click.testing import CliRunner

from tensorforge.cli.main import main, make_cli
from tensorforge.errors import TensorForgeError
from tensorforge.host.options import PluginOptions
from tensorforge.host.plugin_host import PluginHost

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

BOOM = 'raise RuntimeError("kaboom")'
CORE = ["builtin-mappings", "gemm", "rtx3050"]


def marker_plugin(make_plugin, tmp_path, name="marker"):
    """A plugin whose import leaves a file behind: proof of whether it was imported at all."""
    marker = tmp_path / f"{name}-imported"
    make_plugin(name, f"open({str(marker)!r}, 'w').close()\n" + BOOM)
    return marker


# -- selection -----------------------------------------------------------------------------------


def test_options_from_the_environment():
    env = {
        "TENSORFORGE_PLUGINS": " gemm, rtx3050 ,",
        "TENSORFORGE_DISABLE": "conv2d",
        "TENSORFORGE_TRACE": "1",
        "TENSORFORGE_SLOW_IMPORT_S": "0.5",
    }
    options = PluginOptions.from_env(env)
    assert options == PluginOptions(frozenset({"gemm", "rtx3050"}), frozenset({"conv2d"}), True, 0.5)
    assert options.selects("gemm") and not options.selects("conv2d") and not options.selects("h200")
    assert PluginOptions.from_env({}) == PluginOptions()
    assert not PluginOptions.from_env({"TENSORFORGE_TRACE": "0"}).trace
    for bad in ("abc", "-1", "nan", "inf"):
        with pytest.raises(
            TensorForgeError, match=r"^TENSORFORGE_SLOW_IMPORT_S='.*': expected a number of seconds >= 0$"
        ):
            PluginOptions.from_env({"TENSORFORGE_SLOW_IMPORT_S": bad})


def test_disabled_plugin_is_never_imported_from_the_console(make_plugin, tmp_path, capsys):
    marker = marker_plugin(make_plugin, tmp_path)
    main(["--disable-plugins", "marker", "predict", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "--json"])
    captured = capsys.readouterr()
    assert captured.err == "" and json.loads(captured.out)["workloads"][0]["name"] == "gemm_tiny"
    assert not marker.exists()
    main(["--plugins=" + ",".join(CORE), "list-plugins", "--json"])
    assert [r["name"] for r in json.loads(capsys.readouterr().out)] == CORE
    assert not marker.exists()
    assert "TENSORFORGE_PLUGINS" not in os.environ  # the options held for one command
    main(["list-plugins", "--json"])  # without the options it is imported
    assert marker.exists()


def test_root_options_under_click_runner_reload_the_plugins(make_plugin):
    make_plugin("boom", BOOM)
    cli = make_cli()
    result = CliRunner().invoke(
        cli, ["--disable-plugins", "boom", "predict", "-t", "rtx3050-laptop", "-w", "gemm_tiny"]
    )
    assert (result.exit_code, result.stderr) == (0, "")
    result = CliRunner().invoke(make_cli(), ["--plugins", ",".join(CORE), "list-plugins", "--json"])
    assert [r["name"] for r in json.loads(result.stdout)] == CORE
    # the Ops plugin is not selected, so its commands are gone with it
    result = CliRunner().invoke(make_cli(), ["--plugins", ",".join(CORE), "run", "-t", "rtx3050-laptop"])
    assert result.exit_code == 2 and "No such command 'run'" in result.stderr


def test_root_options_belong_before_the_subcommand(capsys):
    with pytest.raises(SystemExit) as info:
        main(["predict", "--plugins", "gemm", "-t", "rtx3050-laptop"])
    assert info.value.code == 2
    assert capsys.readouterr().err.startswith("error: No such option '--plugins'")


def test_a_selected_name_no_plugin_has_is_a_warning_with_a_suggestion(capsys):
    main(["--disable-plugins", "gemn", "predict", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "--json"])
    assert capsys.readouterr().err == (
        "warning: TENSORFORGE_DISABLE names 'gemn', which no installed plugin has (did you mean 'gemm'?)\n"
    )
    main(["--plugins", ",".join(CORE + ["torch-cuda", "nope"]), "list-plugins"])
    assert capsys.readouterr().err == (
        "warning: TENSORFORGE_PLUGINS names 'nope', which no installed plugin has (did you mean 'ops'?)\n"
    )


def test_help_documents_the_root_options():
    text = CliRunner().invoke(make_cli(), ["--help"]).stdout
    for option, variable in (
        ("--plugins", "TENSORFORGE_PLUGINS"),
        ("--disable-plugins", "TENSORFORGE_DISABLE"),
        ("--trace-hooks", "TENSORFORGE_TRACE"),
    ):
        assert option in text and variable in " ".join(text.split())


# -- trace ---------------------------------------------------------------------------------------

TRACE_LINE = re.compile(r"^trace: (core|ops) (load|call|hook) \S+ .*\d+\.\d\d ms( -> .*)?$")


def test_trace_covers_loads_and_every_direct_hook_call(make_plugin, capsys):
    make_plugin("boom", BOOM)
    make_plugin(
        "raises",
        """
from tensorforge.hookspecs import hookimpl

@hookimpl
def tensorforge_register_targets(register):
    raise ValueError("no board")
""",
    )
    main(["--trace-hooks", "predict", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "--json"])
    err = capsys.readouterr().err.splitlines()
    trace = [line for line in err if line.startswith("trace: ")]
    assert all(TRACE_LINE.match(line) for line in trace), trace
    text = "\n".join(trace)
    assert re.search(r"^trace: core load gemm \(tf_gemm\.plugin\) \d+\.\d\d ms$", text, re.M)
    assert re.search(
        r"^trace: core load boom \(tfcore_plugin_boom_\d+\) \d+\.\d\d ms -> failed to load: "
        r"RuntimeError: kaboom$",
        text,
        re.M,
    )
    assert re.search(
        r"^trace: core call gemm tensorforge_register_workloads \d+\.\d\d ms -> registered gemm$", text, re.M
    )
    assert re.search(
        r"^trace: core call raises tensorforge_register_targets \d+\.\d\d ms -> raised ValueError$", text, re.M
    )
    assert re.search(
        r"^trace: core call builtin-mappings tensorforge_register_mappings .* -> registered "
        r"tiled-matmul, flash-attention, streaming, vector-matmul, collective$",
        text,
        re.M,
    )
    assert re.search(r"^trace: core call ops tensorforge_add_commands ", text, re.M)
    # the broken plugins are still reported as usual, after the trace
    assert [line for line in err if not line.startswith("trace: ")] == [
        "warning: plugin 'boom' is not loaded: failed to load: RuntimeError: kaboom",
        "warning: plugin 'raises' is not loaded: tensorforge_register_targets raised ValueError: no board",
    ]


def test_trace_reaches_the_ops_side_and_pluggy_dispatch(monkeypatch, capsys):
    monkeypatch.setenv("TENSORFORGE_TRACE", "1")
    host = PluginHost()
    host.all_reports()  # the Ops side loads its own plugins
    host.pm.hook.tensorforge_plugin_reports(host=host)  # a call through pluggy itself
    text = capsys.readouterr().err
    assert re.search(r"^trace: ops load torch-cuda \(tf_cuda\.plugin\) ", text, re.M)
    assert re.search(
        r"^trace: ops call gemm-torch tensorforge_measure_register_builders \d+\.\d\d ms -> "
        r"registered gemm@\S+$",
        text,
        re.M,
    )
    assert re.search(r"^trace: core call ops tensorforge_plugin_reports \d+\.\d\d ms$", text, re.M)
    assert re.search(r"^trace: core hook tensorforge_plugin_reports \[ops\] \d+\.\d\d ms$", text, re.M)


def test_no_trace_by_default(capsys):
    PluginHost().all_reports()
    assert capsys.readouterr().err == ""


# -- slow imports --------------------------------------------------------------------------------

SLOW = """
import time
time.sleep(0.05)
from tensorforge.hookspecs import hookimpl

@hookimpl
def tensorforge_register_workloads(register):
    pass
"""


def test_a_slow_import_is_named_in_one_warning_line_and_still_works(make_plugin, monkeypatch, capsys):
    module = make_plugin("sluggish", SLOW, dist="tf-sluggish")
    monkeypatch.setenv("TENSORFORGE_SLOW_IMPORT_S", "0.03")
    host = PluginHost()
    del sys.modules[module]  # each command below imports it afresh, as a process would
    report = host.reports["sluggish"]
    assert report.error is None and host.broken() == []
    assert re.fullmatch(
        r"slow to import: 0\.\d\d s \(threshold 0\.03 s, TENSORFORGE_SLOW_IMPORT_S\)", report.warnings[0]
    )
    main(["list-plugins"])
    captured = capsys.readouterr()
    lines = [l for l in captured.err.splitlines() if "'sluggish'" in l]
    assert len(lines) == 1 and re.fullmatch(
        r"warning: plugin 'sluggish' is slow to import: 0\.\d\d s "
        r"\(threshold 0\.03 s, TENSORFORGE_SLOW_IMPORT_S\)",
        lines[0],
    )
    (row,) = [l for l in captured.out.splitlines() if l.startswith("sluggish ")]
    assert "tf-sluggish 0.1" in row and "WARNING: slow to import" in row and "ERROR" not in row
    del sys.modules[module]
    main(["list-plugins", "--json"])
    data = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    (warning,) = data["sluggish"]["warnings"]
    assert warning.startswith("slow to import: ") and warning.endswith("(threshold 0.03 s, TENSORFORGE_SLOW_IMPORT_S)")
    assert data["sluggish"]["error"] is None and data["gemm"]["warnings"] == []


def test_under_the_default_threshold_nothing_is_said(make_plugin, capsys):
    make_plugin("sluggish", SLOW)
    main(["list-plugins"])
    assert capsys.readouterr().err == ""


def test_a_bad_threshold_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv("TENSORFORGE_SLOW_IMPORT_S", "soon")
    with pytest.raises(SystemExit) as info:
        main(["list-plugins"])
    assert info.value.code == 2
    assert capsys.readouterr().err == "error: TENSORFORGE_SLOW_IMPORT_S='soon': expected a number of seconds >= 0\n"
