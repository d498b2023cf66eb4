"""DRAM streams that only read and only write, beside the copy (probes.py): the DRAM ceiling is
the highest rate any of them reached (tensorforge_measure.calibrate.store), never a slower one.

Why: the copy moves as many bytes each way, and a stream that only reads goes faster. On an
H200 a decode-sized GEMM (m=8, several hundred MB of weights, far larger than L2) ran 3% below
the calibrated bound, in a CUDA graph and sustained alike, because the bound's DRAM ceiling was
the copy's rate. The read stream is timed two ways, each over a buffer of the copy's size
(max(8 x L2, 1 GiB): from HBM, not L2), and the faster counts: a sum (one reduction kernel)
and that very decode GEMM (x[8, k] @ W[k, n], W the buffer). The write stream is a fill and a
zeroing of the buffer. Every rate is bytes moved / fastest sample, as for every ceiling.
"""

from __future__ import annotations

from typing import Any

import attrs
import torch

from tensorforge_measure import TimingPolicy, fastest_spread
from tf_cuda.probes import PROBE_POLICY, _policy_text, _rate, default_copy_bytes
from tf_cuda.timing import cuda_device, time_cuda

PATTERNS = ("read", "write")
DECODE_ROWS = 8  # the decode GEMM's tokens
DECODE_K = 8192  # its reduction dimension; n follows from the buffer size


@attrs.frozen
class StreamProbe:
    pattern: str  # 'read' or 'write'
    bytes_per_s: float  # the fastest of its loads
    buffer_bytes: int
    points: tuple[tuple[str, float], ...]  # (load, bytes/s) per load timed
    fastest_spread: float  # of the winning load's fastest samples
    method: str


def _loads(pattern: str, buffer_bytes: int, dev) -> list[tuple[str, Any, float, str]]:
    """(name, callable, bytes moved per call, what it is) of each load of `pattern`."""
    if pattern == "read":
        # bf16, random (not zeros, as the other probes); the sum accumulates in fp32
        x = torch.empty(buffer_bytes // 2, dtype=torch.bfloat16, device=dev).uniform_()
        total = torch.empty((), dtype=torch.bfloat16, device=dev)
        n = max(1, buffer_bytes // (2 * DECODE_K))
        w = x[: DECODE_K * n].view(DECODE_K, n)
        a = torch.randn(DECODE_ROWS, DECODE_K, dtype=torch.bfloat16, device=dev)
        y = torch.empty(DECODE_ROWS, n, dtype=torch.bfloat16, device=dev)
        gemm_bytes = 2.0 * (DECODE_K * n + DECODE_ROWS * DECODE_K + DECODE_ROWS * n)
        return [
            ("sum", lambda: torch.sum(x, dim=0, out=total), 2.0 * x.numel(), "torch.sum over a bf16 buffer"),
            (
                "decode-gemm",
                lambda: torch.matmul(a, w, out=y),
                gemm_bytes,
                f"torch.matmul(x[{DECODE_ROWS}, {DECODE_K}], W[{DECODE_K}, {n}]) in bf16, bytes = W + x + out",
            ),
        ]
    if pattern == "write":
        dst = torch.empty(buffer_bytes, dtype=torch.uint8, device=dev)
        return [
            ("fill", lambda: dst.fill_(1), float(buffer_bytes), "dst.fill_(1) on a uint8 buffer"),
            ("zero", lambda: dst.zero_(), float(buffer_bytes), "dst.zero_() on a uint8 buffer"),
        ]
    raise ValueError(f"unknown stream pattern {pattern!r}; known: {', '.join(PATTERNS)}")


def probe_stream(
    pattern: str, buffer_bytes: int | None = None, policy: TimingPolicy | None = None, device: Any = None
) -> StreamProbe:
    """The fastest rate a `pattern` stream ('read' or 'write') reached, over its loads."""
    policy = policy or PROBE_POLICY
    dev = cuda_device(device)
    buffer_bytes = int(buffer_bytes or default_copy_bytes(dev))
    if buffer_bytes <= 0:
        raise ValueError(f"buffer_bytes must be > 0, got {buffer_bytes}")
    points, spreads, said = [], {}, []
    with torch.cuda.device(dev):
        for name, fn, moved, what in _loads(pattern, buffer_bytes, dev):
            timed = time_cuda(fn, policy, dev)
            points.append((name, _rate(moved, timed.stats.min, f"{pattern} stream {name}")))
            spreads[name] = fastest_spread(timed.samples_s)
            said.append(f"{name}: {what}")
    best, rate = max(points, key=lambda p: p[1])
    method = (
        f"{pattern} stream over a {buffer_bytes} B buffer on {dev}, the fastest of ({'; '.join(said)}); "
        f"per-iteration CUDA events via time_cuda({_policy_text(policy)}); bytes_per_s = bytes moved / "
        f"fastest sample (best: {best})"
    )
    return StreamProbe(
        pattern=pattern,
        bytes_per_s=rate,
        buffer_bytes=buffer_bytes,
        points=tuple(points),
        fastest_spread=spreads[best],
        method=method,
    )


def probe_stream_sustained(pattern: str, buffer_bytes: int | None = None, device: Any = None) -> StreamProbe:
    """The same loads in the sustained regime: each run continuously until steady, then timed in
    one continuous window (probes_sustained.py), the fastest sample of the fastest load counting.
    Why: the sustained DRAM ceiling was the sustained copy's alone, which a read stream beats
    there as in a burst."""
    from tf_cuda.probes_sustained import PROBE_STEADY, WINDOW_S, _sustained_fastest

    dev = cuda_device(device)
    buffer_bytes = int(buffer_bytes or default_copy_bytes(dev))
    points, said = [], []
    with torch.cuda.device(dev):
        for name, fn, moved, what in _loads(pattern, buffer_bytes, dev):
            fastest, state = _sustained_fastest(fn, moved / 4e12, PROBE_STEADY, WINDOW_S)
            points.append((name, _rate(moved, fastest, f"sustained {pattern} stream {name}")))
            said.append(f"{name}: {what} (steady: {state.reached} after {state.after_s:.2f} s)")
    best, rate = max(points, key=lambda p: p[1])
    method = (
        f"sustained regime: {pattern} stream over a {buffer_bytes} B buffer on {dev}, the fastest of "
        f"({'; '.join(said)}), each run continuously until {PROBE_STEADY.rule()}, then one continuous "
        f"window of ~{WINDOW_S * 1e3:g} ms; bytes_per_s = bytes moved / fastest sample (best: {best})"
    )
    return StreamProbe(
        pattern=pattern,
        bytes_per_s=rate,
        buffer_bytes=buffer_bytes,
        points=tuple(points),
        fastest_spread=0.0,
        method=method,
    )
