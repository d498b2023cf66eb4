"""The estimate's evaluation cannot flatter itself: its suite covers every class with enough
workloads from enough real model configs, and no workload of it is a shape any calibration
probe measured (the coefficients come from the probes only)."""

from pathlib import Path

import pytest

from tensorforge.estimate.classes import CLASSES, workload_class
from tensorforge.estimate.probe_plan import CPU_PLAN, CUDA_PLAN
from tensorforge.plugins import PluginHost
from tensorforge.suite import load_suite_file, resolve_spec

ROOT = Path(__file__).resolve().parent.parent
SUITES = {
    "h200": ROOT / "benchmarks" / "eval" / "h200-suite.toml",
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


def _probe_keys(host, plan):
    keys = set()
    for item in plan:
        if item.spec:
            workload, kind = resolve_spec(host, item.spec)
            keys.add(_key(kind.name, workload.params))
    return keys


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_no_evaluation_shape_is_a_probe_shape(host, suite):
    probes = _probe_keys(host, CUDA_PLAN) | _probe_keys(host, CPU_PLAN)
    chosen = load_suite_file(host, SUITES[suite])
    clashes = [w.name for w, kind in chosen if _key(kind.name, w.params) in probes]
    assert clashes == []


def test_no_scored_energy_or_default_shape_is_a_probe_shape(host):
    """The energy target (issue 15) scores the default suites and the held-out energy suite on
    the estimate's time: the probes that set its coefficients must not be any of those shapes
    either (the sweep had the default suite's gemm_tiny, 64^3, until 2026-12-01)."""
    probes = _probe_keys(host, CUDA_PLAN)
    chosen = list(load_suite_file(host, ROOT / "benchmarks" / "energy" / "h200-heldout.toml"))
    for kind in (host.workload_kind(name) for name in ("gemm", "conv2d", "transformer")):
        chosen += [resolve_spec(host, preset) for preset in kind.default_suite]
    clashes = [w.name for w, kind in chosen if _key(kind.name, w.params) in probes]
    assert len(chosen) >= 20 and clashes == []


def test_the_h200_suite_covers_every_class_from_four_model_configs(host):
    chosen = load_suite_file(host, SUITES["h200"])
    assert len(chosen) >= 60
    classes = {}
    for w, kind in chosen:
        classes.setdefault(workload_class(kind.name, w.params), []).append(w.name)
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
