"""pytest fixtures for plugin authors. Enable them in your tests' conftest.py:

    pytest_plugins = ["tensorforge.testing.pytest_plugin"]

    tensorforge_host(*plugins, entry_points=False)   a fresh host with your plugin(s) registered
                                                     for this test only (see testing.fresh_host)
    tensorforge_cli(*args, plugins=(), entry_points=False)
                                                     run the `tensorforge` command line over such
                                                     a host; returns click's Result (exit_code,
                                                     stdout, stderr)

Both start from a clean plugin environment (TENSORFORGE_PLUGINS, TENSORFORGE_DISABLE,
TENSORFORGE_TRACE unset), so a developer's shell settings never change a test's outcome.
"""

import pytest

from tensorforge.host.options import DISABLE, ONLY, SLOW_IMPORT, TRACE


@pytest.fixture
def tensorforge_clean_env(monkeypatch):
    for name in (ONLY, DISABLE, TRACE, SLOW_IMPORT):
        # setenv first, so monkeypatch restores the variable even if the test sets it later
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


@pytest.fixture
def tensorforge_host(tensorforge_clean_env):
    from tensorforge.testing import fresh_host

    return fresh_host


@pytest.fixture
def tensorforge_cli(tensorforge_clean_env):
    from click.testing import CliRunner

    from tensorforge.cli.main import make_cli
    from tensorforge.testing import fresh_host

    def run(*args, plugins=(), entry_points=False):
        host = fresh_host(*plugins, entry_points=entry_points)
        return CliRunner().invoke(make_cli(lambda: host), [str(a) for a in args])

    return run
