"""`tensorforge run` and `tensorforge calibrate` on a machine without CUDA (this one): the run
still succeeds with every section present, PREDICTED filled and the rest unavailable with the
reason; nothing is guessed, nothing is overwritten without --force."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tensorforge_measure.capture.document import read_capture, verify
from tensorforge_measure.capture.model import SCHEMA, SCHEMA_VERSION
from tensorforge_measure.report.summary import summary_text

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

torch = pytest.importorskip("torch")
if torch.cuda.is_available():  # pragma: no cover - these tests describe the no-device path
    pytest.skip("a CUDA device is present", allow_module_level=True)

TARGET = "rtx3050-laptop"


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    path = tmp_path / "home"
    monkeypatch.setenv("TENSORFORGE_HOME", str(path))
    return path


def invoke(cli, *args):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def out(tmp_path) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder / "cap.json"


@pytest.fixture
def captured(cli, out):
    result = invoke(cli, "run", "--target", TARGET, "-o", str(out))
    assert result.exit_code == 0, result.output
    return result, json.loads(out.read_text(encoding="utf-8"))


def test_run_without_device_exits_0_and_writes_capture_and_summary(captured, out, home):
    result, doc = captured
    summary = out.parent / "cap.summary.txt"
    assert sorted(p.name for p in out.parent.iterdir()) == ["cap.json", "cap.summary.txt"]
    assert summary.read_text(encoding="utf-8") == result.stdout == summary_text(read_capture(out))
    assert f"wrote {out} and {summary}" in result.stderr
    assert "Traceback" not in result.output
    assert verify(out).ok, verify(out).problems
    # nothing calibrated, nothing stored: only the signing key, made on first use
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == [
        "keys",
        "keys/capture-signing.key",
        "keys/capture-signing.pub",
    ]


def test_capture_has_predicted_for_all_default_workloads(captured, host):
    _, doc = captured
    assert (doc["schema"], doc["schema_version"]) == (SCHEMA, SCHEMA_VERSION) and doc["complete"] is True
    assert doc["target"] == TARGET and doc["operating_point"] == "80w"
    names = [w["name"] for w in doc["predicted"]["analytical"]["workloads"]]
    assert sorted(names) == sorted(host.default_suite())
    assert len(names) == 10
    for w in doc["predicted"]["analytical"]["workloads"]:
        assert w["latency_s"] > 0 and w["bottleneck"] in ("compute", "memory")
    assert doc["predicted"]["label"] == "PREDICTED"
    assert doc["predicted"]["calibrated"] is None and doc["predicted"]["calibrated_target"] is None
    assert doc["predicted"]["calibrated_note"].startswith("no calibration: no CUDA device")


def test_predicted_section_equals_predict_json(captured, cli):
    _, doc = captured
    result = invoke(cli, "predict", "-t", TARGET, "--json")
    assert result.exit_code == 0
    printed = json.loads(result.stdout)
    # predict --json adds the energy it predicts from the target's figures beside the prediction;
    # a capture keeps its own energy section (measured windows and their estimate)
    printed.pop("energy", None)
    assert doc["predicted"]["analytical"] == printed


def test_other_sections_unavailable_with_cuda_reason(captured):
    _, doc = captured
    for key, label in (("measured", "MEASURED"), ("calibrated", "CALIBRATED"), ("diagnostic", "DIAGNOSTIC")):
        section = doc[key]
        assert section["label"] == label
        assert section["available"] is False
        assert "CUDA" in section["reason"]
        assert section["reason"].startswith("no CUDA device: torch.cuda.is_available() is False")
    assert "workloads" not in doc["measured"]
    assert "does not prove a bottleneck" in doc["diagnostic"]["caveat"]
    # POLICY records the bound checks; other verdicts are made when captures are read
    assert doc["policy"]["label"] == "POLICY" and set(doc["policy"]) == {"label", "bound_checks", "note"}
    assert all(c["verdict"].startswith("no verdict") for c in doc["policy"]["bound_checks"].values())


def test_comparison_rows_have_no_ape_and_no_verdict(captured):
    _, doc = captured
    comp = doc["comparison"]
    assert comp["same_device"] is False and comp["device_note"] == "no measuring device"
    assert comp["bound_violations"] == [] and comp["calibrated_target"] is None
    predicted = {w["name"]: w for w in doc["predicted"]["analytical"]["workloads"]}
    assert set(comp["workloads"]) == set(predicted)
    for name, row in comp["workloads"].items():
        assert row["ape_analytical"] is None and row["ape_calibrated"] is None
        assert row["measured_p50_s"] is None and row["predicted_calibrated_s"] is None
        assert row["predicted_analytical_s"] == predicted[name]["latency_s"]
        assert row["bound_check"]["verdict"].startswith("no verdict")
        assert doc["policy"]["bound_checks"][name]["verdict"].startswith("no verdict")


def test_summary_says_why(captured):
    result, _ = captured
    text = result.stdout
    assert text.startswith(f"TensorForge capture  target {TARGET} @ 80w\n")
    assert "MEASURED    unavailable: no CUDA device" in text
    assert "bound checks: no verdict (nothing measured)" in text
    assert "BOUND VIOLATION" not in text and "(INCOMPLETE)" not in text


def test_second_run_refuses_then_force_overwrites(captured, cli, out):
    before = out.read_bytes()
    inode = os.stat(out).st_ino
    result = invoke(cli, "run", "--target", TARGET, "-o", str(out))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f"error: capture {out} already exists; choose another path or pass --force"]
    assert out.read_bytes() == before

    result = invoke(cli, "run", "--target", TARGET, "-o", str(out), "--force")
    assert result.exit_code == 0, result.output
    assert os.stat(out).st_ino != inode  # a new file was moved into place
    assert verify(out).ok
    assert sorted(p.name for p in out.parent.iterdir()) == ["cap.json", "cap.summary.txt"]


def test_run_into_missing_folder_is_one_line(cli, tmp_path):
    path = tmp_path / "nowhere" / "cap.json"
    result = invoke(cli, "run", "--target", TARGET, "-o", str(path))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: cannot write capture {path}: folder {path.parent} does not exist"]


def test_run_unknown_target_is_one_line(cli, out):
    result = invoke(cli, "run", "--target", "rtx3050", "-o", str(out))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: unknown target 'rtx3050'")
    assert not out.exists()


def test_run_via_console_script(tensorforge_exe, out, home):
    env = {**os.environ, "TENSORFORGE_HOME": str(home)}
    env.pop("TENSORFORGE_PLUGINS", None)
    env.pop("TENSORFORGE_DISABLE", None)
    proc = subprocess.run(
        [str(tensorforge_exe), "run", "--target", TARGET, "-o", str(out), "-w", "gemm_tiny"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert [w["name"] for w in doc["predicted"]["analytical"]["workloads"]] == ["gemm_tiny"]
    assert doc["provenance"]["command"][:2] == ["tensorforge", "run"]
    assert verify(out).ok


def test_calibrate_without_device_exits_3_with_one_line(cli, home):
    result = invoke(cli, "calibrate")
    assert result.exit_code == 3
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "error: cannot calibrate with torch-cuda: no CUDA device: torch.cuda.is_available() is False"
    )
    assert not home.exists()


def test_calibrate_without_device_via_console_script(tensorforge_exe, home):
    env = {**os.environ, "TENSORFORGE_HOME": str(home)}
    proc = subprocess.run([str(tensorforge_exe), "calibrate"], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 3
    assert proc.stdout == "" and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("error: cannot calibrate with torch-cuda: no CUDA device")


def test_calibrate_unknown_backend_is_one_line(cli):
    result = invoke(cli, "calibrate", "--backend", "rocm")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: unknown backend 'rocm'")
