"""The capture: one JSON document with the five labelled sections, provenance and a digest.

The digest is SHA-256 over the canonical JSON of the document without its digest. The file
on disk *is* that canonical form (plus the digest), so `verify` can demand both: the content
hashes to the recorded digest, and the bytes are exactly the canonical serialisation — any
changed byte fails one check or the other.
"""

import hashlib
import math
from pathlib import Path
from typing import Any

import attrs

from tensorforge.api import TensorForgeError, canonical_json, read_json, write_atomic

SCHEMA = "tensorforge.capture/1"
SECTIONS = {"predicted": "PREDICTED", "measured": "MEASURED", "calibrated": "CALIBRATED",
            "diagnostic": "DIAGNOSTIC", "policy": "POLICY"}


def content_digest(doc: dict[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "digest"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def seal(doc: dict[str, Any]) -> dict[str, Any]:
    sealed = {k: v for k, v in doc.items() if k != "digest"}
    sealed["digest"] = {"algorithm": "sha256", "over": "canonical JSON without 'digest'",
                        "value": content_digest(sealed)}
    return sealed


def write_capture(path, doc: dict[str, Any]) -> dict[str, Any]:
    sealed = seal(doc)
    write_atomic(path, canonical_json(sealed))
    return sealed


def read_capture(path) -> dict[str, Any]:
    path = Path(path)
    doc = read_json(path, "capture")
    if not isinstance(doc, dict):
        raise TensorForgeError(f"capture {path}: expected a JSON object")
    return doc


@attrs.frozen
class VerifyReport:
    path: str
    ok: bool
    digest: str
    problems: list[str]
    checks: list[str]


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)


def _consistency(doc: dict[str, Any]) -> tuple[list[str], list[str]]:
    from ..measure.stats import summarize
    from .compare import ape

    problems: list[str] = []
    checks: list[str] = []
    if doc.get("schema") != SCHEMA:
        problems.append(f"schema is {doc.get('schema')!r}, this TensorForge reads {SCHEMA!r}")
        return problems, checks
    for key, label in SECTIONS.items():
        section = doc.get(key)
        if not isinstance(section, dict) or section.get("label") != label:
            problems.append(f"section {key!r} missing or not labelled {label}")
    if problems:
        return problems, checks
    checks.append("five labelled sections present")
    if not doc.get("complete", False):
        problems.append("capture is marked incomplete (the run was interrupted)")
    predicted = {w["name"] for w in doc["predicted"]["analytical"]["workloads"]}
    measured = doc["measured"].get("workloads", {})
    stray = sorted(set(measured) - predicted)
    if stray:
        problems.append(f"measured workloads without a prediction: {', '.join(stray)}")
    recomputed = 0
    for name, m in sorted(measured.items()):
        if m.get("status") != "ok":
            continue
        stats = summarize(m["samples_s"])
        for field in ("n", "p10", "p50", "p90"):
            if not _close(float(getattr(stats, field)), float(m["stats"][field])):
                problems.append(f"{name}: recorded {field} {m['stats'][field]} does not match "
                                f"its raw samples ({getattr(stats, field)})")
        recomputed += 1
    checks.append(f"statistics recomputed from raw samples for {recomputed} workloads")
    for name, row in sorted(doc.get("comparison", {}).get("workloads", {}).items()):
        p50 = row.get("measured_p50_s")
        for kind in ("analytical", "calibrated"):
            value, pred = row.get(f"ape_{kind}"), row.get(f"predicted_{kind}_s")
            if value is not None and (p50 is None or pred is None or not _close(value, ape(pred, p50))):
                problems.append(f"{name}: recorded APE ({kind}) does not follow from its numbers")
    checks.append("APE values recomputed from predicted and measured p50")
    return problems, checks


def verify(path) -> VerifyReport:
    path = Path(path)
    doc = read_capture(path)
    problems: list[str] = []
    checks: list[str] = []
    # A hand-edited digest may be any JSON value: report it, never crash on it.
    digest = doc.get("digest")
    recorded = digest.get("value") if isinstance(digest, dict) else None
    recorded = recorded if isinstance(recorded, str) else ""
    actual = content_digest(doc)
    if recorded != actual:
        problems.append(f"digest mismatch: recorded {recorded[:16] or 'none'}..., content hashes to {actual[:16]}...")
    elif digest != seal(doc)["digest"]:
        # the digest record itself is outside the hash: demand exactly what seal() writes
        problems.append("digest record is not the one TensorForge writes (algorithm or 'over' edited?)")
    else:
        checks.append(f"digest sha256 {actual[:16]}... matches the content")
    if path.read_text(encoding="utf-8") != canonical_json(doc):
        problems.append("file bytes are not the canonical serialisation of its content (edited by hand?)")
    else:
        checks.append("file is byte-for-byte canonical")
    try:
        more_problems, more_checks = _consistency(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # a sealed but malformed document (missing field, wrong type) is NOT VERIFIED, not a crash
        more_problems, more_checks = [f"capture structure is malformed: {type(exc).__name__}: {exc}"], []
    return VerifyReport(str(path), not (problems or more_problems), actual,
                        problems + more_problems, checks + more_checks)
