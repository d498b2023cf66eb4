"""Coefficients from calibration probe sweeps (probe_plan.py), fitted in stages with the very
code that predicts (model.estimate_workload), so a coefficient means in prediction exactly what
it meant in calibration.

Stages, each fixing its coefficients before the next (a group nobody probed keeps the base
value, and the report says 'not probed'):
  launch   t(n tiny kernels) = harness + n * launch, eager (least squares) and, where the chains
           were also graph-timed, the same line in the device-time regime
  stream   per access pattern: bandwidth efficiency from the larger sizes
  gemm     mainloop efficiency, operand feed, tile overhead, kernel prologue, streaming
           efficiency: Nelder-Mead on the mean squared log error over the GEMM sweep
  gemm-large  the mainloop rate again per mode (the 16-bit modes together), from the long
           compute-bound GEMM probes alone, every other GEMM coefficient held
  then one-dimensional searches: other math modes, unaligned rate, convolution families,
  attention prefill / causal / decode;
  host     last: eager tiny transformers, host time per kernel and flush slack, against the
           device time every stage before it fixed.
  train-host  after it: eager tiny training steps, the host costs of autograd and the optimizer
           (fit_train_host.py), against the eager time with every cost before them fixed.
  warm     after them: per class of operator, what a call saves in a window without the L2 flush
           (the probes also timed warm: warm.py), a cap and a share of a short call, medians, no search
Where a probe was also timed as a CUDA graph (the device-time regime the evaluation scores), its
graph sample is the one fitted, against the estimate's device time: an eager sample of a 3 us
GEMM holds ~3 us of event pair and launch that the graph sample does not, and fitting device
coefficients to eager samples pushed the GEMM rates onto their limits (the final H200 session of
2026-11-30: bf16 mainloop 1.5x the ceiling, small GEMMs estimated 5 us against 3 us measured).
The loss is always the mean squared log ratio of predicted to measured probe time (relative
error, symmetric for over and under). Everything is deterministic.
"""

import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from tensorforge.estimate.coefficients import EstimateCoefficients
from tensorforge.estimate.gemm import READ_DOMINATED
from tensorforge.estimate.fit_train_host import fit_train_host
from tensorforge.estimate.menus import menu_for
from tensorforge.estimate.model import device_for, estimate_workload
from tensorforge.estimate.probe_plan import STREAM_OPS, warm_timed
from tensorforge.estimate.train_host import runs_on_host
from tensorforge.estimate.warm import fit_warm, warm_class
from tensorforge.hardware.target import Ceilings, Target, datasheet_ceilings


# a probe's regime as the measurement protocol it was timed with (results.PROTOCOLS); a published
# measurement's point carries its protocol itself ('eager-warm')
# (a wall clock + synchronize around one eager call is an eager-warm measurement: the
# synchronize's return is host time like the dispatch)
REGIME_PROTOCOL = {"graph": "graph-flushed", "eager": "eager-flushed", "wall-warm": "eager-warm"}


@attrs.frozen
class WorkloadPoint:
    """A probe that timed a workload: its bound prediction, operators and the measured p50."""

    name: str
    group: str
    prediction: Any  # WorkloadPrediction (bound only)
    operators: tuple
    kind: Any
    params: Any
    measured_s: float
    # 'graph': measured_s is a CUDA-graph sample, compared with the estimate's device time (the
    # regime the evaluation scores); 'eager': an eager sample, compared with the eager time
    regime: str = "eager"
    # the same calls back to back without the L2 flush (probe_plan.warm_timed; warm.py), per call
    warm_s: float | None = None


def _loss(values: Sequence[float], measured: Sequence[float]) -> float:
    ratios = [math.log(max(v, 1e-15) / m) for v, m in zip(values, measured)]
    return float(np.mean(np.square(ratios))) if ratios else 0.0


def _ape(values, measured) -> list[float]:
    return [abs(v - m) / m for v, m in zip(values, measured)]


def _search(loss: Callable[[float], float], lo: float, hi: float) -> float:
    """Minimise a 1-D loss over [lo, hi] on a log scale: a grid, then golden-section refinement
    around the best grid point."""
    grid = np.exp(np.linspace(math.log(lo), math.log(hi), 33))
    values = [loss(float(x)) for x in grid]
    i = int(np.argmin(values))
    a, b = math.log(grid[max(0, i - 1)]), math.log(grid[min(len(grid) - 1, i + 1)])
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = loss(math.exp(c)), loss(math.exp(d))
    for _ in range(30):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = loss(math.exp(c))
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = loss(math.exp(d))
    best = math.exp((a + b) / 2)
    return best if loss(best) <= values[i] else float(grid[i])


def _bounded(f: Callable[[np.ndarray], float]) -> Callable[[np.ndarray], float]:
    """The loss, infinite where its parameters leave the representable range. Why: the searches run
    in log space and exponentiate; on a loaded 2-core CI machine the probe points were noisy enough
    that a Nelder-Mead expansion stepped to exp(x) > 1.8e308 and the whole host-CPU fit failed
    with OverflowError, leaving the shipped coefficients in its place."""

    def loss(x: np.ndarray) -> float:
        try:
            value = float(f(x))
        except (OverflowError, ZeroDivisionError):
            return math.inf
        return value if math.isfinite(value) else math.inf

    return loss


def _nelder_mead(
    f: Callable[[np.ndarray], float], x0: np.ndarray, step: np.ndarray, iterations: int = 240
) -> np.ndarray:
    f = _bounded(f)
    n = x0.size
    simplex = [x0] + [x0 + np.eye(n)[i] * step[i] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = np.argsort(values, kind="stable")
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        centroid = np.mean(simplex[:-1], axis=0)
        worst = simplex[-1]
        reflected = centroid + (centroid - worst)
        fr = f(reflected)
        if fr < values[0]:
            expanded = centroid + 2 * (centroid - worst)
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = centroid + 0.5 * (worst - centroid)
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [best + 0.5 * (x - best) for x in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    return simplex[int(np.argmin(values))]


class Fitter:
    def __init__(
        self, base: EstimateCoefficients, target: Target, ceilings: Ceilings, operating_point: str | None = None
    ):
        self.c = base
        self.target, self.ceilings, self.point = target, ceilings, operating_point
        self.report: dict[str, Any] = {}

    def device(self, c: EstimateCoefficients):
        return device_for(self.target, self.ceilings, c, self.point)

    def times(self, points: Sequence[WorkloadPoint], c: EstimateCoefficients) -> list[float]:
        d = self.device(c)
        out = []
        for p in points:
            est = estimate_workload(p.prediction, p.operators, p.kind, p.params, d, c)
            out.append(est.for_protocol(REGIME_PROTOCOL.get(p.regime, p.regime)))
        return out

    def note(self, group: str, points, fitted: dict[str, float], c=None):
        c = c or self.c
        if not points:
            self.report[group] = {"points": 0, "status": "not probed: base value kept"}
            return
        measured = [p.measured_s for p in points]
        apes = _ape(self.times(points, c), measured)
        self.report[group] = {
            "points": len(points),
            "fitted": fitted,
            "median_ape": float(np.median(apes)),
            "max_ape": float(np.max(apes)),
        }

    def evolve(self, section: str, **changes) -> EstimateCoefficients:
        return attrs.evolve(self.c, **{section: attrs.evolve(getattr(self.c, section), **changes)})

    def fit_1d(self, group: str, points, section: str, field: str, lo=0.02, hi=1.5, key=None):
        if not points:
            self.note(group, points, {})
            return
        measured = [p.measured_s for p in points]

        def make(x):
            if key is None:
                return self.evolve(section, **{field: x})
            table = dict(getattr(getattr(self.c, section), field))
            table[key] = x
            return self.evolve(section, **{field: table})

        best = _search(lambda x: _loss(self.times(points, make(x)), measured), lo, hi)
        self.c = make(best)
        self.note(group, points, {f"{section}.{field}" + (f"[{key}]" if key else ""): best})


def _fit_nd(f: "Fitter", group: str, points, params, iterations: int = 160, starts=()) -> None:
    """Nelder-Mead on the log of several coefficients at once; params: (section, field, lo, hi).
    starts: more starting points (values in params' order), the best end kept: where coefficients
    trade against each other (a per-kernel against a per-wave cost) one simplex can stop in the
    valley it started in."""
    if not points:
        f.note(group, points, {})
        return
    measured = [p.measured_s for p in points]

    def make(x):
        c = f.c
        for (section, field, lo, hi), v in zip(params, x):
            value = float(min(hi, max(lo, math.exp(v))))
            c = attrs.evolve(c, **{section: attrs.evolve(getattr(c, section), **{field: value})})
        return c

    def loss(x):
        return _loss(f.times(points, make(x)), measured)

    first = [max(getattr(getattr(f.c, s), fld), lo) for s, fld, lo, hi in params]
    best, best_loss = None, math.inf
    # every start gets the coarse search, only the best end the fine one: the fit runs beside the
    # sustained probes and the run waits for it (refining all three starts of the kxk stage made
    # an H200 run wait 9.7 s)
    for values in [first, *starts]:
        start = np.array([math.log(max(v, lo)) for v, (_, _, lo, _) in zip(values, params)])
        x = _nelder_mead(loss, start, np.full(len(params), 0.5), iterations=iterations)
        if (value := loss(x)) < best_loss:
            best, best_loss = x, value
    assert best is not None  # at least the first start ran
    best = _nelder_mead(loss, best, np.full(len(params), 0.15), iterations=iterations)
    f.c = make(best)
    f.note(group, points, {f"{s}.{fld}": getattr(getattr(f.c, s), fld) for s, fld, lo, hi in params})


LARGE_GEMM_S = 40e-6  # a GEMM this long runs many tiles per unit: its main loop dominates
LARGE_GEMM_RATE = 0.6  # of its mode's ceiling: compute-bound, not operand- or overhead-bound
LARGE_GEMM_POINTS = 3  # fewer: the rate of stage gemm / gemm-mode stays


def _compute_bound(p: WorkloadPoint, ceilings: Ceilings) -> bool:
    """A GEMM probe that ran long and near its mode's ceiling: the points whose time is the
    main loop's rate (and the wave structure), nothing else."""
    op = p.prediction.operators[0]
    peak = ceilings.compute.get(op.math_mode)
    flops = getattr(op, "flops", None)
    if not peak or not flops or p.measured_s < LARGE_GEMM_S:
        return False
    return flops / p.measured_s >= LARGE_GEMM_RATE * float(peak)


def _fit_large_gemms(f: "Fitter", gemm_points, mode_points, ceilings: Ceilings) -> None:
    """The mainloop rate once more, from the long compute-bound GEMM probes alone, every other
    GEMM coefficient held. Why: stage gemm fits six coefficients to ~40 probes of which most are
    small, skinny or few-wave, and its least-squares compromise left the mainloop rate low: in
    the closing H200 session of 2026-11-30 the fit reproduced its own large probes 3-6% slow
    (7168^3 fp16 +4.9%, 3072^3 +6.4%) and estimated the held-out large GEMMs up to 5% slow. The
    16-bit modes of stage gemm share one rate (one tensor-core path), as they do there. Only on
    tensor-core families (wave-quantized tile menus: the CPU's blocked GEMMs have no such
    compromise, and its few probes on a loaded host would pin the rate to one point) and with at
    least LARGE_GEMM_POINTS points of a group."""
    if not menu_for(f.c.family).tensor_cores:
        f.report["gemm-large"] = {"points": 0, "status": "not a tensor-core family: stage gemm's rate kept"}
        return
    large = [p for p in list(gemm_points) + list(mode_points) if _compute_bound(p, ceilings)]
    shared = {p.prediction.operators[0].math_mode for p in gemm_points}
    for modes in [tuple(sorted(shared))] + [
        (m,) for m in sorted({p.prediction.operators[0].math_mode for p in large} - shared)
    ]:
        chosen = [p for p in large if p.prediction.operators[0].math_mode in modes]
        if len(chosen) < LARGE_GEMM_POINTS or not modes:
            continue
        measured = [p.measured_s for p in chosen]

        def make(x, modes=modes):
            eff = dict(f.c.gemm.mainloop_efficiency)
            for m in modes:
                eff[m] = x
            return f.evolve("gemm", mainloop_efficiency=eff)

        best = _search(lambda x: _loss(f.times(chosen, make(x)), measured), 0.3, 1.5)
        f.c = make(best)
        f.note(
            "gemm-large:" + "+".join(modes),
            chosen,
            {f"gemm.mainloop_efficiency[{m}]": best for m in modes},
        )


STREAM_GEMM_MIN_S = 8e-6  # shorter: the launch and harness, not the stream, are its time
STREAM_GEMM_POINTS = 3  # fewer: stage gemm's streaming coefficients serve read streams too


def _read_stream(p: WorkloadPoint) -> bool:
    """A GEMM probe whose bound is its memory side, that reads at least gemm.READ_DOMINATED bytes
    of operands per byte it writes (a GEMV, a skinny decode GEMM, a small-N tall one: the shapes
    the read_stream_* coefficients apply to) and ran long enough for the stream to be its time."""
    ops = p.prediction.operators
    if len(ops) != 1 or ops[0].bottleneck != "memory" or p.measured_s < STREAM_GEMM_MIN_S:
        return False
    prob = ops[0].problem
    try:
        reads = float(prob["a"]["nbytes"]) + float(prob["b"]["nbytes"])
        writes = float(prob["c"]["nbytes"])
    except (KeyError, TypeError):
        return False
    return reads >= READ_DOMINATED * max(writes, 1.0)


def _fit_stream_gemms(f: "Fitter", gemm_points) -> None:
    """The fixed time and the rate of a read-dominated GEMM stream (GemmCoefficients.read_stream_*)
    from those probes alone, every other GEMM coefficient held: why, in the coefficients' doc."""
    chosen = [p for p in gemm_points if _read_stream(p)]
    if len(chosen) < STREAM_GEMM_POINTS:
        f.report["gemm-stream"] = {
            "points": len(chosen),
            "status": "too few read-dominated GEMM probes: stage gemm's stream coefficients serve",
        }
        return
    measured = [p.measured_s for p in chosen]

    def make(x):
        return f.evolve(
            "gemm",
            read_stream_efficiency=float(min(1.5, math.exp(x[0]))),
            read_stream_fixed_s=float(min(3e-5, math.exp(x[1]))),
        )

    g = f.c.gemm
    start = np.array([math.log(g.stream_efficiency), math.log(max(g.stream_fixed_s, 1e-6))])
    loss = _bounded(lambda x: _loss(f.times(chosen, make(x)), measured))
    best = _nelder_mead(loss, start, np.array([0.2, 0.7]), iterations=200)
    best = _nelder_mead(loss, best, np.array([0.05, 0.2]), iterations=200)
    f.c = make(best)
    f.note(
        "gemm-stream",
        chosen,
        {
            "gemm.read_stream_efficiency": f.c.gemm.read_stream_efficiency,
            "gemm.read_stream_fixed_s": f.c.gemm.read_stream_fixed_s,
        },
    )


def _fit_warm(f: "Fitter", results: Sequence[dict[str, Any]], points: Sequence[WorkloadPoint]) -> None:
    """Per class of operator, what a call saves without the L2 flush (warm.py): the graph-timed
    probes also timed warm, each in the class of its operators (a point whose operators fall in
    several classes says nothing about one and is left out), the streaming items in 'memory';
    only the pairs the plan times warm (probe_plan.warm_timed: an exploratory calibration that
    timed every item warm fits as a run's does)."""
    pairs = []
    for p in points:
        if p.warm_s and p.regime == "graph" and warm_timed(p.group, p.measured_s):
            classes = {warm_class(op.problem, b.bottleneck) for op, b in zip(p.operators, p.prediction.operators)}
            if len(classes) == 1:
                pairs.append((classes.pop(), p.measured_s, float(p.warm_s)))
    pairs += [
        ("memory", float(r["graph_p50_s"]), float(r["warm_p50_s"]))
        for r in results
        if r["group"] == "stream" and r.get("warm_p50_s") and warm_timed("stream", r.get("graph_p50_s"))
    ]
    if not pairs:
        f.report["warm"] = {"points": 0, "status": "not probed: a window's time is the flushed device time"}
        return
    savings, shares = fit_warm(pairs)
    f.c = attrs.evolve(f.c, warm_saving_s=savings, warm_saving_share=shares)
    f.report["warm"] = {
        "points": len(pairs),
        "fitted": {f"warm_saving_s[{c}]": v for c, v in savings.items()}
        | {f"warm_saving_share[{c}]": v for c, v in shares.items()},
        "pairs_per_class": {c: sum(1 for k, _, _ in pairs if k == c) for c in sorted({k for k, _, _ in pairs})},
        "note": "per class, what one execution saves in a window without flushes (an energy window): at most "
        "the share of its flushed time the class's short probe items saved (median of saving / time below the "
        "knee), at most the cap (median saving above it)",
    }


def _fit_train(f: "Fitter", points: Sequence[WorkloadPoint]) -> None:
    """Stage train-host (fit_train_host.py): after the host stage, whose cost per forward kernel
    the training steps' forwards pay too."""
    if not points:
        f.note("train-host", points, {})
        return
    serial = runs_on_host(f.c.family)

    def estimates(costs):
        c = attrs.evolve(f.c, training=costs)
        d = f.device(c)
        return [estimate_workload(p.prediction, p.operators, p.kind, p.params, d, c) for p in points]

    costs, extra = fit_train_host(points, estimates, serial)
    f.c = attrs.evolve(f.c, training=costs)
    fitted = {
        "training.step_s": costs.step_s,
        "training.micro_step_s": costs.micro_step_s,
        "training.backward_kernel_s": costs.backward_kernel_s,
        "training.optimizer_tensor_s": costs.optimizer_tensor_s,
    } | {f"training.optimizer_step_s[{k}]": v for k, v in sorted(costs.optimizer_step_s.items())}
    f.note("train-host", points, fitted)
    f.report["train-host"].update(extra)


TAP_TILE = 128 * 128  # the tile the kxk tap term is quoted at (ConvCoefficients.kxk_tap_tile)


def _pointwise_streams(points) -> list[WorkloadPoint]:
    """The 16-bit 1x1 convolution probes whose bound is their memory side: the points the
    pointwise stream rate (ConvCoefficients.pointwise_stream_efficiency) is the time of."""
    chosen = []
    for p in points:
        op = p.prediction.operators[0]
        if op.bottleneck == "memory" and op.math_mode not in ("fp32", "tf32"):
            chosen.append(p)
    return chosen


def _fit_pointwise(f: "Fitter", points) -> None:
    """Stage conv-pointwise: the 1x1 convolutions' compute multiplier and, where a 16-bit probe is
    memory-bound, their own stream rate with it (ConvCoefficients.pointwise_stream_efficiency: why
    there); without one (the host CPU's fp32 probe, older plans) the multiplier alone, as before.
    The rate starts at the GEMM's: the old model is the simplex's first vertex."""
    if not _pointwise_streams(points):
        f.fit_1d("conv-pointwise", points, "conv", "pointwise_efficiency")
        return
    f.c = f.evolve("conv", pointwise_stream_efficiency=f.c.gemm.stream_efficiency)
    _fit_nd(
        f,
        "conv-pointwise",
        points,
        [("conv", "pointwise_efficiency", 0.02, 1.5), ("conv", "pointwise_stream_efficiency", 0.05, 1.5)],
    )


def _fit_kxk(f: "Fitter", kxk, fp32) -> None:
    """The implicit-GEMM convolution terms (stage conv-kxk), then the fp32/tf32 convolutions'
    (conv-fp32). On tensor-core families the tap term scales with the tile and overlaps the main
    loop (ConvCoefficients.kxk_tap_tile, kxk_tap_overlap: why there), fitted with the others, and
    the fp32/tf32 kernels get their own series tap term; elsewhere (the host CPU: one kxk probe)
    the series term of one size for all tiles."""
    if not f.c.conv.kxk_fixed_s:
        # a log-space simplex started at its limit of 1e-8 barely leaves it: start at 1 us
        f.c = f.evolve("conv", kxk_fixed_s=1e-6)
    params = [
        ("conv", "kxk_efficiency", 0.02, 1.05),  # a convolution main loop is no faster than a GEMM's
        ("conv", "kxk_wave_exposed", 1e-3, 1.0),
        ("conv", "kxk_tap_channels", 1.0, 2048.0),
        ("conv", "kxk_fixed_s", 1e-8, 3e-5),
        ("conv", "kxk_feed_scale", 0.25, 4.0),
    ]
    # the other valleys: all of a wave's overhead and little per kernel; none and a few us
    starts: list[tuple[float, ...]] = [(0.9, 1.0, 32.0, 1e-7, 1.0), (0.9, 0.05, 32.0, 5e-6, 2.0)]
    tiled = menu_for(f.c.family).tensor_cores and bool(kxk)
    if tiled:
        f.c = f.evolve("conv", kxk_tap_tile=float(TAP_TILE))
        params.append(("conv", "kxk_tap_overlap", 1.0, 8.0))
        starts = [(*s, 2.0) for s in starts]  # a gather half hidden: between series and max
    _fit_nd(f, "conv-kxk", kxk, params, starts=starts)
    if not tiled:
        f.fit_1d("conv-fp32", fp32, "conv", "fp32_efficiency")
        return
    if fp32 and not f.c.conv.fp32_tap_channels:  # off the simplex's lower limit: the order of C
        f.c = f.evolve("conv", fp32_tap_channels=64.0)
    _fit_nd(
        f,
        "conv-fp32",
        fp32,
        [("conv", "fp32_efficiency", 0.02, 1.5), ("conv", "fp32_tap_channels", 1.0, 2048.0)],
        iterations=60,
    )


DEPTHWISE_FIXED_POINTS = 3  # fewer: bandwidth and per-tap rate alone (the fixed time stays 0)


def _fit_depthwise(f: "Fitter", points) -> None:
    """The depthwise stencil kernel's bandwidth, per-tap rate and, with at least
    DEPTHWISE_FIXED_POINTS probes, its fixed time per kernel (ConvCoefficients.depthwise_*: why
    there). The probes of one filter size hold as many FLOPs per byte (a 3x3: 4.5 in bf16), so
    the fixed time against the bandwidth comes from two sizes of one filter, the per-tap rate
    from a larger filter; a second start begins with every probe bound by its taps (the other
    valley). One probe (the host CPU): the bandwidth alone."""
    if len(points) < 2:
        f.fit_1d("conv-depthwise", points, "conv", "depthwise_bandwidth_efficiency")
        return
    params = [
        ("conv", "depthwise_bandwidth_efficiency", 0.02, 1.5),
        ("conv", "depthwise_compute_efficiency", 0.005, 1.5),
    ]
    starts: list[tuple[float, ...]] = [(0.5, 0.3)]
    if len(points) >= DEPTHWISE_FIXED_POINTS:
        params.append(("conv", "depthwise_fixed_s", 1e-8, 2e-5))
        # off the simplex's lower limit (a log-space search started at 1e-8 barely leaves it)
        starts = [(0.5, 0.3, 2e-6), (1.0, 0.15, 4e-6)]
    _fit_nd(f, "conv-depthwise", points, params, iterations=150, starts=starts)


def fit_launch(chains: Sequence[tuple[int, float]], host_bound: float = 1.25) -> tuple[float, float]:
    """harness, launch from (kernels, seconds) pairs: a line through the two shortest chains,
    extended by each longer chain that lies within `host_bound` x of the line (then least
    squares over those); launch >= 0.3 us. Why not all chains: a long eager chain outruns the
    host (an H200 ran 1, 2, 4 tiny adds at 2.2 us each and 8 at 5 us each, the Python loop's
    pace), and the device's cost per kernel is what this stage measures; the host's comes from
    stage host. Why the test rather than a fixed count: in the final H200 calibration of
    2026-11-30 the chain of 4 went host-bound too (18.8 us against 3.6 and 5.9 us for 1 and 2),
    and a least-squares line through 1, 2, 4 made every kernel cost 5.3 us with no harness, which
    pushed the GEMM, convolution and attention efficiencies onto their fit limits."""
    chains = sorted(chains)
    n = np.array([k for k, _ in chains], dtype=float)
    t = np.array([s for _, s in chains], dtype=float)
    if n.size < 2 or np.ptp(n[:2]) <= 0:
        launch = max(float(t[0]) / 2, 0.3e-6)
        return max(float(t[0]) - launch, 0.0), launch
    slope, icpt = np.polyfit(n[:2], t[:2], 1)
    used = 2
    for k in range(2, n.size):
        if t[k] > host_bound * (icpt + max(slope, 0.3e-6) * n[k]):
            break  # host-bound from here on: longer chains only get worse
        used = k + 1
        slope, icpt = np.polyfit(n[:used], t[:used], 1)
    launch = max(float(slope), 0.3e-6)
    harness = max(float(np.median(t[:used] - n[:used] * launch)), 0.0)
    return harness, launch


def stream_efficiency(
    items: Sequence[tuple[float, int, float]], fixed: Callable[[int], float], dram: float
) -> float | None:
    """items: (bytes, kernels, seconds). Efficiency from the larger sizes, those of at least the
    median size (the small ones are dominated by the fixed cost, which stage launch already
    measured); every item of one size counts (several row lengths of one op at one size)."""
    if not items:
        return None
    middle = float(np.median([b for b, _, _ in items]))
    large = [item for item in items if item[0] >= middle]
    values = [b / (max(t - fixed(k), 1e-9) * dram) for b, k, t in large]
    return float(min(1.5, max(0.02, np.median(values))))


def fit_coefficients(
    base: EstimateCoefficients,
    target: Target,
    ceilings: Ceilings,
    results: Sequence[dict[str, Any]],
    points: Sequence[WorkloadPoint],
    basis: str,
    operating_point: str | None = None,
) -> tuple[EstimateCoefficients, dict[str, Any]]:
    """results: the raw probe results (dicts with name, group, op, elements, kernels, p50_s...);
    points: the workload-based ones, already predicted (bound)."""
    f = Fitter(base, target, ceilings, operating_point)
    # a point timed as a CUDA graph alone has no eager sample (probe_plan.timing_modes)
    ok = [r for r in results if r.get("p50_s") or r.get("graph_p50_s")]
    by_group = lambda g: [p for p in points if p.group == g]  # noqa: E731

    chains = [(int(r["kernels"]), float(r["p50_s"])) for r in ok if r["group"] == "launch" and r.get("p50_s")]
    if chains:
        harness, launch = fit_launch(chains)
        f.c = f.evolve("kernel", harness_s=harness, launch_s=launch)
        f.report["launch"] = {"points": len(chains), "fitted": {"kernel.harness_s": harness, "kernel.launch_s": launch}}
    else:
        f.report["launch"] = {"points": 0, "status": "not probed: base value kept"}
    graph_chains = [
        (int(r["kernels"]), float(r["graph_p50_s"])) for r in ok if r["group"] == "launch" and r.get("graph_p50_s")
    ]
    graphs = [r for r in ok if r["group"] == "graph" and r.get("p50_s")]
    if len(graph_chains) >= 2:
        # no host in a graph sample: every chain is on the line (least squares over all)
        n = np.array([k for k, _ in graph_chains], dtype=float)
        t = np.array([v for _, v in graph_chains], dtype=float)
        slope, icpt = np.polyfit(n, t, 1)
        per = max(float(slope), 0.1e-6)
        fixed = max(float(np.median(t - n * per)), 0.0)
        f.c = f.evolve("kernel", graph_launch_s=per, graph_harness_s=fixed, graph_timed=True)
        f.report["graph"] = {
            "points": len(graph_chains),
            "fitted": {"kernel.graph_launch_s": per, "kernel.graph_harness_s": fixed},
            "note": "the kernel chains timed as CUDA graphs, as the evaluation's device-time regime "
            "is: cost per kernel and per call without event pair or host",
        }
    elif graphs:
        r = graphs[0]
        per = max((float(r["p50_s"]) - f.c.kernel.harness_s) / max(1, int(r["kernels"])), 1e-8)
        f.c = f.evolve("kernel", graph_launch_s=per)
        f.report["graph"] = {
            "points": 1,
            "fitted": {"kernel.graph_launch_s": per},
            "note": "a CUDA graph of tiny kernels replayed: the device's cost per "
            "kernel without launch latency (the device-time regime)",
        }

    dram = f.device(f.c).dram_bytes_per_s
    k = f.c.kernel
    effs = dict(f.c.stream.bandwidth_efficiency)
    stream_report: dict[str, dict[str, Any]] = {}
    graph_timed = k.graph_timed
    sample = "graph_p50_s" if graph_timed else "p50_s"

    def fixed_cost(n: int) -> float:
        if graph_timed:
            return k.device_harness_s + n * k.device_launch_s
        return k.harness_s + n * k.launch_s

    for pattern in sorted({v[0] for v in STREAM_OPS.values()}):
        items = [
            (float(r["bytes"]), int(r.get("kernels") or 1), float(r[sample]))
            for r in ok
            if r["group"] == "stream" and STREAM_OPS[r["op"]][0] == pattern and r["op"] != "add_hot" and r.get(sample)
        ]
        eff = stream_efficiency(items, fixed_cost, dram)
        if eff is not None:
            effs[pattern] = eff
        if pattern in effs:  # a pattern nobody probed and the base lacks keeps its fallback
            stream_report[pattern] = {"points": len(items), "efficiency": effs[pattern]}
    f.c = f.evolve("stream", bandwidth_efficiency=effs)
    hot = []
    for r in ok:
        if r["group"] == "stream" and r["op"] == "add_hot" and r.get(sample):
            first = float(r["bytes"]) / 2  # the cold add; the hot one moves as many bytes
            second = float(r[sample]) - fixed_cost(2) - first / (dram * effs["elementwise"])
            hot.append(first / (max(second, 1e-9) * dram))
    if hot:
        resident = float(min(10.0, max(effs["elementwise"], np.median(hot))))
        f.c = f.evolve("stream", resident_efficiency=resident)
        stream_report["resident"] = {
            "points": len(hot),
            "efficiency": resident,
            "note": "an add reading what the previous kernel just wrote (cache-resident bytes)",
        }
    f.report["stream"] = stream_report

    gemm_points = by_group("gemm")
    if gemm_points:
        measured = [p.measured_s for p in gemm_points]
        modes = sorted({p.prediction.operators[0].math_mode for p in gemm_points})

        def make(x):
            eff = dict(f.c.gemm.mainloop_efficiency)
            for mode in modes:
                eff[mode] = float(min(1.5, math.exp(x[0])))
            return f.evolve(
                "gemm",
                mainloop_efficiency=eff,
                feed_bytes_per_clock=float(math.exp(x[1])),
                tile_overhead_s=float(math.exp(x[2])),
                stream_efficiency=float(min(1.5, math.exp(x[3]))),
                prologue_s=float(min(2e-5, math.exp(x[4]))),
                stream_fixed_s=float(min(3e-5, math.exp(x[5]))),
            )

        def loss(x):
            return _loss(f.times(gemm_points, make(x)), measured)

        g = f.c.gemm
        start = np.array(
            [
                math.log(max(g.mainloop_efficiency.get(modes[0], 1.0), 0.05)),
                math.log(g.feed_bytes_per_clock),
                math.log(max(g.tile_overhead_s, 1e-8)),
                math.log(g.stream_efficiency),
                math.log(max(g.prologue_s, 2e-7)),
                math.log(max(g.stream_fixed_s, 1e-6)),
            ]
        )
        best = _nelder_mead(loss, start, np.array([0.15, 0.5, 0.7, 0.15, 0.7, 0.7]), iterations=400)
        best = _nelder_mead(loss, best, np.array([0.05, 0.2, 0.3, 0.05, 0.3, 0.3]), iterations=400)
        f.c = make(best)
        f.note(
            "gemm",
            gemm_points,
            {f"gemm.mainloop_efficiency[{m}]": f.c.gemm.mainloop_efficiency[m] for m in modes}
            | {
                "gemm.feed_bytes_per_clock": f.c.gemm.feed_bytes_per_clock,
                "gemm.tile_overhead_s": f.c.gemm.tile_overhead_s,
                "gemm.stream_efficiency": f.c.gemm.stream_efficiency,
                "gemm.prologue_s": f.c.gemm.prologue_s,
                "gemm.stream_fixed_s": f.c.gemm.stream_fixed_s,
            },
        )
    else:
        f.note("gemm", [], {})

    mode_points = by_group("gemm-mode")
    for mode in sorted({p.prediction.operators[0].math_mode for p in mode_points}):
        chosen = [p for p in mode_points if p.prediction.operators[0].math_mode == mode]
        f.fit_1d(f"gemm-mode:{mode}", chosen, "gemm", "mainloop_efficiency", key=mode)
    _fit_stream_gemms(f, gemm_points)
    _fit_large_gemms(f, gemm_points, mode_points, ceilings)
    f.fit_1d("unaligned", by_group("unaligned"), "gemm", "unaligned_efficiency", lo=0.01)
    f.fit_1d("unaligned-partial", by_group("unaligned-partial"), "gemm", "partial_aligned_efficiency", lo=0.01)
    _fit_pointwise(f, by_group("conv-pointwise"))
    _fit_kxk(f, by_group("conv-kxk"), by_group("conv-fp32"))
    _fit_nd(
        f,
        "conv-unaligned",
        by_group("conv-unaligned"),
        [("conv", "unaligned_efficiency", 0.005, 1.5), ("conv", "direct_efficiency", 0.005, 1.5)],
    )
    _fit_depthwise(f, by_group("conv-depthwise"))
    _fit_nd(
        f,
        "attn-prefill",
        by_group("attn-prefill") + by_group("attn-causal"),
        [
            ("attention", "prefill_efficiency", 0.02, 1.5),
            ("attention", "causal_efficiency", 0.02, 1.5),
            ("attention", "block_overhead_s", 1e-8, 2e-5),
        ],
    )
    _fit_nd(
        f,
        "attn-decode",
        by_group("attn-decode"),
        [
            ("attention", "decode_bandwidth_efficiency", 0.02, 1.5),
            ("attention", "decode_cache_multiple", 0.2, 10.0),
            ("attention", "decode_fixed_s", 1e-8, 3e-5),
        ],
    )

    # last: the host's share is what the eager samples hold beyond the device time every stage
    # above fixed
    host_all = by_group("host")
    host = [p for p in host_all if getattr(p.params, "phase", "") == "decode"] or host_all
    if len(host) >= 2:
        d = f.device(f.c)
        pairs = []
        for p in host:
            est = estimate_workload(p.prediction, p.operators, p.kind, p.params, d, f.c)
            pairs.append((est.kernels, p.measured_s, est.device_s))
        (k1, t1, d1), (k2, t2, d2) = sorted(pairs)[0], sorted(pairs)[-1]
        if k2 > k1 and t2 > d2 and t1 > d1:  # host-bound: the device waited for Python
            per = max((t2 - t1) / (k2 - k1), 0.0)
            slack = max(f.c.kernel.harness_s + k1 * per - t1, 0.0)
            # refine both against the eager pipeline the estimate uses (closed form: a start)
            measured = [p.measured_s for p in host_all]

            # A lone eager kernel never waits for the host: the one-kernel launch chain ran in
            # `single` seconds in all, so its issue (per - slack) fitted in that time. Without
            # this floor three noisy host points can fit slack = 0 (the final H200 calibration
            # of 2026-11-30 did: its 2-layer prefill point ran 902 us against 443 us an hour
            # before), and every single-kernel probe then waits 20 us for the host: the GEMM
            # and convolution stages pushed their efficiencies onto the limits to make up.
            single = min((s for n, s in chains if n == 1), default=None)
            # what the lone kernel's chain held beyond its event pair and launch: the most it can
            # have waited for the host (an H200 sweep's chain, 2026-11-30: 3.49 us = 1.24 + 2.30, no wait;
            # a floor of `single` itself let the fit make every lone kernel wait 3.5 us)
            waited = max(0.0, single - f.c.kernel.harness_s - f.c.kernel.launch_s) if single is not None else None

            def host_pair(x):
                per = float(math.exp(x[0]))
                slack = float(math.exp(x[1]))
                return per, (max(slack, per - waited) if waited is not None else slack)

            def make(x):
                per, slack = host_pair(x)
                return f.evolve("kernel", host_per_kernel_s=per, host_slack_s=slack)

            x = _nelder_mead(
                lambda x: _loss(f.times(host_all, make(x)), measured),
                np.array([math.log(max(per, 1e-7)), math.log(max(slack, 1e-7))]),
                np.array([0.3, 0.7]),
                iterations=120,
            )
            per, slack = host_pair(x)
        else:
            per, slack = 0.0, 0.0
        f.c = f.evolve("kernel", host_per_kernel_s=per, host_slack_s=slack)
        f.note("host", host_all, {"kernel.host_per_kernel_s": per, "kernel.host_slack_s": slack})
    else:
        f.note("host", [], {})

    _fit_train(f, by_group("train-host"))
    _fit_warm(f, ok, points)

    sheet = datasheet_ceilings(target, operating_point)
    peak = {
        m: min(1.5, float(ceilings.compute[m]) / float(sheet.compute[m]))
        for m in ceilings.compute
        if m in sheet.compute and ceilings.origin_of(m) == "calibrated"
    }
    dram_fraction = min(1.5, float(ceilings.dram_bytes_per_s) / float(sheet.dram_bytes_per_s))
    point = target.operating_point(operating_point)
    all_points = list(points)
    summary = {}
    if all_points:
        apes = _ape(f.times(all_points, f.c), [p.measured_s for p in all_points])
        summary = {
            "workload_points": len(all_points),
            "median_ape": float(np.median(apes)),
            "p90_ape": float(np.percentile(apes, 90)),
        }
    fitted = attrs.evolve(
        f.c,
        basis_kind="calibrated",
        basis=basis,
        peak_fraction=peak,
        dram_fraction=dram_fraction,
        source_clock_mhz=point.clock_mhz,
        fit={"stages": f.report, "summary": summary},
    )
    return fitted, {"stages": f.report, "summary": summary}
