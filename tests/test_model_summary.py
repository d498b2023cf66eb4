"""`predict --model` (tensorforge/serving/): one model's prefill and decode steps at a batch and a
context, composed into time to first token, time per output token, tokens/s, joules per token
and a memory budget; the figures checked against Llama-3-8B's config by hand."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tensorforge.api import predict
from tensorforge.cli.main import main
from tensorforge.energy.coefficients import energy_basis
from tensorforge.energy.predicted import predicted_energy
from tensorforge.serving.summary import largest_batch, resolve_model, summarize

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

ROOT = Path(__file__).resolve().parent.parent
LLAMA = str(ROOT / "examples" / "configs" / "llama-3-8b" / "config.json")
GiB = 2**30

# Llama-3-8B (its config.json): 32 layers, hidden 4096, 32 heads, 8 KV heads of 128, MLP 14336,
# vocabulary 128256, bf16 (2 bytes)
KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # K and V, every layer: 131072 B
LAYER = 4096 * (32 + 2 * 8) * 128 + 32 * 128 * 4096 + 4096 * 2 * 14336 + 14336 * 4096 + 2 * 4096
WEIGHTS = (32 * LAYER + 4096 + 128256 * 4096) * 2  # layers, final norm, LM head
EMBEDDINGS = 128256 * 4096 * 2


@pytest.fixture(scope="module")
def llama(host):
    """Llama-3-8B at batch 8, context 8192 on the H200: its steps, their prediction, the summary."""
    target = host.target("h200")
    steps = resolve_model(host, LLAMA, 8, 8192)
    pred = predict(steps.workloads, target, host.mappings(), estimate=True)
    energy = predicted_energy(pred, target, energy_basis(target), {w.name: (k, w.params) for w, k in steps.workloads})
    return steps, pred, energy, summarize(steps, pred, target, energy)


def test_the_memory_budget_by_hand(llama):
    steps, _, _, s = llama
    m = s.memory
    assert m.parts_bytes["kv_cache"] == 8 * 8192 * KV_PER_TOKEN == 8_589_934_592
    assert m.parts_bytes["weights"] == WEIGHTS == 15_009_849_344
    assert m.parts_bytes["embeddings"] == EMBEDDINGS
    # prefill holds the most: 8 x 8192 tokens of QKV, gated MLP-up and two hidden-width tensors,
    # and the logits of the last position of each sequence
    assert m.step == "prefill"
    assert m.parts_bytes["activations"] == 8 * 8192 * (6144 + 28672 + 2 * 4096) * 2 + 8 * 128256 * 2
    assert (m.capacity_bytes, m.fits) == (140 * GiB, True)
    per_sequence = 8192 * KV_PER_TOKEN + 8192 * (6144 + 28672 + 2 * 4096) * 2 + 128256 * 2
    expected = (140 * GiB - WEIGHTS - EMBEDDINGS) // per_sequence
    assert m.largest_batch == expected == 75


def test_the_largest_batch_is_the_edge_of_the_fit(llama):
    steps = llama[0]
    capacity = 40 * GiB
    largest, capped = largest_batch(steps.kind, steps.params, 8192, capacity)
    need = lambda b: sum(steps.kind.memory(steps.kind.serving(steps.params, b, 8192)[0]).values())  # noqa: E731
    assert not capped and need(largest) <= capacity < need(largest + 1)
    assert largest_batch(steps.kind, steps.params, 8192, 10 * GiB) == (0, False)  # the weights alone exceed it


def test_the_steps_are_a_prompt_prefill_and_one_decode_step(llama):
    steps, pred, _, s = llama
    prefill, decode = steps.prefill.params, steps.decode.params
    assert (prefill.batch, prefill.seq, prefill.phase, prefill.logits) == (8, 8192, "prefill", "last")
    assert (decode.batch, decode.seq, decode.phase, decode.kv_len) == (8, 1, "decode", 8192)
    head = next(o for o in pred.workload("prefill").operators if o.name == "lm_head")
    assert head.flops == 2 * 8 * 4096 * 128256  # the last position of each sequence only
    assert (s.prefill.tokens, s.decode.tokens, s.devices) == (8 * 8192, 8, 1)


def test_times_rates_and_joules_per_token_follow_from_the_steps(llama):
    _, pred, energy, s = llama
    decode, prefill = pred.workload("decode"), pred.workload("prefill")
    assert s.time_per_output_token_bound_s == min(decode.latency_s, decode.warm_latency_s)
    assert s.time_per_output_token_estimate_s == decode.estimate.for_protocol("graph-warm")
    assert s.time_to_first_token_estimate_s == prefill.estimate.for_protocol("graph-warm")
    assert s.output_tokens_per_s_estimate == pytest.approx(8 / s.time_per_output_token_estimate_s)
    assert s.output_tokens_per_s_bound == pytest.approx(8 / s.time_per_output_token_bound_s)
    assert s.output_tokens_per_s_bound > s.output_tokens_per_s_estimate
    step = energy.workloads["decode"]
    assert s.joules_per_output_token_estimate == pytest.approx(step.graph_estimate_j / 8)
    assert s.joules_per_output_token_floor == pytest.approx(step.floor_j / 8)
    assert s.joules_per_prompt_token_floor == pytest.approx(energy.workloads["prefill"].floor_j / (8 * 8192))
    assert 0 < s.joules_per_output_token_floor < s.joules_per_output_token_estimate


def test_tensor_parallel_memory_is_per_device(host):
    steps = resolve_model(host, f"{LLAMA}:tp=2", 8, 8192)
    parts = steps.kind.memory(steps.decode.params)
    assert parts["kv_cache"] == 8 * 8192 * KV_PER_TOKEN // 2 and steps.kind.devices(steps.decode.params) == 2
    assert parts["weights"] < WEIGHTS // 2 + 4096 * 2 * 32 * 2  # split but for the replicated norms


def test_predict_model_prints_a_short_table_and_json(cli):
    args = ["predict", "-t", "h200", "--model", "transformer_decode", "--batch", "2", "--context", "512"]
    text = CliRunner(env={"COLUMNS": "80"}).invoke(cli, args)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert len(lines) <= 16 and max(map(len, lines)) <= 80
    assert lines[0].startswith("PREDICTED  transformer_decode on h200 (1 device): batch 2, context 512")
    assert any(line.startswith("time per output token") and ">=" in line for line in lines)
    data = json.loads(CliRunner().invoke(cli, [*args, "--json"]).stdout)
    assert data["model"]["decode"]["tokens"] == 2 and data["model"]["prefill"]["tokens"] == 1024
    assert [w["name"] for w in data["workloads"]] == ["prefill", "decode"] and "energy" in data


@pytest.mark.parametrize(
    "args, says",
    [
        (["--model", "no/such/config.json"], "no/such/config.json"),
        (["--model", LLAMA, "--batch", "0"], "'--batch': 0"),
        (["--model", LLAMA, "--context", "1"], "'--context': 1"),
        (["--batch", "4"], "--batch and --context apply to --model"),
        (["--model", "gemm_tiny"], "is not a generative model"),
        (["--model", LLAMA, "--context", "9000"], "max_positions=8192"),
    ],
)
def test_bad_input_gets_one_line_and_a_non_zero_exit(args, says, capsys):
    with pytest.raises(SystemExit) as info:
        main(["predict", "-t", "h200", *args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("error: ") and says in err


@pytest.mark.parametrize("width", (80, 120))
def test_the_table_breaks_no_token_on_a_narrow_screen(llama, width):
    from test_cli_widths import check

    from tensorforge.cli.screen import Screen
    from tensorforge.serving.render import summary_text

    s = llama[3]
    extra = ("ESTIMATE   not a bound (carried-over): calibrated on an H200", "energy     shipped coefficients: x")
    check(summary_text(s, Screen(width), *extra), summary_text(s, Screen(10_000), *extra), width)
