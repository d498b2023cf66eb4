import tf_attention

from tensorforge.testing import assert_loaded, check_workload_kind, fresh_host


def test_every_preset_is_well_formed():
    check_workload_kind(tf_attention.Attention())


def test_flops_of_a_small_causal_prefill():
    kind = tf_attention.Attention()
    params = kind.parse({"heads": 2, "q_len": 4, "kv_len": 4, "head_dim": 8, "causal": True})
    (op,) = kind.operators(params)
    assert op.problem.flops == 4 * 2 * (1 + 2 + 3 + 4) * 8  # QK^T and PV, visible pairs only


def test_decode_is_memory_bound():
    (prediction,) = check_workload_kind(tf_attention.Attention(), [{"heads": 8, "q_len": 1, "kv_len": 8192}])
    assert prediction.bottleneck == "memory"  # it streams the KV cache once


def test_predict_on_the_command_line(tensorforge_cli):
    result = tensorforge_cli("predict", "-t", "reference", "-w", "attention_prefill_4k", plugins=[tf_attention])
    assert result.exit_code == 0, result.output
    assert "attention_prefill_4k" in result.stdout


def test_a_bad_parameter_is_one_line(tensorforge_cli):
    result = tensorforge_cli(
        "predict", "-t", "reference", "-w", "attention:heads=0,q_len=1,kv_len=1", plugins=[tf_attention]
    )
    assert (result.exit_code, result.stderr) == (2, "error: attention: heads must be >= 1, got 0\n")


def test_installed_it_is_found_through_its_entry_point():
    report = assert_loaded(fresh_host(entry_points=True), "attention")
    assert report.registered == {"workloads": ("attention",)}
