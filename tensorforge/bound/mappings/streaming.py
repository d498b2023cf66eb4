"""Streaming (elementwise / reduction) work: one pass over its tensors on the vector units, at
the fastest vector rate that holds the elements' precision (Machine.vector_time), with
transcendentals on special-function units where the target has them. Warm (Residency.warm),
the bytes the shared cache may hold between calls cost no DRAM time (base.dram_bytes)."""

from tensorforge.bound.mappings.base import (
    EXHAUSTIVE,
    Machine,
    MappingChoice,
    MappingStrategy,
    Residency,
    dram_bytes,
    finish,
    warm_notes,
)
from tensorforge.workloads.problems import StreamProblem


class Streaming(MappingStrategy):
    name = "streaming"
    problem_types = (StreamProblem,)
    models_warm = True

    def explore(self, p: StreamProblem, machine: Machine, residency: Residency) -> MappingChoice:
        reads = sum(t.nbytes for t in p.read_tensors if t.name not in residency.resident)
        writes = sum(t.nbytes for t in p.write_tensors if t.name not in residency.no_writeback)
        touched = sum(t.nbytes for t in p.read_tensors + p.write_tensors)
        dram = float(dram_bytes(reads, writes, machine, residency))
        terms = {"dram": dram / machine.dram_bytes_per_s}
        if machine.cache_bytes_per_s:
            terms["cache_to_unit"] = touched / machine.cache_bytes_per_s
        return finish(
            self.name,
            tile={},
            split=1,
            tiles=machine.units,
            concurrent=machine.units,
            waves=1,
            traffic={"dram": dram, "cache_to_unit": touched},
            compute_s=machine.vector_time(p.flops, p.special_ops, p.math_mode),
            memory_terms=terms,
            candidates=1,
            notes=warm_notes(machine, residency),
            search=EXHAUSTIVE,
            space=1,
        )
