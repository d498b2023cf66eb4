"""What the estimate's calibration probes measure, as data (no torch here, so the Core can fit
from the results and a test can prove the probes never touch an evaluation shape).

Each probe item informs one group of coefficients:
  launch      chains of 1..16 tiny kernels, timed as a workload is: harness and per-kernel cost,
              eager and (on CUDA, like every item) as CUDA graphs: the device-time regime's
  graph       a CUDA graph of tiny kernels replayed eagerly (kept for older fits)
  host        tiny transformer blocks launched eagerly: host time per kernel, flush slack
  train-host  tiny training steps (phase=train) launched eagerly: the host cost of autograd and
              the optimizer (coefficients.TrainingHostCosts)
  stream      elementwise / norm / copy / concat sweeps over sizes: achieved bandwidth
  gemm        GEMMs over tile/wave structures and aspect ratios (16-bit): mainloop, feed,
              tile overhead, streaming bandwidth
  gemm-mode   the other math modes (tf32, fp32, fp16): mainloop efficiency per mode
  unaligned   GEMMs with a leading dimension not a multiple of 16 bytes
  unaligned-partial  ... a multiple of 4 bytes but not 16 (their own kernels on Hopper)
  conv-*      pointwise, kxk, fp32, unaligned-channel and depthwise convolutions
  attn-*      fused attention: prefill (non-causal, causal) and decode
The shapes are chosen to span structures (few tiles, partial waves, skinny, small K, large K,
batched), never to match a workload anyone is scored on (tests/test_estimate_eval_disjoint.py).
"""

import attrs

STREAM_OPS = {  # op -> (access pattern, bytes moved per element of the main tensor, kernels)
    "add": ("elementwise", 3, 1),  # out = a + b
    "rms_norm": ("norm", 2, 1),  # one fused row-wise kernel
    "slice_copy": ("copy", 2, 1),  # cache[:, :, a:b].copy_(new): strided rows
    "transpose_copy": ("copy", 2, 1),  # x.transpose(1, 2).contiguous()
    "cat": ("concat", 2, 1),  # torch.cat of two halves
    "layer_norm": ("norm", 2, 1),  # F.layer_norm, one fused row-wise kernel
    "gelu": ("elementwise", 2, 1),  # F.gelu(approximate='tanh'): transcendental per element
    "row_softmax": ("softmax_rows", 2, 1),  # torch.softmax over the last dimension, one kernel
    # c = a + b, then d = c + b: the second add reads what the first just wrote (L2-resident when
    # it fits); bytes and kernels count both adds
    "add_hot": ("elementwise", 6, 2),
}
# the core sweep; the other ops run at fewer sizes
SWEPT_OPS = ("add", "rms_norm", "slice_copy", "transpose_copy", "cat")


def timing_modes(group: str) -> tuple[str, ...]:
    """The modes a CUDA probe item of this group is timed in: the ones its fit reads (fit.py).
    Launch chains both (the eager cost per kernel and the device's); host blocks and the eager
    graph replay eager only (they measure the host); everything else the CUDA-graph sample alone
    (the device-time regime the evaluation scores). A device without graphs times eagerly."""
    if group == "launch":
        return ("eager", "graph")
    if group in ("graph", *EAGER_GROUPS):
        return ("eager",)
    return ("graph",)


# groups whose points measure the eager host: their fit reads the eager sample, never a graph one
EAGER_GROUPS = ("host", "train-host")


# a graph-timed item whose flushed graph p50 is at most this is also timed warm (warm.py): the
# saving is a few microseconds, lost in the noise of longer samples (+-4 us on 0.3-1 ms GEMMs on
# the H200), and it only matters to short executions; ~20 ms an item
WARM_MAX_CALL_S = 100e-6


def warm_timed(group: str, graph_p50_s: float | None) -> bool:
    """Whether a CUDA probe item is also timed warm (no L2 flush, back to back): the workload-shaped
    and streaming items (not the launch chains) whose flushed graph sample is short enough."""
    return group != "launch" and graph_p50_s is not None and 0 < float(graph_p50_s) <= WARM_MAX_CALL_S


@attrs.frozen
class ProbeItem:
    name: str
    group: str
    spec: str = ""  # a workload spec for workload-based items
    op: str = ""  # a STREAM_OPS entry or 'add_chain'
    elements: int = 0  # elements of the main tensor (stream) / of each chain tensor
    width: int = 4096  # row width of stream tensors
    kernels: int = 1  # chain length
    dtype: str = "bf16"

    @property
    def stream_bytes(self) -> float:
        per = {"bf16": 2, "fp16": 2, "fp32": 4}[self.dtype]
        return float(STREAM_OPS[self.op][1] * self.elements * per)


def _gemm(m, n, k, dtype="bf16", batch=1, mode=None, ta=False, tb=False):
    spec = f"gemm:m={m},n={n},k={k},dtype={dtype}"
    spec += f",batch={batch}" if batch > 1 else ""
    spec += f",math_mode={mode}" if mode else ""
    spec += ",transpose_a=true" if ta else ""
    spec += ",transpose_b=true" if tb else ""
    return spec


def _conv(n, c, h, w, k, r, s=None, stride=1, padding=0, groups=1, dtype="bf16", mode=None):
    s = r if s is None else s
    return (
        f"conv2d:n={n},c={c},h={h},w={w},k={k},r={r},s={s},stride={stride},"
        f"padding={padding},groups={groups},dtype={dtype}" + (f",math_mode={mode}" if mode else "")
    )


def _attn(b, h, q, kv=None, kv_heads=None, d=128, causal=True):
    kv = q if kv is None else kv
    kv_heads = h if kv_heads is None else kv_heads
    return (
        f"sdpa:batch={b},heads={h},kv_heads={kv_heads},q_len={q},kv_len={kv},"
        f"head_dim={d},causal={'true' if causal else 'false'}"
    )


def _items(group, specs):
    return tuple(ProbeItem(name=f"{group}:{spec}", group=group, spec=spec) for spec in specs)


MB = 1 << 20


def _train(dtype: str, hidden: int, per_tensor: bool = True) -> tuple[str, ...]:
    """Tiny training steps whose device waits for the host (tensorforge/estimate/train_host.py):
    one linear layer with no optimizer, SGD and AdamW (the step, the engine's call, each
    optimizer's Python step), the same layer with 3 micro-steps (the engine's call per micro-step
    against the step's once), a tiny transformer of 1 and 3 layers (the engine's cost per backward
    kernel: ~43 of them a layer, Python and C++ nodes) and, with per_tensor, the 1-layer one with
    AdamW (its 6 weights against the linear layer's 1: the optimizer's cost per parameter tensor).
    Shapes no training evaluation uses (tests/test_estimate_eval.py)."""
    linear = f"gemm:m=16,n={hidden},k=64,dtype={dtype},phase=train"
    block = (
        f"transformer:hidden={hidden},heads=2,kv_heads=2,intermediate={2 * hidden},batch=1,seq=16,"
        f"dtype={dtype},final_norm=false,lm_head=false,phase=train"
    )
    steps = (
        linear,
        linear + ",optimizer=sgd",
        linear + ",optimizer=adamw",
        linear + ",grad_accum=3",
        block + ",layers=1",
        block + ",layers=3",
    )
    return steps + ((block + ",layers=1,optimizer=adamw",) if per_tensor else ())


def _streams(sizes_mb, width=4096, ops=SWEPT_OPS, name_width=False):
    out = []
    for op in ops:
        for mb in sizes_mb:
            elements = int(mb * MB // 2) // width * width
            out.append(
                ProbeItem(
                    name=f"stream:{op}:{mb}MB" + (f":w{width}" if name_width else ""),
                    group="stream",
                    op=op,
                    elements=elements,
                    width=width,
                    kernels=STREAM_OPS[op][2],
                )
            )
    return tuple(out)


def _chains(lengths, elements=256):
    return tuple(
        ProbeItem(name=f"launch:chain{n}", group="launch", op="add_chain", elements=elements, kernels=n)
        for n in lengths
    )


# Sized to the fit (the aim: the whole first run under 90 s): the last H200 calibration of
# 2026-11-30 spent 56.8 s on 141 items; refitting from that calibration's points of the items kept
# here (subset_to_plan) scored the held-out suite as before. Dropped:
# the 2 and 16 MB stream sizes (stage stream reads the larger half of each pattern's sizes), the
# 16-kernel chain (host-bound eagerly, so stage launch stops before it), and GEMMs that repeat a
# structure another probe already spans (2, 8 and 32 rows of a 6144^2 weight, a transposed-A
# twin of the transposed-B one, an fp16 GEMV twin of the bf16 one, a 128^3 between 64^3 and
# 192^3, 256x512x256 and 384x384x1536 beside 640^3 and 768x1536x384, one of two split-K GEMMs of
# K >= 32768, the 2048x16384x1024 mirror of 16384x2048x1024, 3000x2000x1000 beside 1000^3, 1536^3
# between 1280x1280x512 and 2560^3, 24x10240x2560 beside 16x8192x12288, 8192x32x4096 beside
# 16384x128x2048, the 268 MB GEMV beside the 75 MB ones), the one-coefficient stages' points past
# three or four (unaligned, 1x1 and fp32 convolutions, fp32 GEMMs, a stride-2 C=3 stem), and two
# attention shapes (each new one costs ~1 s of cuDNN set-up). Refitted from the closing session's
# points of the 104 items kept, the held-out suite scores as well as from all 141 (docs/estimate.md).
CUDA_PLAN: tuple[ProbeItem, ...] = (
    _chains((1, 2, 4, 8))
    + (ProbeItem(name="graph:chain32", group="graph", op="add_chain", elements=256, kernels=32),)
    + _items(
        "host",
        (
            "transformer:hidden=256,layers=1,heads=4,kv_heads=2,intermediate=704,batch=1,seq=1,phase=decode,context=64",
            "transformer:hidden=256,layers=3,heads=4,kv_heads=2,intermediate=704,batch=1,seq=1,phase=decode,context=64",
            "transformer:hidden=256,layers=2,heads=4,kv_heads=4,intermediate=1024,batch=1,seq=16,phase=prefill,mlp=gelu,norm=layernorm,rope=false",
        ),
    )
    + _items("train-host", _train("bf16", 128))
    + _streams((96, 384))
    + _streams((96,), ops=("layer_norm", "gelu"))
    # row-wise kernels at other row lengths: their rate moves with it (H200, the tails study set:
    # norms of 1024-8192 columns ran at 1.7-2.5 TB/s where the 4096-wide probes reached 2.7-3.6;
    # softmax 1.7-2.5), so a norm's and a softmax's rate is the median over several widths
    + _streams((96,), width=8192, ops=("rms_norm",), name_width=True)
    + _streams((96,), width=1024, ops=("layer_norm",), name_width=True)
    + _streams((96,), width=2048, ops=("row_softmax",), name_width=True)
    + _streams((96,), width=16384, ops=("row_softmax",), name_width=True)
    + _streams((8, 32), ops=("add_hot",))
    + _items(
        "gemm",
        (
            _gemm(256, 256, 256),
            _gemm(512, 512, 512),
            _gemm(2560, 2560, 2560),
            _gemm(3072, 3072, 3072),
            _gemm(5120, 5120, 5120),
            _gemm(7168, 7168, 7168),
            _gemm(1, 6144, 6144),
            _gemm(64, 6144, 6144),
            _gemm(128, 6144, 6144),
            _gemm(4, 2560, 10240),
            _gemm(16384, 128, 2048),
            _gemm(8192, 8192, 128),
            _gemm(6144, 6144, 512),
            _gemm(1024, 1024, 16384),
            _gemm(256, 768, 65536),
            _gemm(16384, 2048, 1024),
            _gemm(1536, 12288, 6144),
            _gemm(2048, 2048, 512, batch=8),
            _gemm(512, 512, 512, batch=64),
            _gemm(1024, 256, 2048, batch=16),
            _gemm(3072, 3072, 3072, tb=True),
            _gemm(3072, 3072, 3072, dtype="fp16"),
            # a large fp16 tile run: its rate joins the fp16 compute ceiling (calibrate/sweep_rates.py);
            # the final H200 session's only large fp16 point was 3072^3 (725 TFLOP/s) while a held-out
            # 8192x4096x8192 fp16 GEMM ran at 779, 3% under the matmul-ceiling's bound
            _gemm(7168, 7168, 7168, dtype="fp16"),
            _gemm(1000, 1000, 1000),
            # one-wave and few-wave GEMMs: what a GEMM kernel costs beyond a tiny kernel (the
            # prologue) against the tile overhead per wave (the 2026-11-30 evaluation: small
            # GEMMs were the largest miss, the sweep had four GEMMs under 10 us)
            # one-tile GEMMs (was 64^3, the default suite's gemm_tiny: a probe must not be a
            # shape anyone is scored on): the fixed cost of a GEMM kernel with no main loop to speak of
            _gemm(48, 64, 64),
            _gemm(64, 128, 32),
            _gemm(192, 192, 192),
            _gemm(640, 640, 640),
            _gemm(768, 1536, 384),
            _gemm(1024, 512, 2048),
            _gemm(896, 896, 896, dtype="fp16"),
            # streaming GEMVs from 19 to 268 MB of weights: a fixed time per kernel against the
            # streaming rate (a 2026-11-30 sweep had them all at 52-75 MB, which cannot
            # tell the two apart)
            _gemm(1, 3072, 3072),
            _gemm(16, 8192, 12288),
            # skinny GEMMs of 126 and 268 MB beside the 75 and 201 MB ones: the scored decode GEMMs
            # (117-134 MB of weights) sit there, and the fixed time against the stream rate of
            # a GEMV-like kernel is a line only with points across it
            _gemm(24, 10240, 6144),
            _gemm(8, 16384, 8192),  # 268 MB: the top of the line
        ),
    )
    + _items(
        "gemm-mode",
        (
            _gemm(1536, 1536, 1536, dtype="fp32", mode="tf32"),
            _gemm(3072, 3072, 3072, dtype="fp32", mode="tf32"),
            _gemm(32, 6144, 6144, dtype="fp32", mode="tf32"),
            _gemm(3072, 3072, 3072, dtype="fp32", mode="fp32"),
            # a tf32 sweep across wave structures (three points fitted the tf32 rate in the
            # 2026-11-30 session, and a held-out 4096^3 tf32 GEMM came out 35% slow)
            _gemm(2560, 2560, 2560, dtype="fp32", mode="tf32"),
            _gemm(5120, 5120, 5120, dtype="fp32", mode="tf32"),
            _gemm(6144, 2048, 4096, dtype="fp32", mode="tf32"),
            # long tf32 GEMMs off the square: the traces show two-warpgroup 128x256 tiles there
            # (6144x2048x4096 ran at 98% of the tf32 ceiling, the squares' 128x128 at 84-87%)
            _gemm(8192, 4096, 2048, dtype="fp32", mode="tf32"),
            _gemm(3584, 3584, 4608, dtype="fp32", mode="tf32"),
            _gemm(1024, 1024, 1024, dtype="fp32", mode="fp32"),
            _gemm(2560, 2560, 1024, dtype="fp32", mode="fp32"),
        ),
    )
    + _items(
        "unaligned",
        (_gemm(3071, 3071, 3071), _gemm(2048, 2048, 2047), _gemm(6144, 2047, 1025)),
    )
    # 16-bit rows a multiple of 4 bytes but not 16: their own kernels and rate (menus.py,
    # nvidia-sm90-align4); K or N % 8 = 4 and 2, fp16 and bf16
    + _items(
        "unaligned-partial",
        (_gemm(3072, 3072, 6004, dtype="fp16"), _gemm(1536, 6002, 3072)),
    )
    + _items(
        "conv-pointwise",
        (
            _conv(16, 512, 28, 28, 512, 1),
            _conv(64, 64, 56, 56, 256, 1),
            _conv(8, 1024, 14, 14, 2048, 1),
            _conv(8, 2048, 7, 7, 512, 1),
            # a read-heavy memory-bound 1x1 convolution (4 bytes read per byte written, 71 MB)
            # beside the write-heavy 64 x 64 x 56^2 one (4 written per read, 128 MB), the only
            # memory-bound one until the 1x1 stream term (2026-12-01): conv.pointwise_stream_efficiency was
            # fitted on a write stream alone, and the H200 ran read-heavy 1x1 convolutions with a
            # few us more per kernel (the flush's dirty lines: flushed - warm 1.5 us at half the
            # bytes read, 0 at a fifth); not a shape anyone is scored on. (Dropped after its first
            # calibration, H200, 2026-12-01: 24 x 384 x 40^2 -> 96, 37 MB in 25.1 us, 1.5 TB/s where
            # every other 1x1 probe streamed 2.9-3.5 TB/s: 96 output channels run a kernel the
            # model has no structure for, and the stream rate fitted through it, 0.66 of the copy
            # ceiling against 0.85-0.86 without it, put the 1x1 convolutions 25% slow.)
            _conv(48, 256, 48, 48, 64, 1),
        ),
    )
    + _items(
        "conv-kxk",
        (
            _conv(16, 64, 56, 56, 64, 3, padding=1),
            _conv(8, 256, 14, 14, 256, 3, padding=1),
            _conv(16, 96, 64, 64, 96, 5, padding=2),
            _conv(4, 512, 7, 7, 512, 3, padding=1),
            _conv(16, 128, 28, 28, 128, 3, padding=1),
            # 64 channels at 112^2 (cuDNN's 64x64 tiles): 16 images, not 8, whose implicit GEMM
            # (100352 x 64 x 576) was the evaluation's 32x64x56^2 convolution's (2026-12-01)
            _conv(16, 64, 112, 112, 64, 3, padding=1),
            # several waves of the deep-channel tiles (an earlier sweep's kxk probes ran 1-4 waves)
            _conv(48, 128, 28, 28, 128, 3, padding=1),
            _conv(24, 256, 14, 14, 256, 3, padding=1),
            _conv(32, 512, 7, 7, 512, 3, padding=1),
            # long implicit-GEMM convolutions (100-300 us, 20-60 waves): the probes above run
            # 9-85 us, where a kernel's fixed cost and its rate cannot be told apart, and the fit
            # extrapolated 40-50% slow to 3x3 convolutions of 48+ waves (an H200 run, 2026-12-01);
            # one per channel depth 64-512, none a shape anyone is scored on. (Dropped for them:
            # 32x256x7x7, the same GEMM as 8x256x14x14: 100 tiles, 9.6 us both.)
            _conv(96, 64, 96, 96, 64, 3, padding=1),
            _conv(192, 128, 40, 40, 128, 3, padding=1),
            _conv(48, 256, 40, 40, 256, 3, padding=1),
            _conv(256, 512, 12, 12, 512, 3, padding=1),
        ),
    )
    + _items(
        "conv-fp32",
        (
            _conv(8, 64, 56, 56, 64, 3, padding=1, dtype="fp32"),
            _conv(16, 256, 28, 28, 128, 1, dtype="fp32"),
            _conv(16, 96, 28, 28, 96, 3, padding=1, dtype="fp32", mode="tf32"),
        ),
    )
    + _items(
        "conv-unaligned",
        (
            _conv(16, 3, 160, 160, 32, 3, padding=1),
            _conv(8, 3, 256, 256, 64, 7, stride=2, padding=3),
            _conv(32, 1, 64, 64, 32, 5, padding=2),
            _conv(4, 3, 384, 384, 64, 7, stride=2, padding=3),
        ),
    )
    + _items(
        "conv-depthwise",
        (
            _conv(16, 384, 28, 28, 384, 3, padding=1, groups=384),
            _conv(8, 128, 112, 112, 128, 3, padding=1, groups=128),
            _conv(32, 512, 14, 14, 512, 5, padding=2, groups=512),
        ),
    )
    + _items(
        "attn-prefill",
        (
            _attn(2, 16, 2048, causal=False),
            _attn(8, 12, 512, d=64, causal=False),
            _attn(16, 16, 256, d=64, causal=False),
        ),
    )
    + _items(
        "attn-causal",
        (
            _attn(2, 32, 1536, kv_heads=8),
            _attn(1, 16, 4096),
            _attn(4, 8, 1024, kv_heads=1, d=256),
            _attn(4, 16, 2048, d=64),
        ),
    )
    + _items(
        "attn-decode",
        (
            _attn(16, 32, 1, kv=1536, kv_heads=8),
            _attn(4, 16, 1, kv=8192),
            _attn(64, 8, 1, kv=1024, kv_heads=2),
            _attn(8, 8, 1, kv=3072, kv_heads=1, d=256),
            _attn(8, 28, 1, kv=4096, kv_heads=4),
        ),
    )
)

# The host CPU: the same groups, sized for a few cores and a few GB/s (about 10 s on 2 cores:
# CI calibrates on every run).
CPU_PLAN: tuple[ProbeItem, ...] = (
    _chains((1, 2, 4))
    + _items("host", ())
    # six, not seven: each item costs a CPU calibration ~0.5 s (build, collection, timing) and CI
    # calibrates twice; the CPU training evaluations update one tensor, so the optimizer's cost
    # per tensor stays unseparated there (0: the fit report says so)
    + _items("train-host", _train("fp32", 96, per_tensor=False))
    + _streams((2, 24), width=1024)
    + _items(
        "gemm",
        (
            _gemm(96, 96, 96, dtype="fp32"),
            _gemm(320, 320, 320, dtype="fp32"),
            _gemm(768, 768, 768, dtype="fp32"),
            _gemm(1, 3072, 3072, dtype="fp32"),
            _gemm(2048, 64, 1024, dtype="fp32"),
            _gemm(1024, 1024, 64, dtype="fp32"),
            _gemm(256, 256, 256, dtype="fp32", batch=8),
        ),
    )
    + _items("gemm-mode", (_gemm(768, 768, 768, dtype="bf16"),))
    + _items("conv-pointwise", (_conv(4, 128, 28, 28, 128, 1, dtype="fp32"),))
    + _items("conv-kxk", (_conv(2, 32, 56, 56, 32, 3, padding=1, dtype="fp32"),))
    + _items("conv-depthwise", (_conv(2, 64, 56, 56, 64, 3, padding=1, groups=64, dtype="fp32"),))
    + _items("attn-causal", (_attn(1, 4, 384, d=64),))
    + _items("attn-decode", (_attn(4, 8, 1, kv=1536, d=64),))
)


EAGER_KEYS = ("p50_s", "p10_s", "min_s", "n", "rel_iqr", "stop_reason")


def subset_to_plan(points: list[dict], plan: tuple[ProbeItem, ...]) -> list[dict]:
    """The raw points of an older sweep cut to the items of `plan`, each with only the samples
    `plan` takes now (timing_modes: the eager sample dropped where the item is now timed as a CUDA
    graph alone): what a sweep of `plan` would have handed the fit, from the same measurements.
    It shows whether a smaller plan fits as well, from an older sweep's points."""
    names = {item.name for item in plan}
    kept = []
    for r in points:
        if r.get("name") not in names:
            continue
        if "eager" not in timing_modes(str(r.get("group"))) and r.get("graph_p50_s"):
            r = {k: v for k, v in r.items() if k not in EAGER_KEYS}
        kept.append(r)
    return kept
