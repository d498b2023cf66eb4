"""Whether a small search runs in plain Python instead of numpy.

Why: importing numpy costs a fresh process 60 to 100 ms on a 2-core machine, a quarter of
`tensorforge predict -w <one GEMM>`, whose searches evaluate a few thousand candidates. So the two
searches a GEMM runs each have a plain-Python twin: the bound's tiled-matmul mapping search
(bound/mappings/matmul_python.py) and the estimate's configurations of a library's GEMM
(estimate/gemm.py). A twin does the same IEEE double operations in the same order on each
candidate, and breaks ties by the same keys, so its answer is bit-identical to numpy's
(tests/test_startup_imports.py holds the twins equal on random problems).

A twin is slower per candidate, so it runs only while numpy is not loaded and this process's
twins have evaluated fewer than BUDGET candidates: one GEMM (a cold and a warm search of 4,000
candidates each on an H200, about 20 ms) fits; the searches of a suite do not (the conductor
declines at once, and numpy's vector code is faster from the first search on).
"""

import sys

BUDGET = 20_000
_left = BUDGET


def take(candidates: int) -> bool:
    """Whether a search of `candidates` candidates runs in plain Python; if so they are counted."""
    global _left
    if "numpy" in sys.modules or candidates > _left:
        return False
    _left -= candidates
    return True


def decline() -> None:
    """Every later search of this process uses numpy: a caller about to run many says so once."""
    global _left
    _left = 0
