"""Fault catalogue: a stranger's plugin that offers what a shipped one offers — a backend named
'torch-distributed', a preset named 'all_reduce_4k', a telemetry source for torch-cpu called
'aaa-telemetry', a host energy source — never replaces the shipped one by sort order. The
shipped one wins; the stranger's is named on standard error and in `list-plugins`."""

import pytest
from fault_catalogue import Case, check

from tensorforge.host.plugin_host import PluginHost
from tensorforge_measure.host import OpsHost

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("clean_plugin_env")]

OPS_HEADER = """
from tensorforge_measure.api import HostEnergySource, MeasurementBackend, TelemetrySource
from tensorforge_measure.hookspecs import hookimpl
"""

FAKE_DISTRIBUTED = (
    OPS_HEADER
    + """
class Impostor(MeasurementBackend):
    name = "torch-distributed"

@hookimpl
def tensorforge_measure_register_backends(register):
    register(Impostor())
"""
)

FAKE_TELEMETRY = (
    OPS_HEADER
    + """
class Early(TelemetrySource):
    name = "%s"
    backend = "%s"

    def collect(self, session, run_once, duration_s):
        return {}

@hookimpl
def tensorforge_measure_register_telemetry(register):
    register(Early())
"""
)

FAKE_HOST_ENERGY = (
    OPS_HEADER
    + """
class Early(HostEnergySource):
    name = "aaa-energy"

    def open(self):
        raise RuntimeError("never opened")

@hookimpl
def tensorforge_measure_register_host_energy(register):
    register(Early())
"""
)

FAKE_PRESET = """
import attrs
from tensorforge import hookimpl
from tensorforge.workloads.kinds import WorkloadKind

@attrs.frozen
class P:
    m: int = 1

class Other(WorkloadKind):
    name = "stranger-collective"
    params_type = P
    presets = {"all_reduce_4k": {}}
    default_suite = ()

@hookimpl
def tensorforge_register_workloads(register):
    register(Other())
"""


def test_a_strangers_backend_named_like_a_shipped_one_is_refused_and_said(make_plugin, tmp_path):
    make_plugin("aaa-dist", FAKE_DISTRIBUTED, group="tensorforge_measure")
    ops = OpsHost()
    assert type(ops.backend("torch-distributed")).__module__.startswith("tf_distributed")
    assert "reserved by the shipped" in ops.reports["aaa-dist"].error
    # said on standard error by a measuring command, before it measures (no device: PREDICTED)
    outcome = check(
        Case(
            "run with a stranger's torch-distributed backend installed warns",
            ("run", "-t", "h200", "-w", "gemm_tiny", "--no-telemetry", "-o", "c.json"),
            code=0,
            must_write=("c.json", "c.summary.txt"),
        ),
        tmp_path,
    )
    assert "warning: plugin 'aaa-dist' is not loaded: " in outcome.stderr
    assert "'torch-distributed', a name reserved by the shipped plugin" in outcome.stderr


def test_a_strangers_preset_named_like_a_shipped_one_drops_nothing_shipped(make_plugin, tmp_path):
    make_plugin("aaa-preset", FAKE_PRESET)
    host = PluginHost()
    assert host.preset("all_reduce_4k")[0].name == "collective"
    assert "reserved by the shipped" in host.reports["aaa-preset"].error
    outcome = check(
        Case(
            "predict of a shipped preset a stranger also offers",
            ("predict", "-t", "h200x2", "-w", "all_reduce_4k"),
            code=0,
            out=r"all_reduce_4k",
        ),
        tmp_path,
    )
    assert "warning: plugin 'aaa-preset' is not loaded" in outcome.stderr


def test_a_strangers_telemetry_source_sorting_first_is_passed_over(make_plugin, tmp_path):
    make_plugin("aaa-telemetry", FAKE_TELEMETRY % ("aaa-telemetry", "torch-cpu"), group="tensorforge_measure")
    ops = OpsHost()
    assert ops.one_for("telemetry", "torch-cpu").name == "host-cpu"  # the shipped one, not the first by name
    warning = ops.reports["aaa-telemetry"].warnings[0]
    assert warning.startswith("passed over: its telemetry source for backend 'torch-cpu' 'aaa-telemetry' is not used")
    assert "the shipped 'host-cpu'" in warning
    outcome = check(Case("list-plugins names the passed-over source", ("list-plugins",), code=0), tmp_path)
    assert "warning: plugin 'aaa-telemetry' is passed over" in outcome.stderr
    assert "passed over" in outcome.stdout


def test_two_strangers_telemetry_sources_for_one_backend_are_neither_used(make_plugin):
    make_plugin("src-b", FAKE_TELEMETRY % ("src-b", "their-backend"), group="tensorforge_measure")
    make_plugin("src-a", FAKE_TELEMETRY % ("src-a", "their-backend"), group="tensorforge_measure")
    ops = OpsHost()
    assert ops.one_for("telemetry", "their-backend") is None
    assert all("neither is used" in ops.reports[p].warnings[0] for p in ("src-a", "src-b"))
    assert len(ops.passed_over) == 2


def test_a_strangers_host_energy_source_sorting_first_is_passed_over(make_plugin):
    make_plugin("aaa-energy", FAKE_HOST_ENERGY, group="tensorforge_measure")
    ops = OpsHost()
    assert ops.one_for("host_energy").name == "rapl"
    assert "the shipped 'rapl'" in ops.reports["aaa-energy"].warnings[0]
