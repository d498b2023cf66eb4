"""Model configs read correctly: every config under examples/configs (written from the values
the publishers released) gives the published architecture, the published parameter count,
the right block structure, its LM head and its position limits; the PyTorch builder mirrors
every block structure the Core decomposes. And attention=eager: Hugging Face's eager attention
as operators, with the score matrix's real bytes, which the builder runs one to one."""

import collections
import contextlib
import json
from pathlib import Path

import pytest

from tensorforge.api import run_prediction
from tensorforge.bound.model import predict
from tensorforge.errors import TensorForgeError
from tensorforge.workloads.precision import DTYPE_BYTES
from tensorforge.workloads.suite import resolve_spec

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

CONFIGS = Path(__file__).resolve().parent.parent / "examples" / "configs"

# name: (hidden, layers, heads, kv_heads, head_dim, intermediate, mlp, norm, rope, block,
#        vocab, max_positions, window)
ARCHITECTURE = {
    "llama-2-7b": (4096, 32, 32, 32, 128, 11008, "gated", "rmsnorm", True, "sequential", 32000, 4096, 0),
    "llama-3-8b": (4096, 32, 32, 8, 128, 14336, "gated", "rmsnorm", True, "sequential", 128256, 8192, 0),
    "mistral-7b-v0.1": (4096, 32, 32, 8, 128, 14336, "gated", "rmsnorm", True, "sequential", 32000, 32768, 4096),
    "qwen2-7b-instruct": (3584, 28, 28, 4, 128, 18944, "gated", "rmsnorm", True, "sequential", 152064, 32768, 0),
    "gpt2": (768, 12, 12, 12, 64, 3072, "gelu", "layernorm", False, "sequential", 50257, 1024, 0),
    "falcon-7b": (4544, 32, 71, 1, 64, 18176, "gelu", "layernorm", True, "parallel_shared_norm", 65024, 0, 0),
    "falcon-40b": (8192, 60, 128, 8, 64, 32768, "gelu", "layernorm", True, "parallel", 65024, 0, 0),
    "gemma-7b": (3072, 28, 16, 16, 256, 24576, "gated", "rmsnorm", True, "sequential", 256000, 8192, 0),
    "bert-base-uncased": (768, 12, 12, 12, 64, 3072, "gelu", "layernorm", False, "sequential", 30522, 512, 0),
    "roberta-base": (768, 12, 12, 12, 64, 3072, "gelu", "layernorm", False, "sequential", 50265, 512, 0),
    "opt-1.3b": (2048, 24, 32, 32, 64, 8192, "relu", "layernorm", False, "sequential", 50272, 2048, 0),
    "pythia-1.4b": (2048, 24, 16, 16, 128, 8192, "gelu", "layernorm", True, "parallel", 50304, 2048, 0),
}

# Published parameter counts, and what TensorForge's weights leave out of them: the input
# embedding table when it is not tied to the LM head, learned position tables (GPT-2, OPT), the
# encoders' token-type table, embedding LayerNorm and pooler (BERT, RoBERTa: counted by their
# BertModel / RobertaModel, which have no LM head), and bias vectors (linear and LayerNorm biases
# of GPT-2, BERT, RoBERTa, OPT and Pythia, Qwen2's QKV biases, Falcon's LayerNorm biases).
PUBLISHED_PARAMETERS = {
    "llama-2-7b": (6_738_415_616, 32000 * 4096, 0),
    "llama-3-8b": (8_030_261_248, 128256 * 4096, 0),
    "mistral-7b-v0.1": (7_241_732_096, 32000 * 4096, 0),
    "qwen2-7b-instruct": (7_615_616_512, 152064 * 3584, 28 * (3584 + 2 * 512)),
    "gpt2": (124_439_808, 1024 * 768, 12 * (3 * 768 + 768 + 3072 + 768 + 2 * 768) + 768),
    "falcon-7b": (6_921_720_704, 0, 32 * 4544 + 4544),
    "gemma-7b": (8_537_680_896, 0, 0),
    "bert-base-uncased": (109_482_240, (30522 + 512 + 2) * 768 + 2 * 768 + 768 * 768 + 768, 12 * 8448),
    "roberta-base": (124_645_632, (50265 + 514 + 1) * 768 + 2 * 768 + 768 * 768 + 768, 12 * 8448),
    "opt-1.3b": (1_315_758_080, 2050 * 2048, 24 * (4 * 2048 + 8192 + 2048 + 2 * 2048) + 2048),
    "pythia-1.4b": (1_414_647_808, 50304 * 2048, 24 * (6144 + 2048 + 8192 + 2048 + 2 * 2048) + 2048),
}
# an encoder layer's biases: Q, K, V (3 x 768), output (768), MLP (3072 + 768), two LayerNorms


@pytest.fixture(scope="module")
def kind(host):
    return host.workload_kind("transformer")


def parse(kind, name, **fields):
    return kind.parse({"config": str(CONFIGS / name), **fields})


def ops(kind, params):
    return {o.name: o for o in kind.operators(params)}


@pytest.mark.parametrize("name", sorted(ARCHITECTURE))
def test_each_config_gives_the_published_architecture(kind, name):
    p = parse(kind, name, seq=16)
    assert (
        p.hidden,
        p.layers,
        p.heads,
        p.kv_heads,
        p.head_dim,
        p.intermediate,
        p.mlp,
        p.norm,
        p.rope,
        p.block,
        p.vocab,
        p.max_positions,
        p.window,
    ) == ARCHITECTURE[name]
    assert p.config == str(CONFIGS / name / "config.json")


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMETERS))
def test_weights_reproduce_the_published_parameter_count(kind, name):
    published, untied_embedding_or_positions, biases = PUBLISHED_PARAMETERS[name]
    p = parse(kind, name, seq=16)
    modelled = kind.weight_bytes(p) // DTYPE_BYTES[p.dtype]
    assert modelled + untied_embedding_or_positions + biases == published


def test_every_example_config_is_covered():
    assert sorted(d.name for d in CONFIGS.iterdir() if d.is_dir()) == sorted(ARCHITECTURE)


def test_gpt2_has_learned_positions_and_its_own_key_names(kind):
    p = parse(kind, "gpt2", seq=1024, batch=2)
    o = ops(kind, p)
    assert "rope" not in o  # learned position embeddings
    assert o["mlp_up"].problem.n == 3072  # n_inner null -> 4 * n_embd
    assert o["mlp_act"].problem.flops == 8 * 2048 * 3072  # tanh-GELU
    assert o["norm_mlp"].problem.flops == 7 * 2048 * 768  # LayerNorm
    assert o["lm_head"].problem.n == 50257 and o["lm_head"].problem.a.name == "h_final"


def test_vocab_size_gives_an_lm_head_that_can_be_left_out(kind):
    assert "lm_head" in ops(kind, parse(kind, "llama-3-8b", seq=8))
    p = parse(kind, "llama-3-8b", seq=8, lm_head="false")
    assert "lm_head" not in ops(kind, p) and p.vocab == 128256
    assert kind.weight_bytes(p) == kind.weight_bytes(parse(kind, "llama-3-8b", seq=8)) - 128256 * 4096 * 2
    with pytest.raises(TensorForgeError, match=r"^transformer: lm_head=true needs vocab"):
        kind.parse({"hidden": 64, "layers": 1, "heads": 4, "lm_head": "true"})


def test_a_bare_block_has_no_final_norm(kind):
    block = parse(kind, "llama-2-7b", layers=1, seq=8, final_norm="false", lm_head="false")
    names = [o.name for o in kind.operators(block)]
    assert names[-1] == "residual_mlp" and "norm_final" not in names
    # and a full model keeps it, with its own weight
    full = ops(kind, parse(kind, "llama-2-7b", seq=8))
    assert full["norm_final"].problem.read_tensors[1].name == "norm_final_w"


@pytest.mark.parametrize(
    "name, fields, message",
    [
        ("gpt2", {"seq": 1025}, "seq + context = 1025 exceeds the model's max_positions=1024"),
        ("gpt2", {"phase": "decode", "seq": 2, "context": 1023}, "seq + context = 1025 exceeds"),
        ("llama-2-7b", {"seq": 4097}, "exceeds the model's max_positions=4096"),
        ("qwen2-7b-instruct", {"seq": 32769}, "exceeds the model's max_positions=32768"),
        ("mistral-7b-v0.1", {"seq": 4097}, "exceeds the sliding attention window=4096"),
    ],
)
def test_sequences_beyond_the_model_are_refused_in_one_line(kind, name, fields, message):
    with pytest.raises(TensorForgeError) as info:
        parse(kind, name, **fields)
    text = str(info.value)
    assert text.startswith("transformer: ") and message in text and "\n" not in text
    assert str(CONFIGS / name / "config.json") in text


def test_sequences_at_the_limit_are_accepted(kind):
    assert parse(kind, "gpt2", seq=1024).kv_len == 1024
    assert parse(kind, "mistral-7b-v0.1", seq=4096).kv_len == 4096
    assert parse(kind, "qwen2-7b-instruct", seq=8192).window == 0  # window declared but off


def test_falcon_7b_shares_one_norm_between_parallel_branches(kind):
    p = parse(kind, "falcon-7b", seq=32)
    o = ops(kind, p)
    assert "norm_mlp" not in o and "residual_attn" not in o
    assert o["mlp_up"].problem.a.name == "h_attn"  # the MLP reads the attention's norm
    assert o["qkv_proj"].problem.n == (71 + 2) * 64  # multi-query: one K and one V head
    residual = o["residual"].problem
    assert [t.name for t in residual.read_tensors] == ["x", "attn_out", "mlp_out"]
    assert residual.flops == 2 * 32 * 4544


def test_falcon_40b_has_a_norm_per_parallel_branch(kind):
    o = ops(kind, parse(kind, "falcon-40b", seq=32))
    assert o["norm_mlp"].problem.read_tensors[0].name == "x"  # reads the layer input, not the residual
    assert o["mlp_up"].problem.a.name == "h_mlp"
    assert o["qkv_proj"].problem.n == (128 + 2 * 8) * 64
    assert "residual_attn" not in o and "residual" in o


def test_gemma_head_dim_differs_from_hidden_over_heads(kind):
    o = ops(kind, parse(kind, "gemma-7b", seq=8))
    assert o["qkv_proj"].problem.n == (16 + 2 * 16) * 256
    assert (o["o_proj"].problem.k, o["o_proj"].problem.n) == (16 * 256, 3072)


def test_decode_of_a_real_model_predicts_on_every_gpu_target(host):
    spec = f"transformer:config={CONFIGS / 'llama-2-7b'},phase=decode,context=2048,batch=8"
    for name in ("h200", "rtx3050-laptop"):
        (w,) = predict([resolve_spec(host, spec)], host.target(name), host.mappings()).workloads
        assert w.bottleneck == "memory" and w.latency_s > 0
        # 32 layers of weights (13.2 GB in bf16) plus the LM head and the KV cache
        assert w.compulsory_bytes > 32 * 202_383_360 * 2


@pytest.mark.parametrize("block", ["sequential", "parallel", "parallel_shared_norm"])
@pytest.mark.parametrize("extras", [{}, {"final_norm": "false", "vocab": 0}, {"vocab": 50}])
def test_the_torch_builder_runs_each_block_structure(kind, block, extras):
    torch = pytest.importorskip("torch")
    from tf_transformer.torch_builder import TransformerTorch

    p = kind.parse(
        {
            "hidden": 32,
            "layers": 2,
            "heads": 4,
            "kv_heads": 2,
            "mlp": "gelu",
            "norm": "layernorm",
            "block": block,
            "batch": 2,
            "seq": 8,
            "dtype": "fp32",
            **extras,
        }
    )
    torch.manual_seed(0)
    out = TransformerTorch().build(p, torch.device("cpu"))()
    width = p.vocab if p.with_lm_head else p.hidden
    assert tuple(out.shape) == (2, 8, width) and torch.isfinite(out).all()


# -- the encoder, OPT and GPT-NeoX families ------------------------------------------------------


@pytest.mark.parametrize("name", ["bert-base-uncased", "roberta-base"])
def test_encoders_are_post_norm_bidirectional_and_headless(kind, name):
    p = parse(kind, name, seq=512, batch=2)
    assert (p.post_norm, p.causal, p.final_norm, p.with_lm_head) == (True, False, False, False)
    names = [o.name for o in kind.operators(p)]
    assert names == [
        "qkv_proj",
        "attention",
        "o_proj",
        "residual_attn",
        "norm_attn",  # each LayerNorm after its residual add, none at the end
        "mlp_up",
        "mlp_act",
        "mlp_down",
        "residual_mlp",
        "norm_mlp",
    ]
    o = ops(kind, p)
    assert o["qkv_proj"].problem.a.name == "x"  # the layer input itself, no norm before
    assert o["norm_attn"].problem.read_tensors[0].name == o["norm_attn"].problem.write_tensors[0].name == "x"
    assert o["mlp_up"].problem.a.name == "x"
    assert not o["attention"].problem.causal  # every token sees the whole sequence
    assert o["attention"].problem.visible_pairs == 512 * 512
    assert "lm_head" in ops(kind, parse(kind, name, seq=8, lm_head="true"))  # the vocabulary projection
    with pytest.raises(TensorForgeError, match="exceeds the model's max_positions=512"):
        parse(kind, name, seq=513)  # RoBERTa: 514 position embeddings, 2 before the first token


def test_opt_has_a_relu_mlp_and_a_pre_norm_with_final_norm(kind):
    p = parse(kind, "opt-1.3b", seq=128)
    o = ops(kind, p)
    assert (p.post_norm, p.causal, p.rope, p.final_norm) == (False, True, False, True)
    act = o["mlp_act"].problem
    assert (act.flops, act.special_ops) == (128 * 8192, 0)  # max(x, 0): no transcendental
    assert o["mlp_up"].problem.n == 8192 and o["lm_head"].problem.n == 50272
    assert kind.implementation(p)["mlp_act"].kernels == 1


def test_opt_with_projected_embeddings_or_post_norm(kind, tmp_path):
    data = json.loads((CONFIGS / "opt-1.3b" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**data, "word_embed_proj_dim": 512}))
    with pytest.raises(TensorForgeError, match=r"word_embed_proj_dim=512 differs from hidden_size=2048"):
        kind.parse({"config": str(tmp_path)})
    (tmp_path / "config.json").write_text(json.dumps({**data, "do_layer_norm_before": False}))
    p = kind.parse({"config": str(tmp_path), "seq": 8})
    assert p.post_norm and not p.final_norm


def test_pythia_runs_parallel_branches_and_rotates_a_quarter_of_each_head(kind):
    p = parse(kind, "pythia-1.4b", seq=256, batch=2)
    assert (p.block, p.rope_dims, p.head_dim) == ("parallel", 32, 128)
    o = ops(kind, p)
    assert o["norm_mlp"].problem.read_tensors[0].name == "x" and o["mlp_up"].problem.a.name == "h_mlp"
    # q and k of 512 tokens x 16 heads, 32 of 128 dims rotated, bf16: read and written in place
    rot = 512 * (16 + 16) * 32 * 2
    rope = o["rope"].problem
    assert rope.read_tensors[0].nbytes == rope.write_tensors[0].nbytes == rot
    assert rope.flops == 3 * 512 * 32 * 32
    impl = kind.implementation(p)["rope"]
    assert (impl.kernels, impl.traffic_factor) == (12, 5.0 + 4.0)  # the cat rewrites whole heads
    sequential = ops(kind, kind.parse({"config": str(CONFIGS / "pythia-1.4b"), "seq": 8, "block": "sequential"}))
    assert "residual_attn" in sequential


@pytest.mark.parametrize(
    "change, message",
    [
        ({"model_type": "bert", "position_embedding_type": "relative_key"}, "position_embedding_type='relative_key'"),
        ({"model_type": "gpt_neox", "rotary_pct": 1.5}, "'rotary_pct' must be a number in (0, 1], got 1.5"),
    ],
)
def test_what_a_family_reader_cannot_model_is_refused_in_one_line(kind, tmp_path, change, message):
    data = json.loads((CONFIGS / "bert-base-uncased" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**data, **change}))
    with pytest.raises(TensorForgeError) as info:
        kind.parse({"config": str(tmp_path)})
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"post_norm": "true", "block": "parallel"}, "post_norm=true (a norm after each residual add) needs block"),
        ({"rope_dims": 6, "rope": "false"}, "rope_dims (the dimensions RoPE rotates) needs rope=true"),
        ({"rope_dims": 7}, "rope_dims=7 must be even and at most head_dim=8"),
        ({"rope_dims": 10}, "rope_dims=10 must be even and at most head_dim=8"),
        ({"attention": "flash"}, "attention must be one of sdpa, eager, got 'flash'"),
    ],
)
def test_new_options_are_checked(kind, fields, message):
    with pytest.raises(TensorForgeError) as info:
        kind.parse({"hidden": 32, "layers": 1, "heads": 4, **fields})
    assert str(info.value).startswith("transformer: " + message)


# -- attention=eager ------------------------------------------------------------------------------


def test_eager_gpt2_writes_the_score_matrix_and_reads_it_back(kind):
    p = kind.parse({"config": str(CONFIGS / "gpt2"), "seq": 1024, "batch": 8, "dtype": "fp16", "attention": "eager"})
    names = [o.name for o in kind.operators(p)]
    assert "attention" not in names
    assert names[names.index("qkv_proj") + 1 : names.index("o_proj")] == [
        "attn_scores",
        "attn_scale",
        "attn_mask",
        "attn_softmax",
        "attn_context",
    ]
    o = ops(kind, p)
    scores = 8 * 12 * 1024 * 1024 * 2  # batch x heads x queries x keys, fp16: 201 MB per layer
    tokens = 8 * 1024 * 12 * 64 * 2  # queries (or keys, values, context) of every head
    qk = o["attn_scores"].problem
    assert (qk.batch, qk.m, qk.n, qk.k) == (96, 1024, 1024, 64)
    assert qk.flops == 2 * 96 * 1024 * 1024 * 64  # every pair: the mask saves no work
    assert (qk.a.nbytes, qk.b.nbytes, qk.c.nbytes, qk.c.name) == (tokens, tokens, scores, "scores")
    for name in ("attn_scale", "attn_mask"):
        stream = o[name].problem
        assert [t.nbytes for t in stream.read_tensors + stream.write_tensors] == [scores, scores]
        assert stream.flops == scores // 2  # one per score
    softmax = o["attn_softmax"].problem
    assert (softmax.read_tensors[0].name, softmax.write_tensors[0].name) == ("scores", "probs")
    assert (softmax.flops, softmax.special_ops) == (5 * scores // 2, scores // 2)
    pv = o["attn_context"].problem
    assert (pv.batch, pv.m, pv.n, pv.k) == (96, 1024, 64, 1024)
    assert (pv.a.name, pv.a.nbytes, pv.c.name, pv.c.nbytes) == ("probs", scores, "attn", tokens)
    assert all(o[n].count == 12 for n in ("attn_scores", "attn_scale", "attn_softmax", "attn_context"))
    # torch.matmul copies the token-major q, k and v views (batch and heads cannot fold) and the
    # context back to tokens: declared for the estimate, left out of the bound
    impl = kind.implementation(p)
    assert (impl["attn_scores"].layout_copy_kernels, impl["attn_scores"].layout_copy_bytes) == (2, 4 * tokens)
    assert (impl["attn_context"].layout_copy_kernels, impl["attn_context"].layout_copy_bytes) == (2, 4 * tokens)
    assert impl["attn_softmax"].pattern == "softmax_rows" and impl["attn_scale"].pattern == "elementwise"
    sdpa = kind.parse({"config": str(CONFIGS / "gpt2"), "seq": 1024, "batch": 8, "dtype": "fp16"})
    assert sdpa.attention == "sdpa"
    assert kind.footprint_bytes(p) == kind.footprint_bytes(sdpa) + 2 * scores  # scores and probabilities


def test_eager_grouped_query_decode_repeats_the_cache_and_needs_no_mask(kind):
    p = parse(kind, "llama-3-8b", phase="decode", context=2047, seq=1, batch=4, attention="eager", layers=2)
    o = ops(kind, p)
    assert "attn_mask" not in o  # one query at the end sees every key
    rep = o["repeat_kv"].problem
    cache = 4 * 8 * 2048 * 128 * 2
    assert [t.name for t in rep.read_tensors] == ["k_cache", "v_cache"] and rep.read_tensors[0].nbytes == cache
    assert [t.nbytes for t in rep.write_tensors] == [4 * cache, 4 * cache]  # 32 query heads over 8 KV heads
    assert o["attn_scores"].problem.b.name == "k_rep" and o["attn_context"].problem.b.name == "v_rep"
    assert o["attn_scores"].problem.c.nbytes == 4 * 32 * 1 * 2048 * 2
    impl = kind.implementation(p)
    assert impl["attn_scores"].layout_copy_kernels == impl["attn_context"].layout_copy_kernels == 0
    # one KV head: the expand is a view, no operator
    mqa = ops(kind, kind.parse({"hidden": 64, "layers": 1, "heads": 4, "kv_heads": 1, "attention": "eager", "seq": 4}))
    assert "repeat_kv" not in mqa and mqa["attn_scores"].problem.b.name == "qkv"


def test_eager_under_tensor_parallelism_is_one_ranks_heads(kind):
    p = parse(kind, "llama-3-8b", seq=256, tp=2, attention="eager", lm_head="false")
    o = ops(kind, p)
    assert o["attn_scores"].problem.batch == 16 and o["attn_scores"].problem.c.nbytes == 16 * 256 * 256 * 2
    assert kind.implementation(p)["attn_scores"].leading_dims == (128, 128, 256)


EAGER = [
    f"transformer:config={CONFIGS / 'gpt2'},seq=1024,batch=8,dtype=fp16,attention=eager",
    f"transformer:config={CONFIGS / 'bert-base-uncased'},seq=512,batch=8,dtype=fp16,attention=eager",
    f"transformer:config={CONFIGS / 'llama-3-8b'},phase=decode,context=2048,batch=8,attention=eager",
    f"transformer:config={CONFIGS / 'pythia-1.4b'},seq=2048,attention=eager",
]


@pytest.mark.parametrize("target", ["h200", "rtx3050-laptop"])
def test_eager_bound_and_estimate_are_positive_ordered_and_above_sdpa(host, target):
    specs = EAGER + [s.replace(",attention=eager", "") for s in EAGER]
    prediction = run_prediction(host, target, specs)
    eager, fused = prediction.workloads[: len(EAGER)], prediction.workloads[len(EAGER) :]
    for e, f in zip(eager, fused):
        assert e.latency_s > 0 and e.estimate.device_s >= e.estimate.bound_s == e.latency_s, e.name
        # the score matrix's round trips: eager is never faster than the fused kernel, bound or estimate
        assert e.latency_s >= f.latency_s and e.estimate.device_s > f.estimate.device_s, e.name
        assert e.compulsory_bytes == f.compulsory_bytes  # the scores are internal to the workload
        declared = {o.name: o.implementation for o in e.estimate.operators}
        assert declared["attn_softmax"] == declared["attn_scores"] == "declared by the workload plugin"


@contextlib.contextmanager
def _copies_per_range(torch):
    """aten::copy_ calls inside each operator range of what runs in the block: a CPU profile by
    the autograd profiler (milliseconds to start, where Kineto's takes seconds)."""
    from torch.autograd.profiler_legacy import profile

    from tensorforge_measure.measure import op_ranges

    counts = collections.Counter()

    @contextlib.contextmanager
    def record(name):
        with torch.autograd.profiler.record_function("range:" + name):
            yield

    with op_ranges.recording(record), profile() as prof:
        yield counts
    for event in prof.function_events:
        if event.name == "aten::copy_":
            parent = event.cpu_parent
            while parent is not None and not parent.name.startswith("range:"):
                parent = parent.cpu_parent
            if parent is not None:
                counts[parent.name.removeprefix("range:")] += 1


@pytest.mark.parametrize(
    "extra",
    [
        "batch=2,seq=5",  # q and k views copied for the scores; v and the context for P @ V
        "batch=2,seq=5,rope_dims=4",  # partial RoPE's cat leaves q and k head-major
        "batch=2,kv_heads=2,seq=5,rope=false,causal=false",  # repeat_kv's K and V are head-major
        "batch=2,kv_heads=1,seq=3,phase=decode,context=4",  # one KV head: the expanded view is copied
        "seq=5",  # batch 1: batch and heads fold without a copy; only the context's transpose
    ],
)
def test_eager_builder_matches_sdpa_and_its_declared_layout_copies(kind, extra):
    torch = pytest.importorskip("torch")
    from tf_transformer.torch_builder import TransformerTorch

    fields = dict(f.split("=") for f in f"hidden=32,layers=2,heads=4,vocab=50,dtype=fp32,{extra}".split(","))
    fused = TransformerTorch().build(kind.parse(fields), torch.device("cpu"))()
    p = kind.parse({**fields, "attention": "eager"})
    run = TransformerTorch().build(p, torch.device("cpu"))
    assert torch.allclose(run(), fused, atol=1e-4)  # the same weights, the same outputs
    with torch.inference_mode(), _copies_per_range(torch) as copies:
        run()
    impl = kind.implementation(p)
    for name in ("attn_scores", "attn_context"):
        assert copies[name] == p.layers * impl[name].layout_copy_kernels, name
