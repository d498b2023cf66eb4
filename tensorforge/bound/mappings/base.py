"""What a mapping strategy sees (Machine), returns (MappingChoice), and must implement."""

from collections.abc import Mapping
from typing import Any

import attrs

from tensorforge.workloads.precision import VECTOR_EXECUTES, VECTOR_MODE


def ceil_div(a, b):
    """Integer ceiling division that also works element-wise on numpy arrays."""
    return -(-a // b)


# Exploration is bounded: a strategy evaluates at most this many candidates per operator. The
# default covers the whole mapping space of every shipped strategy on any accepted target (the
# largest, tiled-matmul, has at most 400 x (floor(log2(units)) + 3) candidates: 13,200 at the
# 2^31 - 1 units tensorforge/workloads/limits.py allows), so by default the search is exhaustive; a lower
# limit makes the bound a relaxation instead (tensorforge/bound/mappings/search.py).
MAX_CANDIDATES = 16384

# How the bound of a mapping choice was obtained (MappingChoice.search).
EXHAUSTIVE = "exhaustive"  # every mapping of the strategy's space evaluated: the minimum
RELAXATION = "relaxation"  # the limit cut the search: a relaxation <= every mapping of the space
UNSTATED = "unstated"  # a third-party strategy that does not say
SEARCH_KINDS = (EXHAUSTIVE, RELAXATION, UNSTATED)

# A transcendental (exp, tanh...) evaluated on the vector units instead of a special-function
# unit costs at least this many vector FLOPs (an FMA counts 2). Deliberately below any accurate
# software exp we know (range reduction plus a polynomial of degree >= 2 takes 4+ instructions,
# 8+ FLOPs of issue capacity), so moving transcendentals to the vector units is never charged
# more than it could cost: the bound stays a bound.
SPECIAL_EMULATION_FLOPS = 4.0


@attrs.frozen
class Machine:
    """A target at one operating point, reduced to what mappings need, with the ceilings in
    force. Rates are per second; `unit_*` figures are per processing unit."""

    units: int
    unit_sram_bytes: int  # per-unit tile staging capacity (shared memory)
    unit_sram_bytes_per_s: float | None
    cache_bytes: int  # shared cache (L2) capacity; 0 if none
    cache_bytes_per_s: float | None
    dram_bytes_per_s: float
    compute: dict[str, float]  # whole-array FLOP/s per math mode
    max_candidates: int = MAX_CANDIDATES
    vector: dict[str, float] = attrs.field(factory=dict)  # vector FLOP/s per precision
    special: dict[str, float] = attrs.field(factory=dict)  # transcendental results/s per precision
    # A system target's devices and links, and the calibrated collective curves
    # (tensorforge.workloads.collectives): what the collective mapping needs, nothing else reads them.
    devices: int = 1
    interconnect: Any | None = None
    collectives: Mapping[str, Any] = attrs.field(factory=dict)

    def unit_rate(self, mode: str) -> float:
        return self.compute[mode] / self.units

    def vector_rate(self, dtype: str) -> float:
        """The fastest vector rate that may legitimately process `dtype` elements: any declared
        precision that holds them exactly (precision.VECTOR_EXECUTES). Without declared vector
        rates, the fp32 math mode's rate."""
        rates = [self.vector[p] for p in VECTOR_EXECUTES.get(dtype, (VECTOR_MODE,)) if p in self.vector]
        if rates:
            return max(rates)
        return self.vector.get(VECTOR_MODE) or self.compute[VECTOR_MODE]

    def special_rate(self, dtype: str) -> float:
        """The fastest special-function rate for `dtype` elements; 0 without such units."""
        return max(
            [self.special[p] for p in VECTOR_EXECUTES.get(dtype, (VECTOR_MODE,)) if p in self.special], default=0.0
        )

    def vector_time(self, flops: float, special_ops: float, dtype: str) -> float:
        """A lower bound on the time for `flops` vector FLOPs of which `special_ops` are
        transcendentals, on `dtype` elements, spread perfectly over the array.

        Plain FLOPs need the vector units (rate V); each transcendental runs either on a
        special-function unit (rate S) or on the vector units at SPECIAL_EMULATION_FLOPS (c).
        The best split gives max(F/V, (F + c*E) / (V + c*S)) with F the plain FLOPs and E the
        transcendentals: no schedule, however it divides the work, can be faster."""
        plain = max(0.0, flops - special_ops)
        v, s, c = self.vector_rate(dtype), self.special_rate(dtype), SPECIAL_EMULATION_FLOPS
        return max(plain / v, (plain + c * special_ops) / (v + c * s))


@attrs.frozen
class MappingChoice:
    """The chosen mapping of one operator, and the times it implies.

    tile: tile extent per loop dimension at the per-unit SRAM level (partial tiles at the
    edges are padded: tile quantization). tiles: work items; concurrent: items in flight
    across the PE array; waves = ceil(tiles / concurrent) (wave quantization).
    traffic: bytes moved at each level ('dram', 'cache_to_unit', 'unit_sram').
    search: how the latency was obtained (EXHAUSTIVE, RELAXATION or UNSTATED); space: the
    number of mappings in the strategy's full space (0 when the strategy does not say);
    candidates: how many of them were evaluated.
    """

    strategy: str
    tile: dict[str, int]
    split: int
    tiles: int
    concurrent: int
    waves: int
    traffic: dict[str, float]
    compute_s: float
    memory_s: float
    memory_level: str
    latency_s: float
    bottleneck: str
    candidates: int
    notes: tuple[str, ...] = ()
    search: str = UNSTATED
    space: int = 0
    # Which ceilings timed this operator when not its math mode's (a collective: the links'
    # 'datasheet' or 'calibrated' curve); None: the math mode's.
    origin: str | None = None


@attrs.frozen
class Residency:
    """Tensors a previous operator left in the shared cache: reading them costs no DRAM
    traffic, and `no_writeback` outputs are consumed from the cache before eviction.

    `warm`: the call runs again on the same tensors without a cache flush in between (the
    warm bound; cold, the default, assumes every other operand comes from DRAM after a flush).
    Then up to the cache's capacity of the operator's reads may already be there, and up to
    the cache's capacity of its writes may stay there past the call (`dram_bytes`)."""

    resident: frozenset[str] = frozenset()
    no_writeback: frozenset[str] = frozenset()
    warm: bool = False


def dram_bytes(reads, writes, machine: "Machine", residency: Residency):
    """The DRAM bytes a mapping that reads `reads` and writes `writes` bytes there (cold)
    must move; scalars or numpy arrays.

    Warm, the cache holds at most `cache_bytes` when the call starts, so at most that many
    of the reads hit, and at most `cache_bytes` of dirty lines can remain unwritten when it
    ends: DRAM >= max(0, reads - C) + max(0, writes - C). Each operator gets the whole credit
    (a lower bound: operators of one call share the cache), so the warm bound never exceeds
    the cold one and holds for any single call, whatever ran before it."""
    if not residency.warm:
        return reads + writes
    cache = float(machine.cache_bytes)
    if isinstance(reads, (int, float)) and isinstance(writes, (int, float)):  # the same values, no numpy
        return max(reads - cache, 0.0) + max(writes - cache, 0.0)
    import numpy as np  # on first use: `tensorforge --help` need not load numpy

    return np.maximum(reads - cache, 0.0) + np.maximum(writes - cache, 0.0)


def warm_notes(machine: "Machine", residency: Residency) -> tuple[str, ...]:
    """What an operator's warm bound assumes, as its mapping's note (none cold or cacheless)."""
    if not (residency.warm and machine.cache_bytes):
        return ()
    held = f"warm: up to {machine.cache_bytes:,} B of its reads and of its writes may stay in the shared cache"
    if machine.cache_bytes_per_s:
        return (f"{held} between calls (no DRAM time); they are timed at the cache's bandwidth",)
    return (
        f"{held} between calls; the target declares no cache bandwidth, so those bytes have no memory "
        "floor at all (the warm bound is compute and the other levels)",
    )


class MappingStrategy:
    """Base class for mapping strategies a plugin registers.

    Subclasses set `name` and `problem_types` and implement `explore`, which must evaluate at
    most `machine.max_candidates` candidates, break ties deterministically and return a
    latency that is a lower bound over the strategy's whole mapping space, even when the
    limit cuts the search. `GridStrategy` (search.py) does that for any finite grid.
    """

    name: str = ""
    problem_types: tuple[type, ...] = ()
    # True: `explore` honours Residency.warm (a warm bound over its own space). A strategy that
    # does not (a third party's, written before warm bounds) gets a generic warm relaxation of
    # its cold choice instead (tensorforge.bound.warm).
    models_warm: bool = False

    def explore(self, problem: Any, machine: Machine, residency: Residency) -> MappingChoice:
        raise NotImplementedError


def finish(
    strategy: str,
    *,
    tile,
    split,
    tiles,
    concurrent,
    waves,
    traffic,
    compute_s,
    memory_terms: dict[str, float],
    candidates: int,
    notes=(),
    search: str = UNSTATED,
    space: int = 0,
) -> MappingChoice:
    """Latency = max(compute, slowest memory level); the bottleneck is the term that won."""
    level, memory_s = max(sorted(memory_terms.items()), key=lambda kv: kv[1]) if memory_terms else ("none", 0.0)
    latency = max(compute_s, memory_s)
    bottleneck = "compute" if compute_s >= memory_s else "memory"
    return MappingChoice(
        strategy=strategy,
        tile=dict(tile),
        split=int(split),
        tiles=int(tiles),
        concurrent=int(concurrent),
        waves=int(waves),
        traffic={k: float(v) for k, v in traffic.items()},
        compute_s=float(compute_s),
        memory_s=float(memory_s),
        memory_level=level,
        latency_s=float(latency),
        bottleneck=bottleneck,
        candidates=int(candidates),
        notes=tuple(notes),
        search=search,
        space=int(space),
    )
