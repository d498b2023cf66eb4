"""The Core's commands, one module each: list-plugins, predict, targets, workloads.

Each command is defined at module level, so it can be imported and invoked on its own;
tensorforge/cli/main.py assembles them, with the commands plugins add, into the root group.
"""
