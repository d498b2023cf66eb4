"""GEMMs and implicit-GEMM convolutions on a library's tile menu.

The kernels traced on Hopper are data parallel (whole waves of tiles); a tile costs its main
loop (or its operand feed, for small tiles) and a fixed overhead (pipeline fill, epilogue).

For every tile of the family's menu and every split-K factor (and, on families with persistent
kernels, a stream-K variant that balances the last wave), the geometry is fixed by the shape:
  tiles  = batch * ceil(M/tm) * ceil(N/tn) * split           (tile quantization)
  waves  = ceil(tiles / units), or tiles / units for stream-K   (wave quantization)
  per tile: 2*tm*tn*k_slice FLOPs and (tm*ea + tn*eb)*k_slice operand bytes
Coefficients then give the time of a tile, max(FLOPs at the mainloop rate (an implicit-GEMM
convolution's less its filter taps' gathers: tap_share), operand bytes at the unit's feed rate) +
a fixed tile overhead, a prologue once per kernel (first operands from DRAM,
last epilogue), and the memory time, compulsory bytes (+ split-K
partials) at the achieved streaming bandwidth; the configuration with the least time is the one
the library's heuristic is assumed to pick. Geometry and time are separate so calibration can fit
coefficients over many probe shapes at once (fit.py) with the very code that predicts.

The configurations are columns of numpy arrays or, for a plain GEMM while numpy is not loaded
(tensorforge/bound/mappings/search.py says why), of Python lists, computed candidate by candidate
with the same operations in the same order: bit-identical (tests/test_startup_imports.py).
`times` and `best` take either; the rest only index the columns.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import attrs

from tensorforge.bound.mappings.base import ceil_div
from tensorforge.bound.mappings.search import plain_python
from tensorforge.estimate.menus import Menu

if TYPE_CHECKING:
    import numpy as np

ALIGN_BYTES = 16  # TMA and vectorised loads need 16-byte aligned rows
# Rows aligned to this many bytes but not ALIGN_BYTES run narrower vector loads (CUTLASS align2 /
# align4 kernels for 16-bit data), not the one-element fallback (Menu.fallback_partial)
PARTIAL_ALIGN_BYTES = 4
READ_DOMINATED = 8.0  # operand bytes per byte written from which a GEMM is a read stream (a GEMV)


@attrs.frozen
class GemmShape:
    """A MatmulProblem reduced to what the estimate needs, plus its implementation facts."""

    batch: int
    m: int
    n: int
    k: int
    mode: str
    a_elem: int
    b_elem: int
    c_elem: int
    a_bytes: float
    b_bytes: float
    c_bytes: float
    aligned: bool = True
    partial_aligned: bool = False  # not aligned, but every row a multiple of PARTIAL_ALIGN_BYTES
    k_padded: int = 0  # K after channel padding (convolutions); 0 = K
    conv: str = ""  # '', 'pointwise', 'kxk'
    conv_aligned: bool = True  # channels per group a multiple of 16 bytes
    conv_channels: int = 0  # input channels per group (per filter tap) of a convolution

    @property
    def k_run(self) -> int:
        return self.k_padded or self.k

    @property
    def read_dominated(self) -> bool:
        """A GEMV-like stream: one operand read once, little written (EstimateCoefficients'
        read_stream_* apply)."""
        return self.a_bytes + self.b_bytes >= READ_DOMINATED * max(self.c_bytes, 1.0)


def is_aligned(leading_dims, elem_bytes, align: int = ALIGN_BYTES) -> bool:
    return all((int(ld) * int(e)) % align == 0 for ld, e in zip(leading_dims, elem_bytes))


@lru_cache(maxsize=4096)
def geometry(s: GemmShape, menu: Menu, units: int, cache_bytes: float) -> dict[str, np.ndarray]:
    """Every configuration of the menu for this shape, as arrays (one row per configuration).
    Cached: predicting a suite or fitting coefficients asks for the same shapes again and
    again; callers never modify the arrays. A plain GEMM's (no filter taps: tap_share is 1) may
    come as lists (the module's docstring)."""
    if not s.conv:
        configurations = _configurations(s, menu, units, cache_bytes)
        if plain_python(len(configurations)):
            return columns(configurations)  # type: ignore[return-value]
    import numpy as np

    tiles_menu = np.array(menu.tiles_for(s.mode), dtype=np.int64)
    splits = np.array(menu.splits, dtype=np.int64)
    tm = np.repeat(tiles_menu[:, 0], splits.size)
    tn = np.repeat(tiles_menu[:, 1], splits.size)
    split = np.tile(splits, len(tiles_menu))
    k = s.k_run
    step = menu.k_step
    keep = split <= max(1, ceil_div(k, max(step, 64)))
    if menu.split_k_min_k and k < menu.split_k_min_k:
        keep &= split == 1
    tm, tn, split = tm[keep], tn[keep], split[keep]
    stream_k = np.zeros(tm.size, dtype=bool)
    if menu.stream_k:  # stream-K variants of the unsplit configurations
        one = split == 1
        tm, tn, split = (
            np.concatenate([tm, tm[one]]),
            np.concatenate([tn, tn[one]]),
            np.concatenate([split, split[one]]),
        )
        stream_k = np.concatenate([stream_k, np.ones(int(one.sum()), dtype=bool)])
    if menu.tensor_cores:
        mt, nt = ceil_div(s.m, tm), ceil_div(s.n, tn)
        rows, cols = tm, tn
    else:  # CPU blocks do not pad: edge blocks are smaller
        mt, nt = ceil_div(s.m, tm), ceil_div(s.n, tn)
        rows, cols = np.minimum(tm, s.m), np.minimum(tn, s.n)
    out_tiles = s.batch * mt * nt
    tiles = out_tiles * split
    k_slice = ceil_div(ceil_div(k, split), step) * step
    waves = np.where(stream_k, tiles / units, ceil_div(tiles, units).astype(float))
    # stream-K only pays off past one wave; below it, it is just the plain launch
    valid = ~stream_k | (tiles > units)
    if menu.split_k_below_one_wave:
        valid &= (split == 1) | (out_tiles < units)
    workspace = np.where(split > 1, 2.0 * s.batch * s.m * s.n * 4 * split, 0.0)
    workspace = np.where(workspace / 2 > cache_bytes, workspace, 0.0)
    dram = s.a_bytes + s.b_bytes + s.c_bytes + workspace
    geo = {
        "tm": tm,
        "tn": tn,
        "split": split,
        "stream_k": stream_k,
        "tiles": tiles,
        "waves": waves,
        "flops_tile": 2.0 * rows * cols * k_slice,
        "feed_tile": (rows * s.a_elem + cols * s.b_elem) * k_slice.astype(float),
        "dram": dram,
        "kernels": 1 + (menu.split_k_kernels - 1) * (split > 1).astype(np.int64),
    }
    return {key: value[valid] for key, value in geo.items()}


COLUMNS = ("tm", "tn", "split", "stream_k", "tiles", "waves", "flops_tile", "feed_tile", "dram", "kernels")


def columns(rows: list[tuple]) -> dict[str, list]:
    """`_configurations`' rows as `geometry`'s columns, in lists."""
    return {key: [row[j] for row in rows] for j, key in enumerate(COLUMNS)}


def _configurations(s: GemmShape, menu: Menu, units: int, cache_bytes: float) -> list[tuple]:
    """`geometry`'s rows one by one (a tuple of COLUMNS each), in its order: tiles of the menu,
    each with every split, then the stream-K variants of the unsplit ones; invalid ones dropped."""
    k, step = s.k_run, menu.k_step
    most = max(1, ceil_div(k, max(step, 64)))
    plain = [
        (tm, tn, split, False)
        for tm, tn in menu.tiles_for(s.mode)
        for split in menu.splits
        if split <= most and not (menu.split_k_min_k and k < menu.split_k_min_k and split != 1)
    ]
    if menu.stream_k:
        plain += [(tm, tn, split, True) for tm, tn, split, _ in plain if split == 1]
    rows = []
    for tm, tn, split, stream_k in plain:
        mt, nt = ceil_div(s.m, tm), ceil_div(s.n, tn)
        r, c = (tm, tn) if menu.tensor_cores else (min(tm, s.m), min(tn, s.n))
        out_tiles = s.batch * mt * nt
        tiles = out_tiles * split
        if stream_k and not tiles > units:  # (geometry's `valid`)
            continue
        if menu.split_k_below_one_wave and not (split == 1 or out_tiles < units):
            continue
        k_slice = ceil_div(ceil_div(k, split), step) * step
        waves = float(tiles) / float(units) if stream_k else float(ceil_div(tiles, units))
        workspace = 2.0 * s.batch * s.m * s.n * 4 * split if split > 1 else 0.0
        workspace = workspace if workspace / 2 > cache_bytes else 0.0
        dram = s.a_bytes + s.b_bytes + s.c_bytes + workspace
        flops_tile, feed_tile = 2.0 * r * c * k_slice, (r * s.a_elem + c * s.b_elem) * float(k_slice)
        kernels = 1 + (menu.split_k_kernels - 1) * int(split > 1)
        rows.append((tm, tn, split, stream_k, tiles, waves, flops_tile, feed_tile, dram, kernels))
    return rows


@attrs.frozen
class TapCost:
    """The im2col gather each filter tap of an implicit-GEMM convolution starts, as the channels
    of main loop it costs (ConvCoefficients.kxk_tap_* says why each part is there)."""

    channels: float  # the gather's cost in channels of the main loop, at a tile of `tile` area
    conv_channels: int  # the convolution's input channels per group (per tap)
    tile: float = 0.0  # rows x cols at which `channels` holds; 0 = every tile the same
    overlap: float = 1.0  # p-norm of gather and math: 1 = in series, large = hidden under the math


def tap_share(geo: dict[str, np.ndarray], tap: TapCost | None) -> np.ndarray | float:
    """The share of the main-loop rate each configuration keeps beside its taps' gathers."""
    if tap is None or tap.channels <= 0:
        return 1.0
    ratio = tap.channels / max(1, tap.conv_channels)
    if tap.tile > 0:
        ratio = ratio * tap.tile / (geo["tm"] * geo["tn"])
    return (1.0 + ratio**tap.overlap) ** (-1.0 / tap.overlap)


@attrs.frozen
class GemmRates:
    """The coefficients a GEMM time needs, already turned into rates for one shape."""

    unit_rate: float  # FLOP/s per unit at the compute ceiling
    efficiency: float  # mainloop efficiency x conv/fp32/unaligned factors in force
    feed_bytes_per_s: float  # per unit; inf = unlimited
    tile_overhead_s: float
    stream_bytes_per_s: float
    launch_s: float
    prologue_s: float = 0.0  # once per kernel: first operand fetch + last epilogue
    stream_fixed_s: float = 0.0  # once per kernel, memory-bound side only
    tap: TapCost | None = None  # an implicit-GEMM convolution's per-tap gather (tap_share)


def times(geo: dict[str, np.ndarray], r: GemmRates) -> dict[str, np.ndarray]:
    """compute, memory and total time of every configuration."""
    if isinstance(geo["tm"], list):
        return _times_python(geo, r)
    import numpy as np

    rate = r.unit_rate * r.efficiency * tap_share(geo, r.tap)
    t_tile = np.maximum(geo["flops_tile"] / rate, geo["feed_tile"] / r.feed_bytes_per_s) + r.tile_overhead_s
    compute = geo["waves"] * t_tile + np.where(geo["stream_k"], r.tile_overhead_s, 0.0) + r.prologue_s
    memory = geo["dram"] / r.stream_bytes_per_s + r.prologue_s + r.stream_fixed_s
    total = np.maximum(compute, memory) + geo["kernels"] * r.launch_s
    return {"compute": compute, "memory": memory, "total": total}


def best(geo: dict[str, np.ndarray], r: GemmRates) -> int:
    """Index of the configuration the library picks: least time, then least compute time
    (a memory-bound shape ties on time), fewer splits, bigger tiles, the enumeration order."""
    t = times(geo, r)
    if isinstance(geo["tm"], list):
        keys = zip(t["total"], t["compute"], geo["split"], (-(tm * tn) for tm, tn in zip(geo["tm"], geo["tn"])))
        return min((key + (i,) for i, key in enumerate(keys)))[-1]
    import numpy as np

    order = np.lexsort((np.arange(t["total"].size), -(geo["tm"] * geo["tn"]), geo["split"], t["compute"], t["total"]))
    return int(order[0])


def _times_python(geo: dict, r: GemmRates) -> dict[str, list[float]]:
    """`times` on list columns, configuration by configuration, in numpy's order of operations."""
    out: dict[str, list[float]] = {"compute": [], "memory": [], "total": []}
    for i in range(len(geo["tm"])):
        rate = r.unit_rate * r.efficiency * tap_share({"tm": geo["tm"][i], "tn": geo["tn"][i]}, r.tap)
        t_tile = max(geo["flops_tile"][i] / rate, geo["feed_tile"][i] / r.feed_bytes_per_s) + r.tile_overhead_s
        compute = geo["waves"][i] * t_tile + (r.tile_overhead_s if geo["stream_k"][i] else 0.0) + r.prologue_s
        memory = geo["dram"][i] / r.stream_bytes_per_s + r.prologue_s + r.stream_fixed_s
        out["compute"].append(compute)
        out["memory"].append(memory)
        out["total"].append(max(compute, memory) + geo["kernels"][i] * r.launch_s)
    return out


def describe(geo: dict[str, np.ndarray], i: int) -> str:
    split = int(geo["split"][i])
    text = f"{int(geo['tm'][i])}x{int(geo['tn'][i])}"
    if split > 1:
        text += f" split-K {split}"
    if geo["stream_k"][i]:
        text += " stream-K"
    waves = float(geo["waves"][i])
    return f"{text}, {int(geo['tiles'][i])} tiles, {waves:.3g} waves"


def pick(geo: dict[str, np.ndarray], i: int) -> dict[str, np.ndarray]:
    return {key: value[i : i + 1] for key, value in geo.items()}


def scalar(values: dict[str, np.ndarray], key: str, i: int | None = 0) -> float:
    return float(values[key][i])
