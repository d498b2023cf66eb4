"""From a bound prediction to estimates: every operator of every workload gets a realistic
mapping at achieved rates (operators.py), the workload adds the timing harness and, for eager
execution, the host overhead of launching its kernels from Python."""

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from tensorforge.estimate import power as power_limit
from tensorforge.errors import TensorForgeError
from tensorforge.estimate.basis import achievable
from tensorforge.estimate.coefficients import EstimateCoefficients
from tensorforge.estimate.implementation import DEFAULT, declared_table
from tensorforge.estimate.operators import ESTIMATORS, Device, estimate_unknown
from tensorforge.estimate.results import LABEL, OperatorEstimate, WorkloadEstimate, add_terms
from tensorforge.estimate.train_host import eager_train_time, training_words
from tensorforge.estimate.warm import warm_class, window_saving
from tensorforge.hardware.target import Ceilings, Target
from tensorforge.results.prediction import Prediction, WorkloadPrediction
from tensorforge.workloads.training import Training


def device_for(
    target: Target, ceilings: Ceilings, coefficients: EstimateCoefficients, operating_point: str | None = None
) -> Device:
    point = target.operating_point(operating_point)
    compute, dram = achievable(ceilings, coefficients)
    # a board whose power limit cannot feed a mode's rate (a 72 W L4) runs it slower than its
    # clock allows once the limit acts: the limit over the declared energy per FLOP
    # (estimate/power.py says when)
    capped = power_limit.capped_rates(compute, getattr(target, "power", None))
    cache = target.cache_level()
    return Device(
        family=coefficients.family,
        units=target.pe_array.units,
        clock_hz=point.clock_mhz * 1e6,
        cache_bytes=float(cache.capacity_bytes if cache else 0),
        compute=compute,
        dram_bytes_per_s=dram,
        devices=getattr(target, "devices", 1),
        collectives=dict(ceilings.collectives or {}),
        capped=capped,
        limit_acts_s=getattr(getattr(target, "power", None), "limit_acts_s", None),
    )


def estimate_workload(
    prediction: WorkloadPrediction,
    operators: Sequence,
    kind,
    params,
    device: Device,
    coefficients: EstimateCoefficients,
    regime: str = "burst",
) -> WorkloadEstimate:
    if len(operators) != len(prediction.operators):
        raise TensorForgeError(f"workload {prediction.name!r}: operators changed between bound and estimate")
    results = []
    warm_results = []
    calls = 0
    declared = declared_table(kind, params)
    capped = power_limit.capped_device(device)
    for op, bound_op in zip(operators, prediction.operators):
        impl = declared.get(op.name, DEFAULT)
        estimator: Any = ESTIMATORS.get(type(op.problem), estimate_unknown)
        per_bound = bound_op.latency_s / op.count
        compulsory = bound_op.compulsory_bytes / op.count
        resident = 1.0 - bound_op.mapping.traffic.get("dram", compulsory) / compulsory if compulsory else 0.0
        total, terms, kernels, mapping, notes = estimator(
            op.problem, impl, per_bound, device, coefficients, resident=resident
        )
        # the same operator in a call with no L2 flush before it: what fits in L2 is there
        warm_resident = max(resident, warm_residency(compulsory, device.cache_bytes))
        warm_total = estimator(op.problem, impl, per_bound, device, coefficients, resident=warm_resident, warm=True)[0]
        if capped is not None:
            # the same operator at the rate the board's power limit allows, as far as its call
            # is long enough for the limit to act (estimate/power.py)
            capped_total = estimator(op.problem, impl, per_bound, capped, coefficients, resident=resident)[0]
            slowed = power_limit.settle(total, capped_total, regime, device.limit_acts_s)
            terms = {**terms, "power_limit": terms.get("power_limit", 0.0) + slowed - total}
            total = slowed
            capped_warm = estimator(
                op.problem, impl, per_bound, capped, coefficients, resident=warm_resident, warm=True
            )[0]
            warm_total = power_limit.settle(warm_total, capped_warm, regime, device.limit_acts_s)
        # framework calls: the implementation's own kernels and layout copies, each launched from
        # Python; kernels the library adds inside one call (a split-K reduction, a split-KV
        # combine, cuDNN's memsets and padding copies) cost the host no call of their own
        calls += op.count * min(kernels, max(1, impl.kernels) + impl.layout_copy_kernels)
        results.append(
            OperatorEstimate(
                name=op.name,
                count=op.count,
                kernels=kernels,
                mapping=mapping,
                bound_s=bound_op.latency_s,
                estimate_s=total * op.count,
                terms={k: v * op.count for k, v in sorted(terms.items())},
                implementation="declared by the workload plugin"
                if impl.declared
                else f"default for {type(op.problem).__name__}",
                notes=notes,
            )
        )
        warm_results.append(attrs.evolve(results[-1], estimate_s=min(total, warm_total) * op.count))
    kernels = sum(r.kernels * r.count for r in results)
    k = coefficients.kernel
    classes = [warm_class(op.problem, b.bottleneck) for op, b in zip(operators, prediction.operators)]
    # the operators carry eager launch costs; back to back on the device (a CUDA graph) each
    # kernel costs less, and the difference belongs to eager execution
    # The device-time regime (a CUDA-graph sample) holds no event pair: its fixed cost per call
    # is the graph-timed chains' intercept where the calibration graph-timed them.
    eager_launches = kernels * k.launch_s
    device_launches = kernels * k.device_launch_s
    body = sum(r.estimate_s for r in results) - eager_launches
    device_s = body + device_launches + k.device_harness_s
    training = Training.of(params)

    def pipeline(ops: Sequence[OperatorEstimate], slack: float) -> float:
        # a training step's autograd and optimizer machinery where the train-host probes measured
        # it (train_host.py); without them every kernel is charged as a forward one (the basis says)
        if training is not None and coefficients.training.measured:
            return eager_train_time(ops, declared, training, k, coefficients.training, slack)
        return eager_time(ops, k.host_per_kernel_s, slack)

    # never below the device time: an eager call runs the same kernels and adds host and events
    eager_s = max(device_s, body + eager_launches + k.harness_s, pipeline(results, k.host_slack_s) + k.harness_s)
    # one call with no flush before it (the eager-warm protocol): its operators with what fits in
    # L2 resident (warm_results), the device waiting for the host's whole dispatch (nothing for
    # the host to run ahead of), and what a window's call saves beyond that (warm.py)
    saving = window_saving(classes, coefficients.warm_saving_s, coefficients.warm_saving_share, device_s)
    warm_body = sum(r.estimate_s for r in warm_results) - eager_launches
    eager_warm_s = max(
        prediction.latency_s,
        max(warm_body + eager_launches, pipeline(warm_results, 0.0)) + k.harness_s - saving,
    )
    terms = add_terms(
        [r.terms for r in results]
        + [
            {
                "timing_harness": k.device_harness_s,
                "kernel_launches": device_launches - eager_launches,
                "host_overhead": eager_s - device_s,
            }
        ]
    )
    return WorkloadEstimate(
        label=LABEL,
        bound_s=prediction.latency_s,
        device_s=device_s,
        eager_s=eager_s,
        kernels=kernels,
        terms=terms,
        operators=tuple(results),
        warm_saving_s=saving,
        calls=calls,
        eager_warm_s=eager_warm_s,
    )


# operands up to this share of the shared cache are all resident in a call without a flush; from
# it to the whole cache the resident share falls to nothing (a sweep over more than the cache
# evicts its own lines before they are read again). Why not the whole cache: an A100's L2 is two
# partitions that each hold what their SMs read (NVIDIA's A100 whitepaper), and the
# replacement is not LRU over the whole capacity.
WARM_FULL_SHARE = 0.5


def warm_residency(operand_bytes: float, cache_bytes: float) -> float:
    """The share of an operator's bytes in the shared cache when a call runs again on the same
    inputs without a flush."""
    if cache_bytes <= 0 or operand_bytes <= 0:
        return 0.0
    full = WARM_FULL_SHARE * cache_bytes
    if operand_bytes <= full:
        return 1.0
    return max(0.0, (cache_bytes - operand_bytes) / (cache_bytes - full))


def launch_order(results: Sequence[OperatorEstimate]):
    """(kernel count, seconds per kernel) in execution order: operators repeated `count` times
    (a transformer's per-layer operators) run layer by layer, the others after them."""
    repeats = max((r.count for r in results), default=1)
    per_layer = [r for r in results if r.count == repeats]
    once = [r for r in results if r.count != repeats]
    for _ in range(repeats):
        for r in per_layer:
            yield r.kernels, r.estimate_s / r.count / max(1, r.kernels)
    for r in once:
        for _ in range(r.count):
            yield r.kernels, r.estimate_s / r.count / max(1, r.kernels)


def eager_time(results: Sequence[OperatorEstimate], host_per_kernel: float, slack: float) -> float:
    """Eager PyTorch as a two-stage pipeline: the host issues kernel i at (i+1) * host cost
    (minus the head start the timing harness's flush gives it), the device runs it once issued
    and once the previous one finished. Long kernels hide the host; runs of short ones expose it."""
    host, device = -slack, 0.0
    for count, duration in launch_order(results):
        for _ in range(count):
            host += host_per_kernel
            device = max(device, host) + duration
    return device


def estimate_prediction(
    prediction: Prediction,
    workloads: Iterable[tuple],
    target: Target,
    coefficients: EstimateCoefficients,
    regime: str = "burst",
) -> Prediction:
    """The same prediction with an estimate beside every workload's bound."""
    device = device_for(target, prediction.ceilings, coefficients, prediction.operating_point)
    out = []
    trains = False
    for (workload, kind), wp in zip(workloads, prediction.workloads):
        operators = kind.operators(workload.params)
        est = estimate_workload(wp, operators, kind, workload.params, device, coefficients, regime)
        out.append(attrs.evolve(wp, estimate=est))
        trains = trains or Training.of(workload.params) is not None
    return attrs.evolve(
        prediction,
        workloads=tuple(out),
        estimate_basis=coefficients.basis
        + power_words(target, device)
        + (training_words(coefficients) if trains else ""),
        estimate_basis_kind=coefficients.basis_kind,
        estimate_regime=regime,
    )


def power_words(target: Target, device: Device) -> str:
    """'; power-capped at 72 W on calls over 1 ms: fp32 10.9 TFLOP/s' for the modes the board's
    limit slows, else ''."""
    power = getattr(target, "power", None)
    if power is None or not power.joules_per_flop:
        return ""
    capped = [f"{mode} {rate / 1e12:.3g} TFLOP/s" for mode, rate in sorted(device.capped.items())]
    if not capped:
        return ""
    return (
        f"; power-capped at {power.limit_w:g} W on calls over {(power.limit_acts_s or power_limit.CAP_FROM_S) * 1e3:g} ms: "
        f"{', '.join(capped)}"
    )
