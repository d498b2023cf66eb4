"""tf-vector's workload kinds (softmax, norm, activation, elementwise): specs parse and bad ones
are refused in one line naming the parameter; FLOPs, transcendentals and bytes are what hand
arithmetic gives; the bound and the estimate are positive with the estimate never below the
bound on a datacentre and a laptop GPU; the PyTorch builders compute what the kinds describe."""

import pytest
from click.testing import CliRunner

from tensorforge.api import run_prediction
from tensorforge.errors import TensorForgeError
from tensorforge.workloads.suite import resolve_spec

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

KINDS = ("softmax", "norm", "activation", "elementwise")


def operator(host, spec):
    workload, kind = resolve_spec(host, spec)
    (op,) = kind.operators(workload.params)
    return workload, kind, op


def traffic(problem):
    return {t.name: t.nbytes for t in problem.reads()}, {t.name: t.nbytes for t in problem.writes()}


def test_specs_parse_and_round_trip(host):
    specs = [
        "softmax:rows=4096,cols=1024,dtype=fp32",
        "norm:rows=4096,cols=1024,norm=rms,dtype=fp32",
        "activation:rows=4096,cols=1024,fn=silu,dtype=bf16",
        "elementwise:rows=4096,cols=1024,op=pow,operand=scalar,dtype=fp16",
    ]
    for spec in specs:
        workload, kind = resolve_spec(host, spec)
        assert workload.spec == spec and kind.spec(workload.params) == spec
    # aliases and defaults: a tensor operand, bf16
    workload, _ = resolve_spec(host, "elementwise:rows=2,cols=3,op=ADD,dtype=float16")
    assert (workload.params.operand, workload.params.dtype) == ("tensor", "fp16")
    assert resolve_spec(host, "softmax:rows=2,cols=3")[0].params.dtype == "bf16"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("softmax:rows=0,cols=8", "softmax: rows must be >= 1, got 0"),
        ("softmax:rows=2,cols=x", "softmax: cols must be an integer, got 'x'"),
        ("softmax:rows=2", "softmax: missing parameter 'cols'"),
        ("softmax:rows=2,cols=8,dim=1", "softmax: unknown parameter 'dim'"),
        ("softmax:rows=2,cols=8,dtype=int8", "softmax: dtype must be one of fp32, fp16, bf16, got 'int8'"),
        ("norm:rows=2,cols=8,norm=rms,dtype=fp64", "norm: dtype must be one of fp32, fp16, bf16, got 'fp64'"),
        ("norm:rows=2,cols=8,norm=batch", "norm: norm must be one of layer, rms, got 'batch'"),
        ("norm:rows=2,cols=8", "norm: missing parameter 'norm'"),
        ("activation:rows=2,cols=8,fn=swish", "activation: fn must be one of gelu, silu, relu, tanh, got 'swish'"),
        ("elementwise:rows=2,cols=8,op=sub", "elementwise: op must be one of add, mul, div, pow, got 'sub'"),
        ("elementwise:rows=2,cols=8,op=add,operand=vector", "elementwise: operand must be one of tensor, scalar"),
    ],
)
def test_bad_params_are_refused_in_one_line_naming_the_parameter(host, spec, message):
    with pytest.raises(TensorForgeError) as info:
        resolve_spec(host, spec)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_the_command_line_refuses_with_exit_2_and_one_line(cli):
    result = CliRunner().invoke(cli, ["predict", "-t", "h200", "-w", "softmax:rows=-1,cols=8,dtype=fp32"])
    assert result.exit_code == 2
    assert result.stderr == "error: softmax: rows must be >= 1, got -1\n"


def test_softmax_reads_and_writes_the_tensor_once(host):
    _, _, op = operator(host, "softmax:rows=4096,cols=1024,dtype=fp32")
    n = 4096 * 1024
    assert traffic(op.problem) == ({"x": 4 * n}, {"y": 4 * n})
    assert (op.problem.flops, op.problem.special_ops) == (5 * n, n)  # max, sub, exp, add, scale; one exp
    assert op.problem.math_mode == "fp32" and op.count == 1


def test_norms_read_their_weight_and_layer_norm_its_bias(host):
    n = 4096 * 768
    _, _, layer = operator(host, "norm:rows=4096,cols=768,norm=layer,dtype=fp16")
    assert traffic(layer.problem) == ({"x": 2 * n, "weight": 2 * 768, "bias": 2 * 768}, {"y": 2 * n})
    assert (layer.problem.flops, layer.problem.special_ops) == (7 * n, 4096)  # one rsqrt per row
    _, _, rms = operator(host, "norm:rows=4096,cols=768,norm=rms,dtype=bf16")
    assert traffic(rms.problem) == ({"x": 2 * n, "weight": 2 * 768}, {"y": 2 * n})
    assert (rms.problem.flops, rms.problem.special_ops) == (4 * n, 4096)


@pytest.mark.parametrize("fn, flops, special", [("gelu", 5, 1), ("silu", 4, 1), ("relu", 1, 0), ("tanh", 1, 1)])
def test_activations_count_their_transcendentals(host, fn, flops, special):
    _, _, op = operator(host, f"activation:rows=1000,cols=300,fn={fn},dtype=bf16")
    n = 300_000
    assert traffic(op.problem) == ({"x": 2 * n}, {"y": 2 * n})
    assert (op.problem.flops, op.problem.special_ops) == (flops * n, special * n)


@pytest.mark.parametrize(
    "op_name, operand, flops, special, inputs",
    [
        ("add", "tensor", 1, 0, 2),
        ("div", "tensor", 1, 0, 2),
        ("pow", "tensor", 3, 2, 2),  # exp(b * log(a))
        ("mul", "scalar", 1, 0, 1),
        ("pow", "scalar", 1, 0, 1),  # a ** 2 = a * a
    ],
)
def test_elementwise_reads_one_or_two_tensors(host, op_name, operand, flops, special, inputs):
    _, _, op = operator(host, f"elementwise:rows=8192,cols=4096,op={op_name},operand={operand},dtype=fp32")
    n = 8192 * 4096
    reads, writes = traffic(op.problem)
    assert reads == {"a": 4 * n, "b": 4 * n} if inputs == 2 else reads == {"a": 4 * n}
    assert writes == {"out": 4 * n}
    assert (op.problem.flops, op.problem.special_ops) == (flops * n, special * n)


@pytest.mark.parametrize("target", ["h200", "rtx3050-laptop"])
def test_bound_and_estimate_are_positive_and_ordered(host, target):
    presets = [name for name in host.preset_names() if host.preset(name)[0].name in KINDS]
    assert len(presets) == 8
    specs = presets + ["softmax:rows=1,cols=8,dtype=fp32", "elementwise:rows=3,cols=5,op=pow,dtype=fp16"]
    prediction = run_prediction(host, target, specs)
    for w in prediction.workloads:
        assert w.latency_s > 0 and w.flops > 0, w.name
        assert w.estimate.device_s >= w.estimate.bound_s == w.latency_s, w.name
        assert w.estimate.eager_s >= w.estimate.device_s, w.name
        (op,) = w.estimate.operators
        assert op.implementation == "declared by the workload plugin", w.name
    by_name = {w.name: w for w in prediction.workloads}
    # the large ones stream from DRAM: the bound is their bytes at the datasheet bandwidth
    big = by_name["softmax_attn_scores"]
    assert big.bottleneck == "memory" and big.compulsory_bytes == 2 * 65536 * 2048 * 2
    assert by_name["norm_rms_llama"].estimate.operators[0].mapping == "1 norm kernel"
    assert by_name["elementwise_scale"].estimate.operators[0].mapping == "1 elementwise kernel"


def test_workloads_lists_the_kinds(cli):
    result = CliRunner().invoke(cli, ["workloads"])
    assert result.exit_code == 0
    for kind, params in [
        ("softmax", "rows, cols, dtype"),
        ("norm", "rows, cols, norm, dtype"),
        ("activation", "rows, cols, fn, dtype"),
        ("elementwise", "rows, cols, op, operand, dtype"),
    ]:
        assert f"\n{kind}: " in "\n" + result.stdout and f"  parameters: {params}\n" in result.stdout
    assert "softmax_attn_scores: softmax:rows=65536,cols=2048,dtype=bf16" in result.stdout


def test_the_torch_builders_compute_what_the_kinds_describe(host):
    torch = pytest.importorskip("torch")
    from tf_vector.torch_builder import SCALARS, ActivationTorch, ElementwiseTorch, NormTorch, SoftmaxTorch

    cpu = torch.device("cpu")

    def params(spec):
        return resolve_spec(host, spec)[0].params

    torch.manual_seed(0)
    y = SoftmaxTorch().build(params("softmax:rows=3,cols=7,dtype=fp32"), cpu)()
    assert y.shape == (3, 7) and torch.allclose(y.sum(-1), torch.ones(3))
    for norm in ("layer", "rms"):
        y = NormTorch().build(params(f"norm:rows=3,cols=64,norm={norm},dtype=fp32"), cpu)()
        assert y.shape == (3, 64) and torch.isfinite(y).all()
    y = ActivationTorch().build(params("activation:rows=2,cols=5,fn=relu,dtype=fp32"), cpu)()
    assert (y >= 0).all()
    assert SCALARS["pow"] == 2.0  # elementwise.py counts one multiplication for it
    for op in ("add", "mul", "div", "pow"):
        for operand in ("tensor", "scalar"):
            out = ElementwiseTorch().build(
                params(f"elementwise:rows=2,cols=5,op={op},operand={operand},dtype=fp32"), cpu
            )()
            assert out.shape == (2, 5) and torch.isfinite(out).all(), (op, operand)
