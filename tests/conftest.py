"""Shared fixtures, and how the suite is spread over pytest-xdist's workers. No fixture here is
autouse: the Core suite opts in per module, so other suites (Ops) are unaffected."""

import itertools
import os
import shutil
import sys
import textwrap
from pathlib import Path

import attrs
import pytest

from tensorforge.cli.main import make_cli
from tensorforge.host.plugin_host import PluginHost

_counter = itertools.count()

# Sources of the external plugin packages that test_external_plugins.py pip-installs; their own
# tests run inside those packages' installs, not in this session.
collect_ignore = ["plugins_external"]


@pytest.fixture
def clean_plugin_env(monkeypatch):
    """Plugin selection comes from the environment; start every test from none."""
    for name in ("TENSORFORGE_PLUGINS", "TENSORFORGE_DISABLE", "TENSORFORGE_TRACE", "TENSORFORGE_SLOW_IMPORT_S"):
        # setenv first: monkeypatch records only what it changes, and a test (or the CLI's
        # --plugins options) may set the variable later; it must not outlive the test.
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


@pytest.fixture
def make_plugin(tmp_path, monkeypatch):
    """Install a throwaway plugin exactly as a stranger's would be found: a real
    `<dist>-0.1.dist-info` folder whose entry_points.txt names a module in group 'tensorforge',
    on sys.path, so importlib.metadata (and so PluginHost) discovers it.

    make_plugin(entry_point_name, source, dist=None) -> the module name. Each plugin gets its
    own folder and a unique module name, so importlib caches never serve a stale one.
    """
    created = []

    def make(name: str, source: str, dist: str = None, group: str = "tensorforge") -> str:
        dist = dist or f"tfcore-test-{name}"
        module = f"tfcore_plugin_{name.replace('-', '_')}_{next(_counter)}"
        site = tmp_path / f"site_{module}"
        info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8")
        (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {module}\n", encoding="utf-8")
        (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        monkeypatch.syspath_prepend(str(site))
        created.append(module)
        return module

    yield make
    for module in created:
        sys.modules.pop(module, None)


@pytest.fixture
def tensorforge_exe() -> Path:
    """The installed console script, next to this interpreter."""
    exe = Path(sys.executable).parent / "tensorforge"
    assert exe.exists(), f"console script not installed at {exe}"
    return exe


@pytest.fixture(scope="module")
def host():
    """The installed plugins, loaded once per module (read-only after loading)."""
    return PluginHost()


@pytest.fixture
def cli(host):
    """The tensorforge CLI over `host`, for click's CliRunner."""
    return make_cli(lambda: host)


# -- one host-CPU calibration for the session ------------------------------------------------------


@attrs.frozen
class HostCpuCalibration:
    """This machine's host-CPU calibration, made once by `tensorforge calibrate --target host-cpu
    --json` for real, with the fault catalogue's checks (exit 0, no traceback, nothing written
    beside the home). `home` is a TensorForge home holding it: read it, or copy it (`copy_home`)
    before a command writes there."""

    home: Path
    outcome: object  # fault_catalogue.Outcome: the command's exit status, stdout and stderr

    def copy_home(self, dest: Path) -> Path:
        shutil.copytree(self.home, dest)
        return dest


@pytest.fixture(scope="session")
def host_cpu_calibration(tmp_path_factory) -> HostCpuCalibration:
    """Why one: a calibration takes ~26 s of the 2-core CI machine, and the tests that need a
    calibrated home (a run stopped while measuring, `run` reusing a stored calibration, the
    `calibrate` success path) are about what follows it, not about calibrating again. Each test
    that asks for it runs in the host-CPU group (below), so under xdist it is made once, too."""
    from fault_catalogue import Case, check

    folder = tmp_path_factory.mktemp("host_cpu_calibration")
    case = Case(
        "calibrate --target host-cpu --json",
        ("calibrate", "--target", "host-cpu", "--json"),
        code=0,
        subprocess=True,
        env={"TENSORFORGE_HOME": "{tmp}/home"},
        may_write=("home",),
        timeout=900,  # a hang guard, not a speed goal: the CI machine may be busy
    )
    outcome = check(case, folder)
    return HostCpuCalibration(home=folder / "case" / "home", outcome=outcome)


# -- parallel runs (pytest-xdist) ----------------------------------------------------------------
# pyproject's addopts run the suite on several workers (-n auto --dist loadfile). Each test file is
# one unit of work, handed whole to one worker, so its module fixtures are made once; one unit is
# not a file: the tests that use the session's host-CPU calibration (above), which must run on
# one worker so that it is made once (a calibration is ~30 s of a 2-core machine, more when busy).
# Nothing else is serialised: every test that measures on this machine's CPU (a calibration, a
# `run --target host-cpu`, a torchrun of two ranks) asserts what a busy machine must still give,
# never how fast anything ran, as it must on a CI machine shared with other work; another test
# measuring beside it is one more busy neighbour, like the CPU-bound tests the other workers run.
# (They once ran one after the other on one worker: ~770 s of a 2-core run, longer than all the
# rest of the suite on the other worker.)
#
# Units are handed out longest first (LONGEST_FIRST, then the rest in collection order), so that
# no long unit starts when the others are nearly done: the scheduler hands units out in the order
# of their first test (--no-loadscope-reorder), which pytest_collection_modifyitems sets.
#
# Why not xdist's own `--dist loadgroup` and xdist_group marks: with pytest 9 it ignores the marks
# (pytest-xdist 3.8 writes the group into Item._nodeid, which pytest 9 no longer reads), and the
# scheduler, which sees only test ids, cannot read marks either; so membership is by name, here.
HOST_CPU_GROUP = "host-cpu"
# file -> the tests (function names) of it in the group; None: the whole file.
USES_THE_HOST_CPU_CALIBRATION: dict[str, frozenset[str] | None] = {
    "test_cpu_run.py": None,
    "test_faults_outputs.py": frozenset({"test_a_signal_during_a_run_leaves_the_incomplete_capture"}),
    "test_faults_state.py": frozenset({"test_calibrate_on_the_host_cpu_stores_and_prints_its_ceilings"}),
}
# The longest units, longest first (from `python -m pytest --durations=0` on a busy 2-core machine,
# 2026-12: the tour ~3-4 min, the group ~2-4 min, the rest under 2 min); a unit not named here
# starts after them. Name a unit here when it grows past the last one named.
LONGEST_FIRST = (
    "test_readme_tour.py",  # ~60 console-script lines twice, a first `run` that calibrates
    HOST_CPU_GROUP,  # the session's calibration, two host-CPU runs, the signal cases
    "test_policy_gate.py",
    "test_distributed_gloo.py",
    "test_declared_dependencies.py",
    "test_run_time.py",
    "test_policy_report.py",
    "test_capture_schema.py",
    "test_faults_outputs.py",
    "test_mlflow_sink.py",
    "test_faults_bounds.py",
    "test_estimate_conv_taps.py",
    "test_faults_state.py",
    "test_external_plugins.py",
    "test_ops_capture.py",
    "test_conventions.py",
)


def _unit(nodeid: str) -> str:
    """The unit of work of a test: HOST_CPU_GROUP, or its file."""
    path, _, name = nodeid.partition("::")
    tests = USES_THE_HOST_CPU_CALIBRATION.get(Path(path).name, ())
    if tests is None or name.split("[", 1)[0] in tests:
        return HOST_CPU_GROUP
    return path


def _rank(nodeid: str) -> int:
    unit = _unit(nodeid)
    unit = unit if unit == HOST_CPU_GROUP else Path(unit).name
    return LONGEST_FIRST.index(unit) if unit in LONGEST_FIRST else len(LONGEST_FIRST)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile, with the tests of USES_THE_HOST_CPU_CALIBRATION as one unit."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class HostCpuCalibrationOnce(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    return HostCpuCalibrationOnce(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """-n auto: one worker per CPU this process may use, at most 8 (each worker imports torch;
    a unit of work is a whole file). PYTEST_XDIST_AUTO_NUM_WORKERS still decides where set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cpus, 8))


SCREEN = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """In the controller: the screen variables the suite was started with, for the workers. Why:
    xdist's workers start with COLUMNS=80 and LINES=24 set, and the commands fit their tables to
    $COLUMNS, so every command a test ran there printed 80-column tables, unlike `-n 0`."""
    node.workerinput["tensorforge_screen"] = {name: os.environ.get(name) for name in SCREEN}


def pytest_configure(config):
    screen = getattr(config, "workerinput", {}).get("tensorforge_screen")
    for name, value in (screen or {}).items():  # in a worker: the controller's, set or unset
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def pytest_collection_modifyitems(config, items):
    """The units of LONGEST_FIRST first, in that order, then the rest as collected (a stable
    sort, the same order in every worker). A test that uses the session's host-CPU calibration
    (or is marked for the host-CPU group) outside USES_THE_HOST_CPU_CALIBRATION is refused: under
    xdist another worker would make the calibration a second time."""
    for item in items:
        marked = any((m.args or (m.kwargs.get("name"),))[0] == HOST_CPU_GROUP for m in item.iter_markers("xdist_group"))
        if (marked or "host_cpu_calibration" in item.fixturenames) and _unit(item.nodeid) != HOST_CPU_GROUP:
            raise pytest.UsageError(
                f"{item.nodeid} uses the host-CPU calibration: add it to USES_THE_HOST_CPU_CALIBRATION in tests/conftest.py"
            )
    items.sort(key=lambda item: _rank(item.nodeid))
