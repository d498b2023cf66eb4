"""Capture signatures (tensorforge_ops/capture/signing.py): the key pair made on first use with
owner-only permissions, a signature that binds the digest, and origin decided by trusted keys."""

import base64
import os
import stat

import pytest

from tensorforge.errors import TensorForgeError
from tensorforge_ops.capture import signing
from tensorforge_ops.capture.signing import (INVALID, TRUSTED, UNSIGNED, UNTRUSTED, fingerprint_of,
                                             load_or_create_key, origin, parse_key, sign_digest,
                                             trusted_fingerprints)

pytestmark = pytest.mark.timeout(30)

DIGEST = "ab" * 32


def test_the_key_pair_is_made_on_first_use_owner_only(tmp_path):
    home = tmp_path / "home"
    signature = sign_digest(DIGEST, home)
    folder = home / "keys"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(folder / signing.PRIVATE_NAME).st_mode) == 0o600
    public = (folder / signing.PUBLIC_NAME).read_text()
    assert public.startswith("ed25519 ") and parse_key(public, "pub") == signature.fingerprint
    again = sign_digest(DIGEST, home)                       # the same key next time
    assert again.fingerprint == signature.fingerprint and again.value == signature.value   # Ed25519 is deterministic


def test_the_capture_carries_the_public_key_and_its_fingerprint(tmp_path):
    signature = sign_digest(DIGEST, tmp_path)
    raw = base64.b64decode(signature.public_key)
    assert len(raw) == 32 and signature.fingerprint == fingerprint_of(raw)
    assert signature.fingerprint.startswith("SHA256:") and "=" not in signature.fingerprint
    assert signature.algorithm == "ed25519" and len(base64.b64decode(signature.value)) == 64


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o777])
def test_a_private_key_others_can_reach_is_refused(tmp_path, mode):
    sign_digest(DIGEST, tmp_path)
    key = tmp_path / "keys" / signing.PRIVATE_NAME
    key.chmod(mode)
    with pytest.raises(TensorForgeError, match=rf"accessible to others \(mode {mode:04o}\).*chmod 600"):
        sign_digest(DIGEST, tmp_path)


def test_a_damaged_private_key_is_one_line(tmp_path):
    sign_digest(DIGEST, tmp_path)
    key = tmp_path / "keys" / signing.PRIVATE_NAME
    key.write_text("not a key")
    key.chmod(0o600)
    with pytest.raises(TensorForgeError, match="signing key .* is unreadable"):
        load_or_create_key(tmp_path)


def test_origin_trusted_untrusted_unsigned_invalid(tmp_path):
    mine = sign_digest(DIGEST, tmp_path / "me")
    theirs = sign_digest(DIGEST, tmp_path / "forger")
    trusted = [mine.fingerprint]
    assert origin(mine, DIGEST, trusted).status == TRUSTED
    assert origin(theirs, DIGEST, trusted).status == UNTRUSTED
    assert origin(None, DIGEST, trusted).status == UNSIGNED
    # re-sealed: the digest changed, the signature is over the old one
    resealed = origin(mine, "cd" * 32, trusted)
    assert resealed.status == INVALID and "changed after signing, or re-sealed" in resealed.detail
    assert not resealed.trusted


def test_every_digit_of_the_digest_is_signed(tmp_path):
    mine = sign_digest(DIGEST, tmp_path)
    for index in (0, 15, 16, 63):                 # not only a prefix
        changed = DIGEST[:index] + ("0" if DIGEST[index] != "0" else "1") + DIGEST[index + 1:]
        assert origin(mine, changed, [mine.fingerprint]).status == INVALID


@pytest.mark.parametrize("edit, why", [
    (lambda s, o: {"algorithm": "rsa"}, "algorithm 'rsa' is not ed25519"),
    (lambda s, o: {"over": "something else"}, "signs something else"),
    (lambda s, o: {"public_key": "!!!"}, "not valid base64"),
    (lambda s, o: {"public_key": base64.b64encode(b"x" * 31).decode()}, "not 32 bytes"),
    (lambda s, o: {"fingerprint": o.fingerprint}, "fingerprint does not belong to the recorded public key"),
    (lambda s, o: {"public_key": o.public_key, "fingerprint": o.fingerprint}, "does not match the digest"),
    (lambda s, o: {"value": base64.b64encode(b"\0" * 64).decode()}, "does not match the digest"),
], ids=["algorithm", "over", "key not base64", "short key", "borrowed fingerprint", "swapped key",
        "zero signature"])
def test_an_edited_signature_record_is_invalid(tmp_path, edit, why):
    import attrs
    mine = sign_digest(DIGEST, tmp_path / "me")
    other = sign_digest(DIGEST, tmp_path / "other")
    edited = attrs.evolve(mine, **edit(mine, other))
    got = origin(edited, DIGEST, [mine.fingerprint, other.fingerprint])
    assert got.status == INVALID and why in got.detail


def test_trusted_keys_come_from_the_own_key_the_home_file_and_the_options(tmp_path):
    home = tmp_path / "home"
    mine = sign_digest(DIGEST, home)
    a = sign_digest(DIGEST, tmp_path / "a")
    b = sign_digest(DIGEST, tmp_path / "b")
    c = sign_digest(DIGEST, tmp_path / "c")
    (home / "trusted-keys").write_text(f"# CI runner\n{a.fingerprint}\n\n")
    pub_file = tmp_path / "c" / "keys" / signing.PUBLIC_NAME
    got = trusted_fingerprints(home, given=[b.public_key, str(pub_file)])
    assert got == [mine.fingerprint, a.fingerprint, b.fingerprint, c.fingerprint]


def test_no_key_yet_trusts_nothing_implicitly(tmp_path):
    assert trusted_fingerprints(tmp_path / "fresh") == []
    assert not (tmp_path / "fresh" / "keys").exists()      # checking never creates a key


@pytest.mark.parametrize("text", ["SHA256:short", "ed25519 AAAA", "not a key", ""])
def test_a_malformed_trusted_key_is_one_line(tmp_path, text):
    with pytest.raises(TensorForgeError, match="--trusted-key"):
        trusted_fingerprints(tmp_path, given=[text])
