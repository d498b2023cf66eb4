"""Fault catalogue: the keys that decide who produced a capture. "Your own key" is derived from
the private key, so a swapped `capture-signing.pub` changes nothing (it once made a forgery
trusted and the user's own captures untrusted); a key folder, a private key or a trusted-keys
file that others can write is refused in one line, exit 2, by every command that reads it —
`run` before it measures, `verify` and `gate` before they judge."""

import json
import os
import sys

import pytest
from fault_catalogue import Case, check, ids
from golden import H200_RUN

from tensorforge.files.serialize import canonical_json
from tensorforge_measure.capture.document import seal_document
from tensorforge_measure.capture.signing import PUBLIC_NAME, public_line, sign_digest

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("clean_plugin_env")]

HOME = {"TENSORFORGE_HOME": "{tmp}/h"}
KEY = "h/keys/capture-signing.key"


def _signed_copy(home, path):
    """The small example capture, re-sealed and signed with the key in `home` (made there)."""
    doc = json.loads(H200_RUN.read_text(encoding="utf-8"))
    doc = seal_document({k: v for k, v in doc.items() if k != "digest"})
    sig = sign_digest(doc["digest"]["value"], home)
    doc["digest"]["signature"] = {
        "algorithm": sig.algorithm,
        "public_key": sig.public_key,
        "fingerprint": sig.fingerprint,
        "over": sig.over,
        "value": sig.value,
    }
    path.write_text(canonical_json(doc), encoding="utf-8")
    return sig


def _keys(mode=None, folder_mode=None, swap_pub=False):
    """The user's key pair in {tmp}/h/keys (made on first use), then the permissions changed or
    the .pub replaced by a forger's public key; written as the case's KEY file."""

    def make(path):
        home = path.parent.parent
        path.parent.rmdir()  # the harness made the folder; the key code makes its own, 0700
        sign_digest("ab" * 32, home)
        if swap_pub:
            forger = _signed_copy(home.parent / "forger", home.parent / "forged.json")
            import base64

            raw = base64.b64decode(forger.public_key)
            (path.parent / PUBLIC_NAME).write_text(public_line(raw, "swapped"), encoding="ascii")
        if mode is not None:
            path.chmod(mode)
        if folder_mode is not None:
            path.parent.chmod(folder_mode)

    return make


def _mine(path):
    _signed_copy(path.parent / "h", path)


def _trusted_keys(mode):
    def make(path):
        path.write_text("# nobody\n", encoding="utf-8")
        path.chmod(mode)

    return make


CASES = [
    Case(
        "a swapped .pub file does not make the forger's capture trusted",
        ("verify", "forged.json", "--require-trusted"),
        files={KEY: _keys(swap_pub=True)},
        env=HOME,
        code=1,
        out=r"signed by key SHA256:\S+, which is not among the trusted keys.*NOT VERIFIED",
    ),
    Case(
        "a swapped .pub file does not make the user's own capture untrusted",
        ("verify", "mine.json", "--require-trusted"),
        files={KEY: _keys(swap_pub=True), "mine.json": _mine},
        env=HOME,
        code=0,
        out=r"origin: signed by trusted key SHA256:.*: VERIFIED",
    ),
    Case(
        "verify with a key folder everyone can write is refused",
        ("verify", "mine.json"),
        files={KEY: _keys(folder_mode=0o777), "mine.json": H200_RUN.read_text(encoding="utf-8")},
        env=HOME,
        error=r"key folder \S+/h/keys is writable by others \(mode 0777\)",
    ),
    Case(
        "gate with a group-writable key folder is refused",
        ("gate", "mine.json", "mine.json"),
        files={KEY: _keys(folder_mode=0o770), "mine.json": H200_RUN.read_text(encoding="utf-8")},
        env=HOME,
        error=r"key folder \S+ is writable by others \(mode 0770\).*chmod go-w",
    ),
    Case(
        "run with a key folder everyone can write is refused before it measures",
        ("run", "-t", "h200", "-w", "gemm_tiny", "-o", "c.json"),
        files={KEY: _keys(folder_mode=0o777)},
        env=HOME,
        error=r"key folder \S+ is writable by others \(mode 0777\)",
    ),
    Case(
        "verify with a group-writable private key is refused",
        ("verify", "mine.json"),
        files={KEY: _keys(mode=0o620), "mine.json": H200_RUN.read_text(encoding="utf-8")},
        env=HOME,
        error=r"signing key \S+ is accessible to others \(mode 0620\)",
    ),
    Case(
        "a trusted-keys file in the home everyone can write is refused",
        ("verify", "mine.json"),
        files={"h/trusted-keys": _trusted_keys(0o666), "mine.json": H200_RUN.read_text(encoding="utf-8")},
        env=HOME,
        error=r"trusted-keys file \S+/h/trusted-keys is writable by others \(mode 0666\)",
    ),
    Case(
        "a group-writable trusted-keys file in the home is refused by gate",
        ("gate", "mine.json", "mine.json"),
        files={"h/trusted-keys": _trusted_keys(0o620), "mine.json": H200_RUN.read_text(encoding="utf-8")},
        env=HOME,
        error=r"trusted-keys file \S+ is writable by others \(mode 0620\)",
    ),
    Case(
        "a --trusted-keys file everyone can write is refused",
        ("verify", "mine.json", "--trusted-keys", "tk"),
        files={"tk": _trusted_keys(0o646), "mine.json": H200_RUN.read_text(encoding="utf-8")},
        env=HOME,
        error=r"trusted-keys file tk is writable by others \(mode 0646\)",
    ),
    Case(
        "a --trusted-key .pub file everyone can write is refused",
        ("verify", "mine.json", "--trusted-key", "k.pub"),
        files={
            "k.pub": lambda p: (p.write_text(public_line(b"\1" * 32), encoding="ascii"), p.chmod(0o666)),
            "mine.json": H200_RUN.read_text(encoding="utf-8"),
        },
        env=HOME,
        error=r"trusted key file k\.pub is writable by others \(mode 0666\)",
    ),
    Case(
        "a read-only trusted-keys file of a colleague is honoured",
        ("verify", "mine.json", "--trusted-keys", "tk"),
        files={"tk": _trusted_keys(0o644), "mine.json": H200_RUN.read_text(encoding="utf-8")},
        env=HOME,
        code=1,  # the example capture is unsigned: not trusted, but nothing refused
        out=r"unsigned",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_keys(case, tmp_path):
    check(case, tmp_path)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or sys.platform != "linux", reason="needs chown")
def test_a_key_folder_owned_by_another_user_is_refused(tmp_path):
    from tensorforge.errors import TensorForgeError
    from tensorforge_measure.capture.signing import trusted_fingerprints

    sign_digest("ab" * 32, tmp_path)
    os.chown(tmp_path / "keys", 4321, 4321)
    with pytest.raises(TensorForgeError, match=r"key folder \S+ belongs to another user \(uid 4321\)"):
        trusted_fingerprints(tmp_path)
