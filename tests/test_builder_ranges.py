"""Every shipped PyTorch builder marks each Core operator with a range of the same name, one to
one: an operator of count c is entered c times per call, nothing else is entered, ranges never
nest. Run on the CPU with small shapes of every variant the builders branch on."""

import contextlib
from collections import Counter

import pytest

from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve
from tensorforge_measure.host import OpsHost
from tensorforge_measure.measure import op_ranges

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("clean_plugin_env")

# Small shapes covering each branch of the shipped builders (transposes, batch, groups; prefill
# and decode, a decode step of several tokens with its mask, GQA, gated, GELU and ReLU MLPs, both
# norms, pre- and post-norm, no RoPE and partial RoPE, an LM head, the parallel blocks, no final
# norm, eager attention with and without repeat_kv and its mask; every vector kind's variants).
CASES = {
    "gemm": [
        "gemm:m=8,n=16,k=8,dtype=fp32",
        "gemm:m=8,n=16,k=4,batch=3,transpose_a=true,transpose_b=true,dtype=fp32",
        # training steps: backward ranges (autograd), fp32 masters, accumulation, both optimizers
        "gemm:m=8,n=16,k=4,batch=2,transpose_a=true,dtype=bf16,phase=train,optimizer=adamw,grad_accum=2,"
        "mixed_precision=true",
    ],
    "conv2d": [
        "conv2d:n=1,c=4,h=6,w=6,k=4,padding=1,dtype=fp32",
        "conv2d:n=2,c=4,h=6,w=6,k=4,groups=4,stride=2,dtype=fp32",
        "conv2d:n=2,c=4,h=6,w=6,k=4,groups=2,stride=2,dtype=fp32,phase=train,optimizer=sgd,grad_accum=3",
    ],
    "sdpa": [
        "sdpa:batch=2,heads=4,kv_heads=2,q_len=6,kv_len=6,head_dim=8,causal=true,dtype=fp32",
        "sdpa:batch=2,heads=4,kv_heads=4,q_len=1,kv_len=9,head_dim=8,dtype=fp32",
    ],
    "transformer": [
        "transformer:hidden=32,layers=2,heads=4,kv_heads=2,intermediate=48,seq=5,dtype=fp32",
        "transformer:hidden=32,layers=3,heads=4,kv_heads=1,seq=1,batch=2,phase=decode,context=7,dtype=fp32",
        "transformer:hidden=32,layers=1,heads=4,seq=3,phase=decode,context=4,dtype=fp32",
        "transformer:hidden=32,layers=2,heads=4,mlp=gelu,norm=layernorm,rope=false,vocab=50,seq=4,dtype=fp32",
        "transformer:hidden=32,layers=2,heads=4,kv_heads=1,block=parallel,seq=3,dtype=fp32",
        "transformer:hidden=32,layers=2,heads=4,kv_heads=1,block=parallel_shared_norm,mlp=gelu,norm=layernorm,"
        "seq=3,dtype=fp32",
        "transformer:hidden=32,layers=1,heads=4,final_norm=false,vocab=40,lm_head=false,seq=2,dtype=fp32",
        "transformer:hidden=32,layers=2,heads=4,mlp=relu,norm=layernorm,rope=false,post_norm=true,causal=false,"
        "final_norm=false,seq=4,dtype=fp32",
        "transformer:hidden=32,layers=2,heads=4,block=parallel,rope_dims=4,norm=layernorm,mlp=gelu,seq=3,dtype=fp32",
        "transformer:hidden=32,layers=2,heads=4,kv_heads=2,batch=2,seq=5,attention=eager,dtype=fp32",
        "transformer:hidden=32,layers=1,heads=4,kv_heads=1,seq=3,phase=decode,context=4,attention=eager,dtype=fp32",
        "transformer:hidden=32,layers=1,heads=4,seq=1,phase=decode,context=4,attention=eager,dtype=fp32",
        "transformer:hidden=32,layers=1,heads=4,seq=4,causal=false,rope=false,post_norm=true,attention=eager,"
        "dtype=fp32",
        # transformers' eager GPT-2: gelu_new as eight ops, scalar fills for the scale and the mask
        "transformer:hidden=32,layers=2,heads=4,mlp=gelu,norm=layernorm,rope=false,seq=4,attention=eager,"
        "impl=huggingface,dtype=fp32",
        # training steps: every forward and backward operator, RoPE on part of each head or none
        "transformer:hidden=32,layers=2,heads=4,kv_heads=2,intermediate=48,seq=5,vocab=40,rope_dims=4,dtype=fp32,"
        "phase=train,optimizer=sgd,grad_accum=2",
        "transformer:hidden=32,layers=1,heads=4,mlp=gelu,norm=layernorm,rope=false,final_norm=false,seq=3,"
        "dtype=bf16,phase=train,mixed_precision=true",
    ],
    "softmax": ["softmax:rows=3,cols=7,dtype=fp32"],
    "norm": ["norm:rows=3,cols=8,norm=layer,dtype=fp32", "norm:rows=3,cols=8,norm=rms,dtype=fp32"],
    "activation": [f"activation:rows=2,cols=5,fn={fn},dtype=fp32" for fn in ("gelu", "silu", "relu", "tanh")],
    "elementwise": [
        f"elementwise:rows=2,cols=5,op={op},operand={operand},dtype=fp32"
        for op in ("add", "mul", "div", "pow")
        for operand in ("tensor", "scalar")
    ],
    # every op the builder branches on, on a one-process gloo group (ranks=0: every rank of it)
    "collective": [
        f"collective:op={op},count=64,dtype=fp32"
        for op in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")
    ],
}


@contextlib.contextmanager
def process_group(kind):
    """The collective builder runs on a torch.distributed group: a one-process gloo group here
    (torch-distributed sets up the real one), torn down after so no other test sees it."""
    if kind != "collective":
        yield
        return
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def hosts():
    return PluginHost(), OpsHost()


def torch_builders(ops):
    return {b.kind: b for b in ops.values("builders") if b.framework == "torch"}


def test_every_shipped_torch_builder_has_cases(hosts):
    core, ops = hosts
    kinds = set(torch_builders(ops))
    assert {"gemm", "conv2d", "transformer", "collective"} <= kinds
    assert kinds <= set(CASES), f"add small cases for {sorted(kinds - set(CASES))}"


@contextlib.contextmanager
def entered_without_nesting():
    """Like op_ranges.names_entered, and fails on a range opened inside another."""
    names, depth = [], [0]

    @contextlib.contextmanager
    def record(name):
        assert depth[0] == 0, f"range {name!r} opened inside {names[-1]!r}"
        names.append(name)
        depth[0] += 1
        try:
            yield
        finally:
            depth[0] -= 1

    with op_ranges.recording(record):
        yield names


@pytest.mark.parametrize("spec", [s for specs in CASES.values() for s in specs])
def test_ranges_match_core_operators_one_to_one(hosts, spec):
    core, ops = hosts
    ((workload, kind),) = resolve(core, (spec,))
    builder = torch_builders(ops)[workload.kind]
    expected = Counter()
    for op in kind.operators(workload.params):
        expected[op.name] += op.count
    with torch.inference_mode(), process_group(workload.kind):
        fn = builder.build(workload.params, torch.device("cpu"))
        for _ in range(2):  # the second call too: nothing is marked only on a first call
            with entered_without_nesting() as names:
                fn()
            assert Counter(names) == expected


def test_ranges_cost_nothing_outside_a_recording():
    assert op_ranges.operator_range("matmul") is op_ranges.operator_range("attention")
    with op_ranges.names_entered() as names:
        with op_ranges.operator_range("matmul"):
            pass
    assert names == ["matmul"]
    assert op_ranges._recorder is None  # restored


def test_operator_of_strips_only_our_prefix():
    assert op_ranges.operator_of(op_ranges.PREFIX + "qkv_proj") == "qkv_proj"
    assert op_ranges.operator_of("aten::linear") is None
