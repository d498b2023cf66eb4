"""CALIBRATED energy: probe windows of different arithmetic intensity under the GPU's energy
counter, and the fit of static power, energy per FLOP per math mode and energy per DRAM byte
(energy/fit.py), with the enforced power limit NVML reports.

Windows, each edge to edge on the counter (energy/window.py) after WARMUP_S of the same load so
the power (and, for large GEMMs, the power cap's clock) has settled:
  idle             nothing runs (sleep between counter reads): the idle power
  launch-bound     a tiny eager mix (norm, 64x64 matmul, softmax, scale, add), back to back:
                   static power with the clocks up, ~no work; and the queued eager loop's host
                   time per kernel (the estimate's host time, tensorforge.energy.model.queued_time)
  copy             device-to-device copy of max(8 x L2, 1 GiB): DRAM bytes, no math
  read stream      a bf16 sum over a buffer of the copy's size: DRAM reads with ~no writes, beside
                   the copy's reads and writes (kept apart from the fit: context for whether a
                   read-heavy stream, a decode's weights, costs what the copy's bytes cost)
  skinny GEMM      bf16 8192 x 8192 weights times 64 columns: DRAM bytes and some math
  square GEMMs     bf16 8192 and 4096, fp16 8192, tf32 8192: math, few bytes
  depthwise        a 3x3 depthwise bf16 convolution (one channel per group, channels-last) streaming
                   from DRAM: its math runs on the vector (CUDA-core) units, not the tensor cores;
                   its power less P_s and its DRAM bytes x e_b, per FLOP, is the vector units'
                   energy per FLOP (joules_per_vector_flop; kept apart from the fit)
  graph GEMMs      a CUDA graph of mid-size bf16 GEMMs streaming from DRAM (no host gaps): meant
                   to sit below the cap, it reached it on the H200 (743-747 W), so busy_below_cap_w
                   is context; kept because it is the window that draws the most (peak_power_w,
                   the power-limited bound's power)
  L2-resident      a square bf16 GEMM whose operands stay in L2 (kernels longer than a launch: the
                   SMs and L2 busy at full clock, no DRAM): what "busy" costs beyond the static
                   power, the estimate's busy floor for operators that do real work (busy_w; on
                   the H200 525-540 W, what small full-device convolutions drew over their
                   kernels; both kept apart from the fit)
  capped GEMMs     bf16, fp16, tf32 8192 after CAPPED_WARMUP_S of continuous load, at the power
                   cap and hot: the math rate there per mode (kept apart from the fit; context:
                   on the H200 slower than the workloads' sustained timings, tensorforge/energy/model.py)
Inputs are random (zeros draw less power). The probe runs last (a sustained probe: it leaves
the device hot).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import attrs

from tensorforge_measure import EnergyCalibration, EnergyPoint, FitError, counter_record, peak_power_w, take_window
from tensorforge_measure import fit_energy as fit
from tf_cuda.nvml_power import NvmlPower

WARMUP_S = 0.15
WINDOW_S = 0.25
# the cap's limiter and the chip's temperature settle over about a second of continuous load (the
# H200's sustained telemetry: SwPowerCap, 1470-1515 MHz); the first capped window follows the
# square GEMM windows, so the device is already loaded
CAPPED_WARMUP_S = 0.8
CAPPED = ("bf16", "fp16", "tf32")
CAPPED_N = 8192
BUSY_WINDOW = "L2-resident matmul"  # the window busy_w comes from (_busy_matmul_window)
LAUNCH_WINDOW = "launch-bound eager mix"  # static with the clocks up; the host time per kernel
MIX_KERNELS = 5  # kernels one call of _eager_mix launches
VECTOR_WINDOW = "depthwise conv"  # joules_per_vector_flop (_depthwise_window)
READ_WINDOW = "read stream"  # DRAM reads alone, context (_read_stream_window)
GRAPH_WINDOW = "graph-replayed gemm"  # busy_below_cap_w and the highest power (_graph_gemm_window)
GRAPH_GEMM = (16384, 1024, 128)  # m, k, n: ~4.3 GFLOP, ~36 MB a call
GRAPH_CALLS = 16
# n, c, h, w of the 3x3 depthwise probe (bf16, stride 1, padding 1): ~0.6 GFLOP and ~134 MB a
# call (input and output each 2.5x an H200's L2, so every byte streams), ~65 us on an H200
DEPTHWISE = (16, 512, 64, 64)
SQUARE = (("bf16", 8192), ("bf16", 4096), ("fp16", 8192), ("tf32", 8192))
SKINNY = (8192, 8192, 64)  # m, k, n (bf16)

METHOD = (
    "energy probe windows (idle; a launch-bound loop of tiny eager ops (norm, 64x64 matmul, softmax, scale, add: host time per kernel); a device-to-device copy larger "
    "than L2; a skinny bf16 GEMM; square GEMMs per math mode), each after {warm:g} s of the same load, "
    "executions kept queued on the device, measured edge to edge on NVML's energy counter for >= {win:g} s; least-squares fit of each loaded "
    "window's mean power P = P_s + sum_m e_m FLOP_m/s + e_b B/s (idle kept apart); lower ends = "
    "(fit - 2 standard errors) x 0.97, never below 0, the static one also at most the idle power; kept apart "
    "from the fit: a 3x3 depthwise bf16 convolution streaming from DRAM (vector-unit math: (its power - P_s - e_b B/s) "
    "per FLOP/s is the vector units' energy per FLOP) and a CUDA graph of mid-size bf16 GEMMs streaming from DRAM "
    "(busy power below the cap; in practice the highest power) and a bf16 sum over the copy's buffer size (DRAM reads alone: "
    "context) and an L2-resident bf16 GEMM (busy power: kernels at full clock, no DRAM) and square GEMMs bf16/fp16/tf32 8192 after {capped:g} s "
    "of continuous load, at the power cap (their rates: context)"
)


def _per_call(fn, sync, calls: int = 3) -> float:
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls


def _window(
    name,
    fn,
    sync,
    power: NvmlPower,
    flops_per_call: dict[str, float],
    bytes_per_call: float,
    event=None,
    warm_s=WARMUP_S,
):
    """One probe window: warm_s of the same load, then the counter edge to edge; executions
    kept queued on the device (QueuedSteps) where `event` is given, as the workloads' windows."""
    from tensorforge_measure import QueuedSteps, chunk_runner

    per_call = _per_call(fn, sync)
    step = QueuedSteps(fn, event, per_call) if event is not None else chunk_runner(fn, sync, per_call)
    try:
        end = time.perf_counter() + warm_s
        while time.perf_counter() < end:
            step()
        window = take_window(step, power, min_s=WINDOW_S, rapl=None)
    finally:
        if isinstance(step, QueuedSteps):
            step.drain()
    c = window.counter
    if not c.ok or c.joules is None or not c.seconds:
        raise RuntimeError(f"energy window {name!r}: {c.reason}")
    n = c.executions_exact or c.executions
    point = EnergyPoint(
        name=name,
        seconds=c.seconds,
        joules=c.joules,
        flops={m: f * n for m, f in flops_per_call.items()},
        dram_bytes=bytes_per_call * n,
        counter_agreement=window.integration.counter_agreement if window.integration else None,
        executions=float(n),
    )
    return point, c


def _l2_bytes(dev) -> int:
    import torch

    return int(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or 50 * 2**20)


def busy_matmul_n(l2_bytes: int) -> int:
    """The side of the busy window's square bf16 GEMM: the largest power of two whose three
    operands (2 bytes each) fill at most half of L2, at most 2048 (bigger GEMMs run at the cap)."""
    n = 2048
    while n > 256 and 3 * 2 * n * n > l2_bytes // 2:
        n //= 2
    return n


def _square_matmul(torch, n: int, dev, dtype):
    """One n x n x n GEMM into a preallocated output (a probe window's load) and the element size."""
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    out = torch.empty(n, n, device=dev, dtype=dtype)
    return (lambda: torch.matmul(a, b, out=out)), a.element_size()


def _busy_matmul_window(dev, sync, power: NvmlPower, event) -> EnergyPoint:
    """The busy window: a square bf16 GEMM whose operands stay in L2, back to back. Why a GEMM
    and not the elementwise multiply: the multiply's kernel (~3 us) is shorter than a launch
    from Python, so the queue drains and the GPU idles between kernels (on the H200 it drew 131 W
    above P_s where the small convolutions and skinny GEMMs of the energy suite drew ~480-550 W
    above it while their kernels ran); one 2048^3 GEMM lasts ~20-30 us, longer than a launch, so
    the kernels run back to back at full clock on L2-resident data: what short tensor-core
    kernels draw beyond the static power, the estimate's busy term. Kept apart from the fit."""
    import torch

    from tensorforge_measure import math_mode

    n = busy_matmul_n(_l2_bytes(dev))
    with math_mode("bf16") as dtype:
        matmul, _size = _square_matmul(torch, n, dev, dtype)
        point, _c = _window(
            f"{BUSY_WINDOW} bf16 {n}",
            matmul,
            sync,
            power,
            {"bf16": 2.0 * n**3},
            0.0,  # L2-resident: no DRAM bytes after the first call
            event,
        )
    return point


def _eager_mix(torch, dev):
    """One call of the launch-bound window: MIX_KERNELS tiny eager ops of the kinds a model's
    forward launches one by one (a norm, a small matmul, a softmax, a scale, a residual add) on
    64 x 64 fp32 tensors, each one kernel that takes less than its launch. Back to back and
    queued, the loop is host-bound: its window gives the static power with the clocks up (~no
    work) and the queued eager loop's host time per kernel (seconds / (calls x MIX_KERNELS)),
    with the power sampler's thread running as in a workload's window. Why not one add_: the
    cheapest call there is; a model's ops each cost more host time (dispatch, allocation)."""
    import torch.nn.functional as F

    x = torch.randn(64, 64, device=dev)
    w = torch.randn(64, 64, device=dev)

    def mix():
        h = F.layer_norm(x, (64,))
        y = torch.softmax(torch.matmul(h, w), -1)
        return torch.add(y * 0.5, x)

    return mix


def _graph_gemm_window(dev, sync, power: NvmlPower, event) -> EnergyPoint:
    """The busy window BELOW the cap: a CUDA graph replaying GRAPH_CALLS mid-size bf16 GEMMs
    (GRAPH_GEMM: m x k x n), cycling over operands that together exceed twice L2, so each kernel
    (~10-20 us on an H200) streams its larger operand from DRAM while its tensor cores run at
    full clock; one replay launches them all, so there are no host gaps between the kernels
    (the L2-resident multiply it replaces idled between ~3 us kernels). Meant to show what short,
    partly memory-bound tensor-core kernels draw above the static power below the cap; on the H200
    it reached the cap (743-747 W), so it is context (busy_below_cap_w): the queued estimate uses
    it only where busy_w was not measured (tensorforge.energy.model.queued_estimate). Kept apart from
    the fit. Why it stays beside the depthwise window (which took its place in an H200
    session of 2026-12-01): it is the window that draws the most, and the power-limited bound's power is the
    highest any probe window drew (peak_power_w); without it a later session's peak
    fell from 745 to 714 W and the bound came out above gemm_batched_fp16's sustained p50 (0.961)."""
    import torch

    from tensorforge_measure import math_mode
    from tf_cuda.graph import paired_graph

    m, k, n = GRAPH_GEMM
    with math_mode("bf16") as dtype:
        size = torch.empty((), dtype=dtype).element_size()
        sets = max(2, -(-2 * _l2_bytes(dev) // (size * m * k)))  # the A operands exceed 2 x L2
        a = [torch.randn(m, k, device=dev, dtype=dtype) for _ in range(sets)]
        b = torch.randn(k, n, device=dev, dtype=dtype)
        out = [torch.empty(m, n, device=dev, dtype=dtype) for _ in range(sets)]

        def warm():  # cuBLAS warmed outside the capture (its workspace, its choice)
            for i in range(sets):
                torch.matmul(a[i], b, out=out[i])

        def body():
            for i in range(GRAPH_CALLS):
                torch.matmul(a[i % sets], b, out=out[i % sets])

        graph = paired_graph(torch, warm, body, dev)
        point, _c = _window(
            f"{GRAPH_WINDOW} bf16 {m}x{k}x{n} x{GRAPH_CALLS}",
            graph.replay,
            sync,
            power,
            {"bf16": 2.0 * m * k * n * GRAPH_CALLS},
            float(size * (m * k + k * n + m * n) * GRAPH_CALLS),
            event,
        )
    return point


def read_stream_load(torch, nbytes: int, dev):
    """One call of the read-stream window and the DRAM bytes it moves: a sum of nbytes of random
    bf16 into one fp32 scalar (a single reduction kernel; its output is 4 bytes, so the bytes are
    the reads). Its adds (nbytes / 2 a call) run on the vector units and are not counted as FLOPs:
    the window is context for the bytes, not for math."""
    x = torch.empty(nbytes // 2, dtype=torch.bfloat16, device=dev).uniform_(-1.0, 1.0)
    out = torch.empty((), dtype=torch.float32, device=dev)
    return (lambda: torch.sum(x, 0, dtype=torch.float32, out=out)), float(x.numel() * x.element_size())


def _read_stream_window(dev, sync, power: NvmlPower, event, nbytes: int) -> EnergyPoint:
    """The read-stream window: `read_stream_load` back to back over a buffer as large as the copy
    window's (max(8 x L2, 1 GiB): every byte streams from DRAM). Why: a decode's GEMMs read their
    weights and write almost nothing, while e_b is fitted mostly from the copy (as many writes as
    reads) and the skinny GEMM (reads, and math at e_bf16); in two H200 sessions
    (2026-12-01) the decode GEMMs' windows drew 50-70 W less than the copy's at the same
    bandwidth and their estimates came out +7 to +14% in power, in two earlier ones within 4%.
    This window puts reads alone on record beside the copy in every calibration, so a read/write
    split of e_b can be judged from probes. Kept apart from the fit."""
    import torch

    call, moved = read_stream_load(torch, nbytes, dev)
    # right after the copy, on the same DRAM-bound load: its power has settled, so a short warm-up
    # (the window costs ~0.45 s of a calibration, not ~0.55)
    point, _c = _window(f"{READ_WINDOW} bf16 sum {int(moved)} B", call, sync, power, {}, moved, event, warm_s=0.05)
    return point


def depthwise_call(n: int, c: int, h: int, w: int) -> tuple[float, float]:
    """(FLOPs, DRAM bytes) of one call of the depthwise probe: 9 multiply-adds per output element
    (3x3, stride 1, padding 1: the output is as large as the input), the input and output each
    read or written once from DRAM (bf16, 2 bytes) and the filter (negligible)."""
    elements = float(n * c * h * w)
    return 2.0 * 9.0 * elements, 2.0 * (2.0 * elements + 9.0 * c)


def vector_flop_j(point: EnergyPoint, static_w: float, joules_per_dram_byte: float) -> float | None:
    """The vector units' energy per FLOP from the depthwise window: what its counter joules hold
    beyond the static power over its seconds and its DRAM bytes at the fitted energy per byte, per
    FLOP (the same split the estimate makes of a vector-unit operator: P_s x t + e_b x bytes +
    e_vec x FLOPs); never below 0; None without FLOPs."""
    flops = sum(point.flops.values())
    if flops <= 0:
        return None
    return max(0.0, (point.joules - static_w * point.seconds - joules_per_dram_byte * point.dram_bytes) / flops)


def _depthwise_window(dev, sync, power: NvmlPower, event) -> EnergyPoint:
    """The vector-unit window: a 3x3 depthwise bf16 convolution (DEPTHWISE; cuDNN, channels-last as
    the conv2d workloads run), back to back. One channel per group leaves nothing for a
    tensor-core tile: its multiply-adds run on the CUDA cores, each with its loads and
    conversions, while the input streams from DRAM at about half the copy's rate. Why a probe of
    its own: on the H200 conv_depthwise_3x3 drew 577-648 W in six sessions where its DRAM bytes
    at e_b and its FLOPs at the bf16 tensor-core coefficient accounted for ~360 W (its estimate
    -33 to -37%); the tensor-core windows cannot say what a CUDA-core FLOP costs. Run right after
    the launch-bound window, at full clock (a depthwise window stays below the cap). Kept apart
    from the fit."""
    import torch
    import torch.nn.functional as F

    from tensorforge_measure import math_mode

    n, c, h, w = DEPTHWISE
    with math_mode("bf16") as dtype:
        x = torch.randn(n, c, h, w, device=dev, dtype=dtype).to(memory_format=torch.channels_last)
        weight = torch.randn(c, 1, 3, 3, device=dev, dtype=dtype).to(memory_format=torch.channels_last)
        flops, moved = depthwise_call(n, c, h, w)
        point, _c = _window(
            f"{VECTOR_WINDOW} bf16 3x3 {n}x{c}x{h}x{w} (vector units)",
            lambda: F.conv2d(x, weight, None, 1, 1, 1, c),
            sync,
            power,
            {"bf16": flops},
            moved,
            event,
        )
    return point


def probe_energy(device: Any, device_name: str, fingerprint: str, started: str) -> EnergyCalibration:
    import torch

    from tensorforge_measure import math_mode
    from tf_cuda.probes import default_copy_bytes
    from tf_cuda.timing import cuda_device

    dev = cuda_device(device)
    power, reason = NvmlPower.open(dev.index or 0)
    if power is None:
        raise RuntimeError(reason)
    try:
        sync = lambda: torch.cuda.synchronize(dev)  # noqa: E731
        event = torch.cuda.Event
        points: list[EnergyPoint] = []
        counters = []
        with torch.cuda.device(dev):
            torch.cuda.synchronize(dev)
            idle, c = _window("idle", lambda: time.sleep(0.002), lambda: None, power, {}, 0.0)
            counters.append(c)
            # its FLOPs (~0.5 MFLOP a call) draw ~0 W: the fit's static point
            launch, c = _window(LAUNCH_WINDOW, _eager_mix(torch, dev), sync, power, {}, 0.0, event)
            points.append(launch)
            counters.append(c)
            apart: list[EnergyPoint] = []  # measured, kept out of the fit
            # right after the launch-bound window, while the cap's ~1 s average is low: full clock
            try:
                apart.append(_depthwise_window(dev, sync, power, event))
            except Exception as exc:  # noqa: BLE001 - no depthwise kernel here: vector FLOPs keep their mode's e_m
                print(f"energy probe: the depthwise window failed ({exc}); no vector energy per FLOP", file=sys.stderr)
            try:
                apart.append(_graph_gemm_window(dev, sync, power, event))
            except Exception as exc:  # noqa: BLE001 - a graph this backend cannot capture: busy_w stands in
                print(f"energy probe: the graph-replayed GEMM window failed ({exc}); busy_w stands in", file=sys.stderr)
            size = default_copy_bytes(dev)
            src = torch.empty(size, dtype=torch.uint8, device=dev).random_()
            dst = torch.empty_like(src)
            point, c = _window(f"copy {size} B", lambda: dst.copy_(src), sync, power, {}, 2.0 * size, event)
            points.append(point)
            counters.append(c)
            try:
                apart.append(_read_stream_window(dev, sync, power, event, size))
            except Exception as exc:  # noqa: BLE001 - context only: the fit and every coefficient stand without it
                print(f"energy probe: the read-stream window failed ({exc}); no read-only point", file=sys.stderr)
            with math_mode("bf16") as dtype:
                m, k, n = SKINNY
                w = torch.randn(m, k, device=dev, dtype=dtype)
                x = torch.randn(k, n, device=dev, dtype=dtype)
                y = torch.empty(m, n, device=dev, dtype=dtype)
                e = w.element_size()
                point, c = _window(
                    f"skinny gemm bf16 {m}x{k}x{n}",
                    lambda: torch.matmul(w, x, out=y),
                    sync,
                    power,
                    {"bf16": 2.0 * m * k * n},
                    float(e * (m * k + k * n + m * n)),
                    event,
                )
                points.append(point)
                counters.append(c)
            for mode, size_n in SQUARE:
                with math_mode(mode) as dtype:
                    a = torch.randn(size_n, size_n, device=dev, dtype=dtype)
                    b = torch.randn(size_n, size_n, device=dev, dtype=dtype)
                    out = torch.empty(size_n, size_n, device=dev, dtype=dtype)
                    e = a.element_size()
                    point, c = _window(
                        f"matmul {mode} {size_n}",
                        lambda: torch.matmul(a, b, out=out),
                        sync,
                        power,
                        {mode: 2.0 * size_n**3},
                        float(3 * e * size_n * size_n),
                        event,
                    )
                    points.append(point)
                    counters.append(c)
            apart.append(_busy_matmul_window(dev, sync, power, event))
            capped: dict[str, float] = {}
            for mode in CAPPED:
                with math_mode(mode) as dtype:
                    matmul, size = _square_matmul(torch, CAPPED_N, dev, dtype)
                    point, c = _window(
                        f"capped matmul {mode} {CAPPED_N}",
                        matmul,
                        sync,
                        power,
                        {mode: 2.0 * CAPPED_N**3},
                        float(3 * size * CAPPED_N * CAPPED_N),
                        event,
                        warm_s=CAPPED_WARMUP_S,
                    )
                    apart.append(point)
                    capped[mode] = point.flops[mode] / point.seconds
        limit = power.enforced_limit_w()
    finally:
        power.close()
    idle_w = idle.joules / idle.seconds
    longest = max(counters, key=lambda c: len(c.ticks))
    source = f"calibrated on {device_name} ({fingerprint}) at {started}"
    try:
        record, errors, residuals = fit(
            points, idle_w, limit, "nvmlDeviceGetEnforcedPowerLimit" if limit else "not reported", source
        )
        capped_windows = [p for p in apart if p.name.startswith("capped")]
        busy = next((p for p in apart if p.name.startswith(BUSY_WINDOW)), None)
        vector = next((p for p in apart if p.name.startswith(VECTOR_WINDOW)), None)
        below = next((p for p in apart if p.name.startswith(GRAPH_WINDOW)), None)
        record = attrs.evolve(
            record,
            capped_rate_flop_s=capped or None,
            capped_power_w=sum(p.joules for p in capped_windows) / sum(p.seconds for p in capped_windows)
            if capped_windows
            else None,
            busy_w=max(0.0, busy.joules / busy.seconds - record.static_w) if busy is not None else None,
            peak_power_w=peak_power_w((*points, *apart)),
            busy_below_cap_w=max(0.0, below.joules / below.seconds - record.static_w) if below is not None else None,
            joules_per_vector_flop=vector_flop_j(vector, record.static_w, record.joules_per_dram_byte)
            if vector is not None
            else None,
            host_s_per_kernel=launch.seconds / (launch.executions * MIX_KERNELS) if launch.executions else None,
        )
        fitted = [attrs.evolve(p, residual_w=r) for p, r in zip(points, residuals)]
        error = None
    except FitError as exc:
        record, errors, fitted, error = None, {}, points, str(exc)
    return EnergyCalibration(
        method=METHOD.format(warm=WARMUP_S, win=WINDOW_S, capped=CAPPED_WARMUP_S),
        coefficients=record,
        error=error,
        points=(idle, *fitted, *apart),
        standard_errors=errors,
        counter=counter_record(longest),
    )
