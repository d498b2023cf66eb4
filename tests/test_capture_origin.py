"""Captures with a verifiable source, end to end: `run` signs with the user's key; an edited and
re-sealed copy verifies no more; one re-signed by another key is untrusted; `verify
--trusted-key` says so, and `gate --require-trusted` / `rightsize --require-trusted` refuse it.
The captures come from real `tensorforge run` invocations (no CUDA here: PREDICTED only, which
is all signing needs), the forgeries from editing their JSON."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_in_process import run_cli

from tensorforge.files.serialize import canonical_json
from tensorforge_measure.capture.document import content_digest, seal_document
from tensorforge_measure.capture.signing import PUBLIC_NAME, sign_digest

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("clean_plugin_env")]

TENSORFORGE = str(Path(sys.executable).parent / "tensorforge")


def tf(*args, home, cwd):
    """`tensorforge ARGS` in this process (tests/cli_in_process.py: the console script's entry
    point, without a second of imports per command)."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("TENSORFORGE_")}
    env["TENSORFORGE_HOME"] = str(home)
    return run_cli(*args, env=env, cwd=cwd)


def console(*args, home, cwd, stdin):
    """The installed console script, its standard input a pipe."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
    env["TENSORFORGE_HOME"] = str(home)
    return subprocess.run(
        [TENSORFORGE, *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd, timeout=240, input=stdin
    )


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    """A capture signed by 'me', the forger's home, and my public key's fingerprint."""
    folder = tmp_path_factory.mktemp("origin")
    me, forger = folder / "me", folder / "forger"
    proc = tf(
        "run",
        "-t",
        "h200",
        "-w",
        "gemm_tiny",
        "--no-telemetry",
        "--cooldown",
        "0",
        "--rest",
        "0",
        "-o",
        "cap.json",
        home=me,
        cwd=folder,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((folder / "cap.json").read_text())
    fingerprint = doc["digest"]["signature"]["fingerprint"]
    return folder, me, forger, fingerprint


def forge(folder: Path, name: str, edit, resign_home=None) -> Path:
    """An edited copy of cap.json, re-sealed (new digest) and optionally re-signed by another key."""
    doc = json.loads((folder / "cap.json").read_text())
    edit(doc)
    signature = doc["digest"].get("signature")
    doc = seal_document({k: v for k, v in doc.items() if k != "digest"})
    if resign_home is not None:
        new = sign_digest(doc["digest"]["value"], resign_home)
        doc["digest"]["signature"] = {
            "algorithm": new.algorithm,
            "public_key": new.public_key,
            "fingerprint": new.fingerprint,
            "over": new.over,
            "value": new.value,
        }
    elif signature is not None:
        doc["digest"]["signature"] = signature  # the old signature, over the old digest
    path = folder / name
    path.write_text(canonical_json(doc), encoding="utf-8")
    return path


def relabel(doc):
    doc["target"] = "h200"
    doc["provenance"]["command"] = ["tensorforge", "run", "--forged"]


def test_run_signs_with_a_key_made_on_first_use(signed):
    folder, me, _, fingerprint = signed
    doc = json.loads((folder / "cap.json").read_text())
    sig = doc["digest"]["signature"]
    assert sig["algorithm"] == "ed25519" and sig["fingerprint"].startswith("SHA256:")
    assert (me / "keys" / PUBLIC_NAME).read_text().split()[1] == sig["public_key"]
    assert doc["digest"]["value"] == content_digest(doc)  # the signature is outside the hash
    assert oct((me / "keys" / "capture-signing.key").stat().st_mode & 0o777) == "0o600"


def test_verify_reports_integrity_and_origin_separately(signed):
    folder, me, forger, fingerprint = signed
    mine = tf("verify", "cap.json", home=me, cwd=folder)
    assert mine.returncode == 0, mine.stdout
    assert "integrity: holds" in mine.stdout
    assert f"origin: signed by trusted key {fingerprint}" in mine.stdout  # my own key
    theirs = tf("verify", "cap.json", home=forger, cwd=folder)  # someone without my key
    assert theirs.returncode == 0
    assert f"origin: signed by key {fingerprint}, which is not among the trusted keys" in theirs.stdout
    assert "(not required: pass --require-trusted)" in theirs.stdout
    required = tf("verify", "cap.json", "--require-trusted", home=forger, cwd=folder)
    assert required.returncode == 1
    assert required.stdout.splitlines()[-1] == (
        "cap.json: NOT VERIFIED: integrity holds, but it is not signed by a trusted key"
    )
    given = tf("verify", "cap.json", "--trusted-key", fingerprint, home=forger, cwd=folder)
    assert given.returncode == 0 and given.stdout.splitlines()[-1] == "cap.json: VERIFIED"
    by_file = tf("verify", "cap.json", "--trusted-key", me / "keys" / PUBLIC_NAME, home=forger, cwd=folder)
    assert by_file.returncode == 0


def test_a_forged_and_resealed_capture_fails_verify_with_a_trusted_key(signed):
    folder, me, _, fingerprint = signed
    forged = forge(folder, "resealed.json", relabel)
    proc = tf("verify", forged, "--trusted-key", fingerprint, home=me, cwd=folder)
    assert proc.returncode == 1
    assert (
        "FAIL  signature INVALID: signature does not match the digest (the capture was changed after "
        "signing, or re-sealed)"
    ) in proc.stdout
    assert proc.stdout.splitlines()[-1].endswith("NOT VERIFIED")


def test_a_capture_re_signed_by_another_key_is_untrusted(signed):
    folder, me, forger, fingerprint = signed
    forged = forge(folder, "resigned.json", relabel, resign_home=forger)
    plain = tf("verify", forged, home=me, cwd=folder)
    assert plain.returncode == 0 and "which is not among the trusted keys" in plain.stdout  # honest label
    proc = tf("verify", forged, "--trusted-key", fingerprint, home=me, cwd=folder)
    assert proc.returncode == 1 and "not signed by a trusted key" in proc.stdout


@pytest.mark.parametrize("forgery", ["resealed", "resigned", "unsigned"])
def test_gate_and_rightsize_refuse_untrusted_evidence_when_trust_is_required(signed, forgery):
    folder, me, forger, fingerprint = signed
    if forgery == "resealed":
        forged = forge(folder, "g-resealed.json", relabel)
        why = "does not verify: signature INVALID"
    elif forgery == "resigned":
        forged = forge(folder, "g-resigned.json", relabel, resign_home=forger)
        why = "is not signed by a trusted key (signed by key SHA256:"
    else:
        forged = forge(folder, "g-unsigned.json", lambda d: d["digest"].pop("signature"))
        why = "is not signed by a trusted key (unsigned: nothing shows who produced it)"
    gate = tf("gate", "cap.json", forged, "--require-trusted", home=me, cwd=folder)
    assert gate.returncode == 2, gate.stdout + gate.stderr
    assert gate.stderr.strip().splitlines()[-1].startswith(f"error: candidate capture {forged} ")
    assert why in gate.stderr
    right = tf(
        "rightsize",
        "-w",
        "gemm_tiny",
        "--latency-ms",
        "1",
        "--capture",
        forged,
        "--trusted-key",
        fingerprint,
        home=me,
        cwd=folder,
    )
    assert right.returncode == 2 and why in right.stderr


def test_without_required_trust_the_gate_labels_each_origin(signed):
    folder, me, forger, fingerprint = signed
    unsigned = forge(folder, "l-unsigned.json", lambda d: d["digest"].pop("signature"))
    gate = tf("gate", "cap.json", unsigned, home=me, cwd=folder)
    assert gate.returncode == 3  # nothing measured here: NO VERDICT, with the origins on record
    assert f"baseline origin: signed by trusted key {fingerprint}" in gate.stdout
    assert "candidate origin: unsigned: nothing shows who produced it" in gate.stdout
    data = json.loads(tf("gate", "cap.json", unsigned, "--json", home=me, cwd=folder).stdout)
    assert data["baseline"]["origin"] == "trusted" and data["candidate"]["origin"] == "unsigned"


def test_verify_reads_a_capture_through_a_pipe(signed):
    folder, me, _, _ = signed
    proc = console("verify", "-", home=me, cwd=folder, stdin=(folder / "cap.json").read_text())
    assert proc.returncode == 0, proc.stdout
    assert "file is byte-for-byte canonical" in proc.stdout and proc.stdout.splitlines()[-1] == "-: VERIFIED"


def test_a_trusted_keys_file_in_the_home_is_honoured(signed, tmp_path):
    folder, me, forger, fingerprint = signed
    other = tmp_path / "ci-home"
    other.mkdir()
    (other / "trusted-keys").write_text(f"# the GPU runner\n{fingerprint}\n")
    proc = tf("verify", "cap.json", "--require-trusted", home=other, cwd=folder)
    assert proc.returncode == 0 and f"signed by trusted key {fingerprint}" in proc.stdout
    bad = tmp_path / "bad-home"
    bad.mkdir()
    (bad / "trusted-keys").write_text("not a key\n")
    proc = tf("verify", "cap.json", home=bad, cwd=folder)
    assert proc.returncode == 2 and "trusted-keys file" in proc.stderr and "line 1" in proc.stderr
