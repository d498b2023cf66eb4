"""Calibrated ceilings: what this GPU actually sustains, measured by dedicated probes.

Datasheet peaks are rarely reached; a prediction that divides work by a measured ceiling
is tighter and still honest. Every ceiling is a rate computed from the fastest sample, so it is
an upper bound on the rate any single iteration reached and the calibrated prediction stays a
lower bound on time. Why not the p10 (as before): single iterations of large bf16 GEMMs ran
0.06-1.0% faster than the probe's p10 in the committed H200 captures
(tests/test_capture_soundness.py), so a p10 ceiling was not a bound for every run. Every probe
returns a `method` string saying exactly what was run and how it was reduced to one number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import torch

from tensorforge_measure import MODE_DTYPES, TimingPolicy, fastest_spread, framework_flags, math_mode
from tf_cuda.timing import cuda_device, time_cuda

# fp32 runs on CUDA cores at a small fraction of the tensor-core rate; 16384 would cost
# ~150 ms per iteration on an H200 for no better ceiling, so its sweep stops at 8192.
DEFAULT_MATMUL_SIZES = {
    "fp32": (1024, 2048, 4096, 8192),
    "tf32": (1024, 2048, 4096, 8192, 16384),
    "fp16": (1024, 2048, 4096, 8192, 16384),
    "bf16": (1024, 2048, 4096, 8192, 16384),
}
# Long-K GEMMs beside the square sweep (M x N x K; tensor-core modes only). Why: the fastest
# rate a GEMM reaches is not on the square diagonal. On an H200 (the tails study set,
# benchmarks/eval/h200-tails.toml) a TF32 2048x8192x8192 GEMM ran at 415 TFLOP/s and an fp16
# 4096x2048x10008 one at 776 while the sweep's best squares gave 400 and 771: a few M x N tiles
# over a long K keep the main loop busy and the epilogue rare. A ceiling only from squares was
# below what such GEMMs ran, and their bound was not sound (fastest sample 0.5-2% under it).
LONG_K_SHAPES = ((2048, 8192, 8192), (4096, 4096, 16384), (2048, 4096, 16384))
LONG_K_MODES = ("tf32", "fp16", "bf16")

# Default policy for probes. Short budget per timed call: 19 matmul sizes + copy + launch
# stay under ~11 s even if nothing stabilises (all of them took 2.1 s on an H200). No L2 flush:
# each probe's working set either exceeds L2 or is compute bound, and the dirty lines a
# flush leaves behind would only bias a ceiling low.
PROBE_POLICY = TimingPolicy(
    warmup_iters=3, min_iters=10, max_iters=200, target_rel_iqr=0.02, budget_s=0.5, flush_bytes=0
)
# The matmul sweep in the burst regime the workloads' burst timings run in: stretches of <= 5 ms
# with equal rests (50% duty, torch_cuda.MAX_DUTY). Why: run back to back (100% duty), the sweep
# heated the chip into its power cap (bf16 16384^3: 688 TFLOP/s, the sustained rate; 8192^3: 783)
# while an 8192^3 workload, timed at 50% duty, reached 788 and the prefill transformer's
# 8192x2048x5632 down projection 812: the burst bound was 0.5-2.3% above what workloads of its
# own regime ran. At the duty the workloads see, the probe's fastest sample sees their clocks.
BURST_MATMUL_POLICY = attrs.evolve(PROBE_POLICY, max_duty=0.5)


@attrs.frozen
class MatmulProbe:
    math_mode: str
    best_flops_per_s: float
    best_n: int  # the best square size (0: a long-K shape was faster than every square)
    points: tuple[tuple[int, float], ...]  # (n, flops/s) per size actually timed
    method: str
    # the relative spread of the best shape's fastest samples (tensorforge_measure.fastest_spread)
    fastest_spread: float = 0.0
    # ((m, n, k), flops/s) per long-K shape timed (LONG_K_SHAPES); best_flops_per_s covers them
    long_k: tuple[tuple[tuple[int, int, int], float], ...] = ()


@attrs.frozen
class CopyProbe:
    bytes_per_s: float  # bytes read + bytes written, per second
    buffer_bytes: int
    method: str
    fastest_spread: float = 0.0  # of its fastest samples (tensorforge_measure.fastest_spread)


@attrs.frozen
class LaunchProbe:
    seconds: float
    method: str


def _rate(work: float, seconds: float, what: str) -> float:
    if not seconds > 0:
        raise RuntimeError(f"{what}: fastest time {seconds!r} s is below event resolution; use a larger size")
    return work / seconds


def _policy_text(policy: TimingPolicy) -> str:
    return ", ".join(f"{k}={v}" for k, v in attrs.asdict(policy).items())


def _matmul_fastest(
    n: int, dtype: torch.dtype, policy: TimingPolicy, dev: torch.device, shape: tuple[int, int, int] | None = None
) -> tuple[float, float]:
    """(fastest sample, relative spread of the fastest samples) of an n^3 GEMM, or of an
    M x N x K one where shape is given."""
    m, nn, k = shape or (n, n, n)
    # randn, never zeros: zero operands toggle fewer bits, draw less power and let the
    # clocks stay higher than real data would, inflating the ceiling.
    a = torch.randn(m, k, device=dev, dtype=dtype)
    b = torch.randn(k, nn, device=dev, dtype=dtype)
    c = torch.empty(m, nn, device=dev, dtype=dtype)  # preallocated: no allocator work timed
    timed = time_cuda(lambda: torch.matmul(a, b, out=c), policy, dev)
    return timed.stats.min, fastest_spread(timed.samples_s)


def probe_matmul(
    mode: str,
    sizes: Sequence[int] | None = None,
    policy: TimingPolicy | None = None,
    device: Any = None,
    memory_cap_bytes: int | None = None,
) -> MatmulProbe:
    """Best GEMM rate (flop/s) in `mode` over a sweep of square n and, for the tensor-core
    modes of the default sweep, the LONG_K_SHAPES.

    Sizes whose three matrices exceed memory_cap_bytes are skipped (default: half the device's
    free memory). rate = 2 m n k / fastest time, timed at the burst regime's duty
    (BURST_MATMUL_POLICY) unless a policy is given.
    """
    if mode not in MODE_DTYPES:
        raise ValueError(f"unknown math mode {mode!r}; known: {', '.join(MODE_DTYPES)}")
    policy = policy or BURST_MATMUL_POLICY
    dev = cuda_device(device)
    default_sweep = sizes is None
    sizes = tuple(DEFAULT_MATMUL_SIZES[mode] if sizes is None else sizes)
    if memory_cap_bytes is None:
        memory_cap_bytes = torch.cuda.mem_get_info(dev)[0] // 2
    elem = torch.empty((), dtype=MODE_DTYPES[mode]).element_size()
    points, skipped, spreads = [], [], {}
    with math_mode(mode) as dtype:
        flags = framework_flags()
        for n in sizes:
            if 3 * n * n * elem > memory_cap_bytes:
                skipped.append(n)
                continue
            fastest, spreads[int(n)] = _matmul_fastest(n, dtype, policy, dev)
            points.append((int(n), _rate(2.0 * n**3, fastest, f"matmul n={n}")))
        long_k, long_spread = [], {}
        for m, nn, k in LONG_K_SHAPES if default_sweep and mode in LONG_K_MODES else ():
            if (m * k + k * nn + m * nn) * elem > memory_cap_bytes:
                continue
            fastest, long_spread[(m, nn, k)] = _matmul_fastest(0, dtype, policy, dev, (m, nn, k))
            long_k.append(((m, nn, k), _rate(2.0 * m * nn * k, fastest, f"matmul {m}x{nn}x{k}")))
    if not points:
        raise ValueError(f"no matmul size fits memory_cap_bytes={memory_cap_bytes}: {sizes}")
    best_n, best = max(points, key=lambda p: p[1])
    spread = spreads[best_n]
    top_shape, top = max(long_k, key=lambda p: p[1], default=(None, 0.0))
    if top > best:
        best, best_n, spread = top, 0, long_spread[top_shape]
    method = (
        f"torch.matmul(a, b, out=c), square n x n x n, a/b torch.randn {dtype} on {dev}, "
        f"c preallocated; math_mode={mode!r} with flags {flags}; per-iteration CUDA events "
        f"via time_cuda({_policy_text(policy)}); rate(n) = 2*n^3 / fastest sample; best over "
        f"n in {[p[0] for p in points]}"
        + (f" and M x N x K in {[list(p[0]) for p in long_k]}" if long_k else "")
        + (f"; skipped {skipped} (3 matrices > {memory_cap_bytes} B cap)" if skipped else "")
    )
    return MatmulProbe(
        math_mode=mode,
        best_flops_per_s=best,
        best_n=best_n,
        points=tuple(points),
        method=method,
        fastest_spread=spread,
        long_k=tuple(long_k),
    )


def default_copy_bytes(device: Any = None) -> int:
    """max(8 x L2, 1 GiB): big enough that the copy streams from HBM, not L2."""
    l2 = getattr(torch.cuda.get_device_properties(cuda_device(device)), "L2_cache_size", 0) or 0
    return max(8 * int(l2), 1 << 30)


def probe_copy(buffer_bytes: int, policy: TimingPolicy | None = None, device: Any = None) -> CopyProbe:
    """Device-to-device copy bandwidth, counting read + write bytes (2 x buffer_bytes)."""
    buffer_bytes = int(buffer_bytes)
    if buffer_bytes <= 0:
        raise ValueError(f"buffer_bytes must be > 0, got {buffer_bytes}")
    policy = policy or PROBE_POLICY
    dev = cuda_device(device)
    # Same dtype and contiguous, so PyTorch issues a device-to-device cudaMemcpyAsync;
    # random bytes rather than zeros for the same reason as the matmul inputs.
    src = torch.empty(buffer_bytes, dtype=torch.uint8, device=dev).random_()
    dst = torch.empty_like(src)
    timed = time_cuda(lambda: dst.copy_(src), policy, dev)  # noqa: F821  (runs before the del)
    fastest = timed.stats.min
    del src, dst
    method = (
        f"dst.copy_(src), contiguous uint8 buffers of {buffer_bytes} B on {dev} (src random); "
        f"per-iteration CUDA events via time_cuda({_policy_text(policy)}); "
        f"bytes_per_s = 2*{buffer_bytes} (read + write) / fastest sample"
    )
    return CopyProbe(
        bytes_per_s=_rate(2.0 * buffer_bytes, fastest, "copy"),
        buffer_bytes=buffer_bytes,
        method=method,
        fastest_spread=fastest_spread(timed.samples_s),
    )


def probe_launch_floor(policy: TimingPolicy | None = None, device: Any = None) -> LaunchProbe:
    """The least time one eager PyTorch op occupies on the stream.

    A 1-element add_ does almost no GPU work, so the host cannot keep the queue ahead of
    the GPU: the event pair around it measures the host's dispatch + launch interval (or
    the kernel's own time, whichever is longer). p50, not p10, because this is a typical
    per-op cost to add, not a rate ceiling. No flush: it would only add noise.
    """
    policy = attrs.evolve(policy or PROBE_POLICY, flush_bytes=0)
    dev = cuda_device(device)
    x = torch.ones(1, device=dev)
    timed = time_cuda(lambda: x.add_(1.0), policy, dev)
    method = (
        f"x.add_(1.0) on a 1-element float32 tensor on {dev}, between a CUDA event pair per "
        f"iteration, no L2 flush, time_cuda({_policy_text(policy)}); seconds = p50"
    )
    return LaunchProbe(seconds=timed.stats.p50, method=method)
