"""Capture signatures (tensorforge_measure/capture/signing.py): the key pair made on first use with
owner-only permissions, a signature that binds the digest, and origin decided by trusted keys."""

import base64
import os
import stat

import pytest

from tensorforge.errors import TensorForgeError
from tensorforge_measure.capture import signing
from tensorforge_measure.capture.signing import (
    INVALID,
    TRUSTED,
    UNSIGNED,
    UNTRUSTED,
    fingerprint_of,
    load_or_create_key,
    origin,
    parse_key,
    sign_digest,
)

pytestmark = pytest.mark.timeout(120)

DIGEST = "ab" * 32


def test_the_key_pair_is_made_on_first_use_owner_only(tmp_path):
    home = tmp_path / "home"
    signature = sign_digest(DIGEST, home)
    folder = home / "keys"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(folder / signing.PRIVATE_NAME).st_mode) == 0o600
    public = (folder / signing.PUBLIC_NAME).read_text()
    assert public.startswith("ed25519 ") and parse_key(public, "pub") == signature.fingerprint
    again = sign_digest(DIGEST, home)  # the same key next time
    assert again.fingerprint == signature.fingerprint and again.value == signature.value  # Ed25519 is deterministic


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
    for index in (0, 15, 16, 63):  # not only a prefix
        changed = DIGEST[:index] + ("0" if DIGEST[index] != "0" else "1") + DIGEST[index + 1 :]
        assert origin(mine, changed, [mine.fingerprint]).status == INVALID


@pytest.mark.parametrize(
    "edit, why",
    [
        (lambda s, o: {"algorithm": "rsa"}, "algorithm 'rsa' is not ed25519"),
        (lambda s, o: {"over": "something else"}, "signs something else"),
        (lambda s, o: {"public_key": "!!!"}, "not valid base64"),
        (lambda s, o: {"public_key": base64.b64encode(b"x" * 31).decode()}, "not 32 bytes"),
        (lambda s, o: {"fingerprint": o.fingerprint}, "fingerprint does not belong to the recorded public key"),
        (lambda s, o: {"public_key": o.public_key, "fingerprint": o.fingerprint}, "does not match the digest"),
        (lambda s, o: {"value": base64.b64encode(b"\0" * 64).decode()}, "does not match the digest"),
    ],
    ids=["algorithm", "over", "key not base64", "short key", "borrowed fingerprint", "swapped key", "zero signature"],
)
def test_an_edited_signature_record_is_invalid(tmp_path, edit, why):
    import attrs

    mine = sign_digest(DIGEST, tmp_path / "me")
    other = sign_digest(DIGEST, tmp_path / "other")
    edited = attrs.evolve(mine, **edit(mine, other))
    got = origin(edited, DIGEST, [mine.fingerprint, other.fingerprint])
    assert got.status == INVALID and why in got.detail
    assert got.detail == "signature INVALID: " + MESSAGES[why] and got.fingerprint == edited.fingerprint


MESSAGES = {
    "algorithm 'rsa' is not ed25519": "signature algorithm 'rsa' is not ed25519",
    "signs something else": "signature record says it signs something else (edited?)",
    "not valid base64": "signature or public key is not valid base64",
    "not 32 bytes": "public key is not 32 bytes (not an Ed25519 key)",
    "fingerprint does not belong to the recorded public key": "recorded fingerprint does not belong to the recorded "
    "public key",
    "does not match the digest": "signature does not match the digest (the capture was changed after signing, or "
    "re-sealed)",
}


def test_origin_details_word_for_word(tmp_path):
    mine = sign_digest(DIGEST, tmp_path)
    assert origin(mine, DIGEST, [mine.fingerprint]) == signing.Origin(
        TRUSTED, mine.fingerprint, f"signed by trusted key {mine.fingerprint}"
    )
    assert origin(mine, DIGEST, []) == signing.Origin(
        UNTRUSTED, mine.fingerprint, f"signed by key {mine.fingerprint}, which is not among the trusted keys"
    )
    assert origin(None, DIGEST, [mine.fingerprint]) == signing.Origin(
        UNSIGNED, None, "unsigned: nothing shows who produced it"
    )
    assert origin(mine, DIGEST, [mine.fingerprint]).trusted and not origin(mine, DIGEST, []).trusted


def test_base64_with_junk_is_refused_not_skipped(tmp_path):
    import attrs

    mine = sign_digest(DIGEST, tmp_path)
    junk_value = attrs.evolve(mine, value=mine.value[:10] + "!" + mine.value[10:])
    assert origin(junk_value, DIGEST, [mine.fingerprint]).detail == (
        "signature INVALID: signature or public key is not valid base64"
    )
    with pytest.raises(TensorForgeError, match="expected a SHA256:... fingerprint or an ed25519 public key"):
        parse_key(mine.public_key[:10] + "!" + mine.public_key[10:], "--trusted-key")


def test_a_public_key_line_without_a_comment(tmp_path):
    mine = sign_digest(DIGEST, tmp_path)
    assert parse_key(f"ed25519 {mine.public_key}", "x") == mine.fingerprint
    assert parse_key(f"ed25519 {mine.public_key} laptop key", "x") == mine.fingerprint
    assert parse_key(mine.public_key, "x") == mine.fingerprint
    assert parse_key(mine.fingerprint, "x") == mine.fingerprint
