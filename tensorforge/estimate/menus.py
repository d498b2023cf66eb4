"""The tiles real libraries run, per architecture family.

The bound's explorer may pick any tile that minimises time (often a 64x64 tile no library
would launch for that shape). The estimate maps onto the menus the libraries actually ship,
so their tile and wave quantization is what it charges. Where each menu comes from:

nvidia-sm90 (Hopper): cuBLAS 12.x 'nvjet' kernels as they appear in PyTorch profiler traces on
    an H100/H200, e.g. nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT, nvjet_sm90_tst_192x192_...,
    nvjet_sm90_tst_128x32_..., nvjet_sm90_tst_64x8_..._splitK: output tiles 256x128 (and
    128x256), 192x192, 192x128, 128x128, 128x64, 128x32, 64x64, 64x32, 64x16, 64x8; persistent
    with a tile scheduler (stream-K style balancing of the last wave) and split-K for few-tile
    shapes. A leading dimension that is not a multiple of 16 bytes rules TMA out and drops the
    GEMM to the sm75/sm80 tensor-core kernels (cutlass_75_tensorop_*, cutlass_80_tensorop_*),
    whose menu is nvidia-sm80's.
nvidia-sm80 / nvidia-sm86 (Ampere): cuBLAS 'ampere_*_s16816gemm_*' and CUTLASS 2.x kernel names
    (ampere_bf16_s16816gemm_bf16_256x128_ldg8_..., _128x128_, _256x64_, _128x64_, _64x64_) and
    cuBLAS's gemv kernels for vector shapes; data-parallel launch, split-K for few tiles.
cpu: oneDNN/MKL blocked GEMM micro-kernels: square-ish blocks per core; no tensor-core padding.

Fused attention follows FlashAttention-2's kernel traits (flash_fwd_launch_template.h): query
blocks of 128 rows, key blocks of 128 for head_dim <= 64 and 64 above.
"""

from typing import Tuple

import attrs


@attrs.frozen
class Menu:
    family: str
    tiles: Tuple[Tuple[int, int], ...]          # (rows, cols) of C per tile, both orientations
    splits: Tuple[int, ...]                      # split-K factors the library uses
    stream_k: bool                               # persistent kernels balance the last wave
    k_step: int                                  # K is consumed in slices of this many elements
    tensor_cores: bool                           # tensor-core tiles pad M and N to the tile
    fallback: str = ""                           # family whose menu runs unaligned GEMMs
    split_k_kernels: int = 1                     # kernels of a split-K GEMM (separate reduction: 2)
    attention_q: int = 128
    attention_kv_small_d: int = 128
    attention_kv_large_d: int = 64
    source: str = ""


def _both(*tiles):
    out = []
    for a, b in tiles:
        for t in ((a, b), (b, a)):
            if t not in out:
                out.append(t)
    return tuple(out)


SPLITS = (1, 2, 3, 4, 6, 8, 12, 16)

MENUS = {
    "nvidia-sm90": Menu(
        family="nvidia-sm90",
        tiles=_both((256, 128), (192, 192), (192, 128), (128, 128), (128, 64), (128, 32),
                    (64, 64), (64, 32), (64, 16), (64, 8)),
        splits=SPLITS, stream_k=True, k_step=64, tensor_cores=True, fallback="nvidia-sm80",
        source="cuBLAS 12 nvjet_sm90_tst_* kernel names in H100/H200 profiler traces"),
    "nvidia-sm80": Menu(
        family="nvidia-sm80",
        tiles=_both((256, 128), (128, 128), (256, 64), (128, 64), (64, 64), (64, 32), (64, 8)),
        splits=SPLITS, stream_k=False, k_step=32, tensor_cores=True, split_k_kernels=2,
        source="cuBLAS ampere_*_s16816gemm_* / CUTLASS 2.x kernel names, gemv for vector shapes, "
               "splitKreduce_kernel after split-K GEMMs"),
    "cpu": Menu(
        family="cpu",
        tiles=_both((256, 256), (128, 128), (64, 64), (32, 32), (64, 16), (16, 4)),
        splits=(1,), stream_k=False, k_step=1, tensor_cores=False, attention_q=64,
        attention_kv_small_d=64, attention_kv_large_d=64,
        source="oneDNN/MKL blocked GEMM: per-core blocks, no tensor-core padding"),
}
MENUS["nvidia-sm86"] = attrs.evolve(MENUS["nvidia-sm80"], family="nvidia-sm86")
MENUS["nvidia-sm89"] = attrs.evolve(MENUS["nvidia-sm80"], family="nvidia-sm89")


def menu_for(family: str) -> Menu:
    """The family's menu; an unknown GPU family gets Ampere's (the most common library
    generation), a CPU family the CPU one."""
    if family in MENUS:
        return MENUS[family]
    if family.startswith(("x86", "cpu", "arm", "aarch64")):
        return MENUS["cpu"]
    return MENUS["nvidia-sm80"]
