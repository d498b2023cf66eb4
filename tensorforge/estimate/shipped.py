"""Coefficients shipped with TensorForge, per architecture family, each from a real
calibration (see `source` of each entry; benchmarks/estimate/ship_defaults.py writes this file
from a calibration document)."""

from functools import lru_cache
from typing import Dict

from .coefficients import EstimateCoefficients, coefficients_from_data

# PROVISIONAL until the H200 calibration run replaces them (benchmarks/estimate/ship_defaults.py).
SHIPPED = {
    "nvidia-sm90": {
        "family": "nvidia-sm90", "basis_kind": "carried-over",
        "basis": "PROVISIONAL placeholder figures (no calibration yet)",
        "kernel": {"harness_s": 2.0e-6, "launch_s": 2.0e-6, "host_per_kernel_s": 15e-6, "host_slack_s": 60e-6},
        "gemm": {"mainloop_efficiency": {"bf16": 1.0, "fp16": 1.0, "tf32": 1.0, "fp32": 1.0},
                 "feed_bytes_per_clock": 128.0, "tile_overhead_s": 1.5e-6, "stream_efficiency": 0.8,
                 "unaligned_efficiency": 0.2},
        "conv": {"kxk_efficiency": 0.7, "pointwise_efficiency": 0.9, "fp32_efficiency": 1.0,
                 "unaligned_efficiency": 0.15, "depthwise_bandwidth_efficiency": 0.5},
        "attention": {"prefill_efficiency": 0.5, "causal_efficiency": 0.4, "decode_bandwidth_efficiency": 0.7},
        "stream": {"bandwidth_efficiency": {"elementwise": 0.85, "norm": 0.75, "copy": 0.7, "concat": 0.7}},
        "peak_fraction": {"bf16": 0.75, "fp16": 0.73, "tf32": 0.77, "fp32": 0.77},
        "dram_fraction": 0.89, "source_clock_mhz": 1980.0,
    },
    "cpu-x86-64": {
        "family": "cpu-x86-64", "basis_kind": "carried-over",
        "basis": "PROVISIONAL placeholder figures (no calibration yet)",
        "kernel": {"harness_s": 0.0, "launch_s": 3e-6, "host_per_kernel_s": 0.0, "host_slack_s": 0.0},
        "gemm": {"mainloop_efficiency": {"bf16": 0.8, "fp16": 0.8, "fp32": 0.9},
                 "feed_bytes_per_clock": 32.0, "tile_overhead_s": 0.0, "stream_efficiency": 0.7,
                 "unaligned_efficiency": 1.0},
        "conv": {"kxk_efficiency": 0.5, "pointwise_efficiency": 0.7, "fp32_efficiency": 1.0,
                 "unaligned_efficiency": 1.0, "depthwise_bandwidth_efficiency": 0.3},
        "attention": {"prefill_efficiency": 0.3, "causal_efficiency": 0.3, "decode_bandwidth_efficiency": 0.5},
        "stream": {"bandwidth_efficiency": {"elementwise": 0.6, "norm": 0.5, "copy": 0.6, "concat": 0.5}},
        "peak_fraction": {"fp32": 0.8, "bf16": 0.8}, "dram_fraction": 0.6, "source_clock_mhz": 2600.0,
    },
}


@lru_cache(maxsize=1)
def shipped() -> Dict[str, EstimateCoefficients]:
    return {family: coefficients_from_data(data, f"shipped estimate coefficients {family}")
            for family, data in SHIPPED.items()}
