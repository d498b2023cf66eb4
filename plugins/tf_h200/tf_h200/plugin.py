"""NVIDIA H200 SXM (GH100 Hopper, compute capability 9.0, 132 SMs), written only against the
public hook specs, the way any third-party hardware plugin would be.

Dense peak rates per SM per clock (fourth-generation tensor cores; no sparsity):
  fp32 (CUDA cores)     256 FLOP   (128 FP32 lanes x FMA)
  tf32                 2048 FLOP
  fp16 / bf16          4096 FLOP   (fp32 accumulate at full rate on this data-centre part)
  fp8 / int8           8192
NVIDIA's H100 SXM datasheet (the H200 has the same compute) gives 989.4 TFLOPS dense BF16,
494.7 TF32, 1979 FP8 and 66.9 FP32: 4096 x 132 x 1830 MHz = 989.4e12 and
256 x 132 x 1980 MHz = 66.9e12, so the published tensor figures correspond to 1830 MHz and the
FP32 figure to the 1980 MHz maximum boost.

Vector (non-tensor) rates per SM per clock, for elementwise work (norms, activations, softmax):
  fp32 256, fp16 512, bf16 512   H100 whitepaper, H100 SXM5: 66.9 TFLOPS FP32 and 133.8 FP16 /
                                 BF16 non-Tensor = 256 / 512 x 132 SMs x 1980 MHz
Special-function units (exp2, rcp, rsqrt, sin, cos), results per SM per clock:
  fp32 16                        CUDA C++ Programming Guide, arithmetic-instruction throughput,
                                 compute capability 9.0
  fp16 32, bf16 32               ASSUMED: the PTX ISA's packed ex2.approx.f16x2 / .bf16x2 return
                                 two results per instruction; NVIDIA publishes no throughput, so
                                 twice the fp32 rate (the packing limit) keeps the bound a bound

Operating points: 'max-boost' (1980 MHz, the default: the fastest clock the part runs, so the
prediction stays a lower bound) and 'datasheet' (1830 MHz, which reproduces the published
tensor-core peaks).

Where the datasheet and the device disagree, the device's figure is used, because the model
must describe what runs:
  * L2: 60 MiB as the device reports it through PyTorch (L2_cache_size), not the 50 MB of the
    H100 SXM whitepaper.
  * Memory capacity: 140 GiB as PyTorch reports allocatable (total_memory), not the datasheet's
    141 GB; fit decisions must use what an allocation can get.
"""

from tensorforge import MemoryLevel, OperatingPoint, PEArray, PowerFigures, Target, hookimpl
from tf_h200.systems import systems

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
HBM_BW = 4.8e12

SOURCES = {
    "pe_array.units": "132 SMs (NVIDIA H100 Tensor Core GPU Architecture whitepaper, H100 SXM5; "
    "H200 SXM uses the same GH100 configuration)",
    "pe_array.flops_per_clock": "NVIDIA H200 / H100 SXM datasheets: 989.4 TFLOPS BF16/FP16, "
    "494.7 TF32, 1979 FP8/INT8 dense, 66.9 FP32; divided by 132 SMs and "
    "the clock each corresponds to (see module docstring)",
    "pe_array.vector_flops_per_clock": "NVIDIA H100 Tensor Core GPU Architecture whitepaper, H100 SXM5: "
    "66.9 TFLOPS FP32, 133.8 TFLOPS FP16 and BF16 (non-Tensor), "
    "divided by 132 SMs x 1980 MHz: 256 / 512 / 512",
    "pe_array.special_per_clock": "fp32 16: CUDA C++ Programming Guide, throughput of native arithmetic "
    "instructions (32-bit exp2/rcp/rsqrt/log2/sin/cos), compute capability "
    "9.0; fp16/bf16 32: ASSUMED twice that, the packing limit of the PTX "
    "ex2.approx.f16x2/.bf16x2 instructions (no published throughput)",
    "sram.shared_memory": "CUDA C++ Programming Guide, compute capability 9.0: up to 228 KB shared "
    "memory per SM; 32 banks x 4 bytes = 128 B/clock/SM",
    "sram.l2": "60 MiB as reported by the device (torch.cuda.get_device_properties().L2_cache_size "
    "on the H200 measured here); no L2 bandwidth is published, so L2 traffic is "
    "reported, not timed",
    "dram_capacity_bytes": "140 GiB allocatable as reported by PyTorch on the device (datasheet: 141 GB HBM3e)",
    "power.tdp_w": "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: Max Thermal Design Power (TDP) up to "
    "700 W (configurable)",
    "power.idle_w": "MEASURED on an H200 SXM: NVML's total-energy counter over 3 s idle, 129.5 W "
    "(benchmarks/h200_fp32.py, benchmarks/results/h200_fp32.json)",
    "power.joules_per_flop": "MEASURED on an H200 SXM, energy per FLOP above idle: NVML's energy counter over "
    "seconds of back-to-back 8192^3 GEMMs, fp32 10.48 pJ (at 1980 MHz, 666 W) and bf16 0.8445 pJ (at the 1470 MHz "
    "its 700 W limit held; fp16 taken as bf16) (benchmarks/h200_fp32.py); tf32 1.51 pJ from the H200 energy "
    "calibration. The sustained regime's rates: (limit - idle) / these",
    "power.limit_acts_s": "the H200 drew above its enforced 700 W for the first second of load (703-709 W in "
    "0.3 s probe windows, up to 747 W in workload windows, the 1 s averaged reading 687-698 W; docs/energy.md): "
    "calls shorter than a second run at the boost clock",
    "power.power_limit_w": "700 W: the datasheet's TDP, which NVML's enforced power limit "
    "(nvmlDeviceGetEnforcedPowerLimit) reports on the lent H200; a calibration records the device's own",
    "operating_points": "HBM3e 4.8 TB/s (NVIDIA H200 datasheet); 1980 MHz max boost (device-reported "
    "max SM clock), 1830 MHz implied by the published tensor-core peaks",
}

H200 = Target(
    name="h200",
    description="NVIDIA H200 SXM (GH100 Hopper, CC 9.0), 141 GB HBM3e",
    pe_array=PEArray(
        units=132,
        unit_name="SM",
        flops_per_clock={
            "fp32": 256,
            "tf32": 2048,
            "fp16": 4096,
            "fp16_acc16": 4096,
            "bf16": 4096,
            "fp8": 8192,
            "int8": 8192,
        },
        vector_flops_per_clock={"fp32": 256, "fp16": 512, "bf16": 512},
        special_per_clock={"fp32": 16, "fp16": 32, "bf16": 32},
    ),
    sram=(
        MemoryLevel("shared_memory", 228 * KiB, "per_unit", bytes_per_clock=128),
        MemoryLevel("l2", 60 * MiB, "shared", bytes_per_clock=None),
    ),
    dram_capacity_bytes=140 * GiB,
    operating_points=(
        OperatingPoint("max-boost", 1980, HBM_BW, "maximum boost clock"),
        OperatingPoint("datasheet", 1830, HBM_BW, "clock implied by the published tensor-core peaks"),
    ),
    default_operating_point="max-boost",
    sources=SOURCES,
    notes=("dense peaks only", "figures shared with the H100 SXM except memory"),
    device_names=("NVIDIA H200",),
    architecture="nvidia-sm90",
    power=PowerFigures(
        tdp_w=700.0,
        power_limit_w=700.0,
        # what the limit allows a long-running job (`predict --regime sustained`): measured here
        idle_w=129.5,
        joules_per_flop={"fp32": 1.048e-11, "tf32": 1.51e-12, "bf16": 8.445e-13, "fp16": 8.445e-13},
        limit_acts_s=1.0,
    ),
)


@hookimpl
def tensorforge_register_targets(register):
    register(H200)
    for system in systems(H200):  # several H200s with their links (systems.py)
        register(system)
