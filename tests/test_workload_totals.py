"""A workload's compulsory traffic equals what its operators say, for every installed kind:
each tensor the workload reads but never produces (inputs, weights, KV caches) and each it
produces but never reads (final outputs), once per instance, where an operator repeated
`count` times (a transformer's layers) touches `count` distinct instances."""

from pathlib import Path

import pytest

from tensorforge.bound.model import predict
from tensorforge.workloads.suite import resolve_spec

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

CONFIGS = Path(__file__).resolve().parent.parent / "examples" / "configs"
EXTRA = [
    "transformer_gpt2_prefill",
    "transformer_decode:layers=1",
    "transformer_decode:block=parallel",
    "transformer_prefill:block=parallel_shared_norm,final_norm=false,vocab=1000",
    f"transformer:config={CONFIGS / 'falcon-7b'},phase=decode,context=512,batch=4",
    f"transformer:config={CONFIGS / 'gemma-7b'},seq=256",
    # post-norm encoders, partial RoPE, a ReLU MLP; eager attention with and without repeat_kv
    f"transformer:config={CONFIGS / 'bert-base-uncased'},seq=128,batch=2,attention=eager",
    f"transformer:config={CONFIGS / 'pythia-1.4b'},seq=64",
    f"transformer:config={CONFIGS / 'opt-1.3b'},seq=64,phase=decode,context=64,attention=eager",
    "transformer_decode:seq=3,attention=eager",
    # training steps: inputs read again by the gradients, fp32 masters, accumulation, optimizers
    "gemm:m=256,n=128,k=64,batch=2,transpose_b=true,phase=train,optimizer=adamw,grad_accum=3,mixed_precision=true",
    "conv_depthwise_3x3:phase=train,optimizer=sgd,grad_accum=2",
    f"transformer:config={CONFIGS / 'llama-2-7b'},layers=2,seq=512,phase=train,optimizer=adamw,mixed_precision=true",
    "transformer_gpt2_prefill:layers=2,phase=train,grad_accum=2",
]


def every_workload(host):
    specs = [name for name in host.preset_names()] + EXTRA
    return [resolve_spec(host, s) for s in specs]


def boundary_bytes_from_operators(operators, training: bool = False) -> float:
    """Recomputed from the operators alone: boundary tensors, each touched by one operator; in a
    training step an input may also be read by a gradient operator (the forward's input again
    by the weight gradient): once per instance then, with one size wherever it is read."""
    written = {t.name for op in operators for t in op.problem.writes()}
    read = {t.name for op in operators for t in op.problem.reads()}
    owners, sizes, instances = {}, {}, {}
    for op in operators:
        boundary = [t for t in op.problem.reads() if t.name not in written]
        boundary += [t for t in op.problem.writes() if t.name not in read]
        for t in boundary:
            owners.setdefault(t.name, set()).add(op.name)
            assert sizes.setdefault(t.name, t.nbytes) == t.nbytes, f"{t.name}: two sizes"
            instances[t.name] = max(instances.get(t.name, 0), op.count)
    shared = {name: ops for name, ops in owners.items() if len(ops) > 1}
    if training:  # shared only with gradient operators, and by operators repeated alike
        assert all(any("grad" in o for o in ops) for ops in shared.values()), shared
        assert all(len({o.count for o in operators if o.name in ops}) == 1 for ops in shared.values()), shared
    else:
        assert not shared, f"boundary tensors with one name in several operators: {shared}"
    return float(sum(sizes[name] * instances[name] for name in sizes))


def test_workload_totals_follow_from_the_operators_for_every_kind(host):
    chosen = every_workload(host)
    assert {kind.name for _, kind in chosen} == set(host.names("workloads"))
    # a system of eight H200s: every kind predicts there (collectives need several devices; the
    # others are the same as on one H200)
    pred = predict(chosen, host.target("h200x8"), host.mappings())
    for (workload, kind), w in zip(chosen, pred.workloads):
        operators = kind.operators(workload.params)
        training = getattr(workload.params, "phase", None) == "train"
        assert w.compulsory_bytes == boundary_bytes_from_operators(operators, training), w.name
        assert w.compulsory_bytes <= sum(o.compulsory_bytes for o in w.operators), w.name
        if len(w.operators) == 1:  # nothing internal: the operator's own traffic
            assert w.compulsory_bytes == w.operators[0].compulsory_bytes, w.name
        assert w.flops == sum(o.flops for o in w.operators)


def test_llama2_7b_decode_counts_every_layer(host):
    # context 2048, batch 8, bf16. Per layer: weights 202,383,360 parameters (QKV, O, gated MLP,
    # two norms) = 404,766,720 B; K and V caches 2 * 8 * 32 * 2049 * 128 * 2 B = 268,566,528 B;
    # the new token's K and V written: 2 * 8 * 32 * 128 * 2 B = 131,072 B. Once per model:
    # final norm 8,192 B, LM head 32000 * 4096 * 2 = 262,144,000 B, logits 8 * 32000 * 2 = 512,000 B.
    per_layer = 404_766_720 + 268_566_528 + 131_072
    once = 8_192 + 262_144_000 + 512_000
    spec = f"transformer:config={CONFIGS / 'llama-2-7b'},phase=decode,context=2048,batch=8"
    one, full = predict(
        [resolve_spec(host, spec + ",layers=1"), resolve_spec(host, spec)], host.target("h200"), host.mappings()
    ).workloads
    assert one.compulsory_bytes == per_layer + once
    assert full.compulsory_bytes == 32 * per_layer + once  # 21.8 GB, not 0.94 GB
    assert full.arithmetic_intensity < one.arithmetic_intensity * 1.1
