"""`predict --ceilings`: a calibration document or a capture's CALIBRATED section is accepted,
ceilings from a device the target does not describe (or from no named device) are refused in
one line unless --force-ceilings, and a forced prediction says whose ceilings it used."""

import json

import pytest
from click.testing import CliRunner
from golden import H200_RUN, HOST_CPU_RUN

from tensorforge.errors import TensorForgeError
from tensorforge.hardware.ceilings_file import load_ceilings

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

H200_CAPTURE = H200_RUN
CPU_CAPTURE = HOST_CPU_RUN


def run(cli, *args):
    return CliRunner().invoke(cli, ["predict", *args])


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr
    return lines[0]


def test_a_capture_gives_its_calibrated_section(host):
    captured = json.loads(H200_CAPTURE.read_text())["calibrated"]
    ceilings = load_ceilings(H200_CAPTURE, host.target("h200"))
    assert ceilings.device == "NVIDIA H200"
    assert dict(ceilings.compute) == captured["ceilings"]["compute"]
    assert ceilings.dram_bytes_per_s == captured["ceilings"]["dram_bytes_per_s"]
    assert captured["fingerprint"] in ceilings.source and captured["measured_at"] in ceilings.source


def test_a_capture_in_the_current_layout_gives_its_calibrated_section(host, tmp_path):
    """A capture written now (schema 'tensorforge.capture', schema_version beside it) is read
    like a version-1 one: the CALIBRATED section has the same layout in both."""
    from tensorforge_measure.capture.document import read_capture, write_capture

    path = tmp_path / "current.json"
    write_capture(path, read_capture(H200_CAPTURE))
    assert json.loads(path.read_text())["schema"] == "tensorforge.capture"
    current, original = (load_ceilings(p, host.target("h200")) for p in (path, H200_CAPTURE))
    assert (current.compute, current.dram_bytes_per_s, current.device) == (
        original.compute,
        original.dram_bytes_per_s,
        original.device,
    )
    assert current.source == original.source.replace(str(H200_CAPTURE), str(path))


def test_a_calibration_document_is_accepted(host, tmp_path):
    # what `tensorforge calibrate --json > cal.json` writes: the CALIBRATED section of a capture
    # is the same document plus run bookkeeping
    section = json.loads(H200_CAPTURE.read_text())["calibrated"]
    document = {k: v for k, v in section.items() if k not in ("available", "reason", "reused", "stored_at")}
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(document))
    from_document = load_ceilings(path, host.target("h200"))
    from_capture = load_ceilings(H200_CAPTURE, host.target("h200"))
    assert (from_document.compute, from_document.dram_bytes_per_s, from_document.device) == (
        from_capture.compute,
        from_capture.dram_bytes_per_s,
        from_capture.device,
    )


def test_a_calibrated_prediction_from_a_capture(cli):
    result = run(cli, "-t", "h200", "-w", "gemm_large_square", "--ceilings", str(H200_CAPTURE), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["bound"] == "calibrated"
    assert data["ceilings"]["compute"]["bf16"] == pytest.approx(799.2e12, rel=1e-3)
    assert data["ceilings"]["device"] == "NVIDIA H200"
    assert not any("not target" in note for note in data["notes"])


def test_a_host_cpu_capture_is_refused_for_the_h200(cli):
    line = one_error_line(run(cli, "-t", "h200", "--ceilings", str(CPU_CAPTURE)))
    assert line == (
        f"error: ceilings file {CPU_CAPTURE} was measured on 'AMD EPYC', not on target "
        "'h200' (which matches: NVIDIA H200); pass --force-ceilings to use it anyway"
    )


def test_an_h200_capture_is_refused_for_another_gpu(cli):
    line = one_error_line(run(cli, "-t", "rtx3050-laptop", "--ceilings", str(H200_CAPTURE)))
    assert "was measured on 'NVIDIA H200', not on target 'rtx3050-laptop'" in line


def test_forcing_foreign_ceilings_says_so_in_the_prediction(cli):
    args = ("-t", "h200", "-w", "gemm_tiny", "--ceilings", str(CPU_CAPTURE), "--force-ceilings")
    result = run(cli, *args)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("PREDICTED  calibrated lower bound on h200")
    # the default text folds the notes into one line (--detail: each in full); it still names the device
    (folded,) = [line for line in result.stdout.splitlines() if line.startswith("note: ")]
    assert "ceilings measured on 'AMD EPYC', which is not target 'h200'" in folded
    detail = run(cli, *args, "--detail")
    assert detail.exit_code == 0, detail.output
    assert (
        "\nnote: ceilings measured on 'AMD EPYC', which is not target 'h200': this bound does not "
        "describe h200\n" in detail.stdout
    )


def test_ceilings_naming_no_device_need_the_override(cli, tmp_path):
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"compute": {"bf16": 5e14}, "dram_bytes_per_s": 3e12}))
    line = one_error_line(run(cli, "-t", "h200", "--ceilings", str(bare)))
    assert line == (
        f"error: ceilings file {bare} does not name the device it was measured on, so it "
        "cannot be checked against target 'h200'; pass --force-ceilings to use it anyway"
    )
    result = run(cli, "-t", "h200", "-w", "gemm_tiny", "--ceilings", str(bare), "--force-ceilings", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ceilings"]["compute"]["bf16"] == 5e14


def test_a_capture_without_calibration_is_refused(cli, tmp_path):
    doc = json.loads(H200_CAPTURE.read_text())
    doc["calibrated"] = {"label": "CALIBRATED", "available": False, "reason": "no device"}
    path = tmp_path / "nocal.json"
    path.write_text(json.dumps(doc))
    line = one_error_line(run(cli, "-t", "h200", "--ceilings", str(path)))
    assert line == f"error: ceilings file {path}: capture has no calibrated ceilings (no device)"


CALIBRATED = (
    '{{"label": "CALIBRATED", "device": "NVIDIA H200", "ceilings": {{"compute": {compute}, '
    '"dram_bytes_per_s": {dram}}}}}'
)


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"schema": "tensorforge.capture/1"}', "capture has no CALIBRATED section"),
        ('{"hello": 1}', "neither a calibration document"),
        ("[1, 2]", "expected a JSON object"),
        (CALIBRATED.format(compute='{"bf16": -1}', dram="1e12"), "compute[bf16] must be a positive number, got -1"),
        (
            CALIBRATED.format(compute='{"bf16": 1e14}', dram="null"),
            "'dram_bytes_per_s' must be a positive number, got None",
        ),
        (CALIBRATED.format(compute='{"fp64": 1e14}', dram="1e12"), "compute has unknown math mode 'fp64'"),
    ],
)
def test_malformed_documents_are_one_line(cli, tmp_path, content, message):
    path = tmp_path / "c.json"
    path.write_text(content)
    line = one_error_line(run(cli, "-t", "h200", "--ceilings", str(path)))
    assert line.startswith(f"error: ceilings file {path}") and message in line


def test_force_without_ceilings_is_an_error(cli):
    line = one_error_line(run(cli, "-t", "h200", "--force-ceilings"))
    assert line == "error: --force-ceilings applies to --ceilings, which was not given"


def test_a_target_file_matches_by_its_device_names(host, tmp_path):
    # a TOML target file that names the device accepts that device's ceilings
    from tensorforge.hardware.target_dump import dump_target

    path = tmp_path / "mine.toml"
    path.write_text(dump_target(host.target("h200")).replace('name = "h200"', 'name = "mine"'))
    ceilings = load_ceilings(H200_CAPTURE, host.target(str(path)))
    assert ceilings.device == "NVIDIA H200"
    with pytest.raises(TensorForgeError, match="not on target 'mine'"):
        load_ceilings(CPU_CAPTURE, host.target(str(path)))
