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
# pyproject's addopts run the suite on several workers (-n auto --dist loadgroup). Each test file is
# one unit of work, handed whole to one worker, so its module fixtures are made once. The tests that
# time real work on this machine's CPU (a calibration, a `run --target host-cpu`, a torch-cpu
# session) would disturb each other's measurements: they form one unit, "host-cpu", run one after
# the other on one worker, handed out first because it is the longest unit. The other workers still
# load the machine meanwhile, as other work on a shared CI machine does: those tests assert what a
# busy machine must still give, never how fast anything ran. `-n 0` runs everything in this process.
HOST_CPU_GROUP = "host-cpu"
# Files whose tests measure on this CPU, or read what a module fixture measured there. A test
# elsewhere joins the group by asking for host_cpu_calibration.
MEASURES_THE_HOST_CPU = {"test_cpu_run.py", "test_distributed_gloo.py", "test_readme_tour.py"}


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


def _group(item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        if _group(item) is None:
            file = item.nodeid.split("::")[0]
            measures = Path(file).name in MEASURES_THE_HOST_CPU or "host_cpu_calibration" in item.fixturenames
            item.add_marker(pytest.mark.xdist_group(HOST_CPU_GROUP if measures else file))
    # The scheduler hands units out in the order of their first test (--no-loadscope-reorder): the
    # host-CPU unit first, then collection order. A stable sort: the same order in every worker.
    items.sort(key=lambda item: _group(item) != HOST_CPU_GROUP)
