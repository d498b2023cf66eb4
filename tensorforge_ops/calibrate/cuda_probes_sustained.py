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
No L2 flush, as for the burst probes.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Sequence

import attrs

from ..measure.cuda_sustained import ContinuousLoad, SteadyPolicy, reach_steady
from ..measure.cuda_timing import cuda_device
from ..measure.precision import MODE_DTYPES, framework_flags, math_mode
from ..measure.stats import summarize
from .cuda_probes import DEFAULT_MATMUL_SIZES, CopyProbe, MatmulProbe, _rate, default_copy_bytes

PROBE_STEADY = SteadyPolicy(window_s=0.03, windows=3, tolerance=0.01, min_s=0.15, max_s=1.0)
WINDOW_S = 0.05
REST_S = 0.5
# 1024 is left out: in either regime its rate is a fraction of the larger sizes' (bf16 on an
# H200: 71-94 TFLOP/s against ~690 sustained), so it never sets the ceiling.
SUSTAINED_SIZES = (2048, 4096, 8192, 16384)


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


def _sustained_fastest(fn, first_guess_s: float, policy: SteadyPolicy, window_s: float):
    load = ContinuousLoad(None, policy.window_s)
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
) -> MatmulProbe:
    """Best sustained square-GEMM rate in `mode`; smallest size first, each after a rest (see the
    module docstring)."""
    import time

    import torch

    dev = cuda_device(device)
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
            fastest, state = _sustained_fastest(_matmul(torch, n, dtype, dev), guess, policy, window_s)
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
        f"until {policy.rule()}, then one continuous window of ~{window_s * 1e3:g} ms with an "
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
