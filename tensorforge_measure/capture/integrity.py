"""Integrity: whether a capture document is, byte for byte, the one that was sealed.

The digest is SHA-256 over the canonical JSON of the document without its digest record; the
file on disk *is* that canonical form (plus the record), so both must hold: the content hashes
to the recorded digest (every hex digit of it), and the text is exactly the canonical
serialisation. Kept apart from reading and structuring (document.py) so the rule is small,
tested at its edges and covered by the mutation run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from tensorforge.api import canonical_json

DIGEST_OVER = "canonical JSON without 'digest'"


def content_digest(doc: Mapping[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "digest"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def digest_record(doc: Mapping[str, Any]) -> dict[str, str]:
    """The digest record `seal` writes for this document (any version)."""
    return {"algorithm": "sha256", "over": DIGEST_OVER, "value": content_digest(doc)}


def integrity(doc: Mapping[str, Any], text: str) -> tuple[list[str], list[str], str]:
    """(problems, checks, the content's digest): the whole recorded digest against the content,
    the digest record as seal() writes it, and the text as the canonical serialisation."""
    problems: list[str] = []
    checks: list[str] = []
    # A hand-edited digest may be any JSON value: report it, never crash on it.
    digest = doc.get("digest")
    recorded = digest.get("value") if isinstance(digest, dict) else None
    recorded = recorded if isinstance(recorded, str) else ""
    actual = content_digest(doc)
    if recorded != actual:  # every hex digit, not a prefix
        problems.append(f"digest mismatch: recorded {recorded[:16] or 'none'}..., content hashes to {actual[:16]}...")
    elif not isinstance(digest, dict) or {k: v for k, v in digest.items() if k != "signature"} != digest_record(doc):
        # the digest record itself is outside the hash: demand exactly what seal() writes
        problems.append("digest record is not the one TensorForge writes (algorithm or 'over' edited?)")
    else:
        checks.append(f"digest sha256 {actual[:16]}... matches the content")
    if text != canonical_json(doc):
        problems.append("file bytes are not the canonical serialisation of its content (edited by hand?)")
    else:
        checks.append("file is byte-for-byte canonical")
    return problems, checks, actual
