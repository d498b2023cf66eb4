"""The host cost of an eager training step (tensorforge/estimate/train_host.py): the model's
properties with given costs (never below the device time, more backward kernels cost more, no
optimizer < SGD <= AdamW, a CPU adds what a GPU hides), the old behaviour where the train-host
probes never ran (said in the basis), the shipped kinds' declarations of what issues each kernel,
and the fit on probe times the model made itself. No wall times: every figure here is computed."""

import math

import attrs
import pytest

from tensorforge.bound.model import predict
from tensorforge.estimate.coefficients import TrainingHostCosts
from tensorforge.estimate.fit import fit_coefficients
from tensorforge.estimate.implementation import declared_table
from tensorforge.estimate.model import device_for, eager_time, estimate_workload
from tensorforge.estimate.probe_plan import CPU_PLAN, CUDA_PLAN
from tensorforge.estimate.shipped import shipped
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve_spec
from tests.estimate_points import H200_CEILINGS, generated_points

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

# costs of the size an eager H200 step shows (chosen here, not measured)
COSTS = TrainingHostCosts(
    measured=True,
    step_s=40e-6,
    micro_step_s=60e-6,
    backward_kernel_s=8e-6,
    optimizer_step_s={"sgd": 50e-6, "adamw": 90e-6},
    optimizer_tensor_s=2e-6,
)
LINEAR = "gemm:m=256,n=1024,k=512,phase=train"
BLOCK = "transformer:hidden=128,heads=2,kv_heads=2,intermediate=256,batch=1,seq=32,final_norm=false,lm_head=false,phase=train"


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def _estimates(host, specs, costs=COSTS, target="h200", family="nvidia-sm90"):
    chosen = [resolve_spec(host, s) for s in specs]
    t = host.target(target)
    bound = predict(chosen, t, host.mappings(), None, None, estimate=False)
    c = attrs.evolve(shipped()[family], training=costs)
    d = device_for(t, bound.ceilings, c)
    return [
        estimate_workload(wp, k.operators(w.params), k, w.params, d, c) for (w, k), wp in zip(chosen, bound.workloads)
    ]


@pytest.mark.parametrize("target, family", [("h200", "nvidia-sm90"), ("host-cpu", "cpu-x86-64")])
def test_an_eager_step_is_never_below_its_device_time(host, target, family):
    dtype = ",dtype=fp32" if target == "host-cpu" else ""
    specs = [
        LINEAR + dtype + ",optimizer=adamw,grad_accum=2",
        "gemm:m=8192,n=8192,k=8192,phase=train,optimizer=sgd",  # device-bound
        "conv2d:n=4,c=32,h=16,w=16,k=32,padding=1,phase=train,optimizer=sgd" + dtype,
        BLOCK + dtype + ",layers=2,optimizer=adamw",
    ]
    serial = attrs.evolve(COSTS, serial=target == "host-cpu")
    for e in _estimates(host, specs, serial, target, family):
        assert e.eager_s >= e.device_s >= e.bound_s
        assert e.eager_warm_s >= e.bound_s and e.terms["host_overhead"] >= 0


def test_more_backward_kernels_cost_the_host_more(host):
    layers = [_estimates(host, [BLOCK + f",layers={n}"])[0] for n in (1, 2, 3, 4)]
    assert all(a.eager_s < b.eager_s for a, b in zip(layers, layers[1:]))
    # the same step with a dearer engine per backward kernel
    dearer = _estimates(host, [BLOCK + ",layers=2"], attrs.evolve(COSTS, backward_kernel_s=16e-6))[0]
    assert dearer.eager_s > layers[1].eager_s
    # and the host's share grows with every backward kernel (a host-bound step: all of it)
    linear = [_estimates(host, [LINEAR + f",grad_accum={n}"])[0] for n in (1, 2, 3)]
    assert all(a.terms["host_overhead"] < b.terms["host_overhead"] for a, b in zip(linear, linear[1:]))


def test_no_optimizer_costs_less_than_sgd_and_sgd_no_more_than_adamw(host):
    none, sgd, adamw = _estimates(host, [LINEAR, LINEAR + ",optimizer=sgd", LINEAR + ",optimizer=adamw"])
    assert none.eager_s < sgd.eager_s <= adamw.eager_s
    host_s = [e.eager_s - e.device_s for e in (none, sgd, adamw)]
    assert host_s[0] < host_s[1] <= host_s[2]


def test_a_cpu_adds_the_host_cost_a_gpu_hides(host):
    """A device-bound step: on a GPU the host runs ahead and its costs hide behind the kernels;
    on a CPU (serial) the kernels run on the host's thread, so every cost adds."""
    spec = "gemm:m=2048,n=2048,k=2048,dtype=fp32,phase=train,optimizer=adamw"
    (hidden,) = _estimates(host, [spec], COSTS, "host-cpu", "cpu-x86-64")
    (serial,) = _estimates(host, [spec], attrs.evolve(COSTS, serial=True), "host-cpu", "cpu-x86-64")
    added = COSTS.step_s + COSTS.micro_step_s + 2 * COSTS.backward_kernel_s + 90e-6 + 2e-6
    assert hidden.eager_s < hidden.device_s + added
    assert serial.eager_s >= serial.device_s + added * (1 - 1e-9)


def test_without_the_probes_an_eager_step_is_charged_as_forward_kernels_and_the_basis_says_so(host):
    # the stated default of every shipped family: not measured, nothing carried from another device
    assert all(c.training == TrainingHostCosts() for c in shipped().values())
    spec = LINEAR + ",optimizer=adamw"
    (old,) = _estimates(host, [spec], TrainingHostCosts())
    # the old pipeline exactly: every kernel a forward one, the flush's head start
    k = shipped()["nvidia-sm90"].kernel
    assert math.isclose(
        old.eager_s,
        max(
            old.device_s,
            sum(r.estimate_s for r in old.operators) + k.harness_s,
            eager_time(old.operators, k.host_per_kernel_s, k.host_slack_s) + k.harness_s,
        ),
        rel_tol=1e-12,
    )
    (new,) = _estimates(host, [spec])
    assert new.eager_s > old.eager_s
    chosen = [resolve_spec(host, spec)]
    basis = predict(chosen, host.target("h200"), host.mappings()).estimate_basis
    assert "host costs not probed (not modelled" in basis
    forward = predict([resolve_spec(host, "gemm:m=64,n=64,k=64")], host.target("h200"), host.mappings())
    assert "training" not in forward.estimate_basis
    calibrated = attrs.evolve(shipped()["nvidia-sm90"], training=COSTS)
    assert (
        "from the train-host probes"
        in predict(chosen, host.target("h200"), host.mappings(), estimate=calibrated).estimate_basis
    )


@pytest.mark.parametrize(
    "spec, tensors",
    [
        ("gemm:m=64,n=32,k=16,phase=train,optimizer=adamw,grad_accum=2,mixed_precision=true", 1),
        ("conv2d:n=2,c=8,h=8,w=8,k=8,padding=1,phase=train,optimizer=sgd", 1),
        ("transformer:hidden=128,heads=2,intermediate=256,seq=32,layers=2,vocab=1000,phase=train,optimizer=sgd", 14),
    ],
)
def test_every_shipped_kind_declares_what_issues_its_training_kernels(host, spec, tensors):
    workload, kind = resolve_spec(host, spec)
    declared = declared_table(kind, workload.params)
    for op in kind.operators(workload.params):
        backward = (
            op.name.endswith(("_grad", "_grad_a", "_grad_b", "_grad_input", "_grad_weight")) or op.name == "cast_grads"
        )
        expected = "optimizer" if op.name == "optimizer" else "autograd" if backward else "python"
        assert declared[op.name].issued_by == expected if op.name in declared else expected == "python", op.name
    assert declared["optimizer"].tensors == tensors


def _truth(costs):
    return attrs.evolve(shipped()["nvidia-sm90"], training=costs)


def test_the_fit_recovers_the_host_costs_it_generated(host):
    truth = _truth(COSTS)
    bound, points = generated_points(host, ("train-host",), H200_CEILINGS, truth, regime="eager")
    assert len(points) == len([i for i in CUDA_PLAN if i.group == "train-host"]) == 7
    base = _truth(TrainingHostCosts())
    fitted, report = fit_coefficients(base, host.target("h200"), bound.ceilings, [], points, "test")
    got = fitted.training
    assert got.measured and not got.serial
    for field in ("step_s", "micro_step_s", "backward_kernel_s", "optimizer_tensor_s"):
        assert math.isclose(getattr(got, field), getattr(COSTS, field), rel_tol=2e-2), field
    for name in ("sgd", "adamw"):
        assert math.isclose(got.optimizer_step_s[name], COSTS.optimizer_step_s[name], rel_tol=2e-2), name
    stage = report["stages"]["train-host"]
    assert stage["points"] == 7 and stage["median_ape"] < 1e-3 and "not_separated" not in stage


def test_a_cost_no_probe_separates_is_left_out_and_named(host):
    """The CPU plan has no per-tensor probe: the optimizer's cost per tensor is not separated from
    its per-step cost, so it stays 0 and the report names it; the rest are still recovered."""
    costs = attrs.evolve(COSTS, optimizer_tensor_s=0.0)
    truth = _truth(costs)
    bound, points = generated_points(host, ("train-host",), H200_CEILINGS, truth, regime="eager")
    train = [i for i in CPU_PLAN if i.group == "train-host"]
    assert len(train) == 6 and not any("transformer" in i.spec and "optimizer" in i.spec for i in train)
    points = [p for p in points if not ("transformer" in p.name and "optimizer" in p.name)]
    assert len(points) == 6
    fitted, report = fit_coefficients(_truth(TrainingHostCosts()), host.target("h200"), bound.ceilings, [], points, "t")
    assert report["stages"]["train-host"]["not_separated"] == ["training.optimizer_tensor_s"]
    assert fitted.training.optimizer_tensor_s == 0.0
    assert math.isclose(fitted.training.backward_kernel_s, costs.backward_kernel_s, rel_tol=2e-2)


def test_a_calibration_without_the_probes_keeps_the_old_behaviour(host):
    bound, points = generated_points(host, ("conv-pointwise",), H200_CEILINGS, shipped()["nvidia-sm90"])
    fitted, report = fit_coefficients(shipped()["nvidia-sm90"], host.target("h200"), bound.ceilings, [], points, "t")
    assert fitted.training == TrainingHostCosts() and not fitted.training.measured
    assert report["stages"]["train-host"]["status"].startswith("not probed")


def test_the_cpu_fit_makes_host_costs_serial(host):
    from tensorforge.estimate.train_host import runs_on_host

    assert runs_on_host("cpu-x86-64") and not runs_on_host("nvidia-sm90") and not runs_on_host("nvidia-sm80")
