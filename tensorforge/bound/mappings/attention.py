"""FlashAttention-style mapping: query tiles stream over key/value tiles on one unit.

A work item is one query tile (tq rows) of one head group, over its share of the visible keys
(kv split into `split` parts for decode-style parallelism, flash-decoding). With grouped-query
attention, the query heads sharing a KV head may be packed into one tile (rows = q_len * group)
so the KV tile read from SRAM serves all of them; packing is not offered for causal prefill,
where rows of one tile would see different key ranges.
The softmax (an exponential per visible score) runs on the vector and special-function units
beside the matrix units; the compute time is the slower of the two.
Causal masking skips key tiles entirely above the diagonal; diagonal tiles are computed in full
(tile quantization). S and P stay on chip; DRAM sees Q, K, V, O once (+ split partials that do
not fit in the cache); warm (Residency.warm), less what the cache may hold between calls.
"""

from __future__ import annotations

from tensorforge.bound.mappings.base import (
    Machine,
    MappingChoice,
    Residency,
    ceil_div,
    dram_bytes,
    finish,
    warm_notes,
)
from tensorforge.bound.mappings.search import Evaluated, GridStrategy, Relaxation
from tensorforge.workloads.precision import ELEMENT_TYPE
from tensorforge.workloads.problems import AttentionProblem

TILE_Q = (16, 32, 64, 128, 256)
TILE_KV = (16, 32, 64, 128, 256)
SPLITS = (1, 2, 4, 8, 16, 32)
STAGES = 2
PARTIAL_BYTES = 4


def floor_sum(n, m, a, b):
    """sum_{i=0}^{n-1} floor((a*i + b) / m), element-wise over int64 arrays (n >= 0, m >= 1,
    a, b >= 0), in O(log m) steps (the Euclid-like reduction of the classic floor-sum):
    the causal sum over query blocks without an array as long as the sequence."""
    import numpy as np  # on first use: `tensorforge --help` need not load numpy

    n, m, a, b = (np.array(x, dtype=np.int64) for x in np.broadcast_arrays(n, m, a, b))
    total = np.zeros(n.shape, dtype=np.int64)
    while True:
        total += (n * (n - 1) // 2) * (a // m)
        a = a % m
        total += n * (b // m)
        b = b % m
        top = a * n + b
        more = top >= m
        if not more.any():
            return total
        n = np.where(more, top // m, 0)
        b = np.where(more, top % m, 0)
        m, a = np.where(more, a, 1), np.where(more, m, 0)


class FlashAttention(GridStrategy):
    name = "flash-attention"
    problem_types = (AttentionProblem,)
    models_warm = True

    def space(self, p: AttentionProblem, machine: Machine):
        """Every feasible candidate, in the deterministic enumeration order."""
        import numpy as np  # on first use: `tensorforge --help` need not load numpy

        tq, tkv, split, pack = np.meshgrid(
            np.array(TILE_Q), np.array(TILE_KV), np.array(SPLITS), np.array((0, 1)), indexing="ij"
        )
        grid = [a.ravel().astype(np.int64) for a in (tq, tkv, split, pack)]
        d, e = p.head_dim, p.elem_bytes
        ok = (grid[0] * d + STAGES * 2 * grid[1] * d) * e <= machine.unit_sram_bytes
        ok &= grid[2] <= max(1, ceil_div(p.kv_len, int(TILE_KV[0])))
        if p.causal and p.q_len > 1 or p.heads == p.kv_heads:
            ok &= grid[3] == 0
        keep = np.nonzero(ok)[0]
        if keep.size == 0:
            keep = np.array([0])
        return [a[keep] for a in grid]

    def candidates(self, p: AttentionProblem, machine: Machine):
        """The first `machine.max_candidates` candidates of the space (what a cut search evaluates)."""
        return [a[: machine.max_candidates] for a in self.space(p, machine)]

    def evaluate(self, p: AttentionProblem, machine: Machine, residency: Residency, grid) -> Evaluated:
        import numpy as np  # on first use: `tensorforge --help` need not load numpy

        tq, tkv, split, pack = grid
        d, e, units = p.head_dim, p.elem_bytes, machine.units
        group = p.heads // p.kv_heads
        rows = np.where(pack == 1, p.q_len * group, p.q_len)
        groups = np.where(pack == 1, p.batch * p.kv_heads, p.batch * p.heads)
        qblocks = ceil_div(rows, tq)

        # Keys a query block j sees: visible_j = offset + min((j+1)*tq, q_len) when causal, else
        # kv_len; padded per split to whole KV tiles: kv_pad_j = tkv * ceil(visible_j / (split*tkv))
        # (ceil(ceil(x/s)/t) = ceil(x/(s*t))). visible_j never decreases with j, so the first
        # block is the lightest and the last (which sees all kv_len keys) the heaviest; the sum
        # over blocks is closed-form (floor_sum), so nothing grows with the sequence length.
        span = split * tkv
        last = tkv * ceil_div(p.kv_len, span)
        if p.causal:
            offset = p.kv_len - p.q_len
            first = tkv * ceil_div(offset + np.minimum(tq, p.q_len), span)
            ramp = np.minimum(qblocks, (p.q_len - 1) // tq)  # blocks with (j+1)*tq < q_len
            kv_sum = (
                tkv * floor_sum(ramp, span, tq, offset + tq + span - 1).astype(float)
                + (qblocks - ramp).astype(float) * last
            )
        else:
            first = last
            kv_sum = qblocks.astype(float) * last

        per_group = groups * split
        items = per_group * qblocks
        waves = ceil_div(items, units)
        rate = machine.unit_rate(p.math_mode)
        per_pair = 2.0 * p.matmuls * d  # FLOPs per visible pair and row: 4d forward, 10d backward
        longest = per_pair * tq * last  # flops of the heaviest item
        total_flops = per_group * (per_pair * tq) * kv_sum
        # Equal items fill whole waves; unequal (causal) items are at best perfectly balanced.
        uniform = first == last
        compute_s = np.where(uniform, waves * longest, np.maximum(total_flops / units, longest)) / rate
        # The softmax runs beside the matrix units: its exponentials on special-function units
        # (or emulated on the vector units), perfectly spread. The slower of the two binds.
        softmax_s = machine.vector_time(p.softmax_flops, p.softmax_exps, ELEMENT_TYPE.get(p.math_mode, p.math_mode))
        compute_s = np.maximum(compute_s, softmax_s)

        unit_sram = per_group * (qblocks.astype(float) * tq * d + 2.0 * d * kv_sum) * e
        longest_sram = (tq * d + 2.0 * last * d) * e
        out_bytes = np.where(split > 1, PARTIAL_BYTES * split, e) * (groups * rows * d).astype(float)
        cache_to_unit = unit_sram + out_bytes

        workspace = out_bytes * (split > 1)
        if residency.warm:
            reads, writes = self._reads_writes(p, residency)
            spill = np.where(workspace > machine.cache_bytes, workspace, 0.0)  # written, then read back
            dram = dram_bytes(reads + spill, writes + spill, machine, residency)
        else:
            dram = self._compulsory(p, residency) + np.where(workspace > machine.cache_bytes, 2 * workspace, 0.0)

        terms = {"dram": dram / machine.dram_bytes_per_s}
        if machine.cache_bytes_per_s:
            terms["cache_to_unit"] = cache_to_unit / machine.cache_bytes_per_s
        if machine.unit_sram_bytes_per_s:
            terms["unit_sram"] = (
                np.where(uniform, waves * longest_sram, np.maximum(unit_sram / units, longest_sram))
                / machine.unit_sram_bytes_per_s
            )
        memory_s = np.max(np.stack(list(terms.values())), axis=0)
        latency = np.maximum(compute_s, memory_s)

        index = np.arange(tq.size)
        order = np.lexsort((index, pack, split, -tq, cache_to_unit, dram, latency))

        def choice(i: int) -> MappingChoice:
            notes = [f"{'packed ' + str(group) + ' query heads per KV head' if pack[i] else 'one query head per tile'}"]
            if p.causal:
                notes.append("causal: key tiles above the diagonal skipped, diagonal tiles computed in full")
            if compute_s[i] == softmax_s:
                notes.append("the softmax's exponentials bind the compute time, not the matrix units")
            return finish(
                self.name,
                tile={"q": int(tq[i]), "kv": int(tkv[i]), "d": d},
                split=split[i],
                tiles=items[i],
                concurrent=min(units, int(items[i])),
                waves=waves[i],
                traffic={"dram": float(dram[i]), "cache_to_unit": cache_to_unit[i], "unit_sram": unit_sram[i]},
                compute_s=compute_s[i],
                memory_terms={k: float(v[i]) for k, v in terms.items()},
                candidates=tq.size,
                notes=tuple(notes) + warm_notes(machine, residency),
            )

        return Evaluated(latency=latency, order=order, choice=choice)

    @staticmethod
    def _compulsory(p: AttentionProblem, residency: Residency) -> float:
        """DRAM sees Q, K, V (unless resident) and O (unless consumed on chip) once; the
        backward its reads (Q, K, V, O, dO) and writes (dQ, dK, dV) once."""
        reads, writes = FlashAttention._reads_writes(p, residency)
        return reads + writes

    @staticmethod
    def _reads_writes(p: AttentionProblem, residency: Residency) -> tuple[float, float]:
        """The compulsory reads (Q, K, V unless resident) and writes (O unless consumed on chip)."""
        reads = sum(0.0 if t.name in residency.resident else float(t.nbytes) for t in p.reads())
        return reads, sum(0.0 if t.name in residency.no_writeback else float(t.nbytes) for t in p.writes())

    def relaxation(self, p: AttentionProblem, machine: Machine, residency: Residency) -> Relaxation:
        """<= every candidate of `space`, term by term. For any candidate:
        * compute: each query row sees at most visible_j keys in its block j and a block has at
          most tq rows, so the items' FLOPs total >= 4*d x (visible query-key pairs) x heads x
          batch = flops (packed tiles hold `group` heads that all see kv_len keys); whole waves
          or perfect balance both take >= total / units: compute_s >= flops / peak rate; the
          softmax time is the same for every candidate, and compute_s is the max of the two;
        * DRAM: Q, K, V, O once (residency applied) plus a split spill >= 0 (warm: base.dram_bytes
          of those reads and writes, which never decreases as they grow);
        * cache -> unit: every query row is staged once (Q), the last block of every KV head sees
          all kv_len keys (K and V once per KV head), and O goes up once at >= min(e, 8) bytes;
        * unit SRAM: waves x heaviest item (or the balanced share) >= staged bytes / units.
        """
        d, e = p.head_dim, p.elem_bytes
        q_rows = float(p.batch) * p.heads * p.q_len * d
        kv_rows = float(p.batch) * p.kv_heads * p.kv_len * d
        staged = (q_rows + 2.0 * kv_rows) * e
        written = q_rows * min(e, 2 * PARTIAL_BYTES)
        dram = (
            float(dram_bytes(*self._reads_writes(p, residency), machine, residency))
            if residency.warm
            else self._compulsory(p, residency)
        )
        terms = {"dram": dram / machine.dram_bytes_per_s}
        if machine.cache_bytes_per_s:
            terms["cache_to_unit"] = (staged + written) / machine.cache_bytes_per_s
        if machine.unit_sram_bytes_per_s:
            terms["unit_sram"] = staged / machine.units / machine.unit_sram_bytes_per_s
        softmax_s = machine.vector_time(p.softmax_flops, p.softmax_exps, ELEMENT_TYPE.get(p.math_mode, p.math_mode))
        return Relaxation(
            compute_s=max(p.flops / machine.compute[p.math_mode], softmax_s),
            memory_terms=terms,
            traffic={"dram": dram, "cache_to_unit": staged + written},
            why="FLOPs at the peak rate, Q, K, V and O staged once, compulsory DRAM traffic",
        )
