"""The tiled-matmul search in plain Python: TiledMatmul.space and .evaluate (matmul.py) candidate by
candidate, for a search small enough not to be worth importing numpy (tensorforge/bound/
without_numpy.py says when, and why).

Bit-identical to numpy's: every figure is the same IEEE double (or exact integer) operation on
the same operands in the same order as in `evaluate` (a Python int times a float converts the
int as numpy converts an int64; min and max are exact), the candidates are enumerated in the
same order and the best is the least of the same key (latency, DRAM bytes, cache-to-unit bytes,
larger tile, fewer splits, enumeration order). A change to `evaluate` is a change here too:
tests/test_startup_imports.py compares the two on random problems and targets.

Only the exhaustive search runs here; a search that --max-candidates cuts (a relaxation) is
numpy's.
"""

from itertools import product

import attrs

from tensorforge.bound import without_numpy
from tensorforge.bound.mappings.base import (
    EXHAUSTIVE,
    Machine,
    MappingChoice,
    Residency,
    ceil_div,
    finish,
    warm_notes,
)
from tensorforge.bound.mappings.matmul import PARTIAL_BYTES, SPLITS, STAGES, TILE_K, TILE_MN, _row_blocks
from tensorforge.workloads.problems import MatmulProblem

INF = float("inf")


def space(p: MatmulProblem, machine: Machine) -> list[tuple[int, int, int, int]]:
    """The feasible (tm, tn, tk, split) of TiledMatmul.space, in its order; each is one candidate
    per row block (_row_blocks), the fastest-varying dimension of the enumeration."""
    elem = max(p.a_elem_bytes, p.b_elem_bytes)
    most = max(1, ceil_div(p.k, int(TILE_K[0])))
    return [
        (tm, tn, tk, split)
        for tm, tn, tk, split in product(TILE_MN, TILE_MN, TILE_K, SPLITS)
        if STAGES * (tm + tn) * tk * elem <= machine.unit_sram_bytes and split <= most
    ]


def exhaustive(strategy: str, p: MatmulProblem, machine: Machine, residency: Residency) -> MappingChoice | None:
    """TiledMatmul's exhaustive choice, or None where numpy's search runs instead (the limit cuts
    the space, or without_numpy declines)."""
    return choose(strategy, p, machine, residency, without_numpy.take)


def choose(strategy: str, p: MatmulProblem, machine: Machine, residency: Residency, take=lambda size: True):
    """TiledMatmul's exhaustive choice, or None where the limit cuts the space or `take(size)`
    declines it."""
    rows = _row_blocks(machine.units)
    tiles_k_split = space(p, machine)
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
