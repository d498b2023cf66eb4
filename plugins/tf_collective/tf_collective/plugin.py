"""Collectives as workloads: one collective operation over several devices of a system target.

Sizes follow nccl-tests (tensorforge.workloads.collectives explains each); give `bytes`, or `count`
elements of `dtype`. `ranks=0` (the default) means every device of the target, so one suite
predicts and measures on 2 or 8 GPUs alike. The bound comes from the Core's collective mapping
(the target's links, or the calibrated curve once the sweep probes have run).
"""

import attrs

from tensorforge import (
    COLLECTIVE_OPS,
    DTYPE_BYTES,
    CollectiveProblem,
    Operator,
    Tensor,
    WorkloadKind,
    hookimpl,
    parse_dtype,
)

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


@attrs.frozen
class CollectiveParams:
    op: str = attrs.field(metadata={"choices": COLLECTIVE_OPS})
    bytes: int = attrs.field(default=None, metadata={"min": 1})
    count: int = attrs.field(default=None, metadata={"min": 1})
    dtype: str = attrs.field(default="bf16", converter=parse_dtype)
    ranks: int = attrs.field(default=0, metadata={"min": 0})

    def __attrs_post_init__(self):
        if (self.bytes is None) == (self.count is None):
            raise ValueError(
                "give exactly one of bytes (the buffer size, nccl-tests' convention) or count (elements of dtype)"
            )
        if self.bytes is not None and self.bytes % DTYPE_BYTES[self.dtype]:
            raise ValueError(
                f"bytes={self.bytes} is not a whole number of {self.dtype} elements ({DTYPE_BYTES[self.dtype]} B each)"
            )
        if self.ranks == 1:
            raise ValueError("ranks=1 moves nothing; use ranks >= 2, or 0 for every device of the target")

    @property
    def nbytes(self) -> int:
        return self.bytes if self.bytes is not None else self.count * DTYPE_BYTES[self.dtype]

    @property
    def math_mode(self) -> str:
        return "fp32"  # a reduction's additions run on the vector units


def _preset(op: str, size: int, dtype: str = "bf16"):
    return {"op": op, "bytes": size, "dtype": dtype}


class Collective(WorkloadKind):
    name = "collective"
    description = (
        "one collective over several devices (all_reduce, all_gather, reduce_scatter, "
        "all_to_all, broadcast, send_recv); bytes or count; ranks=0: every device"
    )
    params_type = CollectiveParams
    presets = {
        "all_reduce_4k": _preset("all_reduce", 4 * KiB),
        "all_reduce_1m": _preset("all_reduce", 1 * MiB),
        "all_reduce_64m": _preset("all_reduce", 64 * MiB),
        "all_reduce_256m": _preset("all_reduce", 256 * MiB),
        "all_reduce_1g": _preset("all_reduce", 1 * GiB),
        "all_gather_64m": _preset("all_gather", 64 * MiB),
        "all_gather_1g": _preset("all_gather", 1 * GiB),
        "reduce_scatter_64m": _preset("reduce_scatter", 64 * MiB),
        "reduce_scatter_1g": _preset("reduce_scatter", 1 * GiB),
        "all_to_all_256m": _preset("all_to_all", 256 * MiB),
        "broadcast_256m": _preset("broadcast", 256 * MiB),
    }
    # None in the shared default suite: a collective needs a system target, and the single-GPU
    # suites stay as they were. The torch-distributed backend brings its own suite.
    default_suite = ()

    def operators(self, p: CollectiveParams):
        e = DTYPE_BYTES[p.dtype]
        S = p.nbytes
        n = max(2, p.ranks)
        # Per device: what it holds before and after (nccl-tests' buffers).
        in_bytes = {"all_gather": S // n, "reduce_scatter": S}.get(p.op, S)
        out_bytes = {"all_gather": S, "reduce_scatter": S // n}.get(p.op, S)
        problem = CollectiveProblem(
            op=p.op,
            bytes=S,
            ranks=p.ranks,
            elem_bytes=e,
            input=Tensor("input", in_bytes),
            output=Tensor("output", out_bytes),
        )
        return (Operator(p.op, problem),)


@hookimpl
def tensorforge_register_workloads(register):
    register(Collective())
