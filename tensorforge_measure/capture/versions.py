"""Which capture layouts this TensorForge reads, and the written rules that bring an older one
up to the current layout before it is structured.

A capture names its layout: `schema` ('tensorforge.capture') and `schema_version` (an integer;
version 1 wrote both as one string, 'tensorforge.capture/1'). Reading goes: the digest and the
bytes are checked on the document as written; then `upgrade` applies one rule per version step,
in order, to a copy; then the classes structure the result. A version newer than this
TensorForge, or a document that is not a capture, is refused in one line naming both versions.
The rules and when the version changes are described in docs/capture.md.
"""

from collections.abc import Callable, Mapping
from typing import Any

from tensorforge.api import TensorForgeError
from tensorforge_measure.capture.model import SCHEMA, SCHEMA_VERSION
from tensorforge_measure.capture.telemetry_window import envelope

V1_SCHEMA = "tensorforge.capture/1"


def version_of(doc: Mapping[str, Any]) -> tuple[str, int]:
    """(schema, version) a document declares; ValueError when it declares none we know."""
    schema = doc.get("schema")
    if schema == V1_SCHEMA and "schema_version" not in doc:
        return SCHEMA, 1
    version = doc.get("schema_version")
    if schema != SCHEMA or not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"not a TensorForge capture (schema {schema!r}, schema_version {version!r})")
    return SCHEMA, version


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: the version becomes its own field; each telemetry window gets the common
    envelope by the rule in capture/telemetry_window.py (available, reason, headline,
    clock_event_fractions, the source's record in data); POLICY loses its `verdicts` list,
    which version 1 always wrote empty (verdicts are made when captures are read); an
    interrupted run's empty comparison becomes null; each prediction and workload states how its
    bound was searched for ('unstated': version 1 did not record it); a row measured on several
    ranks (torch-distributed) gathers its per-rank fields into `ranks`."""
    doc["schema"], doc["schema_version"] = SCHEMA, 2
    diagnostic = doc.get("diagnostic")
    if isinstance(diagnostic, dict) and isinstance(diagnostic.get("windows"), dict):
        diagnostic["windows"] = {
            name: _envelope(w, f"telemetry window {name!r}") if isinstance(w, dict) else w
            for name, w in diagnostic["windows"].items()
        }
    policy = doc.get("policy")
    if isinstance(policy, dict):
        if policy.get("verdicts"):
            raise ValueError("its POLICY section records verdicts, which version 1 never wrote")
        policy.pop("verdicts", None)
    comparison = doc.get("comparison")
    if isinstance(comparison, dict) and "same_device" not in comparison:
        doc["comparison"] = None
    predicted = doc.get("predicted")
    for key in ("analytical", "calibrated"):
        if isinstance(predicted, dict) and isinstance(predicted.get(key), dict):
            _state_search(predicted[key])
    measured = doc.get("measured")
    rows = measured.get("workloads") if isinstance(measured, dict) else None
    if rows is not None and not isinstance(rows, dict):
        raise ValueError(f"'measured.workloads' must be an object, got {type(rows).__name__}")
    for row in (rows or {}).values():
        if isinstance(row, dict) and "per_rank_samples_s" in row:
            row["ranks"] = {key: row.pop(key) for key in RANK_FIELDS if key in row}
    return doc


def _envelope(window: dict[str, Any], where: str) -> dict[str, Any]:
    summary = window.get("summary")
    fractions = summary.get("reason_fractions") if isinstance(summary, dict) else None
    if fractions is not None and not (
        isinstance(fractions, list) and all(isinstance(pair, list) and len(pair) == 2 for pair in fractions)
    ):
        raise ValueError(f"{where}: 'summary.reason_fractions' must be a list of [reason, fraction] pairs")
    return envelope(window)


# A version-1 row of the torch-distributed backend kept its several-rank record at the row's top
# level; version 2 holds it in the row's `ranks`.
RANK_FIELDS = (
    "ranks",
    "aggregation",
    "per_rank_samples_s",
    "per_rank_p50_s",
    "result_check",
    "peak_memory_per_rank_bytes",
    "peak_memory_per_rank_method",
    "operators",
)


def _state_search(prediction: dict[str, Any]) -> None:
    """How each bound was searched for, where the document does not say: as the Core derives it
    from the operators' mappings, whose own `search` reads as 'unstated' when absent (version 1
    did not record it, so its bounds are neither claimed exhaustive nor relaxed)."""
    from tensorforge.api import UNSTATED, search_of

    listed = prediction.get("workloads")
    workloads: list[Any] = listed if isinstance(listed, list) else []
    for number, w in enumerate(workloads, 1):
        if isinstance(w, dict) and "search" not in w:
            found = w.get("operators")
            ops: list[Any] = found if isinstance(found, list) else []
            w["search"] = search_of(
                _operator_search(op, f"predicted workload #{number}, operator #{index}")
                for index, op in enumerate(ops, 1)
                if isinstance(op, dict)
            )
    if "search" not in prediction:
        prediction["search"] = search_of(
            _word(w.get("search", UNSTATED), f"predicted workload #{number} 'search'")
            for number, w in enumerate(workloads, 1)
            if isinstance(w, dict)
        )


def _operator_search(op: dict[str, Any], where: str) -> str:
    """The rule reads an operator's mapping and its search word: each checked to be what the rule
    expects (a malformed mapping once raised AttributeError out of `verify`, `gate`, `report`)."""
    from tensorforge.api import UNSTATED

    mapping = op.get("mapping")
    if mapping is None:
        return UNSTATED
    if not isinstance(mapping, dict):
        raise ValueError(f"{where}: 'mapping' must be an object or null, got {type(mapping).__name__}")
    return _word(mapping.get("search", UNSTATED), f"{where}: mapping 'search'")


def _word(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} must be a string, got {type(value).__name__}")
    return value


# version N -> the rule that turns a version-N document into version N + 1
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2}


def upgrade(doc: Mapping[str, Any], what: str = "capture") -> dict[str, Any]:
    """A copy of `doc` in the current layout, or a TensorForgeError in one line."""
    import copy

    try:
        _, version = version_of(doc)
    except ValueError as exc:
        raise TensorForgeError(f"{what} is {exc}") from None
    if version > SCHEMA_VERSION:
        raise TensorForgeError(
            f"{what} has schema version {version}; this TensorForge reads versions "
            f"up to {SCHEMA_VERSION}: upgrade TensorForge to read it"
        )
    current = copy.deepcopy(dict(doc))
    while version < SCHEMA_VERSION:
        try:
            current = UPGRADES[version](current)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # the last: a shape no rule checked
            raise TensorForgeError(
                f"{what} of schema version {version} cannot be upgraded to {SCHEMA_VERSION}: {exc}"
            ) from None
        version += 1
    return current
