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
# one unit of work, handed whole to one worker, so its module fixtures are made once. The files
# whose tests time real work on this machine's CPU (a calibration, a `run --target host-cpu`, a
# torch-cpu session) would disturb each other's measurements: together they are one unit, run one
# after the other on one worker, handed out first because it is the longest unit (the scheduler
# below). The other workers still load the machine meanwhile, as other work on a shared CI machine
# does: those tests assert what a busy machine must still give, never how fast anything ran.
# `python -m pytest -n 0` runs everything in one process.
#
# Why not xdist's own `--dist loadgroup` and xdist_group marks: with pytest 9 it ignores the marks
# (pytest-xdist 3.8 writes the group into Item._nodeid, which pytest 9 no longer reads), and the
# scheduler, which sees only test ids, cannot read marks either; so membership is by file, here.
HOST_CPU_GROUP = "host-cpu"
MEASURES_THE_HOST_CPU = {
    "test_cpu_run.py",
    "test_declared_dependencies.py",
    "test_distributed_gloo.py",
    "test_faults_outputs.py",  # the signal cases stop host-CPU runs while they measure
    "test_faults_state.py",  # the `calibrate` success path
    "test_readme_tour.py",
}


def _measures_the_host_cpu(nodeid: str) -> bool:
    return Path(nodeid.split("::", 1)[0]).name in MEASURES_THE_HOST_CPU


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile, with the files of MEASURES_THE_HOST_CPU as one unit, handed out first."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class HostCpuFirst(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return HOST_CPU_GROUP if _measures_the_host_cpu(nodeid) else super()._split_scope(nodeid)

    return HostCpuFirst(config, log)


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
    """The host-CPU files first (the scheduler hands units out in the order of their first test:
    --no-loadscope-reorder); a stable sort, the same order in every worker. A test that measures
    on the host CPU in a file not named above is refused: under xdist it would measure beside the
    others, and make the session's calibration a second time on another worker."""
    for item in items:
        marked = any((m.args or (m.kwargs.get("name"),))[0] == HOST_CPU_GROUP for m in item.iter_markers("xdist_group"))
        if (marked or "host_cpu_calibration" in item.fixturenames) and not _measures_the_host_cpu(item.nodeid):
            raise pytest.UsageError(
                f"{item.nodeid} measures on the host CPU: add its file to MEASURES_THE_HOST_CPU in tests/conftest.py"
            )
    items.sort(key=lambda item: not _measures_the_host_cpu(item.nodeid))
