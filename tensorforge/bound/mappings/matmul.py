"""Tiled matrix multiply: output tiles (tm x tn) over the PE array, K optionally split.

All candidates are evaluated at once with numpy (the Core must stay interactive while
architects sweep parameters); a small search runs in plain Python instead, bit-identically
(`choose`, below). Per candidate:
  tiles   = batch * ceil(M/tm) * ceil(N/tn) * split          (tile quantization: padded edges)
  waves   = ceil(tiles / units)                              (wave quantization)
  compute = waves * 2*tm*tn*kpad / unit_rate
  unit SRAM time = waves * (tm+tn)*kpad*elem / unit_sram_bw  (operands read once per tile)
  DRAM    = operand panels re-read per block of concurrently running tiles, unless a panel or
            the operands fit in the shared cache; C written once; split-K partials spill only
            when they do not fit in the cache. Warm (Residency.warm), what the cache may hold
            between calls is taken off the reads and the writes (base.dram_bytes).
"""

from __future__ import annotations

from itertools import product

import attrs

from tensorforge.bound.mappings.base import (
    EXHAUSTIVE,
    Machine,
    MappingChoice,
    MappingStrategy,
    Residency,
    ceil_div,
    dram_bytes,
    finish,
    warm_notes,
)
from tensorforge.bound.mappings.search import Evaluated, GridStrategy, Relaxation, plain_python
from tensorforge.workloads.precision import ELEMENT_TYPE
from tensorforge.workloads.problems import MatmulProblem

TILE_MN = (16, 32, 64, 128, 256)
TILE_K = (32, 64)
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16)
STAGES = 2  # double buffering: two K-slices of each operand tile staged at once
PARTIAL_BYTES = 4  # split-K partial sums are kept in fp32


def _row_blocks(units: int):
    """Rows of tiles in a wave's block of concurrently running tiles (columns follow)."""
    rows = {1, units}
    r = 2
    while r < units:
        rows.add(r)
        r *= 2
    rows.add(max(1, int(round(units**0.5))))
    return tuple(sorted(rows))


class TiledMatmul(GridStrategy):
    name = "tiled-matmul"
    problem_types = (MatmulProblem,)
    models_warm = True

    def explore(self, p: MatmulProblem, machine: Machine, residency: Residency) -> MappingChoice:
        # a small exhaustive search runs in plain Python, bit-identical (`choose` below)
        found = choose(self.name, p, machine, residency, plain_python)
        return found if found is not None else super().explore(p, machine, residency)

    def space(self, p: MatmulProblem, machine: Machine):
        """Every feasible candidate, in the deterministic enumeration order."""
        import numpy as np  # on first use: `tensorforge --help` need not load numpy

        tm, tn, tk, split, rows = np.meshgrid(
            np.array(TILE_MN),
            np.array(TILE_MN),
            np.array(TILE_K),
            np.array(SPLITS),
            np.array(_row_blocks(machine.units)),
            indexing="ij",
        )
        grid = [a.ravel().astype(np.int64) for a in (tm, tn, tk, split, rows)]
        elem = max(p.a_elem_bytes, p.b_elem_bytes)
        fits = STAGES * (grid[0] + grid[1]) * grid[2] * elem <= machine.unit_sram_bytes
        fits &= grid[3] <= max(1, ceil_div(p.k, int(TILE_K[0])))
        keep = np.nonzero(fits)[0]
        if keep.size == 0:  # the smallest tile must always be possible for a lower bound
            keep = np.array([0])
        return [a[keep] for a in grid]

    def candidates(self, p: MatmulProblem, machine: Machine):
        """The first `machine.max_candidates` candidates of the space (what a cut search evaluates)."""
        return [a[: machine.max_candidates] for a in self.space(p, machine)]

    def evaluate(self, p: MatmulProblem, machine: Machine, residency: Residency, grid) -> Evaluated:
        import numpy as np  # on first use: `tensorforge --help` need not load numpy

        # Products that can exceed int64 at the sizes tensorforge/workloads/limits.py accepts are taken
        # in float64 (waves x tile bytes, padded output elements).
        tm, tn, tk, split, rows = grid
        M, N, K, B = p.m, p.n, p.k, p.batch
        units = machine.units
        mt, nt = ceil_div(M, tm), ceil_div(N, tn)
        kpad = ceil_div(ceil_div(K, split), tk) * tk
        tiles = B * mt * nt * split
        waves = ceil_div(tiles, units)
        rate = machine.unit_rate(p.math_mode)
        compute_s = waves * (2.0 * tm * tn * kpad) / rate

        tile_bytes = ((tm * p.a_elem_bytes + tn * p.b_elem_bytes) * kpad).astype(float)
        unit_sram = tiles * tile_bytes
        out_tiles = (B * mt * nt).astype(float) * (tm * tn)
        cache_to_unit = unit_sram + np.where(split > 1, out_tiles * PARTIAL_BYTES * split, out_tiles * p.c_elem_bytes)

        # DRAM: reuse among the block of tiles that run concurrently (rows x cols of tiles).
        concurrent = np.minimum(units, tiles)
        r = np.minimum(rows, mt)
        c = np.minimum(ceil_div(np.minimum(concurrent, mt * nt), r), nt)
        bm, bn = np.minimum(r * tm, M), np.minimum(c * tn, N)
        a = 0.0 if p.a.name in residency.resident else float(p.a.nbytes)
        b = 0.0 if p.b.name in residency.resident else float(p.b.nbytes)
        cache = float(machine.cache_bytes)
        a_passes, b_passes = ceil_div(N, bn), ceil_div(M, bm)
        options = [a * a_passes + b * b_passes]
        a_panel = (p.a.nbytes / B) * bm / M
        b_panel = (p.b.nbytes / B) * bn / N
        options.append(np.where(a_panel <= cache / 2, a + b * b_passes, np.inf))
        options.append(np.where(b_panel <= cache / 2, a * a_passes + b, np.inf))
        if (p.a.nbytes + p.b.nbytes) / B <= cache:
            options.append(np.full(tm.shape, a + b))
        dram = np.min(np.stack(options), axis=0)
        written = 0.0 if p.c.name in residency.no_writeback else float(p.c.nbytes)
        workspace = B * M * N * PARTIAL_BYTES * split.astype(float)
        spill = np.where((split > 1) & (workspace > cache), workspace, 0.0)  # written, then read back
        if residency.warm:
            dram = dram_bytes(dram + spill, written + spill, machine, residency)
        else:  # (the cold sum in the order it has always been taken: the same floats)
            dram += written
            dram += 2 * spill

        terms = {"dram": dram / machine.dram_bytes_per_s}
        if machine.cache_bytes_per_s:
            terms["cache_to_unit"] = cache_to_unit / machine.cache_bytes_per_s
        if machine.unit_sram_bytes_per_s:
            terms["unit_sram"] = waves * tile_bytes / machine.unit_sram_bytes_per_s
        memory_s = np.max(np.stack(list(terms.values())), axis=0)
        latency = np.maximum(compute_s, memory_s)

        index = np.arange(tm.size)
        order = np.lexsort((index, split, -(tm * tn), cache_to_unit, dram, latency))

        def choice(i: int) -> MappingChoice:
            return finish(
                self.name,
                tile={"m": int(tm[i]), "n": int(tn[i]), "k": int(tk[i])},
                split=split[i],
                tiles=tiles[i],
                concurrent=concurrent[i],
                waves=waves[i],
                traffic={"dram": dram[i], "cache_to_unit": cache_to_unit[i], "unit_sram": unit_sram[i]},
                compute_s=compute_s[i],
                memory_terms={k: float(v[i]) for k, v in terms.items()},
                candidates=tm.size,
                notes=(f"wave block {int(r[i])}x{int(c[i])} tiles ({int(bm[i])}x{int(bn[i])} outputs)",)
                + warm_notes(machine, residency),
            )

        return Evaluated(latency=latency, order=order, choice=choice)

    def relaxation(self, p: MatmulProblem, machine: Machine, residency: Residency) -> Relaxation:
        """<= every candidate of `space`, term by term. For any candidate (tm, tn, tk, split):
        * compute: waves >= tiles / units, and tiles x 2*tm*tn*kpad = 2*B*(mt*tm)*(nt*tn)*
          (split*kpad) >= 2*B*M*N*K = flops, so compute_s >= flops / (units * unit rate);
        * DRAM: every reuse option reads each operand at least once (passes >= 1), C is written
          unless it stays on chip, and the split-K spill is >= 0: dram >= A + B + C (residency
          applied as in `evaluate`; warm, base.dram_bytes of those reads and writes, which
          never decreases as they grow);
        * cache -> unit: unit_sram = B*split*kpad*mt*nt*(tm*a + tn*b) >= B*K*(M*nt*a + N*mt*b)
          with nt >= ceil(N / max tile), mt >= ceil(M / max tile); the output goes up once, at
          >= min(c, 2 * PARTIAL_BYTES) bytes per element (split = 1: c; split >= 2: 4*split);
        * unit SRAM: waves * tile bytes >= unit_sram / units, bounded as above.
        """
        M, N, K, B = p.m, p.n, p.k, p.batch
        widest = max(TILE_MN)
        dram = sum(float(t.nbytes) for t in (p.a, p.b) if t.name not in residency.resident)
        written = 0.0 if p.c.name in residency.no_writeback else float(p.c.nbytes)
        dram = float(dram_bytes(dram, written, machine, residency)) if residency.warm else dram + written
        streamed = (
            float(B)
            * K
            * (float(M) * ceil_div(N, widest) * p.a_elem_bytes + float(N) * ceil_div(M, widest) * p.b_elem_bytes)
        )
        written = float(B) * M * N * min(p.c_elem_bytes, 2 * PARTIAL_BYTES)
        terms = {"dram": dram / machine.dram_bytes_per_s}
        if machine.cache_bytes_per_s:
            terms["cache_to_unit"] = (streamed + written) / machine.cache_bytes_per_s
        if machine.unit_sram_bytes_per_s:
            terms["unit_sram"] = streamed / machine.units / machine.unit_sram_bytes_per_s
        return Relaxation(
            compute_s=p.flops / machine.compute[p.math_mode],
            memory_terms=terms,
            traffic={"dram": dram, "cache_to_unit": streamed + written},
            why="FLOPs at the peak rate, operands streamed once, compulsory DRAM traffic",
        )


# -- the same search in plain Python ---------------------------------------------------------------
# TiledMatmul.space and .evaluate candidate by candidate, for a search too small to be worth
# importing numpy (search.py: plain_python). Bit-identical: every figure is the same IEEE double
# (or exact integer) operation on the same operands in the same order as in `evaluate` (a Python
# int times a float converts the int as numpy converts an int64; min and max are exact), and the
# best is the least of the same key (latency, DRAM bytes, cache-to-unit bytes, larger tile, fewer
# splits, enumeration order). A change to `evaluate` is a change here too: tests/
# test_startup_imports.py compares the two on random problems and targets. Only the exhaustive
# search runs here; a search --max-candidates cuts (a relaxation) is numpy's.

INF = float("inf")


def plain_space(p: MatmulProblem, machine: Machine) -> list[tuple[int, int, int, int]]:
    """The feasible (tm, tn, tk, split) of TiledMatmul.space, in its order; each is one candidate
    per row block (_row_blocks), the fastest-varying dimension of the enumeration."""
    elem = max(p.a_elem_bytes, p.b_elem_bytes)
    most = max(1, ceil_div(p.k, int(TILE_K[0])))
    return [
        (tm, tn, tk, split)
        for tm, tn, tk, split in product(TILE_MN, TILE_MN, TILE_K, SPLITS)
        if STAGES * (tm + tn) * tk * elem <= machine.unit_sram_bytes and split <= most
    ]


def choose(strategy: str, p: MatmulProblem, machine: Machine, residency: Residency, take=lambda size: True):
    """TiledMatmul's exhaustive choice, searched in plain Python, or None where the limit cuts the
    space or `take(size)` declines it (TiledMatmul.explore asks search.plain_python)."""
    rows = _row_blocks(machine.units)
    tiles_k_split = plain_space(p, machine)
    if not tiles_k_split:  # as matmul.space: the smallest tile is always a candidate of a bound
        tiles_k_split, rows = [(TILE_MN[0], TILE_MN[0], TILE_K[0], SPLITS[0])], rows[:1]
    size = len(tiles_k_split) * len(rows)
    if size > machine.max_candidates or not take(size):
        return None
    best = _best(p, machine, residency, tiles_k_split, rows)
    return attrs.evolve(_choice(strategy, best, machine, residency, size), search=EXHAUSTIVE, space=size)


def _best(p: MatmulProblem, machine: Machine, residency: Residency, tiles_k_split, rows) -> tuple:
    """The least (key, figures) over every candidate; the key ends with the enumeration index.

    A (tile, split) whose compute time or cache and SRAM times (the terms the row block does not
    change) already exceed the best latency found cannot hold the best candidate, so the pairs
    are visited by that floor, least first, and the rest skipped: the least key is the same."""
    M, N, K, B = p.m, p.n, p.k, p.batch
    units = machine.units
    rate = machine.unit_rate(p.math_mode)
    cache = float(machine.cache_bytes)
    cache_rate, sram_rate = machine.cache_bytes_per_s, machine.unit_sram_bytes_per_s
    pairs = []
    for position, (tm, tn, tk, split) in enumerate(tiles_k_split):
        # what the row block does not change, once per (tile, split)
        mt, nt = ceil_div(M, tm), ceil_div(N, tn)
        kpad = ceil_div(ceil_div(K, split), tk) * tk
        tiles = B * mt * nt * split
        waves = ceil_div(tiles, units)
        compute_s = waves * (2.0 * tm * tn * kpad) / rate
        tile_bytes = float((tm * p.a_elem_bytes + tn * p.b_elem_bytes) * kpad)
        unit_sram = tiles * tile_bytes
        out_tiles = float(B * mt * nt) * (tm * tn)
        cache_to_unit = unit_sram + (out_tiles * PARTIAL_BYTES * split if split > 1 else out_tiles * p.c_elem_bytes)
        workspace = B * M * N * PARTIAL_BYTES * float(split)
        spill = workspace if split > 1 and workspace > cache else 0.0
        others = {}
        if cache_rate:
            others["cache_to_unit"] = cache_to_unit / cache_rate
        if sram_rate:
            others["unit_sram"] = waves * tile_bytes / sram_rate
        pair = (tm, tn, tk, split, mt, nt, tiles, waves, compute_s, unit_sram, cache_to_unit, spill, others)
        pairs.append((max([compute_s, *others.values()]), position, pair))
    pairs.sort(key=lambda floor_position_pair: floor_position_pair[0])
    best: tuple | None = None
    for floor, position, pair in pairs:
        if best is not None and floor > best[0][0]:
            break
        found = _best_block(p, machine, residency, pair, rows, position * len(rows))
        if best is None or found[0] < best[0]:
            best = found
    assert best is not None  # every space has a candidate
    return best


def _best_block(p: MatmulProblem, machine: Machine, residency: Residency, pair, rows, first: int) -> tuple:
    """The least (key, figures) of one (tile, split) over the row blocks; `first` is the
    enumeration index of its first candidate."""
    tm, tn, tk, split, mt, nt, tiles, waves, compute_s, unit_sram, cache_to_unit, spill, others = pair
    M, N, B = p.m, p.n, p.batch
    a = 0.0 if p.a.name in residency.resident else float(p.a.nbytes)
    b = 0.0 if p.b.name in residency.resident else float(p.b.nbytes)
    cache = float(machine.cache_bytes)
    written = 0.0 if p.c.name in residency.no_writeback else float(p.c.nbytes)
    concurrent = min(machine.units, tiles)
    best: tuple | None = None
    for index, rows_of_block in enumerate(rows, start=first):
        r = min(rows_of_block, mt)
        c = min(ceil_div(min(concurrent, mt * nt), r), nt)
        bm, bn = min(r * tm, M), min(c * tn, N)
        a_passes, b_passes = ceil_div(N, bn), ceil_div(M, bm)
        dram = a * a_passes + b * b_passes
        dram = min(dram, a + b * b_passes if (p.a.nbytes / B) * bm / M <= cache / 2 else INF)
        dram = min(dram, a * a_passes + b if (p.b.nbytes / B) * bn / N <= cache / 2 else INF)
        if (p.a.nbytes + p.b.nbytes) / B <= cache:
            dram = min(dram, a + b)
        if residency.warm:  # base.dram_bytes of (dram + spill, written + spill)
            dram = max(dram + spill - cache, 0.0) + max(written + spill - cache, 0.0)
        else:
            dram += written
            dram += 2 * spill
        terms = {"dram": dram / machine.dram_bytes_per_s, **others}
        latency = max(compute_s, max(terms.values()))
        key = (latency, dram, cache_to_unit, -(tm * tn), split, index)
        if best is None or key < best[0]:
            figures = (tm, tn, tk, split, tiles, concurrent, waves, dram, unit_sram, compute_s, terms, r, c, bm, bn)
            best = (key, figures)
    assert best is not None  # every pair has a row block
    return best


def _choice(strategy: str, best: tuple, machine: Machine, residency: Residency, size: int) -> MappingChoice:
    tm, tn, tk, split, tiles, concurrent, waves, dram, unit_sram, compute_s, terms, r, c, bm, bn = best[1]
    return finish(
        strategy,
        tile={"m": tm, "n": tn, "k": tk},
        split=split,
        tiles=tiles,
        concurrent=concurrent,
        waves=waves,
        traffic={"dram": dram, "cache_to_unit": best[0][2], "unit_sram": unit_sram},
        compute_s=compute_s,
        memory_terms=terms,
        candidates=size,
        notes=(f"wave block {r}x{c} tiles ({bm}x{bn} outputs)",) + warm_notes(machine, residency),
    )


class VectorMatmul(MappingStrategy):
    """The same product on the vector (CUDA-core) units: no tensor-core tile padding, so a
    matrix too thin for tensor tiles (depthwise convolution: n = 1 per group) is not charged
    for padding it would never execute. Operands stream once; the lower of this and the tiled
    mapping wins. Charged at the fastest vector rate that holds the operands' precision
    (half-precision vector math is 2-4x the fp32 rate on data-centre GPUs)."""

    name = "vector-matmul"
    problem_types = (MatmulProblem,)
    models_warm = True

    def explore(self, p: MatmulProblem, machine: Machine, residency: Residency) -> MappingChoice:
        reads = sum(t.nbytes for t in (p.a, p.b) if t.name not in residency.resident)
        writes = 0 if p.c.name in residency.no_writeback else p.c.nbytes
        dram = float(dram_bytes(reads, writes, machine, residency))
        element = ELEMENT_TYPE.get(p.math_mode, p.math_mode)
        return finish(
            self.name,
            tile={},
            split=1,
            tiles=machine.units,
            concurrent=machine.units,
            waves=1,
            traffic={"dram": dram},
            compute_s=machine.vector_time(p.flops, 0.0, element),
            memory_terms={"dram": dram / machine.dram_bytes_per_s},
            candidates=1,
            notes=(f"vector units at the fastest rate for {element} operands",) + warm_notes(machine, residency),
            search=EXHAUSTIVE,
            space=1,
        )
