"""Tensor and pipeline parallelism in the transformer kind: one rank's share of the operators,
the collectives on the critical path as operators of their own, the work conserved across
ranks, and the splits the model refuses in one line."""

import pytest

from tensorforge.bound.model import predict
from tensorforge.errors import TensorForgeError
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

LLAMA = "transformer:hidden=4096,layers=2,heads=32,kv_heads=8,intermediate=14336,dtype=bf16"


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def ops_of(host, spec):
    ((w, kind),) = resolve(host, (spec,))
    return {op.name: op for op in kind.operators(w.params)}, w.params


def test_tp2_splits_projections_heads_and_mlp_and_adds_two_all_reduces(host):
    one, p = ops_of(host, f"{LLAMA},batch=1,seq=4096")
    two, _ = ops_of(host, f"{LLAMA},batch=1,seq=4096,tp=2")
    assert two["qkv_proj"].problem.n == one["qkv_proj"].problem.n // 2  # column-parallel
    assert two["o_proj"].problem.k == one["o_proj"].problem.k // 2  # row-parallel
    assert two["o_proj"].problem.n == one["o_proj"].problem.n == 4096  # full hidden out
    assert two["mlp_up"].problem.n == one["mlp_up"].problem.n // 2
    assert two["mlp_down"].problem.k == one["mlp_down"].problem.k // 2
    assert (two["attention"].problem.heads, two["attention"].problem.kv_heads) == (16, 4)
    for name in ("all_reduce_attn", "all_reduce_mlp"):
        c = two[name].problem
        assert (c.op, c.ranks, c.bytes, two[name].count) == ("all_reduce", 2, 4096 * 4096 * 2, 2)
    names = list(two)
    assert names.index("all_reduce_attn") == names.index("o_proj") + 1  # on the critical path
    assert names.index("all_reduce_mlp") == names.index("mlp_down") + 1
    assert "all_reduce_attn" not in one


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_matrix_work_is_conserved_across_ranks(host, tp):
    one, _ = ops_of(host, f"{LLAMA},batch=2,seq=512")
    many, _ = ops_of(host, f"{LLAMA},batch=2,seq=512,tp={tp}")
    for name in ("qkv_proj", "o_proj", "mlp_up", "mlp_down", "attention"):
        assert many[name].problem.flops * tp == one[name].problem.flops, name
    # norms and residuals are replicated on every rank
    assert many["norm_attn"].problem.flops == one["norm_attn"].problem.flops


def test_kv_heads_are_replicated_when_tp_exceeds_them(host):
    ops, _ = ops_of(host, "transformer:hidden=1024,layers=1,heads=16,kv_heads=2,seq=8,tp=8")
    assert (ops["attention"].problem.heads, ops["attention"].problem.kv_heads) == (2, 1)


def test_lm_head_is_split_by_vocabulary_and_gathered(host):
    ops, _ = ops_of(host, "transformer:hidden=256,layers=1,heads=4,vocab=1000,seq=8,tp=2")
    assert ops["lm_head"].problem.n == 500
    gather = ops["all_gather_logits"].problem
    assert (gather.op, gather.bytes, gather.output.nbytes) == ("all_gather", 8 * 1000 * 2, 8 * 1000 * 2)


def test_pipeline_stages_add_sends_between_neighbouring_stages(host):
    ops, _ = ops_of(host, f"{LLAMA},batch=1,seq=1024,tp=2,pp=2")
    send = ops["pp_send_recv"]
    assert (send.problem.op, send.problem.ranks, send.problem.stride, send.count) == ("send_recv", 2, 2, 1)
    assert send.problem.bytes == 1024 * 4096 * 2
    assert ops["qkv_proj"].count == 2  # one batch passes every layer, stage after stage
    pred = predict(resolve(host, (f"{LLAMA},batch=1,seq=1024,tp=2,pp=2",)), host.target("h200x8"), host.mappings())
    assert any(o.name == "pp_send_recv" and o.bottleneck == "interconnect" for o in pred.workloads[0].operators)
    with pytest.raises(TensorForgeError, match="needs 3 devices; the target has 2"):
        predict(resolve(host, (f"{LLAMA},batch=1,seq=1024,tp=2,pp=2",)), host.target("h200x2"), host.mappings())


def test_footprint_is_one_ranks_share(host):
    ((w1, kind),) = resolve(host, (f"{LLAMA},batch=1,seq=128",))
    ((w2, _),) = resolve(host, (f"{LLAMA},batch=1,seq=128,tp=2",))
    ((w4, _),) = resolve(host, (f"{LLAMA},batch=1,seq=128,tp=2,pp=2",))
    assert kind.footprint_bytes(w2.params) < kind.footprint_bytes(w1.params)
    assert kind.footprint_bytes(w4.params) < kind.footprint_bytes(w2.params)


def test_tp2_layer_bound_includes_its_all_reduces(host):
    spec = f"{LLAMA.replace('layers=2', 'layers=1')},batch=32,seq=1,phase=decode,context=4096,tp=2"
    (w,) = predict(resolve(host, (spec,)), host.target("h200x2"), host.mappings()).workloads
    reduces = [o for o in w.operators if o.name.startswith("all_reduce")]
    assert len(reduces) == 2 and all(o.latency_s > 0 for o in reduces)
    assert w.latency_s == pytest.approx(sum(o.latency_s for o in w.operators))


@pytest.mark.parametrize(
    "spec, message",
    [
        ("transformer:hidden=768,layers=1,heads=12,tp=8", "tp=8 must divide heads=12"),
        ("transformer:hidden=1536,layers=1,heads=24,kv_heads=6,tp=4", "tp=4 and kv_heads=6: one must divide the other"),
        (
            "transformer:hidden=1024,layers=1,heads=16,kv_heads=4,intermediate=1000,tp=16",
            "tp=16 must divide intermediate=1000",
        ),
        ("transformer:hidden=1024,layers=3,heads=16,pp=2", "pp=2 must divide layers=3"),
        (
            "transformer:hidden=1024,layers=1,heads=16,block=parallel,tp=2",
            "tensor parallelism is modelled for sequential",
        ),
        ("transformer:hidden=1024,layers=1,heads=16,tp=0", "tp must be >= 1"),
    ],
)
def test_bad_splits_are_one_line(host, spec, message):
    with pytest.raises(TensorForgeError) as info:
        resolve(host, (spec,))
    assert message in str(info.value) and "\n" not in str(info.value)
