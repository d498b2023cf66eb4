"""CALIBRATED ceilings in the sustained regime: the same probes as the burst ones (square matmul
size sweep per math mode, device-to-device copy), each run continuously until the device is
steady (cuda_sustained's rule), then timed in one continuous window.

Why smallest size first, with an idle rest before each: under a power cap the clock also
depends on temperature, which keeps rising for seconds. Run back to back, largest first, the
sweep measured each size on a hotter chip than the last (tf32 on an H200: 350, 345, 333, 314
TFLOP/s for 16384 down to 2048), and a 4096^3 TF32 workload, timed sustained after its own
shorter load, then ran 2.6% faster than the probe's best: a bound violation. Resting
REST_S before each size lets each start from about the state a workload's sustained phase
starts from.

Why every size again rather than the burst winner alone: under a power cap a smaller matrix
may draw less power, keep a higher clock and so sustain a higher rate than the burst winner;
the sustained ceiling is the best sustained rate over the sweep, so it stays an upper bound on
what a workload sustains (the calibrated prediction stays a lower bound). The rate is again
computed from the fastest sample of the window, as for the burst probes (cuda_probes says why).
The matmul sweep runs each call after the same L2 flush the workloads' sustained windows run
(flush_bytes; none for the copy, whose buffer is 8 x L2). Why: under a power cap the clock
follows the average power, and a workload timed sustained spends its flush time (~55 us of
memory-bound zeroing per call on an H200) drawing less than a GEMM does. Without the flush the
probe ran hotter than the workloads it bounds: on an H200 (2026-11-30) the 4096^3 TF32
workload sustained 365.7 TFLOP/s (p50) against a sustained ceiling of 362.5, 1.2% inside the
2% tolerance of the regime's bound check, a bound that was not sound. The rate is still that of
the GEMM alone (the flush lies outside its event pair).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from tensorforge_measure import MODE_DTYPES, framework_flags, math_mode, summarize
from tf_cuda.probes import DEFAULT_MATMUL_SIZES, CopyProbe, MatmulProbe, _rate, default_copy_bytes
from tf_cuda.sustained import ContinuousLoad, SteadyPolicy, reach_steady
from tf_cuda.timing import cuda_device

PROBE_STEADY = SteadyPolicy(window_s=0.03, windows=3, tolerance=0.01, min_s=0.15, max_s=1.0)
WINDOW_S = 0.05
REST_S = 0.5
# 1024 and 2048 are left out: in either regime their rate is a fraction of the larger sizes' (on
# an H200, 1024 bf16: 71-94 TFLOP/s against ~690 sustained; 2048 sustained: bf16 0.88, fp16 0.60,
# tf32 0.89 of the best size in the final session's sweep), so they never set the ceiling (the
# best rate over the sweep); each size costs its rest and its load (~0.8 s a mode).
SUSTAINED_SIZES = (4096, 8192, 16384)


@attrs.frozen
class SustainedPoint:
    n: int
    flops_per_s: float
    steady: bool
    after_s: float


def _matmul(torch, n: int, dtype, dev):
    # randn, never zeros (zeros draw less power); c preallocated: no allocator work timed
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    c = torch.empty(n, n, device=dev, dtype=dtype)
    return lambda: torch.matmul(a, b, out=c)


def _copy(torch, buffer_bytes: int, dev):
    src = torch.empty(buffer_bytes, dtype=torch.uint8, device=dev).random_()
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def _sustained_fastest(fn, first_guess_s: float, policy: SteadyPolicy, window_s: float, flush_step=None):
    load = ContinuousLoad(flush_step, policy.window_s)
    state, pending, per_call = reach_steady(load, fn, first_guess_s, policy)
    timed = load.queue(fn, load.calls_for(per_call, window_s))
    load.read(pending)
    return summarize(load.read(timed)).min, state


def probe_matmul_sustained(
    mode: str,
    sizes: Sequence[int] | None = None,
    device: Any = None,
    policy: SteadyPolicy = PROBE_STEADY,
    window_s: float = WINDOW_S,
    memory_cap_bytes: int | None = None,
    flush_bytes: int = 0,
) -> MatmulProbe:
    """Best sustained square-GEMM rate in `mode`; smallest size first, each after a rest (see the
    module docstring). With flush_bytes, every call follows the L2 flush the workloads' sustained
    windows run (see FLUSHED below)."""
    import time

    import torch

    from tf_cuda.modes import flush_step

    dev = cuda_device(device)
    flush = flush_step(torch, flush_bytes, dev)
    default = tuple(n for n in DEFAULT_MATMUL_SIZES[mode] if n in SUSTAINED_SIZES)
    sizes = sorted(default if sizes is None else sizes)
    if memory_cap_bytes is None:
        memory_cap_bytes = torch.cuda.mem_get_info(dev)[0] // 2
    elem = torch.empty((), dtype=MODE_DTYPES[mode]).element_size()
    points, skipped, states = [], [], []
    with math_mode(mode) as dtype, torch.cuda.device(dev):
        flags = framework_flags()
        for n in sizes:
            if 3 * n * n * elem > memory_cap_bytes:
                skipped.append(n)
                continue
            torch.cuda.synchronize(dev)
            time.sleep(REST_S)
            guess = 2.0 * n**3 / 5e14
            fastest, state = _sustained_fastest(_matmul(torch, n, dtype, dev), guess, policy, window_s, flush)
            points.append((int(n), _rate(2.0 * n**3, fastest, f"sustained matmul n={n}")))
            states.append(SustainedPoint(int(n), points[-1][1], state.reached, state.after_s))
    if not points:
        raise ValueError(f"no matmul size fits memory_cap_bytes={memory_cap_bytes}: {sizes}")
    best_n, best = max(points, key=lambda p: p[1])
    unsteady = [s.n for s in states if not s.steady]
    method = (
        f"sustained regime: torch.matmul(a, b, out=c), square n x n x n, torch.randn {dtype} on {dev}, "
        f"math_mode={mode!r} with flags {flags}; sizes smallest first, each after {REST_S:g} s idle and "
        "then run continuously "
        + (
            f"(each call after an int32 L2 flush of {flush_bytes} B, as the workloads' sustained windows) "
            if flush
            else ""
        )
        + f"until {policy.rule()}, then one continuous window of ~{window_s * 1e3:g} ms with an "
        f"event pair per call and one synchronisation; rate(n) = 2*n^3 / fastest sample; best over "
        f"n in {[p[0] for p in points]}"
        + (f"; not steady within the limit: n={unsteady}" if unsteady else "")
        + (f"; skipped {skipped} (3 matrices > {memory_cap_bytes} B cap)" if skipped else "")
    )
    return MatmulProbe(math_mode=mode, best_flops_per_s=best, best_n=best_n, points=tuple(points), method=method)


def probe_copy_sustained(
    buffer_bytes: int | None = None, device: Any = None, policy: SteadyPolicy = PROBE_STEADY, window_s: float = WINDOW_S
) -> CopyProbe:
    import torch

    dev = cuda_device(device)
    buffer_bytes = int(buffer_bytes or default_copy_bytes(dev))
    with torch.cuda.device(dev):
        fastest, state = _sustained_fastest(
            _copy(torch, buffer_bytes, dev), 2.0 * buffer_bytes / 4e12, policy, window_s
        )
    method = (
        f"sustained regime: dst.copy_(src), contiguous uint8 buffers of {buffer_bytes} B on {dev} "
        f"(src random), run continuously until {policy.rule()} (steady: {state.reached} after "
        f"{state.after_s:.2f} s), then one continuous window of ~{window_s * 1e3:g} ms; "
        f"bytes_per_s = 2*{buffer_bytes} / fastest sample"
    )
    return CopyProbe(
        bytes_per_s=_rate(2.0 * buffer_bytes, fastest, "sustained copy"), buffer_bytes=buffer_bytes, method=method
    )
