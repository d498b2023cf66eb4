"""Cold and warm bounds: which cache state each bound assumes, and a warm bound for mapping
strategies that do not model one.

Why two bounds: the bound has always assumed that every operand a workload reads from outside
comes from DRAM after a flush of the shared cache (cold), which is how TensorForge times every
call. A call made again on the same tensors without a flush (a network's layers in a loop, most
scripts, published operator data) may find them in the cache and beat the cold bound: on an H200
a 1x1 convolution whose input fits in L2, timed without a flush, ran 9% below it. The warm bound
lets up to the cache's capacity of each operator's reads and writes stay there (no DRAM time;
mappings/base.py, `dram_bytes`); where the target declares the cache's bandwidth those bytes are
timed at it, and where it does not they have no memory floor at all. A workload's warm bound is
also >= its cold bound less twice the cache at the DRAM rate (model.workload_warm). Both are <=
the cold bound.
"""

import attrs

from tensorforge.bound.mappings.base import Machine, MappingChoice

# What each bound of a prediction assumes (Prediction.cache_states), by the field that holds it.
CACHE_STATES = {
    "latency_s": (
        "cold: the shared cache is flushed before each call, so every operand from outside the workload "
        "comes from DRAM (tensors produced and consumed inside it stay on chip when they fit)"
    ),
    "warm_latency_s": (
        "warm: the call repeats on the same tensors without a flush, so up to the shared cache's capacity "
        "of each operator's reads and of its writes may stay there between calls and cost no DRAM time "
        "(timed at the cache's bandwidth where the target declares it; else no memory floor for them); "
        "a workload as a whole saves at most twice the cache's capacity of DRAM traffic"
    ),
}


def warm_relaxation(choice: MappingChoice, machine: Machine) -> MappingChoice:
    """A warm bound from the cold choice of a strategy that does not model warmth
    (MappingStrategy.models_warm False): its compute time, and its DRAM traffic less twice
    the cache's capacity (at most that much of the reads and of the writes can stay in the
    cache, base.dram_bytes) at the DRAM rate. Its other memory levels are not known here, so
    they are dropped: looser, never higher than the warm time of any of its mappings."""
    if not machine.cache_bytes:
        return choice
    dram = max(0.0, float(choice.traffic.get("dram", 0.0)) - 2.0 * machine.cache_bytes)
    memory_s = dram / machine.dram_bytes_per_s
    return attrs.evolve(
        choice,
        traffic={**choice.traffic, "dram": dram},
        memory_s=memory_s,
        memory_level="dram" if memory_s > 0 else "none",
        latency_s=max(choice.compute_s, memory_s),
        bottleneck="compute" if choice.compute_s >= memory_s else "memory",
        notes=choice.notes
        + (
            f"warm: strategy {choice.strategy!r} does not model a warm cache; its warm bound keeps its compute "
            f"time and its DRAM traffic less twice the shared cache ({machine.cache_bytes:,} B), nothing else",
        ),
    )
