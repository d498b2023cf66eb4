"""Per-operator estimates: a realistic mapping at achieved rates, decomposed into the waterfall
of results.TERMS starting from the operator's bound.

Each step re-times the same realistic configuration with one more real-world effect switched on
and keeps the larger of the step and the previous total (so no term is negative and the
estimate never falls below the bound):
  1 tile & wave quantization: the menu tile at the ceilings, no other loss
  2 compute efficiency: mainloop / feed / tile overhead / kernel-specific efficiency
  3 achieved bandwidth: memory at the access pattern's achieved bandwidth, real traffic
  4 alignment & padding: fallback kernels for unaligned rows, padded convolution channels
  5 kernel launches: fixed cost per kernel
"""

import math
from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge.bound.mappings.base import ceil_div
from tensorforge.estimate import gemm
from tensorforge.estimate.coefficients import EstimateCoefficients
from tensorforge.estimate.implementation import Implementation, rate_pattern
from tensorforge.estimate.menus import SIMT_MODES, Menu, menu_for
from tensorforge.workloads.collectives import CollectiveProblem, calibrated_for
from tensorforge.workloads.problems import AttentionBackwardProblem, AttentionProblem, MatmulProblem, StreamProblem

INF = float("inf")


@attrs.frozen
class Device:
    """The target as the estimate sees it: rates already made achievable."""

    family: str
    units: int
    clock_hz: float
    cache_bytes: float
    compute: dict[str, float]  # FLOP/s per math mode (achievable ceilings)
    dram_bytes_per_s: float
    vector_mode: str = "fp32"
    devices: int = 1  # a system's device count (collectives over every device resolve against it)
    collectives: Mapping[str, Any] = attrs.field(factory=dict, hash=False)  # calibrated curves by op/ranks
    # modes the board's power limit slows, at the rate the limit allows (estimate/power.py)
    capped: Mapping[str, float] = attrs.field(factory=dict, hash=False)
    limit_acts_s: float | None = None  # the call time from which the limit acts (PowerFigures)

    def rate(self, mode: str) -> float:
        return self.compute.get(mode) or self.compute[self.vector_mode]


def _waterfall(bound: float, steps: list[tuple[str, float]]) -> tuple[float, dict[str, float]]:
    """steps: (term, time of the configuration with this effect on); returns total and terms."""
    total, terms = bound, {}  # type: float, dict[str, float]
    for name, value in steps:
        new = max(total, value)
        terms[name] = terms.get(name, 0.0) + (new - total)
        total = new
    return total, terms


def _launches(total: float, terms: dict[str, float], kernels: int, c: EstimateCoefficients):
    extra = kernels * c.kernel.launch_s
    terms["kernel_launches"] = terms.get("kernel_launches", 0.0) + extra
    return total + extra


# -- GEMM and implicit-GEMM convolution ---------------------------------------------------


def _gemm_shape(p: MatmulProblem, impl: Implementation, menu: Menu) -> gemm.GemmShape:
    lds = impl.leading_dims or (p.k, p.n, p.n)
    # SIMT fp32 kernels (menus.SIMT_MODES) have align1 variants at about the same rate: no rule
    simt = bool(menu.simt_tiles) and p.math_mode in SIMT_MODES
    elems = (p.a_elem_bytes, p.b_elem_bytes, p.c_elem_bytes)
    aligned = (not menu.tensor_cores) or simt or gemm.is_aligned(lds, elems)
    partial = not aligned and gemm.is_aligned(lds, elems, gemm.PARTIAL_ALIGN_BYTES)
    conv, k_padded, conv_aligned = "", 0, True
    if impl.conv_channels:
        conv = "pointwise" if impl.conv_taps <= 1 and not impl.conv_gather else "kxk"
        if menu.tensor_cores:
            per_row = gemm.ALIGN_BYTES // p.a_elem_bytes
            padded = ceil_div(impl.conv_channels, per_row) * per_row
            conv_aligned = padded == impl.conv_channels
            k_padded = padded * max(1, impl.conv_taps)
        aligned = True  # cuDNN's own layout rules: only the channels matter
    return gemm.GemmShape(
        batch=p.batch,
        m=p.m,
        n=p.n,
        k=p.k,
        mode=p.math_mode,
        a_elem=p.a_elem_bytes,
        b_elem=p.b_elem_bytes,
        c_elem=p.c_elem_bytes,
        a_bytes=float(p.a.nbytes),
        b_bytes=float(p.b.nbytes),
        c_bytes=float(p.c.nbytes),
        aligned=aligned,
        partial_aligned=partial and not conv,
        k_padded=k_padded if k_padded != p.k else 0,
        conv=conv,
        conv_aligned=conv_aligned,
        conv_channels=int(impl.conv_channels or 0),
    )


def gemm_factors(s: gemm.GemmShape, c: EstimateCoefficients) -> tuple[float, float]:
    """(efficiency without alignment/padding penalties, the penalty factor)."""
    eff = c.gemm.mainloop_efficiency.get(s.mode) or min(c.gemm.mainloop_efficiency.values())
    penalty = 1.0
    if s.conv:
        if s.conv == "pointwise":
            eff *= c.conv.pointwise_efficiency
        else:  # R*S > 1: aligned channels pay each tap's gather beside it (_tap_cost), unaligned
            # ones run other engines (padded or direct): their own rates below
            eff *= c.conv.kxk_efficiency
        if s.mode in ("fp32", "tf32"):
            eff *= c.conv.fp32_efficiency
        if not s.conv_aligned:
            penalty *= c.conv.unaligned_efficiency
    if not s.aligned:
        partial = s.partial_aligned and c.gemm.partial_aligned_efficiency > 0
        penalty *= c.gemm.partial_aligned_efficiency if partial else c.gemm.unaligned_efficiency
    return eff, penalty


def _implicit_conv(s: gemm.GemmShape) -> bool:
    """An R*S > 1 convolution on cuDNN's implicit-GEMM tensor-core kernels (aligned channels)."""
    return s.conv == "kxk" and s.conv_aligned


def _tap_cost(s: gemm.GemmShape, c: EstimateCoefficients) -> gemm.TapCost | None:
    """Each tap's slice of K starts a new im2col gather (filter offsets, halo bounds): shallow taps
    pay it on more of their K and, where kxk_tap_tile is set, small tiles against less math
    (ConvCoefficients.kxk_tap_*)."""
    if not _implicit_conv(s):
        return None
    v = c.conv
    if not v.kxk_tap_tile:  # coefficients fitted before the tiled tap term: one series term for every kernel
        return gemm.TapCost(channels=v.kxk_tap_channels, conv_channels=s.conv_channels)
    if s.mode in ("fp32", "tf32"):  # sm80 kernels: the gather in series
        return gemm.TapCost(channels=v.fp32_tap_channels, conv_channels=s.conv_channels)
    return gemm.TapCost(
        channels=v.kxk_tap_channels, conv_channels=s.conv_channels, tile=v.kxk_tap_tile, overlap=v.kxk_tap_overlap
    )


def _tile_overhead(s: gemm.GemmShape, c: EstimateCoefficients) -> float:
    """Fixed cost per wave of tiles: an implicit-GEMM convolution exposes its share of the GEMM's
    (ConvCoefficients.kxk_wave_exposed) plus its own (conv.tile_overhead_s)."""
    if not _implicit_conv(s):
        return c.gemm.tile_overhead_s
    return c.gemm.tile_overhead_s * c.conv.kxk_wave_exposed + c.conv.tile_overhead_s


def _pointwise_stream(s: gemm.GemmShape, c: EstimateCoefficients) -> bool:
    """A 16-bit 1x1 convolution with its own fitted stream rate (ConvCoefficients.
    pointwise_stream_efficiency): fp32/tf32 ones run cuDNN's sm80 NCHW kernels behind layout
    copies, not the nvjet GEMM the pointwise probes timed."""
    return s.conv == "pointwise" and s.mode not in ("fp32", "tf32") and c.conv.pointwise_stream_efficiency > 0


def _stream(s: gemm.GemmShape, d: Device, c: EstimateCoefficients) -> tuple[float, float]:
    """(efficiency, fixed time) of the GEMM's operand stream: a 1x1 convolution's own rate where
    fitted (ConvCoefficients.pointwise_stream_efficiency) with the GEMM's fixed time; a
    read-dominated one's own where fitted (GemmCoefficients.read_stream_*), its fixed time at most
    the stream's own length (a GEMV of a few KB has no DRAM ramp to wait for, nor the timing
    flush's dirty lines to write back); else the GEMM's."""
    g = c.gemm
    if _pointwise_stream(s, c):
        return c.conv.pointwise_stream_efficiency, g.stream_fixed_s
    if s.read_dominated and g.read_stream_efficiency > 0:
        stream = (s.a_bytes + s.b_bytes + s.c_bytes) / (d.dram_bytes_per_s * g.read_stream_efficiency)
        return g.read_stream_efficiency, min(g.read_stream_fixed_s, stream)
    return g.stream_efficiency, g.stream_fixed_s


def _feed(s: gemm.GemmShape, d: Device, c: EstimateCoefficients) -> float:
    """Operand bytes per clock a unit feeds its tiles: the SIMT kernels' own where fitted."""
    simt = s.mode in SIMT_MODES and not s.conv and bool(menu_for(d.family).simt_tiles)
    return (
        c.gemm.simt_feed_bytes_per_clock if simt and c.gemm.simt_feed_bytes_per_clock else c.gemm.feed_bytes_per_clock
    )


def resident_rate(efficiency: float, resident: float, c: EstimateCoefficients) -> float:
    """The achieved fraction of the DRAM ceiling when `resident` of the bytes are already in the
    shared cache (they move at stream.resident_efficiency x the ceiling, never slower)."""
    resident = min(max(resident, 0.0), 1.0)
    return 1.0 / ((1.0 - resident) / efficiency + resident / max(c.stream.resident_efficiency, efficiency))


def gemm_rates(
    s: gemm.GemmShape,
    d: Device,
    c: EstimateCoefficients,
    *,
    efficiency=True,
    bandwidth=True,
    penalty=True,
    resident: float = 0.0,
) -> gemm.GemmRates:
    eff, pen = gemm_factors(s, c)
    return gemm.GemmRates(
        unit_rate=d.rate(s.mode) / d.units,
        efficiency=(eff if efficiency else 1.0) * (pen if penalty else 1.0),
        feed_bytes_per_s=_feed(s, d, c) * d.clock_hz * (c.conv.kxk_feed_scale if _implicit_conv(s) else 1.0)
        if efficiency
        else INF,
        tile_overhead_s=_tile_overhead(s, c) if efficiency else 0.0,
        stream_bytes_per_s=d.dram_bytes_per_s * (resident_rate(_stream(s, d, c)[0], resident, c) if bandwidth else 1.0),
        launch_s=0.0,
        prologue_s=(c.gemm.prologue_s + (c.conv.kxk_fixed_s if _implicit_conv(s) else 0.0)) if efficiency else 0.0,
        stream_fixed_s=_stream(s, d, c)[1] if bandwidth else 0.0,
        tap=_tap_cost(s, c) if efficiency else None,
    )


def gemm_menu(s: gemm.GemmShape, family: str) -> Menu:
    menu = menu_for(family)
    if s.conv == "kxk" and s.conv_aligned:  # implicit-GEMM convolution kernels: own tiles, no split-K
        # (unaligned channels run other engines: a direct convolution or a padded CUTLASS kernel)
        return attrs.evolve(menu, tiles=menu.conv_tiles or menu.tiles, splits=(1,))
    if not s.conv:
        menu = menu.for_mode(s.mode, batched=s.batch > 1)
    if not s.aligned and s.partial_aligned and menu.fallback_partial:
        return menu_for(menu.fallback_partial)
    return menu_for(menu.fallback) if (not s.aligned and menu.fallback) else menu


def estimate_matmul(
    p: MatmulProblem,
    impl: Implementation,
    bound: float,
    d: Device,
    c: EstimateCoefficients,
    resident: float = 0.0,
    warm: bool = False,
):
    """warm: the call runs without an L2 flush before it and `resident` of its operand bytes are
    in L2 (model.warm_residency); a flushed call's GEMM streams every operand from DRAM (the
    calibrated rates hold the flush's aftermath), whatever the bound's residency says."""
    resident = resident if warm else 0.0
    menu = menu_for(d.family)
    if impl.conv_depthwise:
        return _estimate_depthwise(p, impl, bound, d, c)
    s = _gemm_shape(p, impl, menu)
    if s.conv and not s.conv_aligned and max(1, impl.conv_taps) <= menu.conv_direct_max_taps:
        return _estimate_direct(p, impl, bound, d, c)
    menu = gemm_menu(s, d.family)
    geo = gemm.geometry(s, menu, d.units, d.cache_bytes)
    full = gemm_rates(s, d, c, resident=resident)
    i = gemm.best(geo, full)
    one = gemm.pick(geo, i)
    pad = p.k / s.k_run  # the share of the padded K that is real work

    def timed(**flags):
        t = gemm.times(one, gemm_rates(s, d, c, resident=resident, **flags))
        return float(t["compute"][0]), float(t["memory"][0])

    c_q, m_ceil = timed(efficiency=False, bandwidth=False, penalty=False)
    c_e, _ = timed(efficiency=True, bandwidth=False, penalty=False)
    _, m_ach = timed(efficiency=True, bandwidth=True, penalty=False)
    c_full, _ = timed()
    total, terms = _waterfall(
        bound,
        [
            ("tile_wave_quantization", max(c_q * pad, m_ceil)),
            ("compute_efficiency", max(c_e * pad, m_ceil)),
            ("achieved_bandwidth", max(c_e * pad, m_ach)),
            ("alignment_padding", max(c_full, m_ach)),
        ],
    )
    kernels = int(one["kernels"][0]) * max(1, impl.kernels)
    notes = []
    if s.conv and s.mode == "fp32" and menu_for(d.family).fp32_conv_layout_copies:
        # cuDNN runs fp32 convolutions in NCHW: the channels-last input and output are
        # transposed around the kernel, and an R x S > 1 filter too (one more kernel each, each
        # tensor read and written once more)
        taps = max(1, impl.conv_taps)
        copies = 2.0 * (p.a.nbytes + p.c.nbytes + (p.b.nbytes if taps > 1 else 0))
        extra = copies / (d.dram_bytes_per_s * c.stream.bandwidth_efficiency["copy"])
        terms["achieved_bandwidth"] = terms.get("achieved_bandwidth", 0.0) + extra
        total += extra
        kernels += 3 if taps > 1 else 2
        notes.append("fp32 convolution: NHWC -> NCHW -> NHWC layout conversions around the kernel")
    if impl.layout_copy_bytes or impl.layout_copy_kernels:
        # copies the implementation makes around the GEMM (torch.matmul making a batched operand
        # contiguous in eager attention): their bytes at the copy rate, one kernel each
        extra = float(impl.layout_copy_bytes) / (d.dram_bytes_per_s * c.stream.bandwidth_efficiency["copy"])
        terms["achieved_bandwidth"] = terms.get("achieved_bandwidth", 0.0) + extra
        total += extra
        kernels += impl.layout_copy_kernels
    base_menu = menu_for(d.family)
    if s.conv and not s.conv_aligned and base_menu.conv_pad_kernels:
        # the input copied into channel-padded form twice (two nhwcAddPaddingKernel in the
        # traces, each reading the input and writing its padded copy), and two memsets
        padded = float(p.a.nbytes) * s.k_run / max(1, p.k)
        extra = 2.0 * (p.a.nbytes + padded) / (d.dram_bytes_per_s * c.stream.bandwidth_efficiency["copy"])
        terms["alignment_padding"] = terms.get("alignment_padding", 0.0) + extra
        total += extra
        kernels += base_menu.conv_pad_kernels
        notes.append("channel-padding copies before the tensor-core kernel")
    total = _launches(total, terms, kernels, c)
    if not s.aligned:
        rate = (
            "the partly aligned rate"
            if s.partial_aligned and c.gemm.partial_aligned_efficiency > 0
            else "the unaligned rate"
        )
        notes.append(
            f"a leading dimension is not a multiple of 16 bytes: fallback kernels ({menu.family} menu) at {rate}"
        )
    if s.conv and not s.conv_aligned:
        notes.append(
            f"{impl.conv_channels} channels per group padded to "
            f"{s.k_run // max(1, impl.conv_taps)} (not a multiple of 16 bytes)"
        )
    label = f"{menu.family} {gemm.describe(geo, i)}"
    return total, terms, kernels, label, tuple(notes)


def _estimate_direct(p: MatmulProblem, impl: Implementation, bound: float, d: Device, c: EstimateCoefficients):
    """A direct convolution engine on the CUDA cores (channels too few for the tensor-core path
    and a small filter): the real multiply-adds at the direct engine's share of the vector rate,
    input and output streamed once."""
    nbytes = float(p.a.nbytes + p.b.nbytes + p.c.nbytes)
    compute = p.flops / d.rate(d.vector_mode)
    memory = nbytes / (d.dram_bytes_per_s * c.gemm.stream_efficiency)
    total, terms = _waterfall(
        bound,
        [
            ("tile_wave_quantization", max(compute, nbytes / d.dram_bytes_per_s)),
            ("achieved_bandwidth", max(compute, memory)),
            ("alignment_padding", max(compute / c.conv.direct_efficiency, memory)),
        ],
    )
    kernels = max(1, impl.kernels)
    total = _launches(total, terms, kernels, c)
    note = f"{impl.conv_channels} channels per group (not a multiple of 16 bytes), {impl.conv_taps} taps"
    return total, terms, kernels, "direct convolution engine (CUDA cores)", (note,)


def _estimate_depthwise(p: MatmulProblem, impl: Implementation, bound: float, d: Device, c: EstimateCoefficients):
    """Depthwise convolution: a dedicated stencil kernel (cuDNN's conv2d_c1_k1_nhwc_specialized
    on the H200) streaming input and output, with the multiply-adds on the vector units, plus a
    fixed time per kernel that does not scale with its bytes (ConvCoefficients.depthwise_fixed_s:
    its first wave's start on a cold cache and its last wave's drain)."""
    nbytes = float(p.a.nbytes + p.b.nbytes + p.c.nbytes)
    compute = p.flops / d.rate(d.vector_mode)
    memory = nbytes / (d.dram_bytes_per_s * c.conv.depthwise_bandwidth_efficiency)
    taps = compute / c.conv.depthwise_compute_efficiency
    total, terms = _waterfall(
        bound,
        [
            ("tile_wave_quantization", max(compute, nbytes / d.dram_bytes_per_s)),
            ("compute_efficiency", max(taps, nbytes / d.dram_bytes_per_s)),
            ("achieved_bandwidth", max(taps, memory) + c.conv.depthwise_fixed_s),
        ],
    )
    kernels = max(1, impl.kernels)
    total = _launches(total, terms, kernels, c)
    return total, terms, kernels, "depthwise stencil kernel (memory streaming)", ()


# -- fused attention ----------------------------------------------------------------------


def estimate_attention(
    p: AttentionProblem,
    impl: Implementation,
    bound: float,
    d: Device,
    c: EstimateCoefficients,
    resident: float = 0.0,
    warm: bool = False,
):
    """Fused attention blocked as the family's kernels block it (menus.py): query blocks over
    key blocks, causal blocks above the diagonal skipped, split-KV with a combine kernel when a
    decode step has too few (batch x head) blocks to fill the device."""
    menu = menu_for(d.family)
    group = p.heads // p.kv_heads
    # one query per sequence runs the decode kernel (the H200 traces: a 16-query prefill already
    # runs the prefill kernel)
    decode = p.q_len == 1
    # FlashAttention-2 folds the query heads sharing a KV head into the query rows when one
    # query is asked per head (seqlenq_ngroups_swapped); cuDNN's kernels do not
    swapped = menu.attention_fold_heads and p.q_len == 1 and group > 1
    rows = p.q_len * group if swapped else p.q_len
    heads = p.kv_heads if swapped else p.heads
    tq = menu.attention_decode_q if decode else menu.attention_q
    tkv = menu.attention_kv_small_d if p.head_dim <= 64 else menu.attention_kv_large_d
    qblocks = ceil_div(rows, tq)
    items = p.batch * heads * qblocks
    kv_blocks = ceil_div(p.kv_len, tkv)
    splits = 1
    if decode and items < menu.attention_split_below * d.units and kv_blocks > 1:
        splits = max(2, min(128, kv_blocks, ceil_div(d.units, items)))
    # keys each query block computes, padded to key blocks (causal: up to the block's last row);
    # summed in closed form so a long sequence costs no memory
    per_block = 2.0 * p.matmuls * tq * p.head_dim  # 2 products per pair forward, 5 backward
    if p.causal and not swapped and qblocks > 1:
        offset = p.kv_len - p.q_len
        padded_sum = _padded_prefix_sum(offset, tq, p.q_len, tkv, splits)
        last = ceil_div(ceil_div(p.kv_len, splits), tkv) * tkv
        first = ceil_div(ceil_div(offset + min(tq, p.q_len), splits), tkv) * tkv
        uniform = first == last
    else:
        last = ceil_div(ceil_div(p.kv_len, splits), tkv) * tkv
        padded_sum, uniform = last * qblocks, True
    total_flops = per_block * padded_sum * splits * p.batch * heads
    longest = per_block * last
    work_items = items * splits
    unit_rate = d.rate(p.math_mode) / d.units
    if uniform:  # equal blocks fill whole waves
        waves = math.ceil(work_items / d.units)
        quantized = waves * longest
    else:  # causal blocks differ: at best perfectly balanced
        waves = max(work_items / d.units, 1.0)
        quantized = max(total_flops / d.units, longest)
    eff = c.attention.causal_efficiency if (p.causal and p.q_len > 1) else c.attention.prefill_efficiency
    overhead = waves * c.attention.block_overhead_s
    nbytes = float(sum(t.nbytes for t in p.reads() + p.writes()))  # Q, K, V, O (backward: + dO, dQ, dK, dV)
    if splits > 1:  # fp32 partial outputs written and read back
        nbytes += 2.0 * 4 * p.batch * p.heads * p.q_len * p.head_dim * splits
    bw = c.attention.decode_bandwidth_efficiency if decode else c.gemm.stream_efficiency
    copy = float(impl.layout_copy_bytes) / (d.dram_bytes_per_s * c.stream.bandwidth_efficiency["copy"])
    mem_ceil = nbytes / d.dram_bytes_per_s
    memory = nbytes / (d.dram_bytes_per_s * bw)
    if decode and group > 1 and not swapped:
        # each query head's block reads its KV head: the group re-reads it from the shared cache
        kv = float(p.k.nbytes + p.v.nbytes)
        memory = max(memory, group * kv / (d.dram_bytes_per_s * c.attention.decode_cache_multiple))
    if decode:
        memory += c.attention.decode_fixed_s
    compute = quantized / (unit_rate * eff) + overhead
    total, terms = _waterfall(
        bound,
        [
            ("tile_wave_quantization", max(quantized / unit_rate, mem_ceil)),
            ("compute_efficiency", max(compute, mem_ceil)),
            ("achieved_bandwidth", max(compute, memory) + copy),
        ],
    )
    # prefill: the family's kernels per call (cuDNN: a Memset + the kernel); decode: the kernel,
    # + the split-KV combine, + the copy that unfolds folded heads
    kernels = (
        (max(1, impl.kernels) if decode else max(impl.kernels, menu.attention_prefill_kernels))
        + (1 if splits > 1 else 0)
        + (1 if swapped else 0)
        + impl.layout_copy_kernels
    )
    total = _launches(total, terms, kernels, c)
    label = (
        f"{tq}x{tkv} blocks, {work_items} blocks"
        + (f" (split-KV {splits} + combine)" if splits > 1 else "")
        + (f", {group} query heads folded per KV head" if swapped else "")
    )
    notes = ("decode: KV cache streamed at the decode bandwidth",) if decode else ()
    return total, terms, kernels, label, notes


def _ceil_sum(a: int, step: int, n: int, div: int) -> int:
    """sum over j = 1..n of ceil((a + j * step) / div), in O(div) whatever n: the remainders
    repeat with period div / gcd(step, div), each period adding the same amount more."""
    if n <= 0:
        return 0
    period = div // math.gcd(step, div)
    first = [-(-(a + j * step) // div) for j in range(1, min(n, period) + 1)]
    full, rem = divmod(n, period)
    if full == 0:
        return sum(first)
    rise = period * step // div  # each later period is larger by this, element-wise
    total = full * sum(first) + period * rise * full * (full - 1) // 2
    return total + sum(first[:rem]) + rem * rise * full


def _padded_prefix_sum(offset: int, tq: int, q_len: int, tkv: int, splits: int) -> int:
    """sum over causal query blocks of their visible keys, each padded to key blocks of tkv
    (split into `splits` parts first)."""
    whole = q_len // tq  # blocks ending at (j + 1) * tq
    if splits == 1:
        total = tkv * _ceil_sum(offset, tq, whole, tkv)
    else:  # split causal blocks (no kernel today: only one-query decode splits) cost O(blocks)
        total = sum(ceil_div(ceil_div(offset + j * tq, splits), tkv) * tkv for j in range(1, whole + 1))
    if q_len % tq:  # a last, partial block sees every key
        total += ceil_div(ceil_div(offset + q_len, splits), tkv) * tkv
    return total


# -- streaming (elementwise, norms, copies) ------------------------------------------------


def estimate_stream(
    p: StreamProblem,
    impl: Implementation,
    bound: float,
    d: Device,
    c: EstimateCoefficients,
    resident: float = 0.0,
    warm: bool = False,
):
    pattern = impl.pattern or "elementwise"
    compulsory = float(sum(t.nbytes for t in p.read_tensors + p.write_tensors))
    moved = compulsory * impl.traffic_factor + impl.layout_copy_bytes
    compute = p.flops / d.rate(p.math_mode if p.math_mode in d.compute else d.vector_mode)
    eff = c.stream.bandwidth_efficiency[rate_pattern(pattern, c.stream.bandwidth_efficiency)]
    # the share of the bytes a previous operator left in the shared cache (the bound's residency)
    # moves at the calibrated cache-resident rate
    rate = resident_rate(eff, resident, c)
    total, terms = _waterfall(
        bound,
        [
            ("achieved_bandwidth", max(compute, moved / (d.dram_bytes_per_s * rate))),
        ],
    )
    kernels = impl.kernels + impl.layout_copy_kernels
    total = _launches(total, terms, kernels, c)
    label = f"{kernels} {pattern} kernel{'s' if kernels != 1 else ''}"
    if impl.traffic_factor != 1.0:
        label += f", {impl.traffic_factor:g}x the compulsory bytes"
    return total, terms, kernels, label, ()


def estimate_collective(
    p: CollectiveProblem,
    impl: Implementation,
    bound: float,
    d: Device,
    c: EstimateCoefficients,
    resident: float = 0.0,
    warm: bool = False,
):
    """A collective at the median the calibration sweep measured at its size (the chord between
    the two swept sizes around it: CollectiveCeiling.expected_s), as achieved bandwidth over the
    bound; the sweep's medians were timed like a workload, so the timing harness the workload
    adds is taken off here. Without a calibrated curve that has medians: bound + launch."""
    n = p.ranks or d.devices
    curve = calibrated_for(p, n, d.collectives) if n >= 2 else None
    expected = curve.expected_s(p.bytes) if curve is not None else None
    if expected is None:
        return estimate_unknown(p, impl, bound, d, c, resident)
    kernels = max(1, impl.kernels)
    device = expected - c.kernel.harness_s - kernels * c.kernel.launch_s
    total, terms = _waterfall(bound, [("achieved_bandwidth", device)])
    total = _launches(total, terms, kernels, c)
    return total, terms, kernels, f"the {p.op} sweep's median at {p.bytes} B over {n} ranks", ()


ESTIMATORS = {
    MatmulProblem: estimate_matmul,
    AttentionProblem: estimate_attention,
    AttentionBackwardProblem: estimate_attention,  # its forward's efficiency: no probe runs a backward
    StreamProblem: estimate_stream,
    CollectiveProblem: estimate_collective,
}


def estimate_unknown(
    p, impl: Implementation, bound: float, d: Device, c: EstimateCoefficients, resident: float = 0.0, warm: bool = False
):
    """A problem type a plugin brought and the estimate has no model of: its bound plus the
    launch cost of its kernels, and a note that says so (never a silent guess)."""
    terms: dict[str, float] = {}
    kernels = max(1, impl.kernels)
    total = _launches(bound, terms, kernels, c)
    return (
        total,
        terms,
        kernels,
        "no estimate model: bound + kernel launches",
        (f"the estimate has no model of {type(p).__name__}: bound + launch cost only",),
    )
