"""phase=train for the GEMM, Conv2D and transformer kinds: the backward operators (shapes, FLOPs =
2x the forward's, attention's backward 2.5x), the parameter-side operators (fp32 masters,
accumulation, optimizers) and their bytes, the parameters' validation, the bound's treatment of
inputs read again by the gradients, and the PyTorch builders on the CPU: the gradients autograd
computes are the reference's, the optimizer updates the weights."""

import pytest

from tensorforge.bound.model import predict, rereads
from tensorforge.errors import TensorForgeError
from tensorforge.host.plugin_host import PluginHost
from tensorforge.testing import check_workload_kind
from tensorforge.workloads.problems import AttentionBackwardProblem, AttentionProblem, Operator, StreamProblem, Tensor
from tensorforge.workloads.suite import resolve_spec
from tensorforge.workloads.training import Training, launches

pytestmark = pytest.mark.usefixtures("clean_plugin_env")


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def ops_of(host, spec):
    workload, kind = resolve_spec(host, spec)
    return workload, kind, {op.name: op for op in kind.operators(workload.params)}


def test_the_forward_is_what_it_was(host):
    for spec, name in (("gemm_large_square", "matmul"), ("conv_resnet50_3x3", "conv2d")):
        workload, kind, ops = ops_of(host, spec)
        assert list(ops) == [name] and ops[name].count == 1
        assert "phase" not in workload.spec and "optimizer" not in workload.spec
        assert kind.footprint_bytes(workload.params) == sum(
            {t.name: t.nbytes for t in ops[name].problem.reads() + ops[name].problem.writes()}.values()
        )


@pytest.mark.parametrize(
    "spec",
    [
        "gemm:m=512,n=256,k=128,phase=train",
        "gemm:m=512,n=256,k=128,batch=3,transpose_a=true,phase=train",
        "gemm:m=512,n=256,k=128,transpose_a=true,transpose_b=true,phase=train,grad_accum=2",
    ],
)
def test_gemm_gradients_are_two_gemms_of_the_forward_size(host, spec):
    workload, _, ops = ops_of(host, spec)
    p = workload.params
    fwd, ga, gb = ops["matmul"].problem, ops["matmul_grad_a"].problem, ops["matmul_grad_b"].problem
    assert fwd.flops == 2.0 * p.batch * 512 * 256 * 128
    assert ga.flops + gb.flops == 2 * fwd.flops
    # each gradient has its operand's shape (stored transposed when the operand is) and reads
    # the forward's other operand and the output gradient
    assert (ga.m, ga.n) == ((128, 512) if p.transpose_a else (512, 128)) and ga.c.nbytes == fwd.a.nbytes
    assert (gb.m, gb.n) == ((256, 128) if p.transpose_b else (128, 256)) and gb.c.nbytes == fwd.b.nbytes
    assert {t.name for t in ga.reads()} == {"dC", "B"} and {t.name for t in gb.reads()} == {"A", "dC"}
    assert {o.count for o in ops.values() if o.name.startswith("matmul")} == {p.grad_accum}


@pytest.mark.parametrize(
    "spec",
    [
        "conv2d:n=8,c=64,h=28,w=28,k=128,padding=1,phase=train",
        "conv2d:n=8,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,padding=3,phase=train",
        "conv2d:n=8,c=256,h=14,w=14,k=256,padding=1,groups=256,phase=train",
    ],
)
def test_conv_gradients_have_the_forward_flops_each(host, spec):
    workload, kind, ops = ops_of(host, spec)
    p = workload.params
    fwd, dx, dw = (ops[n].problem for n in ("conv2d", "conv2d_grad_input", "conv2d_grad_weight"))
    assert dx.flops == dw.flops == fwd.flops == 2.0 * p.n * p.p * p.q * p.k * (p.c // p.groups) * p.r * p.s
    assert dx.c.nbytes == fwd.a.nbytes and dw.c.nbytes == fwd.b.nbytes  # dX is the input's size, dW the filter's
    assert (dw.m, dw.n, dw.k) == (p.k // p.groups, (p.c // p.groups) * p.r * p.s, p.n * p.p * p.q)
    impl = kind.implementation(p)
    assert impl["conv2d_grad_input"].conv_channels == p.k // p.groups  # reduces over output channels
    assert impl["conv2d_grad_weight"].conv_depthwise == (p.groups == p.c)


def test_the_parameter_side_operators_and_their_bytes(host):
    # B: 128 x 64 = 8192 parameters; fp32 masters, grads and AdamW state; bf16 compute copies
    spec = "gemm:m=256,n=64,k=128,dtype=bf16,phase=train,optimizer=adamw,grad_accum=3,mixed_precision=true"
    workload, kind, ops = ops_of(host, spec)
    assert list(ops) == [
        "cast_weights",
        "matmul",
        "matmul_grad_a",
        "matmul_grad_b",
        "cast_grads",
        "grad_accumulate",
        "optimizer",
    ]
    P = 8192
    counts = {name: op.count for name, op in ops.items()}
    assert counts == {n: 3 for n in ("cast_weights", "matmul", "matmul_grad_a", "matmul_grad_b", "cast_grads")} | {
        "grad_accumulate": 2,
        "optimizer": 1,
    }
    cast = ops["cast_weights"].problem
    assert [(t.name, t.nbytes) for t in cast.reads()] == [("B_master", 4 * P)]
    assert [(t.name, t.nbytes) for t in cast.writes()] == [("B", 2 * P)]
    acc = ops["grad_accumulate"].problem
    assert [(t.name, t.nbytes) for t in acc.reads()] == [("B_grad", 4 * P), ("dB_master", 4 * P)]
    opt = ops["optimizer"].problem
    assert isinstance(opt, StreamProblem) and opt.math_mode == "fp32"
    assert [t.name for t in opt.reads()] == ["B_master", "B_grad", "B_exp_avg", "B_exp_avg_sq"]
    assert [t.name for t in opt.writes()] == ["B_master", "B_exp_avg", "B_exp_avg_sq"]
    assert sum(t.nbytes for t in opt.reads() + opt.writes()) == 7 * 4 * P  # AdamW: 4 read, 3 written
    assert opt.flops == 12 * P and opt.special_ops == P
    memory = kind.memory(workload.params)
    assert memory["parameters"] == memory["gradients"] == 4 * P and memory["optimizer_state"] == 8 * P
    assert memory["inputs"] == 3 * (256 * 128 + 256 * 64) * 2  # every micro-step's A and dC
    assert memory["weight_copies"] == 2 * P and kind.activation_bytes(workload.params) == 256 * 128 * 2 + 2 * P
    assert kind.footprint_bytes(workload.params) == sum(memory.values())


def test_sgd_without_mixed_precision_keeps_state_in_the_dtype(host):
    workload, kind, ops = ops_of(host, "conv2d:n=2,c=16,h=8,w=8,k=32,dtype=fp16,phase=train,optimizer=sgd")
    P = 32 * 16 * 9
    opt = ops["optimizer"].problem
    assert [(t.name, t.nbytes) for t in opt.reads()] == [
        ("filter", 2 * P),
        ("dfilter", 2 * P),
        ("filter_momentum", 2 * P),
    ]
    assert opt.math_mode == "fp16" and opt.flops == 4 * P and "cast_weights" not in ops
    assert kind.implementation(workload.params)["optimizer"].kernels == 1


def test_fused_optimizer_launches():
    assert launches([10]) == 1 and launches([65536 * 320]) == 1 and launches([65536 * 320 + 1]) == 2
    assert Training(optimizer="adamw").update_kernels([7, 7])["optimizer"] == 2  # + the step counters' add


@pytest.mark.parametrize(
    "spec, message",
    [
        ("gemm:m=8,n=8,k=8,optimizer=adamw", "gemm: optimizer=adamw applies to phase=train, not phase=forward"),
        ("conv2d:n=1,c=4,h=6,w=6,k=4,grad_accum=2", "conv2d: grad_accum=2 applies to phase=train, not phase=forward"),
        (
            "gemm:m=8,n=8,k=8,dtype=fp32,phase=train,mixed_precision=true",
            "gemm: mixed_precision=true (fp32 master weights) needs a compute dtype of bf16 or fp16, not fp32",
        ),
        ("gemm:m=8,n=8,k=8,phase=train,grad_accum=0", "gemm: grad_accum must be >= 1, got 0"),
        ("gemm:m=8,n=8,k=8,phase=train,optimizer=adam", "gemm: optimizer must be one of none, sgd, adamw"),
        ("gemm:m=8,n=8,k=8,phase=backward", "gemm: phase must be one of forward, train"),
    ],
)
def test_bad_training_params_say_so_in_one_line(host, spec, message):
    with pytest.raises(TensorForgeError) as err:
        resolve_spec(host, spec)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_train_workloads_pass_the_plugin_authors_check(host):
    check_workload_kind(
        host.workload_kind("gemm"),
        [{"m": 64, "n": 32, "k": 16, "phase": "train", "optimizer": "adamw", "grad_accum": 2, "mixed_precision": True}],
    )
    check_workload_kind(
        host.workload_kind("conv2d"),
        [{"n": 2, "c": 8, "h": 8, "w": 8, "k": 8, "groups": 2, "stride": 2, "phase": "train", "optimizer": "sgd"}],
    )


def test_an_input_read_again_may_come_from_the_cache():
    def op(name, reads, writes):
        return Operator(name, StreamProblem(1.0, tuple(Tensor(*r) for r in reads), tuple(Tensor(*w) for w in writes)))

    ops = [
        op("fwd", [("x", 100), ("w", 10**9)], [("y", 100)]),
        op("grad_w", [("x", 100), ("dy", 100)], [("dw", 10)]),
        op("grad_x", [("dy", 100), ("w", 10**9), ("y", 100)], [("dx", 100)]),
    ]
    # x and dy again, small enough; w too large; y is the workload's own (workload_residency's)
    assert rereads(ops, cache_bytes=1000) == [frozenset(), {"x"}, {"dy"}]


def test_a_skinny_training_step_reads_its_input_once_from_dram(host):
    # A = 4096 x 4096 bf16 (32 MiB) fits the H200's L2: the weight gradient's read of it is
    # not charged to DRAM again, so no measurement can beat the bound by hitting the cache
    spec = "gemm:m=4096,n=16,k=4096,phase=train"
    pred = predict([resolve_spec(host, spec)], host.target("h200"), host.mappings(), estimate=False)
    ops = {o.name: o for o in pred.workloads[0].operators}
    a_bytes = 4096 * 4096 * 2
    assert ops["matmul"].mapping.traffic["dram"] >= a_bytes
    assert ops["matmul_grad_b"].mapping.traffic["dram"] < a_bytes
    # inputs A, B, dC and outputs C, dA (A's size), dB: each once
    assert pred.workloads[0].compulsory_bytes == 2 * a_bytes + 4 * 4096 * 16 * 2


LLAMA_LAYER = "transformer:hidden=256,layers=2,heads=8,kv_heads=2,intermediate=512,batch=2,seq=64,vocab=1000"


def test_transformer_backward_is_twice_the_projections_and_2_5x_attention(host):
    workload, kind, ops = ops_of(host, LLAMA_LAYER + ",phase=train,grad_accum=2,optimizer=adamw")
    p = workload.params
    for proj in ("qkv_proj", "o_proj", "mlp_up", "mlp_down", "lm_head"):
        fwd = ops[proj]
        grads = [ops[f"{proj}_grad_input"], ops[f"{proj}_grad_weight"]]
        assert all(g.count == fwd.count for g in grads)
        assert sum(g.problem.flops for g in grads) == 2 * fwd.problem.flops, proj
    assert ops["qkv_proj"].count == 2 * 2 and ops["lm_head"].count == 2  # layers x micro-steps; once per micro-step
    fwd, bwd = ops["attention"].problem, ops["attention_grad"].problem
    assert type(fwd) is AttentionProblem and isinstance(bwd, AttentionBackwardProblem)
    assert bwd.flops == 2.5 * fwd.flops and bwd.softmax_exps == fwd.softmax_exps
    assert [t.name for t in bwd.reads()] == ["qkv", "qkv", "qkv", "attn", "d_attn"]
    assert {t.name for t in bwd.writes()} == {"d_qkv"}
    for name in ("norm_attn_grad", "norm_mlp_grad", "mlp_act_grad", "rope_grad", "residual_attn_grad"):
        assert isinstance(ops[name].problem, StreamProblem) and ops[name].count == 4
    # the optimizer over every weight at once: 2 layers x (QKV, O, up, down, 2 norms), final norm, LM head
    P = 2 * (384 * 256 + 256 * 256 + 1024 * 256 + 256 * 512 + 2 * 256) + 256 + 1000 * 256
    assert ops["optimizer"].problem.flops == 12 * P
    assert kind.tokens(p) == 2 * 64 * 2
    assert kind.implementation(p)["optimizer"].kernels == 2


def test_transformer_memory_keeps_the_activations_for_the_backward(host):
    spec = LLAMA_LAYER.replace("seq=64", "seq=512") + ",phase=train,optimizer=adamw,mixed_precision=true"
    workload, kind, _ = ops_of(host, spec)
    memory = kind.memory(workload.params)
    P = 2 * (384 * 256 + 256 * 256 + 1024 * 256 + 256 * 512 + 2 * 256) + 256 + 1000 * 256
    assert memory["parameters"] == 4 * P and memory["optimizer_state"] == 8 * P and memory["weight_copies"] == 2 * P
    T = 2 * 512
    # per layer: x, h_attn, x_mid, h_mlp (4 x 256), QKV 384, rotated q and k 320, SDPA's output and
    # its copy 2 x 256, up 1024, silu and the product 2 x 512; 4-byte log-sum-exp per head and token
    per_layer = T * (4 * 256 + 384 + 320 + 512 + 1024 + 1024) * 2 + T * 8 * 4
    saved = 2 * per_layer + 2 * T * 256 * 2 + T * 1000 * 2  # + the final norm's input and output, the logits
    assert memory["activations"] == kind.activation_bytes(workload.params) == saved
    assert memory["gradients"] == 0  # the peak: the backward's start, before any weight's gradient
    assert kind.footprint_bytes(workload.params) == sum(memory.values())
    # few tokens: the peak is the backward's end, every weight's gradient and no activation left
    few = kind.memory(resolve_spec(host, spec.replace("seq=512", "seq=4"))[0].params)
    assert few["activations"] == 0 and few["gradients"] == 4 * P + 2 * P  # fp32, and the bf16 ones cast at once


@pytest.mark.parametrize(
    "extra, culprit",
    [
        ("block=parallel", "not block=parallel"),
        ("post_norm=true", "not post_norm=true"),
        ("attention=eager", "not attention=eager"),
        ("tp=2", "not tp=2, pp=1"),
    ],
)
def test_what_transformer_training_does_not_model_is_refused(host, extra, culprit):
    with pytest.raises(TensorForgeError) as err:
        resolve_spec(host, LLAMA_LAYER + ",phase=train," + extra)
    assert str(err.value).startswith("transformer: phase=train models pre-norm sequential blocks")
    assert str(err.value).endswith(culprit)


def test_a_transformer_training_step_predicts_with_bound_below_estimate(host):
    spec = LLAMA_LAYER + ",phase=train,optimizer=adamw,mixed_precision=true,grad_accum=2"
    pred = predict([resolve_spec(host, spec)], host.target("h200"), host.mappings())
    (w,) = pred.workloads
    assert w.estimate.device_s >= w.latency_s > 0 and w.fits_in_memory
    names = {o.name for o in w.estimate.operators if o.implementation != "declared by the workload plugin"}
    assert names == set()  # every operator's implementation is declared


def test_attention_backward_bounds_2_5x_the_forward_s_math(host):
    spec = "transformer:hidden=4096,layers=1,heads=32,kv_heads=8,batch=2,seq=4096,phase=train"
    pred = predict([resolve_spec(host, spec)], host.target("h200"), host.mappings(), estimate=True)
    (w,) = pred.workloads
    ops = {o.name: o for o in w.operators}
    fwd, bwd = ops["attention"], ops["attention_grad"]
    assert bwd.problem_type == "AttentionBackwardProblem" and bwd.flops == 2.5 * fwd.flops
    assert bwd.compute_s >= bwd.flops / pred.ceilings.compute["bf16"]  # never below the FLOPs at the peak
    assert 2.4 < bwd.latency_s / fwd.latency_s < 2.6  # compute-bound: the same blocking, 2.5x the products
    est = {o.name: o for o in w.estimate.operators}
    assert est["attention_grad"].estimate_s > est["attention"].estimate_s * 2.0


def test_the_train_step_benchmark_scores_a_capture(host):
    from script_module import load_script

    train_step = load_script("benchmarks/train_step.py")
    spec = "gemm:m=256,n=64,k=128,dtype=bf16,phase=train,optimizer=adamw"
    workload, kind = resolve_spec(host, spec)
    ops = [
        {"name": n, "count": 1, "latency_s": 1e-6} for n in ("matmul", "matmul_grad_a", "matmul_grad_b", "optimizer")
    ]
    estimate = {"device_s": 11e-6, "eager_s": 40e-6, "operators": [{"name": "matmul", "estimate_s": 3e-6}]}
    measured = {
        "status": "ok",
        "mode": "graph",
        "regime": "burst",
        "stats": {"p50": 10e-6},
        "modes": [{"mode": "eager", "regime": "burst", "stats": {"p50": 50e-6}}],
        "peak_memory_bytes": 200_000,
        "operators": {"source": "graph replay", "graph": {"operators": [{"operator": "matmul", "time_p50_s": 2e-6}]}},
    }
    doc = {
        "predicted": {
            "calibrated": {
                "workloads": [
                    {
                        "name": "w",
                        "spec": workload.spec,
                        "latency_s": 4e-6,
                        "footprint_bytes": 180_000,
                        "estimate": estimate,
                        "operators": ops,
                    }
                ]
            }
        },
        "measured": {"workloads": {"w": measured}},
        "comparison": {"same_device": True, "workloads": {"w": {"bound_check": {"verdict": "within bound"}}}},
    }
    rows, op_rows, summary, which = train_step.score(doc, host)
    (row,) = rows
    assert which == "calibrated"
    assert (row["measured_graph_s"], row["measured_eager_s"], row["bound_s"]) == (10e-6, 50e-6, 4e-6)
    assert row["device_error"] == 0.1 and row["eager_error"] == -0.2 and row["memory_error"] == -0.1
    assert row["activation_bytes"] == kind.activation_bytes(workload.params) == 256 * 128 * 2
    assert op_rows[0] == {
        "workload": "w",
        "operator": "matmul",
        "count": 1,
        "operator_measured_s": 2e-6,
        "operator_bound_s": 1e-6,
        "operator_estimate_s": 3e-6,
        "error": 0.5,
    }
    assert summary["device_within_5pct"] == 0 and summary["memory_within_10pct"] == 1
    assert summary["bound_violations"] == 0 and summary["measured"] == 1


# -- the PyTorch builders on the CPU --------------------------------------------------------------

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def ops():
    from tensorforge_measure.host import OpsHost

    return OpsHost()


def built(host, ops, spec):
    workload, _ = resolve_spec(host, spec)
    builder = ops.builder(workload.kind, "torch-cpu")
    with torch.inference_mode():  # as the backends build and call it
        fn = builder.build(workload.params, torch.device("cpu"))
    return workload.params, fn


def call(fn):
    with torch.inference_mode():
        fn()


@pytest.mark.parametrize(
    "spec",
    [
        "gemm:m=8,n=16,k=4,batch=3,transpose_a=true,dtype=fp32,phase=train,grad_accum=2",
        "gemm:m=8,n=16,k=4,transpose_b=true,dtype=fp32,phase=train",
    ],
)
def test_gemm_builder_gradients_are_autograd_s(host, ops, spec):
    p, fn = built(host, ops, spec)
    call(fn)
    (weight,) = fn.step.masters
    micro = fn.step_inputs
    expected = torch.zeros_like(weight)
    for a_stored, dc in micro:
        w = weight.detach().clone().requires_grad_()
        a = a_stored.detach().mT if p.transpose_a else a_stored.detach()
        b = w.mT if p.transpose_b else w
        torch.matmul(a, b).backward(dc)
        expected += w.grad
    assert weight.grad.shape == weight.shape
    torch.testing.assert_close(weight.grad, expected)


def test_conv_builder_gradients_are_autograd_s(host, ops):
    import torch.nn.functional as F

    p, fn = built(host, ops, "conv2d:n=2,c=4,h=7,w=7,k=8,groups=2,stride=2,padding=1,dtype=fp32,phase=train")
    call(fn)
    (weight,) = fn.step.masters
    ((x, dy),) = fn.step_inputs
    xr, wr = x.detach().clone().requires_grad_(), weight.detach().clone().requires_grad_()
    F.conv2d(xr, wr, None, 2, 1, 1, 2).backward(dy)
    torch.testing.assert_close(weight.grad, wr.grad)


@pytest.mark.parametrize(
    "spec",
    [
        "gemm:m=8,n=16,k=4,dtype=bf16,phase=train,optimizer=adamw,mixed_precision=true",
        "conv2d:n=1,c=4,h=6,w=6,k=4,padding=1,dtype=fp32,phase=train,optimizer=sgd,grad_accum=2",
    ],
)
def test_the_optimizer_steps_on_the_master_weights_from_a_state_made_at_build(host, ops, spec):
    p, fn = built(host, ops, spec)
    (weight,) = fn.step.masters
    state = fn.step.optimizer.state[weight]
    if p.optimizer == "adamw":  # one step on zero gradients at the build: the state exists, zero
        assert float(state["step"]) == 1 and not state["exp_avg"].any() and not state["exp_avg_sq"].any()
    else:
        assert not state["momentum_buffer"].any()
    call(fn)
    assert weight.dtype == torch.float32 and weight.grad.dtype == torch.float32  # fp32 masters and gradients
    if p.optimizer == "adamw":  # m = beta1 m + (1 - beta1) g from m = 0
        assert float(state["step"]) == 2
        torch.testing.assert_close(state["exp_avg"], 0.1 * weight.grad)
    else:  # the momentum buffer: 0.9 x 0 + g, g the two micro-steps' gradients added
        torch.testing.assert_close(state["momentum_buffer"], weight.grad)


def transformer_reference(p, masters, x, dy):
    """The same layers written as plain PyTorch (autograd's own backward): the weights' gradients."""
    import torch.nn.functional as F

    B, S, D, Hd, H, KV = p.batch, p.seq, p.hidden, p.head_dim, p.heads, p.kv_heads
    ws = [m.detach().clone().requires_grad_() for m in masters]
    pos, inv = torch.arange(S, dtype=torch.float32), 1.0 / (10000 ** (torch.arange(0, Hd, 2) / Hd))
    angles = torch.outer(pos, inv)
    cos, sin = (torch.cat([f(angles), f(angles)], -1)[None, None] for f in (torch.cos, torch.sin))

    def norm(t, w):
        return F.rms_norm(t, (D,), w) if p.norm == "rmsnorm" else F.layer_norm(t, (D,), w)

    def rope(t):
        return t * cos + torch.cat([-t[..., Hd // 2 :], t[..., : Hd // 2]], -1) * sin

    h = x.detach()
    for layer in range(p.layers):
        wq, wo, wu, wd, n1, n2 = ws[6 * layer : 6 * layer + 6]
        q, k, v = F.linear(norm(h, n1), wq).split([H * Hd, KV * Hd, KV * Hd], -1)
        q, k, v = (t.view(B, S, -1, Hd).transpose(1, 2) for t in (q, k, v))
        if p.rope:
            q, k = rope(q), rope(k)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=H != KV)
        h = h + F.linear(o.transpose(1, 2).reshape(B, S, H * Hd), wo)
        gate, lin = F.linear(norm(h, n2), wu).chunk(2, -1)
        h = h + F.linear(F.silu(gate) * lin, wd)
    F.linear(norm(h, ws[-2]), ws[-1]).backward(dy)
    return [w.grad for w in ws]


def test_transformer_builder_gradients_are_autograd_s(host, ops):
    spec = "transformer:hidden=32,layers=2,heads=4,kv_heads=2,intermediate=48,batch=2,seq=5,vocab=40,dtype=fp32"
    p, fn = built(host, ops, spec + ",phase=train,grad_accum=2")
    call(fn)
    expected = None
    for x, dy in fn.step_inputs:
        got = transformer_reference(p, fn.step.masters, x, dy)
        expected = got if expected is None else [a + b for a, b in zip(expected, got)]
    for weight, want in zip(fn.step.masters, expected):
        torch.testing.assert_close(weight.grad, want, rtol=1e-4, atol=1e-5)
