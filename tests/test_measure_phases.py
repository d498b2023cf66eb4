"""The runner with a backend that has measurement phases (burst eager and graph, trace window,
sustained eager and graph), registered in-process with synthetic timings: the primary timing is
the burst device time, every timing carries its regime and mode, telemetry windows come per
regime, each regime is compared with its own calibrated bound, operators with theirs; ceilings
per regime in the calibration store; a single-regime device says so."""

import contextlib

import attrs
import pytest
from tf_cuda.sustained import SteadyState

from tensorforge.bound.model import predict
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve
from tensorforge_measure.api import (
    CalibrationProbe,
    DeviceInfo,
    MeasurementBackend,
    Prepared,
    ProbeResult,
    Session,
    TelemetrySource,
    WorkloadBuilder,
)
from tensorforge_measure.calibrate import store as calibration
from tensorforge_measure.capture.convert import from_document, to_document
from tensorforge_measure.hookspecs import hookimpl
from tensorforge_measure.host import OpsHost
from tensorforge_measure.measure.phases import ModeTiming, PhaseResult
from tensorforge_measure.measure.stats import summarize
from tensorforge_measure.measure.timing import TimedSamples
from tensorforge_measure.measure.trace_attribution import Activity, Iteration, summarize_iterations
from tensorforge_measure.measure.trace_window import WorkloadTrace
from tensorforge_measure.report.summary import summary_text
from tensorforge_measure.run.runner import Run, RunOptions

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

SPEC = "transformer:hidden=256,layers=2,heads=4,seq=1,batch=4,phase=decode,context=64"
BURST = {"compute": {"bf16": 600e12, "fp16": 600e12, "tf32": 300e12, "fp32": 50e12}, "dram": 4.0e12}
SUSTAINED = {"compute": {"bf16": 450e12, "fp16": 450e12}, "dram": 3.0e12}


def timed(base, n=25):
    xs = tuple(base * (1 + 0.001 * ((i * 7) % 11 - 5)) for i in range(n))
    return TimedSamples(samples_s=xs, stats=summarize(xs), stop_reason="stable", warmup_iters=1, flush_bytes=64)


def fake_trace(operators, per_op_s, gap_s=0.0):
    """A graph-replay trace summary in which every operator ran one kernel of per_op_s, each
    kernel gap_s after the previous one's end."""
    its = []
    for i in range(3):
        t, acts = 0.0, []
        for op in operators:
            acts.append(Activity(f"{op}_kernel", "kernel", t, per_op_s * 1e6, op, i))
            t += (per_op_s + gap_s) * 1e6
        its.append(Iteration(i, tuple(acts), {}))
    summary = summarize_iterations(its)
    return WorkloadTrace(3, summary, summary, "graph replay", (), "synthetic")


class FakePhases:
    def __init__(self, plugin, fn):
        self.plugin, self.fn = plugin, fn
        self.graph = type("G", (), {"method": "synthetic graph", "calls": 4, "launch_state": "paired"})()
        self.graph_note = None

    def burst(self):
        self.plugin.order.append("burst")
        p = self.plugin.times
        return PhaseResult(
            (
                ModeTiming("burst", "eager", timed(p["burst_eager"]), "eager"),
                ModeTiming("burst", "graph", timed(p["burst_graph"]), "graph"),
            ),
            (),
            None,
            fake_trace(self.plugin.operators, p["burst_graph"] / len(self.plugin.operators)),
        )

    def sustained(self):
        self.plugin.order.append("sustained")
        p = self.plugin.times
        return PhaseResult(
            (
                ModeTiming("sustained", "eager", timed(p["sustained_eager"]), "eager"),
                ModeTiming("sustained", "graph", timed(p["sustained_graph"]), "graph"),
            ),
            (),
            SteadyState(True, 0.4, (1.0, 1.0, 1.0), "rule"),
            None,
        )


class FakeSession(Session):
    def __init__(self, plugin):
        self.plugin = plugin
        self.info = DeviceInfo(backend="fake", name="NVIDIA H200", fingerprint="fake-phases", details={})

    @contextlib.contextmanager
    def prepared(self, builder, params, math_mode):
        yield Prepared(builder.build(params, None), peak_memory_bytes=1, framework_flags={})

    @contextlib.contextmanager
    def phases(self, fn, plan):
        self.plugin.plans.append(plan)
        yield FakePhases(self.plugin, fn)

    def synchronize(self):
        pass


class FakeBackend(MeasurementBackend):
    name = "fake"

    def __init__(self, plugin):
        self.plugin = plugin

    def open(self, device_index=0):
        return FakeSession(self.plugin)


class Noop(WorkloadBuilder):
    kind = "transformer"
    backend = "fake"

    def build(self, params, device):
        return lambda: None


class Probe(CalibrationProbe):
    backend = "fake"

    def __init__(self, name, regime, ceilings):
        self.name, self.regime, self.ceilings = name, regime, ceilings

    def run(self, session):
        return ProbeResult(
            name=self.name,
            method="synthetic",
            regime=self.regime,
            compute=self.ceilings["compute"],
            dram_bytes_per_s=self.ceilings["dram"],
            floors={"kernel_interval_s": 1e-6} if self.regime == "burst" else {},
        )


class Telemetry(TelemetrySource):
    name = "fake-telemetry"
    backend = "fake"

    def __init__(self, plugin):
        self.plugin = plugin

    def collect(self, session, run_once, duration_s):
        self.plugin.order.append(f"telemetry {duration_s}")
        return {"available": True, "duration_s": duration_s, "summary": {}}


class Plugin:
    def __init__(self, times, operators, sustained_probe=True):
        self.times, self.operators = times, operators
        self.order, self.plans, self.progress = [], [], []
        self.sustained_probe = sustained_probe

    @hookimpl
    def tensorforge_measure_register_backends(self, register):
        register(FakeBackend(self))

    @hookimpl
    def tensorforge_measure_register_builders(self, register):
        register(Noop())

    @hookimpl
    def tensorforge_measure_register_probes(self, register):
        # registered sustained first: the store must still run it last
        if self.sustained_probe:
            register(Probe("a-sustained", "sustained", SUSTAINED))
        register(Probe("b-burst", "burst", BURST))

    @hookimpl
    def tensorforge_measure_register_telemetry(self, register):
        register(Telemetry(self))


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORFORGE_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def core():
    return PluginHost()


def bound(core, ceilings) -> dict[str, float]:
    from tensorforge.hardware.target import Ceilings
    from tensorforge_measure.calibrate.store import COMPUTE_ALLOWANCE

    # the probes' rates, raised by the allowance as the calibration raises them
    rates = ceilings["compute"] if len(ceilings["compute"]) > 2 else {**BURST["compute"], **ceilings["compute"]}
    c = Ceilings(
        origin="calibrated",
        compute={mode: rate * (1 + COMPUTE_ALLOWANCE) for mode, rate in rates.items()},
        dram_bytes_per_s=ceilings["dram"],
        source="test",
    )
    (w,) = predict(resolve(core, (SPEC,)), core.target("h200"), core.mappings(), None, c).workloads
    return w


def run(core, plugin, **options):
    """The capture of a run, as the JSON document a capture file holds."""
    ops = OpsHost(load_entry_points=False, extra_plugins=(("fake", plugin),))
    assert ops.broken() == []
    opts = RunOptions(target="h200", specs=(SPEC,), backend="fake", cooldown_s=0.0, rest_s=0.0, **options)
    capture = Run(core, ops, opts, progress=plugin.progress.append).execute()
    doc = to_document(capture)
    # the document round-trips (the typed values compare unequal only where the Core's own
    # untyped problem dicts hold tuples that JSON gives back as lists)
    assert to_document(from_document(doc)) == doc
    return doc


@pytest.fixture(scope="module")
def operators(core):
    ((workload, kind),) = resolve(core, (SPEC,))
    return [op.name for op in kind.operators(workload.params)]


@pytest.fixture
def times(core):
    b, s = bound(core, BURST).latency_s, bound(core, SUSTAINED).latency_s
    # eager far above (host-bound), graph 10% above the burst bound; sustained graph 5% above
    # the sustained bound, which is above the burst one
    return {"burst_eager": 20 * b, "burst_graph": 1.1 * b, "sustained_eager": 20 * b, "sustained_graph": 1.05 * s}


def test_primary_timing_is_burst_device_time_and_every_timing_is_labelled(core, times, operators):
    plugin = Plugin(times, operators)
    doc = run(core, plugin, telemetry_s=0.5)  # longer than the burst window's 0.3 s cap
    row = doc["measured"]["workloads"][SPEC]
    assert (row["regime"], row["mode"]) == ("burst", "graph")
    assert row["stats"]["p50"] == pytest.approx(times["burst_graph"])
    assert {(m["regime"], m["mode"]) for m in row["modes"]} == {
        ("burst", "eager"),
        ("sustained", "eager"),
        ("sustained", "graph"),
    }
    assert row["host_overhead_s"]["burst"] == pytest.approx(times["burst_eager"] - times["burst_graph"])
    assert row["graph"] == {
        "captured": True,
        "reason": None,
        "method": "synthetic graph",
        "calls_per_replay": 4,
        "launch_state": "paired",  # the harness's launch state, stated in the capture
        "idle_per_activity_s": 0.0,  # the fake trace's kernels run back to back
    }
    assert "notes" not in row and "regimes_note" not in row  # optional fields left out when empty
    assert row["steady"]["reached"] is True and row["operators"]["source"] == "graph replay"
    # order: burst timings, burst telemetry (<= 0.3 s), sustained timings, sustained telemetry
    assert plugin.order == ["burst", "telemetry 0.3", "sustained", "telemetry 0.5"]
    diag = doc["diagnostic"]
    assert diag["windows"][SPEC]["regime"] == "sustained" and diag["burst_windows"][SPEC]["regime"] == "burst"
    assert (
        diag["windows"][SPEC]["data"]["duration_s"] == 0.5 and diag["burst_windows"][SPEC]["data"]["duration_s"] == 0.3
    )


def test_each_regime_is_compared_with_its_own_bound(core, times, operators):
    doc = run(core, Plugin(times, operators))
    regimes = doc["comparison"]["workloads"][SPEC]["regimes"]
    burst_bound, sustained_bound = bound(core, BURST).latency_s, bound(core, SUSTAINED).latency_s
    assert sustained_bound > burst_bound
    assert regimes["burst"]["mode"] == "graph" and regimes["burst"]["predicted_calibrated_s"] == pytest.approx(
        burst_bound
    )
    assert regimes["sustained"]["predicted_calibrated_s"] == pytest.approx(sustained_bound)
    assert regimes["sustained"]["bound_check"]["measured_over_bound"] == pytest.approx(1.05, rel=1e-3)
    assert regimes["sustained"]["eager_p50_s"] == pytest.approx(times["sustained_eager"])
    assert regimes["burst"]["ape_calibrated"] == pytest.approx(0.1 / 1.1, rel=1e-3)
    assert doc["comparison"]["regime_bound_violations"] == []
    # sustained graph time under the sustained bound (though above the burst one): a violation
    # of its own regime, shown loudly
    doc = run(core, Plugin({**times, "sustained_graph": 0.9 * sustained_bound}, operators))
    assert doc["comparison"]["regime_bound_violations"] == [f"{SPEC} (sustained graph)"]
    assert doc["comparison"]["bound_violations"] == []  # the primary (burst) timing is fine
    assert "BOUND VIOLATIONS by regime" in summary_text(from_document(doc))


def test_a_regime_bound_above_the_measurement_inside_the_tolerance_is_flagged_as_not_sound(core, times, operators):
    """The H200's conv_fp16_3x3_64x512x14 (2026-12-01): sustained p50 2.0% under its sustained bound,
    tolerance 2.8%, so no BOUND VIOLATION; the regime's check now carries the burst check's
    soundness line (the fastest sample against the bound, no tolerance), which says so."""
    sustained_bound = bound(core, SUSTAINED).latency_s
    doc = run(core, Plugin({**times, "sustained_graph": 0.99 * sustained_bound}, operators))
    check = doc["comparison"]["workloads"][SPEC]["regimes"]["sustained"]["bound_check"]
    assert check["verdict"] == "within bound" and doc["comparison"]["regime_bound_violations"] == []
    assert check["fastest_verdict"] == "FASTEST SAMPLE BELOW BOUND"
    assert check["fastest_over_bound"] <= 0.99 + 1e-9 and check["fastest_margin"] < 0
    ok = run(core, Plugin(times, operators))["comparison"]["workloads"][SPEC]["regimes"]["sustained"]["bound_check"]
    assert ok["fastest_verdict"] == "fastest sample within bound" and ok["fastest_over_bound"] > 1


def test_operators_are_compared_with_their_own_bounds(core, times, operators):
    doc = run(core, Plugin(times, operators))
    ops = doc["comparison"]["workloads"][SPEC]["operators"]
    assert ops["available"] and ops["mode"] == "graph" and ops["regime"] == "burst"
    assert [r["operator"] for r in ops["operators"]] == operators
    assert ops["coverage"] == pytest.approx(1.0)
    cal = {o["name"]: o for o in doc["predicted"]["calibrated"]["workloads"][0]["operators"]}
    for r in ops["operators"]:
        assert r["predicted_calibrated_s"] == cal[r["operator"]]["latency_s"]
        assert r["measured_s"] == pytest.approx(times["burst_graph"] / len(operators))
        if r["ape_calibrated"] is not None:
            assert r["ape_calibrated"] == pytest.approx(
                abs(r["predicted_calibrated_s"] - r["measured_s"]) / r["measured_s"]
            )
    # an operator measured far under its bound is a violation of its own
    biggest = max(ops["operators"], key=lambda r: r["predicted_calibrated_s"])
    assert biggest["measured_s"] < biggest["predicted_calibrated_s"]
    assert ops["violations"] == [
        r["operator"] for r in ops["operators"] if r["measured_s"] < 0.98 * r["predicted_calibrated_s"]
    ]
    assert doc["comparison"]["operator_bound_violations"] == sorted(f"{SPEC}: {op}" for op in ops["violations"])


def test_ceilings_per_regime_in_the_store(core, times, operators):
    plugin = Plugin(times, operators)
    run(core, plugin)
    cal = calibration.load("fake-phases")
    assert calibration.regimes(cal) == ["burst", "sustained"]
    up = lambda rates: {m: r * (1 + calibration.COMPUTE_ALLOWANCE) for m, r in rates.items()}  # noqa: E731
    assert cal.ceilings.compute == up(BURST["compute"])  # 'ceilings' stays the burst regime
    assert cal.floors == {"kernel_interval_s": 1e-6}
    assert [line.split("calibrating: ")[1] for line in plugin.progress if "calibrating: " in line] == [
        "b-burst",
        "a-sustained",
    ]  # sustained probes run last
    assert cal.probes["a-sustained"].regime == "sustained"
    sustained = calibration.to_ceilings(cal, "sustained")
    # modes the sustained probe did not measure come from the burst one, and the source says so
    assert sustained.compute == up({**BURST["compute"], **SUSTAINED["compute"]})
    assert "(sustained regime; fp32, tf32 from the burst probes)" in sustained.source
    assert calibration.to_ceilings(cal).compute == up(BURST["compute"])
    assert calibration.to_ceilings(attrs.evolve(cal, ceilings_by_regime=None), "sustained") is None


def test_without_sustained_ceilings_the_sustained_check_says_why(core, times, operators):
    doc = run(core, Plugin(times, operators, sustained_probe=False))
    check = doc["comparison"]["workloads"][SPEC]["regimes"]["sustained"]["bound_check"]
    assert check["verdict"] == "no verdict: the calibration has no sustained-regime ceilings (recalibrate)"
    assert "calibrated_sustained" not in doc["predicted"]


def test_run_options_reach_the_plan(core, times, operators):
    plugin = Plugin(times, operators)
    run(core, plugin, graph=False, trace=False, budget_s=0.5)
    (plan,) = plugin.plans
    assert (plan.graph, plan.trace, plan.budget_s, plan.graph_budget_s) == (False, False, 0.5, 0.5)


def test_the_gate_compares_only_timings_of_the_same_regime_and_mode(core, times, operators):
    import copy

    from tensorforge_measure.capture.document import seal
    from tensorforge_measure.policy.evidence import Evidence
    from tensorforge_measure.policy.gate import gate

    base = run(core, Plugin(times, operators))
    evidence = lambda doc, path: Evidence(path, seal(from_document(doc)))
    again = run(core, Plugin(times, operators))  # the same timings, another capture
    same = gate(evidence(base, "a.json"), evidence(again, "b.json"))
    assert [v.verdict for v in same.verdicts] == ["PASS"]
    cand = copy.deepcopy(base)
    row = cand["measured"]["workloads"][SPEC]
    row["regime"], row["mode"] = "burst", "eager"  # as a capture from before graph mode
    (verdict,) = gate(evidence(base, "a.json"), evidence(cand, "b.json")).verdicts
    assert verdict.verdict == "NO VERDICT"
    assert verdict.reason == "measured differently: burst graph in the baseline, burst eager in the candidate"


def test_verify_recomputes_the_statistics_of_every_timing(core, times, operators, tmp_path):
    from tensorforge_measure.capture.document import verify, write_capture

    doc = run(core, Plugin(times, operators))
    path = tmp_path / "cap.json"
    write_capture(path, from_document(doc))
    assert verify(path).ok
    doc["measured"]["workloads"][SPEC]["modes"][0]["samples_s"][0] *= 3
    write_capture(path, from_document(doc))
    report = verify(path)
    assert not report.ok and "(burst eager): recorded" in " ".join(report.problems)


def test_report_shows_both_regimes_and_the_operators(core, times, operators):
    from tensorforge_measure.capture.document import seal
    from tensorforge_measure.report.facts import build_facts
    from tensorforge_measure.report.html import report_page
    from tensorforge_measure.report.markdown import render_markdown

    doc = seal(from_document(run(core, Plugin(times, operators))))
    facts = build_facts(doc)
    m = facts["measurement"]
    assert {(r["regime"], r["mode"]) for r in m["regimes"]} == {("burst", "graph"), ("sustained", "graph")}
    assert m["operators"]["workload"] == SPEC and [r["operator"] for r in m["operators"]["rows"]] == operators
    assert m["operators"]["rows"][0]["kernel_names"] == ["norm_attn_kernel"]
    assert m["floors"] == {"kernel_interval_s": 1e-6}
    page = report_page(facts)
    for text in (
        "Burst and sustained",
        "Where the time goes, per operator",
        'id="plot-operators"',
        "kernel interval, graph replay",
        "qkv_proj_kernel",
    ):
        assert text in page
    md = render_markdown(facts)
    assert "| mlp_down | 2 | 1 |" in md and "## Burst and sustained" in md
    # a named workload without a trace says why
    assert build_facts(doc, operators_workload="nope")["measurement"]["operators"]["available"] is False


def test_the_launch_levels_evidence_is_the_traced_idle_time_per_kernel():
    """GraphRecord.idle_per_activity_s: idle time between the traced graph's kernels per call over
    kernels per call (the H200's decode step: ~0.1 us at the lower launch level, ~0.45 us upper)."""
    from tensorforge_measure.run.workload_measurement import idle_per_activity

    operators = ["a", "b", "c", "d"]
    trace = fake_trace(operators, 5e-6, gap_s=0.45e-6)
    # 3 gaps between 4 kernels per call, spread over the 4 kernels
    assert idle_per_activity(trace) == pytest.approx(3 * 0.45e-6 / 4)
    assert idle_per_activity(None) is None
    assert idle_per_activity(attrs.evolve(trace, graph=None)) is None
