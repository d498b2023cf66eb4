"""The capture on disk: sealed with a digest, written atomically, read back as a typed
`Capture` (upgraded from an older layout by capture/versions.py), and verified.

The digest is SHA-256 over the canonical JSON of the document without its digest. The file
on disk *is* that canonical form (plus the digest), so `verify` can demand both: the content
hashes to the recorded digest, and the bytes are exactly the canonical serialisation — any
changed byte fails one check or the other. Both checks run on the document as written, before
any upgrade; the typed object is what every reader then uses.
"""

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from tensorforge.api import TensorForgeError, canonical_json, parse_json, read_text, write_atomic
from tensorforge_measure.capture.convert import first_error, from_document, to_document
from tensorforge_measure.capture.integrity import DIGEST_OVER, content_digest, digest_record, integrity  # noqa: F401 (re-exported)
from tensorforge_measure.capture.model import SCHEMA_VERSION, Capture
from tensorforge_measure.capture.sections.measured import Measured
from tensorforge_measure.capture.sections.provenance import Digest
from tensorforge_measure.capture.versions import upgrade, version_of

if TYPE_CHECKING:
    from tensorforge_measure.capture.signing import Origin


def seal_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON document (any version) with its digest record replaced by the right one."""
    body = {k: v for k, v in doc.items() if k != "digest"}
    return {**body, "digest": digest_record(body)}


def seal(capture: Capture, sign_with: Path | None = None) -> Capture:
    """The capture with the digest of its content and, given TensorForge's home, the signature
    over that digest with the key kept there (made on first use: capture/signing.py)."""
    unsealed = attrs.evolve(capture, digest=None)
    record = digest_record(to_document(unsealed))
    signature = None
    if sign_with is not None:
        from tensorforge_measure.capture.signing import sign_digest

        signature = sign_digest(record["value"], sign_with)
    return attrs.evolve(unsealed, digest=Digest(**record, signature=signature))


def write_capture(path: str | os.PathLike[str], capture: Capture, sign_with: Path | None = None) -> Capture:
    sealed = seal(capture, sign_with)
    write_atomic(path, canonical_json(to_document(sealed)))
    return sealed


def read_text_once(path: str | os.PathLike[str]) -> str:
    """The capture's text, read once: '-' is standard input (so `verify -` works through a pipe;
    a second read of a pipe finds nothing, which once made a valid capture look edited)."""
    if str(path) == "-":
        from tensorforge.api import read_stream_text

        return read_stream_text(sys.stdin.buffer, "capture on standard input")
    return read_text(path, "capture")


def _parse(text: str, path: str | os.PathLike[str]) -> dict[str, Any]:
    where = "capture on standard input" if str(path) == "-" else f"capture {Path(path)}"
    doc = parse_json(text, where)
    if not isinstance(doc, dict):
        raise TensorForgeError(f"{where}: expected a JSON object")
    return doc


def read_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON object in the file as written (no upgrade), or a one-line error."""
    return _parse(read_text_once(path), path)


def structure(doc: Mapping[str, Any], what: str) -> Capture:
    """A document (any version this TensorForge reads) as a typed Capture, or a one-line error."""
    current = upgrade(doc, what)
    try:
        return from_document(current)
    except Exception as exc:  # cattrs' validation errors, the classes' validators
        raise TensorForgeError(
            f"{what} does not match capture schema version {SCHEMA_VERSION}: {first_error(exc)}"
        ) from None


def read_capture(path: str | os.PathLike[str]) -> Capture:
    """The capture in the file as a typed object (not verified: see `verify`)."""
    return structure(read_document(path), f"capture {path}")


@attrs.frozen
class VerifyReport:
    """Integrity (ok, problems, checks) and origin, reported separately (docs/security.md)."""

    path: str
    ok: bool
    digest: str
    problems: list[str]
    checks: list[str]
    origin: str = "unsigned"  # trusted | untrusted | unsigned | invalid
    origin_detail: str = "unsigned: nothing shows who produced it"
    signer: str | None = None  # the signing key's fingerprint


def _consistency(capture: Capture) -> tuple[list[str], list[str]]:
    from tensorforge_measure.capture.recompute import comparison_problems, measured_problems

    problems: list[str] = []
    checks = ["five labelled sections present"]  # the classes demand them (model.Capture)
    if not capture.complete:
        problems.append("capture is marked incomplete (the run was interrupted)")
    predicted = {w.name for w in capture.predicted.analytical.workloads}
    measured = capture.measured.workloads if isinstance(capture.measured, Measured) else {}
    stray = sorted(set(measured) - predicted)
    if stray:
        problems.append(f"measured workloads without a prediction: {', '.join(stray)}")
    more, count = measured_problems(capture)
    problems += more
    checks.append(f"every statistic and throughput recomputed from the raw samples for {count} workloads")
    more, count = comparison_problems(capture)
    problems += more
    checks.append(
        f"every comparison figure (p50, fastest sample, APE, bound check, evidence quality) and "
        f"POLICY's bound checks recomputed for {count} workloads"
    )
    return problems, checks


# The digest record of a canonical capture: a top-level key is the only one indented by two
# spaces, and a string in canonical JSON never holds a raw newline.
_DIGEST_KEY = '\n  "digest": '


def head_origin(text: str, trusted: Iterable[str]) -> "Origin":
    """The origin a capture's digest record establishes, read without parsing the rest: the
    signature signs the digest value, so who sealed it is known before the body is looked at.
    A document not in canonical form counts as unsigned here (it cannot verify anyway)."""
    import json

    from tensorforge_measure.capture.origin import origin
    from tensorforge_measure.capture.sections.provenance import Signature

    at = text.find(_DIGEST_KEY)
    record: Any = None
    if at >= 0:
        try:
            record, _ = json.JSONDecoder().raw_decode(text, at + len(_DIGEST_KEY))
        except (ValueError, RecursionError):
            record = None
    signed = record.get("signature") if isinstance(record, dict) else None
    try:
        signature = Signature(**signed) if isinstance(signed, dict) else None
        value = str(record["value"]) if signature is not None else ""
    except (TypeError, KeyError):
        signature, value = None, ""
    if signature is not None and not all(isinstance(v, str) for v in attrs.astuple(signature)):
        signature = None
    return origin(signature, value, trusted)


def check(
    path: str | os.PathLike[str],
    trusted: Iterable[str] | None = None,
    before_body: "Callable[[Origin], None] | None" = None,
) -> tuple[VerifyReport, Capture | None]:
    """The verification report, and the typed capture when the document could be read as one.
    `trusted`: the fingerprints whose signatures establish origin (default: the user's own key
    and $TENSORFORGE_HOME/trusted-keys). `before_body` is shown the origin the digest record
    establishes before the body is parsed, and may refuse the capture by raising (a reader
    requiring trust spends nothing on a document nobody it trusts has signed)."""
    report, capture, _ = check_document(path, trusted, before_body)
    return report, capture


def check_document(
    path: str | os.PathLike[str],
    trusted: Iterable[str] | None = None,
    before_body: "Callable[[Origin], None] | None" = None,
) -> tuple[VerifyReport, Capture | None, dict[str, Any]]:
    """`check`, and the document as written: for a reader that needs its raw form too, read
    once, so what was verified is what it reads."""
    text = read_text_once(path)
    if before_body is not None:
        keys = list(trusted) if trusted is not None else None
        if keys is None:
            from tensorforge_measure.capture.signing import trusted_fingerprints
            from tensorforge_measure.home import home

            keys = trusted_fingerprints(home())
        before_body(head_origin(text, keys))
    doc = _parse(text, path)
    problems, checks, actual = integrity(doc, text)
    capture = None
    try:
        capture = structure(doc, "capture")
        _, version = version_of(doc)
        if version != SCHEMA_VERSION:
            checks.append(
                f"schema version {version} read as version {SCHEMA_VERSION} by the written "
                "upgrade rule (docs/capture.md)"
            )
        more_problems, more_checks = _consistency(capture)
    except TensorForgeError as exc:
        # a sealed but malformed document (missing field, wrong type, unknown version) is
        # NOT VERIFIED, not a crash
        more_problems, more_checks = [str(exc)], []
    origin = _origin(capture, trusted)
    if origin.status == "invalid":
        problems.append(origin.detail)  # the seal itself was forged or re-made
    report = VerifyReport(
        str(path),
        not (problems or more_problems),
        actual,
        problems + more_problems,
        checks + more_checks,
        origin=origin.status,
        origin_detail=origin.detail,
        signer=origin.fingerprint,
    )
    return report, capture, doc


def _origin(capture: Capture | None, trusted: Iterable[str] | None) -> "Origin":
    from tensorforge_measure.capture.signing import origin, trusted_fingerprints
    from tensorforge_measure.home import home

    digest = capture.digest if capture is not None else None
    keys = list(trusted) if trusted is not None else trusted_fingerprints(home())
    # the signature is checked against the digest the document records (integrity checks that
    # one against the content)
    return origin(digest.signature if digest else None, digest.value if digest else "", keys)


def verify(path: str | os.PathLike[str], trusted: Iterable[str] | None = None) -> VerifyReport:
    return check(path, trusted)[0]
