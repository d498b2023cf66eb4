"""Bounded search that never raises the bound.

The bound of an operator is the minimum latency over its mapping space. A search that looks
at only some candidates and keeps the best of those can only over-estimate that minimum: the
old explorer, cut at 50 candidates, put the bound of an 8192^3 bf16 GEMM on an H200 2.9x above
its measured time. So a `GridStrategy` does one of two things, and says which:

* the space fits the limit (`machine.max_candidates`; the default covers every shipped
  space): it evaluates every mapping and returns the minimum (search = "exhaustive");
* the limit cuts it: it still evaluates the first `limit` candidates (their best is reported
  in the notes, as a mapping that exists), but the latency it returns is a *relaxation*, a
  closed form that each strategy proves <= every mapping of its full space: the useful FLOPs
  at the peak rate, the compulsory traffic at each level's bandwidth (search = "relaxation").

The relaxation does not depend on the limit, and it is <= the exhaustive minimum, so lowering
the limit never raises the bound (it can only fall from the minimum to the relaxation). Its
proofs are in exact arithmetic; the two sides round differently in float64 (flops / rate
against waves x tile FLOPs / unit rate), so the relaxation is scaled by 1 - 2^-40 to keep it
<= a candidate that meets it exactly (a 1e-12 relative loosening, far below any noise).
tests/test_search_soundness.py checks both properties with hypothesis, against brute force.

Small searches without numpy: importing numpy costs a fresh process 60 to 100 ms on a 2-core
machine, a quarter of `tensorforge predict -w <one GEMM>`, whose searches evaluate a few thousand
candidates. So the two searches a GEMM runs have plain-Python twins: the bound's tiled-matmul
search (matmul.py) and the estimate's configurations of a library's GEMM (estimate/gemm.py).
A twin does the same IEEE double operations in the same order on each candidate and breaks ties
by the same key, so its answer is bit-identical to numpy's (tests/test_startup_imports.py holds
the twins equal on random problems). It is slower per candidate, so it runs only while numpy is
not loaded and this process's twins have evaluated fewer than PLAIN_BUDGET candidates
(`plain_python`): one GEMM (a cold and a warm search of 4,000 candidates each on an H200) fits;
the searches of a suite do not (the conductor calls `numpy_from_now_on`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from tensorforge.bound.mappings.base import (
    EXHAUSTIVE,
    RELAXATION,
    Machine,
    MappingChoice,
    MappingStrategy,
    Residency,
    finish,
)

if TYPE_CHECKING:
    import numpy as np

# Relative margin that keeps a relaxation below an exactly-met candidate despite float rounding.
ROUNDING = 2.0**-40

# Candidates a process's plain-Python twins may evaluate while numpy is not loaded (the docstring)
PLAIN_BUDGET = 20_000
_plain_left = PLAIN_BUDGET


def plain_python(candidates: int) -> bool:
    """Whether a search of `candidates` candidates runs in plain Python; if so they are counted."""
    global _plain_left
    if "numpy" in sys.modules or candidates > _plain_left:
        return False
    _plain_left -= candidates
    return True


def numpy_from_now_on() -> None:
    """Every later search of this process uses numpy: a caller about to run many says so once."""
    global _plain_left
    _plain_left = 0


@attrs.frozen
class Evaluated:
    """Every candidate of a grid, evaluated: `latency` per candidate (seconds), `order` the
    candidates sorted by the strategy's deterministic tie-break key (best first), and
    `choice(i)` the MappingChoice of candidate i."""

    latency: np.ndarray
    order: np.ndarray
    choice: Callable[[int], MappingChoice]


@attrs.frozen
class Relaxation:
    """A lower bound on every mapping of a space: compute time and one time per memory level,
    each <= the same term of every candidate (so their max is <= every candidate's latency)."""

    compute_s: float
    memory_terms: dict[str, float]
    traffic: dict[str, float]  # the bytes per level the memory terms charge
    why: str


class GridStrategy(MappingStrategy):
    """A strategy whose mappings form a finite grid, enumerated in a fixed order.

    Subclasses implement `space` (the full feasible grid, as parallel arrays), `evaluate` (all
    the candidates of a grid at once) and `relaxation` (a bound on the whole space, with its
    proof in the docstring); `explore` is shared and sound for any limit.
    """

    def space(self, problem, machine: Machine) -> list[np.ndarray]:
        raise NotImplementedError

    def evaluate(self, problem, machine: Machine, residency: Residency, grid: list[np.ndarray]) -> Evaluated:
        raise NotImplementedError

    def relaxation(self, problem, machine: Machine, residency: Residency) -> Relaxation:
        raise NotImplementedError

    def explore(self, problem, machine: Machine, residency: Residency) -> MappingChoice:
        grid = self.space(problem, machine)
        size = len(grid[0])
        limit = min(size, machine.max_candidates)
        evaluated = self.evaluate(problem, machine, residency, [a[:limit] for a in grid])
        best = evaluated.choice(int(evaluated.order[0]))
        if limit == size:
            return attrs.evolve(best, search=EXHAUSTIVE, space=size, candidates=size)
        bound = self.relaxation(problem, machine, residency)
        below = 1.0 - ROUNDING
        return finish(
            self.name,
            tile={},
            split=1,
            tiles=0,
            concurrent=0,
            waves=0,
            traffic=bound.traffic,
            compute_s=bound.compute_s * below,
            memory_terms={level: t * below for level, t in bound.memory_terms.items()},
            candidates=limit,
            search=RELAXATION,
            space=size,
            notes=(
                (
                    f"search cut at {limit} of {size} candidates (--max-candidates): the bound is a "
                    f"relaxation, <= every mapping of the space ({bound.why})"
                ),
                (f"best of the {limit} evaluated: {describe(best)}, {best.latency_s:.6g} s (not a bound)"),
            ),
        )


def describe(choice: MappingChoice) -> str:
    """A mapping in a few words: tile extents, split, tiles and waves."""
    tile = "x".join(f"{k}{v}" for k, v in choice.tile.items()) or choice.strategy
    split = f" split{choice.split}" if choice.split > 1 else ""
    return f"{tile}{split}, {choice.tiles} tiles, {choice.waves} waves"
