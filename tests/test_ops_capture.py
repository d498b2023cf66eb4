"""`tensorforge verify` on the real H200 capture, and on tampered copies of it: every kind of
change is caught by the check that should catch it, the original is never touched, and
captures are written atomically."""

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from golden import COMPLETE, GOLDEN, H200_RUN, INCOMPLETE, RTX_ON_H200, ids, on_disk

from tensorforge.cli.main import make_cli
from tensorforge.errors import TensorForgeError
from tensorforge.files.serialize import canonical_json
from tensorforge.host.plugin_host import PluginHost
from tensorforge_measure.capture.convert import to_document
from tensorforge_measure.capture.document import content_digest, read_capture, seal_document, verify, write_capture
from tensorforge_measure.capture.labels import LABELS
from tensorforge_measure.capture.model import SCHEMA, SCHEMA_VERSION
from tensorforge_measure.capture.sections.measured import Measured

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

ROOT = Path(__file__).resolve().parent.parent
REAL = H200_RUN
REAL_REPLACE = os.replace


@pytest.fixture(autouse=True)
def _original_untouched(monkeypatch, tmp_path):
    monkeypatch.setenv("TENSORFORGE_HOME", str(tmp_path / "home"))
    before = hashlib.sha256(REAL.read_bytes()).hexdigest()
    yield
    assert hashlib.sha256(REAL.read_bytes()).hexdigest() == before, "the real capture was modified"


@pytest.fixture
def real_doc():
    return json.loads(REAL.read_text(encoding="utf-8"))


@pytest.fixture
def recorded(real_doc) -> str:
    """The first 16 hex digits of the real capture's recorded digest."""
    value = real_doc["digest"]["value"]
    assert len(value) == 64 and set(value) <= set("0123456789abcdef")
    return value[:16]


@pytest.fixture(scope="module")
def cli():
    host = PluginHost()
    return make_cli(lambda: host)


@pytest.fixture
def copy(tmp_path) -> Path:
    path = tmp_path / "copy.json"
    shutil.copyfile(REAL, path)
    return path


def verify_cli(cli, path, *extra):
    return CliRunner().invoke(cli, ["verify", str(path), *extra])


def reseal(path: Path, doc) -> None:
    path.write_text(canonical_json(seal_document(doc)), encoding="utf-8")


def assert_not_verified(result, path, problem: str):
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[-1] == f"{path}: NOT VERIFIED"
    fails = [line for line in lines if line.startswith("FAIL  ")]
    assert any(problem in line for line in fails), fails
    return fails


# -- the real capture --------------------------------------------------------------------------


def test_real_capture_verifies_in_process(cli, real_doc, recorded):
    result = verify_cli(cli, REAL)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    ok_rows = [n for n, m in real_doc["measured"]["workloads"].items() if m["status"] == "ok"]
    assert len(ok_rows) == 10
    assert lines == [
        f"ok    digest sha256 {recorded}... matches the content",
        "ok    file is byte-for-byte canonical",
        "ok    schema version 1 read as version 2 by the written upgrade rule (docs/capture.md)",
        "ok    five labelled sections present",
        "ok    every statistic and throughput recomputed from the raw samples for 10 workloads",
        "ok    every comparison figure (p50, fastest sample, APE, bound check, evidence quality) and POLICY's "
        "bound checks recomputed for 10 workloads",
        "integrity: holds",
        "origin: unsigned: nothing shows who produced it (not required: pass --require-trusted)",
        f"{REAL}: VERIFIED",
    ]


def test_real_capture_verifies_json_report(cli, real_doc):
    result = verify_cli(cli, REAL, "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["problems"] == []
    assert report["digest"] == real_doc["digest"]["value"] == content_digest(real_doc)
    assert real_doc["digest"] == {
        "algorithm": "sha256",
        "over": "canonical JSON without 'digest'",
        "value": hashlib.sha256(
            canonical_json({k: v for k, v in real_doc.items() if k != "digest"}).encode()
        ).hexdigest(),
    }


def test_real_capture_verifies_via_console_script(tensorforge_exe, tmp_path):
    env = {**os.environ, "TENSORFORGE_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [str(tensorforge_exe), "verify", str(REAL.relative_to(ROOT))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"{REAL.relative_to(ROOT)}: VERIFIED"
    assert "Traceback" not in proc.stderr


def test_real_capture_content_is_what_the_labels_say():
    cap = read_capture(REAL)  # a version-1 document, read as the current typed capture
    assert (cap.schema, cap.schema_version) == (SCHEMA, SCHEMA_VERSION) == ("tensorforge.capture", 2)
    assert cap.complete is True and cap.target == "h200"
    for label in LABELS:
        assert getattr(cap, label.section).label == label.name
    assert isinstance(cap.measured, Measured) and cap.measured.device.name == "NVIDIA H200"
    assert cap.comparison.same_device is True
    row = cap.comparison.workloads["gemm_large_square"]
    assert row.measured_p50_s == cap.measured.workloads["gemm_large_square"].stats.p50
    assert row.ape_calibrated == pytest.approx(
        abs(row.predicted_calibrated_s - row.measured_p50_s) / row.measured_p50_s, rel=1e-12
    )


def test_the_golden_set_is_every_capture_kept_in_the_tree():
    """tests/golden.py names every capture under examples/captures/ and tests/fixtures/captures/,
    each once: a capture added there is added to the set the properties run over."""
    assert sorted(GOLDEN) == on_disk() and len(set(GOLDEN)) == len(GOLDEN)
    assert REAL in COMPLETE and RTX_ON_H200 in COMPLETE and INCOMPLETE not in COMPLETE


@pytest.mark.parametrize("path", COMPLETE, ids=ids(COMPLETE))
def test_every_golden_capture_verifies(path):
    report = verify(path)
    assert report.ok, report.problems


def test_the_incomplete_golden_capture_is_refused_for_that_alone():
    """A run cut short keeps whole sections for what ran; verify refuses it as interrupted, and
    for nothing else (its digest and every recomputed figure hold)."""
    assert read_capture(INCOMPLETE).complete is False
    report = verify(INCOMPLETE)
    assert not report.ok
    assert report.problems == ["capture is marked incomplete (the run was interrupted)"]


# -- tampered copies ---------------------------------------------------------------------------


def _samples_span(text: str, workload: str):
    """(start, end) of the first number in `workload`'s samples_s array in the measured section."""
    measured = text.index('"measured": {')
    entry = text.index(f'"{workload}": {{', text.index('"workloads": {', measured))
    start = text.index('"samples_s": [', entry) + len('"samples_s": [')
    while text[start] in " \n":
        start += 1
    end = start
    while text[end] not in ",\n":
        end += 1
    return start, end


def test_changed_sample_digit_fails_digest(cli, copy, real_doc, recorded):
    text = copy.read_text(encoding="utf-8")
    start, end = _samples_span(text, "gemm_large_square")
    number = text[start:end]
    original = real_doc["measured"]["workloads"]["gemm_large_square"]["samples_s"][0]
    assert float(number) == original
    # the leading significant digit: 0.00138... -> 0.00238..., one byte, a different value
    i = start + next(j for j, ch in enumerate(number) if ch in "123456789")
    tampered = text[:i] + ("8" if text[i] == "9" else str(int(text[i]) + 1)) + text[i + 1 :]
    assert sum(a != b for a, b in zip(text, tampered)) == 1 and len(tampered) == len(text)
    copy.write_text(tampered, encoding="utf-8")
    changed = json.loads(tampered)["measured"]["workloads"]["gemm_large_square"]["samples_s"][0]
    assert changed != original
    assert_not_verified(verify_cli(cli, copy), copy, f"digest mismatch: recorded {recorded}...")


def test_changed_whitespace_byte_fails_canonical_check(cli, copy, recorded):
    data = copy.read_bytes()
    i = data.index(b"\n  ") + 1
    copy.write_bytes(data[:i] + b"\t" + data[i + 1 :])
    assert json.loads(copy.read_text()) == json.loads(REAL.read_text())  # same content
    result = verify_cli(cli, copy)
    fails = assert_not_verified(result, copy, "file bytes are not the canonical serialisation")
    assert len(fails) == 1
    assert f"ok    digest sha256 {recorded}... matches the content" in result.stdout


def test_truncated_file_is_a_one_line_error(cli, copy):
    data = copy.read_bytes()
    copy.write_bytes(data[: len(data) // 2])
    result = verify_cli(cli, copy)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: capture {copy}: not valid JSON: ")
    assert "Traceback" not in result.output
    with pytest.raises(TensorForgeError, match="not valid JSON"):
        verify(copy)


def test_truncated_file_via_console_script(tensorforge_exe, copy):
    data = copy.read_bytes()
    copy.write_bytes(data[:1000])
    proc = subprocess.run([str(tensorforge_exe), "verify", str(copy)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: capture ")


def test_empty_and_non_object_files_are_errors(cli, tmp_path):
    for name, content in (("empty.json", ""), ("list.json", "[1, 2]\n")):
        path = tmp_path / name
        path.write_text(content)
        result = verify_cli(cli, path)
        assert result.exit_code == 2, name
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: capture ")
    result = verify_cli(cli, tmp_path / "missing.json")
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: cannot read capture {tmp_path / 'missing.json'}: No such file or directory"


def test_changed_digest_value_fails(cli, copy):
    text = copy.read_text(encoding="utf-8")
    doc = json.loads(text)
    value = doc["digest"]["value"]
    forged = ("0" if value[0] != "0" else "1") + value[1:]
    assert text.count(value) == 1
    copy.write_text(text.replace(value, forged), encoding="utf-8")
    fails = assert_not_verified(verify_cli(cli, copy), copy, f"digest mismatch: recorded {forged[:16]}...")
    assert len(fails) == 1


@pytest.mark.parametrize("digest", ["b83f266901804e8a", None, 42, ["x"]])
def test_malformed_digest_is_not_verified_not_a_crash(cli, copy, digest):
    doc = json.loads(copy.read_text())
    doc["digest"] = digest
    copy.write_text(canonical_json(doc), encoding="utf-8")
    assert_not_verified(verify_cli(cli, copy), copy, "digest mismatch: recorded")


def test_edited_digest_algorithm_is_caught(cli, copy):
    # the digest record lies outside what is hashed; verify still demands exactly what seal writes
    doc = json.loads(copy.read_text())
    doc["digest"]["algorithm"] = "md5"
    copy.write_text(canonical_json(doc), encoding="utf-8")
    assert_not_verified(verify_cli(cli, copy), copy, "digest record is not the one TensorForge writes")


@pytest.mark.parametrize(
    "schema, version, problem",
    [
        (
            "tensorforge.capture",
            3,
            "capture has schema version 3; this TensorForge reads versions up to 2: upgrade TensorForge to read it",
        ),
        (
            "tensorforge.capture/2",
            None,
            "capture is not a TensorForge capture (schema 'tensorforge.capture/2', schema_version None)",
        ),
        ("something.else", 2, "capture is not a TensorForge capture (schema 'something.else', schema_version 2)"),
    ],
)
def test_schema_changed_and_resealed_fails_on_schema(cli, copy, schema, version, problem):
    doc = json.loads(copy.read_text())
    doc["schema"] = schema
    if version is not None:
        doc["schema_version"] = version
    reseal(copy, doc)
    result = verify_cli(cli, copy)
    fails = assert_not_verified(result, copy, problem)
    assert len(fails) == 1
    assert "ok    file is byte-for-byte canonical" in result.stdout
    assert "digest sha256" in result.stdout


def test_p50_changed_and_resealed_fails_on_consistency(cli, copy):
    doc = json.loads(copy.read_text())
    stats = doc["measured"]["workloads"]["gemm_large_square"]["stats"]
    true_p50 = stats["p50"]
    stats["p50"] = true_p50 * 0.9
    reseal(copy, doc)
    fails = assert_not_verified(
        verify_cli(cli, copy),
        copy,
        f"gemm_large_square: recorded p50 {true_p50 * 0.9} does not match its raw samples ({true_p50})",
    )
    assert len(fails) == 1


def test_sample_changed_and_resealed_fails_on_consistency(cli, copy):
    doc = json.loads(copy.read_text())
    samples = doc["measured"]["workloads"]["gemm_tiny"]["samples_s"]
    doc["measured"]["workloads"]["gemm_tiny"]["samples_s"] = [s * 2 for s in samples]
    reseal(copy, doc)
    fails = assert_not_verified(verify_cli(cli, copy), copy, "gemm_tiny: recorded p50")
    # every statistic, the throughputs and the comparison's p50 and APE no longer follow
    stats = {f.split(":")[1].split()[1] for f in fails if "does not match its raw samples" in f}
    assert stats == {"p10", "p50", "p90", "mean", "stdev", "min", "max"}
    assert any("recorded throughput (FLOP/s)" in f for f in fails)
    assert any("recorded comparison measured_p50_s does not follow" in f for f in fails)


def test_ape_changed_and_resealed_fails(cli, copy):
    doc = json.loads(copy.read_text())
    doc["comparison"]["workloads"]["conv_resnet50_3x3"]["ape_analytical"] += 0.01
    reseal(copy, doc)
    fails = assert_not_verified(
        verify_cli(cli, copy),
        copy,
        "conv_resnet50_3x3: recorded comparison ape_analytical does not follow from PREDICTED, MEASURED and DIAGNOSTIC",
    )
    assert len(fails) == 1


def test_ape_without_p50_is_caught(cli, copy):
    doc = json.loads(copy.read_text())
    doc["comparison"]["workloads"]["gemm_tiny"]["measured_p50_s"] = None
    reseal(copy, doc)
    assert_not_verified(verify_cli(cli, copy), copy, "gemm_tiny: recorded comparison measured_p50_s does not follow")


def test_incomplete_resealed_fails(cli, copy):
    doc = json.loads(copy.read_text())
    doc["complete"] = False
    reseal(copy, doc)
    fails = assert_not_verified(verify_cli(cli, copy), copy, "capture is marked incomplete (the run was interrupted)")
    assert len(fails) == 1


def test_missing_section_and_stray_measurement_resealed(cli, copy):
    doc = json.loads(copy.read_text())
    doc["diagnostic"]["label"] = "MEASURED"
    reseal(copy, doc)
    assert_not_verified(
        verify_cli(cli, copy),
        copy,
        "capture does not match capture schema version 2: "
        "label must be 'DIAGNOSTIC', got 'MEASURED' @ capture.diagnostic",
    )
    doc = json.loads(REAL.read_text())
    doc["measured"]["workloads"]["ghost"] = doc["measured"]["workloads"]["gemm_tiny"]
    reseal(copy, doc)
    assert_not_verified(verify_cli(cli, copy), copy, "measured workloads without a prediction: ghost")


def test_sealed_but_malformed_structure_is_not_verified(cli, copy):
    doc = json.loads(copy.read_text())
    del doc["measured"]["workloads"]["gemm_tiny"]["samples_s"]
    reseal(copy, doc)
    result = verify_cli(cli, copy)
    assert "Traceback" not in result.output
    assert_not_verified(
        result,
        copy,
        "capture does not match capture schema version 2: required field missing: "
        "samples_s @ capture.measured.workloads['gemm_tiny']",
    )


def test_a_field_the_schema_does_not_know_is_not_verified(cli, copy):
    doc = json.loads(copy.read_text())
    doc["measured"]["workloads"]["gemm_tiny"]["energy_j"] = 1.0
    reseal(copy, doc)
    assert_not_verified(
        verify_cli(cli, copy), copy, "extra fields found (energy_j) @ capture.measured.workloads['gemm_tiny']"
    )


def test_resealed_untouched_copy_is_byte_identical(copy):
    doc = json.loads(copy.read_text())
    reseal(copy, doc)
    assert copy.read_bytes() == REAL.read_bytes()


# -- atomic writes -----------------------------------------------------------------------------


def _doc():
    return read_capture(REAL)


def test_write_capture_is_sealed_canonical_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "out.json"
    sealed = write_capture(path, _doc())
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    written = json.loads(path.read_text(encoding="utf-8"))
    assert path.read_text(encoding="utf-8") == canonical_json(to_document(sealed))
    assert written["schema_version"] == 2 and sealed.digest.value == content_digest(written)
    assert verify(path).ok
    assert read_capture(path) == sealed  # what was written reads back as the same capture


def test_write_capture_replaces_only_on_success(tmp_path, monkeypatch):
    path = tmp_path / "out.json"
    path.write_text("old capture\n", encoding="utf-8")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("tensorforge.files.documents.os.replace", refuse)
    with pytest.raises(TensorForgeError, match=f"cannot write {path}: No space left on device"):
        write_capture(path, _doc())
    assert path.read_text(encoding="utf-8") == "old capture\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr("tensorforge.files.documents.os.replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_capture(path, _doc())
    assert path.read_text(encoding="utf-8") == "old capture\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]

    monkeypatch.setattr("tensorforge.files.documents.os.replace", REAL_REPLACE)
    write_capture(path, _doc())
    assert verify(path).ok


def test_write_capture_into_missing_folder_is_an_error(tmp_path):
    with pytest.raises(TensorForgeError, match="folder .* does not exist"):
        write_capture(tmp_path / "nope" / "out.json", _doc())
