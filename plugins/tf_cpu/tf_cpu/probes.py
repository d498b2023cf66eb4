"""CALIBRATED ceilings of the host CPU: matmul rate per natively supported math mode, memory
bandwidth, and the floor of one eager PyTorch call.

As on the GPU, every rate comes from the fastest sample (an upper bound on the rate any
iteration reached, so the calibrated prediction stays a lower bound) and every result carries the exact method. The
whole calibration stays short on small machines (about 5 s on 2 cores): few sizes, a 0.4 s
budget per timed call. torch (and the timing loop, which imports it) load only when a probe
runs, so listing plugins stays fast.
"""

import time

import attrs

from tensorforge_measure import CalibrationProbe, ProbeResult, fastest_spread
from tf_cpu.backend import cache_bytes

PROBE_POLICY = dict(warmup_iters=2, min_iters=10, max_iters=200, target_rel_iqr=0.02, budget_s=0.4, flush_bytes=0)
MATMUL_SIZES = (256, 512, 1024, 2048)
MODE_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
MIN_STREAM_BYTES = 256 << 20


def _policy(**changes):
    from tensorforge_measure import TimingPolicy

    return TimingPolicy(**{**PROBE_POLICY, **changes})


def _timed(fn, policy):
    return _sampled(fn, policy).stats


def _sampled(fn, policy):
    """The TimedSamples of fn (its samples: the spread of the fastest sets a ceiling's margin)."""
    from tf_cpu.cpu_timing import time_cpu

    return time_cpu(fn, policy)


def _policy_text(policy) -> str:
    return ", ".join(f"{k}={v}" for k, v in attrs.asdict(policy).items())


def _available_bytes() -> int:
    """MemAvailable, so a probe never pushes a small machine into swap; 1 GiB if unreadable."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 1 << 30


def _rate(work: float, seconds: float, what: str) -> float:
    if not seconds > 0:
        raise RuntimeError(f"{what}: fastest time {seconds!r} s is below timer resolution")
    return work / seconds


# The host CPU has one regime: timing is continuous and there is no power-capped clock
# to tell a burst from sustained load apart (the DIAGNOSTIC window records clock and load).
REGIME = "single"


class CpuMatmulProbe(CalibrationProbe):
    """Best square-matmul rate per math mode the CPU runs natively, over a size sweep."""

    name = "cpu-matmul-ceiling"
    backend = "torch-cpu"

    def run(self, session) -> ProbeResult:
        from tensorforge_measure import math_mode

        torch, policy = session.torch, _policy()
        start = time.perf_counter()
        cap = _available_bytes() // 4
        compute: dict[str, float] = {}
        margins: dict[str, float] = {}  # the fastest samples' spread behind each rate (its margin)
        details: dict[str, object] = {
            "threads": session.threads,
            "not_probed": "math modes without native support (not declared by host-cpu)",
        }
        for mode in session.native_modes:
            if mode not in MODE_DTYPES:
                continue
            dtype = getattr(torch, MODE_DTYPES[mode])
            points: list[tuple[int, float]] = []
            spreads: dict[int, float] = {}
            fastest_spreads: dict[int, float] = {}
            with math_mode(mode), torch.inference_mode():
                for n in MATMUL_SIZES:
                    if 3 * n * n * torch.empty((), dtype=dtype).element_size() > cap:
                        continue
                    # randn, never zeros: zero operands would let the FPU (and power) idle.
                    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
                    c = torch.empty(n, n, dtype=dtype)
                    timed = _sampled(lambda: torch.matmul(a, b, out=c), policy)
                    stats = timed.stats
                    points.append((n, _rate(2.0 * n**3, stats.min, f"{mode} matmul n={n}")))
                    spreads[n] = float(stats.rel_iqr)
                    fastest_spreads[n] = fastest_spread(timed.samples_s)
            if not points:
                raise RuntimeError(f"no {mode} matmul size fits a quarter of available memory ({cap} B)")
            best_n, best = max(points, key=lambda p: p[1])
            compute[mode] = best
            margins[mode] = fastest_spreads[best_n]
            # the spread of the samples whose fastest set the ceiling: one lucky sample among
            # contended ones is what the calibration's evidence check refuses to trust
            details[mode] = {"best_n": best_n, "points": [list(p) for p in points], "best_rel_iqr": spreads[best_n]}
        method = (
            f"torch.matmul(a, b, out=c), square n x n, a/b torch.randn on the CPU, c preallocated, "
            f"{session.threads} threads, per math mode the CPU runs natively "
            f"({', '.join(compute)}); wall clock per call via time_cpu({_policy_text(policy)}), "
            f"no flush; rate(n) = 2*n^3 / fastest sample; best over n in {list(MATMUL_SIZES)}"
        )
        return ProbeResult(
            name=self.name,
            regime=REGIME,
            method=method,
            compute=compute,
            details=details,
            duration_s=time.perf_counter() - start,
            spread=max(d["best_rel_iqr"] for m, d in details.items() if m in compute),
            fastest_spread=margins,
        )


class CpuMemoryBandwidthProbe(CalibrationProbe):
    """Memory bandwidth from a copy (bytes read + written) and a read-only sum over buffers far
    larger than the caches; the higher of the two is the DRAM ceiling.

    Why both: on a CPU an ordinary store first reads the line it writes (read-for-ownership),
    so a copy moves about 3x its size while the read + write convention counts 2x; a kernel
    that mostly reads (a GEMV's weights) can then stream faster than the copy rate suggests,
    and a ceiling below a real rate would not keep the calibrated bound a bound."""

    name = "cpu-memory-bandwidth"
    backend = "torch-cpu"

    def run(self, session) -> ProbeResult:
        torch, policy = session.torch, _policy()
        start = time.perf_counter()
        nbytes = max(8 * cache_bytes(session.machine), MIN_STREAM_BYTES)
        nbytes = min(nbytes, max(MIN_STREAM_BYTES // 4, _available_bytes() // 8)) // 8 * 8
        with torch.inference_mode():
            src = torch.empty(nbytes // 4, dtype=torch.float32).uniform_()  # random, not zeros
            dst = torch.empty_like(src)
            # (the lambdas run inside _timed, before the `del`s that free the buffers)
            copied_samples = _sampled(lambda: dst.copy_(src), policy)  # noqa: F821
            copied = copied_samples.stats
            copy = _rate(2.0 * nbytes, copied.min, "copy")
            del dst
            total = torch.empty((), dtype=torch.float32)
            summed_samples = _sampled(lambda: torch.sum(src, dim=0, out=total), policy)  # noqa: F821
            summed = summed_samples.stats
            read = _rate(float(nbytes), summed.min, "read")
            del src
        method = (
            f"max of (a) dst.copy_(src), contiguous float32 buffers of {nbytes} B, rate = "
            f"2*{nbytes} (read + write) / fastest sample, and (b) torch.sum over the same source, "
            f"rate = {nbytes} / fastest sample; {session.threads} threads; "
            f"time_cpu({_policy_text(policy)}), no flush (the buffers exceed the caches "
            f"{max(1, nbytes // max(1, cache_bytes(session.machine)))}x)"
        )
        return ProbeResult(
            name=self.name,
            regime=REGIME,
            method=method,
            dram_bytes_per_s=max(copy, read),
            details={"buffer_bytes": nbytes, "copy_read_plus_write_bytes_per_s": copy, "read_bytes_per_s": read},
            duration_s=time.perf_counter() - start,
            spread=float((copied if copy >= read else summed).rel_iqr),  # of the figure kept
            fastest_spread={"dram": fastest_spread((copied_samples if copy >= read else summed_samples).samples_s)},
            dram_patterns={"copy": copy, "read": read},
        )


CALLS_PER_SAMPLE = 100


class CpuCallFloorProbe(CalibrationProbe):
    """The least time one eager PyTorch call takes on this CPU: dispatch and bookkeeping around
    a 1-element add_. Timed as batches of back-to-back calls, because that is how the calls of
    a model follow each other (one call alone, between the timing loop's own bookkeeping, ran
    3x slower here: cold caches and branch predictors). p50, not p10: a typical per-call cost,
    reported, not part of the bound."""

    name = "cpu-call-floor"
    backend = "torch-cpu"

    def run(self, session) -> ProbeResult:
        torch = session.torch
        start = time.perf_counter()
        policy = _policy(min_iters=25, max_iters=500)
        with torch.inference_mode():
            x = torch.ones(1)

            def batch():
                for _ in range(CALLS_PER_SAMPLE):
                    x.add_(1.0)

            stats = _timed(batch, policy)
            p50 = stats.p50 / CALLS_PER_SAMPLE
        method = (
            f"x.add_(1.0) on a 1-element float32 CPU tensor, {CALLS_PER_SAMPLE} calls back to back "
            f"per sample, wall clock, no flush, time_cpu({_policy_text(policy)}); "
            f"seconds = p50 / {CALLS_PER_SAMPLE}"
        )
        # named as the GPU's floor of the same thing: host time per eager call, back to back
        return ProbeResult(
            name=self.name,
            regime=REGIME,
            method=method,
            launch_floor_s=p50,
            floors={"host_call_interval_s": p50},
            duration_s=time.perf_counter() - start,
            spread=float(stats.rel_iqr),
        )
