"""From workloads to lower bounds: residency, bounded mapping exploration, aggregation.

WORKLOAD -> operators (FLOPs + tensors) -> MAPPING + TILING per operator -> CEILINGS ->
max(compute, memory) per operator -> sum over operators -> PREDICTED LATENCY (lower bound).
"""

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from tensorforge.bound.mappings.base import (
    EXHAUSTIVE,
    MAX_CANDIDATES,
    RELAXATION,
    SEARCH_KINDS,
    UNSTATED,
    Machine,
    MappingChoice,
    MappingStrategy,
    Residency,
)
from tensorforge.bound.mappings.search import numpy_from_now_on
from tensorforge.bound.warm import CACHE_STATES, warm_relaxation
from tensorforge.errors import TensorForgeError
from tensorforge.hardware.target import (
    Ceilings,
    Target,
    check_ceilings,
    datasheet_ceilings,
    merge_ceilings,
    vector_scale,
)
from tensorforge.host.calls import explore_with, footprint_of, operators_of
from tensorforge.results.prediction import LABEL, OperatorPrediction, Prediction, WorkloadPrediction
from tensorforge.workloads.kinds import Workload, WorkloadKind
from tensorforge.workloads.limits import check_problem, check_units


def machine_for(target: Target, ceilings: Ceilings, max_candidates: int = MAX_CANDIDATES) -> Machine:
    check_units(target.name, target.pe_array.units)
    if max_candidates < 1:
        raise TensorForgeError(f"max_candidates must be >= 1, got {max_candidates}")
    tile = target.tile_level()
    cache = target.cache_level()
    return Machine(
        units=target.pe_array.units,
        unit_sram_bytes=tile.capacity_bytes,
        unit_sram_bytes_per_s=ceilings.sram_bytes_per_s.get(tile.name),
        cache_bytes=cache.capacity_bytes if cache else 0,
        cache_bytes_per_s=ceilings.sram_bytes_per_s.get(cache.name) if cache else None,
        dram_bytes_per_s=ceilings.dram_bytes_per_s,
        compute=dict(ceilings.compute),
        max_candidates=max_candidates,
        vector=dict(ceilings.vector),
        special=dict(ceilings.special),
        devices=target.devices,
        interconnect=target.interconnect,
        collectives=dict(ceilings.collectives),
    )


def workload_residency(operators, cache_bytes: int) -> Residency:
    """Tensors both produced and consumed inside the workload, small enough for the shared
    cache, never go to DRAM (a lower bound: a real schedule may evict them)."""
    written = {t.name: t.nbytes for op in operators for t in op.problem.writes()}
    read = {t.name for op in operators for t in op.problem.reads()}
    on_chip = frozenset(n for n, size in written.items() if n in read and size <= cache_bytes)
    return Residency(resident=on_chip, no_writeback=on_chip)


def operator_residency(problem, shared: Residency, reread: frozenset = frozenset()) -> Residency:
    """The part of the workload's residency that concerns one operator's tensors; `reread`:
    tensors an earlier operator already brought in (rereads())."""
    reads = frozenset(t.name for t in problem.reads())
    return Residency(
        resident=reads & (shared.resident | reread),
        no_writeback=frozenset(t.name for t in problem.writes()) & shared.no_writeback,
    )


def rereads(operators, cache_bytes: int) -> list[frozenset]:
    """Per operator, the workload inputs (tensors no operator writes) it reads that an earlier
    operator already read, small enough for the shared cache: that earlier read may have left
    them there (a lower bound, as workload_residency). Why: a training step reads its input and
    weight again in the backward (dA = dC @ B^T, dB = A^T @ dC) right after the forward, and a
    bound charging DRAM for both reads could be beaten by a measurement."""
    written = {t.name for op in operators for t in op.problem.writes()}
    seen: set[str] = set()
    out = []
    for op in operators:
        names = {t.name for t in op.problem.reads() if t.name not in written and t.nbytes <= cache_bytes}
        out.append(frozenset(names & seen))
        seen |= names
    return out


def _boundary_bytes(operators, written: set, read: set) -> tuple[float, float]:
    """Compulsory traffic of the whole workload: tensors it reads but never produces (inputs,
    weights, caches) and tensors it produces but never reads (final outputs), each once per
    instance. An operator with `count` n runs n times on n instances of its tensors (a
    transformer's layers each have their own weights and KV cache), so a boundary tensor
    counts as many times as the most-repeated operator that touches it."""
    sizes: dict[str, int] = {}
    instances: dict[str, int] = {}
    for op in operators:
        for t in op.problem.reads() + op.problem.writes():
            sizes[t.name] = t.nbytes
            instances[t.name] = max(instances.get(t.name, 0), op.count)
    external = sum(size * instances[name] for name, size in sizes.items() if name not in written)
    outputs = sum(size * instances[name] for name, size in sizes.items() if name in written and name not in read)
    return float(external), float(outputs)


def _explore(strategy: MappingStrategy, problem, machine: Machine, residency: Residency) -> MappingChoice:
    """The strategy's choice; warm, from a strategy that does not model warmth, the generic
    warm relaxation of its cold choice (warm.py)."""
    choice = explore_with(strategy, problem, machine, residency)
    if residency.warm and not getattr(strategy, "models_warm", False):
        return warm_relaxation(choice, machine)
    return choice


def _choose(problem, strategies: Sequence[MappingStrategy], machine: Machine, residency: Residency) -> MappingChoice:
    usable = [s for s in strategies if isinstance(problem, s.problem_types)]
    if not usable:
        raise TensorForgeError(f"no installed mapping strategy handles {type(problem).__name__}")
    choices = [_explore(s, problem, machine, residency) for s in usable]
    for s, c in zip(usable, choices):
        if c.search not in SEARCH_KINDS:
            raise TensorForgeError(
                f"mapping strategy {s.name!r} returned search={c.search!r}; known: {', '.join(SEARCH_KINDS)}"
            )
    # The minimum over strategies is the minimum over the union of their spaces: exact when
    # the winner's is, and still a lower bound when a losing strategy's bound was relaxed
    # (its relaxation is <= all its mappings, and the winner is lower still).
    best = min(choices, key=lambda c: (c.latency_s, c.strategy))
    return attrs.evolve(best, candidates=sum(c.candidates for c in choices))


def search_of(choices: Iterable[str]) -> str:
    """One word for several operators: any relaxed bound makes the whole a relaxation."""
    kinds = set(choices)
    for kind in (RELAXATION, UNSTATED):
        if kind in kinds:
            return kind
    return EXHAUSTIVE


def _problem_dict(problem) -> dict:
    return attrs.asdict(problem, recurse=True)


def predict_workload(
    workload: Workload,
    kind: WorkloadKind,
    target: Target,
    ceilings: Ceilings,
    strategies: Sequence[MappingStrategy],
    machine: Machine,
    memo: dict | None = None,
) -> WorkloadPrediction:
    memo = {} if memo is None else memo
    operators = operators_of(kind, workload.params, workload.name)
    if not operators:
        raise TensorForgeError(f"workload {workload.name!r} decomposes into no operators")
    residency = workload_residency(operators, machine.cache_bytes)
    reread = rereads(operators, machine.cache_bytes)
    written = {t.name for op in operators for t in op.problem.writes()}
    read = {t.name for op in operators for t in op.problem.reads()}
    results = []
    for op, again in zip(operators, reread):
        check_problem(f"workload {workload.name!r}, operator {op.name!r}", op.problem)
        on_vector = getattr(op.problem, "on_vector_units", False)
        if not on_vector and op.problem.math_mode not in ceilings.compute:  # else a KeyError deep in a mapping
            raise TensorForgeError(
                f"workload {workload.name!r}: target {target.name!r} declares no "
                f"{op.problem.math_mode} rate (operator {op.name!r}); known modes: "
                f"{', '.join(sorted(ceilings.compute))}"
            )
        relevant = operator_residency(op.problem, residency, again)
        # the cold bound, then the warm one (the same residency, warm: a call repeated unflushed);
        # without a shared cache they are the same
        warm = attrs.evolve(relevant, warm=True) if machine.cache_bytes else relevant
        for state in (relevant, warm):
            key = (op.problem, state)
            if key not in memo:
                try:
                    memo[key] = _choose(op.problem, strategies, machine, state)
                except TensorForgeError as exc:  # e.g. a collective over more devices than the target has
                    raise TensorForgeError(f"workload {workload.name!r}, operator {op.name!r}: {exc}") from None
        choice, warm_choice = memo[(op.problem, relevant)], memo[(op.problem, warm)]
        mode = op.problem.math_mode
        tensors = op.problem.reads() + op.problem.writes()
        results.append(
            OperatorPrediction(
                name=op.name,
                count=op.count,
                problem_type=type(op.problem).__name__,
                problem=_problem_dict(op.problem),
                math_mode=mode,
                ceiling_origin=choice.origin
                or (ceilings.origin_of_vector() if on_vector else ceilings.origin_of(mode)),
                flops=float(op.problem.flops) * op.count,
                compulsory_bytes=float(sum(t.nbytes for t in tensors)) * op.count,
                mapping=choice,
                compute_s=choice.compute_s * op.count,
                memory_s=choice.memory_s * op.count,
                latency_s=choice.latency_s * op.count,
                bottleneck=choice.bottleneck,
                warm_mapping=warm_choice,
                warm_memory_s=warm_choice.memory_s * op.count,
                warm_latency_s=warm_choice.latency_s * op.count,
            )
        )
    external, outputs = _boundary_bytes(operators, written, read)
    latency = sum(r.latency_s for r in results)
    footprint = footprint_of(kind, workload.params, workload.name)
    return WorkloadPrediction(
        name=workload.name,
        kind=workload.kind,
        spec=workload.spec,
        flops=sum(r.flops for r in results),
        compulsory_bytes=float(external + outputs),
        footprint_bytes=int(footprint),
        fits_in_memory=footprint <= target.dram_capacity_bytes,
        compute_s=sum(r.compute_s for r in results),
        memory_s=sum(r.memory_s for r in results),
        latency_s=latency,
        warm_latency_s=workload_warm(results, latency, machine),
        bottleneck=workload_bottleneck(results),
        candidates=sum(r.mapping.candidates for r in results),
        search=search_of(r.mapping.search for r in results),
        operators=tuple(results),
    )


def workload_bottleneck(results: Sequence[OperatorPrediction]) -> str:
    """The larger of the workload's own two columns, compute and memory (each its operators'
    summed; compute wins a tie, as an operator's does). The memory column holds DRAM and link
    time alike, so a memory-side bottleneck is named for the operators' memory-side kind
    ('memory', 'interconnect') that holds most of that column.

    Why not the operators' bottleneck that holds most of the bound, as before: it could name
    the smaller column (a tensor-parallel layer read compute 7.9 ms, memory 12.1 ms,
    bottleneck compute), and a reader checks the label against the two figures beside it."""
    compute = sum(r.compute_s for r in results)
    memory = sum(r.memory_s for r in results)
    if compute >= memory:
        return "compute"
    shares: dict[str, float] = {}
    for r in results:
        # an operator's memory-side kind is its own bottleneck where that is not compute (a
        # link-bound collective: 'interconnect'); a compute-bound one's memory column counts as memory
        side = r.bottleneck if r.bottleneck != "compute" else "memory"
        shares[side] = shares.get(side, 0.0) + r.memory_s
    return max(sorted(shares), key=lambda b: shares[b])


def workload_warm(results: Sequence[OperatorPrediction], cold_s: float, machine: Machine) -> float:
    """The workload's warm bound: the larger of its operators' warm bounds summed and the cold
    bound less twice the shared cache at the DRAM rate.

    Why the second: each operator's warm bound lets the whole cache's worth of its own reads
    and writes stay in the cache, but one call of the workload starts with at most the cache's
    capacity in it and ends with at most that much left unwritten, so warmth saves the whole
    workload at most 2 x cache bytes of DRAM traffic. An operator's time, on any mapping, falls
    by at most d / DRAM rate when d of its DRAM bytes are saved, so the warm time of the
    workload is >= its cold bound - 2 x cache / DRAM rate (a four-layer decode's weights are
    six times an H200's L2: its operators' warm bounds alone summed to a sixth of the cold one)."""
    summed = sum(float(r.warm_latency_s or 0.0) for r in results)
    return max(summed, cold_s - 2.0 * machine.cache_bytes / machine.dram_bytes_per_s)


def _ceiling_notes(target: Target, given: Ceilings | None, sheet: Ceilings) -> list[str]:
    """What a reader of a calibrated bound must know about the ceilings behind it."""
    notes: list[str] = []
    if given is None:
        return notes
    if given.device and not target.matches_device(given.device):
        notes.append(
            f"ceilings measured on {given.device!r}, which is not target {target.name!r}: "
            f"this bound does not describe {target.name}"
        )
    scale = vector_scale(given, sheet)
    if not given.vector and scale is not None:
        notes.append(
            f"vector rates are the datasheet's scaled by calibrated fp32 / datasheet fp32 = "
            f"{scale:.3g}"
            + (
                "; special-function rates raised by the same factor to stay a bound"
                if scale > 1.0
                else "; special-function rates as on the datasheet"
            )
        )
    return notes


def predict(
    workloads: Iterable[tuple[Workload, WorkloadKind]],
    target: Target,
    strategies: Sequence[MappingStrategy],
    operating_point: str | None = None,
    ceilings: Ceilings | None = None,
    max_candidates: int = MAX_CANDIDATES,
    estimate: Any = True,
    regime: str = "burst",
) -> Prediction:
    """The lower bound of each workload on `target`. With `ceilings` from calibration the
    bound is 'calibrated' (datasheet rates fill math modes calibration did not measure).

    `estimate`: True adds the expected latency beside each bound with the coefficients the
    target's basis gives (tensorforge.estimate.basis); an EstimateCoefficients uses those
    (e.g. calibrated on the device); False leaves it out. The bound never depends on it."""
    workloads = list(workloads)
    if len(workloads) > 1:  # a suite's searches are many: numpy's from the first (search.py)
        numpy_from_now_on()
    point = target.operating_point(operating_point)
    sheet = datasheet_ceilings(target, point.name)
    used = sheet if ceilings is None else merge_ceilings(ceilings, sheet)
    check_ceilings(used)
    machine = machine_for(target, used, max_candidates)
    memo: dict = {}
    predictions = tuple(predict_workload(w, k, target, used, strategies, machine, memo) for w, k in workloads)
    notes = [
        "latency is a lower bound: max(compute, memory) per operator on its best mapping "
        "(or a relaxation of all of them where --max-candidates cut the search), summed over "
        "operators; launch and framework overheads are not modelled"
    ]
    if machine.cache_bytes_per_s is None:
        notes.append("the target declares no shared-cache bandwidth: cache traffic is reported, not timed")

    notes.extend(_ceiling_notes(target, ceilings, sheet))
    result = Prediction(
        label=LABEL,
        bound="analytical" if ceilings is None else "calibrated",
        target=target.name,
        operating_point=point.name,
        clock_mhz=point.clock_mhz,
        ceilings=used,
        max_candidates_per_operator=max_candidates,
        candidates=sum(w.candidates for w in predictions),
        search=search_of(w.search for w in predictions),
        workloads=predictions,
        notes=tuple(notes),
        cache_states=dict(CACHE_STATES),
    )
    if estimate is False or estimate is None:
        return result
    from tensorforge.estimate.basis import coefficients_for
    from tensorforge.estimate.model import estimate_prediction

    coefficients = coefficients_for(target, None if estimate is True else estimate)
    return estimate_prediction(result, workloads, target, coefficients, regime)
