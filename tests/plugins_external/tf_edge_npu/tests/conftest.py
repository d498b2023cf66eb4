pytest_plugins = ["tensorforge.testing.pytest_plugin"]
