"""Model configs read correctly: every config under examples/configs (written from the values
the publishers released) gives the published architecture, the published parameter count,
the right block structure, its LM head and its position limits; the PyTorch builder mirrors
every block structure the Core decomposes."""

from pathlib import Path

import pytest

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
}

# Published parameter counts, and what TensorForge's weights leave out of them: the input
# embedding table when it is not tied to the LM head, GPT-2's learned position table, and bias
# vectors (GPT-2's linear and LayerNorm biases, Qwen2's QKV biases, Falcon's LayerNorm biases).
PUBLISHED_PARAMETERS = {
    "llama-2-7b": (6_738_415_616, 32000 * 4096, 0),
    "llama-3-8b": (8_030_261_248, 128256 * 4096, 0),
    "mistral-7b-v0.1": (7_241_732_096, 32000 * 4096, 0),
    "qwen2-7b-instruct": (7_615_616_512, 152064 * 3584, 28 * (3584 + 2 * 512)),
    "gpt2": (124_439_808, 1024 * 768, 12 * (3 * 768 + 768 + 3072 + 768 + 2 * 768) + 768),
    "falcon-7b": (6_921_720_704, 0, 32 * 4544 + 4544),
    "gemma-7b": (8_537_680_896, 0, 0),
}


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
