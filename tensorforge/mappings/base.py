"""What a mapping strategy sees (Machine), returns (MappingChoice), and must implement."""

from typing import Any, Dict, FrozenSet, Mapping, Optional, Tuple

import attrs

def ceil_div(a, b):
    """Integer ceiling division that also works element-wise on numpy arrays."""
    return -(-a // b)


# Exploration is bounded: a strategy evaluates at most this many candidates per operator.
MAX_CANDIDATES = 4096


@attrs.frozen
class Machine:
    """A target at one operating point, reduced to what mappings need, with the ceilings in
    force. Rates are per second; `unit_*` figures are per processing unit."""
    units: int
    unit_sram_bytes: int                 # per-unit tile staging capacity (shared memory)
    unit_sram_bytes_per_s: Optional[float]
    cache_bytes: int                     # shared cache (L2) capacity; 0 if none
    cache_bytes_per_s: Optional[float]
    dram_bytes_per_s: float
    compute: Dict[str, float]            # whole-array FLOP/s per math mode
    max_candidates: int = MAX_CANDIDATES
    # A system target's devices and links, and the calibrated collective curves
    # (tensorforge.collectives): what the collective mapping needs, nothing else reads them.
    devices: int = 1
    interconnect: Optional[Any] = None
    collectives: Mapping[str, Any] = attrs.field(factory=dict)

    def unit_rate(self, mode: str) -> float:
        return self.compute[mode] / self.units


@attrs.frozen
class MappingChoice:
    """The chosen mapping of one operator, and the times it implies.

    tile: tile extent per loop dimension at the per-unit SRAM level (partial tiles at the
    edges are padded: tile quantization). tiles: work items; concurrent: items in flight
    across the PE array; waves = ceil(tiles / concurrent) (wave quantization).
    traffic: bytes moved at each level ('dram', 'cache_to_unit', 'unit_sram').
    """
    strategy: str
    tile: Dict[str, int]
    split: int
    tiles: int
    concurrent: int
    waves: int
    traffic: Dict[str, float]
    compute_s: float
    memory_s: float
    memory_level: str
    latency_s: float
    bottleneck: str
    candidates: int
    notes: Tuple[str, ...] = ()
    # Which ceilings timed this operator when not its math mode's (a collective: the links'
    # 'datasheet' or 'calibrated' curve); None: the math mode's.
    origin: Optional[str] = None


@attrs.frozen
class Residency:
    """Tensors a previous operator left in the shared cache: reading them costs no DRAM
    traffic, and `no_writeback` outputs are consumed from the cache before eviction."""
    resident: FrozenSet[str] = frozenset()
    no_writeback: FrozenSet[str] = frozenset()


class MappingStrategy:
    """Base class for mapping strategies a plugin registers.

    Subclasses set `name` and `problem_types` and implement `explore`, which must evaluate at
    most `machine.max_candidates` candidates and break ties deterministically.
    """
    name: str = ""
    problem_types: Tuple[type, ...] = ()

    def explore(self, problem, machine: Machine, residency: Residency) -> MappingChoice:
        raise NotImplementedError


def finish(strategy: str, *, tile, split, tiles, concurrent, waves, traffic, compute_s,
           memory_terms: Dict[str, float], candidates: int, notes=()) -> MappingChoice:
    """Latency = max(compute, slowest memory level); the bottleneck is the term that won."""
    level, memory_s = max(sorted(memory_terms.items()), key=lambda kv: kv[1]) if memory_terms \
        else ("none", 0.0)
    latency = max(compute_s, memory_s)
    bottleneck = "compute" if compute_s >= memory_s else "memory"
    return MappingChoice(strategy=strategy, tile=dict(tile), split=int(split), tiles=int(tiles),
                         concurrent=int(concurrent), waves=int(waves),
                         traffic={k: float(v) for k, v in traffic.items()},
                         compute_s=float(compute_s), memory_s=float(memory_s),
                         memory_level=level, latency_s=float(latency), bottleneck=bottleneck,
                         candidates=int(candidates), notes=tuple(notes))
