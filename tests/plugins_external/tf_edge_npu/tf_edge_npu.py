"""An edge NPU: 8 cores, each a 32 x 32 MAC array with a 1 MiB scratchpad, an 8 MiB shared
buffer and LPDDR5X. Illustrative figures (not a product): every one is sourced to this file."""

from tensorforge import MemoryLevel, OperatingPoint, PEArray, Target, hookimpl

MiB, GiB = 1 << 20, 1 << 30
MACS = 32 * 32  # one MAC = 2 FLOPs per clock

EDGE_NPU = Target(
    name="edge-npu",
    description="illustrative edge NPU: 8 cores x 32x32 MAC array, 8 MiB shared SRAM, LPDDR5X",
    pe_array=PEArray(
        units=8,
        unit_name="core",
        flops_per_clock={
            "int8": 2 * MACS,
            "fp8": 2 * MACS,
            "fp16": MACS,
            "bf16": MACS,
            "fp32": 64,  # the 32-lane vector unit (FMA): norms, softmax, activations
        },
    ),
    sram=(
        MemoryLevel("scratchpad", 1 * MiB, "per_unit", bytes_per_clock=256),
        MemoryLevel("global_buffer", 8 * MiB, "shared", bytes_per_clock=512),
    ),
    dram_capacity_bytes=16 * GiB,
    operating_points=(
        OperatingPoint("nominal", 1000, 68.3e9, "1.0 GHz, LPDDR5X-8533 x64"),
        OperatingPoint("turbo", 1400, 68.3e9, "1.4 GHz, thermally limited"),
    ),
    default_operating_point="turbo",  # the fastest point keeps the prediction a lower bound
    sources={
        "pe_array.units": "design parameter (8 cores)",
        "pe_array.flops_per_clock": "32x32 MACs per core; int8/fp8 2 FLOP per MAC per clock, "
        "fp16/bf16 at half rate; 32-lane fp32 vector unit",
        "sram.scratchpad": "design parameter: 1 MiB per core, 256 B/clock",
        "sram.global_buffer": "design parameter: 8 MiB shared, 512 B/clock in total",
        "dram_capacity_bytes": "16 GiB LPDDR5X",
        "operating_points": "LPDDR5X-8533 on a 64-bit bus = 68.3 GB/s; 1.0 and 1.4 GHz core clocks",
    },
    notes=("illustrative figures for the plugin guide, not a product",),
)


@hookimpl
def tensorforge_register_targets(register):
    register(EDGE_NPU)
