"""The seam between the Core, the measuring side and the plugins, both ways: what only a plugin
knows is asked of it (a workload kind's estimate class and tokens, a backend's probe plan, a
session's energy counter, the host's energy counter), never recognised by name. A stranger's
workload kind gets an estimate class from its own answer; a stranger's backend gets an energy
window from its own counter through the real run path; and no device-neutral module imports a
device's code, nor does the Core name a shipped plugin."""

import ast
import contextlib
from pathlib import Path

import attrs
import pytest

from tensorforge.api import CLASSES, CPU_PLAN, CUDA_PLAN, workload_class
from tensorforge.errors import PluginError, TensorForgeError
from tensorforge.hookspecs import hookimpl as core_hookimpl
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.kinds import WorkloadKind
from tensorforge.workloads.problems import MatmulProblem, Operator, Tensor
from tensorforge.workloads.suite import resolve_spec
from tensorforge_measure.api import (
    DeviceInfo,
    HostEnergySource,
    MeasurementBackend,
    Prepared,
    Session,
    Unavailable,
    WorkloadBuilder,
)
from tensorforge_measure.hookspecs import hookimpl
from tensorforge_measure.host import OpsHost
from tensorforge_measure.measure.stats import summarize
from tensorforge_measure.measure.timing import TimedSamples
from tensorforge_measure.run.runner import Run, RunOptions

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("clean_plugin_env")

J_PER_EXECUTION = 0.002
HOST_J_PER_READ = 5


# -- a stranger's workload kind ----------------------------------------------------------------


@attrs.frozen
class SquareParams:
    n: int = attrs.field(default=256, metadata={"min": 1})
    math_mode: str = "bf16"


class Square(WorkloadKind):
    """A square bf16 matmul of the stranger's own, with its own answers."""

    name = "stranger-square"
    description = "a stranger's square matmul"
    params_type = SquareParams
    presets = {"stranger_square": {"n": 256}}

    def operators(self, p):
        size = p.n * p.n * 2
        problem = MatmulProblem(
            batch=1,
            m=p.n,
            n=p.n,
            k=p.n,
            math_mode="bf16",
            a_elem_bytes=2,
            b_elem_bytes=2,
            c_elem_bytes=2,
            a=Tensor("A", size),
            b=Tensor("B", size),
            c=Tensor("C", size),
        )
        return (Operator("matmul", problem),)

    def estimate_class(self, p):
        return "gemm-small" if p.n < 4096 else "gemm-large"

    def tokens(self, p):
        return 3 * p.n


class Unanswering(Square):
    name = "stranger-silent"
    presets = {"stranger_silent": {"n": 64}}

    # the base class's neutral answers
    estimate_class = WorkloadKind.estimate_class
    tokens = WorkloadKind.tokens


class Misspelled(Square):
    name = "stranger-misspelled"
    presets = {"stranger_misspelled": {"n": 64}}

    def estimate_class(self, p):
        return "gemm-smal"


class CoreStranger:
    @core_hookimpl
    def tensorforge_register_workloads(self, register):
        register(Square())
        register(Unanswering())
        register(Misspelled())


@pytest.fixture(scope="module")
def core():
    return PluginHost(extra_plugins=(("stranger", CoreStranger()),))


def test_a_strangers_kind_gets_the_estimate_class_it_answers(core):
    kind = core.workload_kind("stranger-square")
    assert workload_class(kind, SquareParams(n=256)) == "gemm-small"
    assert workload_class(kind, SquareParams(n=8192)) == "gemm-large"
    assert "gemm-small" in CLASSES


def test_a_kind_that_answers_nothing_is_other_and_counts_no_tokens(core):
    kind = core.workload_kind("stranger-silent")
    assert workload_class(kind, SquareParams(n=64)) == "other"
    assert kind.tokens(SquareParams(n=64)) is None


def test_an_answer_that_is_no_class_is_the_plugins_error(core):
    with pytest.raises(PluginError, match=r"workload kind 'stranger-misspelled' answered estimate class 'gemm-smal'"):
        workload_class(core.workload_kind("stranger-misspelled"), SquareParams(n=64))


def test_the_shipped_kinds_answer_for_themselves(core):
    """The classes the Core once chose by kind name now come from the kinds' own methods."""
    cases = {
        "gemm_large_square": "gemm-large",
        "gemm_skinny_decode": "gemm-skinny",
        "gemm_square_tf32": "gemm-large",
        "gemm_batched_fp16": "gemm-batched",
        "conv_resnet50_3x3": "conv-kxk",
        "conv_resnet50_1x1": "conv-1x1",
        "conv_depthwise_3x3": "conv-depthwise",
        "conv_stem_7x7": "conv-stem",
        "sdpa_decode": "attention-decode",
        "sdpa_prefill_causal": "attention-prefill",
        "transformer_decode": "transformer-decode",
        "transformer_prefill": "transformer-prefill",
    }
    for preset, klass in cases.items():
        workload, kind = resolve_spec(core, preset)
        assert workload_class(kind, workload.params) == klass, preset
    workload, kind = resolve_spec(core, "transformer_prefill")
    assert kind.tokens(workload.params) == workload.params.batch * workload.params.seq


# -- a stranger's backend, run through the real run path -------------------------------------


class ExecutionCounter:
    """The stranger's own energy counter: J_PER_EXECUTION per execution, updated every 4."""

    counter_source = "the stranger's counter"
    unit_j = 0.001
    instant_source = ""

    def __init__(self, session):
        self.session = session
        self.closed = False

    def joules(self):
        n = self.session.executions
        return J_PER_EXECUTION * (n - n % 4)

    def instant_w(self):
        return None

    def averaged_w(self):
        return None

    def enforced_limit_w(self):
        return 123.0

    def close(self):
        self.closed = True


class StrangerSession(Session):
    def __init__(self, backend):
        self.backend = backend
        self.info = DeviceInfo(backend="stranger", name="Stranger NPU", fingerprint="stranger-1", details={})
        self.executions = 0

    def _call(self):
        self.executions += 1

    @contextlib.contextmanager
    def prepared(self, builder, params, math_mode):
        yield Prepared(self._call, peak_memory_bytes=1, framework_flags={})

    def time(self, fn, budget_s):
        samples = tuple(1e-4 * (1 + 0.001 * (i % 5)) for i in range(25))
        return TimedSamples(samples, summarize(samples), "stable", 3, 0)

    def energy_counter(self):
        if self.backend.no_counter:
            raise Unavailable("the stranger's counter is switched off")
        counter = ExecutionCounter(self)
        self.backend.counters.append(counter)
        return counter


class StrangerBackend(MeasurementBackend):
    name = "stranger"
    description = "a device nobody shipped"

    def __init__(self, beside=False, no_counter=False):
        self.host_energy_beside = beside
        self.no_counter = no_counter
        self.counters = []

    def open(self, device_index=0):
        return StrangerSession(self)


class StrangerBuilder(WorkloadBuilder):
    kind = "stranger-square"
    backend = "stranger"

    def build(self, params, device):
        return lambda: None


class HostReadings:
    """A host counter whose every reading adds HOST_J_PER_READ microjoules... times a million."""

    source = "the stranger's host counter"

    def __init__(self):
        self.reads = 0

    def read_uj(self):
        self.reads += 1
        return (self.reads * HOST_J_PER_READ * 1_000_000,)

    def joules_between(self, start, end):
        return (end[0] - start[0]) / 1e6


class StrangerHostEnergy(HostEnergySource):
    name = "stranger-host"
    description = "readings made up by the test"

    def open(self):
        return HostReadings()


class OpsStranger:
    def __init__(self, backend, host_energy=True):
        self.backend, self.host_energy = backend, host_energy

    @hookimpl
    def tensorforge_measure_register_backends(self, register):
        register(self.backend)

    @hookimpl
    def tensorforge_measure_register_builders(self, register):
        register(StrangerBuilder())

    @hookimpl
    def tensorforge_measure_register_host_energy(self, register):
        if self.host_energy:
            register(StrangerHostEnergy())


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORFORGE_HOME", str(tmp_path / "home"))


def run_stranger(core, backend, host_energy=True):
    ops = OpsHost(load_entry_points=False, extra_plugins=(("stranger", OpsStranger(backend, host_energy)),))
    assert ops.broken() == []
    opts = RunOptions(
        target="h200",
        specs=("stranger_square",),
        backend="stranger",
        cooldown_s=0.0,
        rest_s=0.0,
        telemetry=False,
        energy_s=0.02,
        energy_updates=0,
    )
    capture = Run(core, ops, opts, progress=lambda line: None).execute()
    return capture.measured.workloads["stranger_square"]


def test_a_strangers_backend_gets_an_energy_window_from_its_own_counter(core):
    backend = StrangerBackend()
    row = run_stranger(core, backend)
    energy = row.energy
    assert energy.available, energy.reason
    assert energy.counter.source == "the stranger's counter"
    assert energy.joules_per_execution == pytest.approx(J_PER_EXECUTION)
    assert energy.power_limit_w == 123.0
    assert energy.tokens_per_execution == 3 * 256  # the kind's own tokens answer
    assert energy.host_cpu is None  # the backend did not ask for the host's counter beside its own
    assert energy.execution == "eager"  # the session captures no graphs
    assert [c.closed for c in backend.counters] == [True]


def test_the_host_counter_is_read_beside_where_the_backend_declares_it(core):
    row = run_stranger(core, StrangerBackend(beside=True))
    host = row.energy.host_cpu
    assert host.available and host.source == "the stranger's host counter"
    assert host.joules == HOST_J_PER_READ  # two readings, one per edge


def test_no_host_counter_installed_is_said_beside(core):
    row = run_stranger(core, StrangerBackend(beside=True), host_energy=False)
    assert row.energy.available
    assert not row.energy.host_cpu.available and "no host energy counter installed" in row.energy.host_cpu.reason


def test_a_session_without_a_counter_says_why(core):
    row = run_stranger(core, StrangerBackend(no_counter=True))
    assert not row.energy.available and row.energy.reason == "the stranger's counter is switched off"


def test_backends_declare_their_probe_plans_and_are_checked():
    ops = OpsHost()
    assert ops.backend("torch-cuda").probe_plan == CUDA_PLAN
    assert ops.backend("torch-cpu").probe_plan == CPU_PLAN
    assert ops.default_backend("no-such-target") == "torch-cuda"  # the one declaring fallback

    class Bad(MeasurementBackend):
        name = "bad-plan"
        probe_plan = ["not", "a", "tuple"]

    class BadFlag(MeasurementBackend):
        name = "bad-flag"
        host_energy_beside = "yes"

    for bad, why in ((Bad(), "must declare probe_plan as a tuple"), (BadFlag(), "must declare host_energy_beside")):

        class Plugin:
            @hookimpl
            def tensorforge_measure_register_backends(self, register, bad=bad):
                register(bad)

        host = OpsHost(load_entry_points=False, extra_plugins=(("bad", Plugin()),))
        assert [why in (r.error or "") for r in host.broken()] == [True], host.broken()
    with pytest.raises(TensorForgeError, match="no installed backend measures target 'h200'"):
        OpsHost(load_entry_points=False).default_backend("h200")


# -- static: the seam holds in the source ------------------------------------------------------

DEVICE_MODULES = ("tf_cuda", "tf_cpu", "pynvml", "torch.cuda")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


def test_no_device_neutral_module_imports_device_code():
    found = []
    for path in sorted((ROOT / "tensorforge_measure").rglob("*.py")):
        for name in _imports(path):
            parts = name.split(".")
            device = any(name == m or name.startswith(m + ".") for m in DEVICE_MODULES)
            if device or any("rapl" in p.lower() or "nvml" in p.lower() for p in parts):
                found.append(f"{path.relative_to(ROOT)}: {name}")
    assert found == []


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _shipped_names() -> set[str]:
    """What the shipped plugins register, by name: workload kinds, targets, backends, telemetry
    sources, sinks, host energy sources (from the installed entry points)."""
    core, ops = PluginHost(), OpsHost()
    names = set(core.names("workloads")) | set(core.names("targets"))
    for kind in ("backends", "telemetry", "sinks", "host_energy"):
        names |= set(ops.names(kind))
    return names


# The Core's own vocabulary that coincides with a shipped plugin's name, said where and why:
# 'gemm' is the estimate's coefficient family and fit group (its terms, not the tf_gemm kind),
# 'collective' the Core's own mapping strategy for collective problems.
ALLOWED = {
    ("tensorforge/estimate/fit.py", "gemm"),
    ("tensorforge/estimate/probe_plan.py", "gemm"),
    ("tensorforge/estimate/coefficients.py", "gemm"),
    ("tensorforge/bound/mappings/collective.py", "collective"),
}
# ... and the access pattern the training step's parameter-side operators declare for the estimate
# (Training.update_implementations), not the tf_vector kind
ALLOWED.add(("tensorforge/workloads/training.py", "elementwise"))
# ... and anywhere in the estimate: its access patterns (tensorforge.estimate.implementation.PATTERNS,
# each with its calibrated stream bandwidth) 'elementwise' and 'norm', not the tf_vector kinds.
ALLOWED_UNDER = {("tensorforge/estimate/", "elementwise"), ("tensorforge/estimate/", "norm")}


def test_the_core_names_no_shipped_plugin_outside_prose():
    shipped = _shipped_names()
    assert {"gemm", "conv2d", "sdpa", "transformer", "torch-cuda", "torch-cpu", "h200", "host-cpu"} <= shipped
    assert {"softmax", "norm", "activation", "elementwise"} <= shipped
    found = []
    for path in sorted((ROOT / "tensorforge").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        docs = _docstrings(tree)
        rel = str(path.relative_to(ROOT))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                allowed = (rel, node.value) in ALLOWED or any(
                    rel.startswith(folder) and node.value == word for folder, word in ALLOWED_UNDER
                )
                if node.value in shipped and not allowed:
                    found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert found == []
