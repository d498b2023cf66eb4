"""Streaming (elementwise / reduction) work: one pass over its tensors on the vector units."""

from ..precision import VECTOR_MODE
from ..problems import StreamProblem
from .base import EXHAUSTIVE, Machine, MappingChoice, MappingStrategy, Residency, finish


class Streaming(MappingStrategy):
    name = "streaming"
    problem_types = (StreamProblem,)

    def explore(self, p: StreamProblem, machine: Machine, residency: Residency) -> MappingChoice:
        reads = sum(t.nbytes for t in p.read_tensors if t.name not in residency.resident)
        writes = sum(t.nbytes for t in p.write_tensors if t.name not in residency.no_writeback)
        touched = sum(t.nbytes for t in p.read_tensors + p.write_tensors)
        mode = p.math_mode if p.math_mode in machine.compute else VECTOR_MODE
        terms = {"dram": (reads + writes) / machine.dram_bytes_per_s}
        if machine.cache_bytes_per_s:
            terms["cache_to_unit"] = touched / machine.cache_bytes_per_s
        return finish(self.name, tile={}, split=1, tiles=machine.units, concurrent=machine.units,
                      waves=1, traffic={"dram": reads + writes, "cache_to_unit": touched},
                      compute_s=p.flops / machine.compute[mode], memory_terms=terms, candidates=1,
                      search=EXHAUSTIVE, space=1)
