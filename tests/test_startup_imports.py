"""The first commands a user types answer at once (issue 35: `--help`, `predict` and refusals
within 0.3 s, benchmarks/startup.py times them): each runs without what it does not need.

* `--help`, a refusal of `-o`, a refusal of an unknown target and `targets list` import none of
  numpy, torch, cattrs, the estimate or importlib.metadata (plugin discovery reads the entry
  points itself: tensorforge/host/entry_points.py), nor any module of the measuring side beyond
  its plugin face (tensorforge_measure.core_plugin, whose commands load on first use) and, for
  `run`, the command's own modules, nor any of the measuring side's plugins (torch builders,
  backends);
* predicting one GEMM imports neither numpy nor cattrs: its two searches run in plain Python
  (tensorforge/bound/without_numpy.py), and what it predicts is byte for byte what numpy's
  searches predict in this process, where numpy is loaded;
* the shipped coefficients read without cattrs are the ones cattrs reads.

Each command line runs in a fresh interpreter (this one has imported everything by now) and is
judged by the modules it holds at the end, not by timing (a shared machine's timings vary)."""

import json
import subprocess
import sys

import numpy  # noqa: F401 - this process predicts with numpy's searches (without_numpy.take)
import pytest
from click.testing import CliRunner

from tensorforge.estimate import shipped
from tensorforge.estimate.coefficients import coefficients_from_data, coefficients_from_shipped

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

HEAVY = ("numpy", "torch", "mlflow", "pynvml", "matplotlib", "scipy", "cattrs", "importlib.metadata")
# the measuring side's face towards the Core: the package and the hooks that list its commands
MEASURE_FACE = {"tensorforge_measure", "tensorforge_measure.core_plugin"}
# what `run` reaches before it refuses an existing -o: its command module, the home and the rules
# of its destinations (the Ops side's plugins, its host and the signing key come after)
RUN_REACHES = {"commands", "commands.run", "home", "run", "run.destinations"}
GEMM = "gemm:m=4096,n=4096,k=4096"

PROBE = """
import json, sys
from tensorforge.cli.main import main

try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"exit": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _run(tmp_path, *argv: str) -> tuple[int, str, list[str], str]:
    """(exit status, standard output, modules held at the end, standard error) of `argv`."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    *lines, last = proc.stderr.splitlines()
    seen = json.loads(last)
    return seen["exit"], proc.stdout, seen["modules"], "\n".join(lines)


def _heavy(modules: list[str], allowed=frozenset()) -> list[str]:
    ops_plugins = {ep.value.split(":")[0].split(".")[0] for ep in _measure_entry_points()}
    return [
        m
        for m in modules
        if any(m == h or m.startswith(h + ".") for h in HEAVY)
        or (m.startswith("tensorforge_measure") and m not in MEASURE_FACE and m not in allowed)
        or (m.split(".")[0] in ops_plugins and m.split(".")[0] not in _core_plugin_packages())
    ]


def _measure_entry_points():
    from tensorforge.host.entry_points import entry_points

    return entry_points("tensorforge_measure")


def _core_plugin_packages() -> set[str]:
    """Packages whose Core-side plugin every command line loads (tf_cpu serves both sides)."""
    from tensorforge.host.entry_points import entry_points

    return {ep.value.split(":")[0].split(".")[0] for ep in entry_points("tensorforge")}


def test_help_and_the_refusals_import_nothing_heavy(tmp_path):
    existing = tmp_path / "prediction.json"
    existing.write_text("{}", encoding="utf-8")
    code, out, modules, err = _run(tmp_path, "--help")
    assert code in (None, 0) and "Usage:" in out and _heavy(modules) == []
    for argv in (["predict", "-t", "h200", "-o", str(existing)], ["run", "-t", "rtx3050-laptop", "-o", str(existing)]):
        code, out, modules, err = _run(tmp_path, *argv)
        assert code == 2 and "already exists" in err, err
        allowed = {f"tensorforge_measure.{m}" for m in RUN_REACHES} if argv[0] == "run" else frozenset()
        assert _heavy(modules, allowed) == [], argv
    assert existing.read_text(encoding="utf-8") == "{}"
    code, out, modules, err = _run(tmp_path, "predict", "-t", "no-such-target")
    assert code == 2 and "unknown target 'no-such-target'" in err and _heavy(modules) == []
    code, out, modules, err = _run(tmp_path, "targets", "list")
    assert code == 0 and "h200" in out and _heavy(modules) == []
    # the modules behind the Ops commands' names, and the plugins of the measuring side, are a
    # real list here: the check above would pass vacuously without them
    assert {"tf_gemm", "tf_cuda"} <= {ep.value.split(".")[0] for ep in _measure_entry_points()}


def test_one_gemm_is_predicted_without_numpy_as_numpy_predicts_it(tmp_path, cli):
    code, out, modules, err = _run(tmp_path, "predict", "-t", "h200", "-w", GEMM)
    assert code == 0 and "exhaustive" in out, err
    assert _heavy(modules) == [] and "tensorforge.bound.mappings.matmul_python" in modules
    for target in ("h200", "host-cpu"):
        code, out, modules, err = _run(tmp_path, "predict", "-t", target, "-w", GEMM, "--json")
        assert code == 0 and "numpy" not in modules, err  # (cattrs writes the JSON)
        assert "numpy" in sys.modules  # ... while this process predicts with numpy's searches
        here = CliRunner().invoke(cli, ["predict", "-t", target, "-w", GEMM, "--json"])
        assert here.exit_code == 0 and json.loads(out) == json.loads(here.stdout) and out == here.stdout


@pytest.mark.parametrize("family", sorted(shipped.shipped()))
def test_the_shipped_coefficients_read_without_cattrs_are_cattrs_own(family):
    data = json.loads(shipped.DATA.read_text(encoding="utf-8"))[family]
    plain, structured = coefficients_from_shipped(data, family), coefficients_from_data(data, family)
    assert repr(plain) == repr(structured) and plain == structured


def test_shipped_coefficients_that_cattrs_would_refuse_are_refused_in_its_words():
    data = json.loads(shipped.DATA.read_text(encoding="utf-8"))["nvidia-sm90"]
    broken = {**data, "gemm": {**data["gemm"], "stream_efficiency": 2.5}}
    with pytest.raises(Exception) as plain:
        coefficients_from_shipped(broken, "shipped x")
    with pytest.raises(Exception) as structured:
        coefficients_from_data(broken, "shipped x")
    assert str(plain.value) == str(structured.value) and "shipped x" in str(plain.value)
