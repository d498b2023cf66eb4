"""The Ops spec additions a second device needed, for every plugin: builders by framework
(one PyTorch builder serves every PyTorch backend; a backend-specific builder still wins), a
backend that claims its targets (so `run --target host-cpu` needs no --backend) and brings a
suite sized for its device, and telemetry sources that carry their own caveat."""

import contextlib

import pytest

from tensorforge.errors import TensorForgeError
from tensorforge.host.plugin_host import PluginHost
from tensorforge_measure.api import DeviceInfo, MeasurementBackend, Prepared, Session, TelemetrySource, WorkloadBuilder
from tensorforge_measure.capture.convert import from_document, to_document
from tensorforge_measure.hookspecs import hookimpl
from tensorforge_measure.host import OpsHost
from tensorforge_measure.measure.stats import summarize
from tensorforge_measure.measure.timing import TimedSamples
from tensorforge_measure.run.runner import Run, RunOptions

pytestmark = pytest.mark.usefixtures("clean_plugin_env")


class Backend(MeasurementBackend):
    def __init__(self, name, framework="", targets=(), default_suite=()):
        self.name, self.framework, self.targets, self.default_suite = name, framework, targets, default_suite

    def open(self, device_index=0):
        return FakeSession()


class Builder(WorkloadBuilder):
    def __init__(self, kind, backend="", framework=""):
        self.kind, self.backend, self.framework = kind, backend, framework

    def build(self, params, device):
        return lambda: None


class Telemetry(TelemetrySource):
    name, backend, caveat = "fake-telemetry", "fake", "fake counters: context only, never a verdict"

    def collect(self, session, run_once, duration_s):
        run_once()
        return {"available": True, "headline": "all quiet", "summary": {}}


class FakeSession(Session):
    info = DeviceInfo(backend="fake", name="Fake Device", fingerprint="fake-fw", details={})

    @contextlib.contextmanager
    def prepared(self, builder, params, math_mode):
        yield Prepared(
            builder.build(params, None),
            peak_memory_bytes=None,
            framework_flags={},
            peak_memory_method="unavailable: a fake has no memory",
        )

    def time(self, fn, budget_s):
        samples = [1e-3] * 25
        return TimedSamples(samples, summarize(samples), "stable", 0, 0)


class Plugin:
    def __init__(self, backends, builders, telemetry=()):
        self.backends, self.builders, self.telemetry = backends, builders, telemetry

    @hookimpl
    def tensorforge_measure_register_backends(self, register):
        for b in self.backends:
            register(b)

    @hookimpl
    def tensorforge_measure_register_builders(self, register):
        for b in self.builders:
            register(b)

    @hookimpl
    def tensorforge_measure_register_telemetry(self, register):
        for t in self.telemetry:
            register(t)


def host_with(*backends, builders=(), telemetry=()):
    return OpsHost(load_entry_points=False, extra_plugins=(("p", Plugin(backends, builders, telemetry)),))


# -- builders by framework -----------------------------------------------------------------------


def test_builder_names_say_backend_or_framework():
    assert Builder("gemm", backend="torch-cuda").name == "gemm@torch-cuda"
    assert Builder("gemm", framework="torch").name == "gemm@torch"


def test_framework_builder_serves_every_backend_of_that_framework():
    host = host_with(
        Backend("dev-a", framework="torch"),
        Backend("dev-b", framework="torch"),
        Backend("other"),
        builders=(Builder("gemm", framework="torch"),),
    )
    assert host.builder("gemm", "dev-a") is host.builder("gemm", "dev-b") is not None
    assert host.builder("gemm", "other") is None  # no framework: only builders by name
    assert host.builder("gemm", "nonexistent") is None
    assert host.builder("conv2d", "dev-a") is None


def test_a_builder_for_the_backend_by_name_wins():
    special = Builder("gemm", backend="dev-a")
    host = host_with(
        Backend("dev-a", framework="torch"),
        Backend("dev-b", framework="torch"),
        builders=(Builder("gemm", framework="torch"), special),
    )
    assert host.builder("gemm", "dev-a") is special
    assert host.builder("gemm", "dev-b").framework == "torch"


def test_a_backend_named_like_a_framework_does_not_borrow_its_builders():
    host = host_with(Backend("torch"), builders=(Builder("gemm", framework="torch"),))
    # 'gemm@torch' is the framework builder; a backend called 'torch' without framework has none
    assert host.builder("gemm", "torch") is None


def test_builder_without_backend_or_framework_is_a_named_plugin_error():
    host = host_with(Backend("dev-a"), builders=(Builder("gemm"),))
    assert host.reports["p"].error == ("plugin 'p': builder 'gemm@' needs a workload kind and a backend or a framework")
    assert host.names("backends") == []  # half a plugin is none


# -- which backend measures a target -------------------------------------------------------------


def test_default_backend_is_the_one_claiming_the_target():
    host = host_with(Backend("dev-a", targets=("npu-1",)), Backend("dev-b"))
    assert host.default_backend("npu-1", "torch-cuda") == "dev-a"
    assert host.default_backend("h200", "torch-cuda") == "torch-cuda"


def test_two_backends_claiming_one_target_ask_for_a_choice():
    host = host_with(Backend("dev-a", targets=("npu-1",)), Backend("dev-b", targets=("npu-1",)))
    with pytest.raises(
        TensorForgeError, match="backends dev-a, dev-b all measure target 'npu-1': choose one with --backend"
    ):
        host.default_backend("npu-1", "torch-cuda")


# -- the runner ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def core():
    return PluginHost()


def run(core, ops, **options):
    opts = RunOptions(**{"target": "h200", "cooldown_s": 0.0, "rest_s": 0.0, "telemetry_s": 0.0, **options})
    progress = []
    return to_document(Run(core, ops, opts, progress.append).execute()), progress


def fake_ops():
    return host_with(
        Backend("fake", framework="fakework", targets=("h200",), default_suite=("gemm_tiny",)),
        builders=(Builder("gemm", framework="fakework"),),
        telemetry=(Telemetry(),),
    )


def test_run_picks_the_claiming_backend_and_its_default_suite(core):
    doc, progress = run(core, fake_ops())
    assert doc["measured"]["backend"] == "fake"
    assert [w["name"] for w in doc["predicted"]["analytical"]["workloads"]] == ["gemm_tiny"]
    assert any("no workloads named: the fake backend's default suite" in line for line in progress)
    row = doc["measured"]["workloads"]["gemm_tiny"]
    assert row["status"] == "ok"  # built by the framework builder
    assert row["peak_memory_bytes"] is None
    assert row["peak_memory_method"] == "unavailable: a fake has no memory"
    diag = doc["diagnostic"]
    assert diag["caveat"] == "fake counters: context only, never a verdict"
    assert diag["windows"]["gemm_tiny"]["headline"] == "all quiet"


def test_named_workloads_replace_the_backend_suite(core):
    doc, _ = run(core, fake_ops(), specs=("gemm:m=64,n=64,k=64",))
    assert [w["name"] for w in doc["predicted"]["analytical"]["workloads"]] == ["gemm:m=64,n=64,k=64"]


def test_summary_renders_a_self_describing_telemetry_window(core):
    from tensorforge_measure.report.summary import summary_text

    doc, _ = run(core, fake_ops())
    text = summary_text(from_document(doc))
    assert "DIAGNOSTIC  fake-telemetry, separate window after timing (context, never a verdict)" in text
    assert "  gemm_tiny: all quiet" in text


def test_explicit_backend_still_wins(core):
    doc, _ = run(
        core,
        host_with(Backend("fake", targets=("h200",)), Backend("other")),
        backend="other",
        specs=("gemm_tiny",),
        telemetry=False,
    )
    assert doc["measured"]["backend"] == "other"
    assert (
        doc["measured"]["workloads"]["gemm_tiny"]["reason"] == "no builder for workload kind 'gemm' on backend 'other'"
    )
