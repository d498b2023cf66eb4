"""What the Core accepts: sizes it computes exactly, in bounded memory and time.

The mappings evaluate every candidate at once with numpy int64/float64 arrays. Past some size
an int64 product wraps round (dimensions of 2^34 gave negative times) and a Python int beyond
2^63 cannot enter numpy at all. Rather than compute silently wrong numbers, the Core refuses,
in one line naming the workload, the operator and the field, any problem outside these limits:

* every dimension (batch, m, n, k, heads, q_len, kv_len, head_dim, ...) is 1 ... 2^31 - 1;
* every operand and result of a matmul or an attention holds at most 2^48 elements;
* every tensor is at most 2^53 bytes (so its byte count converts to float64 exactly), and
  every streaming problem's FLOPs are finite and >= 0;
* a target has at most 2^31 - 1 processing units.

Within them every int64 intermediate of the shipped mappings stays below 2^62 (the worst is
split * batch * ceil(M/tm) * ceil(N/tn) <= 16 * 2^48, and the causal floor sum in attention,
below 2^61 for sequences under 2^31); byte and FLOP totals are float64. Memory and time per
operator are independent of the sizes (a few thousand candidates, closed forms, no array that
grows with a dimension). The limits are far beyond any device (2^48 bf16 elements = 512 TiB).
"""

import math

from tensorforge.errors import TensorForgeError
from tensorforge.workloads.problems import AttentionProblem, MatmulProblem, StreamProblem

MAX_DIM = 2**31 - 1
MAX_ELEMENTS = 2**48
MAX_TENSOR_BYTES = 2**53
MAX_UNITS = 2**31 - 1


def _dims(where: str, **dims: int) -> None:
    for name, value in dims.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TensorForgeError(f"{where}: {name} must be an integer, got {value!r}")
        if not 1 <= value <= MAX_DIM:
            raise TensorForgeError(
                f"{where}: {name}={value} is outside 1..{MAX_DIM} (2^31 - 1), the range the Core computes exactly"
            )


def _elements(where: str, **counts: int) -> None:
    for name, value in counts.items():
        if value > MAX_ELEMENTS:
            raise TensorForgeError(
                f"{where}: {name} holds {value} elements, more than the {MAX_ELEMENTS} (2^48) the Core computes exactly"
            )


def _tensors(where: str, problem) -> None:
    for t in problem.reads() + problem.writes():
        if isinstance(t.nbytes, bool) or not isinstance(t.nbytes, int) or not 0 <= t.nbytes <= MAX_TENSOR_BYTES:
            raise TensorForgeError(
                f"{where}: tensor {t.name!r} has {t.nbytes!r} bytes; the Core "
                f"accepts an integer in 0..{MAX_TENSOR_BYTES} (2^53)"
            )


def check_problem(where: str, problem) -> None:
    """Raise a one-line TensorForgeError when `problem` is outside what the Core computes
    exactly. `where` names the workload and operator for the message."""
    if isinstance(problem, MatmulProblem):
        p = problem
        _dims(where, batch=p.batch, m=p.m, n=p.n, k=p.k)
        _elements(where, A=p.batch * p.m * p.k, B=p.batch * p.k * p.n, C=p.batch * p.m * p.n)
    elif isinstance(problem, AttentionProblem):
        a = problem
        _dims(
            where,
            batch=a.batch,
            heads=a.heads,
            kv_heads=a.kv_heads,
            q_len=a.q_len,
            kv_len=a.kv_len,
            head_dim=a.head_dim,
        )
        if a.heads % a.kv_heads:
            raise TensorForgeError(f"{where}: heads={a.heads} is not a multiple of kv_heads={a.kv_heads}")
        if a.q_len > a.kv_len:
            raise TensorForgeError(
                f"{where}: q_len={a.q_len} exceeds kv_len={a.kv_len} (queries sit at the end of the key sequence)"
            )
        _elements(where, Q=a.batch * a.heads * a.q_len * a.head_dim, KV=a.batch * a.kv_heads * a.kv_len * a.head_dim)
    elif isinstance(problem, StreamProblem):
        flops = problem.flops
        try:
            ok = not isinstance(flops, bool) and math.isfinite(float(flops)) and flops >= 0
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise TensorForgeError(f"{where}: FLOPs must be a finite number >= 0, got {flops!r}")
    _tensors(where, problem)


def check_units(target_name: str, units: int) -> None:
    if not 1 <= units <= MAX_UNITS:
        raise TensorForgeError(
            f"target {target_name!r}: pe_array.units={units} is outside "
            f"1..{MAX_UNITS} (2^31 - 1), the range the Core computes exactly"
        )
