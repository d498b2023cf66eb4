"""A workload's bottleneck is the larger of its own two columns, compute and memory (compute
wins a tie), over random shapes of every kind that has operators of both sides: a reader checks
the label against the two figures printed beside it. A tensor-parallel layer on eight H200s
once read compute 7.878 ms, memory 12.12 ms, bottleneck "compute" (the rule then took the
operators' bottleneck holding most of the bound)."""

from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorforge.bound.model import predict, workload_bottleneck
from tensorforge.workloads.suite import resolve_spec

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

CONFIGS = Path(__file__).resolve().parent.parent / "examples" / "configs"
MEMORY_SIDE = {"memory", "interconnect"}


def _holds(w) -> None:
    if w.compute_s >= w.memory_s:
        assert w.bottleneck == "compute", (w.name, w.compute_s, w.memory_s, w.bottleneck)
    else:
        assert w.bottleneck in MEMORY_SIDE, (w.name, w.compute_s, w.memory_s, w.bottleneck)


def test_the_tensor_parallel_layer_names_its_larger_column(host):
    spec = f"transformer:config={CONFIGS / 'llama-3-8b'},seq=4096,tp=8"  # the README tour's
    (w,) = predict([resolve_spec(host, spec)], host.target("h200x8"), host.mappings()).workloads
    assert w.memory_s > w.compute_s  # link time and DRAM over the layers' matmuls
    assert w.bottleneck == "interconnect"
    _holds(w)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    hidden=st.sampled_from([256, 512, 1024, 2048, 4096]),
    heads=st.sampled_from([8, 16, 32]),
    seq=st.integers(1, 4096),
    batch=st.integers(1, 16),
    tp=st.sampled_from([1, 2, 4, 8]),
    decode=st.booleans(),
    gemm=st.tuples(st.integers(1, 8192), st.integers(1, 8192), st.integers(1, 8192)),
)
def test_the_bottleneck_is_the_larger_term_over_random_shapes(host, hidden, heads, seq, batch, tp, decode, gemm):
    phase = f"phase=decode,context={seq}" if decode else f"seq={seq}"
    m, n, k = gemm
    specs = [
        f"transformer:hidden={hidden},layers=1,heads={heads},{phase},batch={batch},tp={tp},dtype=bf16",
        f"gemm:m={m},n={n},k={k},dtype=bf16",
        f"collective:op=all_reduce,bytes={m * n * 2},dtype=bf16,ranks={max(tp, 2)}",
    ]
    chosen = [resolve_spec(host, s) for s in specs]
    for w in predict(chosen, host.target("h200x8"), host.mappings()).workloads:
        _holds(w)


def _op(compute_s, memory_s, strategy):
    bottleneck = "compute" if compute_s >= memory_s else ("interconnect" if strategy == "collective" else "memory")
    return SimpleNamespace(
        compute_s=compute_s, memory_s=memory_s, bottleneck=bottleneck, mapping=SimpleNamespace(strategy=strategy)
    )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1, allow_nan=False), st.floats(0, 1, allow_nan=False), st.sampled_from(["tiled", "collective"])
        ),
        min_size=1,
        max_size=12,
    )
)
def test_the_rule_over_random_operator_terms(terms):
    results = [_op(*t) for t in terms]
    compute, memory = sum(r.compute_s for r in results), sum(r.memory_s for r in results)
    label = workload_bottleneck(results)
    assert (label == "compute") == (compute >= memory)
    if label != "compute":
        by_side = {}
        for r in results:
            # the operator's own memory-side kind: its bottleneck unless that is compute
            side = r.bottleneck if r.bottleneck != "compute" else "memory"
            by_side[side] = by_side.get(side, 0.0) + r.memory_s
        assert by_side[label] == max(by_side.values())
