"""NVIDIA GeForce RTX 3050 Laptop GPU (GA107, compute capability 8.6).

Dense peak rates per SM per clock (GA10x: 128 FP32 lanes, 4 third-generation tensor cores):
  fp32 (CUDA cores)          256 FLOP  (128 FMA)
  tf32 (tensor)              256 FLOP
  fp16, fp32 accumulate      512 FLOP  GeForce parts run it at half the fp16-accumulate rate
  fp16, fp16 accumulate     1024 FLOP
  bf16 (fp32 accumulate)     512 FLOP
  int8                      2048 OP
Derived from the GA102 whitepaper's RTX 3080 figures (68 SMs, 1710 MHz boost: 29.8 TFLOPS
FP32, 119 / 59.5 TFLOPS dense FP16 with FP16 / FP32 accumulate, 59.5 BF16, 29.8 TF32,
238 TOPS INT8): e.g. 59.5e12 / (68 * 1.71e9) = 512 FLOP per SM per clock.

Vector (non-tensor) rates per SM per clock: fp32, fp16 and bf16 all 256 (the same whitepaper
table gives 29.8 TFLOPS for FP32 and for non-Tensor FP16 and BF16 on the RTX 3080: GA10x runs
half precision at the fp32 rate, unlike the data-centre A100/H100).
Special-function units: fp32 16 results per SM per clock (CUDA C++ Programming Guide,
compute capability 8.6); fp16 32 ASSUMED (packed ex2.approx.f16x2, no published throughput;
twice the fp32 rate keeps the bound a bound). No bf16 rate: packed bf16 transcendentals need
compute capability 9.0, so bf16 work takes the fp32 rate.

The default operating point is the top of NVIDIA's published boost range (1740 MHz, the 80 W
configurations): the fastest documented clock, so the prediction stays a lower bound on any
RTX 3050 Laptop; '35w' is the bottom of the range (1057 MHz).
"""

import math

from tensorforge import MemoryLevel, OperatingPoint, PEArray, PowerFigures, Target, hookimpl

MiB = 1 << 20
KiB = 1 << 10
DRAM_BW = 128 / 8 * 12e9  # 128-bit bus at 12 Gbps per pin = 192 GB/s

SOURCES = {
    "pe_array.units": "16 SMs: 2048 CUDA cores / 128 per GA10x SM (NVIDIA GeForce RTX 3050 "
    "Laptop GPU specifications; NVIDIA Ampere GA102 GPU Architecture whitepaper)",
    "pe_array.flops_per_clock": "NVIDIA Ampere GA102 GPU Architecture whitepaper, Table 1 "
    "(RTX 3080 peak rates divided by 68 SMs x 1710 MHz; dense, no sparsity)",
    "pe_array.vector_flops_per_clock": "NVIDIA Ampere GA102 GPU Architecture whitepaper, Table 1 "
    "(RTX 3080: 29.8 TFLOPS FP32 and 29.8 non-Tensor FP16 / BF16, "
    "divided by 68 SMs x 1710 MHz = 256 each)",
    "pe_array.special_per_clock": "fp32 16: CUDA C++ Programming Guide, throughput of native arithmetic "
    "instructions (32-bit exp2/rcp/rsqrt/log2/sin/cos), compute capability "
    "8.6; fp16 32: ASSUMED twice that, the packing limit of the PTX "
    "ex2.approx.f16x2 instruction (no published throughput)",
    "sram.shared_memory": "CUDA C++ Programming Guide, compute capability 8.6: up to 100 KB of "
    "shared memory per SM; 32 banks x 4 bytes per clock = 128 B/clock/SM",
    "sram.l2": "2 MB L2 on GA107 (TechPowerUp GPU Database, GeForce RTX 3050 Mobile); "
    "no L2 bandwidth is published, so L2 traffic is reported, not timed",
    "dram_capacity_bytes": "4 GB GDDR6 (NVIDIA GeForce RTX 3050 Laptop GPU specifications)",
    "operating_points": "boost clock 1057-1740 MHz across 35-80 W TGP configurations (NVIDIA "
    "GeForce RTX 3050 Laptop GPU specifications); memory 128-bit at 12 Gbps "
    "= 192 GB/s (TechPowerUp GPU Database, GeForce RTX 3050 Mobile)",
    "power.tdp_w": "80 W: the top of the 35-80 W Graphics Power range of the GeForce RTX 3050 Laptop GPU "
    "(NVIDIA GeForce RTX 30 Series Laptops specifications)",
    "power.power_limit_min_w": "35 W, the bottom of that range: the laptop maker sets the limit within it",
    "power.power_limit_max_w": "80 W, the top of that range",
    "power.idle_w": "ASSUMED: 18.5% of the 80 W TDP, the share of its 700 W limit an H200 drew idle (129.5 W, "
    "NVML energy counter over 3 s: benchmarks/h200_fp32.py, benchmarks/results/h200_fp32.json); no measurement "
    "of this board's power exists",
    "power.joules_per_flop": "ASSUMED: per math mode, the energy per FLOP above idle at which the 80 W limit "
    "just feeds the peak rate at the 80w point, (80 W - idle) / peak, rounded down; no measurement of this "
    "board's energy exists. Chosen so that the estimate's power cap (tensorforge.energy.model.power_capped) "
    "leaves every rate as it was: `predict`'s energy figures, not a claim that the board holds its peak",
    "power.joules_per_dram_byte": "ASSUMED from the H200: the energy per DRAM byte its energy calibration "
    "fitted (1.14e-10 J, HBM3e, 2026-12-02: tensorforge/energy/shipped.json), carried to this board's GDDR6, "
    "whose interface spends more per bit than HBM's, so likely low",
}
IDLE_W = 14.8  # 18.5% of 80 W (SOURCES)
PEAK_80W = {"fp32": 256, "tf32": 256, "fp16": 512, "fp16_acc16": 1024, "bf16": 512, "int8": 2048}  # per SM per clock

RTX3050_LAPTOP = Target(
    name="rtx3050-laptop",
    description="NVIDIA GeForce RTX 3050 Laptop GPU (GA107, Ampere, CC 8.6), 4 GB GDDR6",
    pe_array=PEArray(
        units=16,
        unit_name="SM",
        flops_per_clock=PEAK_80W,
        vector_flops_per_clock={"fp32": 256, "fp16": 256, "bf16": 256},
        special_per_clock={"fp32": 16, "fp16": 32},
    ),
    sram=(
        MemoryLevel("shared_memory", 100 * KiB, "per_unit", bytes_per_clock=128),
        MemoryLevel("l2", 2 * MiB, "shared", bytes_per_clock=None),
    ),
    dram_capacity_bytes=4 * 1024**3,
    operating_points=(
        OperatingPoint("80w", 1740, DRAM_BW, "top of the published boost range (80 W TGP)"),
        OperatingPoint("35w", 1057, DRAM_BW, "bottom of the published boost range (35 W TGP)"),
    ),
    default_operating_point="80w",
    sources=SOURCES,
    notes=("dense peaks only; the laptop's power limit and thermals decide the sustained clock",),
    device_names=("NVIDIA GeForce RTX 3050 Laptop GPU",),
    architecture="nvidia-sm86",
    # the laptop maker fixes the limit within the range, so no single power_limit_w is declared
    power=PowerFigures(
        tdp_w=80.0,
        power_limit_min_w=35.0,
        power_limit_max_w=80.0,
        idle_w=IDLE_W,
        # (80 W - idle) / (16 SMs x rate x 1740 MHz), rounded down to 3 digits (SOURCES)
        joules_per_flop={m: math.floor((80.0 - IDLE_W) / (16 * r * 1740e6) * 1e15) / 1e15 for m, r in PEAK_80W.items()},
        joules_per_dram_byte=1.14e-10,
    ),
)


@hookimpl
def tensorforge_register_targets(register):
    register(RTX3050_LAPTOP)
