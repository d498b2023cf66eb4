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
not fit in the cache).
"""

import numpy as np

from ..precision import ELEMENT_TYPE
from ..problems import AttentionProblem
from .base import Machine, MappingChoice, MappingStrategy, Residency, ceil_div, finish

TILE_Q = (16, 32, 64, 128, 256)
TILE_KV = (16, 32, 64, 128, 256)
SPLITS = (1, 2, 4, 8, 16, 32)
STAGES = 2
PARTIAL_BYTES = 4


class FlashAttention(MappingStrategy):
    name = "flash-attention"
    problem_types = (AttentionProblem,)

    def candidates(self, p: AttentionProblem, machine: Machine):
        tq, tkv, split, pack = np.meshgrid(np.array(TILE_Q), np.array(TILE_KV), np.array(SPLITS),
                                           np.array((0, 1)), indexing="ij")
        grid = [a.ravel().astype(np.int64) for a in (tq, tkv, split, pack)]
        d, e = p.head_dim, p.elem_bytes
        ok = (grid[0] * d + STAGES * 2 * grid[1] * d) * e <= machine.unit_sram_bytes
        ok &= grid[2] <= max(1, ceil_div(p.kv_len, int(TILE_KV[0])))
        if p.causal and p.q_len > 1 or p.heads == p.kv_heads:
            ok &= grid[3] == 0
        keep = np.nonzero(ok)[0][: machine.max_candidates]
        if keep.size == 0:
            keep = np.array([0])
        return [a[keep] for a in grid]

    def explore(self, p: AttentionProblem, machine: Machine, residency: Residency) -> MappingChoice:
        tq, tkv, split, pack = self.candidates(p, machine)
        d, e, units = p.head_dim, p.elem_bytes, machine.units
        group = p.heads // p.kv_heads
        rows = np.where(pack == 1, p.q_len * group, p.q_len)
        groups = np.where(pack == 1, p.batch * p.kv_heads, p.batch * p.heads)
        qblocks = ceil_div(rows, tq)

        # Visible keys per query block j (columns), padded with zeros beyond the block count.
        j = np.arange(int(qblocks.max()))[None, :]
        live = j < qblocks[:, None]
        if p.causal:
            offset = p.kv_len - p.q_len
            visible = offset + np.minimum((j + 1) * tq[:, None], p.q_len)
        else:
            visible = np.full(live.shape, p.kv_len)
        kv_pad = ceil_div(ceil_div(visible, split[:, None]), tkv[:, None]) * tkv[:, None]
        kv_pad = np.where(live, kv_pad, 0)

        item_flops = 4.0 * tq[:, None] * kv_pad * d              # per item, per block j
        item_sram = (tq[:, None] * d + 2.0 * kv_pad * d) * e * live
        per_group = groups * split
        items = per_group * qblocks
        waves = ceil_div(items, units)
        rate = machine.unit_rate(p.math_mode)
        total_flops = per_group * item_flops.sum(axis=1)
        longest = item_flops.max(axis=1)
        # Equal items fill whole waves; unequal (causal) items are at best perfectly balanced.
        uniform = np.all(np.where(live, item_flops == longest[:, None], True), axis=1)
        compute_s = np.where(uniform, waves * longest, np.maximum(total_flops / units, longest)) / rate
        # The softmax runs beside the matrix units: its exponentials on special-function units
        # (or emulated on the vector units), perfectly spread. The slower of the two binds.
        softmax_s = machine.vector_time(p.softmax_flops, p.softmax_exps, ELEMENT_TYPE.get(p.math_mode, p.math_mode))
        compute_s = np.maximum(compute_s, softmax_s)

        unit_sram = per_group * item_sram.sum(axis=1)
        out_bytes = np.where(split > 1, PARTIAL_BYTES * split, e) * (groups * rows * d).astype(float)
        cache_to_unit = unit_sram + out_bytes

        dram = 0.0
        for tensor in (p.q, p.k, p.v):
            dram += 0.0 if tensor.name in residency.resident else float(tensor.nbytes)
        dram += 0.0 if p.o.name in residency.no_writeback else float(p.o.nbytes)
        workspace = out_bytes * (split > 1)
        dram = dram + np.where(workspace > machine.cache_bytes, 2 * workspace, 0.0)

        terms = {"dram": dram / machine.dram_bytes_per_s}
        if machine.cache_bytes_per_s:
            terms["cache_to_unit"] = cache_to_unit / machine.cache_bytes_per_s
        if machine.unit_sram_bytes_per_s:
            longest_sram = item_sram.max(axis=1)
            terms["unit_sram"] = np.where(uniform, waves * longest_sram,
                                          np.maximum(unit_sram / units, longest_sram)) \
                / machine.unit_sram_bytes_per_s
        memory_s = np.max(np.stack(list(terms.values())), axis=0)
        latency = np.maximum(compute_s, memory_s)

        index = np.arange(tq.size)
        order = np.lexsort((index, pack, split, -tq, cache_to_unit, dram, latency))
        i = int(order[0])
        notes = [f"{'packed ' + str(group) + ' query heads per KV head' if pack[i] else 'one query head per tile'}"]
        if p.causal:
            notes.append("causal: key tiles above the diagonal skipped, diagonal tiles computed in full")
        if compute_s[i] == softmax_s:
            notes.append("the softmax's exponentials bind the compute time, not the matrix units")
        return finish(
            self.name, tile={"q": int(tq[i]), "kv": int(tkv[i]), "d": d}, split=split[i],
            tiles=items[i], concurrent=min(units, int(items[i])), waves=waves[i],
            traffic={"dram": float(dram[i]), "cache_to_unit": cache_to_unit[i],
                     "unit_sram": unit_sram[i]},
            compute_s=compute_s[i], memory_terms={k: float(v[i]) for k, v in terms.items()},
            candidates=tq.size, notes=tuple(notes))
