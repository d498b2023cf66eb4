pytest_plugins = ["tensorforge.pytest_plugin"]
