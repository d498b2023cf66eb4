"""The one dependency rule: the Core (tensorforge) and the Core sides of the plugins import
none of torch, pynvml, mlflow or tensorforge_measure — not at module level, not lazily.

Checked twice: dynamically, in a fresh interpreter where those packages cannot be imported at
all (a meta-path finder raises ImportError for them), and statically, on the source text."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FORBIDDEN = ("torch", "pynvml", "mlflow", "tensorforge_measure")
PLUGIN_CORE_MODULES = (
    "tf_gemm.plugin",
    "tf_conv2d.plugin",
    "tf_transformer.plugin",
    "tf_vector.plugin",
    "tf_rtx3050.plugin",
    "tf_cpu.plugin",
)

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

# Runs in the child interpreter. Prints one JSON document on its last line.
CHILD = textwrap.dedent(r'''
    import importlib, importlib.abc, json, pkgutil, sys

    FORBIDDEN = %(forbidden)r
    attempts = []

    class Forbid(importlib.abc.MetaPathFinder):
        """Makes the forbidden packages (and their submodules) unimportable."""
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in FORBIDDEN:
                attempts.append(name)
                raise ImportError(f"{name} is forbidden in the Core")
            return None

    sys.meta_path.insert(0, Forbid())

    # The blocker works: torch is installed in this venv, yet cannot be imported now.
    try:
        import torch  # noqa: F401
        blocked = False
    except ImportError:
        blocked = True
    attempts.clear()

    import tensorforge
    errors = []
    imported = ["tensorforge"]
    for info in pkgutil.walk_packages(tensorforge.__path__, "tensorforge.",
                                      onerror=lambda name: errors.append(name)):
        try:
            importlib.import_module(info.name)
            imported.append(info.name)
        except Exception as exc:
            errors.append(f"{info.name}: {type(exc).__name__}: {exc}")
    for name in %(plugins)r + ["tf_transformer.hf_config"]:
        importlib.import_module(name)
        imported.append(name)

    import_attempts = list(attempts)

    from tensorforge.host.plugin_host import PluginHost
    from tensorforge.api import run_prediction
    host = PluginHost()
    pred = run_prediction(host, "rtx3050-laptop")             # the whole default suite
    # ... and the CLI, in-process, as a user would drive it.
    from click.testing import CliRunner
    from tensorforge.cli.main import make_cli
    cli_result = CliRunner().invoke(make_cli(), ["predict", "-t", "rtx3050-laptop", "-w",
                                                 "transformer_decode", "--json"])

    leaked = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
    print(json.dumps({
        "blocked": blocked, "imported": imported, "errors": errors,
        "import_attempts": import_attempts, "attempts": attempts, "leaked": leaked,
        "broken": {r.name: [r.module, r.error] for r in host.broken()},
        "loaded": sorted(r.name for r in host.reports.values() if not r.error),
        "plugin_files": sorted({getattr(mod, "__file__", None) or "" for name, mod in list(sys.modules.items())
                                if name.split(".")[0] in %(plugin_packages)r}),
        "workloads": [w.name for w in pred.workloads],
        "latencies": [w.latency_s for w in pred.workloads],
        "cli_exit": cli_result.exit_code,
        "cli_workloads": [w["name"] for w in json.loads(cli_result.stdout)["workloads"]]
                         if cli_result.exit_code == 0 else cli_result.output,
    }))
''') % {
    "forbidden": FORBIDDEN,
    "plugins": list(PLUGIN_CORE_MODULES),
    "plugin_packages": tuple(m.split(".")[0] for m in PLUGIN_CORE_MODULES),
}


@pytest.fixture(scope="module")
def child_report():
    env = {k: v for k, v in os.environ.items() if k not in ("TENSORFORGE_PLUGINS", "TENSORFORGE_DISABLE", "PYTHONPATH")}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, cwd=str(REPO), env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_forbidden_packages_really_are_blocked_in_the_child(child_report):
    # Without this the rest would pass vacuously.
    assert child_report["blocked"] is True


def test_every_core_module_and_plugin_core_side_imports_without_them(child_report):
    assert child_report["errors"] == []
    imported = set(child_report["imported"])
    # The walk really covered the package, its subpackages and the plugins' Core sides.
    expected = {
        "tensorforge",
        "tensorforge.cli.main",
        "tensorforge.host.plugin_host",
        "tensorforge.bound.model",
        "tensorforge.files.serialize",
        "tensorforge.workloads.suite",
        "tensorforge.workloads.params",
        "tensorforge.hookspecs",
        "tensorforge.bound.mappings.base",
        "tensorforge.bound.mappings.matmul",
        "tensorforge.bound.mappings.attention",
        "tensorforge.bound.mappings.streaming",
        "tensorforge.bound.mappings.plugin",
        *PLUGIN_CORE_MODULES,
    }
    assert expected <= imported
    on_disk = {
        ".".join(p.relative_to(REPO).with_suffix("").parts).replace(".__init__", "")
        for p in (REPO / "tensorforge").rglob("*.py")
    }
    assert on_disk <= imported


def _forbidden_root(module: str) -> bool:
    return module.split(".")[0] in FORBIDDEN


def test_no_forbidden_import_attempted_or_left_in_sys_modules(child_report):
    # Importing the Core and the plugins' Core sides tries none of them, not even a guarded
    # `try: import torch` (that would be a lazy dependency).
    assert child_report["import_attempts"] == []
    # Later attempts may only come from the plugin host loading an entry point that lives in
    # a forbidden package (the Ops side registers into the Core group); that plugin is then
    # listed as broken, and nothing forbidden stays behind.
    ops_side = {module.split(":")[0] for module, _ in child_report["broken"].values()}
    assert all(_forbidden_root(m) for m in ops_side)
    assert all(a in ops_side or any(m.startswith(a + ".") for m in ops_side) for a in child_report["attempts"])
    assert child_report["leaked"] == []


def test_plugin_host_and_prediction_work_in_isolation(child_report):
    # Only plugins living in a forbidden package (the Ops side) may fail here, and they fail
    # cleanly with the ImportError, listed against the plugin.
    for name, (module, error) in child_report["broken"].items():
        assert _forbidden_root(module), (name, module, error)
        assert error.startswith("failed to load: ImportError: ") and "forbidden" in error
    assert {"builtin-mappings", "gemm", "conv2d", "transformer", "rtx3050"} <= set(child_report["loaded"])
    assert child_report["workloads"] == [
        "conv_resnet50_3x3",
        "conv_resnet50_1x1",
        "conv_depthwise_3x3",
        "gemm_large_square",
        "gemm_tiny",
        "gemm_skinny_decode",
        "gemm_square_tf32",
        "gemm_batched_fp16",
        "transformer_prefill",
        "transformer_decode",
    ]
    assert all(isinstance(t, float) and t > 0 for t in child_report["latencies"])
    assert child_report["cli_exit"] == 0
    assert child_report["cli_workloads"] == ["transformer_decode"]


IMPORT_TEXT = re.compile(
    r"^\s*(?:import|from)\s+(?:{n})\b"  # import torch / from torch.x import
    r"|\bimport\s+[\w., ]*\b(?:{n})\b"  # import os, torch
    r"|(?:import_module|__import__)\(\s*['\"](?:{n})\b".format(  # importlib.import_module("torch")
        n="|".join(FORBIDDEN)
    ),
    re.MULTILINE,
)


def test_static_no_forbidden_import_text(child_report):
    # The Core package, all of it; of the plugins, every module their Core side loaded (their
    # PyTorch builders are separate modules under the Ops group and may import torch).
    plugin_files = [Path(f) for f in child_report["plugin_files"]]
    assert {f.name for f in plugin_files} >= {"__init__.py", "plugin.py", "hf_config.py"}
    assert not any("torch" in f.name for f in plugin_files)
    files = sorted((REPO / "tensorforge").rglob("*.py")) + plugin_files
    assert len(files) >= 30
    offenders = [
        f"{path}:{text[: m.start()].count(chr(10)) + 1}: {m.group(0).strip()}"
        for path in files
        for text in [path.read_text(encoding="utf-8")]
        for m in IMPORT_TEXT.finditer(text)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "line",
    [
        "import torch",
        "  from torch.nn import functional",
        "import os, pynvml",
        "from mlflow import log_metric",
        "importlib.import_module('tensorforge_measure.measure.timing')",
        "import tensorforge_measure",
    ],
)
def test_static_pattern_catches_the_forms_it_must(line):
    assert IMPORT_TEXT.search(line)


@pytest.mark.parametrize(
    "line",
    [
        "import tensorforge",
        "# it never imports torch",
        "from tensorforge.ops_report import x",
        "import torchvisionish_not",
    ],
)
def test_static_pattern_ignores_innocent_text(line):
    # 'torchvisionish_not' would be a different package; \b keeps 'torch' from matching it.
    assert not IMPORT_TEXT.search(line)
