"""Capture sinks: `run --export`, TENSORFORGE_EXPORT, `tensorforge export`, and failures that
never cost the capture."""

import json
import shutil
import types

from golden import H200_RUN
import pytest
from click.testing import CliRunner

import tensorforge_measure.host as hosts
from tensorforge_measure.api import CaptureSink, ExportResult
from tensorforge_measure.capture.convert import to_document
from tensorforge_measure.capture.document import read_capture, verify
from tensorforge_measure.hookspecs import hookimpl
from tensorforge_measure.host import OpsHost

REAL_CAPTURE = H200_RUN


class RecordingSink(CaptureSink):
    def __init__(self, name, behaviour="ok"):
        self.name, self.behaviour, self.calls = name, behaviour, []

    def export(self, capture, capture_path, report_html, options):
        self.calls.append((capture, capture_path, report_html, dict(options)))
        if self.behaviour == "raise":
            raise ConnectionError("tracking server unreachable\nsecond line")
        if self.behaviour == "fail":
            return ExportResult(self.name, False, error="store rejected the run")
        return ExportResult(self.name, True, location=f"test://{capture_path}")


@pytest.fixture
def sinks(monkeypatch):
    made = {"good": RecordingSink("good"), "bad": RecordingSink("bad", "fail"), "boom": RecordingSink("boom", "raise")}
    plugin = types.ModuleType("sinks_plugin")

    @hookimpl
    def tensorforge_measure_register_sinks(register):
        for sink in made.values():
            register(sink)

    plugin.tensorforge_measure_register_sinks = tensorforge_measure_register_sinks
    host = OpsHost(extra_plugins=(("test-sinks", plugin),))
    monkeypatch.setattr(hosts, "ops_host", lambda core: host)
    monkeypatch.delenv("TENSORFORGE_EXPORT", raising=False)
    return made


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORFORGE_HOME", str(tmp_path / "home"))


def run(cli, tmp_path, *extra):
    out = tmp_path / "cap.json"
    result = CliRunner().invoke(cli, ["run", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "-o", str(out), *extra])
    return result, out


def test_run_exports_to_a_sink_with_options(cli, tmp_path, sinks):
    result, out = run(cli, tmp_path, "--export", "good", "--export-option", "experiment=perf")
    assert result.exit_code == 0, result.output
    assert f"exported to good: test://{out}" in result.stderr
    ((capture, path, html, options),) = sinks["good"].calls
    assert path == str(out) and options == {"experiment": "perf"}
    assert capture == read_capture(out)  # the typed, sealed capture that was written
    assert html.startswith("<!DOCTYPE html>") and capture.digest.value in html


@pytest.mark.parametrize(
    "name, message", [("bad", "store rejected the run"), ("boom", "ConnectionError: tracking server unreachable")]
)
def test_a_failing_sink_is_one_line_and_the_capture_stays(cli, tmp_path, sinks, name, message):
    result, out = run(cli, tmp_path, "--export", name)
    assert result.exit_code == 0
    lines = [l for l in result.stderr.splitlines() if "export to" in l]
    assert lines == [f"warning: export to {name} failed: {message} (the capture {out} is written)"]
    assert verify(out).ok


def test_environment_selects_sinks(cli, tmp_path, sinks, monkeypatch):
    monkeypatch.setenv("TENSORFORGE_EXPORT", "good, bad")
    result, _ = run(cli, tmp_path)
    assert result.exit_code == 0
    assert len(sinks["good"].calls) == 1 and len(sinks["bad"].calls) == 1


def test_unknown_sink_fails_before_running(cli, tmp_path, sinks):
    result, out = run(cli, tmp_path, "--export", "godo")
    assert result.exit_code == 2
    assert "unknown export sink 'godo' (did you mean 'good'?)" in result.stderr
    assert not out.exists()


def test_bad_export_option(cli, tmp_path, sinks):
    result, out = run(cli, tmp_path, "--export", "good", "--export-option", "noequals")
    assert result.exit_code == 2 and "KEY=VALUE" in result.stderr and not out.exists()


def test_export_command(cli, tmp_path, sinks):
    capture = tmp_path / "h200.json"
    shutil.copy(REAL_CAPTURE, capture)
    ok = CliRunner().invoke(cli, ["export", str(capture), "--to", "good", "--option", "run_name=x"])
    assert ok.exit_code == 0 and f"exported to good: test://{capture}" in ok.stderr
    assert to_document(sinks["good"].calls[0][0].digest) == json.loads(capture.read_text())["digest"]
    failed = CliRunner().invoke(cli, ["export", str(capture), "--to", "good", "--to", "bad"])
    assert failed.exit_code == 1 and "export to bad failed" in failed.stderr
    text = capture.read_text()
    capture.write_text(text.replace('"complete": true', '"complete": false'))
    tampered = CliRunner().invoke(cli, ["export", str(capture), "--to", "good"])
    assert tampered.exit_code == 2 and "does not verify" in tampered.stderr
