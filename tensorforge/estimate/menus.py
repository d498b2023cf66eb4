"""The kernels real libraries run, per architecture family: GEMM tile menus, the split-K
reduction, how fused attention blocks its work, and the layout conversions around some
convolutions.

The bound's explorer may pick any tile that minimises time (often a 64x64 tile no library
would launch for that shape). The estimate maps onto what the libraries ship, so their tile and
wave quantization is what it charges. Where each menu comes from:

nvidia-sm90 (Hopper), from PyTorch profiler traces of the calibration probes on an H200
    (torch 2.11, CUDA 13.0, cuDNN 9.19; the tracing script is kept at the lab-archive-2026-12 tag):
    - 16-bit GEMMs run cuBLAS 'nvjet_sm90_tst_<rows>x<cols>_...' kernels: 320x128, 256x128,
      128x256, 128x224, 192x192, 128x192, 192x96, 128x128, 96x64, 64x128, 64x64, 64x48, 32x64,
      64x32, 128x24, 64x24, 16x64, 8x64, 128x8, 64x8 were seen; one tile per output block, data
      parallel (whole waves: no stream-K in the names or the timings); split-K kernels
      ('_splitK_') are followed by a separate cublasLt::splitKreduce_kernel, and were seen only
      with K >= 10240 (none up to K = 6144, whatever M and N).
    - tf32 GEMMs run 'sm90_xmma_gemm_f32f32_tf32f32_..._tilesize{64x128,128x128}x32' kernels;
      fp32 (no TF32) 'sm80_xmma_gemm_..._tilesize64x64x8_ffma' and 'cutlass_80_simt_sgemm_256x128'.
    - A leading dimension that is not a multiple of 16 bytes rules TMA out: the GEMM runs
      'cutlass_75_tensorop_bf16_s1688gemm_bf16_{256x128,128x128}_nn_align1' (nvidia-sm75's menu).
    - Attention (F.scaled_dot_product_attention) runs cuDNN's fused kernels:
      'cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x<d>' after a
      Memset for prefill (64 query rows x 128 keys per block), and
      'cudnn_..._sm80_flash_fprop_wmma_f16_knob_35_16x128x<d>' for decode (16 query rows), with
      'cudnn::fusion::lean_reduction_kernel' combining split-KV partials when there are too few
      (batch x head) blocks to fill the device twice (seen after 64 and 224 blocks, not 512).
    - bf16 convolutions with R*S > 1 run cuDNN's 'sm90_xmma_fprop_implicit_gemm_..._tilesize
      {256x64x32,128x128x64,64x64x64}_..._execute_segment_k_off' (no split-K); 1x1 ones run nvjet.
    - bf16 convolutions whose channels are not a multiple of 16 bytes (a C=3 stem) run a direct
      engine ('convolve_common_engine_float_NHWC', CUDA cores) up to 5x5 filters, and a 7x7 one
      'cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8' after two
      'nhwcAddPaddingKernel' channel-padding copies and two memsets.
    - fp32 convolutions over channels-last tensors run NCHW kernels
      ('sm80_xmma_fprop_implicit_gemm_f32f32_..._nchwkcrs_nchw') between an nchwToNhwc and an
      nhwcToNchw layout conversion.
fp32 without TF32 runs on the CUDA cores (SIMT), never on the tensor cores, so no TMA or
    tensor-core alignment rule applies (an odd K runs CUTLASS's simt 'align1' kernels at about the
    same rate): each family's `simt_tiles`, from the kernel names NeuSight's published operator
    measurements record for its training GPUs (sitar-lab/NeuSight, scripts/asplos/data/dataset/
    train/collect/{bmm,linear}, torch 2.1, CUDA 12.1): A100 'ampere_sgemm_{128x128,128x64,128x32,
    64x32,32x128,32x32,64x64}' with a splitKreduce after some, but batched ones (bmm) on
    'ampere_sgemm_128x128' alone (16,588 of 16,661 rows); V100 and T4 'volta_sgemm_{128x128,
    128x64,64x64,128x32,32x128,64x32,32x32}'. Hopper's (the H200 traces above) are its fp32 tiles.
nvidia-sm80 / sm86 / sm89 (Ampere, Ada): cuBLAS 'ampere_*_s16816gemm_*' and CUTLASS 2.x kernel
    names (256x128, 128x256, 128x128, 256x64, 128x64, 64x64 tiles, gemv for vectors), split-K
    with splitKreduce_kernel; PyTorch's FlashAttention-2 for attention (flash_fwd_launch_template.h:
    128 query rows, 128 keys for head_dim <= 64 and 64 above; split-KV with a combine kernel).
cpu: oneDNN/MKL blocked GEMM: square-ish blocks per core, no tensor-core padding.
"""

import attrs

Tiles = tuple[tuple[int, int], ...]


@attrs.frozen
class Menu:
    family: str
    tiles: Tiles  # (rows, cols) of C per tile, both orientations
    splits: tuple[int, ...]  # split-K factors the library uses
    stream_k: bool  # persistent kernels balance the last wave
    k_step: int  # K is consumed in slices of this many elements
    tensor_cores: bool  # tensor-core tiles pad M and N to the tile
    fallback: str = ""  # family whose menu runs unaligned GEMMs
    # the menu that runs GEMMs whose rows are a multiple of 4 bytes but not 16 ('' = fallback's)
    fallback_partial: str = ""
    split_k_kernels: int = 1  # kernels of a split-K GEMM (separate reduction: 2)
    split_k_min_k: int = 0  # the library splits K only from this K on
    # the library splits K only where the unsplit output tiles leave units idle (fewer than one wave)
    split_k_below_one_wave: bool = False
    mode_tiles: tuple[tuple[str, Tiles], ...] = ()  # (math mode, tiles) where a mode has its own
    attention_q: int = 128  # query rows per attention block (prefill)
    attention_kv_small_d: int = 128  # keys per block, head_dim <= 64
    attention_kv_large_d: int = 64  # keys per block, head_dim > 64
    attention_decode_q: int = 64  # query rows per block of the decode kernel
    attention_prefill_kernels: int = 1  # kernels of one prefill attention call
    attention_fold_heads: bool = True  # one-token decode folds a KV head's query heads
    # decode splits the KV sequence (+ a combine kernel) when (batch x head) blocks < this x units
    attention_split_below: float = 0.8
    fp32_conv_layout_copies: bool = False  # NHWC <-> NCHW conversions around fp32 convs
    conv_tiles: Tiles = ()  # implicit-GEMM convolution tiles (no split-K)
    # channels per group not a multiple of 16 bytes: filters of at most this many taps run a
    # direct (CUDA-core) convolution engine, larger ones a tensor-core kernel behind channel-
    # padding copies (conv_pad_kernels kernels: padding copies and memsets); 0 = always padded
    conv_direct_max_taps: int = 0
    conv_pad_kernels: int = 0
    # fp32 GEMMs without TF32: the CUDA-core (SIMT) kernels' tiles; () = the family has no
    # separate SIMT menu (a CPU) and fp32 takes `tiles_for`
    simt_tiles: Tiles = ()
    # batched fp32 GEMMs (bmm): the tiles the library's batched SIMT heuristic takes; () = simt_tiles
    simt_batched_tiles: Tiles = ()
    simt_k_step: int = 8  # SIMT sgemm main loops step K by 8 (the '_8x4' / 'x8' in the names)
    source: str = ""

    def tiles_for(self, mode: str) -> Tiles:
        return dict(self.mode_tiles).get(mode, self.tiles)

    def for_mode(self, mode: str, batched: bool = False) -> "Menu":
        """The menu a GEMM of this math mode runs: fp32 on a GPU is the SIMT menu (no tensor-core
        alignment fallback, K in steps of simt_k_step, split-K from any K; a batched one on
        simt_batched_tiles without split-K where the family has them)."""
        if mode not in SIMT_MODES or not self.simt_tiles:
            return self
        if batched and self.simt_batched_tiles:
            return attrs.evolve(
                self,
                tiles=self.simt_batched_tiles,
                mode_tiles=(),
                k_step=self.simt_k_step,
                splits=(1,),
                fallback="",
                fallback_partial="",
            )
        return attrs.evolve(
            self,
            tiles=self.simt_tiles,
            mode_tiles=(),
            k_step=self.simt_k_step,
            split_k_min_k=0,
            fallback="",
            fallback_partial="",
        )


def _both(*tiles) -> Tiles:
    out = []
    for a, b in tiles:
        for t in ((a, b), (b, a)):
            if t not in out:
                out.append(t)
    return tuple(out)


SPLITS = (1, 2, 3, 4, 6, 8, 12, 16)
SIMT_MODES = ("fp32",)  # math modes that run on the CUDA cores (TF32 off)
AMPERE_SGEMM = _both((128, 128), (128, 64), (128, 32), (64, 32), (32, 32), (64, 64))
VOLTA_SGEMM = _both((128, 128), (128, 64), (64, 64), (128, 32), (64, 32), (32, 32))

MENUS = {
    "nvidia-sm90": Menu(
        family="nvidia-sm90",
        tiles=_both(
            (320, 128),
            (256, 128),
            (224, 128),
            (192, 192),
            (192, 128),
            (192, 96),
            (128, 128),
            (96, 64),
            (128, 64),
            (64, 64),
            (64, 48),
            (64, 32),
            (128, 24),
            (64, 24),
            (64, 16),
            (128, 8),
            (64, 8),
        ),
        splits=SPLITS,
        stream_k=False,
        k_step=64,
        tensor_cores=True,
        fallback="nvidia-sm90-align1",
        fallback_partial="nvidia-sm90-align4",
        split_k_kernels=2,
        split_k_min_k=8192,
        mode_tiles=(
            ("tf32", _both((256, 128), (128, 128), (128, 64), (64, 64))),
            ("fp32", _both((256, 128), (128, 128), (128, 64), (64, 64))),
        ),
        attention_q=64,
        attention_kv_small_d=128,
        attention_kv_large_d=128,
        attention_decode_q=16,
        attention_prefill_kernels=2,
        attention_fold_heads=False,
        # the traces: lean_reduction_kernel after 64 and 224 (batch x head) blocks, none at 512
        attention_split_below=2.0,
        fp32_conv_layout_copies=True,
        conv_tiles=_both((256, 64), (128, 128), (64, 64)),
        # the traces: C=3 3x3 (stride 1 and 2) and C=1 5x5 ran convolve_common_engine_float_NHWC;
        # C=3 7x7 stride 2 ran cutlass s16816fprop after 2 nhwcAddPaddingKernel and 2 memsets
        conv_direct_max_taps=25,
        conv_pad_kernels=4,
        simt_tiles=_both((256, 128), (128, 128), (128, 64), (64, 64)),
        source="kernel names in PyTorch profiler traces of the calibration probes on an H200",
    ),
    "nvidia-sm80": Menu(
        family="nvidia-sm80",
        tiles=_both((256, 128), (128, 128), (256, 64), (128, 64), (64, 64), (64, 32), (64, 8)),
        splits=SPLITS,
        stream_k=False,
        k_step=32,
        tensor_cores=True,
        split_k_kernels=2,
        simt_tiles=AMPERE_SGEMM,
        simt_batched_tiles=((128, 128),),
        source="cuBLAS ampere_*_s16816gemm_* / CUTLASS 2.x kernel names, gemv for vector shapes, "
        "splitKreduce_kernel after split-K GEMMs; FlashAttention-2 kernel traits",
    ),
    "cpu": Menu(
        family="cpu",
        tiles=_both((256, 256), (128, 128), (64, 64), (32, 32), (64, 16), (16, 4)),
        splits=(1,),
        stream_k=False,
        k_step=1,
        tensor_cores=False,
        attention_q=64,
        attention_kv_small_d=64,
        attention_kv_large_d=64,
        attention_decode_q=64,
        attention_fold_heads=False,
        source="oneDNN/MKL blocked GEMM: per-core blocks, no tensor-core padding",
    ),
}
MENUS["nvidia-sm75"] = attrs.evolve(
    MENUS["nvidia-sm80"],
    family="nvidia-sm75",
    tiles=_both((256, 128), (128, 128), (64, 64)),
    source="cutlass_75_tensorop_*_s1688gemm_*_align1 kernels (unaligned GEMMs on sm90 traces)",
)
# Volta and Turing: mma.sync tensor cores (sm70: fp16 only, 8x8x4; sm75: 16x8x8), the same
# CUTLASS 2.x tile sizes as sm80 without cp.async; fp32 on volta_sgemm kernels
MENUS["nvidia-sm70"] = attrs.evolve(
    MENUS["nvidia-sm75"],
    family="nvidia-sm70",
    simt_tiles=VOLTA_SGEMM,
    simt_batched_tiles=(),
    source="volta_* cuBLAS / CUTLASS 2.x kernel names (NeuSight's V100 traces for fp32)",
)
MENUS["nvidia-sm75"] = attrs.evolve(MENUS["nvidia-sm75"], simt_tiles=VOLTA_SGEMM, simt_batched_tiles=())
# What cuBLAS runs for an unaligned 16-bit GEMM on Hopper: the cutlass_75 align1 kernels, split
# only where the unsplit tiles leave SMs idle. H200 traces of the tails study set
# (benchmarks/eval/h200-tails.toml): splitKreduce followed them at 79 and 32 output tiles on 132
# SMs, never at 256-5056 (9 GEMMs, fp16 and bf16, N or K unaligned).
MENUS["nvidia-sm90-align1"] = attrs.evolve(
    MENUS["nvidia-sm75"],
    split_k_below_one_wave=True,
    source="cutlass_75_tensorop_*_s1688gemm_*_align1 kernels and their split-K rule (unaligned GEMMs on sm90 traces)",
)
# 16-bit rows a multiple of 4 bytes but not 16 (K or N % 8 in 2, 4, 6) on Hopper: cuBLAS runs
# Ampere's 'cutlass_80_tensorop_*_s16816gemm_*_{128x256,256x64}_64x3' kernels, not the align1
# ones, at twice their rate (the tails study set's 8 such GEMMs, H200 traces: ~250 TFLOP/s where
# align1 ran ~125 and nvjet ~800)
MENUS["nvidia-sm90-align4"] = attrs.evolve(
    MENUS["nvidia-sm80"],
    source="cutlass_80_tensorop_*_s16816gemm_* kernels (16-bit GEMMs with 4-byte aligned rows on sm90 traces)",
)
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
