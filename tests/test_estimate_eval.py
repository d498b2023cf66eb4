"""The estimate's evaluation cannot flatter itself: its suite covers every class with enough
workloads from enough real model configs, and no workload of it is a shape any calibration
probe measured (the coefficients come from the probes only)."""

from pathlib import Path

import attrs
import pytest

from tensorforge.estimate.classes import CLASSES, workload_class
from tensorforge.estimate.probe_plan import CPU_PLAN, CUDA_PLAN
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import load_suite_file, resolve_spec

ROOT = Path(__file__).resolve().parent.parent
SUITES = {
    "h200": ROOT / "benchmarks" / "eval" / "h200-suite.toml",
    "h200-networks": ROOT / "benchmarks" / "eval" / "h200-networks.toml",
    "host-cpu": ROOT / "benchmarks" / "eval" / "host-cpu-suite.toml",
}


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def _key(kind, params):
    """What makes two workloads the same measurement: kind and every parameter but the config
    path (a transformer read from a config file equals the same fields written inline)."""
    fields = {a.name: getattr(params, a.name) for a in params.__attrs_attrs__ if a.name != "config"}
    return kind, tuple(sorted(fields.items()))


def _problem_key(kind, params):
    """What the device runs for a workload: its kind and, per operator, the problem the estimate
    maps (a convolution's implicit GEMM M x N x K, its math mode and tensor sizes). Two different
    specs can be one measurement: the probe 8x64x112^2 3x3 convolution and the evaluation's
    32x64x56^2 one are the same 100352 x 64 x 576 implicit GEMM, which cuDNN runs with the same
    kernel on the same tiles (H200 traces, 2026-12-01)."""

    def fields(problem):
        # every operator problem is an attrs value; a tensor counts by its size, not its name
        values = attrs.asdict(problem, recurse=False)
        return tuple(sorted((name, getattr(value, "nbytes", value)) for name, value in values.items()))

    return kind.name, tuple((type(op.problem).__name__, fields(op.problem)) for op in kind.operators(params))


def _probe_keys(host, plan, key=_key):
    keys = set()
    for item in plan:
        if item.spec:
            workload, kind = resolve_spec(host, item.spec)
            keys.add(key(kind.name, workload.params) if key is _key else key(kind, workload.params))
    return keys


def _clashes(host, chosen, plans):
    """Scored workloads that are a probe's spec or run a probe's problems."""
    specs = set().union(*(_probe_keys(host, p) for p in plans))
    problems = set().union(*(_probe_keys(host, p, _problem_key) for p in plans))
    return [
        w.name for w, kind in chosen if _key(kind.name, w.params) in specs or _problem_key(kind, w.params) in problems
    ]


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_no_evaluation_shape_is_a_probe_shape(host, suite):
    chosen = load_suite_file(host, SUITES[suite])
    assert _clashes(host, chosen, (CUDA_PLAN, CPU_PLAN)) == []


@pytest.mark.parametrize("suite", ["h200-train.toml", "host-cpu-train.toml"])
def test_no_training_evaluation_is_a_probe_shape(host, suite):
    """benchmarks/train_step.py scores these; the train-host probes time tiny training steps."""
    chosen = load_suite_file(host, ROOT / "benchmarks" / "eval" / suite)
    assert _clashes(host, chosen, (CUDA_PLAN, CPU_PLAN)) == []


def test_the_problem_key_sees_one_implicit_gemm_behind_two_convolution_specs(host):
    probe, probe_kind = resolve_spec(host, "conv2d:n=8,c=64,h=112,w=112,k=64,r=3,s=3,padding=1,dtype=bf16")
    scored, scored_kind = resolve_spec(host, "conv2d:n=32,c=64,h=56,w=56,k=64,r=3,s=3,padding=1,dtype=bf16")
    assert _key(probe_kind.name, probe.params) != _key(scored_kind.name, scored.params)
    assert _problem_key(probe_kind, probe.params) == _problem_key(scored_kind, scored.params)
    other, other_kind = resolve_spec(host, "conv2d:n=16,c=64,h=112,w=112,k=64,r=3,s=3,padding=1,dtype=bf16")
    assert _problem_key(other_kind, other.params) != _problem_key(scored_kind, scored.params)


def test_no_scored_energy_or_default_shape_is_a_probe_shape(host):
    """The energy target (issue 15) scores the default suites and the held-out energy suite on
    the estimate's time: the probes that set its coefficients must not be any of those shapes
    either (the sweep had the default suite's gemm_tiny, 64^3, until 2026-12-01)."""
    chosen = list(load_suite_file(host, ROOT / "benchmarks" / "eval" / "h200-energy-heldout.toml"))
    for kind in (host.workload_kind(name) for name in ("gemm", "conv2d", "transformer")):
        chosen += [resolve_spec(host, preset) for preset in kind.default_suite]
    assert len(chosen) >= 20 and _clashes(host, chosen, (CUDA_PLAN,)) == []


def test_the_h200_suite_covers_every_class_from_four_model_configs(host):
    chosen = load_suite_file(host, SUITES["h200"])
    assert len(chosen) >= 60
    classes = {}
    for w, kind in chosen:
        classes.setdefault(workload_class(kind, w.params), []).append(w.name)
    for klass in CLASSES:
        if klass != "other":
            assert len(classes.get(klass, ())) >= 2, (klass, classes.get(klass))
    configs = {Path(w.params.config).name for w, kind in chosen if kind.name == "transformer"}
    assert len(configs) >= 4
    phases = {(Path(w.params.config).name, w.params.phase) for w, kind in chosen if kind.name == "transformer"}
    assert all((c, phase) in phases for c in configs for phase in ("prefill", "decode"))


def test_a_probe_shape_in_the_suite_would_be_caught(host, tmp_path):
    """The check above is not vacuous: a suite that repeats a probe's GEMM fails it."""
    spec = next(i.spec for i in CUDA_PLAN if i.group == "gemm")
    fields = dict(part.split("=") for part in spec.split(":", 1)[1].split(","))
    body = '[[workload]]\nname = "copied"\nkind = "gemm"\n' + "".join(
        f"{k} = {v if v.isdigit() else repr(v)}\n" for k, v in fields.items()
    )
    (tmp_path / "s.toml").write_text(body.replace("'", '"'), encoding="utf-8")
    probes = _probe_keys(host, CUDA_PLAN)
    ((w, kind),) = load_suite_file(host, tmp_path / "s.toml")
    assert _key(kind.name, w.params) in probes


def test_the_tails_study_set_is_disjoint_from_the_evaluation_suites(host):
    """The tails are learned from benchmarks/eval/h200-tails.toml (traced kernels, times) and
    judged on the evaluation suites: no shape, and no implicit GEMM behind one, is in both."""
    study = load_suite_file(host, ROOT / "benchmarks" / "eval" / "h200-tails.toml")
    evaluated = [w for name in ("h200", "h200-networks") for w in load_suite_file(host, SUITES[name])]
    for key in (lambda w, k: _key(k.name, w.params), lambda w, k: _problem_key(k, w.params)):
        assert not {key(w, k) for w, k in study} & {key(w, k) for w, k in evaluated}
    assert _clashes(host, study, (CUDA_PLAN, CPU_PLAN)) == []
