"""The capture as a typed, versioned document: the published JSON Schema and field reference
are what the classes generate (drift fails here), every golden capture reads as the current
classes and round-trips, and the documents TensorForge writes validate against the schema."""

import json
from pathlib import Path

import cattrs
import pytest
from golden import GOLDEN, H200_RUN, ids

from tensorforge.files.serialize import canonical_json
from tensorforge_measure.capture import schema
from tensorforge_measure.capture.convert import from_document, to_document
from tensorforge_measure.capture.document import read_capture, read_document, verify, write_capture
from tensorforge_measure.capture.model import SCHEMA_VERSION
from tensorforge_measure.capture.versions import upgrade, version_of

# a test requirement (requirements-test.txt); the lent GPU machines lack it, and `pytest -m gpu
# tests` there must collect this module (it has no GPU test) rather than stop the whole run
jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def validator():
    published = json.loads((ROOT / "docs" / "capture.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(published)
    return jsonschema.Draft202012Validator(published)


def test_published_schema_and_field_reference_match_the_classes():
    stale = schema.drifted()
    assert stale == [], (
        f"{[str(p) for p in stale]} drifted from the capture classes: "
        "run python -m tensorforge_measure.capture.schema --write"
    )


def test_every_field_is_described_with_a_unit_where_it_has_one():
    generated = schema.json_schema()
    for name, definition in generated["$defs"].items():
        if name == "Number":
            continue
        assert definition["description"], name
        for field, prop in definition["properties"].items():
            assert prop["description"].strip(), f"{name}.{field}"
    # a time is in seconds, and says so
    measurement = generated["$defs"]["Measurement"]["properties"]
    assert measurement["samples_s"]["description"].endswith("[s]")


def test_a_field_without_a_description_is_refused(monkeypatch):
    monkeypatch.delitem(schema.CORE_FIELDS, "SampleStats.p50")
    with pytest.raises(KeyError, match="SampleStats.p50 has no description"):
        schema.json_schema()


def test_the_check_command_reports_drift(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "capture.schema.json"
    stale.write_text("{}\n", encoding="utf-8")
    monkeypatch.setattr(schema, "SCHEMA_FILE", stale)
    assert schema.main(["--check"]) == 1
    assert "does not match the capture classes" in capsys.readouterr().out


def _covers(new, old, path="capture"):
    """Every key of `old` is in `new` with the same value (new may add fields read as defaults)."""
    if isinstance(old, dict):
        assert isinstance(new, dict), path
        for key, value in old.items():
            assert key in new, f"{path}.{key} was lost"
            _covers(new[key], value, f"{path}.{key}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), path
        for i, (a, b) in enumerate(zip(new, old)):
            _covers(a, b, f"{path}[{i}]")
    else:
        assert new == old, path


@pytest.mark.parametrize("path", GOLDEN, ids=ids(GOLDEN))
def test_every_golden_capture_reads_round_trips_and_validates(path, validator):
    raw = read_document(path)
    assert version_of(raw)[1] <= SCHEMA_VERSION
    current = upgrade(raw)
    capture = from_document(current)
    again = to_document(capture)
    assert from_document(again) == capture  # the typed object round-trips exactly
    _covers(again, current)  # and loses nothing the file said
    assert list(validator.iter_errors(again)) == []
    # that each one verifies (seal and every recomputed figure) is test_ops_capture.py's
    # test_every_golden_capture_verifies, over the same captures: not run twice


def test_captures_written_now_validate_and_read_back(tmp_path, validator):
    source = H200_RUN
    path = tmp_path / "now.json"
    sealed = write_capture(path, read_capture(source))
    written = json.loads(path.read_text(encoding="utf-8"))
    assert (written["schema"], written["schema_version"]) == ("tensorforge.capture", SCHEMA_VERSION)
    assert list(validator.iter_errors(written)) == []
    assert read_capture(path) == sealed and verify(path).ok
    assert path.read_text(encoding="utf-8") == canonical_json(written)


def test_a_capture_without_a_device_validates(tmp_path, validator, cli):
    from click.testing import CliRunner

    out = tmp_path / "nodevice.json"
    result = CliRunner().invoke(
        cli, ["run", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "--backend", "torch-cuda", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text(encoding="utf-8"))
    assert list(validator.iter_errors(written)) == []


@pytest.mark.parametrize(
    "edit, where, culprit",
    [
        (
            lambda d: d["measured"]["workloads"]["gemm_tiny"].update(energy_j=1.0),
            "energy_j",
            "extra fields found (energy_j) @ $.measured.workloads['gemm_tiny']",
        ),
        (
            lambda d: d["diagnostic"]["windows"]["gemm_tiny"].pop("data"),
            "data",
            "@ $.diagnostic.windows['gemm_tiny']",
        ),
        (lambda d: d["calibrated"].update(label="MEASURED"), "CALIBRATED", "@ $.calibrated"),
        (
            lambda d: d["measured"]["workloads"]["gemm_tiny"].update(status="maybe"),
            "maybe",
            "@ $.measured.workloads['gemm_tiny']",
        ),
    ],
)
def test_the_schema_is_as_strict_as_the_reader(tmp_path, validator, edit, where, culprit):
    doc = to_document(read_capture(H200_RUN))
    edit(doc)
    assert list(validator.iter_errors(doc)), where  # the schema refuses it
    with pytest.raises(cattrs.BaseValidationError) as info:
        from_document(doc)  # and so do the classes, naming the edited place
    (problem,) = cattrs.transform_error(info.value)
    assert problem.endswith(culprit), problem
