"""Kernel traces -> per-operator time: fake CUDA traces in the profiler's Chrome-trace format
(eager launches through the runtime and driver APIs, graph replays, the flush, kernels outside
every range) and real CPU traces of the shipped builders."""

import json

import pytest

from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve
from tensorforge_measure.host import OpsHost
from tensorforge_measure.measure import op_ranges
from tensorforge_measure.measure.op_ranges import FLUSH, ITERATION, PREFIX
from tensorforge_measure.measure.trace_attribution import (
    UNATTRIBUTED,
    TraceError,
    apply_template,
    cpu_iterations,
    device_iterations,
    sequence,
    summarize_iterations,
)

HOST_TID, STREAM = 101, 7


class FakeTrace:
    """Builds a Kineto-style Chrome trace: host ranges and launches on one thread, device
    activities on a stream, tied by correlation ids."""

    def __init__(self):
        self.events, self.corr = [], 0

    def host(self, cat, name, ts, dur, tid=HOST_TID, **args):
        self.events.append(
            {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid, "args": args}
        )

    def range(self, name, ts, dur, tid=HOST_TID):
        self.host("user_annotation", name, ts, dur, tid)

    def launch(self, ts, kernels, api="cudaLaunchKernel", cat="cuda_runtime", tid=HOST_TID):
        """A host launch at ts and the device activities it caused: (name, start, dur[, cat])."""
        self.corr += 1
        self.host(cat, api, ts, 2.0, tid, correlation=self.corr)
        for k in kernels:
            name, start, dur = k[:3]
            self.events.append(
                {
                    "ph": "X",
                    "cat": k[3] if len(k) > 3 else "kernel",
                    "name": name,
                    "ts": start,
                    "dur": dur,
                    "pid": 0,
                    "tid": STREAM,
                    "args": {"correlation": self.corr, "stream": STREAM},
                }
            )

    def doc(self):
        return {"traceEvents": self.events + [{"ph": "M", "name": "process_name", "pid": 1}]}


def eager_trace(iterations=3, slow_norm_at=None):
    """Per iteration: flush, then norm (1 kernel), matmul (memset + gemm through the driver API)."""
    t = FakeTrace()
    for i in range(iterations):
        base = 1000.0 * i
        t.range(FLUSH, base, 10)
        t.launch(base + 1, [("fill", base + 20, 50)])
        t.range(ITERATION, base + 100, 60)
        t.range(PREFIX + "norm", base + 101, 9)
        norm = 30 if slow_norm_at == i else 10
        t.launch(base + 102, [("norm_kernel", base + 120, norm)])
        t.range(PREFIX + "matmul", base + 111, 40)
        t.launch(base + 112, [("Memset (Device)", base + 120 + norm + 5, 1, "gpu_memset")])
        t.launch(
            base + 120,
            [("nvjet_sm90_tst_256x128", base + 120 + norm + 8, 100)],
            api="cuLaunchKernelEx",
            cat="cuda_driver",
        )
    return t.doc()


def test_eager_kernels_are_attributed_to_their_operator_and_iteration():
    its = device_iterations(eager_trace())
    assert [it.index for it in its] == [0, 1, 2]
    assert sequence(its[0]) == (
        ("norm_kernel", "norm"),
        ("Memset (Device)", "matmul"),
        ("nvjet_sm90_tst_256x128", "matmul"),
    )
    assert its[0].activities[1].kind == "memset" and its[0].activities[2].launch == "cuLaunchKernelEx"
    assert its[0].lead_in_s == pytest.approx(50e-6)  # flush ends at 70, norm starts at 120
    assert its[0].host_s == pytest.approx({"norm": 9e-6, "matmul": 40e-6})


def test_operator_times_add_up_to_the_span():
    summary = summarize_iterations(device_iterations(eager_trace(slow_norm_at=1)))
    norm, matmul = summary.operators
    assert (norm.operator, matmul.operator) == ("norm", "matmul")
    assert norm.busy_p50_s == pytest.approx(10e-6) and norm.gap_p50_s == 0
    # memset starts 5 us after norm ends, gemm 2 us after the memset: 7 us of gaps
    assert matmul.busy_p50_s == pytest.approx(101e-6) and matmul.gap_p50_s == pytest.approx(7e-6)
    assert matmul.activities == 2 and [k.name for k in matmul.kernels] == ["Memset (Device)", "nvjet_sm90_tst_256x128"]
    assert summary.span_p50_s == pytest.approx(norm.time_p50_s + matmul.time_p50_s)
    assert summary.busy_p50_s == pytest.approx(111e-6) and summary.gap_p50_s == pytest.approx(7e-6)
    assert summary.unattributed_busy_p50_s == 0 and summary.iterations == 3
    assert norm.host_p50_s == pytest.approx(9e-6)


def graph_trace(kernels=("norm_kernel", "Memset (Device)", "nvjet_sm90_tst_256x128"), replays=2):
    t = FakeTrace()
    for i in range(replays):
        base = 1000.0 * i
        t.range(FLUSH, base, 5)
        t.launch(base + 1, [("fill", base + 10, 50)])
        t.range(ITERATION, base + 100, 10)
        start, acts = base + 110, []
        for name in kernels:
            acts.append((name, start, 10, "gpu_memset" if name.startswith("Memset") else "kernel"))
            start += 11.5
        t.launch(base + 101, acts, api="cudaGraphLaunch")
    return t.doc()


def test_graph_replays_take_operators_from_the_eager_sequence():
    template = sequence(device_iterations(eager_trace())[0])
    graph = device_iterations(graph_trace())
    assert all(a.operator is None and a.launch == "cudaGraphLaunch" for it in graph for a in it.activities)
    matched, why = apply_template(graph, template)
    assert why is None
    summary = summarize_iterations(matched)
    assert [o.operator for o in summary.operators] == ["norm", "matmul"]
    assert summary.gap_p50_s == pytest.approx(3e-6)  # two 1.5 us gaps
    assert summary.lead_in_p50_s == pytest.approx(50e-6)
    assert summary.operators[1].host_p50_s is None  # no host ranges in a replay


def test_a_replay_that_differs_from_the_eager_sequence_stays_unattributed_with_the_reason():
    template = sequence(device_iterations(eager_trace())[0])
    graph = device_iterations(graph_trace(kernels=("norm_kernel", "other_gemm")))
    same, why = apply_template(graph, template)
    assert "ran 2 device activities, expected 1 x (0 + 3)" in why
    summary = summarize_iterations(same)
    assert [o.operator for o in summary.operators] == [UNATTRIBUTED]
    assert summary.unattributed_busy_p50_s == pytest.approx(20e-6)


def test_replays_of_several_flushed_calls_split_into_calls():
    template = sequence(device_iterations(eager_trace())[0])
    names = ("fill", "norm_kernel", "Memset (Device)", "nvjet_sm90_tst_256x128")
    graph = device_iterations(graph_trace(kernels=names * 2))
    calls, why = apply_template(graph, template, calls=2, prefix=1)
    assert why is None and len(calls) == 4
    assert [a.operator for a in calls[1].activities] == ["norm", "matmul", "matmul"]
    assert all(c.lead_in_s == pytest.approx(1.5e-6) for c in calls)
    summary = summarize_iterations(calls)
    assert summary.iterations == 4 and summary.span_p50_s == pytest.approx(33e-6)
    # in a graph call the wait after the in-graph flush is the first operator's gap
    norm = summary.operators[0]
    assert norm.gap_p50_s == pytest.approx(1.5e-6)
    assert sum(o.time_p50_s for o in summary.operators) == pytest.approx(34.5e-6)
    wrong = device_iterations(graph_trace(kernels=names + ("fill", "norm_kernel", "other", "nvjet_sm90_tst_256x128")))
    _, why = apply_template(wrong, template, calls=2, prefix=1)
    assert "differ from the eager call's at #1: 'other'" in why


def test_a_kernel_launched_outside_every_operator_range_is_unattributed():
    t = FakeTrace()
    t.range(ITERATION, 0, 50)
    t.range(PREFIX + "matmul", 1, 10)
    t.launch(2, [("gemm", 100, 20)])
    t.launch(20, [("stray_copy", 125, 5)])
    summary = summarize_iterations(device_iterations(t.doc()))
    assert [(o.operator, o.busy_p50_s) for o in summary.operators] == [
        ("matmul", pytest.approx(20e-6)),
        (UNATTRIBUTED, pytest.approx(5e-6)),
    ]


def test_a_backward_on_autograd_s_thread_belongs_to_the_call_that_waits_for_it():
    """A training step's backward runs on autograd's device thread: its operator ranges and
    launches are there, the call's ITERATION range on the calling thread around them."""
    autograd = 202
    t = FakeTrace()
    for i in range(2):
        base = 1000.0 * i
        t.range(ITERATION, base, 100)
        t.range(PREFIX + "matmul", base + 1, 10)
        t.launch(base + 2, [("gemm_fwd", base + 20, 10)])
        t.range(PREFIX + "matmul_grad_a", base + 30, 10, tid=autograd)
        t.launch(base + 31, [("gemm_dgrad", base + 40, 10)], tid=autograd)
        t.launch(base + 45, [("stray_add", base + 55, 1)], tid=autograd)  # outside its ranges
        t.range(PREFIX + "optimizer", base + 60, 10)
        t.launch(base + 61, [("adamw", base + 70, 5)])
    t.launch(1500, [("between_calls", 1510, 5)], tid=autograd)  # in no call: left out
    its = device_iterations(t.doc())
    assert [it.index for it in its] == [0, 1]
    assert sequence(its[1]) == (
        ("gemm_fwd", "matmul"),
        ("gemm_dgrad", "matmul_grad_a"),
        ("stray_add", None),
        ("adamw", "optimizer"),
    )
    assert its[0].host_s == pytest.approx({"matmul": 10e-6, "matmul_grad_a": 10e-6, "optimizer": 10e-6})


def test_traces_without_iterations_or_events_are_refused():
    with pytest.raises(TraceError, match="no 'traceEvents'"):
        device_iterations({"events": []})
    with pytest.raises(TraceError, match="tf.iteration"):
        device_iterations({"traceEvents": []})
    with pytest.raises(TraceError, match="no traced iteration"):
        summarize_iterations([])


# -- real CPU traces of the shipped builders -------------------------------------------------

torch = pytest.importorskip("torch")

VIEW_OPS = {
    "aten::split",
    "aten::view",
    "aten::transpose",
    "aten::split_with_sizes",
    "aten::slice",
    "aten::chunk",
    "aten::narrow",
    "aten::as_strided",
    "aten::detach",
    "aten::alias",
}


def cpu_trace(spec, tmp_path, iterations=3):
    from torch.profiler import ProfilerActivity, profile, record_function

    ((workload, _),) = resolve(PluginHost(), (spec,))
    builder = OpsHost().builder(workload.kind, "torch-cpu")
    with torch.inference_mode():
        fn = builder.build(workload.params, torch.device("cpu"))
        fn()
        with profile(activities=[ProfilerActivity.CPU]) as prof, op_ranges.recording(op_ranges.profiler_recorder()):
            for _ in range(iterations):
                with record_function(ITERATION):
                    fn()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    return json.loads(path.read_text())


@pytest.mark.usefixtures("clean_plugin_env")
def test_cpu_trace_of_a_gemm_attributes_the_framework_op(tmp_path):
    its = cpu_iterations(cpu_trace("gemm:m=64,n=64,k=64,dtype=fp32", tmp_path))
    assert len(its) == 3
    summary = summarize_iterations(its)
    (op,) = summary.operators
    assert op.operator == "matmul" and [k.name for k in op.kernels] == ["aten::matmul"]
    assert op.busy_p50_s > 0 and op.host_p50_s >= op.busy_p50_s


@pytest.mark.usefixtures("clean_plugin_env")
def test_cpu_trace_of_a_transformer_leaves_only_views_outside_operator_ranges(tmp_path):
    spec = "transformer:hidden=64,layers=2,heads=4,kv_heads=2,seq=1,batch=2,phase=decode,context=8,dtype=fp32"
    its = cpu_iterations(cpu_trace(spec, tmp_path))
    stray = {a.name for it in its for a in it.activities if a.operator is None}
    assert stray <= VIEW_OPS
    summary = summarize_iterations(its)
    names = [o.operator for o in summary.operators if o.operator != UNATTRIBUTED]
    assert names[:4] == ["norm_attn", "qkv_proj", "rope", "kv_append"]
    assert set(names) == {
        "norm_attn",
        "qkv_proj",
        "rope",
        "kv_append",
        "attention",
        "o_proj",
        "residual_attn",
        "norm_mlp",
        "mlp_up",
        "mlp_act",
        "mlp_down",
        "residual_mlp",
        "norm_final",
    }
    qkv = next(o for o in summary.operators if o.operator == "qkv_proj")
    assert qkv.activities == 2  # two layers, one aten::linear each


# -- a real trace ------------------------------------------------------------------------------


def test_a_real_h200_trace_of_the_decode_transformer():
    """Profiler trace from an H200 (development run, 2026-11-30): 2 eager calls of the default
    decode transformer (4 layers), then 2 replays of it captured as a CUDA graph, each after the
    L2 flush. Every kernel is attributed, and the replays match the eager sequence."""
    import gzip
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "traces" / "h200_transformer_decode.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        doc = json.load(handle)
    its = device_iterations(doc)
    assert [len(it.activities) for it in its] == [101] * 4
    eager, graph = its[:2], its[2:]
    assert all(a.launch == "cudaGraphLaunch" and a.operator is None for it in graph for a in it.activities)
    assert {a.launch for it in eager for a in it.activities} >= {"cudaLaunchKernel", "cuLaunchKernelEx"}
    assert all(a.operator for it in eager for a in it.activities)  # nothing unattributed
    matched, why = apply_template(graph, sequence(eager[-1]))
    assert why is None
    summary = summarize_iterations(matched)
    core_ops = [
        "norm_attn",
        "qkv_proj",
        "rope",
        "kv_append",
        "attention",
        "o_proj",
        "residual_attn",
        "norm_mlp",
        "mlp_up",
        "mlp_act",
        "mlp_down",
        "residual_mlp",
        "norm_final",
    ]
    assert [o.operator for o in summary.operators] == core_ops
    by_name = {o.operator: o for o in summary.operators}
    assert by_name["qkv_proj"].activities == 4 and by_name["rope"].activities == 40
    assert any(k.name.startswith("nvjet_sm90") for k in by_name["qkv_proj"].kernels)
    assert sum(o.time_p50_s for o in summary.operators) == pytest.approx(summary.span_p50_s, rel=0.01)
    assert 370e-6 < summary.busy_p50_s < summary.span_p50_s < 400e-6
    eager_summary = summarize_iterations(eager)
    assert all(o.host_p50_s and o.host_p50_s > 0 for o in eager_summary.operators)
