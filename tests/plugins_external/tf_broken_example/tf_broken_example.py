"""Every mistake a plugin author makes, one plugin object each (see pyproject.toml)."""

import os
import time

from tensorforge import MemoryLevel, OperatingPoint, PEArray, Target, hookimpl


def tiny_target(name):
    return Target(
        name=name,
        description="one-unit impostor",
        dram_capacity_bytes=1 << 30,
        pe_array=PEArray(1, "PE", {"fp32": 2}),
        sram=(MemoryLevel("smem", 1024, "per_unit"),),
        operating_points=(OperatingPoint("base", 100, 1e9),),
        default_operating_point="base",
    )


class MisspelledHook:
    @staticmethod
    @hookimpl
    def tensorforge_register_target(register):  # the spec is ..._targets
        register(tiny_target("never-registered"))


class ExtraArgument:
    @staticmethod
    @hookimpl
    def tensorforge_register_workloads(register, config):  # the spec has no 'config'
        pass


class WrongType:
    @staticmethod
    @hookimpl
    def tensorforge_register_targets(register):
        register({"name": "dict-target", "units": 4})  # a dict, not a Target


class Raises:
    @staticmethod
    @hookimpl
    def tensorforge_register_targets(register):
        register(tiny_target("half-registered"))  # dropped: half a plugin is none
        raise RuntimeError("board table missing")


class Impostor:
    @staticmethod
    @hookimpl
    def tensorforge_register_targets(register):
        register(tiny_target("rtx3050-laptop"))  # a name another plugin owns


class _Slow:
    @staticmethod
    @hookimpl
    def tensorforge_register_targets(register):
        register(tiny_target("slow-board"))


def __getattr__(name):
    # Stands in for a plugin whose import is heavy (a large framework, a network mount):
    # resolving this entry point takes TF_BROKEN_EXAMPLE_SLEEP_S seconds. It still works;
    # TensorForge only warns that it is slow.
    if name == "SlowImport":
        time.sleep(float(os.environ.get("TF_BROKEN_EXAMPLE_SLEEP_S", "1.5")))
        return _Slow
    raise AttributeError(name)
