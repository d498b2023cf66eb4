"""What the Core refuses (tensorforge/workloads/limits.py), and that what it accepts it computes exactly
and in bounded memory: no int64 wrap-round (dims of 2^34 gave negative times), no traceback
(2^63 did not fit numpy), no array as long as a sequence (10^8 tokens took 23.7 GB)."""

import math
import tracemalloc

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorforge.bound.mappings.base import Machine, Residency, ceil_div
from tensorforge.bound.mappings.matmul import TiledMatmul
from tensorforge.bound.model import predict
from tensorforge.cli.main import make_cli
from tensorforge.errors import TensorForgeError
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.limits import MAX_DIM, MAX_ELEMENTS, MAX_TENSOR_BYTES, MAX_UNITS, check_problem
from tensorforge.workloads.problems import AttentionProblem, MatmulProblem, StreamProblem, Tensor
from tensorforge.workloads.suite import resolve_spec

pytestmark = pytest.mark.usefixtures("clean_plugin_env")


def run(*args):
    result = CliRunner().invoke(make_cli(), list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "spec, culprit",
    [
        ("gemm:m=17179869184,n=8192,k=8192,dtype=bf16", "m=17179869184 is outside 1..2147483647"),
        ("gemm:m=9223372036854775808,n=8192,k=8192", "m=9223372036854775808 is outside"),
        ("gemm:m=100000000000000000000000000000,n=1,k=1", "m=100000000000000000000000000000 is outside"),
        ("gemm:m=2000000000,n=2000000000,k=16", "C holds 4000000000000000000 elements"),
        ("gemm:m=8,n=8,k=8,batch=4294967296", "batch=4294967296 is outside"),
        ("conv2d:n=65536,c=64,h=4096,w=4096,k=64,padding=1", "m=1099511627776 is outside"),
        ("transformer:hidden=512,layers=2,heads=8,seq=4294967296", "is outside 1..2147483647"),
    ],
)
def test_sizes_beyond_exact_arithmetic_are_refused_in_one_line(spec, culprit):
    code, out, err = run("predict", "-t", "h200", "-w", spec)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: workload ") and culprit in err
    assert "Traceback" not in err


def test_the_largest_accepted_sizes_give_exact_positive_results():
    """At the edge of what is accepted, counts are exact (Python ints as reference) and times
    finite and positive: nothing wraps round."""
    e = 2
    m, n, k = MAX_DIM, 1 << 17, 1 << 17  # C has just under 2^48 elements, the limit
    p = MatmulProblem(
        batch=1,
        m=m,
        n=n,
        k=k,
        math_mode="bf16",
        a_elem_bytes=e,
        b_elem_bytes=e,
        c_elem_bytes=e,
        a=Tensor("A", m * k * e),
        b=Tensor("B", k * n * e),
        c=Tensor("C", m * n * e),
    )
    check_problem("edge", p)
    for units in (1, 132, MAX_UNITS):
        machine = Machine(
            units=units,
            unit_sram_bytes=228 * 1024,
            unit_sram_bytes_per_s=units * 1e11,
            cache_bytes=60 << 20,
            cache_bytes_per_s=1e14,
            dram_bytes_per_s=4.8e12,
            compute={"bf16": units * 1e12},
        )
        c = TiledMatmul().explore(p, machine, Residency())
        assert c.tiles == ceil_div(m, c.tile["m"]) * ceil_div(n, c.tile["n"]) * c.split  # exact
        assert c.waves == ceil_div(c.tiles, units)
        assert c.search == "exhaustive" and math.isfinite(c.latency_s)
        assert c.compute_s >= p.flops / (units * 1e12) > 0
        assert c.traffic["dram"] >= float(p.a.nbytes + p.b.nbytes + p.c.nbytes)


# log-uniform sizes up to the limit, so that large and small dimensions both appear
dims = st.integers(0, 31).flatmap(lambda bits: st.integers(max(1, 1 << bits >> 1), min(MAX_DIM, 1 << bits)))


@settings(max_examples=100, derandomize=True, deadline=None, database=None)
@given(m=dims, n=dims, k=dims, batch=dims, units=st.one_of(dims, st.just(MAX_UNITS)))
def test_any_accepted_matmul_gives_finite_positive_exact_counts(m, n, k, batch, units):
    e = 2
    p = MatmulProblem(
        batch=batch,
        m=m,
        n=n,
        k=k,
        math_mode="bf16",
        a_elem_bytes=e,
        b_elem_bytes=e,
        c_elem_bytes=e,
        a=Tensor("A", batch * m * k * e),
        b=Tensor("B", batch * k * n * e),
        c=Tensor("C", batch * m * n * e),
    )
    try:
        check_problem("random", p)
    except TensorForgeError:
        assert (
            max(batch * m * n, batch * m * k, batch * k * n) > MAX_ELEMENTS
            or max(t.nbytes for t in (p.a, p.b, p.c)) > MAX_TENSOR_BYTES
        )
        return
    machine = Machine(
        units=units,
        unit_sram_bytes=228 * 1024,
        unit_sram_bytes_per_s=1e12,
        cache_bytes=60 << 20,
        cache_bytes_per_s=1e13,
        dram_bytes_per_s=4.8e12,
        compute={"bf16": units * 1e12},
    )
    c = TiledMatmul().explore(p, machine, Residency())
    assert c.tiles == batch * ceil_div(m, c.tile["m"]) * ceil_div(n, c.tile["n"]) * c.split
    assert c.waves == ceil_div(c.tiles, units)
    assert math.isfinite(c.latency_s) and c.compute_s >= p.flops / (units * 1e12) * (1 - 1e-12) > 0


def test_problems_a_third_party_plugin_might_build_are_checked_too():
    q = Tensor("q", 1)
    bad = [
        (
            AttentionProblem(
                batch=1,
                heads=6,
                kv_heads=4,
                q_len=1,
                kv_len=8,
                head_dim=64,
                causal=False,
                math_mode="bf16",
                elem_bytes=2,
                q=q,
                k=q,
                v=q,
                o=q,
            ),
            "heads=6 is not a multiple of kv_heads=4",
        ),
        (
            AttentionProblem(
                batch=1,
                heads=4,
                kv_heads=4,
                q_len=9,
                kv_len=8,
                head_dim=64,
                causal=True,
                math_mode="bf16",
                elem_bytes=2,
                q=q,
                k=q,
                v=q,
                o=q,
            ),
            "q_len=9 exceeds kv_len=8",
        ),
        (
            AttentionProblem(
                batch=1,
                heads=4,
                kv_heads=4,
                q_len=0,
                kv_len=8,
                head_dim=64,
                causal=True,
                math_mode="bf16",
                elem_bytes=2,
                q=q,
                k=q,
                v=q,
                o=q,
            ),
            "q_len=0 is outside",
        ),
        (StreamProblem(flops=float("nan"), read_tensors=(q,), write_tensors=(q,)), "FLOPs must be a finite number"),
        (StreamProblem(flops=10**400, read_tensors=(q,), write_tensors=(q,)), "FLOPs must be a finite number"),
        (
            StreamProblem(flops=1.0, read_tensors=(Tensor("x", MAX_TENSOR_BYTES + 1),), write_tensors=()),
            "tensor 'x' has 9007199254740993 bytes",
        ),
        (StreamProblem(flops=1.0, read_tensors=(Tensor("x", -1),), write_tensors=()), "tensor 'x' has -1 bytes"),
        (
            MatmulProblem(
                batch=1,
                m=2.5,
                n=1,
                k=1,
                math_mode="bf16",
                a_elem_bytes=2,
                b_elem_bytes=2,
                c_elem_bytes=2,
                a=q,
                b=q,
                c=q,
            ),
            "m must be an integer",
        ),
    ]
    for problem, message in bad:
        with pytest.raises(TensorForgeError, match=message.replace("(", r"\(")):
            check_problem("workload 'w', operator 'o'", problem)


def test_a_target_with_too_many_units_is_refused(tmp_path):
    host = PluginHost()
    from tensorforge.hardware.target import MemoryLevel, OperatingPoint, PEArray, Target

    huge = Target(
        name="huge",
        description="synthetic",
        pe_array=PEArray(MAX_UNITS + 1, "PE", {"fp32": 1}),
        sram=(MemoryLevel("smem", 1 << 16, "per_unit", 128),),
        dram_capacity_bytes=1 << 30,
        operating_points=(OperatingPoint("base", 1000, 1e9),),
        default_operating_point="base",
    )
    with pytest.raises(TensorForgeError, match="pe_array.units=2147483648 is outside"):
        predict([resolve_spec(host, "gemm_tiny:dtype=fp32")], huge, host.mappings())


@pytest.mark.parametrize("seq", [10**6, 10**8])
def test_predict_memory_does_not_grow_with_the_sequence(seq):
    """The causal attention sums are closed-form: 10^8 tokens costs what 10^3 does (it took
    ~300 MB per million tokens before)."""
    host = PluginHost()
    spec = f"transformer:hidden=512,layers=2,heads=8,seq={seq}"
    tracemalloc.start()
    pred = predict([resolve_spec(host, spec)], host.target("h200"), host.mappings())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 32 << 20, peak
    w = pred.workloads[0]
    assert math.isfinite(w.latency_s) and w.latency_s > 0 and w.search == "exhaustive"
