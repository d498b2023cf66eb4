"""A stranger's plugins, installed for real: the three packages under tests/plugins_external
(a new workload kind, a new hardware target, and a deliberately broken plugin) are built and
installed with pip, then found only through their entry points.

pip installs them into a folder of their own (`--target`), never into this environment, so
the rest of the suite still sees exactly the shipped plugins. Tests put that folder on
sys.path (in-process) or PYTHONPATH (console script) only while they run. Offline: no index,
no dependencies, no build isolation.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from tensorforge.api import run_prediction
from tensorforge.host.plugin_host import PluginHost

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

EXTERNAL = Path(__file__).resolve().parent / "plugins_external"
PACKAGES = ("tf_attention", "tf_edge_npu", "tf_broken_example")
MODULES = ("tf_attention", "tf_edge_npu", "tf_broken_example")
SLEEP = "TF_BROKEN_EXAMPLE_SLEEP_S"  # how slow the broken package's slow entry point is

# Every broken entry point of tf-broken-example and its one-line error.
BROKEN = {
    "broken-extra-argument": "failed to register: PluginValidationError: Plugin 'broken-extra-argument' "
    "for hook 'tensorforge_register_workloads'; hookimpl definition: "
    "tensorforge_register_workloads(register, config); Argument(s) {'config'} "
    "are declared in the hookimpl but can not be found in the hookspec",
    "broken-missing-module": "failed to load: ModuleNotFoundError: No module named 'tf_broken_example_helpers'",
    "broken-misspelled-hook": "unknown hook 'tensorforge_register_target' "
    "(did you mean 'tensorforge_register_targets'?)",
    "broken-raises": "tensorforge_register_targets raised RuntimeError: board table missing",
    "broken-wrong-type": "plugin 'broken-wrong-type' registered a dict as a target; expected tensorforge.hardware.target.Target",
    "rtx3050-impostor": "plugin 'rtx3050-impostor' (distribution tf-broken-example 0.0.1) registered target "
    "'rtx3050-laptop', a name reserved by the shipped plugin 'rtx3050' "
    "(distribution tf-rtx3050 0.1.0)",
}
SHIPPED = ("builtin-mappings", "conv2d", "gemm", "h200", "rtx3050", "transformer")


@pytest.fixture(scope="session")
def external_site(tmp_path_factory) -> Path:
    """Build and install the three packages with pip into a folder of their own. The sources
    are copied first, so the build's scratch files never land in the repository."""
    root = tmp_path_factory.mktemp("external-plugins")
    src = root / "src"
    shutil.copytree(EXTERNAL, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    site = root / "site"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "--quiet",
            "--target",
            str(site),
            *(str(src / p) for p in PACKAGES),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return site


@pytest.fixture
def installed(external_site, monkeypatch):
    """The packages are importable and their entry points visible, for this test only."""
    monkeypatch.syspath_prepend(str(external_site))
    monkeypatch.setenv(SLEEP, "0")
    yield external_site
    for module in MODULES:
        sys.modules.pop(module, None)


def console(external_site, *args, **env):
    """The installed `tensorforge` script with the external packages on PYTHONPATH."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
    environ.update({"PYTHONPATH": str(external_site), SLEEP: "0", **env})
    exe = Path(sys.executable).parent / "tensorforge"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env=environ, timeout=180)


def broken_warnings():
    return [f"warning: plugin {name!r} is not loaded: {error}" for name, error in sorted(BROKEN.items())]


# -- the install ---------------------------------------------------------------------------------


def test_pip_installed_three_distributions_outside_this_environment(external_site):
    dists = {d.metadata["Name"]: d for d in metadata.distributions(path=[str(external_site)])}
    assert sorted(dists) == ["tf-attention", "tf-broken-example", "tf-edge-npu"]
    assert dists["tf-attention"].version == "0.2.0"
    assert {ep.name: ep.value for ep in dists["tf-edge-npu"].entry_points} == {"edge-npu": "tf_edge_npu"}
    assert len([ep for ep in dists["tf-broken-example"].entry_points if ep.group == "tensorforge"]) == 7
    for name in dists:  # the test environment itself is untouched
        with pytest.raises(metadata.PackageNotFoundError):
            metadata.distribution(name)
    assert not list(EXTERNAL.rglob("*.egg-info")) and not list(EXTERNAL.rglob("build"))


# -- in-process ----------------------------------------------------------------------------------


def test_the_host_finds_all_three_and_reports_each_broken_entry_point(installed):
    host = PluginHost()
    attention, npu = host.reports["attention"], host.reports["edge-npu"]
    assert (attention.distribution, attention.version, attention.module, attention.error) == (
        "tf-attention",
        "0.2.0",
        "tf_attention",
        None,
    )
    assert attention.registered == {"workloads": ("attention",)}
    assert (npu.distribution, npu.version, npu.registered) == ("tf-edge-npu", "0.3.1", {"targets": ("edge-npu",)})
    assert {r.name: r.error for r in host.broken()} == BROKEN
    assert all(host.reports[name].distribution == "tf-broken-example" for name in BROKEN)
    # nothing a broken plugin registered survives; the rest of the package works
    assert not {"never-registered", "dict-target", "half-registered"} & set(host.names("targets"))
    assert host.reports["broken-slow-import"].registered == {"targets": ("slow-board",)}
    for name in SHIPPED:
        assert host.reports[name].error is None
    assert host.target("rtx3050-laptop").pe_array.units == 16  # not the impostor's 1


def test_predict_uses_the_external_workload_on_the_external_target(installed):
    host = PluginHost()
    pred = run_prediction(
        host, "edge-npu", ["attention_prefill_4k", "attention:heads=8,q_len=1,kv_len=4096", "gemm_tiny"]
    )
    assert (pred.target, pred.operating_point, pred.clock_mhz) == ("edge-npu", "turbo", 1400)
    prefill, decode, gemm = pred.workloads
    assert prefill.flops == 4.0 * 32 * (4096 * 4097 // 2) * 128  # causal: visible pairs only
    assert prefill.operators[0].mapping.strategy == "flash-attention"
    assert prefill.bottleneck == "compute" and decode.bottleneck == "memory"
    assert pred.ceilings.compute["bf16"] == 8 * 1024 * 1400e6
    assert gemm.latency_s > 0  # shipped kinds work on it too
    # ...and the external kind on a shipped target
    assert run_prediction(host, "h200", ["attention_decode_32k"]).workloads[0].latency_s > 0


def test_a_slow_import_is_a_warning_not_an_error(installed, monkeypatch):
    monkeypatch.setenv(SLEEP, "0.3")
    monkeypatch.setenv("TENSORFORGE_SLOW_IMPORT_S", "0.2")
    report = PluginHost().reports["broken-slow-import"]
    assert report.error is None and report.registered == {"targets": ("slow-board",)}
    (warning,) = report.warnings
    # 0.3 s of sleep, and more on a busy machine (a second or more is still this warning)
    assert re.fullmatch(r"slow to import: \d+\.\d\d s \(threshold 0\.2 s, TENSORFORGE_SLOW_IMPORT_S\)", warning)


def test_the_helpers_pass_for_the_external_plugins(installed):
    import tf_attention
    import tf_edge_npu

    from tensorforge.testing import check_target, check_workload_kind

    check_target(tf_edge_npu.EDGE_NPU)
    predictions = check_workload_kind(tf_attention.Attention(), target=tf_edge_npu.EDGE_NPU)
    assert [p.latency_s > 0 for p in predictions] == [True, True]


# -- the console script --------------------------------------------------------------------------


def test_list_plugins_shows_all_three(external_site):
    proc = console(external_site, "list-plugins", **{SLEEP: "0.5", "TENSORFORGE_SLOW_IMPORT_S": "0.4"})
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[2:]}
    assert "tf-attention 0.2.0" in rows["attention"] and "workloads: attention" in rows["attention"]
    assert "tf-edge-npu 0.3.1" in rows["edge-npu"] and "targets: edge-npu" in rows["edge-npu"]
    for name, error in BROKEN.items():
        assert "tf-broken-example 0.0.1" in rows[name] and rows[name].endswith(f"ERROR: {error}")
    assert re.search(r"targets: slow-board; WARNING: slow to import: \d+\.\d\d s", rows["broken-slow-import"])
    for name in SHIPPED:
        assert "ERROR" not in rows[name]
    # the slow plugin is named in one warning line (a cold start may flag others: only warnings)
    lines = proc.stderr.splitlines()
    assert any(l.startswith("warning: plugin 'broken-slow-import' is slow to import: ") for l in lines)
    assert all(l.startswith("warning: plugin ") and " is slow to import: " in l for l in lines)


def test_predict_uses_the_first_two_and_names_each_broken_one_in_a_line(external_site):
    proc = console(
        external_site,
        "predict",
        "-t",
        "edge-npu",
        "-w",
        "attention_prefill_4k",
        "-w",
        "attention:heads=8,q_len=1,kv_len=1000",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == broken_warnings()
    data = json.loads(proc.stdout)
    assert data["target"] == "edge-npu"
    assert [w["name"] for w in data["workloads"]] == ["attention_prefill_4k", "attention:heads=8,q_len=1,kv_len=1000"]


def test_disabling_the_broken_ones_or_selecting_only_some(external_site):
    disabled = ",".join(sorted(BROKEN))
    proc = console(
        external_site, "--disable-plugins", disabled, "predict", "-t", "edge-npu", "-w", "attention_decode_32k"
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    # list-plugins warns of an import slower than TENSORFORGE_SLOW_IMPORT_S (1 s), which a busy
    # machine can make of any: not what this checks
    proc = console(
        external_site,
        "--plugins",
        "attention,edge-npu,builtin-mappings",
        "list-plugins",
        "--json",
        TENSORFORGE_SLOW_IMPORT_S="600",
    )
    assert proc.returncode == 0 and proc.stderr == ""
    assert [r["name"] for r in json.loads(proc.stdout)] == ["attention", "builtin-mappings", "edge-npu"]


def test_the_plugin_authors_own_tests_pass_against_the_installed_packages(external_site, tmp_path):
    """The recipe docs/plugins.md gives authors (tensorforge.testing and the pytest fixtures)
    works from outside this repository, against the pip-installed packages."""
    for package in ("tf_attention", "tf_edge_npu"):
        shutil.copytree(
            EXTERNAL / package / "tests", tmp_path / package / "tests", ignore=shutil.ignore_patterns("__pycache__")
        )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
    environ.update(PYTHONPATH=str(external_site), **{SLEEP: "0"})
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tf_attention/tests", "tf_edge_npu/tests"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environ,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r"\b8 passed\b", proc.stdout), proc.stdout[-500:]
