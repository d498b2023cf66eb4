"""`host-cpu-x2`: the host CPU split into two devices, one process each, linked through host
memory: what the torch-distributed backend measures with gloo when no GPU is there (CI runs
collectives and a tensor-parallel layer on it).

Each device is the `host-cpu` target of one half of the usable CPUs (the worker of rank r is
pinned to the r-th half, tf_distributed.local.cpu_slice). The link is gloo's transport between
two processes of one machine (TCP over the loopback interface); no file on the machine states
its rate, so the figure is the host's assumed memory bandwidth, which no copy between processes
can beat (the bound stays a bound, only loose); the calibration sweep measures the real curve.
"""

import attrs

from tensorforge import Interconnect, LinkTier
from tf_cpu.machine import read_machine
from tf_cpu.target import ASSUMED_DRAM_BYTES_PER_S, host_target

NAME = "host-cpu-x2"
DEVICES = 2
LINK_SOURCE = (
    "ASSUMED: gloo between two processes of this machine moves data through host memory "
    "(TCP on the loopback interface); no machine source states its rate, so the assumed "
    "memory bandwidth (76.8 GB/s, a copy cannot beat it) stands in; latency 0 (none "
    "published); the collective sweep measures the real curve"
)


def system_target(affinity: frozenset[int] = None):
    everything = read_machine(affinity=affinity)
    cpus = sorted(everything.cpus)
    half = frozenset(cpus[: max(1, len(cpus) // DEVICES)])
    device = host_target(read_machine(affinity=half))
    shared = len(cpus) < DEVICES
    return attrs.evolve(
        device,
        name=NAME,
        devices=DEVICES,
        description=f"this machine's CPU as {DEVICES} devices of {len(half)} CPU(s) each, one process "
        f"per device (gloo): {everything.model_name}",
        interconnect=Interconnect((LinkTier("host-memory", DEVICES, ASSUMED_DRAM_BYTES_PER_S, 0.0, "host-memory"),)),
        sources={**device.sources, "interconnect.host-memory": LINK_SOURCE},
        notes=device.notes + ((f"only {len(cpus)} usable CPU: the two devices share it",) if shared else ()),
        device_names=(f"{DEVICES} x {device.device_names[0]}",),
    )
