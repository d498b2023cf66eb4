"""The runner end to end with a fake measurement backend registered in-process: raw samples and
statistics, a failing workload recorded while the suite goes on, APE only on the predicted
device, bound violations, the calibration store (reuse, --recalibrate, damaged file) and an
interrupted run that leaves an incomplete capture `verify` refuses."""

import contextlib
import json
from pathlib import Path
from types import SimpleNamespace

import attrs
import pytest
from click.testing import CliRunner

import tensorforge.cli.main
from tensorforge.bound.model import predict
from tensorforge.cli.main import make_cli
from tensorforge.errors import TensorForgeError
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve, resolve_spec
from tensorforge_measure import host as hosts
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
from tensorforge_measure.capture.document import verify, write_capture
from tensorforge_measure.hookspecs import hookimpl
from tensorforge_measure.host import OpsHost
from tensorforge_measure.measure.stats import summarize
from tensorforge_measure.measure.timing import TimedSamples
from tensorforge_measure.report.summary import summary_text
from tensorforge_measure.run.runner import Run, RunOptions

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

SPECS = ("gemm_large_square", "gemm_tiny", "conv_resnet50_3x3")
CEILINGS = {
    "compute": {"bf16": 600e12, "fp32": 50e12, "tf32": 300e12, "fp16": 600e12},
    "dram_bytes_per_s": 4.0e12,
    "launch_floor_s": 5e-6,
}
# what the calibration makes of the fake probe's rates: each compute ceiling raised by the allowance
CALIBRATED_CEILINGS = {
    **CEILINGS,
    "compute": {m: r * (1 + calibration.COMPUTE_ALLOWANCE) for m, r in CEILINGS["compute"].items()},
}
OOM = "CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 139.8 GiB total capacity)"


def synthetic(base: float, n: int = 25) -> tuple:
    """Deterministic samples around `base` with a small spread (rel. IQR well under 2%)."""
    return tuple(base * (1 + 0.001 * ((i * 7) % 11 - 5)) for i in range(n))


# -- the fake plugin ---------------------------------------------------------------------------


class FakeSession(Session):
    def __init__(self, plugin: "FakePlugin"):
        self.plugin = plugin
        self.info = DeviceInfo(backend="fake", name=plugin.device_name, fingerprint="fake-1", details={})
        self.current = None
        self.timed = 0
        self.closed = False

    @contextlib.contextmanager
    def prepared(self, builder, params, math_mode):
        fn = builder.build(params, device=None)
        self.current = params
        self.plugin.prepared_modes.append(math_mode)
        yield Prepared(fn, peak_memory_bytes=123, framework_flags={})

    def time(self, fn, budget_s):
        self.timed += 1
        if self.plugin.interrupt_at == self.timed:
            raise KeyboardInterrupt
        fn()
        samples = self.plugin.samples[self.current]
        return TimedSamples(samples, summarize(samples), "stable", 3, 0)

    def close(self):
        self.closed = True


class FakeBackend(MeasurementBackend):
    name = "fake"
    description = "synthetic samples, no device"

    def __init__(self, plugin):
        self.plugin = plugin

    def open(self, device_index=0):
        session = FakeSession(self.plugin)
        self.plugin.sessions.append(session)
        return session


class NoopGemm(WorkloadBuilder):
    kind = "gemm"
    backend = "fake"

    def __init__(self):
        self.devices = []

    def build(self, params, device):
        self.devices.append(device)
        return lambda: None


class OomConv(WorkloadBuilder):
    kind = "conv2d"
    backend = "fake"

    def build(self, params, device):
        raise RuntimeError(OOM)


class FakeProbe(CalibrationProbe):
    name = "fake-probe"
    backend = "fake"

    def __init__(self):
        self.runs = 0

    def run(self, session):
        self.runs += 1
        return ProbeResult(
            name=self.name,
            method="synthetic ceilings",
            compute=dict(CEILINGS["compute"]),
            dram_bytes_per_s=CEILINGS["dram_bytes_per_s"],
            launch_floor_s=CEILINGS["launch_floor_s"],
            duration_s=0.5,
        )


class FakeTelemetry(TelemetrySource):
    name = "fake-telemetry"
    backend = "fake"

    def collect(self, session, run_once, duration_s):
        run_once()
        return {
            "available": True,
            "duration_s": duration_s,
            "summary": {
                "sm_clock_mhz_median": 1980.0,
                "power_w_median": 500.0,
                "reason_fractions": [["SwPowerCap", 0.5]],
            },
        }


class FakePlugin:
    def __init__(self, samples: dict, device_name: str = "NVIDIA H200", interrupt_at: int | None = None):
        self.samples = samples
        self.device_name = device_name
        self.interrupt_at = interrupt_at
        self.sessions = []
        self.prepared_modes = []
        self.backend = FakeBackend(self)
        self.gemm = NoopGemm()
        self.probe = FakeProbe()

    @hookimpl
    def tensorforge_measure_register_backends(self, register):
        register(self.backend)

    @hookimpl
    def tensorforge_measure_register_builders(self, register):
        register(self.gemm)
        register(OomConv())

    @hookimpl
    def tensorforge_measure_register_probes(self, register):
        register(self.probe)

    @hookimpl
    def tensorforge_measure_register_telemetry(self, register):
        register(FakeTelemetry())


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("TENSORFORGE_HOME", str(path))
    return path


@pytest.fixture(scope="module")
def core():
    return PluginHost()


@pytest.fixture(scope="module")
def bounds(core) -> dict[str, float]:
    """The calibrated lower bound on h200 the runner will compute from the fake probe."""
    stored = SimpleNamespace(
        ceilings=SimpleNamespace(**CALIBRATED_CEILINGS),
        device="NVIDIA H200",
        fingerprint="fake-1",
        measured_at="2026-01-01T00:00:00+00:00",
    )
    ceilings = calibration.to_ceilings(stored)
    pred = predict(resolve(core, SPECS), core.target("h200"), core.mappings(), None, ceilings)
    return {w.name: w.latency_s for w in pred.workloads}


@pytest.fixture(scope="module")
def samples(core, bounds) -> dict:
    """Per workload params: gemm_large_square at half its calibrated bound (a violation),
    gemm_tiny far above it."""
    params = {name: resolve_spec(core, name)[0].params for name in SPECS}
    return {
        params["gemm_large_square"]: synthetic(0.5 * bounds["gemm_large_square"]),
        params["gemm_tiny"]: synthetic(5e-6),
    }


def make_ops(plugin) -> OpsHost:
    ops = OpsHost(load_entry_points=False, extra_plugins=(("fake", plugin),))
    assert ops.broken() == []
    return ops


def execute(core, plugin, target="h200", specs=SPECS, **options):
    progress = []
    run = Run(
        core,
        make_ops(plugin),
        RunOptions(
            **{"target": target, "specs": specs, "backend": "fake", "cooldown_s": 0.0, "rest_s": 0.0, **options}
        ),
        progress=progress.append,
    )
    capture = run.execute()
    assert from_document(to_document(capture)) == capture  # what the run built round-trips
    return to_document(capture), progress  # the document as a capture file holds it


@pytest.fixture
def h200_run(core, samples):
    plugin = FakePlugin(samples)
    doc, progress = execute(core, plugin)
    return plugin, doc, progress


# -- MEASURED ----------------------------------------------------------------------------------


def test_ok_rows_have_raw_samples_and_stats(h200_run, samples, core):
    plugin, doc, _ = h200_run
    measured = doc["measured"]
    assert measured["available"] is True and measured["backend"] == "fake"
    assert measured["device"] == {"name": "NVIDIA H200", "fingerprint": "fake-1", "details": {}}
    analytical = {w["name"]: w for w in doc["predicted"]["analytical"]["workloads"]}
    for name in ("gemm_large_square", "gemm_tiny"):
        raw = samples[resolve_spec(core, name)[0].params]
        row = measured["workloads"][name]
        assert row["status"] == "ok" and row["reason"] is None
        assert row["samples_s"] == list(raw)
        assert row["stats"] == attrs.asdict(summarize(raw))
        assert row["stats"]["n"] == 25
        assert row["stop_reason"] == "stable" and row["warmup_iters"] == 3 and row["flush_bytes"] == 0
        assert row["peak_memory_bytes"] == 123 and row["framework_flags"] == {}
        assert row["math_mode"] == "bf16"
        p50 = row["stats"]["p50"]
        assert row["throughput_flops_per_s"] == analytical[name]["flops"] / p50
        assert row["throughput_bytes_per_s"] == analytical[name]["compulsory_bytes"] / p50
    assert plugin.gemm.devices == [None, None]  # build(params, device=session.device)
    assert [s.closed for s in plugin.sessions] == [True]


def test_oom_row_is_failed_and_suite_continues(h200_run, core, samples):
    _, doc, progress = h200_run
    row = doc["measured"]["workloads"]["conv_resnet50_3x3"]
    assert row == {"status": "failed", "math_mode": "bf16", "reason": f"CUDA out of memory: RuntimeError: {OOM}"}
    assert "out of memory" in row["reason"]
    comp = doc["comparison"]["workloads"]["conv_resnet50_3x3"]
    assert comp["measured_p50_s"] is None and comp["ape_analytical"] is None
    assert comp["bound_check"]["verdict"] == f"no verdict: no measurement (CUDA out of memory: RuntimeError: {OOM})"
    assert any(line.endswith(f"  failed: CUDA out of memory: RuntimeError: {OOM}") for line in progress)
    # a failing workload in the middle does not stop the ones after it
    plugin = FakePlugin(samples)
    doc, _ = execute(core, plugin, specs=("conv_resnet50_3x3", "gemm_tiny"))
    assert doc["measured"]["workloads"]["conv_resnet50_3x3"]["status"] == "failed"
    assert doc["measured"]["workloads"]["gemm_tiny"]["status"] == "ok"
    assert doc["complete"] is True


def test_progress_lines(h200_run):
    _, _, progress = h200_run
    text = "\n".join(progress)
    assert "predicting 3 workloads on h200" in text
    assert "device: NVIDIA H200 (fake-1)" in text
    assert "calibrating: fake-probe" in text
    for i, name in enumerate(SPECS, 1):
        assert f"measuring {name} ({i}/3)" in text


# -- APE and bound checks ----------------------------------------------------------------------


def test_ape_on_the_predicted_device_is_exact(h200_run, bounds):
    _, doc, _ = h200_run
    comp = doc["comparison"]
    assert comp["same_device"] is True and comp["device_note"] is None and comp["calibrated_target"] == "h200"
    analytical = {w["name"]: w["latency_s"] for w in doc["predicted"]["analytical"]["workloads"]}
    calibrated = {w["name"]: w["latency_s"] for w in doc["predicted"]["calibrated"]["workloads"]}
    assert calibrated == bounds
    for name in ("gemm_large_square", "gemm_tiny"):
        row = comp["workloads"][name]
        p50 = doc["measured"]["workloads"][name]["stats"]["p50"]
        assert row["measured_p50_s"] == p50
        assert row["predicted_analytical_s"] == analytical[name]
        assert row["predicted_calibrated_s"] == calibrated[name]
        assert row["ape_analytical"] == abs(analytical[name] - p50) / p50
        assert row["ape_calibrated"] == abs(calibrated[name] - p50) / p50
        assert row["ape_note"] is None
    # gemm_large_square ran at half its bound: APE(calibrated) is 100%
    assert comp["workloads"]["gemm_large_square"]["ape_calibrated"] == pytest.approx(1.0, rel=1e-12)


def test_bound_violation_and_within_bound(h200_run, bounds):
    _, doc, _ = h200_run
    comp = doc["comparison"]
    assert comp["bound_violations"] == ["gemm_large_square"]
    big = comp["workloads"]["gemm_large_square"]["bound_check"]
    assert big["verdict"] == "BOUND VIOLATION"
    assert big["measured_over_bound"] == pytest.approx(0.5, rel=1e-12)
    assert big["tolerance"] == 0.02
    tiny = comp["workloads"]["gemm_tiny"]["bound_check"]
    assert tiny["verdict"] == "within bound"
    assert tiny["measured_over_bound"] == pytest.approx(5e-6 / bounds["gemm_tiny"], rel=1e-12)
    assert doc["policy"]["bound_checks"]["gemm_large_square"] == {
        "verdict": "BOUND VIOLATION",
        "evidence": ["MEASURED p50", "CALIBRATED lower bound"],
    }
    assert doc["policy"]["bound_checks"]["gemm_tiny"]["verdict"] == "within bound"
    text = summary_text(from_document(doc))
    assert "BOUND VIOLATIONS: gemm_large_square" in text
    assert f"failed: conv_resnet50_3x3: CUDA out of memory: RuntimeError: {OOM}" in text


def test_diagnostic_from_fake_telemetry(h200_run):
    _, doc, _ = h200_run
    diag = doc["diagnostic"]
    assert diag["available"] is True and diag["reason"] is None and diag["source"] == "fake-telemetry"
    assert sorted(diag["windows"]) == ["gemm_large_square", "gemm_tiny"]  # conv failed before its window
    window = diag["windows"]["gemm_tiny"]
    # the source's record is kept whole; its NVML-layout summary fills the envelope
    assert window["data"]["duration_s"] == 0.3 and window["clock_event_fractions"] == [
        ["SwPowerCap", 0.5]
    ]  # 0.3: the default --telemetry-seconds
    assert window["headline"] == "SM 1980.0 MHz median, 500.0 W median, clock-event reasons seen: SwPowerCap 50%"
    assert "gemm_tiny: SM 1980.0 MHz median, 500.0 W median, clock-event reasons seen: SwPowerCap 50%" in summary_text(
        from_document(doc)
    )


def test_no_telemetry_option(core, samples):
    doc, _ = execute(core, FakePlugin(samples), specs=("gemm_tiny",), telemetry=False)
    assert doc["diagnostic"]["available"] is False
    assert doc["diagnostic"]["reason"] == "telemetry disabled (--no-telemetry)"


def test_capture_of_fake_run_verifies(h200_run, tmp_path):
    _, doc, _ = h200_run
    path = tmp_path / "fake.json"
    write_capture(path, from_document(doc))
    report = verify(path)
    assert report.ok, report.problems
    assert "every statistic and throughput recomputed from the raw samples for 2 workloads" in report.checks


def test_other_target_has_no_ape_and_bound_from_device_target(core, samples, bounds):
    doc, _ = execute(core, FakePlugin(samples), target="rtx3050-laptop")
    assert doc["target"] == "rtx3050-laptop"
    assert doc["predicted"]["calibrated_target"] == "h200"
    assert doc["predicted"]["calibrated_note"] is None
    note = "measured on NVIDIA H200, which is not target rtx3050-laptop: APE is computed only on the predicted device"
    comp = doc["comparison"]
    assert comp["same_device"] is False and comp["device_note"] == note and comp["calibrated_target"] == "h200"
    for name in ("gemm_large_square", "gemm_tiny"):
        row = comp["workloads"][name]
        assert row["ape_analytical"] is None and row["ape_calibrated"] is None
        assert row["ape_note"] == note and "NVIDIA H200" in row["ape_note"]
        assert row["predicted_calibrated_s"] == bounds[name]  # the h200 bound, not the rtx one
    assert comp["bound_violations"] == ["gemm_large_square"]
    text = summary_text(from_document(doc))
    assert "calibrated bound is for the measuring device's target h200" in text
    assert f"APE: {note}" in text


def test_device_matching_no_target_gives_no_calibrated_bound(core, samples):
    doc, _ = execute(core, FakePlugin(samples, device_name="Fake GPU 9000"), specs=("gemm_tiny",))
    note = "no installed target describes the measuring device 'Fake GPU 9000'"
    assert doc["predicted"]["calibrated"] is None and doc["predicted"]["calibrated_note"] == note
    row = doc["comparison"]["workloads"]["gemm_tiny"]
    assert row["ape_analytical"] is None and row["measured_p50_s"] == 5e-6
    assert row["bound_check"] == {"verdict": f"no verdict: {note}"}
    assert doc["calibrated"]["available"] is True  # the ceilings were still measured


# -- calibration store -------------------------------------------------------------------------


def test_calibration_stored_per_fingerprint(h200_run, home):
    plugin, doc, _ = h200_run
    path = home / "calibrations" / "fake-1.json"
    assert path.is_file()
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["fingerprint"] == "fake-1" and stored["device"] == "NVIDIA H200"
    assert stored["ceilings"] == CALIBRATED_CEILINGS and stored["compute_allowance"] == calibration.COMPUTE_ALLOWANCE
    assert stored["probes"]["fake-probe"]["compute"] == CEILINGS["compute"]  # the rates it observed
    assert stored["probes"]["fake-probe"]["method"] == "synthetic ceilings"
    assert stored["failed_probes"] == {}
    cal = doc["calibrated"]
    assert cal["available"] is True and cal["reused"] is False and cal["label"] == "CALIBRATED"
    assert cal["stored_at"] == str(path)
    assert cal["ceilings"] == CALIBRATED_CEILINGS
    assert plugin.probe.runs == 1


def test_calibration_reused_unless_recalibrate(core, samples, home):
    first = FakePlugin(samples)
    execute(core, first, specs=("gemm_tiny",))
    stored = (home / "calibrations" / "fake-1.json").read_bytes()
    second = FakePlugin(samples)
    doc, progress = execute(core, second, specs=("gemm_tiny",))
    assert second.probe.runs == 0
    assert doc["calibrated"]["reused"] is True
    assert doc["calibrated"]["measured_at"] == json.loads(stored)["measured_at"]
    assert any("reusing calibration of " in line and "for fake-1" in line for line in progress)
    assert "reused from " in summary_text(from_document(doc))
    third = FakePlugin(samples)
    doc, _ = execute(core, third, specs=("gemm_tiny",), recalibrate=True)
    assert third.probe.runs == 1 and doc["calibrated"]["reused"] is False


@pytest.mark.parametrize(
    "content, why",
    [
        ("{not json", ": not valid JSON: "),
        ('{"fingerprint": "other", "ceilings": {}}', " is not a calibration for fake-1"),
        ("[1, 2]", " is not a calibration for fake-1"),
        (b"\xff\xfe{}", ": not UTF-8 text (invalid start byte at byte 0)"),
        (
            '{"fingerprint": "fake-1", "ceilings": {}}',
            " is not a calibration (required field missing: label, device, device_details",
        ),
    ],
)
def test_damaged_calibration_is_an_error_naming_the_file(core, samples, home, content, why):
    path = home / "calibrations" / "fake-1.json"
    path.parent.mkdir(parents=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    before = path.read_bytes()
    plugin = FakePlugin(samples)
    with pytest.raises(TensorForgeError) as info:
        execute(core, plugin, specs=("gemm_tiny",))
    message = str(info.value)
    assert message.startswith(f"stored calibration {path}{why}")
    assert message.endswith("remove it or pass --recalibrate")
    assert path.read_bytes() == before  # never silently overwritten
    assert plugin.probe.runs == 0 and [s.closed for s in plugin.sessions] == [True]
    # --recalibrate replaces it
    doc, _ = execute(core, FakePlugin(samples), specs=("gemm_tiny",), recalibrate=True)
    assert json.loads(path.read_text())["fingerprint"] == "fake-1" and doc["calibrated"]["reused"] is False


# -- through the CLI ---------------------------------------------------------------------------


@pytest.fixture
def fake_cli(monkeypatch, core):
    def install(plugin):
        monkeypatch.setattr(hosts, "ops_host", lambda core: make_ops(plugin))
        return make_cli(lambda: core)

    return install


def test_cli_run_with_fake_backend(fake_cli, samples, tmp_path):
    cli = fake_cli(FakePlugin(samples))
    out = tmp_path / "cap.json"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "-t",
            "h200",
            "--backend",
            "fake",
            "--cooldown",
            "0",
            "--rest",
            "0",
            "-o",
            str(out),
            *(a for s in SPECS for a in ("-w", s)),
        ],
    )
    assert result.exit_code == 0, result.output
    assert verify(out).ok
    assert "BOUND VIOLATIONS: gemm_large_square" in result.stdout
    doc = json.loads(out.read_text())
    fake_report = [p for p in doc["provenance"]["plugins"] if p["name"] == "fake"]
    assert fake_report and fake_report[0]["side"] == "ops" and fake_report[0]["error"] is None


def test_cli_damaged_calibration_is_one_line(fake_cli, samples, tmp_path, home):
    path = home / "calibrations" / "fake-1.json"
    path.parent.mkdir(parents=True)
    path.write_text("{", encoding="utf-8")
    cli = fake_cli(FakePlugin(samples))
    out = tmp_path / "cap.json"
    result = CliRunner().invoke(
        cli,
        ["run", "-t", "h200", "--backend", "fake", "--cooldown", "0", "--rest", "0", "-o", str(out), "-w", "gemm_tiny"],
    )
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: stored calibration {path}: not valid JSON: ")
    assert "Traceback" not in result.output
    assert not out.exists() and not out.with_name("cap.incomplete.json").exists()


def _interrupted_checks(out: Path):
    partial = out.with_name("cap.incomplete.json")
    assert not out.exists() and not out.with_suffix(".summary.txt").exists()
    assert partial.is_file()
    doc = json.loads(partial.read_text(encoding="utf-8"))
    assert doc["complete"] is False
    assert sorted(doc["measured"]["workloads"]) == ["gemm_large_square"]  # the 2nd was interrupted
    assert doc["measured"]["workloads"]["gemm_large_square"]["status"] == "ok"
    assert "finished_at" not in doc["provenance"]
    report = verify(partial)
    assert not report.ok
    assert report.problems == ["capture is marked incomplete (the run was interrupted)"]
    return partial


def test_interrupted_run_via_main_writes_incomplete_capture(fake_cli, samples, tmp_path, capsys, monkeypatch):
    plugin = FakePlugin(samples, interrupt_at=2)
    fake_cli(plugin)
    out = tmp_path / "cap.json"
    with pytest.raises(SystemExit) as exit_info:
        tensorforge.cli.main.main(
            [
                "run",
                "-t",
                "h200",
                "--backend",
                "fake",
                "--cooldown",
                "0",
                "--rest",
                "0",
                "-o",
                str(out),
                "-w",
                "gemm_large_square",
                "-w",
                "gemm_tiny",
                "--no-telemetry",
            ]
        )
    assert exit_info.value.code == 130
    partial = _interrupted_checks(out)
    err = capsys.readouterr().err
    assert f"interrupted (SIGINT): wrote incomplete capture {partial}" in err
    assert err.rstrip().endswith("interrupted (SIGINT)")
    assert [s.closed for s in plugin.sessions] == [True]
    # and `verify` says so, with exit 1
    result = CliRunner().invoke(make_cli(PluginHost), ["verify", str(partial)])
    assert result.exit_code == 1
    assert "FAIL  capture is marked incomplete (the run was interrupted)" in result.stdout
    assert result.stdout.splitlines()[-1] == f"{partial}: NOT VERIFIED"


def test_interrupted_run_via_cli_runner(fake_cli, samples, tmp_path):
    cli = fake_cli(FakePlugin(samples, interrupt_at=2))
    out = tmp_path / "cap.json"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "-t",
            "h200",
            "--backend",
            "fake",
            "--cooldown",
            "0",
            "--rest",
            "0",
            "-o",
            str(out),
            "-w",
            "gemm_large_square",
            "-w",
            "gemm_tiny",
        ],
    )
    assert result.exit_code != 0  # click's standalone mode turns the interrupt into an abort
    assert "interrupted (SIGINT): wrote incomplete capture" in result.stderr
    _interrupted_checks(out)


def test_all_zero_samples_complete_the_run_and_verify(core, tmp_path):
    params = resolve_spec(core, "gemm_tiny")[0].params
    doc, _ = execute(core, FakePlugin({params: (0.0,) * 12}), specs=("gemm_tiny",))
    row = doc["comparison"]["workloads"]["gemm_tiny"]
    assert doc["complete"] is True
    assert row["ape_analytical"] is None and "APE is undefined" in row["ape_note"]
    assert doc["measured"]["workloads"]["gemm_tiny"]["throughput_flops_per_s"] is None
    write_capture(tmp_path / "zero.json", from_document(doc))
    assert verify(tmp_path / "zero.json").ok


def test_progress_steps_cover_every_probe_and_workload(core, samples):
    """A Progress (the bar on a terminal) is told how many steps lie ahead and when each is done:
    one per calibration probe and one per workload, failed ones included."""

    class Steps(list):
        def __init__(self):
            super().__init__()
            self.planned: list[tuple[int, str]] = []
            self.done = 0

        def __call__(self, line):
            self.append(line)

        def plan(self, steps, what):
            self.planned.append((steps, what))

        def advance(self):
            self.done += 1

    steps = Steps()
    plugin = FakePlugin(samples)
    opts = RunOptions(target="h200", specs=SPECS, backend="fake", cooldown_s=0.0, rest_s=0.0)
    Run(core, make_ops(plugin), opts, progress=steps).execute()
    assert steps.planned == [(1, "calibration probes"), (len(SPECS), "workloads")]
    assert steps.done == 1 + len(SPECS)
    assert any(line.endswith(f"measuring {SPECS[-1]} ({len(SPECS)}/{len(SPECS)})") for line in steps)
