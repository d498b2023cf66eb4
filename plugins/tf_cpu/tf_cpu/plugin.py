"""Core side: registers target `host-cpu`, read from this machine when plugins load (a few
small files under /proc and /sys; no torch), and `host-cpu-x2`, the same CPU as two devices
(system.py)."""

from tensorforge import hookimpl
from tf_cpu.machine import read_machine
from tf_cpu.system import system_target
from tf_cpu.target import host_target


@hookimpl
def tensorforge_register_targets(register):
    register(host_target(read_machine()))
    register(system_target())
