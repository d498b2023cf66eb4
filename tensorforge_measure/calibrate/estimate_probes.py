"""CALIBRATED terms of the estimate: runs the probe plan (tensorforge/estimate/probe_plan.py)
on a session, each item timed by the session exactly as a workload is (same flush, events,
duty cycle), and returns the raw points; the Core fits the coefficients from them
(tensorforge/estimate/fit.py) once the device's target is known.

Workload-shaped items (GEMMs, convolutions, attention, tiny transformer blocks) run through the
same builders the workloads use, so the probe times the implementation the estimate predicts.
Streaming items (add, rms_norm, strided copies, cat) and kernel chains are built here. One
failing item is recorded with its reason and the others go on.
"""

import functools
import time
from collections.abc import Callable
from typing import Any

from tensorforge.api import one_line
from tensorforge_measure.api import CalibrationProbe, ProbeResult, Unavailable
from tensorforge_measure.calibrate.sweep_rates import sweep_gemm_rates

# The plan and each item's eager budget are the backend's (MeasurementBackend.probe_plan,
# probe_item_budget_s: 0.1 s on torch-cuda, 0.2 s on torch-cpu). On a session that captures
# device graphs (Session.graph_replays) items are timed as CUDA graphs, exactly as a workload's device-time regime is
# (cuda_modes: [flush -> fn] unrolled in a graph minus the flushes alone): the estimate's device
# coefficients are fitted to those samples, the host's to the eager ones, and each item is timed
# only in the modes its fit reads (probe_plan.timing_modes). Why the budgets: the closing H200
# session of 2026-11-30 spent 56.8 s here, every item eager (0.2 s) and graph (0.1 s) timed; a
# graph sample averages up to 64 unrolled calls, so 0.04 s (4-5 samples at 50% duty) gives a
# stable p50.
GRAPH_BUDGET_S = 0.04
# the warm sample (`_warm`): replays of one graph of unrolled calls, each ~GRAPH_TARGET_S
WARM_REPLAYS = 5


def _stream_fn(torch, item, device):
    dtype = getattr(torch, {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[item.dtype])
    rows = max(1, item.elements // item.width)
    shape = (rows, item.width)
    rand = lambda *s: torch.randn(*s, device=device, dtype=dtype)  # noqa: E731 (never zeros)
    if item.op == "add":
        a, b, out = rand(*shape), rand(*shape), torch.empty(shape, device=device, dtype=dtype)
        return lambda: torch.add(a, b, out=out)
    if item.op == "rms_norm":
        x, w = rand(*shape), torch.ones(item.width, device=device, dtype=dtype)
        return lambda: torch.nn.functional.rms_norm(x, (item.width,), w)
    if item.op == "slice_copy":
        # a KV-cache append: each of `rows` rows writes `width` elements into a 2x longer row
        cache = rand(rows, 2 * item.width)
        new = rand(rows, item.width)
        return lambda: cache[:, item.width :].copy_(new)
    if item.op == "transpose_copy":
        heads = 32 if item.width % 32 == 0 else 1
        x = rand(rows, heads, item.width // heads)
        return lambda: x.transpose(0, 1).contiguous()
    if item.op == "layer_norm":
        x, w = rand(*shape), torch.ones(item.width, device=device, dtype=dtype)
        return lambda: torch.nn.functional.layer_norm(x, (item.width,), w)
    if item.op == "gelu":
        x = rand(*shape)
        return lambda: torch.nn.functional.gelu(x, approximate="tanh")
    if item.op == "row_softmax":
        x = rand(*shape)
        return lambda: torch.softmax(x, dim=-1)
    if item.op == "add_hot":
        a, b = rand(*shape), rand(*shape)
        c, d = torch.empty_like(a), torch.empty_like(a)
        return lambda: (torch.add(a, b, out=c), torch.add(c, b, out=d))
    if item.op == "cat":
        a, b = rand(rows, item.width // 2), rand(rows, item.width // 2)
        return lambda: torch.cat([a, b], -1)
    raise ValueError(f"unknown stream op {item.op!r}")


def _chain_fn(torch, item, device):
    x = torch.randn(item.elements, device=device)

    def chain():
        for _ in range(item.kernels):
            x.add_(1.0)

    return chain


def _graph_fn(session, torch, item, device):
    graph_of = getattr(session, "graph_of", None)
    if not callable(graph_of):
        raise Unavailable("this session captures no device graphs")
    x = torch.randn(item.elements, device=device)

    def warm():
        for _ in range(3):  # warm-up before capture, as graph capture requires
            x.add_(1.0)

    def body():
        for _ in range(item.kernels):
            x.add_(1.0)

    return graph_of(warm, body)


def _timed(session, fn, budget: float, graph: bool, eager: bool = True) -> dict[str, Any]:
    """The eager sample (p50_s ...) and, on a session with measurement phases and graph=True,
    the CUDA-graph sample of the same callable (graph_p50_s ...), or why there is none.
    eager=False: the graph sample alone (the eager one still where no graph could be captured)."""
    if not (graph and hasattr(session, "phases")):
        return _record(None, session.time(fn, budget))
    from tensorforge_measure.measure.phases import PhasePlan

    plan = PhasePlan(
        budget_s=budget, graph_budget_s=GRAPH_BUDGET_S, graph=True, eager=eager, trace=False, sustained=False
    )
    with session.phases(fn, plan) as phases:
        result = phases.burst()
    row: dict[str, Any] = {}
    for timing in result.timings:
        if timing.mode == "eager":
            row.update(_record(None, timing.timed))
        elif timing.mode == "graph":
            row.update({f"graph_{k}": v for k, v in _record(None, timing.timed).items()})
    if result.notes:
        row["graph_note"] = "; ".join(result.notes)
    return row


def _warm(session, fn, call_s: float) -> dict[str, Any]:
    """The item as an energy window runs it: calls back to back with no L2 flush between them,
    as one device graph of K unrolled calls (session.graph_replays, the energy window's own
    graph), replayed WARM_REPLAYS times back to back after one untimed replay; sample = replay
    time / K. Why: the flushed graph sample charges every call the L2 flush's aftermath (cold
    misses, the flush's dirty lines written back during the call); an energy window has none,
    and on an H200 (2026-12-01) its calls ran 0.7 us (the 64^3 GEMM) to 6 us (GEMVs streaming
    >100 MB) faster than the flushed graph p50. The estimate's window time is fitted from the
    pairs (tensorforge.estimate.fit, the warm stage)."""
    from tensorforge_measure.energy.execution import graph_calls

    calls = graph_calls(call_s)
    with session.graph_replays(fn, calls) as graph:
        per_call = sorted(t / calls for t in session.replay_times(graph.replay, WARM_REPLAYS))
    return {"warm_p50_s": per_call[len(per_call) // 2], "warm_calls": calls}


def _with_warm(session, row: dict[str, Any], fn, graph: bool) -> dict[str, Any]:
    """The row with the warm sample where the plan asks for one (probe_plan.warm_timed)."""
    from tensorforge.api import warm_timed

    if not (graph and warm_timed(str(row["group"]), row.get("graph_p50_s"))):
        return row
    try:
        row.update(_warm(session, fn, float(row["graph_p50_s"])))
    except Exception as exc:  # the flushed sample stands; the warm fit goes without this point
        row["warm_error"] = one_line(exc)
    return row


def _record(item, timed) -> dict[str, Any]:
    s = timed.stats
    return {
        "p50_s": float(s.p50),
        "p10_s": float(s.p10),
        "min_s": float(s.min),
        "n": int(s.n),
        "rel_iqr": float(s.rel_iqr),
        "stop_reason": timed.stop_reason,
    }


class EstimateTermsProbe(CalibrationProbe):
    """The probe sweeps the estimate's coefficients are fitted from (see probe_plan.py)."""

    name = "estimate-terms"
    order = 100  # after the ceiling probes: its sweep heats the device (see api.CalibrationProbe)
    repeatable = False  # a long sweep: judged for contention, never run twice

    def __init__(self, backend: str, name: str = "estimate-terms", regime: str = "burst"):
        # The regime is the one session.time times in: burst on a GPU (so the sweep runs before
        # the sustained probes, which leave the device hot), 'single' on a one-regime device. The
        # coefficients fitted from it are that regime's (stored so in Calibration.estimate).
        self.backend, self.name, self.regime = backend, name, regime

    def run(self, session) -> ProbeResult:
        import torch

        from tensorforge.api import STREAM_OPS, PluginHost, resolve_spec, timing_modes
        from tensorforge_measure.host import OpsHost

        start = time.perf_counter()
        core, ops = PluginHost(), OpsHost()
        # what the backend declares, never its name: its plan, its budget, its graphs
        declared = ops.backend(self.backend)
        plan = tuple(declared.probe_plan)
        if not plan:
            raise Unavailable(f"backend {self.backend!r} declares no probe plan for the estimate")
        budget = declared.probe_item_budget_s
        graph = all(callable(getattr(session, name, None)) for name in ("graph_replays", "replay_times"))
        device = session.device if session.device is not None else torch.device("cpu")
        points: list[dict[str, Any]] = []
        for item in plan:
            item_start = time.perf_counter()
            row: dict[str, Any] = {
                "name": item.name,
                "group": item.group,
                "spec": item.spec,
                "op": item.op,
                "elements": item.elements,
                "width": item.width,
                "kernels": item.kernels,
                "dtype": item.dtype,
            }
            modes = timing_modes(item.group)
            try:
                if item.spec:
                    workload, kind = resolve_spec(core, item.spec)
                    builder = ops.builder(kind.name, self.backend)
                    if builder is None:
                        raise Unavailable(f"no builder for {kind.name} on {self.backend}")
                    mode = getattr(workload.params, "math_mode", None) or "fp32"
                    with session.prepared(builder, workload.params, mode) as prepared:
                        row.update(_timed(session, prepared.fn, budget, graph and "graph" in modes, "eager" in modes))
                        _with_warm(session, row, prepared.fn, graph)
                else:
                    maker: Callable = {"add_chain": _chain_fn}.get(item.op, _stream_fn)
                    if item.group == "graph":
                        maker = functools.partial(_graph_fn, session)
                    if item.op in STREAM_OPS:
                        row["bytes"] = item.stream_bytes
                    with torch.inference_mode():
                        fn = maker(torch, item, device)
                        fn()
                    row.update(_timed(session, fn, budget, graph and "graph" in modes, "eager" in modes))
                    _with_warm(session, row, fn, graph)
                    del fn
            except Unavailable as exc:
                row["error"] = f"unavailable: {exc}"
            except Exception as exc:  # an OOM or unsupported shape costs one point, not the sweep
                row["error"] = one_line(exc)
            # the item's whole wall time (preparation, first call, timing): where a sweep's time goes
            row["wall_s"] = round(time.perf_counter() - item_start, 4)
            points.append(row)
        failed = sum(1 for p in points if "error" in p)
        method = (
            f"{len(points)} probe items of tensorforge.estimate.probe_plan for {self.backend} "
            f"({failed} failed), each timed by the session as a workload is"
            + (
                f": as CUDA graphs as a workload's device-time regime is (graph_p50_s, budget "
                f"{GRAPH_BUDGET_S} s), and eagerly (p50_s, session.time, budget {budget} s) only the "
                "groups whose fit reads the eager sample (launch chains, host blocks)"
                if graph
                else f" (session.time, budget {budget} s per item)"
            )
            + "; p50 per item; workload-shaped items through the "
            "workloads' own builders; coefficients are fitted from these points by "
            "tensorforge.estimate.fit once the device's target is known"
        )
        # the GEMM points' fastest rates per math mode: the calibration's compute ceiling of a
        # mode is the highest any probe observed (store.run_probes takes the maximum)
        rates = sweep_gemm_rates(points)
        method += (
            "; compute: per math mode the highest nominal GEMM rate of its GEMM points (2*m*n*k*batch / fastest sample)"
        )
        return ProbeResult(
            name=self.name,
            method=method,
            regime=self.regime,
            compute={mode: rate for mode, (rate, _, _) in rates.items()},
            details={
                "points": points,
                "gemm_rates": {
                    mode: {"flops_per_s": rate, "point": name, "sample": which}
                    for mode, (rate, name, which) in rates.items()
                },
            },
            duration_s=time.perf_counter() - start,
        )
