"""From workloads to lower bounds: residency, bounded mapping exploration, aggregation.

WORKLOAD -> operators (FLOPs + tensors) -> MAPPING + TILING per operator -> CEILINGS ->
max(compute, memory) per operator -> sum over operators -> PREDICTED LATENCY (lower bound).
"""

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import attrs

from .errors import TensorForgeError
from .mappings.base import MAX_CANDIDATES, Machine, MappingChoice, MappingStrategy, Residency
from .results import LABEL, OperatorPrediction, Prediction, WorkloadPrediction
from .target import Ceilings, Target, check_ceilings, datasheet_ceilings, merge_ceilings
from .workload import Workload, WorkloadKind


def machine_for(target: Target, ceilings: Ceilings, max_candidates: int = MAX_CANDIDATES) -> Machine:
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
        devices=target.devices, interconnect=target.interconnect,
        collectives=dict(ceilings.collectives))


def _residency(operators, cache_bytes: int) -> Tuple[Residency, set, set]:
    """Tensors both produced and consumed inside the workload, small enough for the shared
    cache, never go to DRAM (a lower bound: a real schedule may evict them)."""
    written = {t.name: t.nbytes for op in operators for t in op.problem.writes()}
    read = {t.name for op in operators for t in op.problem.reads()}
    on_chip = frozenset(n for n, size in written.items() if n in read and size <= cache_bytes)
    return Residency(resident=on_chip, no_writeback=on_chip), set(written), read


def _choose(problem, strategies: Sequence[MappingStrategy], machine: Machine,
            residency: Residency) -> MappingChoice:
    usable = [s for s in strategies if isinstance(problem, s.problem_types)]
    if not usable:
        raise TensorForgeError(f"no installed mapping strategy handles {type(problem).__name__}")
    choices = [s.explore(problem, machine, residency) for s in usable]
    best = min(choices, key=lambda c: (c.latency_s, c.strategy))
    return attrs.evolve(best, candidates=sum(c.candidates for c in choices))


def _problem_dict(problem) -> dict:
    return attrs.asdict(problem, recurse=True)


def predict_workload(workload: Workload, kind: WorkloadKind, target: Target,
                     ceilings: Ceilings, strategies: Sequence[MappingStrategy],
                     machine: Machine, memo: Optional[dict] = None) -> WorkloadPrediction:
    memo = {} if memo is None else memo
    operators = kind.operators(workload.params)
    if not operators:
        raise TensorForgeError(f"workload {workload.name!r} decomposes into no operators")
    residency, written, read = _residency(operators, machine.cache_bytes)
    results = []
    for op in operators:
        if op.problem.math_mode not in ceilings.compute:  # else a KeyError deep in a mapping
            raise TensorForgeError(
                f"workload {workload.name!r}: target {target.name!r} declares no "
                f"{op.problem.math_mode} rate (operator {op.name!r}); known modes: "
                f"{', '.join(sorted(ceilings.compute))}")
        relevant = Residency(
            resident=frozenset(t.name for t in op.problem.reads()) & residency.resident,
            no_writeback=frozenset(t.name for t in op.problem.writes()) & residency.no_writeback)
        key = (op.problem, relevant)
        if key not in memo:
            try:
                memo[key] = _choose(op.problem, strategies, machine, relevant)
            except TensorForgeError as exc:   # e.g. a collective over more devices than the target has
                raise TensorForgeError(f"workload {workload.name!r}, operator {op.name!r}: {exc}") from None
        choice = memo[key]
        mode = op.problem.math_mode
        tensors = op.problem.reads() + op.problem.writes()
        results.append(OperatorPrediction(
            name=op.name, count=op.count, problem_type=type(op.problem).__name__,
            problem=_problem_dict(op.problem), math_mode=mode,
            ceiling_origin=choice.origin or ceilings.origin_of(mode),
            flops=float(op.problem.flops) * op.count,
            compulsory_bytes=float(sum(t.nbytes for t in tensors)) * op.count,
            mapping=choice, compute_s=choice.compute_s * op.count,
            memory_s=choice.memory_s * op.count, latency_s=choice.latency_s * op.count,
            bottleneck=choice.bottleneck))
    sizes = {t.name: t.nbytes for op in operators for t in op.problem.reads() + op.problem.writes()}
    external = sum(size for name, size in sizes.items() if name not in written)
    outputs = sum(size for name, size in sizes.items() if name in written and name not in read)
    # The workload's bottleneck: the operators' bottleneck that holds most of the bound
    # (compute wins a tie, as it always has between compute and memory).
    shares: Dict[str, float] = {}
    for r in results:
        shares[r.bottleneck] = shares.get(r.bottleneck, 0.0) + r.latency_s
    latency = sum(r.latency_s for r in results)
    footprint = kind.footprint_bytes(workload.params)
    return WorkloadPrediction(
        name=workload.name, kind=workload.kind, spec=workload.spec,
        flops=sum(r.flops for r in results), compulsory_bytes=float(external + outputs),
        footprint_bytes=int(footprint), fits_in_memory=footprint <= target.dram_capacity_bytes,
        compute_s=sum(r.compute_s for r in results), memory_s=sum(r.memory_s for r in results),
        latency_s=latency, bottleneck=max(sorted(shares), key=lambda b: (shares[b], b == "compute")),
        candidates=sum(r.mapping.candidates for r in results), operators=tuple(results))


def predict(workloads: Iterable[Tuple[Workload, WorkloadKind]], target: Target,
            strategies: Sequence[MappingStrategy], operating_point: Optional[str] = None,
            ceilings: Optional[Ceilings] = None,
            max_candidates: int = MAX_CANDIDATES) -> Prediction:
    """The lower bound of each workload on `target`. With `ceilings` from calibration the
    bound is 'calibrated' (datasheet rates fill math modes calibration did not measure)."""
    point = target.operating_point(operating_point)
    sheet = datasheet_ceilings(target, point.name)
    used = sheet if ceilings is None else merge_ceilings(ceilings, sheet)
    check_ceilings(used)
    machine = machine_for(target, used, max_candidates)
    memo: Dict = {}
    predictions = tuple(predict_workload(w, k, target, used, strategies, machine, memo)
                        for w, k in workloads)
    notes = ["latency is a lower bound: max(compute, memory) per operator on the best mapping "
             "found, summed over operators; launch and framework overheads are not modelled"]
    if machine.cache_bytes_per_s is None:
        notes.append("the target declares no shared-cache bandwidth: cache traffic is reported, not timed")
    return Prediction(
        label=LABEL, bound="analytical" if ceilings is None else "calibrated",
        target=target.name, operating_point=point.name, clock_mhz=point.clock_mhz,
        ceilings=used, max_candidates_per_operator=max_candidates,
        candidates=sum(w.candidates for w in predictions), workloads=predictions,
        notes=tuple(notes))
