"""Shared fixtures. Nothing here is autouse: the Core suite opts in per module, so other
suites (Ops) are unaffected."""

import itertools
import sys
import textwrap
from pathlib import Path

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
