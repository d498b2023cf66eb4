"""Whether a capture's signature establishes who sealed it: the checking half of signing
(capture/signing.py makes keys and signatures). Pure functions of the signature record, the
digest and the fingerprints a reader trusts, so `verify`'s origin verdict is tested at every edge
and covered by the mutation run.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable

import attrs

from tensorforge.api import TensorForgeError
from tensorforge_measure.capture.sections.provenance import Signature

ALGORITHM = "ed25519"
SIGNED_PREFIX = b"tensorforge.capture.digest/1\n"
OVER = "the digest value, prefixed with 'tensorforge.capture.digest/1\\n'"

# Origin verdicts, as `verify`, `gate` and `rightsize` print them.
TRUSTED, UNTRUSTED, UNSIGNED, INVALID = "trusted", "untrusted", "unsigned", "invalid"


@attrs.frozen
class Origin:
    """What a capture's signature establishes, for a given set of trusted keys."""

    status: str  # TRUSTED | UNTRUSTED | UNSIGNED | INVALID
    fingerprint: str | None
    detail: str  # one line for people

    @property
    def trusted(self) -> bool:
        return self.status == TRUSTED


def fingerprint_of(raw_public_key: bytes) -> str:
    digest = hashlib.sha256(raw_public_key).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def _raw_key(line: str) -> bytes | None:
    parts = line.split()
    candidate = parts[1] if len(parts) >= 2 and parts[0] == ALGORITHM else (parts[0] if parts else "")
    try:
        raw = base64.b64decode(candidate, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 32 else None


def signature_problem(signature: Signature, digest_value: str) -> str | None:
    """Why `signature` does not sign `digest_value`, or None when it does."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import ed25519

    if signature.algorithm != ALGORITHM:
        return f"signature algorithm {signature.algorithm!r} is not {ALGORITHM}"
    if signature.over != OVER:
        return "signature record says it signs something else (edited?)"
    try:
        raw = base64.b64decode(signature.public_key, validate=True)
        value = base64.b64decode(signature.value, validate=True)
    except (binascii.Error, ValueError):
        return "signature or public key is not valid base64"
    if len(raw) != 32:
        return "public key is not 32 bytes (not an Ed25519 key)"
    if fingerprint_of(raw) != signature.fingerprint:
        return "recorded fingerprint does not belong to the recorded public key"
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(raw).verify(value, SIGNED_PREFIX + digest_value.encode("ascii"))
    except InvalidSignature:
        return "signature does not match the digest (the capture was changed after signing, or re-sealed)"
    except ValueError as exc:
        return f"signature is malformed ({exc})"
    return None


def origin(signature: Signature | None, digest_value: str, trusted: Iterable[str]) -> Origin:
    """The capture's origin given the trusted fingerprints."""
    if signature is None:
        return Origin(UNSIGNED, None, "unsigned: nothing shows who produced it")
    problem = signature_problem(signature, digest_value)
    if problem is not None:
        return Origin(INVALID, signature.fingerprint, f"signature INVALID: {problem}")
    if signature.fingerprint in set(trusted):
        return Origin(TRUSTED, signature.fingerprint, f"signed by trusted key {signature.fingerprint}")
    return Origin(
        UNTRUSTED, signature.fingerprint, f"signed by key {signature.fingerprint}, which is not among the trusted keys"
    )


def parse_key(text: str, where: str) -> str:
    """A fingerprint from 'SHA256:...', a bare base64 public key, or 'ed25519 <base64> [comment]'."""
    text = text.strip()
    if text.startswith("SHA256:"):
        body = text[len("SHA256:") :]
        try:
            if len(base64.b64decode(body + "=" * (-len(body) % 4), validate=True)) == 32:
                return text
        except (binascii.Error, ValueError):
            pass
        raise TensorForgeError(f"{where}: {text[:60]!r} is not a SHA256 fingerprint")
    raw = _raw_key(text)
    if raw is None:
        raise TensorForgeError(
            f"{where}: expected a SHA256:... fingerprint or an ed25519 public key, got {text[:60]!r}"
        )
    return fingerprint_of(raw)
