"""H200 systems: several H200 SXM GPUs as one target, with their links (tensorforge.hardware.interconnect).

Each system is the `h200` target (per GPU: SMs, SRAM, HBM, clocks) times `devices`, plus how the
GPUs reach each other:

  h200x2         two H200s of one HGX H200 board, through its NVSwitch chips (the lent
                 two-GPU machines; `nvidia-smi topo -m` in each capture records the real links)
  h200x8         all eight H200s of one HGX H200 board (DGX H200): NVSwitch, all to all
  h200x16-2node  two DGX H200 over InfiniBand NDR, one 400 Gb/s ConnectX-7 per GPU: on paper,
                 never measured here

NVLink 4: 18 links per GPU, 900 GB/s in both directions together, so 450 GB/s per direction per
GPU, the figure nccl-tests' bus bandwidth is comparable with. NVSwitch (third generation) can add
in the switch (NVLink SHARP); NCCL uses it only with NVLink multicast (NVLS), which the lent
machines keep off (NCCL_NVLS_ENABLE=0), so the measured all-reduce runs as a ring. The bound
takes the in-switch formula where the hardware has it (sound whatever the software does); for
two GPUs both formulas give the same bytes.

Latency per hop: no vendor publishes one for NVLink or InfiniBand hops between GPUs. The figures
are the smallest per-step latencies NCCL's own tuning model assumes (ring, LL protocol:
NVLink 0.47 us, network 2.7 us; NVIDIA/nccl src/graph/tuning.cc, hwLat), a modelling figure
rather than a measurement; the calibrated bound replaces them with what the probes measure.
"""

import attrs

from tensorforge import Interconnect, LinkTier

NVLINK_PER_DIRECTION = 18 * 25e9  # 18 NVLink 4 links x 25 GB/s per direction = 450 GB/s
NDR_PER_GPU = 400e9 / 8  # one ConnectX-7 at 400 Gb/s per GPU = 50 GB/s per direction
NVLINK_HOP_S = 0.47e-6
NET_HOP_S = 2.7e-6

NVLINK_SOURCE = (
    "NVLink 4: 18 links, 900 GB/s bidirectional per GPU (NVIDIA H200 datasheet; H100 "
    "Tensor Core GPU Architecture whitepaper) = 450 GB/s per direction; third-generation "
    "NVSwitch with SHARP in-network reduction (NVIDIA Hopper architecture page); "
    "latency 0.47 us per hop: NCCL's tuning model (src/graph/tuning.cc, hwLat NVLink "
    "ring LL), a modelling figure, no vendor figure exists"
)
IB_SOURCE = (
    "InfiniBand NDR: eight single-port ConnectX-7 at up to 400 Gb/s per DGX H200, one per "
    "GPU (NVIDIA DGX BasePOD reference architecture, DGX H200 specifications) = 50 GB/s per "
    "direction per GPU; Quantum-2 switches with SHARPv3 in-network reduction (NVIDIA "
    "Quantum-2 InfiniBand platform); latency 2.7 us per hop: NCCL's tuning model "
    "(src/graph/tuning.cc, hwLat network ring LL), a modelling figure"
)


def _nvswitch(span: int) -> LinkTier:
    return LinkTier("nvlink", span, NVLINK_PER_DIRECTION, NVLINK_HOP_S, "switch", in_switch_reduction=True)


def _system(base, name: str, devices: int, tiers, description: str, extra_sources, notes):
    return attrs.evolve(
        base,
        name=name,
        description=description,
        devices=devices,
        interconnect=Interconnect(tuple(tiers)),
        sources={**base.sources, **extra_sources},
        notes=base.notes + (f"the fields above describe one GPU; the system has {devices} of them",) + tuple(notes),
        device_names=(f"{devices} x NVIDIA H200",),
    )


def systems(h200):
    return (
        _system(
            h200,
            "h200x2",
            2,
            [_nvswitch(2)],
            "2 x NVIDIA H200 SXM of one HGX H200 board, NVLink 4 through NVSwitch",
            {"interconnect.nvlink": NVLINK_SOURCE},
            ["two GPUs of an eight-GPU NVSwitch board: each reaches the other at its full NVLink bandwidth"],
        ),
        _system(
            h200,
            "h200x8",
            8,
            [_nvswitch(8)],
            "8 x NVIDIA H200 SXM (HGX H200 / DGX H200), NVLink 4 through four NVSwitch chips, all to all",
            {"interconnect.nvlink": NVLINK_SOURCE},
            ["predicted on paper: no 8-GPU machine has measured this target here (issue 18)"],
        ),
        _system(
            h200,
            "h200x16-2node",
            16,
            [_nvswitch(8), LinkTier("infiniband", 16, NDR_PER_GPU, NET_HOP_S, "switch", in_switch_reduction=True)],
            "2 x DGX H200 (16 H200 SXM): NVSwitch inside each, InfiniBand NDR between them",
            {"interconnect.nvlink": NVLINK_SOURCE, "interconnect.infiniband": IB_SOURCE},
            [
                "on paper only: never measured here; the InfiniBand tier assumes a non-blocking "
                "fabric and one NIC per GPU"
            ],
        ),
    )
