"""The estimate's coefficients: achieved efficiencies and fixed costs, each a physical figure
measured by a calibration probe (tensorforge_measure/calibrate and the tf-cpu probes), never fitted
to the workloads the estimate is scored on.

Rates are stored as fractions of the ceilings in force (so a device of the same architecture
family with other clocks or bandwidth reuses them), fixed costs in seconds, the operand feed of
a processing unit in bytes per clock. `basis` says where the figures come from; the estimate
shows it beside every number (`estimate basis`).
"""

import typing
from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge.errors import TensorForgeError
from tensorforge.estimate.implementation import PATTERNS


def _positive(_inst, attr, value):
    if not (isinstance(value, (int, float)) and value > 0):
        raise ValueError(f"{attr.name} must be > 0, got {value!r}")


def _fraction(_inst, attr, value):
    # Above 1 is allowed (a ceiling from p10 of a quantized schedule can be beaten a little by
    # a smoother one) but not by much: anything beyond 1.5 is a broken calibration.
    if not (isinstance(value, (int, float)) and 0 < value <= 1.5):
        raise ValueError(f"{attr.name} must be in (0, 1.5], got {value!r}")


def _non_negative(_inst, attr, value):
    if not (isinstance(value, (int, float)) and value >= 0):
        raise ValueError(f"{attr.name} must be >= 0, got {value!r}")


def _fractions(_inst, attr, value):
    for key, item in value.items():
        if not (isinstance(item, (int, float)) and 0 < item <= 1.5):
            raise ValueError(f"{attr.name}[{key}] must be in (0, 1.5], got {item!r}")


def _savings(_inst, attr, value):
    # seconds a call saves without the L2 flush (warm.py): a few microseconds, never negative
    for key, item in value.items():
        if not (isinstance(item, (int, float)) and 0 <= item < 1e-3):
            raise ValueError(f"{attr.name}[{key}] must be in [0, 1e-3) s, got {item!r}")


def _resident(_inst, attr, value):
    # bytes served from the shared cache move faster than the DRAM ceiling, but not unboundedly
    if not (isinstance(value, (int, float)) and 0 < value <= 10):
        raise ValueError(f"{attr.name} must be in (0, 10], got {value!r}")


@attrs.frozen
class KernelCosts:
    """Fixed costs of launching work, in seconds.

    harness_s: once per timed workload: what an event-timed single kernel costs beyond its
        launch (event pair, first kernel starting after the cache flush).
    launch_s: every kernel on the device: minimum duration plus the gap to the next one.
    host_per_kernel_s: eager PyTorch: host time per kernel (dispatch + the Python around it).
    host_slack_s: eager: host time hidden behind the timing harness's cache flush.
    graph_launch_s: a kernel's fixed cost inside a CUDA graph replay (no launch latency between
        kernels); 0 = not measured, launch_s is used.
    graph_harness_s: once per call in the device-time regime: what a CUDA-graph sample holds
        beyond its kernels' intervals (a graph sample is (T[flush, fn]*n - T[flush]*n) / n, with
        no event pair: the intercept of the graph-timed kernel chains).
    graph_timed: the probes were also timed as CUDA graphs, and graph_launch_s / graph_harness_s
        come from those chains; False (older calibrations, the host CPU): harness_s is used.
    """

    harness_s: float = attrs.field(validator=_non_negative)
    launch_s: float = attrs.field(validator=_positive)
    host_per_kernel_s: float = attrs.field(validator=_non_negative)
    host_slack_s: float = attrs.field(default=0.0, validator=_non_negative)
    graph_launch_s: float = attrs.field(default=0.0, validator=_non_negative)
    graph_harness_s: float = attrs.field(default=0.0, validator=_non_negative)
    graph_timed: bool = False

    @property
    def device_launch_s(self) -> float:
        if self.graph_timed and self.graph_launch_s:
            return self.graph_launch_s  # graph-timed chains: the device's own cost per kernel
        return min(self.graph_launch_s, self.launch_s) if self.graph_launch_s else self.launch_s

    @property
    def device_harness_s(self) -> float:
        return self.graph_harness_s if self.graph_timed else self.harness_s


@attrs.frozen
class GemmCoefficients:
    """mainloop_efficiency: per math mode, the rate a large tile's main loop reaches as a
        fraction of the compute ceiling.
    feed_bytes_per_clock: operand bytes a unit can stream into its tiles per clock (small
        tiles need more bytes per FLOP and are held back by it).
    tile_overhead_s: per tile on a unit: pipeline fill and epilogue.
    stream_efficiency: achieved fraction of the DRAM ceiling when a GEMM streams its operands
        (skinny and GEMV shapes).
    unaligned_efficiency: rate fraction of the fallback kernels that run when a leading
        dimension is not a multiple of 16 bytes (no TMA / vectorised loads).
    partial_aligned_efficiency: the same for rows that are a multiple of 4 bytes but not 16 (a
        16-bit K or N that is even but not a multiple of 8), where the family's menu says which
        kernels run them (Menu.fallback_partial: narrower vector loads, twice the align1 rate on an
        H200); 0 = not fitted, unaligned_efficiency serves.
    prologue_s: once per GEMM kernel, beyond a tiny kernel's cost: the first operand tiles
        fetched from DRAM before any math, and the last wave's epilogue drained after it. Paid
        once, not per wave: Hopper's warp-specialised kernels prefetch the next tile during the
        current one's epilogue. Why it exists: graph-timed H200 GEMMs of one wave (128x128x192:
        2.96 us) take ~2 us more than a tiny elementwise kernel (0.9-1.4 us per kernel in a graph),
        and charging that per wave instead made a 12-wave GEMM 20 us too slow.
    stream_fixed_s: once per memory-bound GEMM kernel (skinny, GEMV): the time before its operand
        stream runs at the streaming rate. Why: graph-timed H200 GEMVs of 75 MB and 134 MB of
        weights ran 27 and 41 us, a fixed ~9 us plus the bytes at ~98% of the copy ceiling, the
        same shape as the decode-attention probes (a read-dominated stream after the L2 flush).
    read_stream_efficiency, read_stream_fixed_s: the same two for a read-dominated GEMM (operand
        bytes >= READ_DOMINATED x the bytes written: a GEMV, a skinny decode GEMM, a small-N tall
        one), fitted from those probes alone (fit.py, stage gemm-stream); 0 = not fitted, the
        two above serve. The fixed time is at most the stream's own length (operators._stream). Why apart: stage gemm fits one pair to every memory-bound GEMM with four
        compute-side coefficients; in an H200 run of 2026-12-01 its compromise (1.5 us,
        73% of the copy ceiling) had the 201 MB GEMV probe 21% slow and the 19 MB one 15% fast,
        and the scored decode GEMMs (117-134 MB of weights) 12-17% slow, while those probes lie on
        one line of ~7 us (a one-wave kernel's DRAM ramp, the timing flush's dirty lines written
        back) plus the bytes at ~93% of the ceiling; that pair for every GEMM had a batched
        128 x 128^3 GEMM (a third of its bytes written) 30% slow."""

    mainloop_efficiency: Mapping[str, float] = attrs.field(validator=_fractions)
    feed_bytes_per_clock: float = attrs.field(validator=_positive)
    tile_overhead_s: float = attrs.field(validator=_non_negative)
    stream_efficiency: float = attrs.field(validator=_fraction)
    unaligned_efficiency: float = attrs.field(validator=_fraction)
    prologue_s: float = attrs.field(default=0.0, validator=_non_negative)
    stream_fixed_s: float = attrs.field(default=0.0, validator=_non_negative)
    read_stream_efficiency: float = attrs.field(default=0.0, validator=_non_negative)
    read_stream_fixed_s: float = attrs.field(default=0.0, validator=_non_negative)
    # the operand feed of the CUDA-core (SIMT) fp32 kernels (menus.SIMT_MODES): their tiles load
    # operands from shared memory into registers for every FMA, not into tensor cores; 0 = the
    # tensor-core feed serves (coefficients fitted before the SIMT path)
    simt_feed_bytes_per_clock: float = attrs.field(default=0.0, validator=_non_negative)
    partial_aligned_efficiency: float = attrs.field(default=0.0, validator=_non_negative)


@attrs.frozen
class ConvCoefficients:
    """Convolution rates relative to the GEMM model of the same implicit GEMM.

    kxk_efficiency: R*S > 1 (im2col address generation, halo re-reads).
    pointwise_efficiency: 1x1 (a plain GEMM over NHWC).
    fp32_efficiency: extra factor for fp32/tf32 convolutions (other kernel families).
    unaligned_efficiency: channels per group not a multiple of 16 bytes (a C=3 stem): the rate
        of whatever path runs, as a fraction of the channel-padded GEMM model.
    depthwise_bandwidth_efficiency: depthwise kernels stream input and output at this fraction
        of the DRAM ceiling.
    depthwise_compute_efficiency: and do their per-tap multiply-adds (and loads) at this fraction
        of the vector (fp32) rate: a 5x5 depthwise kernel is slower per byte than a 3x3 one.
    depthwise_fixed_s: once per depthwise kernel, beside its bytes and taps: the time that does
        not scale with its size (its first wave's halo loads waiting on DRAM behind the timing
        flush's dirty lines, its last wave's drain); 0 = none (coefficients fitted before it).
        Why: the H200's two 3x3 depthwise probes (19 and 51 MB, graph p50 13.6 and 26.4 us in
        every session since 2026-11-30) lie on one line of bytes with a ~4.4 us intercept beyond
        the launch, at ~2.5 TB/s; without it the fit took one rate between them (1.83 TB/s), the
        19 MB probe 12% fast, the 51 MB one 12% slow, and the 103 MB default conv_depthwise_3x3
        came out 18% slow, a 6 MB 7x7 one 35% fast.
    tile_overhead_s: extra fixed cost per tile of an implicit-GEMM (R*S > 1) convolution
        (filter and activation address set-up) on top of the GEMM's.
    direct_efficiency: unaligned channels with a small filter (a C=3 3x3 stem) run a direct
        convolution engine on the CUDA cores: its multiply-adds at this fraction of the vector
        (fp32) rate. unaligned_efficiency is then the rate of the padded tensor-core path the
        larger filters take (menus.Menu.conv_direct_max_taps).
    kxk_tap_channels: an R*S > 1 convolution's rate is kxk_efficiency / (1 + this / channels per
        tap): each tap's slice of K starts a new im2col gather (filter offsets, halo bounds), so a
        filter over few channels pays it on more of its K. Why: with one rate for all, the closing
        H200 session's kxk probes of 64 channels ran 5-23% slower than estimated and those of
        512 channels 16-57% faster; 0 = one rate whatever the depth.
    kxk_wave_exposed: the share of the GEMM's tile overhead (gemm.tile_overhead_s, per wave) an
        implicit-GEMM (R*S > 1) convolution kernel exposes per wave; 1 = all of it (coefficients
        fitted before 2026-12-01). Why: cuDNN's non-persistent convolution kernels keep several
        CTAs per SM, so one tile's epilogue hides under another's main loop; charged the GEMM's
        1.4 us per wave, the 48-wave 3x3 convolutions of an H200 run (2026-12-01) came out 68 us (+47%)
        slow while the fit pushed tile_overhead_s to its limit 0.
    kxk_fixed_s: once per implicit-GEMM convolution kernel (filter and im2col descriptors, the
        first tiles' pipeline fill): what a one-wave convolution costs beyond its tiles. Apart from
        the per-wave cost only with probes of many waves (probe_plan: 20-60 waves).
    kxk_tap_tile: the tile (rows x cols) at which kxk_tap_channels holds on the 16-bit
        implicit-GEMM kernels; a tile of a times that area pays 1/a of it (gemm.tap_share). 0 = the
        same for every tile, and kxk_tap_overlap, fp32_tap_channels unused (coefficients fitted
        before the tiled tap term, 2026-12-01). Why: a tap's gather (a new im2col offset for the activation
        tile, a pipeline stage refilled) is a fixed time per tile and k-block, while the math it
        feeds grows with rows x cols x channels; with one tap term for all tiles the model ran
        64x64 tiles as fast per FLOP as 256x64 and 128x128 ones and took them wherever they
        quantized better. (The H200 traces: cuDNN takes 64x64 where larger tiles would leave most
        SMs idle, 8 x 256 x 14^2 and 4 x 512 x 7^2, 256x64 or 128x128 where those fill the device;
        one exception, 8 x 64 x 112^2 on 64x64 at 12 waves, is the conv-kxk stage's largest miss.)
    kxk_tap_overlap: the p of the p-norm that adds a tap's gather to its math: the share of the
        rate is (1 + (tap channels / channels)^p)^(-1/p); 1 = the gather in series with the math,
        large p = hidden under it (max). Why: Hopper's implicit-GEMM kernels issue the next tap's
        TMA im2col load from a producer warp while the consumers multiply (warp-specialized), so
        a deep tap hides its gather: H200 probes (2026-12-01) ran 512-channel 3x3
        convolutions at 96% of the bf16 ceiling and 64-channel ones at 57%, which the series form
        (p = 1) cannot give at once (it had the 256-channel held-out convolution 15% slow).
    fp32_tap_channels: the tap term of fp32 and tf32 convolutions (series, every tile the same)
        where kxk_tap_tile is set: cuDNN runs them on sm80 kernels (cp.async, no warp
        specialization: the same warps compute the gather and multiply), fitted from their own
        probes with fp32_efficiency.
    pointwise_stream_efficiency: the achieved fraction of the DRAM ceiling of a 16-bit 1x1
        convolution's operand stream (stage conv-pointwise, from its memory-bound probes), with the
        GEMM's fixed time gemm.stream_fixed_s; 0 = the GEMM's gemm.stream_efficiency (coefficients
        fitted before this term, 2026-12-01). Why apart: a 1x1 convolution over NHWC activations is one
        pass over M = N*H*W rows of K channels with a filter of a few KB to 2 MB that every tile
        re-reads from L2 (the H200 traces: nvjet TNN kernels of 1256-1568 tiles, 10-12 waves); the
        memory-bound GEMM probes that fit gemm.stream_efficiency re-read both operands across
        tiles or run one wave of long-K tiles (2.8-3.0 TB/s on the H200). Stage conv-pointwise
        fitted only a compute multiplier, so its memory-bound probe (64 x 64 x 56^2 -> 256, 128 MB,
        38.2 us graph: 3.5 TB/s past the launch) came out 13% slow in every session, and the
        ResNet-50 1x1 convolutions at 56^2 (64 MB) 10-21% slow."""

    kxk_efficiency: float = attrs.field(validator=_fraction)
    pointwise_efficiency: float = attrs.field(validator=_fraction)
    fp32_efficiency: float = attrs.field(validator=_fraction)
    unaligned_efficiency: float = attrs.field(validator=_fraction)
    depthwise_bandwidth_efficiency: float = attrs.field(validator=_fraction)
    depthwise_compute_efficiency: float = attrs.field(default=1.0, validator=_fraction)
    depthwise_fixed_s: float = attrs.field(default=0.0, validator=_non_negative)
    tile_overhead_s: float = attrs.field(default=0.0, validator=_non_negative)
    direct_efficiency: float = attrs.field(default=0.2, validator=_fraction)
    kxk_tap_channels: float = attrs.field(default=0.0, validator=_non_negative)
    kxk_wave_exposed: float = attrs.field(default=1.0, validator=_fraction)
    kxk_feed_scale: float = attrs.field(default=1.0, validator=_positive)
    kxk_fixed_s: float = attrs.field(default=0.0, validator=_non_negative)
    kxk_tap_tile: float = attrs.field(default=0.0, validator=_non_negative)
    kxk_tap_overlap: float = attrs.field(default=1.0, validator=_positive)
    fp32_tap_channels: float = attrs.field(default=0.0, validator=_non_negative)
    pointwise_stream_efficiency: float = attrs.field(default=0.0, validator=_non_negative)


@attrs.frozen
class AttentionCoefficients:
    """prefill_efficiency / causal_efficiency: fused attention's rate on its tiles as a fraction
    of the compute ceiling, without and with the causal mask; block_overhead_s: fixed cost per
    block (loading the query block, writing the output). decode_bandwidth_efficiency: a decode
    step (few queries over a long KV cache) streams the cache at this DRAM fraction;
    decode_cache_multiple: where the query heads of a KV head run as separate blocks (grouped-
    query attention without head folding), each re-reads the KV head from the shared cache at
    this multiple of the DRAM ceiling; decode_fixed_s: once per decode call, the time before
    the KV stream runs at its rate (the first wave's loads at full DRAM latency, the combine of
    split-KV partials). Why: graph-timed H200 decode probes ran 6-10 us longer than their KV bytes
    at any one bandwidth explain, whatever their size (25-270 MB), so a bandwidth fraction alone
    made the large ones 35% slow and the small ones 20% fast."""

    prefill_efficiency: float = attrs.field(validator=_fraction)
    causal_efficiency: float = attrs.field(validator=_fraction)
    decode_bandwidth_efficiency: float = attrs.field(validator=_fraction)
    block_overhead_s: float = attrs.field(default=0.0, validator=_non_negative)
    decode_cache_multiple: float = attrs.field(default=10.0, validator=_resident)
    decode_fixed_s: float = attrs.field(default=0.0, validator=_non_negative)


def _patterns(_inst, attr, value):
    _fractions(_inst, attr, value)
    missing = [p for p in PATTERNS if p not in value]
    if missing:
        raise ValueError(f"{attr.name} lacks access patterns {', '.join(missing)}")


@attrs.frozen
class StreamCoefficients:
    """Achieved fraction of the DRAM ceiling per access pattern (elementwise, norm, copy,
    concat) at sizes past the launch floor; the fixed cost per kernel is KernelCosts'.
    resident_efficiency: the same for the share of an operator's bytes a previous operator left
    in the shared cache (a multiple of the DRAM ceiling)."""

    bandwidth_efficiency: Mapping[str, float] = attrs.field(validator=_patterns)
    resident_efficiency: float = attrs.field(default=1.0, validator=_resident)


def _seconds(_inst, attr, value):
    for key, item in value.items():
        if not (isinstance(item, (int, float)) and item >= 0):
            raise ValueError(f"{attr.name}[{key}] must be >= 0 s, got {item!r}")


@attrs.frozen
class TrainingHostCosts:
    """Host time of an eager training step beyond Python launching one framework call per kernel
    (train_host.py uses them; the train-host probes of probe_plan.py measure them, fit.py stage
    train-host). Why apart from KernelCosts.host_per_kernel_s: that one is fitted from forward
    blocks, where Python calls every kernel; a training step also runs autograd's engine (its
    backward kernels issued by the engine's nodes, on a thread of its own on a GPU) and an
    optimizer's Python step, and an H200 ran one-layer steps 5-9x slower eagerly than their
    device time (benchmarks/RESULTS.md, training steps) with a handful of kernels each.

    measured: the train-host probes ran and these figures are theirs; False (every calibration
        before them, every shipped family): not modelled, an eager step is charged as forward
        kernels alone (the old estimate) and the basis says so.
    step_s: once per step: the gradients set to None, the step's Python around its micro-steps.
    micro_step_s: once per micro-step: the call into autograd's engine (its graph task, the
        hand-over to the device's backward thread and back) and the forward's custom-Function
        wrappers.
    backward_kernel_s: per kernel the engine issues during a backward, in place of
        host_per_kernel_s: its node's dispatch (C++ or a custom Function's Python backward).
    optimizer_step_s: per optimizer ('sgd', 'adamw'), once per step: the Python of its step
        (the step wrapper, grouping tensors by device and dtype, the fused kernels' launches).
    optimizer_tensor_s: per parameter tensor the optimizer's step walks (its lists).
    serial: the device is the host's own cores (a CPU: kernels run on the calling thread), so the
        host's work and the kernels add; False (a GPU): the host runs ahead of the device.
    """

    measured: bool = False
    step_s: float = attrs.field(default=0.0, validator=_non_negative)
    micro_step_s: float = attrs.field(default=0.0, validator=_non_negative)
    backward_kernel_s: float = attrs.field(default=0.0, validator=_non_negative)
    optimizer_step_s: Mapping[str, float] = attrs.field(factory=dict, validator=_seconds)
    optimizer_tensor_s: float = attrs.field(default=0.0, validator=_non_negative)
    serial: bool = False


BASIS_KINDS = ("calibrated", "declared", "carried-over", "carried-over-other-family")


@attrs.frozen
class EstimateCoefficients:
    """Everything the estimate needs on one device family, with where it came from.

    family: architecture family the figures hold for (e.g. 'nvidia-sm90').
    basis_kind: 'calibrated' (probes on the measured device), 'declared' (a target file),
        'carried-over' (a calibrated device of the same family), 'carried-over-other-family'.
    basis: one line for people: which device, when, which fingerprint or file.
    peak_fraction, dram_fraction: calibrated / datasheet on the source device; they turn a
        datasheet ceiling into an achievable one when no calibration of this device exists.
    source_clock_mhz: the clock of the source device's ceilings (the feed is per clock).
    warm_saving_s: per class of operator (warm.WARM_CLASSES), the seconds one execution saves in
        a window of calls back to back without the L2 flush (warm.py); empty: not probed, and a
        window's time is the flushed device time.
    warm_saving_share: per class, the share of a short execution's flushed device time it saves
        at most (warm.py: min(warm_saving_s, share x time)); empty (calibrations made before the
        share was fitted, 2026-12-01): the class's saving whatever the execution's time.

    training: the host costs of an eager training step (TrainingHostCosts); not measured by
        default: shipped families and calibrations without the train-host probes leave them out.
    """

    family: str
    basis_kind: str = attrs.field(validator=attrs.validators.in_(BASIS_KINDS))
    basis: str
    kernel: KernelCosts
    gemm: GemmCoefficients
    conv: ConvCoefficients
    attention: AttentionCoefficients
    stream: StreamCoefficients
    peak_fraction: Mapping[str, float] = attrs.field(factory=dict, validator=_fractions)
    dram_fraction: float = attrs.field(default=1.0, validator=_fraction)
    source_clock_mhz: float = attrs.field(default=1000.0, validator=_positive)
    fit: Mapping[str, Any] = attrs.field(factory=dict)  # how well the probes were reproduced
    warm_saving_s: Mapping[str, float] = attrs.field(factory=dict, validator=_savings)
    warm_saving_share: Mapping[str, float] = attrs.field(factory=dict, validator=_fractions)
    training: TrainingHostCosts = attrs.field(factory=TrainingHostCosts)

    def relabel(self, basis_kind: str, basis: str) -> "EstimateCoefficients":
        return attrs.evolve(self, basis_kind=basis_kind, basis=basis)


def coefficients_to_data(c: EstimateCoefficients) -> dict[str, Any]:
    from tensorforge.files.serialize import to_data

    return to_data(c)


def coefficients_from_data(data: Any, where: str) -> EstimateCoefficients:
    """Validated coefficients from JSON-like data; one line naming `where` on any problem."""
    from tensorforge.files.serialize import converter

    if not isinstance(data, dict):
        raise TensorForgeError(f"{where}: estimate coefficients must be a table/object")
    try:
        return converter.structure(data, EstimateCoefficients)
    except Exception as exc:  # cattrs wraps validator errors in exception groups
        raise TensorForgeError(f"{where}: invalid estimate coefficients: {_first_error(exc)}") from None


def coefficients_from_shipped(data: Any, where: str) -> EstimateCoefficients:
    """coefficients_from_data of the coefficients TensorForge ships (shipped.py), without cattrs.

    Why: every prediction reads them, and importing cattrs and generating its structuring code
    cost a fresh process about 20 ms. Their fields are floats, strings, booleans, mappings of
    them and nested coefficients, which cattrs structures by calling the field's type on the
    value (a mapping: on each value); so does this, with the same validators in the constructors.
    Anything else, or any error, goes to coefficients_from_data (its one-line message).
    tests/test_startup_imports.py holds the two equal on every shipped family."""
    try:
        return _plain(EstimateCoefficients, data)
    except Exception:  # noqa: BLE001 - cattrs' path says what is wrong, in its words
        return coefficients_from_data(data, where)


_SCALARS: dict[Any, Any] = {float: float, int: int, str: str, bool: bool}


def _plain(cls: Any, data: Any) -> Any:
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__}: not an object")
    values = {f.alias: _value(f.type, data[f.name]) for f in attrs.fields(cls) if f.init and f.name in data}
    return cls(**values)


def _value(kind: Any, value: Any) -> Any:
    if kind in _SCALARS:
        return _SCALARS[kind](value)
    if attrs.has(kind):
        return _plain(kind, value)
    if typing.get_origin(kind) is Mapping and isinstance(value, dict):
        key, item = typing.get_args(kind)
        if key is str:
            return {str(k): v if item is Any else _value(item, v) for k, v in value.items()}
    raise TypeError(f"no plain structuring for {kind!r}")


def _first_error(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)
    if inner:
        return _first_error(inner[0])
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text
